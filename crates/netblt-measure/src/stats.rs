//! Summary statistics of a sample: n, min, mean, standard deviation, percentiles, max.
//!
//! XUNET reported minimum, mean and standard deviation of 350 (later 100) round trips per
//! packet size, and argued from the minimum ("the minimum values give us the best
//! characterization of an idle network") while using the mean under load. We keep all of
//! them plus a few percentiles, since a modern host's tail says more than its mean.
//!
//! Conventions, fixed so that tests can pin them:
//! - the standard deviation is the *sample* one (divides by n - 1; 0 for a single value);
//! - percentiles use the nearest-rank method: the p-th percentile of n sorted values is the
//!   value at rank ceil(p/100 * n) (1-based), so every reported percentile was observed.

use serde::{Deserialize, Serialize};

/// Summary of a sample. Units are those of the input (microseconds for RTTs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator).
    pub sd: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none or any is not finite.
    pub fn from_values(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            n: sorted.len(),
            min: *sorted.first()?,
            mean: mean(&sorted)?,
            sd: sample_sd(&sorted)?,
            p50: percentile_sorted(&sorted, 50.0)?,
            p90: percentile_sorted(&sorted, 90.0)?,
            p99: percentile_sorted(&sorted, 99.0)?,
            max: *sorted.last()?,
        })
    }
}

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (divides by n - 1); 0 for one value, `None` for none.
///
/// Computed around the mean in two passes, which is accurate enough for the few thousand
/// values a run produces and avoids the cancellation of the one-pass sum-of-squares form.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    if values.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    Some((ss / (values.len() - 1) as f64).sqrt())
}

/// Nearest-rank percentile of an ascending slice; `p` in 0..=100 (clamped).
///
/// `None` for an empty slice. p = 0 gives the minimum.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted.get(rank.clamp(1, n) - 1).copied()
}

/// Nearest-rank percentile of values in any order.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile_sorted(&sorted, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn sd_of_known_vector() {
        // Classic example: population sd 2, sample sd sqrt(32/7).
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert!(close(sample_sd(&v).unwrap(), (32.0f64 / 7.0).sqrt()));
        assert_eq!(sample_sd(&[3.0]), Some(0.0));
        assert_eq!(sample_sd(&[]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        // Wikipedia's nearest-rank example: 15, 20, 35, 40, 50.
        let v = [50.0, 15.0, 40.0, 20.0, 35.0];
        assert_eq!(percentile(&v, 5.0), Some(15.0));
        assert_eq!(percentile(&v, 30.0), Some(20.0));
        assert_eq!(percentile(&v, 40.0), Some(20.0));
        assert_eq!(percentile(&v, 50.0), Some(35.0));
        assert_eq!(percentile(&v, 100.0), Some(50.0));
        assert_eq!(percentile(&v, 0.0), Some(15.0));
        assert_eq!(percentile(&[], 50.0), None);
        // 1..=100: p90 is 90, p99 is 99.
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 90.0), Some(90.0));
        assert_eq!(percentile(&hundred, 99.0), Some(99.0));
    }

    #[test]
    fn summary_orders_and_rejects_bad_input() {
        let s = Summary::from_values(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.n, s.min, s.max, s.p50), (3, 1.0, 3.0, 2.0));
        assert!(close(s.mean, 2.0));
        assert!(close(s.sd, 1.0));
        assert!(s.min <= s.mean && s.mean <= s.max);
        assert_eq!(Summary::from_values(&[]), None);
        assert_eq!(Summary::from_values(&[1.0, f64::NAN]), None);
    }
}
