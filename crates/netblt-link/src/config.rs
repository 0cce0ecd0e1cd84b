//! The link's knobs: one plain, serializable description of a one-way path.
//!
//! Every field has an "ideal" default (infinite rate, no delay, no loss), so
//! `LinkConfig::default()` is a perfect wire and a profile only names what it
//! changes. [`LinkConfig::validate`] is the single place that rejects values the
//! model cannot honour; [`crate::Link::new`] calls it, so a `Link` never holds a
//! bad configuration, even one read from JSON.

use core::time::Duration;
use serde::{Deserialize, Serialize};

use crate::trace::{DeliveryTrace, TraceError};

/// Longest delay-like duration a config may hold (one day).
///
/// Nothing physical comes close; the cap keeps every sum of delays far from
/// overflowing the `u64` nanosecond clock, so the model can add freely.
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// Largest `max_multiple` of a [`DelaySpike`]: with [`MAX_DURATION`] quanta it
/// still fits the clock.
pub const MAX_SPIKE_MULTIPLE: u32 = 1_000;

/// Description of one direction of a path (a "link").
///
/// The fields are applied in this order to each offered packet: [`mtu`](Self::mtu),
/// [`queue_limit_bytes`](Self::queue_limit_bytes), the transmitter
/// ([`rate_bps`](Self::rate_bps), [`frames`](Self::frames) or [`trace`](Self::trace)),
/// then [`loss`](Self::loss), [`ber`](Self::ber), [`corrupt`](Self::corrupt),
/// [`duplicate`](Self::duplicate), [`reorder`](Self::reorder),
/// [`delay_spike`](Self::delay_spike), [`delay`](Self::delay) and [`jitter`](Self::jitter).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Serialization rate in bits per second; `None` = infinitely fast.
    /// Must be `None` when [`frames`](Self::frames) or [`trace`](Self::trace) is set,
    /// since those replace the rate-based transmitter.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay, added after the last bit leaves the transmitter.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `[0, jitter]` per packet. Packets still
    /// leave in FIFO order (a packet never overtakes an earlier one because of
    /// jitter), as with Linux netem when a rate is set.
    pub jitter: Duration,
    /// Random whole-packet loss.
    pub loss: LossModel,
    /// Bit-error rate. A packet of `L` bytes is hit with probability
    /// `1 - (1 - ber)^(8 L)`; a hit packet is dropped, as a link CRC would.
    pub ber: f64,
    /// Probability that a delivered packet has exactly one random bit flipped
    /// (an error the link CRC missed, for testing end-to-end checksums).
    pub corrupt: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that a packet is held back by [`reorder_delay`](Self::reorder_delay);
    /// later packets may then overtake it.
    pub reorder: f64,
    /// How long a reordered packet is held back.
    pub reorder_delay: Duration,
    /// Occasional large extra delays (the Wideband channel's 600 ms steps).
    pub delay_spike: Option<DelaySpike>,
    /// Largest packet (bytes on the wire) the link carries; larger ones are dropped.
    pub mtu: Option<usize>,
    /// Drop-tail limit on bytes accepted but not yet fully transmitted.
    pub queue_limit_bytes: Option<usize>,
    /// Slotted channel: fixed-size frames at a fixed interval (replaces `rate_bps`).
    pub frames: Option<FrameConfig>,
    /// Mahimahi-style delivery-opportunity trace (replaces `rate_bps`).
    pub trace: Option<DeliveryTrace>,
    /// Changes of [`rate_bps`](Self::rate_bps) over time (a bottleneck whose
    /// capacity steps, e.g. 100 -> 20 -> 100 Mb/s). Needs `rate_bps` (the rate
    /// before the first step); times are on the caller's clock and must not
    /// decrease. Packets already queued when a step comes are sent at the new
    /// rate from then on, as on a real link.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_steps: Vec<RateStep>,
    /// Queue discipline in front of the transmitter (drop-tail or CoDel).
    /// [`queue_limit_bytes`](Self::queue_limit_bytes) still caps the queue
    /// under either.
    #[serde(skip_serializing_if = "Aqm::is_drop_tail")]
    pub aqm: Aqm,
    /// IP fragmentation in front of the transmitter: datagrams larger than
    /// its MTU cross the link as several fragments (RFC 791).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<Fragmentation>,
}

/// IP fragmentation at the link's entrance (a gateway whose next hop has a
/// smaller MTU), by RFC 791's rules: every fragment carries its own IP
/// header, and "the data portion of every fragment except the last must be a
/// multiple of 8 octets" (fragment offsets count 8-octet units). The
/// fragments are transmitted, lost and delayed one by one; the datagram
/// arrives when its last fragment has (reassembly at the destination host)
/// and is lost if any fragment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fragmentation {
    /// Largest IP datagram (header included) carried whole.
    pub mtu: usize,
    /// IP header bytes, repeated in every fragment.
    pub ip_header: usize,
    /// Bytes of the offered length outside the IP datagram (link framing),
    /// also added to every fragment.
    pub framing: usize,
}

