//! [`Segment`]: what the TCP model puts on the wire.

/// SACK blocks a segment can carry (4 without timestamps, 3 with: RFC 2018
/// §3, 40 bytes of options).
pub const MAX_SACK_BLOCKS: usize = 4;

/// IPv4 (20) + TCP (20) header bytes.
pub(crate) const HEADER: usize = 40;
/// The timestamps option padded to 12 bytes (RFC 7323 Appendix A).
pub(crate) const TS_OPTION: usize = 12;

/// Which segment this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    /// The sender's SYN (opens the connection).
    Syn,
    /// The receiver's SYN-ACK.
    SynAck,
    /// Data from the sender (may also acknowledge nothing).
    Data,
    /// A pure acknowledgement from the receiver.
    Ack,
}

/// One TCP segment, without payload bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Kind.
    pub kind: SegKind,
    /// First data byte (Data).
    pub seq: u64,
    /// Payload bytes (Data).
    pub len: u32,
    /// Cumulative acknowledgement: next byte expected (Ack, SynAck).
    pub ack: u64,
    /// SACK blocks `[start, end)`, most recent first (RFC 2018).
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// Blocks used in `sack`.
    pub sack_len: u8,
    /// Advertised receive window in bytes.
    pub wnd: u64,
    /// RFC 7323 TSval (ns of the sender's clock), when timestamps are on.
    pub ts_val: u64,
    /// RFC 7323 TSecr, when timestamps are on.
    pub ts_ecr: u64,
    /// Whether this is a retransmission (for statistics only; a real TCP
    /// cannot tell, and the model's logic never reads it).
    pub retransmission: bool,
}

impl Segment {
    pub(crate) fn new(kind: SegKind) -> Self {
        Segment {
            kind,
            seq: 0,
            len: 0,
            ack: 0,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            sack_len: 0,
            wnd: 0,
            ts_val: 0,
            ts_ecr: 0,
            retransmission: false,
        }
    }

    /// The SACK blocks in use.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..usize::from(self.sack_len).min(MAX_SACK_BLOCKS)]
    }

    /// Bytes on the wire: IPv4 + TCP headers, options, payload.
    pub fn wire_len(&self, timestamps: bool) -> usize {
        let mut options = if timestamps { TS_OPTION } else { 0 };
        if self.sack_len > 0 {
            // Kind, length, 8 bytes per block, padded to 4 with two NOPs.
            options += 4 + 8 * usize::from(self.sack_len);
        }
        if matches!(self.kind, SegKind::Syn | SegKind::SynAck) {
            // MSS, window scale and SACK-permitted (RFC 793, 7323, 2018).
            options += 12;
        }
        HEADER + options + self.len as usize
    }
}
