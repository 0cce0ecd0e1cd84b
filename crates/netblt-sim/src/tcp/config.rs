//! [`TcpConfig`]: the variant knobs of the TCP model.

use netblt_proto::Duration;
use serde::{Deserialize, Serialize};

/// How losses are detected and repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// NewReno fast retransmit and fast recovery (RFC 6582) on three
    /// duplicate ACKs, without SACK. Each duplicate ACK is counted as one
    /// segment that has left the network, as Linux does for Reno: the
    /// RFC's window inflation expressed in the pipe estimate.
    NewReno,
    /// SACK-based loss recovery (RFC 6675): scoreboard, `IsLost`, `NextSeg`
    /// and the `pipe` estimate. The receiver sends SACK blocks (RFC 2018).
    #[default]
    Sack,
    /// 4.3BSD-Tahoe (1988), as RFC 1106 §4.3 describes it: on the third
    /// duplicate ACK "resend the one packet assumed lost, and close its send
    /// window as if the network is congested" (cwnd = one segment, slow
    /// start); no fast recovery, later duplicate ACKs are ignored. With
    /// [`TcpConfig::nak`] the duplicate-ACK rule is off (§4.3: "This facility
    /// is no longer needed").
    Tahoe,
}

/// The window-growth rule in congestion avoidance, and the reduction on loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CongestionControl {
    /// RFC 5681: one MSS per round trip, halve on loss.
    #[default]
    Reno,
    /// RFC 9438 CUBIC (C = 0.4, beta = 0.7, fast convergence, the
    /// Reno-friendly region), without HyStart.
    Cubic,
    /// Jacobson's 1988 algorithm as 4.3BSD-Tahoe runs it: per ACK, one
    /// segment in slow start and `mss*mss/cwnd` in congestion avoidance
    /// (counting ACKs, not bytes: with delayed ACKs slow start grows 1.5x per
    /// round trip); on any loss ssthresh = half the window, cwnd = 1 segment.
    Jacobson88,
}

/// How the receive window is carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowOption {
    /// RFC 7323 window scaling (negotiated on the SYN; no per-segment cost
    /// in the model).
    #[default]
    Scale,
    /// RFC 793's 16-bit field alone: at most 65,535 bytes.
    Bits16,
    /// RFC 1106 §3 Big Window: option B (6 bytes) on the SYN and SYN-ACK,
    /// then option C (4 bytes) with "the upper 15 bits of rcv_wnd" on every
    /// segment; the window is 30 bits.
    Rfc1106BigWindow,
}

/// How round-trip samples are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RttTiming {
    /// From every ACK of new data (timestamps or Karn's rule).
    #[default]
    EveryAck,
    /// 4.3BSD: one segment timed at a time (`t_rtseq`), the timing dropped
    /// when anything is retransmitted.
    OneSegment,
}

/// Delayed acknowledgements (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayedAck {
    /// Longest an ACK is held (RFC 1122: under 0.5 s; Linux: 40 ms).
    pub timeout: Duration,
    /// Full-sized segments per ACK (RFC 5681: at least every second one).
    pub every: u32,
    /// 4.3BSD's fast timeout: a held ACK goes out on the next tick of a
    /// clock of period `timeout` (`tcp_fasttimo`, every 200 ms), not
    /// `timeout` after the segment.
    #[serde(default)]
    pub on_tick: bool,
}

impl Default for DelayedAck {
    fn default() -> Self {
        DelayedAck {
            timeout: Duration::from_millis(40),
            every: 2,
            on_tick: false,
        }
    }
}