impl Fragmentation {
    /// RFC 791's Total Length is 16 bits: no datagram is longer.
    pub const MAX_DATAGRAM: usize = 65_535;

    /// Whether a packet of `len` bytes (as offered) holds a datagram longer
    /// than IP allows, which cannot be fragmented.
    pub fn too_long(&self, len: usize) -> bool {
        len.saturating_sub(self.framing) > Self::MAX_DATAGRAM
    }

    /// Wire lengths of the pieces an offered packet of `len` bytes becomes:
    /// one piece (`len`) if its datagram fits the MTU.
    pub fn pieces(&self, len: usize) -> impl Iterator<Item = usize> + '_ {
        let ip_len = len.saturating_sub(self.framing);
        let fits = ip_len <= self.mtu;
        let payload = ip_len.saturating_sub(self.ip_header);
        // RFC 791: all but the last fragment carry a multiple of 8 data bytes.
        let chunk = (self.mtu.saturating_sub(self.ip_header) / 8 * 8).max(8);
        let count = if fits {
            1
        } else {
            payload.div_ceil(chunk).max(1)
        };
        (0..count).map(move |i| {
            if fits {
                len
            } else {
                let data = if i + 1 < count {
                    chunk
                } else {
                    payload - chunk * (count - 1)
                };
                self.framing + self.ip_header + data
            }
        })
    }
}

/// From `at` on, the link serializes at `rate_bps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// When the new rate takes effect (since the start of the run).
    pub at: Duration,
    /// The new rate in bits per second (positive).
    pub rate_bps: u64,
}

/// Active queue management in front of the transmitter.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Aqm {
    /// Only the byte limit: a packet is refused when the queue is full.
    #[default]
    DropTail,
    /// CoDel (RFC 8289): drops at the head when the packets' sojourn time
    /// has stayed above `target` for at least `interval`.
    Codel {
        /// Acceptable standing queue delay (RFC 8289 §4.4: 5 ms).
        target: Duration,
        /// Sliding window for the minimum (RFC 8289 §4.3: 100 ms, "on the
        /// order of a worst-case RTT").
        interval: Duration,
    },
}

impl Aqm {
    /// CoDel with RFC 8289's defaults: target 5 ms, interval 100 ms.
    pub const CODEL: Aqm = Aqm::Codel {
        target: Duration::from_millis(5),
        interval: Duration::from_millis(100),
    };

    /// Whether this is plain drop-tail.
    pub fn is_drop_tail(&self) -> bool {
        matches!(self, Aqm::DropTail)
    }
}

/// Whole-packet loss process.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Markov chain (Gilbert-Elliott), stepped once per packet.
    ///
    /// The long-run loss rate is `pi_bad * loss_bad + pi_good * loss_good` with
    /// `pi_bad = p_good_to_bad / (p_good_to_bad + p_bad_to_good)`.
    GilbertElliott {
        /// Probability of moving from the good to the bad state at a packet.
        p_good_to_bad: f64,
        /// Probability of moving from the bad to the good state at a packet.
        p_bad_to_good: f64,
        /// Loss probability while good.
        loss_good: f64,
        /// Loss probability while bad.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Long-run fraction of packets this model loses.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let total = p_good_to_bad + p_bad_to_good;
                // With no transitions at all the chain stays in its start state (good).
                let pi_bad = if total > 0.0 {
                    p_good_to_bad / total
                } else {
                    0.0
                };
                pi_bad * loss_bad + (1.0 - pi_bad) * loss_good
            }
        }
    }
}

/// Occasional extra delay of `k * quantum`, `k` uniform in `1..=max_multiple`.
///
/// RFC 1030 §7 reports that Wideband packets were "delayed in multiples of
/// 600 milliseconds". A spiked packet does not hold back the packets behind it,
/// so spikes reorder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpike {
    /// Probability that a packet is spiked.
    pub prob: f64,
    /// Unit of the extra delay.
    pub quantum: Duration,
    /// Largest multiple of `quantum` (at least 1).
    pub max_multiple: u32,
}

/// Slotted channel: every `interval` a frame carries up to `bytes_per_frame`.
///
/// Frame `k` occupies `[k * interval, (k + 1) * interval)`. A packet goes into the
/// earliest frame, not earlier than the one in progress when it is offered and
/// not earlier than the previous packet's (FIFO), with room for it; it is
/// delivered at that frame's end plus `delay`. A packet larger than a frame
/// takes the following whole frames it needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameConfig {
    /// Frame period.
    pub interval: Duration,
    /// Payload capacity of one frame.
    pub bytes_per_frame: usize,
}

