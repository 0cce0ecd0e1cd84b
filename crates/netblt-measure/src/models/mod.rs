//! XUNET's throughput and delay models, as pure functions tested against the paper's own
//! worked numbers.
//!
//! - [`zero_large`]: §3.5, eqs. 7-9: measured throughput from a zero-length and a large
//!   transfer, maximum throughput from window and minimum RTT, effective window and the
//!   per-window correction factor (Table II).
//! - [`delay`]: §2.4 and §2.6, eqs. 2-6: transmission time, the back-of-the-envelope RTT, the
//!   windowed RTT (eq. 4), the local linear RTT (eq. 5) and the line-rate RTT (eq. 6).
//! - [`fit`]: least-squares estimates of eq. 5's and eq. 6's parameters from measured
//!   (size, minimum RTT) points, with predicted-versus-measured residuals.
//!
//! Units follow the paper: throughputs in bytes per second, durations in seconds for the
//! throughput model and in milliseconds (with ms/byte slopes) for the delay model, because
//! that is how its constants (0.02 ms/byte, 54.64 ms) are written.

pub mod delay;
pub mod fit;
pub mod zero_large;

/// Invalid input to a model (from a user, so reported rather than asserted).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A quantity that must be positive and finite was not.
    #[error("{name} must be a positive number, got {value}")]
    NotPositive {
        /// Which parameter.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// LARGE did not take longer than ZERO, so eq. 7 has no meaning.
    #[error("LARGE ({large_s} s) must take longer than ZERO ({zero_s} s)")]
    LargeNotLonger {
        /// Transfer time of ZERO.
        zero_s: f64,
        /// Transfer time of LARGE.
        large_s: f64,
    },
    /// Not enough distinct points to fit a line.
    #[error("need at least two points with different sizes to fit, got {0} usable")]
    TooFewPoints(usize),
}

pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ModelError::NotPositive { name, value })
    }
}
