//! XUNET §3.5: single-process throughput from ZERO and LARGE transfers (eqs. 7-9, Table II).
//!
//! "In order to factor out this time, ten transmissions of a zero length file are made ...
//! and the minimum time is recorded. Second, a large (~300 KB) file is transferred ten times
//! ... and the minimum values of the transfer times are recorded."

use serde::Serialize;

use super::{positive, ModelError};

/// Eq. 7: Measured throughput = Size of LARGE / (time of LARGE - time of ZERO), bytes/s.
///
/// # Errors
/// [`ModelError::LargeNotLonger`] unless `large_s > zero_s`; [`ModelError::NotPositive`] for
/// a non-positive size.
pub fn measured_throughput(large_bytes: f64, large_s: f64, zero_s: f64) -> Result<f64, ModelError> {
    positive("size of LARGE", large_bytes)?;
    let d = large_s - zero_s;
    if !(d.is_finite() && d > 0.0) || zero_s < 0.0 {
        return Err(ModelError::LargeNotLonger { zero_s, large_s });
    }
    Ok(large_bytes / d)
}

/// Eq. 8: Maximum throughput = Window Size / Minimum round trip time, bytes/s.
///
/// "The most amount of data a process can transmit is a full window, and before the process
/// can transmit another window, it must wait for an acknowledgement."
///
/// # Errors
/// [`ModelError::NotPositive`] for a non-positive window or RTT.
pub fn max_throughput(window_bytes: f64, min_rtt_s: f64) -> Result<f64, ModelError> {
    Ok(positive("window", window_bytes)? / positive("minimum RTT", min_rtt_s)?)
}

/// Eq. 9, right side: Effective window = Measured throughput x RTT, bytes.
///
/// # Errors
/// [`ModelError::NotPositive`] for non-positive inputs.
pub fn effective_window(measured_bps: f64, rtt_s: f64) -> Result<f64, ModelError> {
    Ok(positive("measured throughput", measured_bps)? * positive("RTT", rtt_s)?)
}

/// Eq. 9, left side solved for the correction factor: Window / Measured throughput - RTT,
/// seconds. It is the extra delay each window carries beyond one round trip (may be negative
/// if the measured throughput exceeds the window model's maximum).
///
/// # Errors
/// [`ModelError::NotPositive`] for non-positive inputs.
pub fn correction_factor(
    window_bytes: f64,
    measured_bps: f64,
    rtt_s: f64,
) -> Result<f64, ModelError> {
    Ok(
        positive("window", window_bytes)? / positive("measured throughput", measured_bps)?
            - positive("RTT", rtt_s)?,
    )
}

/// The inputs of one Table II row.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ZeroLargeInput {
    /// Minimum transfer time of ZERO, seconds.
    pub zero_s: f64,
    /// Minimum transfer time of LARGE, seconds.
    pub large_s: f64,
    /// Size of LARGE, bytes.
    pub large_bytes: f64,
    /// Protocol window, bytes.
    pub window_bytes: f64,
    /// Minimum round-trip time, seconds.
    pub min_rtt_s: f64,
}

impl ZeroLargeInput {
    /// Bundles the five inputs.
    pub fn new(
        zero_s: f64,
        large_s: f64,
        large_bytes: f64,
        window_bytes: f64,
        min_rtt_s: f64,
    ) -> Self {
        ZeroLargeInput {
            zero_s,
            large_s,
            large_bytes,
            window_bytes,
            min_rtt_s,
        }
    }
}

/// One row of Table II: "Maximum Throughput vs Measured Throughput for a Single Process".
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ZeroLargeRow {
    /// Window size, bytes.
    pub window_bytes: f64,
    /// Effective window, bytes (eq. 9).
    pub effective_window_bytes: f64,
    /// Maximum throughput, bytes/s (eq. 8).
    pub max_throughput: f64,
    /// Measured throughput, bytes/s (eq. 7).
    pub measured_throughput: f64,
    /// Correction factor per window, milliseconds (eq. 9).
    pub correction_ms: f64,
}

