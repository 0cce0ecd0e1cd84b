//! RFC 998's rate: the negotiated burst size and interval.

use super::{RateController, RateReason, RateSample, RateState};

/// Paces at the negotiated rate and ignores measurements.
#[derive(Debug, Clone)]
pub struct Fixed {
    bps: f64,
    /// The negotiated rate: limits set later stay under it.
    ceiling: f64,
    last_rtt: Option<crate::time::Duration>,
}

impl Fixed {
    /// A controller that always answers `bps`.
    pub fn new(bps: f64) -> Self {
        Fixed {
            bps,
            ceiling: bps,
            last_rtt: None,
        }
    }
}

impl RateController for Fixed {
    fn on_sample(&mut self, sample: &RateSample) {
        if sample.rtt.is_some() {
            self.last_rtt = sample.rtt;
        }
    }
    fn pacing_bps(&self) -> f64 {
        self.bps
    }
    fn inflight_cap(&self) -> Option<u64> {
        None
    }
    fn set_limits(&mut self, _min_bps: f64, max_bps: f64) {
        self.bps = max_bps.min(self.ceiling).max(1.0);
    }
    fn state(&self) -> RateState {
        RateState {
            rate_bps: self.bps,
            bottleneck_bps: None,
            min_rtt: None,
            last_rtt: self.last_rtt,
            noise_loss: 0.0,
            reason: RateReason::Fixed,
            congestion_events: 0,
            inflight_bytes: 0,
        }
    }
}