/// Why [`LinkConfig::validate`] (and so [`crate::Link::new`]) refused a config.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A probability was NaN or outside `[0, 1]`.
    #[error("{field} must be a probability in [0, 1], got {value}")]
    Probability {
        /// Name of the offending field.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// A size or rate that must be positive was zero.
    #[error("{field} must be greater than zero")]
    Zero {
        /// Name of the offending field.
        field: &'static str,
    },
    /// A duration exceeded [`MAX_DURATION`].
    #[error("{field} is {value:?}, longer than the supported {MAX_DURATION:?}")]
    TooLong {
        /// Name of the offending field.
        field: &'static str,
        /// The value given.
        value: Duration,
    },
    /// `delay_spike.max_multiple` exceeded [`MAX_SPIKE_MULTIPLE`].
    #[error("delay_spike.max_multiple is {0}, more than {MAX_SPIKE_MULTIPLE}")]
    SpikeMultiple(u32),
    /// More than one of `rate_bps`, `frames` and `trace` was set.
    #[error("rate_bps, frames and trace each define the transmitter: set at most one")]
    ConflictingTransmitters,
    /// The delivery trace was malformed.
    #[error("delivery trace: {0}")]
    Trace(#[from] TraceError),
    /// `rate_steps` was set without `rate_bps`, or its times went backwards.
    #[error("rate_steps: {0}")]
    RateSteps(&'static str),
}

fn check_prob(field: &'static str, value: f64) -> Result<(), ConfigError> {
    // `contains` is false for NaN, which is what we want.
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::Probability { field, value })
    }
}

fn check_duration(field: &'static str, value: Duration) -> Result<(), ConfigError> {
    if value <= MAX_DURATION {
        Ok(())
    } else {
        Err(ConfigError::TooLong { field, value })
    }
}

impl LinkConfig {
    /// An ideal link with the given rate and one-way delay: the most common case.
    pub fn with_rate_delay(rate_bps: u64, delay: Duration) -> Self {
        LinkConfig {
            rate_bps: Some(rate_bps),
            delay,
            ..LinkConfig::default()
        }
    }

    /// Checks every field; `Ok` means [`crate::Link`] can run it without panicking.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.rate_bps == Some(0) {
            return Err(ConfigError::Zero { field: "rate_bps" });
        }
        if let Some(f) = &self.fragmentation {
            // The MTU must leave room for the header and one 8-byte unit.
            if f.mtu < f.ip_header + 8 {
                return Err(ConfigError::Zero {
                    field: "fragmentation.mtu (room for 8 data bytes)",
                });
            }
        }
        if self.mtu == Some(0) {
            return Err(ConfigError::Zero { field: "mtu" });
        }
        let transmitters = usize::from(self.rate_bps.is_some())
            + usize::from(self.frames.is_some())
            + usize::from(self.trace.is_some());
        if transmitters > 1 {
            return Err(ConfigError::ConflictingTransmitters);
        }
        check_duration("delay", self.delay)?;
        check_duration("jitter", self.jitter)?;
        check_duration("reorder_delay", self.reorder_delay)?;
        match self.loss {
            LossModel::None => {}
            LossModel::Bernoulli { p } => check_prob("loss.p", p)?,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                check_prob("loss.p_good_to_bad", p_good_to_bad)?;
                check_prob("loss.p_bad_to_good", p_bad_to_good)?;
                check_prob("loss.loss_good", loss_good)?;
                check_prob("loss.loss_bad", loss_bad)?;
            }
        }
        check_prob("ber", self.ber)?;
        check_prob("corrupt", self.corrupt)?;
        check_prob("duplicate", self.duplicate)?;
        check_prob("reorder", self.reorder)?;
        if let Some(spike) = &self.delay_spike {
            check_prob("delay_spike.prob", spike.prob)?;
            check_duration("delay_spike.quantum", spike.quantum)?;
            if spike.max_multiple == 0 {
                return Err(ConfigError::Zero {
                    field: "delay_spike.max_multiple",
                });
            }
            if spike.max_multiple > MAX_SPIKE_MULTIPLE {
                return Err(ConfigError::SpikeMultiple(spike.max_multiple));
            }
        }
        if let Some(frames) = &self.frames {
            if frames.interval.is_zero() {
                return Err(ConfigError::Zero {
                    field: "frames.interval",
                });
            }
            check_duration("frames.interval", frames.interval)?;
            if frames.bytes_per_frame == 0 {
                return Err(ConfigError::Zero {
                    field: "frames.bytes_per_frame",
                });
            }
        }
        if let Some(trace) = &self.trace {
            trace.validate()?;
        }
        if !self.rate_steps.is_empty() {
            if self.rate_bps.is_none() {
                return Err(ConfigError::RateSteps(
                    "needs rate_bps (the rate before the first step)",
                ));
            }
            let mut prev = Duration::ZERO;
            for step in &self.rate_steps {
                if step.rate_bps == 0 {
                    return Err(ConfigError::Zero {
                        field: "rate_steps.rate_bps",
                    });
                }
                check_duration("rate_steps.at", step.at)?;
                if step.at < prev {
                    return Err(ConfigError::RateSteps("times must not decrease"));
                }
                prev = step.at;
            }
        }
        if let Aqm::Codel { target, interval } = self.aqm {
            check_duration("aqm.target", target)?;
            check_duration("aqm.interval", interval)?;
            if interval.is_zero() {
                return Err(ConfigError::Zero {
                    field: "aqm.interval",
                });
            }
        }
        Ok(())
    }
}
