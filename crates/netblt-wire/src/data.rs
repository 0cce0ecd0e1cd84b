//! DATA (type 6), LDATA (type 7) and NULL-ACK (type 8): the packets that flow from data sender
//! to data receiver and carry the high-acknowledged control sequence number.
//!
//! ```text
//! DATA / LDATA:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                    common header (12 bytes)                   |
//! +---------------------------------------------------------------+
//! |                       Buffer Number                           |  12
//! +-------------------------------+-------------------------------+
//! | High Consecutive Seq Num Rcvd |         Packet Number         |  16
//! +-------------------------------+-----------------------------+-+
//! |    Data Area Checksum Value   |      Reserved (MBZ)         |L|  20
//! +-------------------------------+-----------------------------+-+
//! | data ... (any length; the datagram is zero-padded to 4)       |  24
//! +---------------------------------------------------------------+
//!
//! NULL-ACK:
//! +---------------------------------------------------------------+
//! |                    common header (12 bytes)                   |
//! +-------------------------------+-------------------------------+
//! | High Consecutive Seq Num Rcvd |        New Burst Size         |  12
//! +-------------------------------+-------------------------------+
//! |       New Burst Rate          |  Longword Alignment Padding   |  16
//! +-------------------------------+-------------------------------+
//! ```
//!
//! Checksums. RFC 998 §5.1: "If the negotiated checksum flag is set to TRUE (1), both the header
//! and the data of a DATA/LDATA packet are checksummed; if set to FALSE (0), only the header is
//! checksummed." We read this as: the header Checksum (offset 0) always covers the 24-byte DATA
//! header only, and the "Data Area Checksum Value" (offset 20) holds the checksum of the data
//! segment when C = 1 and 0 otherwise. This layer does not know C, so it carries
//! [`DataRepr::data_checksum`] as a plain field; the engine fills it with
//! [`checksum`](crate::checksum) and checks it with [`DataRepr::data_checksum_ok`].
//!
//! Length. The Length field is 24 + the data length, without the trailing alignment padding, so
//! the receiver learns the exact size of a short final segment (notes §Z4).
//!
//! Never-panic contract: [`emit_data`] and the parse functions bounds-check and never panic.

use crate::field::{self, Field};
use crate::header::{self, fields as hfields};
use crate::{
    checksum, round_up4, Error, PacketType, DATA_HEADER_LEN, MAX_PACKET_LEN, NULL_ACK_LEN,
};

/// Byte ranges of the DATA/LDATA header (RFC 998 §8).
mod fields {
    use super::Field;
    pub(super) const BUFFER: Field = 12..16;
    pub(super) const HIGH_ACK: Field = 16..18;
    pub(super) const PACKET: Field = 18..20;
    pub(super) const DATA_CHECKSUM: Field = 20..22;
    pub(super) const FLAGS: Field = 22..24;

    pub(super) const NULL_ACK_HIGH_ACK: Field = 12..14;
    pub(super) const NULL_ACK_BURST_SIZE: Field = 14..16;
    pub(super) const NULL_ACK_BURST_RATE: Field = 16..18;
    pub(super) const NULL_ACK_PADDING: Field = 18..20;
}

/// The L bit: "set when the buffer that this DATA packet belongs to is the last buffer in the
/// transfer".
pub(crate) const FLAG_LAST_BUFFER: u16 = 0x0001;

/// The body of a DATA or LDATA packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRepr<'a> {
    /// Buffer Number: "a 32 bit unique number assigned to every buffer".
    pub buffer: u32,
    /// "Highest control message sequence number below which all sequence numbers received are
    /// consecutive".
    pub high_ack: u16,
    /// Packet Number: "monotonically increasing DATA packet identifier".
    pub packet: u16,
    /// The L flag: this packet's buffer is the last buffer of the transfer.
    pub last_buffer: bool,
    /// The Data Area Checksum Value: `checksum(data)` when C = 1, else 0 by convention.
    pub data_checksum: u16,
    /// The data segment.
    pub data: &'a [u8],
}

impl<'a> DataRepr<'a> {
    /// Whether [`data_checksum`](Self::data_checksum) is the checksum of [`data`](Self::data).
    ///
    /// Only meaningful on a connection that negotiated C = 1.
    pub fn data_checksum_ok(&self) -> bool {
        checksum(self.data) == self.data_checksum
    }

