//! A deterministic, packet-level TCP model: one sender, one receiver, bulk
//! data, for competing traffic in the dumbbell (and, later, for RFC 1106's
//! 1988-89 TCP; see issue 13).
//!
//! It is one model with variants, not several TCPs: [`TcpConfig`] chooses
//! the loss recovery ([`Recovery`]: NewReno per RFC 6582, or SACK-based per
//! RFC 6675), the congestion-avoidance rule ([`CongestionControl`]: Reno per
//! RFC 5681 or CUBIC per RFC 9438), the retransmission timer's granularity
//! and bounds (RFC 6298, [`RtoConfig`]), delayed ACKs, timestamps, the MSS
//! and the receive window. A 4.3BSD variant adds values to these enums
//! (Tahoe-style recovery, a 500 ms timer tick, one timed segment per round
//! trip, RFC 1106's NAK and Big Window options), not a second code path.
//!
//! Like netblt-proto's engine it is sans-IO: segments are plain structs
//! ([`Segment`]), time comes in as `now`, nothing is random. The payload is
//! never materialised: a segment carries its sequence range and length.
//!
//! Sequence numbers are 64-bit byte offsets from 0 (no wrap-around: a model
//! need not reproduce RFC 793's modular arithmetic). The SYN and SYN-ACK do
//! not consume sequence space.

mod cc;
mod config;
mod receiver;
mod rtt;
mod scoreboard;
mod segment;
mod sender;

pub use config::{
    CongestionControl, DelayedAck, Recovery, RtoConfig, RttTiming, TcpConfig, WindowOption,
};
pub use receiver::{TcpReceiver, TcpReceiverStats};
pub use segment::{big_window, Nak, SegKind, Segment, MAX_SACK_BLOCKS};
pub use sender::{TcpSender, TcpSenderStats};
