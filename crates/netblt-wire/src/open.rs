//! OPEN (type 0) and RESPONSE (type 1): connection setup and parameter negotiation.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                    common header (12 bytes)                   |
//! +---------------------------------------------------------------+
//! |                       Connection Unique ID                    |  12
//! +---------------------------------------------------------------+
//! |                         Buffer Size                           |  16
//! +---------------------------------------------------------------+
//! |                       Transfer Size                           |  20
//! +-------------------------------+-------------------------------+
//! |        DATA packet size       |          Burst Size           |  24
//! +-------------------------------+-------------------------------+
//! |           Burst Rate          |       Death Timer Value       |  28
//! +---------------------------+-+-+-------------------------------+
//! |       Reserved (MBZ)      |C|M| Maximum # Outstanding Buffers |  32
//! +---------------------------+-+-+-------------------------------+
//! | Client String ... NUL, NUL padding to a multiple of 4         |  36
//! +---------------------------------------------------------------+
//! ```
//!
//! RESPONSE uses the same layout; the passive end returns the UID and the (possibly more
//! restrictive) parameters it accepts. The flag word at offset 32 is read as a big-endian u16:
//! M = 0x0001 ("the transfer mode (0 = READ, 1 = WRITE)"), C = 0x0002 ("the DATA packet data
//! checksum flag (0 = do not checksum DATA packet data, 1 = do)"). Our extensions, which a
//! plain RFC 998 peer leaves zero: F = 0x0004 (rate feedback), O = 0x0008 (the receiver's OKs
//! offer its own burst values), P = 0x0010 (a path probe, decision R58: one copy of this OPEN
//! has its client string area padded with NULs to the length of a larger DATA packet). The
//! other bits are reserved, written as zero and ignored on parse.
//!
//! Never-panic contract: [`OpenRepr::parse`] bounds-checks its input and never panics, and
//! [`OpenRepr::emit`] never panics for any buffer.

use core::fmt;

use crate::field::{self, Field};
use crate::{string, Error, OPEN_FIXED_LEN};

/// Byte ranges of the OPEN/RESPONSE body (RFC 998 §8).
mod fields {
    use super::Field;
    pub(super) const UID: Field = 12..16;
    pub(super) const BUFFER_SIZE: Field = 16..20;
    pub(super) const TRANSFER_SIZE: Field = 20..24;
    pub(super) const DATA_PACKET_SIZE: Field = 24..26;
    pub(super) const BURST_SIZE: Field = 26..28;
    pub(super) const BURST_RATE: Field = 28..30;
    pub(super) const DEATH_TIMER: Field = 30..32;
    pub(super) const FLAGS: Field = 32..34;
    pub(super) const MAX_OUTSTANDING: Field = 34..36;
    pub(super) const CLIENT: usize = 36;
}

/// The M bit: "the transfer mode (0 = READ, 1 = WRITE)".
pub(crate) const FLAG_MODE_WRITE: u16 = 0x0001;
/// The C bit: "the DATA packet data checksum flag".
pub(crate) const FLAG_CHECKSUM_DATA: u16 = 0x0002;
/// The F bit (not in RFC 998, whose other flag bits are zero): rate feedback.
/// In an OPEN the active end offers the FEEDBACK extension; in a RESPONSE the
/// passive end accepts it. A plain RFC 998 peer leaves it zero.
pub(crate) const FLAG_RATE_FEEDBACK: u16 = 0x0004;
/// The O bit (not in RFC 998 either): the data receiver's OKs carry its own
/// offer of burst size and rate, at most what OPEN and RESPONSE agreed and
/// lower to limit the sender (RFC 998 §4: "The receiving end sends burst
/// size and burst rate values in its OK messages"), never an echo of the
/// sender's NULL-ACK. Offered in an OPEN, accepted in a RESPONSE; a peer
/// that leaves it zero echoes, as before.
pub(crate) const FLAG_RECEIVER_OFFERS: u16 = 0x0008;
/// The P bit (not in RFC 998): a path probe (decision R58). In an OPEN, the
/// active end says it sent one copy of this OPEN padded to the size of a
/// whole DATA packet of a larger packet size than it offers, and would take
/// that larger size; the passive end may answer with it only if the copy
/// it opened the connection with was that padded one (the path carried a
/// packet that large). Never set in a RESPONSE.
pub(crate) const FLAG_PATH_PROBE: u16 = 0x0010;

/// The transfer mode (the M bit), seen from the active (opening) end: WRITE means the active
/// end sends the data (notes §Z9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// M = 0: the active end reads (receives) data.
    Read,
    /// M = 1: the active end writes (sends) data.
    Write,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Read => "READ",
            Mode::Write => "WRITE",
        })
    }
}

