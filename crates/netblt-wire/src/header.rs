//! The 12-byte common header shared by all 12 NETBLT packet types, and [`PacketType`].
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-------------------------------+---------------+---------------+
//! |           Checksum            |    Version    |     Type      |
//! +-------------------------------+---------------+---------------+
//! |           Length              |           Local Port          |
//! +-------------------------------+-------------------------------+
//! |        Foreign Port           | Longword Alignment Padding    |
//! +-------------------------------+-------------------------------+
//! ```
//!
//! [`Header`] is a smoltcp-style checked view. Never-panic contract: [`Header::new_checked`]
//! fails unless the buffer holds the whole 12-byte header, and after that no accessor or setter
//! can panic (they would not panic even without the check; see the `field` module).

use core::fmt;

use crate::field::{self, Field};
use crate::{Error, HEADER_LEN, VERSION};

/// Byte ranges of the common header (RFC 998 §8).
pub(crate) mod fields {
    use super::Field;
    pub(crate) const CHECKSUM: Field = 0..2;
    pub(crate) const VERSION: usize = 2;
    pub(crate) const TYPE: usize = 3;
    pub(crate) const LENGTH: Field = 4..6;
    pub(crate) const LOCAL_PORT: Field = 6..8;
    pub(crate) const FOREIGN_PORT: Field = 8..10;
    pub(crate) const PADDING: Field = 10..12;
}

/// The NETBLT packet types (RFC 998 §8, the 8-bit Type field).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Connection request, active end to passive end.
    Open = 0,
    /// Acceptance of an OPEN, passive end to active end.
    Response = 1,
    /// Keeps the peer's death timer from expiring.
    Keepalive = 2,
    /// Client-level close request.
    Quit = 3,
    /// Acknowledges a QUIT.
    QuitAck = 4,
    /// NETBLT-level abort.
    Abort = 5,
    /// A data packet.
    Data = 6,
    /// The last data packet of a buffer.
    LData = 7,
    /// Carries the high-acknowledged sequence number and burst values when no data flows.
    NullAck = 8,
    /// Carries GO, OK and RESEND messages from data receiver to data sender.
    Control = 9,
    /// Refusal of an OPEN.
    Refused = 10,
    /// Data receiver's "transfer complete" (sent only by the data receiver).
    Done = 11,
    /// Not in RFC 998: the data receiver's delivery report for rate control,
    /// sent only when both ends set the F flag in OPEN/RESPONSE (see
    /// `feedback.rs`).
    Feedback = 12,
}

impl PacketType {
    /// All 13 types (RFC 998's twelve and FEEDBACK), in numeric order.
    pub const ALL: [PacketType; 13] = [
        PacketType::Open,
        PacketType::Response,
        PacketType::Keepalive,
        PacketType::Quit,
        PacketType::QuitAck,
        PacketType::Abort,
        PacketType::Data,
        PacketType::LData,
        PacketType::NullAck,
        PacketType::Control,
        PacketType::Refused,
        PacketType::Done,
        PacketType::Feedback,
    ];

    /// The RFC 998 name, as used in the RFC text ("OPEN", "NULL-ACK", ...).
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Open => "OPEN",
            PacketType::Response => "RESPONSE",
            PacketType::Keepalive => "KEEPALIVE",
            PacketType::Quit => "QUIT",
            PacketType::QuitAck => "QUITACK",
            PacketType::Abort => "ABORT",
            PacketType::Data => "DATA",
            PacketType::LData => "LDATA",
            PacketType::NullAck => "NULL-ACK",
            PacketType::Control => "CONTROL",
            PacketType::Refused => "REFUSED",
            PacketType::Done => "DONE",
            PacketType::Feedback => "FEEDBACK",
        }
    }

    /// The smallest Length field this type may carry.
    pub(crate) fn min_len(self) -> usize {
        match self {
            PacketType::Keepalive | PacketType::QuitAck | PacketType::Done => HEADER_LEN,
            PacketType::Control => HEADER_LEN,
            // An empty string still takes a NUL and three pad bytes.
            PacketType::Quit | PacketType::Abort | PacketType::Refused => HEADER_LEN + 4,
            PacketType::Open | PacketType::Response => crate::OPEN_FIXED_LEN + 4,
            PacketType::Data | PacketType::LData => crate::DATA_HEADER_LEN,
            PacketType::NullAck => crate::NULL_ACK_LEN,
            PacketType::Feedback => crate::FEEDBACK_LEN,
        }
    }

    /// Whether `len` is an acceptable Length field for this type.
    ///
    /// Fixed-size packets must have exactly their size. Packets made of strings or control
    /// messages are multiples of 4 by construction, so any other Length is malformed. Only
    /// DATA/LDATA may have a Length that is not a multiple of 4 (their data segment can be any
    /// size; RFC 1030 used 1990-byte segments), and the datagram is then padded.
    pub(crate) fn length_ok(self, len: usize) -> bool {
        match self {
            PacketType::Keepalive | PacketType::QuitAck | PacketType::Done => len == HEADER_LEN,
            PacketType::NullAck => len == crate::NULL_ACK_LEN,
            PacketType::Feedback => len == crate::FEEDBACK_LEN,
            PacketType::Data | PacketType::LData => len >= self.min_len(),
            PacketType::Open
            | PacketType::Response
            | PacketType::Quit
            | PacketType::Abort
            | PacketType::Refused
            | PacketType::Control => len >= self.min_len() && len % 4 == 0,
        }
    }
}

