//! Command-line knobs that override a profile's links, and their parsers.
//!
//! A knob given once applies to both directions unless its name says
//! otherwise (`--delay-fwd`, `--trace-rev`), because a user asking for
//! "10 Mb/s with 1 % loss" means a symmetric path. `--rate`, `--frames` and
//! `--trace` each replace the transmitter of the link model, so setting one
//! clears the others the profile may have set.

use std::path::PathBuf;
use std::time::Duration;

use netblt_link::{DeliveryTrace, FrameConfig, LinkConfig, LossModel};

use crate::config::EmuConfig;
use crate::error::EmuError;

/// Reorder hold-back used when `--reorder` is given without `--reorder-delay`
/// and the profile has none: long enough that a few packets overtake the
/// held one at common rates. An assumption, not a measured figure.
pub const DEFAULT_REORDER_DELAY: Duration = Duration::from_millis(10);

/// Link impairments settable on the command line, applied on top of a profile.
#[derive(clap::Args, Debug, Clone, Default, PartialEq)]
pub struct LinkKnobs {
    /// Serialization rate in bits/s of IP packets, both directions; suffixes k, M, G (e.g. 10M).
    #[arg(long, value_name = "BITS/S", value_parser = parse_rate, conflicts_with_all = ["trace", "frames"])]
    pub rate: Option<u64>,
    /// Mahimahi delivery trace (one millisecond offset per line, 1500 bytes each), both directions.
    #[arg(long, value_name = "FILE", conflicts_with = "frames")]
    pub trace: Option<PathBuf>,
    /// Mahimahi delivery trace for the reverse direction only (right to left).
    #[arg(long, value_name = "FILE")]
    pub trace_rev: Option<PathBuf>,
    /// One-way propagation delay in ms (fractions allowed), both directions.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub delay: Option<Duration>,
    /// One-way delay in ms, left to right only (overrides --delay).
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub delay_fwd: Option<Duration>,
    /// One-way delay in ms, right to left only (overrides --delay).
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub delay_rev: Option<Duration>,
    /// Extra delay uniform in [0, MS] per packet; packet order is kept.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub jitter: Option<Duration>,
    /// Random (Bernoulli) packet loss probability, e.g. 0.01 or 1%.
    #[arg(long, value_name = "P", value_parser = parse_prob, conflicts_with = "gilbert")]
    pub loss: Option<f64>,
    /// Bit-error rate: a packet with any bit error is dropped (link CRC).
    #[arg(long, value_name = "B", value_parser = parse_prob)]
    pub ber: Option<f64>,
    /// Gilbert-Elliott loss: p (good->bad), r (bad->good), loss in good, loss in bad.
    #[arg(long, value_name = "p,r,lg,lb", value_parser = parse_gilbert)]
    pub gilbert: Option<LossModel>,
    /// Probability that a packet is held back by --reorder-delay (default 10 ms) and overtaken.
    #[arg(long, value_name = "P", value_parser = parse_prob)]
    pub reorder: Option<f64>,
    /// How long a reordered packet is held back, in ms.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub reorder_delay: Option<Duration>,
    /// Probability that a packet is delivered twice.
    #[arg(long, value_name = "P", value_parser = parse_prob)]
    pub duplicate: Option<f64>,
    /// Probability that a delivered packet has one bit flipped.
    #[arg(long, value_name = "P", value_parser = parse_prob)]
    pub corrupt: Option<f64>,
    /// Drop-tail queue limit in bytes before the transmitter (suffixes k, M), both directions.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub queue: Option<usize>,
    /// MTU of the TUN devices and the links.
    #[arg(long, value_name = "N")]
    pub mtu: Option<usize>,
    /// MTU of the links alone, below the TUN devices' (a path narrower than
    /// the hosts' interfaces, e.g. PPPoE's 1492 behind a 1500-byte LAN):
    /// longer packets are dropped silently, with no ICMP, as on a path
    /// that black-holes them. Applied after --mtu.
    #[arg(long, value_name = "N")]
    pub link_mtu: Option<usize>,
    /// Slotted channel: a frame of BYTES every MS milliseconds (e.g. 21.22:3006).
    #[arg(long, value_name = "MS:BYTES", value_parser = parse_frames)]
    pub frames: Option<FrameConfig>,
    /// Seed of the link models' random choices.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// A NAT in front of the left side that gives its UDP flows new source
    /// ports every SECS seconds (fractions allowed) and drops what comes back
    /// to the old ones, as a NAT that rebinds its mappings does; left ports
    /// below 20000 are forwarded unchanged.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub nat_rebind: Option<Duration>,
}

