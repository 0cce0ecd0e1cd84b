//! Smoothed round-trip estimate for the control timer.
//!
//! RFC 998 §5.2.1: "Subsequent control packets should have their timer values
//! based on the network round-trip transit time (i.e. the time between sending
//! the control packet and receiving the acknowledgment of all messages in the
//! control packet) plus a variance factor. The timer value should be
//! continually updated, based on a smoothed average of collected round-trip
//! transit times." The RFC names no algorithm (notes §Z17); we use the one
//! TCP settled on (RFC 6298): SRTT and RTTVAR with gains 1/8 and 1/4, and a
//! timeout of SRTT + 4 RTTVAR, doubled on each expiry (Karn's backoff).

use crate::time::Duration;

#[derive(Debug, Clone)]
pub(crate) struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    initial: Duration,
    min: Duration,
    max: Duration,
    backoff: u32,
}

impl RttEstimator {
    pub(crate) fn new(initial: Duration, min: Duration, max: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            initial,
            min,
            max: max.max(min),
            backoff: 0,
        }
    }

    /// An estimator used only for its smoothed value (no timer): the data
    /// sender's data round trip, reported (`Stats::srtt`).
    pub(crate) fn unbounded() -> Self {
        RttEstimator::new(Duration::ZERO, Duration::ZERO, Duration::MAX)
    }

    pub(crate) fn on_sample(&mut self, sample: Duration) {
        self.backoff = 0;
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(sample);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((srtt * 7 + sample) / 8);
            }
        }
    }

    /// Called when the control timer expires: the next timeout is doubled.
    pub(crate) fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(10);
    }

    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The control timer value without backoff: what OK messages report.
    pub(crate) fn base_timeout(&self) -> Duration {
        let t = match self.srtt {
            None => self.initial,
            Some(srtt) => srtt + (self.rttvar * 4).max(self.min),
        };
        t.clamp(self.min, self.max)
    }

    /// The control timer value to arm now, including backoff.
    pub(crate) fn timeout(&self) -> Duration {
        (self.base_timeout() * (1u32 << self.backoff)).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_and_backs_off() {
        let ms = Duration::from_millis;
        let mut r = RttEstimator::new(ms(1000), ms(2), ms(60_000));
        assert_eq!(r.timeout(), ms(1000));
        for _ in 0..50 {
            r.on_sample(ms(100));
        }
        let t = r.timeout();
        assert!(t >= ms(100) && t < ms(110), "{t:?}");
        r.on_timeout();
        assert_eq!(r.timeout(), r.base_timeout() * 2);
        r.on_sample(ms(100));
        assert_eq!(r.timeout(), r.base_timeout());
    }
}
