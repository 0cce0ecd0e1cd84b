//! Counters the forwarder keeps, JSON-serializable.
//!
//! Two views per direction: what the link model decided ([`LinkStats`]:
//! offered, delivered, drops by reason, duplicates, corruptions), and what
//! the forwarder actually did with real packets (writes, errors, and how late
//! each write was against the time the model scheduled). The second view is
//! the emulator's own fidelity: a faithful run has near-zero lateness and no
//! `tx_dropped` on either TUN device.

use std::time::Duration;

use netblt_link::LinkStats;
use serde::{Deserialize, Serialize};

/// Upper bounds (inclusive, nanoseconds) of the lateness histogram buckets; a
/// last, unbounded bucket follows. Roughly 1-2-5 steps from 1 µs to 100 ms.
pub const LATENESS_BOUNDS_NS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// Seconds of [`DirStats::per_second_bytes`] kept (one hour), so a
/// long-running emulation's counters stay small.
pub const PER_SECOND_LIMIT: usize = 3600;

/// Width of one bin of [`DirStats::per_tenth_bytes`] in milliseconds.
pub const TENTH_MS: u64 = 100;

/// Histogram of write lateness: actual write time minus scheduled delivery time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatenessHistogram {
    /// Bucket upper bounds in ns (`counts[i]` counts lateness `<= le_ns[i]`
    /// and above the previous bound); `counts` has one more entry, for
    /// lateness above the last bound.
    pub le_ns: Vec<u64>,
    /// Samples per bucket.
    pub counts: Vec<u64>,
    /// Number of samples.
    pub samples: u64,
    /// Sum of all samples (ns), for the mean.
    pub sum_ns: u64,
    /// Largest sample (ns).
    pub max_ns: u64,
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram {
            le_ns: LATENESS_BOUNDS_NS.to_vec(),
            counts: vec![0; LATENESS_BOUNDS_NS.len() + 1],
            samples: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl LatenessHistogram {
    /// Records one sample.
    pub fn record(&mut self, late_ns: u64) {
        let bucket = LATENESS_BOUNDS_NS.partition_point(|&le| le < late_ns);
        if let Some(slot) = self.counts.get_mut(bucket) {
            *slot += 1;
        }
        self.samples += 1;
        self.sum_ns = self.sum_ns.saturating_add(late_ns);
        self.max_ns = self.max_ns.max(late_ns);
    }

    /// Mean lateness in ns (0 with no samples).
    pub fn mean_ns(&self) -> u64 {
        self.sum_ns.checked_div(self.samples).unwrap_or(0)
    }

    /// Upper bound of the bucket holding quantile `q` (0..=1), in ns; the
    /// maximum if it falls in the last bucket. `None` with no samples.
    pub fn quantile_le_ns(&self, q: f64) -> Option<u64> {
        if self.samples == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.samples as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(
                    self.le_ns
                        .get(i)
                        .copied()
                        .unwrap_or(self.max_ns)
                        .min(self.max_ns),
                );
            }
        }
        Some(self.max_ns)
    }

    /// Adds another histogram's samples (same bounds) to this one.
    pub fn merge(&mut self, other: &LatenessHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.samples += other.samples;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// One-line text rendering: `p50<=.. p99<=.. max ..` plus non-empty buckets.
    pub fn render(&self) -> String {
        if self.samples == 0 {
            return "no samples".to_owned();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let mut out = format!(
            "n={} mean={:.1}us p50<={:.0}us p99<={:.0}us p99.9<={:.0}us max={:.1}us |",
            self.samples,
            us(self.mean_ns()),
            us(self.quantile_le_ns(0.5).unwrap_or(0)),
            us(self.quantile_le_ns(0.99).unwrap_or(0)),
            us(self.quantile_le_ns(0.999).unwrap_or(0)),
            us(self.max_ns)
        );
        for (i, &count) in self.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            match self.le_ns.get(i) {
                Some(&le) => out.push_str(&format!(" <={}us:{count}", le / 1000)),
                None => out.push_str(&format!(" >{}us:{count}", self.max_bound_us())),
            }
        }
        out
    }

    fn max_bound_us(&self) -> u64 {
        self.le_ns.last().copied().unwrap_or(0) / 1000
    }
}

