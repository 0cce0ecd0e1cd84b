//! RFC 6298's round-trip estimator and retransmission timeout.

use netblt_proto::{Duration, Instant};

use super::config::RtoConfig;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    cfg: RtoConfig,
    srtt: Option<u64>,
    rttvar: u64,
    /// Current RTO before backoff, in ns.
    rto: u64,
    /// Exponential backoff shift (RFC 6298 (5.5)).
    backoff: u32,
    /// Smallest sample seen.
    min_rtt: Option<u64>,
}

impl RttEstimator {
    pub(crate) fn new(cfg: RtoConfig) -> Self {
        RttEstimator {
            rto: nanos(cfg.initial).clamp(nanos(cfg.min), nanos(cfg.max)),
            cfg,
            srtt: None,
            rttvar: 0,
            backoff: 0,
            min_rtt: None,
        }
    }

    /// A round-trip time measured on a clock of granularity G: the number of
    /// whole ticks between the two instants, times G.
    pub(crate) fn measure(&self, sent: Instant, now: Instant) -> u64 {
        let g = nanos(self.cfg.granularity);
        if g == 0 {
            return now.as_nanos().saturating_sub(sent.as_nanos());
        }
        (now.as_nanos() / g).saturating_sub(sent.as_nanos() / g) * g
    }

    /// RFC 6298 (2.2)/(2.3) with alpha = 1/8, beta = 1/4, K = 4.
    pub(crate) fn on_sample(&mut self, r: u64) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                //# (2.2) SRTT <- R, RTTVAR <- R/2, RTO <- SRTT + max (G, K*RTTVAR)
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                //# (2.3) RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|
                //#       SRTT <- (1 - alpha) * SRTT + alpha * R'
                let err = srtt.abs_diff(r);
                self.rttvar = (3 * self.rttvar + err) / 4;
                self.srtt = Some((7 * srtt + r) / 8);
            }
        }
        let g = nanos(self.cfg.granularity);
        let srtt = self.srtt.unwrap_or(r);
        let rto = srtt.saturating_add(g.max(self.rttvar.saturating_mul(4)));
        //# (2.4) Whenever RTO is computed, if it is less than 1 second, then
        //# the RTO SHOULD be rounded up to 1 second. (Configurable floor.)
        self.rto = rto.clamp(nanos(self.cfg.min), nanos(self.cfg.max));
        // A new sample after a backoff: RFC 6298 (5.7) keeps the backed-off
        // value until new data is acknowledged; we reset on the sample, which
        // only comes from new data (Karn's rule, or a timestamp echo).
        self.backoff = 0;
    }

    /// RFC 6298 (5.5): "back off the timer".
    pub(crate) fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// The timer's deadline if started at `now`: on a tick boundary when
    /// the clock has a granularity.
    pub(crate) fn deadline(&self, now: Instant) -> Instant {
        let rto = self
            .rto
            .saturating_mul(1 << self.backoff)
            .min(nanos(self.cfg.max));
        let at = now.as_nanos().saturating_add(rto);
        let g = nanos(self.cfg.granularity);
        let at = if g > 1 {
            at.div_ceil(g).saturating_mul(g)
        } else {
            at
        };
        Instant::from_nanos(at)
    }

    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(Duration::from_nanos)
    }

    pub(crate) fn rto(&self) -> Duration {
        Duration::from_nanos(self.rto)
    }
}