    /// The unpadded packet length (the Length field): 24 + data length.
    pub fn packet_len(&self) -> usize {
        DATA_HEADER_LEN.saturating_add(self.data.len())
    }

    /// The length on the wire: [`packet_len`](Self::packet_len) rounded up to 4.
    pub fn buffer_len(&self) -> usize {
        round_up4(self.packet_len())
    }

    /// Parses a DATA/LDATA body from `packet`, the packet cut to its Length field (at least 24
    /// bytes, else [`Error::BadLength`]). Checksums are not looked at here.
    pub fn parse(packet: &'a [u8]) -> Result<Self, Error> {
        let data = packet.get(DATA_HEADER_LEN..).ok_or(Error::BadLength)?;
        Ok(DataRepr {
            buffer: field::get_u32(packet, fields::BUFFER),
            high_ack: field::get_u16(packet, fields::HIGH_ACK),
            packet: field::get_u16(packet, fields::PACKET),
            last_buffer: field::get_u16(packet, fields::FLAGS) & FLAG_LAST_BUFFER != 0,
            data_checksum: field::get_u16(packet, fields::DATA_CHECKSUM),
            data,
        })
    }
}

/// Emits a whole DATA (or, with `ldata`, LDATA) packet into `buf`: header, header checksum, a
/// copy of `repr.data`, and zero padding to a multiple of 4. Returns the bytes written,
/// `repr.buffer_len()`.
///
/// This is the hot path of a transfer, so it writes straight into `buf` without building a
/// [`Packet`](crate::Packet). `repr.data_checksum` is written as given.
///
/// Fails with [`Error::BadLength`] if the packet would exceed 65535 bytes and
/// [`Error::BufferTooSmall`] if `buf` is shorter than `repr.buffer_len()`. Never panics.
pub fn emit_data(
    buf: &mut [u8],
    ldata: bool,
    local_port: u16,
    foreign_port: u16,
    repr: &DataRepr<'_>,
) -> Result<usize, Error> {
    let total = repr.buffer_len();
    let out = buf.get_mut(..total).ok_or(Error::BufferTooSmall)?;
    let (head, body) = out
        .split_at_mut_checked(DATA_HEADER_LEN)
        .ok_or(Error::BufferTooSmall)?;
    let (data, pad) = body
        .split_at_mut_checked(repr.data.len())
        .ok_or(Error::BufferTooSmall)?;
    data.copy_from_slice(repr.data);
    pad.fill(0);
    emit_data_header(head, ldata, local_port, foreign_port, repr)
}

/// Emits only the 24-byte header of the DATA/LDATA packet that [`emit_data`] would emit, into
/// `head`, for senders that gather the packet from its parts (header, `repr.data` where it lies,
/// then `repr.buffer_len() - 24 - repr.data.len()` zero bytes of padding) instead of copying the
/// data. Returns the whole packet's length with padding, `repr.buffer_len()`.
///
/// Fails like [`emit_data`] ([`Error::BufferTooSmall`] if `head` is shorter than 24 bytes).
pub fn emit_data_header(
    head: &mut [u8],
    ldata: bool,
    local_port: u16,
    foreign_port: u16,
    repr: &DataRepr<'_>,
) -> Result<usize, Error> {
    let len = repr.packet_len();
    if len > MAX_PACKET_LEN {
        return Err(Error::BadLength);
    }
    let head = head
        .get_mut(..DATA_HEADER_LEN)
        .ok_or(Error::BufferTooSmall)?;
    let ty = if ldata {
        PacketType::LData
    } else {
        PacketType::Data
    };
    header::write(head, ty, len, local_port, foreign_port);
    field::set_u32(head, fields::BUFFER, repr.buffer);
    field::set_u16(head, fields::HIGH_ACK, repr.high_ack);
    field::set_u16(head, fields::PACKET, repr.packet);
    field::set_u16(head, fields::DATA_CHECKSUM, repr.data_checksum);
    let flags = if repr.last_buffer {
        FLAG_LAST_BUFFER
    } else {
        0
    };
    field::set_u16(head, fields::FLAGS, flags);
    // The header checksum covers the 24-byte header only, with the checksum field as zero.
    let sum = checksum(head.get(hfields::CHECKSUM.end..).unwrap_or(&[]));
    field::set_u16(head, hfields::CHECKSUM, sum);
    Ok(round_up4(len))
}

