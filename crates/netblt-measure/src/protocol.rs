//! The tiny wire protocol between the measurement clients and `netblt echo`.
//!
//! XUNET had four programs: `dkbenchs` echoed, `trafgens` discarded, and both stopped on an
//! EOT byte. We fold both servers into one and let the first bytes say which service a client
//! wants. Everything is big-endian. Every decoder here checks lengths before it reads, and
//! none of them can panic on any input.
//!
//! **TCP.** The client opens with a 5-byte hello, `"NBM1"` + mode (`'E'` echo, `'S'` sink),
//! and the server answers with the same 5 bytes, so a client that reached some other service
//! finds out at once instead of timing garbage.
//! - Echo: each message is a frame, a `u32` length then that many bytes, at most
//!   [`MAX_TCP_MESSAGE`]. The server reads exactly one whole frame and writes it back, so one
//!   message is one round trip even though TCP is a byte stream. The client ends by closing.
//! - Sink: after the hello the client sends raw bytes and then shuts down its sending half.
//!   At end of stream the server replies with one [`SinkSummary`] (bytes counted, its own
//!   CPU time, receive span) and closes. That reply is how `load` proves the exact byte count
//!   and how `cpu` learns the server's CPU cost.
//!
//! **UDP.** Every datagram starts with a 13-byte header: `"NBM1"`, a kind byte, and a `u64`
//! id. `'E'` (echo) datagrams are sent back unchanged; the id is the client's sequence
//! number, so a late echo of a message already counted lost is recognised and dropped. `'S'`
//! (sink data) is counted per (peer, session id); `'F'` (finish) asks for the session's
//! summary, which the server sends as `'R'` (report) with a [`SinkSummary`] payload. Finish is
//! idempotent, so the client may repeat it when a report is lost.

use std::fmt;

/// Protocol magic and version: "NetBlt Measure, version 1".
pub const MAGIC: [u8; 4] = *b"NBM1";
/// The port `netblt echo` listens on by default, for both TCP and UDP.
pub const DEFAULT_PORT: u16 = 7007;
/// Length of the TCP hello (magic + mode).
pub const HELLO_LEN: usize = 5;
/// Length of a TCP echo frame header (the `u32` length).
pub const FRAME_HEADER_LEN: usize = 4;
/// Largest TCP echo message; bounds the buffer a server allocates for a stranger.
pub const MAX_TCP_MESSAGE: usize = 16 << 20;
/// Length of the UDP header (magic, kind, id).
pub const UDP_HEADER_LEN: usize = 13;
/// Largest UDP payload over IPv4: 65535 - 20 (IP) - 8 (UDP).
pub const MAX_UDP_DATAGRAM: usize = 65_507;
/// Largest message (user payload) we can carry in one UDP datagram.
pub const MAX_UDP_PAYLOAD: usize = MAX_UDP_DATAGRAM - UDP_HEADER_LEN;
/// Length of an encoded [`SinkSummary`].
pub const SUMMARY_LEN: usize = 4 + 5 * 8;

/// A malformed measurement-protocol message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The message does not start with `"NBM1"`: not our protocol, or another version.
    #[error("bad magic (not a netblt measurement peer, or another version)")]
    BadMagic,
    /// The hello names a service we do not have.
    #[error("unknown mode byte {0:#04x}")]
    UnknownMode(u8),
    /// A UDP datagram of a kind we do not have.
    #[error("unknown datagram kind {0:#04x}")]
    UnknownKind(u8),
    /// Fewer bytes than the message needs.
    #[error("truncated message: need {need} bytes, got {got}")]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes present.
        got: usize,
    },
    /// A frame longer than [`MAX_TCP_MESSAGE`].
    #[error("message of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Announced length.
        len: u64,
        /// Limit.
        max: usize,
    },
}

/// The service a TCP client asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Framed echo (dkbenchs).
    Echo,
    /// Discard and count (trafgens).
    Sink,
}

impl Mode {
    fn byte(self) -> u8 {
        match self {
            Mode::Echo => b'E',
            Mode::Sink => b'S',
        }
    }
}

/// Encodes the TCP hello for `mode`.
pub fn encode_hello(mode: Mode) -> [u8; HELLO_LEN] {
    let [a, b, c, d] = MAGIC;
    [a, b, c, d, mode.byte()]
}

