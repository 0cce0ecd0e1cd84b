//! CONTROL (type 9): the data receiver's packet, carrying GO, OK and RESEND messages.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                    common header (12 bytes)                   |
//! +---------------------------------------------------------------+
//! | message | message | ... (each a multiple of 4 bytes) up to Length
//! +---------------------------------------------------------------+
//! ```
//!
//! RFC 998 §8: "each CONTROL packet can contain an arbitrary number of control messages (GO,
//! OK, or RESEND), each with its own sequence number", "Followed by any number of messages, each
//! of which is longword aligned". There is no count field, so the messages must tile the area
//! from offset 12 to Length exactly.
//!
//! Validation happens once: [`ControlRepr::from_message_area`] (and so
//! [`Packet::parse`](crate::Packet::parse)) walks the whole area and rejects the packet with
//! [`Error::BadControl`] on an unknown message type, a message running past Length, a RESEND
//! count that does not fit, or a remainder too short for a message. RFC 998 does not say what
//! to do with a malformed CONTROL packet (notes §Z21); rejecting it whole, before any message
//! is acted on, means the engine never half-applies a packet. After that, [`ControlIter`]
//! cannot fail. A CONTROL packet with zero messages is valid.
//!
//! Building goes through [`ControlWriter`], which appends owned [`ControlMessage`]s into the
//! caller's buffer while they fit.
//!
//! Never-panic contract: nothing in this module panics, on any input or any buffer size.

mod message;
mod writer;

use core::fmt;
use core::iter::FusedIterator;

pub use message::{ControlMessage, ControlMessageRef, PacketList};
pub use writer::ControlWriter;

use crate::Error;

/// The validated message area of a CONTROL packet (bytes 12..Length).
///
/// Equality compares the messages, not the raw bytes: two areas that differ only in their
/// alignment padding (ignored on parse) are equal.
#[derive(Clone, Copy)]
pub struct ControlRepr<'a> {
    /// Known to tile exactly into valid messages.
    area: &'a [u8],
}

impl<'a> ControlRepr<'a> {
    /// Validates a message area (the bytes of a CONTROL packet from offset 12 to Length).
    pub fn from_message_area(area: &'a [u8]) -> Result<Self, Error> {
        let mut rest = area;
        while !rest.is_empty() {
            let (_, len) = message::parse_one(rest)?;
            rest = rest.get(len..).ok_or(Error::BadControl)?;
        }
        Ok(ControlRepr { area })
    }

    /// Iterates over the messages in packet order.
    pub fn iter(&self) -> ControlIter<'a> {
        ControlIter { rest: self.area }
    }

    /// The raw message area, as received (padding bytes included as they were on the wire).
    pub fn message_area(&self) -> &'a [u8] {
        self.area
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether the packet holds no messages.
    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// The area's length on the wire (equal to the raw area's length: messages tile it).
    pub(crate) fn area_len(&self) -> usize {
        self.area.len()
    }

    /// Re-encodes the messages, padding zeroed, into `out`, which must be exactly
    /// [`area_len`](Self::area_len) long.
    pub(crate) fn emit(&self, out: &mut [u8]) -> Result<(), Error> {
        if out.len() != self.area.len() {
            return Err(Error::BufferTooSmall);
        }
        let mut at = 0;
        for msg in self.iter() {
            let dst = out.get_mut(at..).ok_or(Error::BufferTooSmall)?;
            at += msg.emit(dst)?;
        }
        Ok(())
    }
}

impl PartialEq for ControlRepr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for ControlRepr<'_> {}

impl fmt::Debug for ControlRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Display for ControlRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, msg) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{msg}")?;
        }
        Ok(())
    }
}

impl<'a> IntoIterator for ControlRepr<'a> {
    type Item = ControlMessageRef<'a>;
    type IntoIter = ControlIter<'a>;

    fn into_iter(self) -> ControlIter<'a> {
        self.iter()
    }
}

/// Iterator over the messages of a [`ControlRepr`]; yields [`ControlMessageRef`]s.
#[derive(Debug, Clone)]
pub struct ControlIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for ControlIter<'a> {
    type Item = ControlMessageRef<'a>;

    fn next(&mut self) -> Option<ControlMessageRef<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        match message::parse_one(self.rest) {
            Ok((msg, len)) => {
                self.rest = self.rest.get(len..).unwrap_or(&[]);
                Some(msg)
            }
            Err(_) => {
                // Unreachable: the area was validated when the ControlRepr was made.
                debug_assert!(false, "validated control area failed to parse");
                self.rest = &[];
                None
            }
        }
    }
}