/// The body of an OPEN or RESPONSE packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenRepr<'a> {
    /// Connection Unique ID, chosen by the active end; RESPONSE returns it.
    pub uid: u32,
    /// "size in bytes of each NETBLT buffer (save the last)".
    pub buffer_size: u32,
    /// "(optional) the size in bytes of the transfer", for the client only (0 = not given).
    pub transfer_size: u32,
    /// "length of each DATA packet in bytes".
    pub data_packet_size: u16,
    /// "Number of DATA packets in a burst".
    pub burst_size: u16,
    /// The RFC's "Burst Rate": "Transmit time in milliseconds of a single burst".
    pub burst_interval_ms: u16,
    /// "Packet sender's death timer value in seconds".
    pub death_timer_s: u16,
    /// The C flag: checksum DATA packet data.
    pub checksum_data: bool,
    /// The M flag: transfer mode.
    pub mode: Mode,
    /// The F flag (an extension): FEEDBACK packets offered (OPEN) or
    /// accepted (RESPONSE). See `feedback.rs`.
    pub rate_feedback: bool,
    /// The O flag (an extension): the data receiver's OKs offer its own
    /// burst values (a limit on the sender), not an echo.
    pub receiver_offers: bool,
    /// "maximum number of buffers that can be transferred before waiting for an OK message".
    pub max_outstanding: u16,
    /// The P flag (an extension, decision R58): this OPEN offers a path
    /// probe; see `padded_len`.
    pub path_probe: bool,
    /// The packet's whole length (header included) when its client string
    /// area is padded with NULs beyond what the string needs, as RFC 998
    /// §8's "extra null bytes" allow: a path probe's padded copy. 0 when the
    /// area is no longer than needed. Parse sets it from the packet's
    /// length; emit pads the area up to it.
    pub padded_len: u16,
    /// The client string, without its NUL terminator and padding.
    pub client: &'a [u8],
}

impl<'a> OpenRepr<'a> {
    /// Parses the body of an OPEN/RESPONSE from `packet`, the packet cut to its Length field.
    ///
    /// Fails with [`Error::BadLength`] if `packet` is shorter than 40 bytes and
    /// [`Error::BadString`] if the client string area holds no NUL. Header fields and the
    /// checksum are not looked at here; [`Packet::parse`](crate::Packet::parse) does that.
    pub fn parse(packet: &'a [u8]) -> Result<Self, Error> {
        if packet.len() < OPEN_FIXED_LEN + 4 {
            return Err(Error::BadLength);
        }
        let area = packet.get(fields::CLIENT..).ok_or(Error::BadLength)?;
        let client = string::parse(area)?;
        let flags = field::get_u16(packet, fields::FLAGS);
        let minimal = OPEN_FIXED_LEN.saturating_add(string::area_len(client));
        let padded_len = if packet.len() > minimal {
            u16::try_from(packet.len()).unwrap_or(u16::MAX)
        } else {
            0
        };
        Ok(OpenRepr {
            uid: field::get_u32(packet, fields::UID),
            buffer_size: field::get_u32(packet, fields::BUFFER_SIZE),
            transfer_size: field::get_u32(packet, fields::TRANSFER_SIZE),
            data_packet_size: field::get_u16(packet, fields::DATA_PACKET_SIZE),
            burst_size: field::get_u16(packet, fields::BURST_SIZE),
            burst_interval_ms: field::get_u16(packet, fields::BURST_RATE),
            death_timer_s: field::get_u16(packet, fields::DEATH_TIMER),
            checksum_data: flags & FLAG_CHECKSUM_DATA != 0,
            mode: if flags & FLAG_MODE_WRITE != 0 {
                Mode::Write
            } else {
                Mode::Read
            },
            rate_feedback: flags & FLAG_RATE_FEEDBACK != 0,
            receiver_offers: flags & FLAG_RECEIVER_OFFERS != 0,
            path_probe: flags & FLAG_PATH_PROBE != 0,
            max_outstanding: field::get_u16(packet, fields::MAX_OUTSTANDING),
            padded_len,
            client,
        })
    }

    /// The whole packet length, header included: 36 bytes plus the padded
    /// client string, or `padded_len` rounded up to 4 if that is more.
    pub fn buffer_len(&self) -> usize {
        let minimal = OPEN_FIXED_LEN.saturating_add(string::area_len(self.client));
        minimal.max(crate::round_up4(usize::from(self.padded_len)))
    }

