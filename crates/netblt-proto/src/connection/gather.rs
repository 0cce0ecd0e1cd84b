//! Zero-copy transmission: DATA packets handed out as a header plus the
//! place of their payload, for drivers that let the kernel gather the parts
//! (`sendmsg` with several `iovec`s) instead of copying every payload into a
//! datagram first. See [`Connection::poll_transmit_gather`](super::Connection::poll_transmit_gather).

/// Where a DATA/LDATA packet's payload lies: a range of one of the data
/// sender's buffers, valid until that buffer's OK arrives. Resolve it with
/// [`Connection::payload`](super::Connection::payload) (or
/// [`Endpoint::payload`](crate::Endpoint::payload)) when sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    /// The connection's slot in an `Endpoint` (0 for a lone connection).
    pub(crate) conn: usize,
    pub(crate) buffer: u32,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl Payload {
    /// Bytes of payload.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty payload (an empty last buffer's LDATA).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One datagram from `poll_transmit_gather`: `head` bytes written into the
/// caller's buffer, then (DATA/LDATA only) the `payload` from the
/// connection's buffer, then `pad` zero bytes (RFC 998 pads packets to a
/// multiple of four bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gathered {
    /// Bytes written at the start of the caller's buffer (the whole datagram,
    /// or a DATA packet's header).
    pub head: usize,
    /// Where the DATA payload lies, for a gathered DATA/LDATA packet.
    pub payload: Option<Payload>,
    /// Zero bytes to send after the payload.
    pub pad: usize,
}

impl Gathered {
    /// A datagram written whole into the caller's buffer.
    pub fn whole(len: usize) -> Gathered {
        Gathered {
            head: len,
            payload: None,
            pad: 0,
        }
    }

    /// The datagram's length on the wire.
    pub fn len(&self) -> usize {
        self.head + self.payload.map_or(0, |p| p.len) + self.pad
    }

    /// Never true: every datagram has a header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