/// The retransmission timer (RFC 6298).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtoConfig {
    /// Clock granularity G: round-trip samples are counted in ticks of G and
    /// the timer fires on a tick (RFC 6298 §4: `RTO = SRTT + max(G, K*RTTVAR)`).
    /// Zero means a perfect clock.
    pub granularity: Duration,
    /// Lower bound (RFC 6298 (2.4): 1 s; Linux uses 200 ms).
    pub min: Duration,
    /// Upper bound (RFC 6298 (2.5): at least 60 s).
    pub max: Duration,
    /// Before any sample (RFC 6298 (2.1): 1 s).
    pub initial: Duration,
    /// K in `RTO = SRTT + max(G, K*RTTVAR)`: 4 (RFC 6298); 2 in 4.3BSD-Tahoe
    /// (Jacobson 1988, appendix A: "rto = a + 2v").
    pub k: u32,
    /// 4.3BSD's timer: a count of ticks decremented on every tick of the
    /// clock, so it fires (n-1) to n ticks after it is set, not after n
    /// whole ticks.
    pub countdown: bool,
}

impl Default for RtoConfig {
    /// Linux's values: 1 ms clock, 200 ms floor, 120 s ceiling, 1 s initial.
    fn default() -> Self {
        RtoConfig {
            granularity: Duration::from_millis(1),
            min: Duration::from_millis(200),
            max: Duration::from_secs(120),
            initial: Duration::from_secs(1),
            k: 4,
            countdown: false,
        }
    }
}

/// Everything that makes one TCP variant differ from another.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Maximum segment size (payload bytes).
    pub mss: u32,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Congestion avoidance.
    pub cc: CongestionControl,
    /// RFC 7323 timestamps on every segment (12 bytes; RTT from the echo).
    pub timestamps: bool,
    /// Receiver's delayed ACKs; `None` acknowledges every segment.
    pub delayed_ack: Option<DelayedAck>,
    /// Receive window the receiver advertises, in bytes (the application
    /// reads at once, so it never shrinks).
    pub rcv_wnd: u64,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// Retransmission timer.
    pub rto: RtoConfig,
    /// Duplicate-ACK threshold (RFC 5681, RFC 6675: 3).
    pub dup_thresh: u32,
    /// How the receive window is carried (and so its largest value).
    pub window: WindowOption,
    /// How round-trip times are sampled.
    pub rtt_timing: RttTiming,
    /// RFC 1106 §2 NAK option: the receiver NAKs the data missing at the
    /// left edge of its window, the sender resends it at once without
    /// touching its window, and duplicate ACKs trigger nothing (§4.3).
    pub nak: bool,
}

impl Default for TcpConfig {
    /// A modern Linux-like TCP: MSS 1448 with timestamps (1500-byte packets),
    /// SACK, Reno growth, delayed ACKs every second segment or 40 ms, a
    /// 16 MiB window, IW10, RTO floor 200 ms.
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            recovery: Recovery::Sack,
            cc: CongestionControl::Reno,
            timestamps: true,
            delayed_ack: Some(DelayedAck::default()),
            rcv_wnd: 16 << 20,
            initial_window: 10,
            rto: RtoConfig::default(),
            dup_thresh: 3,
            window: WindowOption::Scale,
            rtt_timing: RttTiming::EveryAck,
            nak: false,
        }
    }
}

impl TcpConfig {
    /// NewReno without SACK (RFC 6582), otherwise the defaults.
    pub fn newreno() -> Self {
        TcpConfig {
            recovery: Recovery::NewReno,
            ..TcpConfig::default()
        }
    }

    /// CUBIC with SACK, as Linux runs by default.
    pub fn cubic() -> Self {
        TcpConfig {
            cc: CongestionControl::Cubic,
            ..TcpConfig::default()
        }
    }