impl TryFrom<u8> for PacketType {
    type Error = Error;

    fn try_from(value: u8) -> Result<Self, Error> {
        PacketType::ALL
            .get(usize::from(value))
            .copied()
            .ok_or(Error::UnknownType(value))
    }
}

impl fmt::Display for PacketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A read/write view of the 12-byte common header at the start of a buffer.
///
/// Construct it with [`Header::new_checked`]; afterwards no method panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wraps `buffer`, failing with [`Error::Truncated`] if it is shorter than 12 bytes.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let header = Header { buffer };
        header.check_len()?;
        Ok(header)
    }

    /// Checks that the buffer holds the whole common header.
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The Checksum field (offset 0).
    pub fn checksum(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), fields::CHECKSUM)
    }

    /// The Version field (offset 2).
    pub fn version(&self) -> u8 {
        field::get_u8(self.buffer.as_ref(), fields::VERSION)
    }

    /// The raw Type field (offset 3).
    pub fn packet_type_raw(&self) -> u8 {
        field::get_u8(self.buffer.as_ref(), fields::TYPE)
    }

    /// The Type field, decoded.
    pub fn packet_type(&self) -> Result<PacketType, Error> {
        PacketType::try_from(self.packet_type_raw())
    }

    /// The Length field (offset 4): header plus body, without trailing alignment padding.
    pub fn length(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), fields::LENGTH)
    }

    /// The Local Port field (offset 6): the port of the NETBLT that sent this packet.
    pub fn local_port(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), fields::LOCAL_PORT)
    }

    /// The Foreign Port field (offset 8): the port of the NETBLT this packet is for.
    pub fn foreign_port(&self) -> u16 {
        field::get_u16(self.buffer.as_ref(), fields::FOREIGN_PORT)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Sets the Checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        field::set_u16(self.buffer.as_mut(), fields::CHECKSUM, v);
    }

    /// Sets the Version field.
    pub fn set_version(&mut self, v: u8) {
        field::set_u8(self.buffer.as_mut(), fields::VERSION, v);
    }

    /// Sets the Type field.
    pub fn set_packet_type(&mut self, t: PacketType) {
        field::set_u8(self.buffer.as_mut(), fields::TYPE, t as u8);
    }

    /// Sets the Length field.
    pub fn set_length(&mut self, v: u16) {
        field::set_u16(self.buffer.as_mut(), fields::LENGTH, v);
    }

    /// Sets the Local Port field.
    pub fn set_local_port(&mut self, v: u16) {
        field::set_u16(self.buffer.as_mut(), fields::LOCAL_PORT, v);
    }

    /// Sets the Foreign Port field.
    pub fn set_foreign_port(&mut self, v: u16) {
        field::set_u16(self.buffer.as_mut(), fields::FOREIGN_PORT, v);
    }

    /// Zeroes the Longword Alignment Padding field (offset 10).
    pub fn clear_padding(&mut self) {
        field::zero(self.buffer.as_mut(), fields::PADDING);
    }
}

