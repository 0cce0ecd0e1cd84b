//! The driver's clock: `std::time::Instant` mapped onto the engine's
//! nanosecond [`netblt_proto::Instant`].
//!
//! The engine never reads a clock; every call takes `now`. The driver picks a
//! zero (the moment the clock was made) and passes the monotonic time elapsed
//! since then, so the engine's arithmetic stays in `u64` nanoseconds.

use netblt_proto::Instant;

/// Maps wall-monotonic time to engine time and back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// Engine time now.
    pub(crate) fn now(&self) -> Instant {
        let ns = self.origin.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