/// Decodes a TCP hello.
///
/// # Errors
/// [`ProtocolError::BadMagic`] or [`ProtocolError::UnknownMode`].
pub fn decode_hello(bytes: &[u8; HELLO_LEN]) -> Result<Mode, ProtocolError> {
    let [a, b, c, d, mode] = *bytes;
    if [a, b, c, d] != MAGIC {
        return Err(ProtocolError::BadMagic);
    }
    match mode {
        b'E' => Ok(Mode::Echo),
        b'S' => Ok(Mode::Sink),
        other => Err(ProtocolError::UnknownMode(other)),
    }
}

/// Encodes a TCP echo frame header.
///
/// # Errors
/// [`ProtocolError::TooLarge`] above [`MAX_TCP_MESSAGE`].
pub fn encode_frame_header(len: usize) -> Result<[u8; FRAME_HEADER_LEN], ProtocolError> {
    if len > MAX_TCP_MESSAGE {
        return Err(ProtocolError::TooLarge {
            len: len as u64,
            max: MAX_TCP_MESSAGE,
        });
    }
    // MAX_TCP_MESSAGE < u32::MAX, so the cast is exact.
    Ok((len as u32).to_be_bytes())
}

/// Decodes a TCP echo frame header into the payload length.
///
/// # Errors
/// [`ProtocolError::TooLarge`] above [`MAX_TCP_MESSAGE`].
pub fn decode_frame_header(bytes: [u8; FRAME_HEADER_LEN]) -> Result<usize, ProtocolError> {
    let len = u32::from_be_bytes(bytes);
    match usize::try_from(len) {
        Ok(l) if l <= MAX_TCP_MESSAGE => Ok(l),
        _ => Err(ProtocolError::TooLarge {
            len: u64::from(len),
            max: MAX_TCP_MESSAGE,
        }),
    }
}

/// What the sink counted for one transfer, and what it cost the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkSummary {
    /// Payload bytes received.
    pub bytes: u64,
    /// Reads (TCP) or datagrams (UDP) it took.
    pub units: u64,
    /// Server user CPU time for this transfer, microseconds.
    pub cpu_user_us: u64,
    /// Server system CPU time for this transfer, microseconds.
    pub cpu_sys_us: u64,
    /// Nanoseconds from the first to the last byte received.
    pub span_ns: u64,
}

impl SinkSummary {
    /// Encodes as magic + five big-endian `u64`s.
    pub fn encode(&self) -> [u8; SUMMARY_LEN] {
        let mut out = [0u8; SUMMARY_LEN];
        let (magic, rest) = out.split_at_mut(4);
        magic.copy_from_slice(&MAGIC);
        let fields = [
            self.bytes,
            self.units,
            self.cpu_user_us,
            self.cpu_sys_us,
            self.span_ns,
        ];
        for (chunk, v) in rest.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        out
    }

    /// Decodes a summary.
    ///
    /// # Errors
    /// [`ProtocolError::Truncated`] or [`ProtocolError::BadMagic`].
    pub fn decode(bytes: &[u8]) -> Result<SinkSummary, ProtocolError> {
        let got = bytes.len();
        let (magic, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or(ProtocolError::Truncated {
                need: SUMMARY_LEN,
                got,
            })?;
        if *magic != MAGIC {
            return Err(ProtocolError::BadMagic);
        }
        let mut it = rest.chunks_exact(8).map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_be_bytes(b)
        });
        let mut next = || {
            it.next().ok_or(ProtocolError::Truncated {
                need: SUMMARY_LEN,
                got,
            })
        };
        Ok(SinkSummary {
            bytes: next()?,
            units: next()?,
            cpu_user_us: next()?,
            cpu_sys_us: next()?,
            span_ns: next()?,
        })
    }
}

/// The kind of a UDP datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpKind {
    /// Echo request/reply; id = client sequence number.
    Echo,
    /// Sink data; id = session.
    SinkData,
    /// Sink finish request; id = session.
    Finish,
    /// Sink report (server to client); id = session; payload = [`SinkSummary`].
    Report,
}

impl UdpKind {
    fn byte(self) -> u8 {
        match self {
            UdpKind::Echo => b'E',
            UdpKind::SinkData => b'S',
            UdpKind::Finish => b'F',
            UdpKind::Report => b'R',
        }
    }

    fn from_byte(b: u8) -> Result<Self, ProtocolError> {
        Ok(match b {
            b'E' => UdpKind::Echo,
            b'S' => UdpKind::SinkData,
            b'F' => UdpKind::Finish,
            b'R' => UdpKind::Report,
            other => return Err(ProtocolError::UnknownKind(other)),
        })
    }
}