    /// 4.3BSD-Tahoe as of 1988-89, the TCP RFC 1106 measured ("the new TCP
    /// enhancements" of Jacobson 1988), with RFC 1106's Big Window option
    /// and a receive window of `window` bytes; `nak` adds the NAK option.
    ///
    /// - MSS 512: 4.3BSD's `tcp_mss()` offers 512 bytes to destinations not
    ///   on a local network (RFC 1106 gives no MSS).
    /// - Slow start from one segment, congestion avoidance and the loss
    ///   reaction of Jacobson 1988 ([`CongestionControl::Jacobson88`]),
    ///   fast retransmit without fast recovery ([`Recovery::Tahoe`]).
    /// - Timers on 4.3BSD's clocks: `tcp_slowtimo` every 500 ms (RTT samples
    ///   in whole ticks, one timed segment at a time, RTO = srtt + 2 rttvar
    ///   counted down in ticks, at least 2 ticks = 1 s (`TCPTV_MIN`), at most
    ///   64 s (`TCPTV_REXMTMAX`), 3 s before the first sample
    ///   (`TCPTV_SRTTDFLT`)).
    /// - An ACK for every segment. 4.3BSD's own window-update rule
    ///   (`adv >= 2 * t_maxseg`) acknowledges every second segment, but RFC
    ///   1106 describes its TCP's slow start as opening the window "1 for
    ///   each acked packet" in "R*log2(W)" (§4.2): a doubling per round trip,
    ///   which only an ACK per segment gives (with one ACK per two segments
    ///   the window grows 1.5x per round trip, R*log1.5(W)). The Irises ran
    ///   SGI's 3.6 OS, not 4.3BSD itself.
    /// - No timestamps (RFC 1323 came in 1992).
    pub fn bsd43_rfc1106(window: u64, nak: bool) -> Self {
        TcpConfig {
            mss: 512,
            recovery: Recovery::Tahoe,
            cc: CongestionControl::Jacobson88,
            timestamps: false,
            //# RFC 1106 §4.2: "the window to be opened 2*Rlog2(W) instead of
            //# R*log2(W) [1] (open window by 2 packets instead of 1 for each
            //# acked packet)".
            delayed_ack: None,
            rcv_wnd: window,
            initial_window: 1,
            rto: RtoConfig {
                granularity: Duration::from_millis(500),
                min: Duration::from_secs(1),
                max: Duration::from_secs(64),
                initial: Duration::from_secs(3),
                k: 2,
                countdown: true,
            },
            dup_thresh: 3,
            window: WindowOption::Rfc1106BigWindow,
            rtt_timing: RttTiming::OneSegment,
            nak,
        }
    }

    /// The largest window the receiver can advertise.
    pub fn max_window(&self) -> u64 {
        match self.window {
            WindowOption::Bits16 => 65_535,
            //# RFC 1106 §3: "This option to expands the window size to 30
            //# bits or over 1 gigabytes".
            WindowOption::Rfc1106BigWindow => (1 << 30) - 1,
            // RFC 7323 allows shifts up to 14; the model does not quantise
            // the scaled window and leaves it unbounded.
            WindowOption::Scale => u64::MAX,
        }
    }

    /// Checks the values the model needs to run.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.mss == 0 || self.mss > 65_000 {
            return Err("mss must be between 1 and 65000 bytes");
        }
        if self.rcv_wnd < u64::from(self.mss) {
            return Err("rcv_wnd must hold at least one segment");
        }
        if self.initial_window == 0 {
            return Err("initial_window must be at least 1 segment");
        }
        if self.rto.k == 0 || self.rto.k > 16 {
            return Err("rto.k must be between 1 and 16");
        }
        if self.dup_thresh == 0 {
            return Err("dup_thresh must be at least 1");
        }
        if self.rto.min > self.rto.max || self.rto.max.is_zero() {
            return Err("rto.min must not exceed rto.max, which must be positive");
        }
        if self.rto.max > Duration::from_secs(86_400) || self.rto.initial > self.rto.max {
            return Err("rto.initial must not exceed rto.max (at most one day)");
        }
        if let Some(d) = self.delayed_ack {
            if d.every == 0 || d.timeout > Duration::from_secs(10) {
                return Err("delayed_ack.every must be >= 1 and timeout <= 10 s");
            }
        }
        Ok(())
    }
}
