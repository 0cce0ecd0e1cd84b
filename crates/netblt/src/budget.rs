//! A budget of work: a burst, then a steady rate (a token bucket kept as
//! GCRA's theoretical arrival time). The passive end's handshake work (K27)
//! and its checks of `authorized_keys` (K26) each have one.

use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Budget {
    /// Theoretical arrival time: the budget is spent while this lies more
    /// than `tolerance` ahead of now.
    tat: Instant,
    every: Duration,
    tolerance: Duration,
}

impl Budget {
    /// `burst` at once, then one per `every`.
    pub(crate) fn new(now: Instant, burst: u32, every: Duration) -> Budget {
        Budget {
            tat: now,
            every,
            tolerance: every * burst.max(1).saturating_sub(1),
        }
    }

    /// Nothing left now.
    pub(crate) fn spent(&self, now: Instant) -> bool {
        self.tat.saturating_duration_since(now) > self.tolerance
    }

    /// Takes one if any is left.
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        if self.spent(now) {
            return false;
        }
        self.tat = self.tat.max(now) + self.every;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_a_rate() {
        let t0 = Instant::now();
        let mut b = Budget::new(t0, 4, Duration::from_millis(10));
        assert!((0..4).all(|_| b.take(t0)));
        assert!(b.spent(t0) && !b.take(t0));
        // 10 ms later, one more.
        let t = t0 + Duration::from_millis(10);
        assert!(b.take(t) && !b.take(t));
        // Idle for long: back to the burst, not more.
        let t = t0 + Duration::from_secs(60);
        assert_eq!((0..10).filter(|_| b.take(t)).count(), 4);
        // An Instant before the last one (never from the driver) is harmless.
        assert!(!b.take(t0));
    }
}