    /// Writes the body (bytes 12..) into `packet`, which must be exactly
    /// [`buffer_len`](Self::buffer_len) long; the header is left alone.
    ///
    /// Fails with [`Error::BadString`] if the client string contains a NUL and
    /// [`Error::BufferTooSmall`] if `packet` has the wrong size.
    pub fn emit(&self, packet: &mut [u8]) -> Result<(), Error> {
        string::check(self.client)?;
        if packet.len() != self.buffer_len() {
            return Err(Error::BufferTooSmall);
        }
        let mut flags = 0;
        if self.checksum_data {
            flags |= FLAG_CHECKSUM_DATA;
        }
        if self.mode == Mode::Write {
            flags |= FLAG_MODE_WRITE;
        }
        if self.rate_feedback {
            flags |= FLAG_RATE_FEEDBACK;
        }
        if self.receiver_offers {
            flags |= FLAG_RECEIVER_OFFERS;
        }
        if self.path_probe {
            flags |= FLAG_PATH_PROBE;
        }
        field::set_u32(packet, fields::UID, self.uid);
        field::set_u32(packet, fields::BUFFER_SIZE, self.buffer_size);
        field::set_u32(packet, fields::TRANSFER_SIZE, self.transfer_size);
        field::set_u16(packet, fields::DATA_PACKET_SIZE, self.data_packet_size);
        field::set_u16(packet, fields::BURST_SIZE, self.burst_size);
        field::set_u16(packet, fields::BURST_RATE, self.burst_interval_ms);
        field::set_u16(packet, fields::DEATH_TIMER, self.death_timer_s);
        field::set_u16(packet, fields::FLAGS, flags);
        field::set_u16(packet, fields::MAX_OUTSTANDING, self.max_outstanding);
        let area = packet
            .get_mut(fields::CLIENT..)
            .ok_or(Error::BufferTooSmall)?;
        string::emit(self.client, area)
    }
}

