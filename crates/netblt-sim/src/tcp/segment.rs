//! [`Segment`]: what the TCP model puts on the wire.

/// SACK blocks a segment can carry (4 without timestamps, 3 with: RFC 2018
/// §3, 40 bytes of options).
pub const MAX_SACK_BLOCKS: usize = 4;

/// IPv4 (20) + TCP (20) header bytes.
pub(crate) const HEADER: usize = 40;
/// The timestamps option padded to 12 bytes (RFC 7323 Appendix A).
pub(crate) const TS_OPTION: usize = 12;

/// RFC 1106 §2.1's NAK option: "the first sequence number not received
/// and a count of how many segments of bytes needed to be resent, where
/// segments is the size of the current TCP MSS".
///
/// ```text
/// +========+=========+=========================+================+
/// +option= + length= + sequence number of      + number of      +
/// +   A    +    7    + first byte being naked  + segments naked +
/// +========+=========+=========================+================+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nak {
    /// First byte not received.
    pub seq: u64,
    /// Segments (of the MSS) to resend; one byte on the wire.
    pub segments: u8,
}

/// Option bytes a NAK takes: 7, padded to 8 with a NOP.
pub(crate) const NAK_OPTION: usize = 8;
/// RFC 1106 §3.1's option C on every segment: kind, length, 15 bits.
pub(crate) const BIG_WINDOW_OPTION: usize = 4;

/// RFC 1106 §3.1: "the lower 16 bits of the receive window go into the tcp
/// header where it currently resides \[6\] and the upper 15 bits of the
/// window is put into the data portion of the option C. When the receiver
/// processes the packet it must first reform the window".
pub mod big_window {
    /// The largest window: §3, "30 bits or over 1 gigabytes".
    pub const MAX: u64 = (1 << 30) - 1;

    /// The header's 16-bit window field and option C's 15 bits.
    pub fn split(window: u64) -> (u16, u16) {
        let w = window.min(MAX);
        ((w & 0xffff) as u16, ((w >> 16) & 0x7fff) as u16)
    }

    /// The window reformed from the header field and option C.
    pub fn join(field: u16, upper: u16) -> u64 {
        u64::from(field) | (u64::from(upper & 0x7fff) << 16)
    }
}

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
    /// Advertised receive window in bytes; with RFC 1106's Big Window only
    /// the 16-bit header field (the upper bits are in `wnd_upper`).
    pub wnd: u64,
    /// RFC 1106 option C: the upper 15 bits of the window.
    pub wnd_upper: Option<u16>,
    /// RFC 1106 NAK option (ACKs only).
    pub nak: Option<Nak>,
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
            wnd_upper: None,
            nak: None,
            ts_val: 0,
            ts_ecr: 0,
            retransmission: false,
        }
    }

    /// The SACK blocks in use.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..usize::from(self.sack_len).min(MAX_SACK_BLOCKS)]
    }

    /// The window the segment advertises, reformed from option C when it
    /// carries one.
    pub fn window(&self) -> u64 {
        match self.wnd_upper {
            Some(upper) => big_window::join(self.wnd as u16, upper),
            None => self.wnd,
        }
    }

    /// Bytes on the wire: IPv4 + TCP headers, options, payload.
    pub fn wire_len(&self, timestamps: bool) -> usize {
        let mut options = if timestamps { TS_OPTION } else { 0 };
        if self.wnd_upper.is_some() {
            options += BIG_WINDOW_OPTION;
        }
        if self.nak.is_some() {
            options += NAK_OPTION;
        }
        if self.sack_len > 0 {
            // Kind, length, 8 bytes per block, padded to 4 with two NOPs.
            options += 4 + 8 * usize::from(self.sack_len);
        }
        if matches!(self.kind, SegKind::Syn | SegKind::SynAck) {
            // MSS, window scale and SACK-permitted (RFC 793, 7323, 2018);
            // the same 12 bytes for MSS and RFC 1106's option B (6, padded).
            options += 12;
        }
        HEADER + options + self.len as usize
    }
}
