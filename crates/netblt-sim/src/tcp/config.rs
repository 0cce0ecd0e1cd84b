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
}

/// Delayed acknowledgements (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayedAck {
    /// Longest an ACK is held (RFC 1122: under 0.5 s; Linux: 40 ms).
    pub timeout: Duration,
    /// Full-sized segments per ACK (RFC 5681: at least every second one).
    pub every: u32,
}

impl Default for DelayedAck {
    fn default() -> Self {
        DelayedAck {
            timeout: Duration::from_millis(40),
            every: 2,
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
}

impl Default for RtoConfig {
    /// Linux's values: 1 ms clock, 200 ms floor, 120 s ceiling, 1 s initial.
    fn default() -> Self {
        RtoConfig {
            granularity: Duration::from_millis(1),
            min: Duration::from_millis(200),
            max: Duration::from_secs(120),
            initial: Duration::from_secs(1),
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
