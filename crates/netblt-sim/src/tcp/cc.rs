//! Congestion window growth and reduction: Reno (RFC 5681) and CUBIC
//! (RFC 9438), behind one small interface the sender calls.

use netblt_proto::{Duration, Instant};

use super::config::CongestionControl;

/// RFC 9438 §4.1: "C SHOULD be set to 0.4."
const CUBIC_C: f64 = 0.4;
/// RFC 9438 §4.6: "beta_cubic SHOULD be set to 0.7".
const CUBIC_BETA: f64 = 0.7;

/// Window state in bytes (f64: CUBIC grows by fractions of a segment).
#[derive(Clone, Debug)]
pub(crate) struct Window {
    kind: CongestionControl,
    mss: f64,
    pub(crate) cwnd: f64,
    pub(crate) ssthresh: f64,
    /// Reno: bytes acknowledged in congestion avoidance since the last
    /// increase (RFC 5681 §3.1 with RFC 3465's byte counting).
    acked_ca: f64,
    cubic: Cubic,
}

#[derive(Clone, Debug, Default)]
struct Cubic {
    /// W_max in segments.
    w_max: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch: Option<Instant>,
    /// K in seconds.
    k: f64,
    /// Window at the epoch's start (segments).
    cwnd_epoch: f64,
    /// Reno-friendly estimate W_est (segments).
    w_est: f64,
}

impl Window {
    pub(crate) fn new(kind: CongestionControl, mss: u32, initial_segments: u32) -> Self {
        let mss = f64::from(mss.max(1));
        Window {
            kind,
            mss,
            cwnd: mss * f64::from(initial_segments.max(1)),
            ssthresh: f64::INFINITY,
            acked_ca: 0.0,
            cubic: Cubic::default(),
        }
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// New data acknowledged outside recovery.
    pub(crate) fn on_ack(&mut self, now: Instant, acked: u64, srtt: Option<Duration>) {
        let acked = acked as f64;
        if self.kind == CongestionControl::Jacobson88 {
            // 4.3BSD-Tahoe tcp_input: "open the congestion window ... by one
            // segment per ack in slow start, by maxseg*maxseg/cwnd above
            // ssthresh" -- per ACK, whatever it acknowledges.
            let incr = if self.in_slow_start() {
                self.mss
            } else {
                self.mss * self.mss / self.cwnd
            };
            self.cwnd += incr;
            return;
        }
        if self.in_slow_start() {
            //# RFC 3465 §2.2: cwnd += min(N, L*SMSS), L = 2.
            self.cwnd += acked.min(2.0 * self.mss);
            return;
        }
        match self.kind {
            CongestionControl::Reno => {
                //# RFC 5681 §3.1: cwnd += SMSS*SMSS/cwnd per ACK; we count
                //# bytes (RFC 3465 §2.1): one SMSS per cwnd of bytes acked.
                self.acked_ca += acked;
                if self.acked_ca >= self.cwnd {
                    self.acked_ca -= self.cwnd;
                    self.cwnd += self.mss;
                }
            }
            CongestionControl::Cubic => self.cubic_ack(now, acked / self.mss, srtt),
            // Handled above.
            CongestionControl::Jacobson88 => {}
        }
    }

    /// RFC 9438 §4.2-4.4, per ACK, in segments.
    fn cubic_ack(&mut self, now: Instant, segs_acked: f64, srtt: Option<Duration>) {
        let cwnd = self.cwnd / self.mss;
        let c = &mut self.cubic;
        let epoch = *c.epoch.get_or_insert_with(|| {
            // A new epoch: the first ACK in congestion avoidance after a
            // reduction (or after slow start without loss).
            c.cwnd_epoch = cwnd;
            if c.w_max < cwnd {
                // No loss yet, or the window grew past W_max in slow start:
                // the plateau is here.
                c.w_max = cwnd;
            }
            //# K = cubic_root((W_max - cwnd_epoch) / C)   (RFC 9438 Figure 2)
            c.k = ((c.w_max - cwnd) / CUBIC_C).max(0.0).cbrt();
            c.w_est = cwnd;
            now
        });
        let t = now.saturating_duration_since(epoch).as_secs_f64();
        let rtt = srtt.map_or(0.1, |d| d.as_secs_f64());
        let w_cubic = |t: f64| CUBIC_C * (t - c.k).powi(3) + c.w_max;
        //# W_est = W_est + alpha_cubic * segments_acked / cwnd   (§4.3),
        //# alpha_cubic = 3 (1 - beta) / (1 + beta), or 1 once W_est >= W_max.
        let alpha = if c.w_est >= c.w_max {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        c.w_est += alpha * segs_acked / cwnd;
        let new = if w_cubic(t) < c.w_est {
            //# §4.3: "cwnd SHOULD be set to W_est"
            c.w_est
        } else {
            //# §4.4-4.5: target = W_cubic(t + RTT), clamped to
            //# [cwnd, 1.5 cwnd]; cwnd += (target - cwnd) / cwnd per ACK.
            let target = w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * segs_acked
        };
        self.cwnd = new.max(cwnd) * self.mss;
    }

    /// A congestion event (fast retransmit): returns the new ssthresh, which
    /// is also the window for the recovery.
    pub(crate) fn on_congestion(&mut self, flight: u64) -> f64 {
        // FlightSize, but never more than the window: after a long recovery
        // the outstanding data can hold many segments already lost and not
        // yet detected, and halving those would raise the window (Linux
        // halves cwnd for the same reason).
        let flight = (flight as f64).min(self.cwnd);
        self.acked_ca = 0.0;
        let ss = match self.kind {
            //# RFC 5681 (4): ssthresh = max (FlightSize / 2, 2*SMSS)
            //# (4.3BSD-Tahoe: half of min(snd_wnd, cwnd), at least 2 segments)
            CongestionControl::Reno | CongestionControl::Jacobson88 => {
                (flight / 2.0).max(2.0 * self.mss)
            }
            CongestionControl::Cubic => {
                let cwnd = self.cwnd / self.mss;
                let c = &mut self.cubic;
                //# §4.7 fast convergence: if cwnd < W_max,
                //# W_max = cwnd * (1 + beta_cubic) / 2, else W_max = cwnd.
                c.w_max = if cwnd < c.w_max {
                    cwnd * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    cwnd
                };
                c.epoch = None;
                //# §4.6: ssthresh = cwnd * beta_cubic (never below 2 segments).
                (self.cwnd * CUBIC_BETA).max(2.0 * self.mss)
            }
        };
        self.ssthresh = ss;
        self.cwnd = ss;
        ss
    }

    /// A retransmission timeout: RFC 5681 (4) for ssthresh, then the loss
    /// window of one segment (RFC 5681 §3.1: "LW ... 1 full-sized segment").
    pub(crate) fn on_timeout(&mut self, flight: u64) {
        self.on_congestion(flight);
        self.cwnd = self.mss;
    }

    /// Leaving fast recovery: the window is ssthresh (RFC 6582 §3.2 step 3,
    /// RFC 6675 §5).
    pub(crate) fn on_recovery_end(&mut self) {
        self.cwnd = self.ssthresh.max(self.mss);
    }
}