impl FusedIterator for ControlIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::check_exact;
    use crate::{Packet, Repr};

    #[rustfmt::skip]
    const CONTROL: [u8; 56] = [
        0xed, 0x90,             // checksum (over all 56 bytes)
        0x01,                   // version 1
        0x09,                   // type CONTROL
        0x00, 0x38,             // length 56
        0x07, 0xd0,             // local port 2000 (the data receiver)
        0x03, 0xe8,             // foreign port 1000
        0x00, 0x00,             // padding
        // GO, 8 bytes
        0x00,                   //   type GO
        0x00,                   //   word padding
        0x00, 0x01,             //   sequence number 1
        0x00, 0x00, 0x00, 0x01, //   buffer number 1
        // OK, 16 bytes
        0x01,                   //   type OK
        0x00,                   //   word padding
        0x00, 0x02,             //   sequence number 2
        0x00, 0x00, 0x00, 0x01, //   buffer number 1
        0x00, 0x05,             //   new offered burst size 5
        0x00, 0x64,             //   new offered burst rate 100 ms
        0x01, 0xf4,             //   control timer 500 ms
        0x00, 0x00,             //   padding
        // RESEND, 12 + 2*3 = 18 bytes, padded to 20
        0x02,                   //   type RESEND
        0x00,                   //   word padding
        0x00, 0x03,             //   sequence number 3
        0x00, 0x00, 0x00, 0x02, //   buffer number 2
        0x00, 0x03,             //   number of missing packets 3
        0x00, 0x00,             //   padding
        0x00, 0x01,             //   packet 1
        0x00, 0x04,             //   packet 4
        0x00, 0x07,             //   packet 7
        0x00, 0x00,             //   padding (odd count)
    ];

    fn messages() -> Vec<ControlMessage> {
        vec![
            ControlMessage::Go { seq: 1, buffer: 1 },
            ControlMessage::Ok {
                seq: 2,
                buffer: 1,
                burst_size: 5,
                burst_interval_ms: 100,
                control_timer_ms: 500,
            },
            ControlMessage::Resend {
                seq: 3,
                buffer: 2,
                packets: vec![1, 4, 7],
            },
        ]
    }

    fn reseal(b: &mut [u8]) {
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
    }

    #[test]
    fn control_bytes_parse_and_emit() {
        let repr = ControlRepr::from_message_area(&CONTROL[12..]).unwrap();
        let p = Packet {
            local_port: 2000,
            foreign_port: 1000,
            repr: Repr::Control(repr),
        };
        check_exact(&CONTROL, &p, 56, 0xed90);
        let owned: Vec<_> = repr.iter().map(|m| m.to_owned()).collect();
        assert_eq!(owned, messages());
        assert_eq!(repr.len(), 3);
        assert_eq!(
            p.to_string(),
            "CONTROL 2000>1000 GO(seq=1 buf=1) OK(seq=2 buf=1 burst=5/100ms ctl=500ms) \
             RESEND(seq=3 buf=2 pkts=[1,4,7])"
        );
    }

    #[test]
    fn control_writer_builds_the_same_bytes() {
        let mut buf = [0xaau8; 64];
        let mut w = ControlWriter::new(&mut buf).unwrap();
        assert!(w.is_empty());
        for m in messages() {
            w.push(&m).unwrap();
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.finish(2000, 1000), 56);
        assert_eq!(&buf[..56], &CONTROL);
        assert_eq!(&buf[56..], &[0xaa; 8]);
    }

    #[test]
    fn each_message_bytes() {
        let mut out = [0xaau8; 24];
        let go = ControlMessage::Go { seq: 1, buffer: 1 };
        assert_eq!(go.buffer_len(), 8);
        assert_eq!(go.emit(&mut out), Ok(8));
        assert_eq!(&out[..8], &CONTROL[12..20]);

        let ok = &messages()[1];
        assert_eq!(ok.buffer_len(), 16);
        assert_eq!(ok.emit(&mut out), Ok(16));
        assert_eq!(&out[..16], &CONTROL[20..36]);

        let resend = &messages()[2];
        assert_eq!(resend.buffer_len(), 20);
        assert_eq!(resend.emit(&mut out), Ok(20));
        assert_eq!(&out[..20], &CONTROL[36..56]);
        assert_eq!(resend.emit(&mut out[..19]), Err(Error::BufferTooSmall));

        // An even count needs no padding: 12 + 2*2 = 16.
        let even = ControlMessage::Resend {
            seq: 9,
            buffer: 9,
            packets: vec![0xabcd, 0x0102],
        };
        assert_eq!(even.buffer_len(), 16);
        assert_eq!(even.emit(&mut out), Ok(16));
        assert_eq!(
            &out[..16],
            &[2, 0, 0, 9, 0, 0, 0, 9, 0, 2, 0, 0, 0xab, 0xcd, 0x01, 0x02]
        );
    }

    #[test]
    fn resend_packet_list_access() {
        let repr = ControlRepr::from_message_area(&CONTROL[12..]).unwrap();
        let Some(ControlMessageRef::Resend { packets, .. }) = repr.iter().nth(2) else {
            panic!("third message is not a RESEND")
        };
        assert_eq!(packets.len(), 3);
        assert!(!packets.is_empty());
        assert_eq!(packets.get(0), Some(1));
        assert_eq!(packets.get(2), Some(7));
        assert_eq!(packets.get(3), None);
        assert_eq!(packets.get(usize::MAX), None);
        assert_eq!(packets.iter().collect::<Vec<_>>(), vec![1, 4, 7]);
    }

    #[test]
    fn empty_control_is_valid() {
        #[rustfmt::skip]
        let bytes = [
            0xf3, 0x32, // checksum
            0x01, 0x09, // version 1, CONTROL
            0x00, 0x0c, // length 12
            0x07, 0xd0, // local port 2000
            0x03, 0xe8, // foreign port 1000
            0x00, 0x00, // padding
        ];
        let p = Packet::parse(&bytes).unwrap();
        let Repr::Control(c) = p.repr else {
            panic!("not CONTROL")
        };
        assert!(c.is_empty());
        assert_eq!(c.iter().count(), 0);
        check_exact(&bytes, &p, 12, 0xf332);
        let mut buf = [0u8; 12];
        assert_eq!(ControlWriter::new(&mut buf).unwrap().finish(2000, 1000), 12);
        assert_eq!(buf, bytes);
    }

    #[test]
    fn unknown_message_type_is_rejected() {
        let mut b = CONTROL;
        b[20] = 3; // the OK becomes type 3
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadControl));
    }

    #[test]
    fn bad_tiling_is_rejected() {
        // Drop the last 4 bytes: the RESEND now runs past Length.
        let mut b = CONTROL[..52].to_vec();
        b[5] = 52;
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadControl));
        // 4 stray zero bytes after the last message: a GO needs 8, so the area does not tile.
        let mut b = CONTROL.to_vec();
        b.extend_from_slice(&[0; 4]);
        b[5] = 60;
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadControl));
        // Length 14: not a multiple of 4.
        let mut b = CONTROL[..16].to_vec();
        b[5] = 14;
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
    }

    #[test]
    fn resend_count_overflow_is_rejected() {
        let mut b = CONTROL;
        b[44..46].copy_from_slice(&4u16.to_be_bytes()); // 4 packets need 20 bytes: fits exactly
        reseal(&mut b);
        assert!(Packet::parse(&b).is_ok());
        b[44..46].copy_from_slice(&5u16.to_be_bytes()); // 5 packets need 24 bytes: overflows
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadControl));
        b[44..46].copy_from_slice(&u16::MAX.to_be_bytes());
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadControl));
    }

    #[test]
    fn padding_is_ignored_and_equality_is_by_message() {
        let mut b = CONTROL;
        b[13] = 0xff; // GO word padding
        b[34] = 0xff; // OK padding
        b[54] = 0xff; // RESEND list padding
        reseal(&mut b);
        let a = Packet::parse(&CONTROL).unwrap();
        let p = Packet::parse(&b).unwrap();
        assert_eq!(a, p);
        // Emitting zeroes the padding again.
        let mut out = [0u8; 56];
        assert_eq!(p.emit(&mut out), Ok(56));
        assert_eq!(out, CONTROL);
    }

    #[test]
    fn writer_stops_when_full() {
        let mut buf = [0u8; 12 + 8 + 12];
        let mut w = ControlWriter::new(&mut buf).unwrap();
        w.push(&ControlMessage::Go { seq: 1, buffer: 1 }).unwrap();
        assert_eq!(w.remaining(), 12);
        let ok = &messages()[1];
        assert_eq!(w.push(ok), Err(Error::BufferTooSmall));
        assert_eq!(w.len(), 1);
        w.push(&ControlMessage::Resend {
            seq: 3,
            buffer: 2,
            packets: vec![],
        })
        .unwrap();
        assert_eq!(w.remaining(), 0);
        assert_eq!(w.finish(1, 2), 32);
        let p = Packet::parse(&buf).unwrap();
        let Repr::Control(c) = p.repr else {
            panic!("not CONTROL")
        };
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn writer_rejects_tiny_buffer_and_huge_resend() {
        assert!(matches!(
            ControlWriter::new(&mut [0u8; 11]),
            Err(Error::BufferTooSmall)
        ));
        let mut buf = vec![0u8; 200_000];
        let mut w = ControlWriter::new(&mut buf).unwrap();
        let huge = ControlMessage::Resend {
            seq: 1,
            buffer: 1,
            packets: vec![0; 65_536],
        };
        assert_eq!(w.push(&huge), Err(Error::BadControl));
        assert_eq!(huge.emit(&mut vec![0u8; 200_000]), Err(Error::BadControl));
        // The packet is capped at 65535 bytes even with a bigger buffer.
        let big = ControlMessage::Resend {
            seq: 1,
            buffer: 1,
            packets: vec![0; 40_000],
        };
        assert_eq!(w.push(&big), Err(Error::BufferTooSmall));
        let fits = ControlMessage::Resend {
            seq: 1,
            buffer: 1,
            packets: vec![7; 32_754],
        };
        w.push(&fits).unwrap();
        let n = w.finish(1, 2);
        assert_eq!(n, 65_532);
        assert!(Packet::parse(&buf[..n]).is_ok());
    }

    #[test]
    fn display_truncates_long_resend() {
        let m = ControlMessage::Resend {
            seq: 1,
            buffer: 2,
            packets: (0..10).collect(),
        };
        assert_eq!(
            m.to_string(),
            "RESEND(seq=1 buf=2 pkts=[0,1,2,3,4,5,6,7,...+2])"
        );
    }
}
