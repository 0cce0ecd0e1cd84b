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
    /// 4.3BSD's fixed-point state in ticks: `t_srtt` (scaled by 8) and
    /// `t_rttvar` (scaled by 4); used when `cfg.countdown`.
    bsd: Option<(i64, i64)>,
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
            bsd: None,
        }
    }

    /// 4.3BSD-Tahoe's `tcp_input`, in its own integer arithmetic: the
    /// truncations matter at 500 ms ticks (a 580 ms path samples 1 or 2
    /// ticks, and `t_srtt >> 3` rounds down, so srtt drifts up towards 2).
    /// `ticks` is the sample at origin 0 (tick boundaries crossed).
    fn on_sample_bsd(&mut self, ticks: i64, g: u64) {
        let t_rtt = ticks + 1; // t_rtt starts at 1 when timing begins
        let (mut srtt, mut var) = match self.bsd {
            Some((srtt, var)) => {
                //# "Adjust t_rtt to origin 0."
                //# delta = tp->t_rtt - 1 - (tp->t_srtt >> 3);
                //# if ((tp->t_srtt += delta) <= 0) tp->t_srtt = 1;
                let mut delta = t_rtt - 1 - (srtt >> 3);
                let mut srtt = srtt + delta;
                if srtt <= 0 {
                    srtt = 1;
                }
                //# "set the retransmit timer to smoothed rtt + 2 times the
                //# smoothed variance" (rttvar scaled by 4)
                delta = delta.abs() - (var >> 2);
                let mut var = var + delta;
                if var <= 0 {
                    var = 1;
                }
                (srtt, var)
            }
            //# tp->t_srtt = tp->t_rtt << 3; tp->t_rttvar = tp->t_rtt << 1;
            None => (t_rtt << 3, t_rtt << 1),
        };
        srtt = srtt.max(1);
        var = var.max(1);
        self.bsd = Some((srtt, var));
        self.srtt = Some((srtt as u64).saturating_mul(g) / 8);
        self.rttvar = (var as u64).saturating_mul(g) / 4;
        //# TCPT_RANGESET(tp->t_rxtcur, ((tp->t_srtt >> 2) + tp->t_rttvar) >> 1,
        //#     TCPTV_MIN, TCPTV_REXMTMAX);
        let ticks = (((srtt >> 2) + var) >> 1).max(0) as u64;
        self.rto = ticks
            .saturating_mul(g)
            .clamp(nanos(self.cfg.min), nanos(self.cfg.max));
        self.backoff = 0;
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

    /// RFC 6298 (2.2)/(2.3) with alpha = 1/8, beta = 1/4 and the configured K
    /// (4; 4.3BSD-Tahoe's 2).
    pub(crate) fn on_sample(&mut self, r: u64) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let g = nanos(self.cfg.granularity);
        if self.cfg.countdown && g > 1 {
            self.on_sample_bsd(i64::try_from(r / g).unwrap_or(i64::MAX / 16), g);
            return;
        }
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
        let srtt = self.srtt.unwrap_or(r);
        let k = u64::from(self.cfg.k);
        let rto = srtt.saturating_add(g.max(self.rttvar.saturating_mul(k)));
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
        let g = nanos(self.cfg.granularity);
        if self.cfg.countdown && g > 1 {
            // 4.3BSD: t_timer[TCPT_REXMT] = n ticks, decremented by every
            // tcp_slowtimo; it fires on the n-th tick after now, which is
            // (n-1) to n ticks away.
            let n = rto.div_ceil(g).max(1);
            let at = (now.as_nanos() / g).saturating_add(n).saturating_mul(g);
            return Instant::from_nanos(at);
        }
        let at = now.as_nanos().saturating_add(rto);
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