/// Writes a complete common header (checksum zero) into `buf[..12]`.
///
/// `len` must already be known to fit in 16 bits; callers check it against
/// [`MAX_PACKET_LEN`](crate::MAX_PACKET_LEN) first.
pub(crate) fn write(
    buf: &mut [u8],
    ty: PacketType,
    len: usize,
    local_port: u16,
    foreign_port: u16,
) {
    let mut h = Header { buffer: buf };
    h.set_checksum(0);
    h.set_version(VERSION);
    h.set_packet_type(ty);
    h.set_length(u16::try_from(len).unwrap_or(u16::MAX));
    h.set_local_port(local_port);
    h.set_foreign_port(foreign_port);
    h.clear_padding();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_numbers_and_names() {
        for (i, t) in PacketType::ALL.iter().enumerate() {
            assert_eq!(*t as u8 as usize, i);
            assert_eq!(PacketType::try_from(i as u8), Ok(*t));
        }
        assert_eq!(PacketType::try_from(13), Err(Error::UnknownType(13)));
        assert_eq!(PacketType::try_from(255), Err(Error::UnknownType(255)));
        assert_eq!(PacketType::NullAck.to_string(), "NULL-ACK");
        assert_eq!(PacketType::LData.to_string(), "LDATA");
        assert_eq!(PacketType::QuitAck.to_string(), "QUITACK");
    }

    #[test]
    fn header_view_reads_and_writes() {
        let bytes = [
            0x12, 0x34, // checksum
            0x01, // version
            0x09, // type CONTROL
            0x00, 0x14, // length 20
            0x03, 0xe8, // local port 1000
            0x07, 0xd0, // foreign port 2000
            0xaa, 0xbb, // padding (ignored)
        ];
        let h = Header::new_checked(&bytes[..]).unwrap();
        assert_eq!(h.checksum(), 0x1234);
        assert_eq!(h.version(), 1);
        assert_eq!(h.packet_type(), Ok(PacketType::Control));
        assert_eq!(h.length(), 20);
        assert_eq!(h.local_port(), 1000);
        assert_eq!(h.foreign_port(), 2000);

        let mut out = [0xffu8; 12];
        write(&mut out, PacketType::Control, 20, 1000, 2000);
        let mut h = Header::new_checked(&mut out[..]).unwrap();
        h.set_checksum(0x1234);
        assert_eq!(&out[..10], &bytes[..10]);
        assert_eq!(&out[10..], &[0, 0]);
    }

    #[test]
    fn header_view_rejects_short() {
        assert_eq!(Header::new_checked(&[0u8; 11][..]), Err(Error::Truncated));
    }
}

#[cfg(test)]
mod packet_tests {
    //! Byte-exact tests for the header-only packets: KEEPALIVE, QUITACK, DONE.
    use crate::test_util::check_exact;
    use crate::{Error, Packet, Repr};

    #[rustfmt::skip]
    const KEEPALIVE: [u8; 12] = [
        0xf3, 0x39, // checksum
        0x01,       // version 1
        0x02,       // type KEEPALIVE
        0x00, 0x0c, // length 12
        0x03, 0xe8, // local port 1000
        0x07, 0xd0, // foreign port 2000
        0x00, 0x00, // padding
    ];

    #[rustfmt::skip]
    const QUITACK: [u8; 12] = [
        0xf3, 0x37, // checksum
        0x01,       // version 1
        0x04,       // type QUITACK
        0x00, 0x0c, // length 12
        0x03, 0xe8, // local port 1000
        0x07, 0xd0, // foreign port 2000
        0x00, 0x00, // padding
    ];

    #[rustfmt::skip]
    const DONE: [u8; 12] = [
        0xf3, 0x30, // checksum
        0x01,       // version 1
        0x0b,       // type DONE
        0x00, 0x0c, // length 12
        0x07, 0xd0, // local port 2000 (the data receiver)
        0x03, 0xe8, // foreign port 1000
        0x00, 0x00, // padding
    ];

    fn pkt(lp: u16, fp: u16, repr: Repr<'static>) -> Packet<'static> {
        Packet {
            local_port: lp,
            foreign_port: fp,
            repr,
        }
    }

    #[test]
    fn keepalive_bytes() {
        check_exact(&KEEPALIVE, &pkt(1000, 2000, Repr::Keepalive), 12, 0xf339);
        assert_eq!(
            pkt(1000, 2000, Repr::Keepalive).to_string(),
            "KEEPALIVE 1000>2000"
        );
    }

    #[test]
    fn quitack_bytes() {
        check_exact(&QUITACK, &pkt(1000, 2000, Repr::QuitAck), 12, 0xf337);
    }

    #[test]
    fn done_bytes() {
        check_exact(&DONE, &pkt(2000, 1000, Repr::Done), 12, 0xf330);
    }

    #[test]
    fn header_padding_is_ignored_but_checksummed() {
        let mut b = KEEPALIVE;
        b[10] = 0x12;
        b[11] = 0x34;
        assert_eq!(Packet::parse(&b), Err(Error::BadChecksum));
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Ok(pkt(1000, 2000, Repr::Keepalive)));
    }

    #[test]
    fn header_only_with_body_is_rejected() {
        // KEEPALIVE with Length 16 and 4 extra bytes: fixed-size types must be exact.
        let mut b = KEEPALIVE.to_vec();
        b.extend_from_slice(&[0; 4]);
        b[5] = 16;
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
    }
}