impl LinkKnobs {
    /// Applies every knob that was given to `cfg` (reads trace files).
    pub fn apply(&self, cfg: &mut EmuConfig) -> Result<(), EmuError> {
        let trace = self.trace.as_deref().map(read_trace).transpose()?;
        let trace_rev = self.trace_rev.as_deref().map(read_trace).transpose()?;
        for (link, is_fwd) in [(&mut cfg.forward, true), (&mut cfg.reverse, false)] {
            if let Some(rate) = self.rate {
                set_transmitter(link, Some(rate), None, None);
            }
            if let Some(frames) = &self.frames {
                set_transmitter(link, None, Some(frames.clone()), None);
            }
            let dir_trace = if is_fwd {
                trace.clone()
            } else {
                trace_rev.clone().or_else(|| trace.clone())
            };
            if let Some(t) = dir_trace {
                set_transmitter(link, None, None, Some(t));
            }
            let dir_delay = if is_fwd {
                self.delay_fwd
            } else {
                self.delay_rev
            };
            if let Some(d) = dir_delay.or(self.delay) {
                link.delay = d;
            }
            if let Some(j) = self.jitter {
                link.jitter = j;
            }
            if let Some(p) = self.loss {
                link.loss = LossModel::Bernoulli { p };
            }
            if let Some(ge) = &self.gilbert {
                link.loss = ge.clone();
            }
            if let Some(b) = self.ber {
                link.ber = b;
            }
            if let Some(p) = self.reorder {
                link.reorder = p;
                if link.reorder_delay.is_zero() && self.reorder_delay.is_none() {
                    link.reorder_delay = DEFAULT_REORDER_DELAY;
                }
            }
            if let Some(d) = self.reorder_delay {
                link.reorder_delay = d;
            }
            if let Some(p) = self.duplicate {
                link.duplicate = p;
            }
            if let Some(p) = self.corrupt {
                link.corrupt = p;
            }
            if let Some(q) = self.queue {
                link.queue_limit_bytes = Some(q);
            }
            if let Some(m) = self.mtu {
                link.mtu = Some(m);
            }
            if let Some(m) = self.link_mtu {
                link.mtu = Some(m);
            }
        }
        if let Some(m) = self.mtu {
            cfg.mtu = m;
        }
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(p) = self.nat_rebind {
            cfg.nat_rebind = Some(p);
        }
        Ok(())
    }
}

fn set_transmitter(
    link: &mut LinkConfig,
    rate: Option<u64>,
    frames: Option<FrameConfig>,
    trace: Option<DeliveryTrace>,
) {
    link.rate_bps = rate;
    link.frames = frames;
    link.trace = trace;
}

fn read_trace(path: &std::path::Path) -> Result<DeliveryTrace, EmuError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EmuError::io(format!("reading trace {}", path.display()), e))?;
    DeliveryTrace::parse(&text)
        .map_err(|e| EmuError::Knob(format!("trace {}: {e}", path.display())))
}

/// Parses a positive number of seconds: `5`, `0.5`.
pub(crate) fn parse_secs(text: &str) -> Result<Duration, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 1e6 {
        return Err(format!("{text:?}: give a number of seconds above 0"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Splits a number from an SI suffix (k, M, G, T; case-insensitive, decimal).
fn parse_si(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mult = match c.to_ascii_lowercase() {
                'k' => 1e3,
                'm' => 1e6,
                'g' => 1e9,
                't' => 1e12,
                _ => return Err(format!("{text:?}: unknown suffix {c:?} (use k, M, G)")),
            };
            (t.get(..i).unwrap_or(""), mult)
        }
        _ => (t, 1.0),
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{text:?} must be a non-negative number"));
    }
    Ok(value * mult)
}

/// Parses a rate in bits/s: `1500000`, `1.5M`, `10M`, `1G`, `64k`. Zero is refused.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let bps = parse_si(text)?.round();
    if bps < 1.0 || bps > u64::MAX as f64 {
        return Err(format!("rate {text:?} must be at least 1 bit/s"));
    }
    Ok(bps as u64)
}

/// Parses a byte count: `150000`, `64k`, `1.5M` (decimal multiples).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let bytes = parse_si(text)?.round();
    if bytes > usize::MAX as f64 {
        return Err(format!("{text:?} is too large"));
    }
    Ok(bytes as usize)
}

/// Parses milliseconds (fractions allowed) into a duration: `20`, `0.05`.
pub fn parse_ms(text: &str) -> Result<Duration, String> {
    let ms: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of milliseconds"))?;
    if !ms.is_finite() || ms < 0.0 {
        return Err(format!(
            "{text:?} must be a non-negative number of milliseconds"
        ));
    }
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|e| format!("{text:?}: {e}"))
}

/// Parses a probability: `0.01` or `1%`.
pub fn parse_prob(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (t, 1.0),
    };
    let p: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a probability"))?;
    let p = p * scale;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{text:?} is not in [0, 1]"))
    }
}