/// Counters of one direction of the emulated path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    /// What the link model decided for the packets read from the sending TUN.
    pub link: LinkStats,
    /// Packets written into the receiving TUN (duplicates count twice).
    pub written_packets: u64,
    /// Bytes written into the receiving TUN.
    pub written_bytes: u64,
    /// Writes the kernel refused (a failure of the emulator).
    pub write_errors: u64,
    /// Corrupted packets the kernel refused to take (their flipped bit made
    /// them invalid IP): an expected outcome of corruption, not a failure.
    pub corrupt_refused: u64,
    /// Reads that failed other than "nothing waiting".
    pub read_errors: u64,
    /// Packets scheduled but not yet written (when the snapshot was taken).
    pub pending: u64,
    /// Seconds from the start of the emulation to the first write.
    pub first_write_s: Option<f64>,
    /// Size of the first packet written (excluded when computing the rate).
    pub first_write_bytes: u64,
    /// Seconds from the start of the emulation to the last write.
    pub last_write_s: Option<f64>,
    /// Lateness of writes against the model's delivery times.
    pub lateness: LatenessHistogram,
    /// How the forwarding thread was scheduled ("SCHED_FIFO", "nice -20", "normal").
    pub scheduling: String,
    /// Bytes written during each whole second since the start (second `i`
    /// covers `[i, i + 1)`), for the first [`PER_SECOND_LIMIT`] seconds: the
    /// delivered rate over time, without the start and end of a run.
    pub per_second_bytes: Vec<u64>,
    /// The same in bins of [`TENTH_MS`] (bin `i` covers `[i, i + 1)`
    /// tenths of a second), for the same [`PER_SECOND_LIMIT`] seconds: a
    /// rate step's refill takes a few round trips, which whole seconds
    /// blur (`bench/ratestep.sh` judges when the path is busy again from
    /// these). Absent from reports written before it existed.
    #[serde(default)]
    pub per_tenth_bytes: Vec<u64>,
}

/// Adds `bytes` to bin `i` of `bins` (grown as needed), unless `i` is at or
/// past `limit`.
fn add_to_bin(bins: &mut Vec<u64>, i: u128, limit: usize, bytes: usize) {
    let Ok(i) = usize::try_from(i) else {
        return;
    };
    if i >= limit {
        return;
    }
    if bins.len() <= i {
        bins.resize(i + 1, 0);
    }
    if let Some(slot) = bins.get_mut(i) {
        *slot += bytes as u64;
    }
}

impl DirStats {
    /// Counts `bytes` written at `t` seconds after the start.
    pub(crate) fn record_write(&mut self, t: Duration, bytes: usize) {
        let tenths_per_second = (1000 / TENTH_MS) as usize;
        add_to_bin(
            &mut self.per_second_bytes,
            u128::from(t.as_secs()),
            PER_SECOND_LIMIT,
            bytes,
        );
        add_to_bin(
            &mut self.per_tenth_bytes,
            t.as_millis() / u128::from(TENTH_MS),
            PER_SECOND_LIMIT * tenths_per_second,
            bytes,
        );
        let secs = t.as_secs_f64();
        if self.first_write_s.is_none() {
            self.first_write_s = Some(secs);
            self.first_write_bytes = bytes as u64;
        }
        self.last_write_s = Some(secs);
        self.written_packets += 1;
        self.written_bytes += bytes as u64;
    }

    /// Rate at which bytes left the emulator between the first and last
    /// write, in bits/s (`None` with fewer than two writes). On a saturated
    /// link this is the emulated rate as the receiver sees it.
    pub fn write_rate_bps(&self) -> Option<f64> {
        let (first, last) = (self.first_write_s?, self.last_write_s?);
        let span = last - first;
        (span > 0.0)
            .then(|| self.written_bytes.saturating_sub(self.first_write_bytes) as f64 * 8.0 / span)
    }
}

/// `tx_dropped` of one TUN device: packets the kernel discarded because the
/// forwarder did not read them fast enough.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxDropped {
    /// The left namespace's device.
    pub left: u64,
    /// The right namespace's device.
    pub right: u64,
}

/// Everything an emulation counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmuStats {
    /// Emulation name.
    pub name: String,
    /// Seconds since the forwarder started.
    pub elapsed_s: f64,
    /// Left to right (the data direction of a profile).
    pub forward: DirStats,
    /// Right to left.
    pub reverse: DirStats,
    /// The rebinding NAT's counters (`--nat-rebind`), if there is one.
    pub nat: Option<crate::NatStats>,
    /// Final `tx_dropped` of both TUN devices; `None` while running.
    pub tx_dropped: Option<TxDropped>,
    /// True when the run cannot be trusted (non-zero `tx_dropped`, write errors).
    pub failed: bool,
    /// Why it failed.
    pub failure: Option<String>,
}

