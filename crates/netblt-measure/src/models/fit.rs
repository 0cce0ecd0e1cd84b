//! Least-squares estimates of the delay model's parameters from measured points.
//!
//! XUNET read its parameters off the plots: a response time (the 1-byte RTT) and a slope in
//! ms/byte. We fit them instead. Eq. 5 is a straight line RTT = response + size x slope, so
//! ordinary least squares gives both. Eq. 6 is the same line once the known transmission
//! term 2 x size x 8 / line rate is subtracted, leaving the extra ms/byte.

use serde::Serialize;

use super::delay::{line_rtt_ms, transmission_ms};
use super::{positive, ModelError};

/// A straight line y = intercept + slope x fitted by ordinary least squares.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LinearFit {
    /// Value at x = 0.
    pub intercept: f64,
    /// Change of y per unit x.
    pub slope: f64,
    /// Coefficient of determination (1 = perfect; 1 also when y does not vary).
    pub r_squared: f64,
    /// Points used.
    pub n: usize,
}

impl LinearFit {
    /// The line's value at `x`.
    pub fn predict(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Fits y = a + b x to `points` (x, y), ignoring non-finite points.
///
/// # Errors
/// [`ModelError::TooFewPoints`] unless at least two usable points have different x.
pub fn fit_line(points: &[(f64, f64)]) -> Result<LinearFit, ModelError> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let n = pts.len();
    if n < 2 {
        return Err(ModelError::TooFewPoints(n));
    }
    let nf = n as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = pts.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = pts.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let syy: f64 = pts.iter().map(|(_, y)| (y - my) * (y - my)).sum();
    if sxx <= f64::EPSILON * mx.abs().max(1.0) {
        return Err(ModelError::TooFewPoints(1));
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = pts
        .iter()
        .map(|(x, y)| {
            let e = y - (intercept + slope * x);
            e * e
        })
        .sum();
    let r_squared = if syy > 0.0 { 1.0 - ss_res / syy } else { 1.0 };
    Ok(LinearFit {
        intercept,
        slope,
        r_squared,
        n,
    })
}

/// Fitted parameters of eq. 5 (and of eq. 6 when a line rate is known).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DelayFit {
    /// Response time, ms (the fitted RTT of a zero-byte message).
    pub response_ms: f64,
    /// Eq. 5's slope, ms/byte.
    pub ms_per_byte: f64,
    /// Line rate used for eq. 6, bits/s, if given.
    pub line_bps: Option<f64>,
    /// Eq. 6's extra delay per byte, ms/byte: the slope less the line's 16 bits per byte
    /// (there and back) at `line_bps`. Present when `line_bps` is.
    pub extra_ms_per_byte: Option<f64>,
    /// Goodness of the line fit.
    pub r_squared: f64,
    /// Points used.
    pub n: usize,
}

/// Fits eq. 5 to (size in bytes, RTT in ms) points, and derives eq. 6's extra ms/byte when
/// `line_bps` is given.
///
/// # Errors
/// [`ModelError::TooFewPoints`], or [`ModelError::NotPositive`] for a bad line rate.
pub fn fit_delay(points: &[(f64, f64)], line_bps: Option<f64>) -> Result<DelayFit, ModelError> {
    let line = fit_line(points)?;
    let extra = match line_bps {
        Some(bps) => Some(line.slope - 2.0 * transmission_ms(1.0, positive("line rate", bps)?)?),
        None => None,
    };
    Ok(DelayFit {
        response_ms: line.intercept,
        ms_per_byte: line.slope,
        line_bps,
        extra_ms_per_byte: extra,
        r_squared: line.r_squared,
        n: line.n,
    })
}

/// One point with the model's prediction beside the measurement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Prediction {
    /// Message size, bytes.
    pub size: f64,
    /// Measured RTT, ms.
    pub measured_ms: f64,
    /// Predicted RTT, ms.
    pub predicted_ms: f64,
    /// (predicted - measured) / measured, percent.
    pub error_pct: f64,
}

impl DelayFit {
    /// The fitted RTT for `size` bytes (eq. 6 when a line rate is known, else eq. 5; the two
    /// agree by construction).
    pub fn predict_ms(&self, size: f64) -> f64 {
        match (self.line_bps, self.extra_ms_per_byte) {
            (Some(bps), Some(extra)) => {
                line_rtt_ms(size, self.response_ms, bps, extra).unwrap_or(f64::NAN)
            }
            _ => self.response_ms + self.ms_per_byte * size,
        }
    }

    /// Predicted against measured for each point.
    pub fn predictions(&self, points: &[(f64, f64)]) -> Vec<Prediction> {
        points
            .iter()
            .map(|&(size, measured_ms)| {
                let predicted_ms = self.predict_ms(size);
                Prediction {
                    size,
                    measured_ms,
                    predicted_ms,
                    error_pct: if measured_ms != 0.0 {
                        100.0 * (predicted_ms - measured_ms) / measured_ms
                    } else {
                        f64::NAN
                    },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table I's last column: dkbench minimum RTTs to Fishonaplatter, up to one 756-byte
    /// window (where eq. 5 "holds up to one window").
    const TABLE_I_MIN: [(f64, f64); 11] = [
        (1.0, 54.64),
        (2.0, 54.29),
        (16.0, 55.14),
        (17.0, 55.13),
        (84.0, 56.88),
        (85.0, 56.52),
        (112.0, 57.34),
        (113.0, 57.14),
        (168.0, 58.41),
        (169.0, 58.60),
        (756.0, 69.97),
    ];

    #[test]
    fn exact_line_is_recovered() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), 3.0 + 0.5 * f64::from(i)))
            .collect();
        let f = fit_line(&pts).unwrap();
        assert!((f.intercept - 3.0).abs() < 1e-12);
        assert!((f.slope - 0.5).abs() < 1e-12);
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        assert_eq!(f.n, 10);
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert_eq!(fit_line(&[]), Err(ModelError::TooFewPoints(0)));
        assert_eq!(fit_line(&[(1.0, 2.0)]), Err(ModelError::TooFewPoints(1)));
        assert!(fit_line(&[(5.0, 1.0), (5.0, 2.0)]).is_err());
        assert_eq!(
            fit_line(&[(1.0, f64::NAN), (2.0, 1.0)]),
            Err(ModelError::TooFewPoints(1))
        );
    }

    /// Fitting the paper's own measurements recovers the paper's constants: about 0.02
    /// ms/byte for eq. 5, a response time near the measured 54.64 ms, and eq. 6's extra
    /// factor near 0.008 ms/byte once the T1 line's 1.344 Mb/s is taken out.
    #[test]
    fn table_i_gives_the_papers_constants() {
        let fit = fit_delay(&TABLE_I_MIN, Some(1.344e6)).unwrap();
        assert!(
            (fit.ms_per_byte - 0.02).abs() < 0.002,
            "{}",
            fit.ms_per_byte
        );
        assert!((fit.response_ms - 54.64).abs() < 0.6, "{}", fit.response_ms);
        let extra = fit.extra_ms_per_byte.unwrap();
        assert!((extra - 0.008).abs() < 0.002, "{extra}");
        assert!(fit.r_squared > 0.99);
        for p in fit.predictions(&TABLE_I_MIN) {
            assert!(p.error_pct.abs() < 1.5, "{p:?}");
        }
        // Eq. 5 and eq. 6 forms predict the same line.
        let eq5 = fit_delay(&TABLE_I_MIN, None).unwrap();
        assert!((eq5.predict_ms(500.0) - fit.predict_ms(500.0)).abs() < 1e-9);
    }
}