/// Parses Gilbert-Elliott parameters `p,r,lg,lb` (or `p,r`, meaning lossless
/// good state and a bad state that loses everything, the classic Gilbert model).
pub fn parse_gilbert(text: &str) -> Result<LossModel, String> {
    let values = text
        .split(',')
        .map(parse_prob)
        .collect::<Result<Vec<f64>, String>>()?;
    let (p, r, lg, lb) = match values[..] {
        [p, r] => (p, r, 0.0, 1.0),
        [p, r, lg, lb] => (p, r, lg, lb),
        _ => return Err(format!("{text:?}: give p,r or p,r,lg,lb")),
    };
    Ok(LossModel::GilbertElliott {
        p_good_to_bad: p,
        p_bad_to_good: r,
        loss_good: lg,
        loss_bad: lb,
    })
}

/// Parses a slotted-channel spec `MS:BYTES`, e.g. `21.22:3006`.
pub fn parse_frames(text: &str) -> Result<FrameConfig, String> {
    let (ms, bytes) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?}: expected MS:BYTES"))?;
    let interval = parse_ms(ms)?;
    let bytes_per_frame = parse_bytes(bytes)?;
    if interval.is_zero() || bytes_per_frame == 0 {
        return Err(format!("{text:?}: interval and bytes must be positive"));
    }
    Ok(FrameConfig {
        interval,
        bytes_per_frame,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10M"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5m"), Ok(1_500_000));
        assert_eq!(parse_rate("64k"), Ok(64_000));
        assert_eq!(parse_rate("1G"), Ok(1_000_000_000));
        assert_eq!(parse_rate("2400"), Ok(2400));
        for bad in ["0", "", "M", "-1M", "10X", "nan", "inf"] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations_probabilities_bytes() {
        assert_eq!(parse_ms("20"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_ms("0.05"), Ok(Duration::from_micros(50)));
        assert!(parse_ms("-1").is_err());
        assert!(parse_ms("1e300").is_err());
        assert_eq!(parse_prob("1%"), Ok(0.01));
        assert_eq!(parse_prob("0.2"), Ok(0.2));
        assert!(parse_prob("1.5").is_err());
        assert!(parse_prob("NaN").is_err());
        assert_eq!(parse_bytes("64k"), Ok(64_000));
        assert_eq!(parse_bytes("1500"), Ok(1500));
    }

    #[test]
    fn gilbert_and_frames() {
        assert_eq!(
            parse_gilbert("0.01,0.3"),
            Ok(LossModel::GilbertElliott {
                p_good_to_bad: 0.01,
                p_bad_to_good: 0.3,
                loss_good: 0.0,
                loss_bad: 1.0
            })
        );
        assert!(parse_gilbert("0.1,0.2,0.3").is_err());
        let f = parse_frames("21.22:3006").unwrap();
        assert_eq!(f.interval, Duration::from_micros(21_220));
        assert_eq!(f.bytes_per_frame, 3006);
        assert!(parse_frames("21").is_err());
        assert!(parse_frames("0:10").is_err());
    }

    #[test]
    fn knobs_override_a_profile_symmetrically() {
        let mut cfg = EmuConfig::new("t");
        cfg.forward.frames = Some(FrameConfig {
            interval: Duration::from_millis(1),
            bytes_per_frame: 100,
        });
        let knobs = LinkKnobs {
            rate: Some(1_000_000),
            delay: Some(Duration::from_millis(5)),
            delay_rev: Some(Duration::from_millis(7)),
            loss: Some(0.1),
            reorder: Some(0.05),
            mtu: Some(1400),
            seed: Some(9),
            ..LinkKnobs::default()
        };
        knobs.apply(&mut cfg).unwrap();
        assert_eq!(cfg.forward.rate_bps, Some(1_000_000));
        assert_eq!(
            cfg.forward.frames, None,
            "--rate replaces the frames transmitter"
        );
        assert_eq!(cfg.forward.delay, Duration::from_millis(5));
        assert_eq!(cfg.reverse.delay, Duration::from_millis(7));
        assert_eq!(cfg.reverse.loss, LossModel::Bernoulli { p: 0.1 });
        assert_eq!(cfg.forward.reorder_delay, DEFAULT_REORDER_DELAY);
        assert_eq!((cfg.mtu, cfg.forward.mtu, cfg.seed), (1400, Some(1400), 9));
        assert!(cfg.validate().is_ok());
        // A narrower link behind the devices' MTU.
        let narrow = LinkKnobs {
            link_mtu: Some(1492),
            ..LinkKnobs::default()
        };
        narrow.apply(&mut cfg).unwrap();
        assert_eq!(
            (cfg.mtu, cfg.forward.mtu, cfg.reverse.mtu),
            (1400, Some(1492), Some(1492))
        );
    }
}
