//! Counters kept by a connection, named after RFC 1030's tables.

use crate::time::{Duration, Instant};

/// What one connection did. Field names follow RFC 1030's appendix columns
/// where one exists (#LOSS, #RXM, DTMOS).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Data sender: DATA/LDATA packets sent for the first time.
    pub data_packets_sent: u64,
    /// Data sender: DATA/LDATA packets sent again after a RESEND (#RXM).
    pub data_packets_retransmitted: u64,
    /// Data receiver: distinct DATA/LDATA packets found missing when a data
    /// timer expired, i.e. requested in a RESEND for the first time (#LOSS as
    /// the protocol sees it; the simulator also counts true link drops).
    pub data_packets_lost: u64,
    /// Data receiver: data timers that expired (DTMOS).
    pub data_timeouts: u64,
    /// Data receiver: DATA/LDATA packets accepted into a buffer.
    pub data_packets_received: u64,
    /// Data receiver: DATA/LDATA packets that were duplicates or for buffers
    /// already complete.
    pub duplicate_data: u64,
    /// CONTROL packets sent (first transmissions and retransmissions).
    pub control_packets_sent: u64,
    /// CONTROL packets sent because the control timer expired.
    pub control_retransmissions: u64,
    /// Control messages placed in the FIFO (GO, OK, RESEND).
    pub control_messages: u64,
    /// Data sender: control messages dropped as duplicates.
    pub duplicate_control_messages: u64,
    /// NULL-ACK packets sent.
    pub null_acks_sent: u64,
    /// KEEPALIVE packets sent.
    pub keepalives_sent: u64,
    /// Data receiver: FEEDBACK packets sent (rate-feedback extension).
    pub feedback_sent: u64,
    /// Data sender with rate control: packets a RESEND asked for that were
    /// sent less than a base round trip earlier (still in flight), not sent
    /// again.
    pub premature_resends: u64,
    /// Datagrams sent of any kind, and their bytes.
    pub datagrams_sent: u64,
    /// Bytes of the datagrams sent.
    pub bytes_sent: u64,
    /// Datagrams received of any kind, and their bytes.
    pub datagrams_received: u64,
    /// Bytes of the datagrams received.
    pub bytes_received: u64,
    /// Datagrams dropped because they failed to parse or checksum.
    pub malformed: u64,
    /// Datagrams that parsed but made no sense in the current state.
    pub unexpected: u64,
    /// Data bytes handed to the application (receiver) or acknowledged by OK
    /// (sender).
    pub bytes_transferred: u64,
    /// Buffers completed (received and OK'd).
    pub buffers: u64,
    /// Data receiver: buffers that got new storage because none had been
    /// recycled (each an allocation of the buffer size; see
    /// [`Connection::recycle`](crate::Connection::recycle)).
    pub storage_allocations: u64,
    /// Data sender: resent packets sent twice because two copies of them
    /// were lost already (decision R12; with rate control only).
    pub resends_doubled: u64,
    /// Data sender: the most buffers held at once (handed over and not yet
    /// OK'd); see [`Config::min_buffers`](crate::Config::min_buffers).
    pub peak_buffers: u64,
    /// Smoothed round trip, once measured: the control messages' at the
    /// data receiver, the data packets' (FEEDBACK echoes, with rate
    /// control) at the data sender.
    pub srtt: Option<Duration>,
    /// When the connection was created (active: OPEN; passive: OPEN received).
    pub started_at: Option<Instant>,
    /// Data sender: first DATA packet sent.
    pub first_data_at: Option<Instant>,
    /// Data sender: the last packet of the final buffer was sent for the first
    /// time (the end of RFC 1030's steady state).
    pub last_new_data_at: Option<Instant>,
    /// Data sender: the final OK arrived. Data receiver: the final buffer was
    /// complete and its OK acknowledged.
    pub completed_at: Option<Instant>,
    /// Bytes of new data sent up to `last_new_data_at` (the whole transfer).
    pub steady_bytes: u64,
}

impl Stats {
    /// RFC 1030 §3 steady-state throughput in bits per second: the transfer's
    /// bits over the time from the first DATA packet to the first transmission
    /// of the last packet of the final buffer. It leaves out connection setup
    /// and the "late" recovery after the last buffer was first sent.
    pub fn steady_throughput_bps(&self) -> Option<f64> {
        let (a, b) = (self.first_data_at?, self.last_new_data_at?);
        let secs = b.saturating_duration_since(a).as_secs_f64();
        (secs > 0.0).then(|| self.steady_bytes as f64 * 8.0 / secs)
    }

    /// RFC 1030 §3 real throughput in bits per second: bits over the time from
    /// the start of the connection to completion.
    pub fn real_throughput_bps(&self) -> Option<f64> {
        let (a, b) = (self.started_at?, self.completed_at?);
        let secs = b.saturating_duration_since(a).as_secs_f64();
        (secs > 0.0).then(|| self.bytes_transferred as f64 * 8.0 / secs)
    }
}