impl fmt::Display for OpenRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uid={:#010x} mode={} bufsize={} xfer={} pktsize={} burst={}/{}ms death={}s maxout={}{}{}{}{} client=\"{}\"",
            self.uid,
            self.mode,
            self.buffer_size,
            self.transfer_size,
            self.data_packet_size,
            self.burst_size,
            self.burst_interval_ms,
            self.death_timer_s,
            self.max_outstanding,
            if self.checksum_data { " C" } else { "" },
            if self.rate_feedback { " F" } else { "" },
            if self.receiver_offers { " O" } else { "" },
            if self.path_probe { " P" } else { "" },
            self.client.escape_ascii(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::check_exact;
    use crate::{Packet, Repr};

    #[rustfmt::skip]
    const OPEN: [u8; 40] = [
        0xa0, 0x79,             // checksum (over all 40 bytes)
        0x01,                   // version 1
        0x00,                   // type OPEN
        0x00, 0x28,             // length 40
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        0x12, 0x34, 0x56, 0x78, // connection UID
        0x00, 0x00, 0x40, 0x00, // buffer size 16384
        0x00, 0x0f, 0x42, 0x40, // transfer size 1_000_000
        0x05, 0x9e,             // DATA packet size 1438
        0x00, 0x05,             // burst size 5
        0x00, 0x64,             // burst rate 100 ms
        0x00, 0x3c,             // death timer 60 s
        0x00, 0x03,             // flags: C (0x0002) | M = WRITE (0x0001)
        0x00, 0x02,             // max outstanding buffers 2
        b'a', b'b', 0x00, 0x00, // client string "ab", NUL, pad
    ];

    fn open_packet() -> Packet<'static> {
        Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::Open(OpenRepr {
                uid: 0x1234_5678,
                buffer_size: 16384,
                transfer_size: 1_000_000,
                data_packet_size: 1438,
                burst_size: 5,
                burst_interval_ms: 100,
                death_timer_s: 60,
                checksum_data: true,
                mode: Mode::Write,
                rate_feedback: false,
                receiver_offers: false,
                path_probe: false,
                padded_len: 0,
                max_outstanding: 2,
                client: b"ab",
            }),
        }
    }

    #[test]
    fn open_bytes() {
        check_exact(&OPEN, &open_packet(), 40, 0xa079);
    }

    #[rustfmt::skip]
    const RESPONSE: [u8; 40] = [
        0x66, 0x1e,             // checksum
        0x01,                   // version 1
        0x01,                   // type RESPONSE
        0x00, 0x28,             // length 40
        0x07, 0xd0,             // local port 2000 (the passive end)
        0x03, 0xe8,             // foreign port 1000
        0x00, 0x00,             // padding
        0x12, 0x34, 0x56, 0x78, // connection UID, echoed
        0x00, 0x00, 0x20, 0x00, // buffer size 8192
        0x00, 0x00, 0x00, 0x00, // transfer size 0 (not given)
        0x04, 0x00,             // DATA packet size 1024
        0x00, 0x03,             // burst size 3
        0x00, 0x32,             // burst rate 50 ms
        0x00, 0x1e,             // death timer 30 s
        0x00, 0x00,             // flags: C = 0, M = READ
        0x00, 0x01,             // max outstanding buffers 1
        0x00, 0x00, 0x00, 0x00, // empty client string: NUL + 3 pad
    ];

    #[test]
    fn response_bytes() {
        let p = Packet {
            local_port: 2000,
            foreign_port: 1000,
            repr: Repr::Response(OpenRepr {
                uid: 0x1234_5678,
                buffer_size: 8192,
                transfer_size: 0,
                data_packet_size: 1024,
                burst_size: 3,
                burst_interval_ms: 50,
                death_timer_s: 30,
                checksum_data: false,
                mode: Mode::Read,
                rate_feedback: false,
                receiver_offers: false,
                path_probe: false,
                padded_len: 0,
                max_outstanding: 1,
                client: b"",
            }),
        };
        check_exact(&RESPONSE, &p, 40, 0x661e);
    }

    #[test]
    fn reserved_flag_bits_are_ignored() {
        let mut b = OPEN;
        b[32] = 0xff; // reserved bits set
        b[33] = 0xfc; // reserved bits set, C = 0, M = 0
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        let Repr::Open(o) = Packet::parse(&b).unwrap().repr else {
            panic!("not an OPEN")
        };
        assert!(!o.checksum_data);
        assert_eq!(o.mode, Mode::Read);
    }

    #[test]
    fn the_extension_flags_are_bits_2_and_3() {
        for (fb, offers, byte) in [(true, false, 0x07), (false, true, 0x0b), (true, true, 0x0f)] {
            let mut p = open_packet();
            if let Repr::Open(o) = &mut p.repr {
                o.rate_feedback = fb;
                o.receiver_offers = offers;
            }
            let mut b = [0u8; 40];
            p.emit(&mut b).unwrap();
            assert_eq!(b[32..34], [0x00, byte], "F {fb} O {offers}");
            let Repr::Open(o) = Packet::parse(&b).unwrap().repr else {
                panic!("not an OPEN")
            };
            assert_eq!((o.rate_feedback, o.receiver_offers), (fb, offers));
        }
    }

    #[test]
    fn the_path_probe_is_bit_4_and_its_padding_extends_the_client_area() {
        let mut p = open_packet();
        if let Repr::Open(o) = &mut p.repr {
            o.path_probe = true;
            o.padded_len = 1449; // rounded up to 1452, RFC 998 §8's multiple of 4
        }
        assert_eq!(p.buffer_len(), 1452);
        let mut b = vec![0xaau8; 1452];
        p.emit(&mut b).unwrap();
        assert_eq!(b[32..34], [0x00, 0x13]);
        assert_eq!(b[4..6], 1452u16.to_be_bytes(), "Length counts the padding");
        assert_eq!(&b[36..40], b"ab\0\0");
        assert!(b[40..].iter().all(|&x| x == 0), "padding is NULs");
        let Repr::Open(o) = Packet::parse(&b).unwrap().repr else {
            panic!("not an OPEN")
        };
        assert_eq!(
            (o.path_probe, o.padded_len, o.client),
            (true, 1452, &b"ab"[..])
        );
        // An older parser reads the padded OPEN as the plain one: the fixed
        // fields and the string are where they were.
        let plain = open_packet();
        let Repr::Open(q) = plain.repr else { panic!() };
        assert_eq!(
            (o.uid, o.data_packet_size, o.client),
            (q.uid, q.data_packet_size, q.client)
        );
        // An unpadded OPEN parses with no padding, so it emits as it came.
        let Repr::Open(o) = Packet::parse(&OPEN).unwrap().repr else {
            panic!("not an OPEN")
        };
        assert_eq!((o.path_probe, o.padded_len), (false, 0));
    }

    #[test]
    fn client_string_without_nul_is_rejected() {
        let mut b = OPEN;
        b[38] = b'c';
        b[39] = b'd';
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadString));
    }

    #[test]
    fn short_open_is_rejected() {
        // A 36-byte OPEN has no room for the string's NUL.
        let mut b = OPEN[..36].to_vec();
        b[5] = 36;
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
        assert_eq!(OpenRepr::parse(&b), Err(Error::BadLength));
    }

    #[test]
    fn client_with_nul_does_not_emit() {
        let mut p = open_packet();
        if let Repr::Open(o) = &mut p.repr {
            o.client = b"a\0b";
        }
        assert_eq!(p.emit(&mut [0u8; 64]), Err(Error::BadString));
    }

    #[test]
    fn display() {
        assert_eq!(
            open_packet().to_string(),
            "OPEN 1000>2000 uid=0x12345678 mode=WRITE bufsize=16384 xfer=1000000 pktsize=1438 \
             burst=5/100ms death=60s maxout=2 C client=\"ab\""
        );
    }
}
