//! Small statistics helpers for simulator reports: a fixed-memory
//! histogram with percentiles, and Jain's fairness index.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: values are kept to within 1/64 (1.6 %).
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// A log-linear histogram of non-negative integers (HdrHistogram's layout
/// with 6 significant bits): constant memory, exact below 64, within 1.6 %
/// above, so a long run records every packet without storing it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = exp - SUB_BITS;
    let mantissa = (v >> shift) - SUB; // 0..SUB
    ((u64::from(shift) + 1) * SUB + mantissa) as usize
}

/// Lowest value in bucket `b`.
fn bucket_floor(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let shift = b / SUB - 1;
    (SUB + b % SUB) << shift
}

impl Histogram {
    /// Counts one value.
    pub fn record(&mut self, v: u64) {
        let b = bucket(v);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        if self.total == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.total += 1;
        self.sum += u128::from(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (0..=1): the floor of its bucket, clamped
    /// to the exact min and max; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_floor(b).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Min, median, 95th percentile, max and mean, scaled by `scale` (e.g.
    /// 1e-3 to turn microseconds into milliseconds).
    pub fn summary(&self, scale: f64) -> Option<Summary> {
        (self.total > 0).then(|| Summary {
            count: self.total,
            min: self.min as f64 * scale,
            p50: self.quantile(0.5).unwrap_or(0) as f64 * scale,
            p95: self.quantile(0.95).unwrap_or(0) as f64 * scale,
            max: self.max as f64 * scale,
            mean: self.sum as f64 / self.total as f64 * scale,
        })
    }
}

/// A distribution in five numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Median (within 1.6 %).
    pub p50: f64,
    /// 95th percentile (within 1.6 %).
    pub p95: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// Jain's fairness index of `x`: `(sum x)^2 / (n * sum x^2)`, from 1/n (one
/// gets all) to 1 (equal shares). `None` for no values or all zero.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (n > 0.0 && sq > 0.0).then(|| sum * sum / (n * sq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut prev = 0;
        for v in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(v);
            assert!(b >= prev);
            prev = b;
            let f = bucket_floor(b);
            assert!(f <= v && (v - f) as f64 <= v as f64 / 64.0 + 1.0, "{v} {f}");
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for v in 1..=1000 {
            h.record(v);
        }
        let s = h.summary(1.0).unwrap();
        assert_eq!((s.min, s.max, s.count), (1.0, 1000.0, 1000));
        assert!((s.p50 - 500.0).abs() <= 8.0, "{s:?}");
        assert!((s.p95 - 950.0).abs() <= 15.0, "{s:?}");
        assert!((s.mean - 500.5).abs() < 1e-9);
    }

    #[test]
    fn jain() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), Some(1.0));
        assert_eq!(jain_index(&[1.0, 0.0]), Some(0.5));
        assert_eq!(jain_index(&[]), None);
    }
}
