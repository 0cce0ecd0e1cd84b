//! Time as the engine sees it: a monotonic count of nanoseconds from an
//! arbitrary zero chosen by the driver.
//!
//! The engine never reads a clock. Drivers pass `now` into every call: the
//! simulator starts its runs at [`Instant::ZERO`], so logs and results are
//! byte-identical from run to run; the UDP driver maps `std::time::Instant`
//! onto this type (see `netblt-udp`).

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in time, in nanoseconds since the driver's zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The driver's zero: simulated runs start here.
    pub const ZERO: Instant = Instant { nanos: 0 };
    /// A time later than any a driver will reach (584 years).
    pub const FAR_FUTURE: Instant = Instant { nanos: u64::MAX };

    /// The instant `nanos` nanoseconds after zero.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant { nanos }
    }

    /// The instant `micros` microseconds after zero.
    pub const fn from_micros(micros: u64) -> Self {
        Instant {
            nanos: micros.saturating_mul(1_000),
        }
    }

    /// The instant `millis` milliseconds after zero.
    pub const fn from_millis(millis: u64) -> Self {
        Instant {
            nanos: millis.saturating_mul(1_000_000),
        }
    }

    /// Nanoseconds since zero.
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }

    /// Time since zero as a [`Duration`].
    pub const fn since_zero(self) -> Duration {
        Duration::from_nanos(self.nanos)
    }

    /// `self - earlier`, or zero if `earlier` is later (never panics).
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }

    /// Seconds since zero as a float, for reports.
    pub fn as_secs_f64(self) -> f64 {
        self.nanos as f64 / 1e9
    }
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at [`Instant::FAR_FUTURE`] instead of overflowing.
    fn add(self, rhs: Duration) -> Instant {
        Instant {
            nanos: self.nanos.saturating_add(duration_nanos(rhs)),
        }
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturates at [`Instant::ZERO`].
    fn sub(self, rhs: Duration) -> Instant {
        Instant {
            nanos: self.nanos.saturating_sub(duration_nanos(rhs)),
        }
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier `self` gives zero.
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_millis(5);
        assert_eq!(t + Duration::from_millis(1), Instant::from_micros(6_000));
        assert_eq!(t - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(
            Instant::FAR_FUTURE + Duration::from_secs(1),
            Instant::FAR_FUTURE
        );
        assert_eq!(t - Instant::from_millis(2), Duration::from_millis(3));
    }
}