/// The body of a NULL-ACK packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NullAckRepr {
    /// "High Consecutive Sequence Number Received: same as in DATA/LDATA packet".
    pub high_ack: u16,
    /// "Burst size as negotiated from value given by receiving NETBLT in OK message".
    pub burst_size: u16,
    /// The RFC's "New burst rate", in milliseconds per burst.
    pub burst_interval_ms: u16,
}

impl NullAckRepr {
    /// Parses a NULL-ACK body from `packet`, which must be exactly 20 bytes
    /// ([`Error::BadLength`] otherwise).
    pub fn parse(packet: &[u8]) -> Result<Self, Error> {
        if packet.len() != NULL_ACK_LEN {
            return Err(Error::BadLength);
        }
        Ok(NullAckRepr {
            high_ack: field::get_u16(packet, fields::NULL_ACK_HIGH_ACK),
            burst_size: field::get_u16(packet, fields::NULL_ACK_BURST_SIZE),
            burst_interval_ms: field::get_u16(packet, fields::NULL_ACK_BURST_RATE),
        })
    }

    /// Writes the body (bytes 12..20) into `packet`, which must be exactly 20 bytes.
    pub fn emit(&self, packet: &mut [u8]) -> Result<(), Error> {
        if packet.len() != NULL_ACK_LEN {
            return Err(Error::BufferTooSmall);
        }
        field::set_u16(packet, fields::NULL_ACK_HIGH_ACK, self.high_ack);
        field::set_u16(packet, fields::NULL_ACK_BURST_SIZE, self.burst_size);
        field::set_u16(packet, fields::NULL_ACK_BURST_RATE, self.burst_interval_ms);
        field::zero(packet, fields::NULL_ACK_PADDING);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{check_exact, naive_checksum};
    use crate::{Packet, Repr};

    #[rustfmt::skip]
    const DATA: [u8; 32] = [
        0x36, 0xea,             // checksum (over the 24-byte header only)
        0x01,                   // version 1
        0x06,                   // type DATA
        0x00, 0x1d,             // length 29 = 24 + 5 (padding not counted)
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        0x00, 0x00, 0x00, 0x03, // buffer number 3
        0x00, 0x02,             // high consecutive seq num rcvd 2
        0x00, 0x07,             // packet number 7
        0xbc, 0x2d,             // data area checksum = checksum("hello")
        0x00, 0x01,             // flags: L
        b'h', b'e', b'l', b'l', // data "hello"
        b'o', 0x00, 0x00, 0x00, //   + 3 bytes of alignment padding
    ];

    fn data_packet() -> Packet<'static> {
        Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::Data(DataRepr {
                buffer: 3,
                high_ack: 2,
                packet: 7,
                last_buffer: true,
                data_checksum: 0xbc2d,
                data: b"hello",
            }),
        }
    }

    #[test]
    fn data_bytes() {
        assert_eq!(naive_checksum(b"hello"), 0xbc2d);
        check_exact(&DATA, &data_packet(), 24, 0x36ea);
        let Repr::Data(d) = data_packet().repr else {
            unreachable!()
        };
        assert!(d.data_checksum_ok());
        assert_eq!(
            data_packet().to_string(),
            "DATA 1000>2000 buf=3 pkt=7 hack=2 len=5 L"
        );
    }

    #[rustfmt::skip]
    const LDATA: [u8; 28] = [
        0x55, 0x88,             // checksum
        0x01,                   // version 1
        0x07,                   // type LDATA
        0x00, 0x1c,             // length 28 (no padding needed)
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        0xde, 0xad, 0xbe, 0xef, // buffer number 0xdeadbeef
        0xff, 0xfe,             // high consecutive seq num rcvd 65534
        0xff, 0xff,             // packet number 65535
        0x00, 0x00,             // data area checksum 0 (C = 0)
        0x00, 0x00,             // flags: not the last buffer
        0x01, 0x02, 0x03, 0x04, // data
    ];

    #[test]
    fn ldata_bytes() {
        let repr = DataRepr {
            buffer: 0xdead_beef,
            high_ack: 65534,
            packet: 65535,
            last_buffer: false,
            data_checksum: 0,
            data: &[1, 2, 3, 4],
        };
        let p = Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::LData(repr),
        };
        check_exact(&LDATA, &p, 24, 0x5588);
        assert!(!repr.data_checksum_ok());
    }

    #[test]
    fn emit_data_matches_packet_emit() {
        let Repr::Data(d) = data_packet().repr else {
            unreachable!()
        };
        let mut out = [0xaau8; 40];
        assert_eq!(emit_data(&mut out, false, 1000, 2000, &d), Ok(32));
        assert_eq!(&out[..32], &DATA);
        assert_eq!(&out[32..], &[0xaa; 8]);
        assert_eq!(
            emit_data(&mut out[..31], false, 1000, 2000, &d),
            Err(Error::BufferTooSmall)
        );
    }

    #[test]
    fn data_checksum_is_not_covered_by_header_checksum() {
        // Corrupting the data leaves the header checksum valid; only data_checksum_ok notices.
        let mut b = DATA;
        b[24] = b'j';
        let Repr::Data(d) = Packet::parse(&b).unwrap().repr else {
            panic!("not DATA")
        };
        assert_eq!(d.data, b"jello");
        assert!(!d.data_checksum_ok());
    }

    #[test]
    fn data_padding_is_ignored() {
        let mut b = DATA;
        b[29..].copy_from_slice(&[1, 2, 3]);
        assert_eq!(Packet::parse(&b), Ok(data_packet()));
    }

    #[test]
    fn data_with_wrong_padding_is_rejected() {
        // Length 29 must arrive as 32 bytes: 29, 31 and 36 are all wrong.
        assert_eq!(Packet::parse(&DATA[..29]), Err(Error::BadLength));
        assert_eq!(Packet::parse(&DATA[..31]), Err(Error::BadLength));
        let mut long = DATA.to_vec();
        long.extend_from_slice(&[0; 4]);
        assert_eq!(Packet::parse(&long), Err(Error::BadLength));
        // And shorter than Length is truncation.
        assert_eq!(Packet::parse(&DATA[..28]), Err(Error::Truncated));
    }

    #[test]
    fn oversized_data_does_not_emit() {
        let big = vec![0u8; MAX_PACKET_LEN - DATA_HEADER_LEN + 1];
        let d = DataRepr {
            buffer: 0,
            high_ack: 0,
            packet: 0,
            last_buffer: false,
            data_checksum: 0,
            data: &big,
        };
        let mut out = vec![0u8; 70_000];
        assert_eq!(emit_data(&mut out, false, 1, 2, &d), Err(Error::BadLength));
        // The largest one fits: Length 65535, 65536 bytes on the wire.
        let d = DataRepr {
            data: &big[1..],
            ..d
        };
        assert_eq!(emit_data(&mut out, true, 1, 2, &d), Ok(65_536));
        let p = Packet::parse(&out[..65_536]).unwrap();
        assert_eq!(p.repr, Repr::LData(d));
    }

    #[rustfmt::skip]
    const NULL_ACK: [u8; 20] = [
        0xf2, 0xbf, // checksum
        0x01,       // version 1
        0x08,       // type NULL-ACK
        0x00, 0x14, // length 20
        0x03, 0xe8, // local port 1000
        0x07, 0xd0, // foreign port 2000
        0x00, 0x00, // padding
        0x00, 0x03, // high consecutive seq num rcvd 3
        0x00, 0x05, // new burst size 5
        0x00, 0x64, // new burst rate 100 ms
        0x00, 0x00, // padding
    ];

    #[test]
    fn null_ack_bytes() {
        let p = Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::NullAck(NullAckRepr {
                high_ack: 3,
                burst_size: 5,
                burst_interval_ms: 100,
            }),
        };
        check_exact(&NULL_ACK, &p, 20, 0xf2bf);
    }

    #[test]
    fn null_ack_with_wrong_length_is_rejected() {
        let mut b = NULL_ACK.to_vec();
        b.extend_from_slice(&[0; 4]);
        b[5] = 24;
        let sum = checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
    }
}
