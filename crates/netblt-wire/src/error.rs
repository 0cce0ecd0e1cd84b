//! The one error type of this crate.
//!
//! Every fallible function in `netblt-wire` returns [`Error`]. The variants say *why* a packet was
//! rejected so that the engine can count drops by cause; the engine should drop the packet either
//! way (RFC 998 gives no error reporting for malformed packets, notes §Z21).

/// Why a packet could not be parsed or emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the 12-byte common header, or shorter than its Length field.
    #[error("packet truncated: shorter than its header or its Length field")]
    Truncated,
    /// The Length field is below the minimum for the packet type, not allowed for the type, or
    /// the buffer is not exactly Length rounded up to a multiple of 4; or a packet to emit would be
    /// longer than 65535 bytes.
    #[error("bad packet length")]
    BadLength,
    /// The header checksum does not match the packet contents.
    #[error("checksum mismatch")]
    BadChecksum,
    /// The Version byte is not [`VERSION`](crate::VERSION).
    #[error("unsupported NETBLT version {0}")]
    BadVersion(u8),
    /// The Type byte is not one of the 12 RFC 998 packet types.
    #[error("unknown NETBLT packet type {0}")]
    UnknownType(u8),
    /// A string field has no terminating NUL (parse), or contains a NUL (emit).
    #[error("bad string field: missing NUL terminator or embedded NUL")]
    BadString,
    /// The CONTROL message area is malformed: unknown message type, a message running past the
    /// end, or a RESEND whose count does not fit (or, on emit, exceeds 65535 packets).
    #[error("malformed CONTROL message area")]
    BadControl,
    /// The output buffer is too small for what was asked to be written.
    #[error("output buffer too small")]
    BufferTooSmall,
}