impl EmuStats {
    /// Sets [`failed`](Self::failed) and [`failure`](Self::failure) from the counters.
    pub(crate) fn judge(&mut self) {
        let mut reasons = Vec::new();
        if let Some(tx) = self.tx_dropped {
            if tx.left > 0 || tx.right > 0 {
                reasons.push(format!(
                    "TUN tx_dropped left={} right={} (the forwarder fell behind; packets were lost outside the model)",
                    tx.left, tx.right
                ));
            }
        }
        let errors = self.forward.write_errors + self.reverse.write_errors;
        if errors > 0 {
            reasons.push(format!("{errors} TUN write errors"));
        }
        self.failed = !reasons.is_empty();
        self.failure = (!reasons.is_empty()).then(|| reasons.join("; "));
    }

    /// Short human-readable summary, several lines.
    pub fn render(&self) -> String {
        let dir = |label: &str, d: &DirStats| {
            let drops = d.link.drops;
            format!(
                "{label}: offered {} pkts, written {} pkts / {} B{}, drops mtu={} queue={} loss={} biterr={}, dup={} corrupt={} (refused by the kernel {}) reorder={}\n  lateness {}\n",
                d.link.offered,
                d.written_packets,
                d.written_bytes,
                d.write_rate_bps()
                    .map(|r| format!(" at {:.3} Mb/s", r / 1e6))
                    .unwrap_or_default(),
                drops.mtu,
                drops.queue,
                drops.loss,
                drops.bit_error,
                d.link.duplicates,
                d.link.corrupted,
                d.corrupt_refused,
                d.link.reordered,
                d.lateness.render()
            )
        };
        let mut out = format!("emulation {} ran {:.3} s\n", self.name, self.elapsed_s);
        out.push_str(&dir("forward (left->right)", &self.forward));
        out.push_str(&dir("reverse (right->left)", &self.reverse));
        if let Some(tx) = self.tx_dropped {
            out.push_str(&format!(
                "tx_dropped: left={} right={}\n",
                tx.left, tx.right
            ));
        }
        if let Some(why) = &self.failure {
            out.push_str(&format!("FAILED: {why}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_and_quantiles() {
        let mut h = LatenessHistogram::default();
        for ns in [0, 500, 1_000, 1_001, 3_000, 250_000_000] {
            h.record(ns);
        }
        assert_eq!(h.samples, 6);
        assert_eq!(h.counts[0], 3); // 0, 500 and 1000 are all <= 1 us
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[2], 1);
        assert_eq!(h.counts[LATENESS_BOUNDS_NS.len()], 1);
        assert_eq!(h.quantile_le_ns(0.5), Some(1_000));
        assert_eq!(h.quantile_le_ns(1.0), Some(250_000_000));
        assert_eq!(h.max_ns, 250_000_000);
        assert_eq!(LatenessHistogram::default().quantile_le_ns(0.5), None);
    }

    #[test]
    fn judge_flags_tx_dropped() {
        let mut s = EmuStats {
            tx_dropped: Some(TxDropped { left: 0, right: 3 }),
            ..EmuStats::default()
        };
        s.judge();
        assert!(s.failed);
        s.tx_dropped = Some(TxDropped::default());
        s.judge();
        assert!(!s.failed);
        let json = serde_json::to_string(&s).unwrap();
        let back: EmuStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn per_second_series() {
        let mut d = DirStats::default();
        d.record_write(Duration::from_millis(500), 100);
        d.record_write(Duration::from_millis(2_100), 50);
        d.record_write(Duration::from_millis(2_900), 50);
        d.record_write(Duration::from_secs(PER_SECOND_LIMIT as u64 + 5), 7);
        assert_eq!(d.per_second_bytes, vec![100, 0, 100]);
        let mut tenths = vec![0; 30];
        tenths[5] = 100;
        tenths[21] = 50;
        tenths[29] = 50;
        assert_eq!(d.per_tenth_bytes, tenths);
        assert_eq!(d.written_packets, 4);
        assert_eq!(d.first_write_bytes, 100);
    }

    #[test]
    fn a_report_without_tenths_still_reads() {
        let mut d = DirStats::default();
        d.record_write(Duration::from_millis(500), 100);
        let mut json: serde_json::Value = serde_json::to_value(&d).unwrap();
        json.as_object_mut().unwrap().remove("per_tenth_bytes");
        let back: DirStats = serde_json::from_value(json).unwrap();
        assert!(back.per_tenth_bytes.is_empty());
        assert_eq!(back.per_second_bytes, vec![100]);
    }

    #[test]
    fn write_rate() {
        let d = DirStats {
            written_bytes: 1000 + 125_000,
            first_write_bytes: 1000,
            first_write_s: Some(1.0),
            last_write_s: Some(2.0),
            ..DirStats::default()
        };
        assert_eq!(d.write_rate_bps(), Some(1_000_000.0));
    }
}