/// Computes a Table II row.
///
/// # Errors
/// As for the individual equations.
pub fn zero_large(input: &ZeroLargeInput) -> Result<ZeroLargeRow, ModelError> {
    let measured = measured_throughput(input.large_bytes, input.large_s, input.zero_s)?;
    Ok(ZeroLargeRow {
        window_bytes: input.window_bytes,
        effective_window_bytes: effective_window(measured, input.min_rtt_s)?,
        max_throughput: max_throughput(input.window_bytes, input.min_rtt_s)?,
        measured_throughput: measured,
        correction_ms: correction_factor(input.window_bytes, measured, input.min_rtt_s)? * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// The worked example of §3.5.2, UIUC* >> Vangogh: "Theoretical maximum throughput =
    /// 84/0.040 = 2100 bytes/sec; Measured throughput = 334848/(166-4) = 2066.9 bytes/sec;
    /// Effective window = 2066.9 x 0.040 = 82.68 bytes; Correction factor per window =
    /// 84/2066.9 - 0.040 = 0.6 ms".
    #[test]
    fn worked_example_uiuc_to_vangogh() {
        // 334848 / 162 = 2066.96...; the paper truncates to one decimal.
        let measured = measured_throughput(334_848.0, 166.0, 4.0).unwrap();
        assert!(close(measured, 2066.96, 0.005), "{measured}");
        assert_eq!(format!("{:.1}", (measured * 10.0).trunc() / 10.0), "2066.9");
        assert!(close(max_throughput(84.0, 0.040).unwrap(), 2100.0, 1e-9));
        assert!(close(
            effective_window(2066.9, 0.040).unwrap(),
            82.68,
            0.005
        ));
        assert!(close(
            correction_factor(84.0, 2066.9, 0.040).unwrap() * 1e3,
            0.6,
            0.05
        ));

        let row = zero_large(&ZeroLargeInput::new(4.0, 166.0, 334_848.0, 84.0, 0.040)).unwrap();
        assert!(close(row.measured_throughput, 2066.9, 0.1));
        assert!(close(row.effective_window_bytes, 82.68, 0.005));
        assert!(close(row.max_throughput, 2100.0, 1e-9));
        assert!(close(row.correction_ms, 0.6, 0.05));
    }

    /// The other rows of Table II, from their window and measured throughput, with the
    /// minimum RTT implied by the "maximum throughput" column (eq. 8 backwards).
    #[test]
    fn table_ii_other_rows() {
        // (window, effective window, max throughput, measured, correction ms)
        let rows = [
            (756.0, 518.76, 13830.0, 9490.7, 25.0),
            (756.0, 520.53, 13830.0, 9523.2, 24.7),
            (756.0, 459.49, 17784.0, 10808.9, 27.4),
        ];
        for (w, eff, max, measured, corr) in rows {
            let rtt = w / max;
            assert!(close(max_throughput(w, rtt).unwrap(), max, 1e-6));
            assert!(
                close(effective_window(measured, rtt).unwrap(), eff, 0.05),
                "{eff}"
            );
            assert!(
                close(
                    correction_factor(w, measured, rtt).unwrap() * 1e3,
                    corr,
                    0.1
                ),
                "{corr}"
            );
        }
    }

    #[test]
    fn rejects_meaningless_inputs() {
        assert!(matches!(
            measured_throughput(1.0, 4.0, 4.0),
            Err(ModelError::LargeNotLonger { .. })
        ));
        assert!(measured_throughput(0.0, 5.0, 4.0).is_err());
        assert!(max_throughput(84.0, 0.0).is_err());
        assert!(max_throughput(f64::NAN, 1.0).is_err());
        assert!(zero_large(&ZeroLargeInput::new(4.0, 166.0, 334_848.0, -1.0, 0.04)).is_err());
    }
}