/// Writes a UDP header into the first [`UDP_HEADER_LEN`] bytes of `buf`.
///
/// # Errors
/// [`ProtocolError::Truncated`] if `buf` is shorter than the header.
pub fn write_udp_header(buf: &mut [u8], kind: UdpKind, id: u64) -> Result<(), ProtocolError> {
    let got = buf.len();
    let head = buf
        .get_mut(..UDP_HEADER_LEN)
        .ok_or(ProtocolError::Truncated {
            need: UDP_HEADER_LEN,
            got,
        })?;
    let (magic, rest) = head.split_at_mut(4);
    magic.copy_from_slice(&MAGIC);
    let (k, id_bytes) = rest.split_at_mut(1);
    k.copy_from_slice(&[kind.byte()]);
    id_bytes.copy_from_slice(&id.to_be_bytes());
    Ok(())
}

/// Splits a UDP datagram into its kind, id and payload.
///
/// # Errors
/// [`ProtocolError::Truncated`], [`ProtocolError::BadMagic`] or [`ProtocolError::UnknownKind`].
pub fn parse_udp(datagram: &[u8]) -> Result<(UdpKind, u64, &[u8]), ProtocolError> {
    let truncated = ProtocolError::Truncated {
        need: UDP_HEADER_LEN,
        got: datagram.len(),
    };
    let (magic, rest) = datagram.split_first_chunk::<4>().ok_or(truncated.clone())?;
    let (kind, rest) = rest.split_first().ok_or(truncated.clone())?;
    let (id, payload) = rest.split_first_chunk::<8>().ok_or(truncated)?;
    if *magic != MAGIC {
        return Err(ProtocolError::BadMagic);
    }
    Ok((UdpKind::from_byte(*kind)?, u64::from_be_bytes(*id), payload))
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Echo => "echo",
            Mode::Sink => "sink",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip_and_rejects() {
        for m in [Mode::Echo, Mode::Sink] {
            assert_eq!(decode_hello(&encode_hello(m)), Ok(m));
        }
        assert_eq!(decode_hello(b"NBM2E"), Err(ProtocolError::BadMagic));
        assert_eq!(
            decode_hello(b"NBM1X"),
            Err(ProtocolError::UnknownMode(b'X'))
        );
    }

    #[test]
    fn frame_headers_are_bounded() {
        assert_eq!(encode_frame_header(1025).unwrap(), [0, 0, 4, 1]);
        assert_eq!(decode_frame_header([0, 0, 4, 1]), Ok(1025));
        assert!(decode_frame_header([0xff; 4]).is_err());
        assert!(encode_frame_header(MAX_TCP_MESSAGE + 1).is_err());
        assert_eq!(
            decode_frame_header(encode_frame_header(MAX_TCP_MESSAGE).unwrap()),
            Ok(MAX_TCP_MESSAGE)
        );
    }

    #[test]
    fn summary_round_trip_and_truncation() {
        let s = SinkSummary {
            bytes: 1 << 20,
            units: 1024,
            cpu_user_us: 12,
            cpu_sys_us: 3456,
            span_ns: u64::MAX,
        };
        let enc = s.encode();
        assert_eq!(&enc[..4], b"NBM1");
        assert_eq!(&enc[4..12], &(1u64 << 20).to_be_bytes());
        assert_eq!(SinkSummary::decode(&enc), Ok(s));
        for cut in 0..SUMMARY_LEN {
            assert!(SinkSummary::decode(&enc[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = enc;
        bad[0] = b'X';
        assert_eq!(SinkSummary::decode(&bad), Err(ProtocolError::BadMagic));
    }

    #[test]
    fn udp_header_round_trip_and_garbage() {
        let mut buf = [0u8; UDP_HEADER_LEN + 3];
        write_udp_header(&mut buf, UdpKind::Finish, 0x0102_0304_0506_0708).unwrap();
        buf[UDP_HEADER_LEN..].copy_from_slice(b"abc");
        assert_eq!(
            parse_udp(&buf),
            Ok((UdpKind::Finish, 0x0102_0304_0506_0708, &b"abc"[..]))
        );
        assert!(write_udp_header(&mut [0u8; 12], UdpKind::Echo, 1).is_err());
        for cut in 0..UDP_HEADER_LEN {
            assert!(parse_udp(&buf[..cut]).is_err());
        }
        buf[4] = b'?';
        assert_eq!(parse_udp(&buf), Err(ProtocolError::UnknownKind(b'?')));
        // Arbitrary bytes never panic.
        for seed in 0u32..2000 {
            let len = (seed % 40) as usize;
            let junk: Vec<u8> = (0..len)
                .map(|i| (seed as usize * 31 + i * 7) as u8)
                .collect();
            let _ = parse_udp(&junk);
            let _ = SinkSummary::decode(&junk);
        }
    }
}
