//! FEEDBACK (type 12): the data receiver's delivery report for rate control.
//!
//! Not part of RFC 998. RFC 1030 §8 names "dynamic selection and control of
//! NETBLT's transmission parameters" as NETBLT's open problem and says the
//! processes "will use end-to-end information in order to make transmission
//! rate decisions". RFC 998's own feedback (OK, once per buffer) is too rare
//! for that, so the data receiver also reports, a few times per round trip,
//! what it has seen arrive. The extension is negotiated with the F flag of
//! OPEN/RESPONSE ([`OpenRepr::rate_feedback`](crate::OpenRepr)), so a plain
//! RFC 998 peer never receives one. See docs/decisions.md, "R1".
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                 12-byte common header (type 12)               |
//! +---------------------------------------------------------------+
//! |                      Echo Buffer Number                       |
//! +-------------------------------+-------------------------------+
//! |      Echo Packet Number       |       Flags (reserved, 0)     |
//! +-------------------------------+-------------------------------+
//! |                     Hold Time (microseconds)                  |
//! +---------------------------------------------------------------+
//! |                 Data Packets Arrived (cumulative)             |
//! +---------------------------------------------------------------+
//! |                  Data Bytes Arrived (cumulative)              |
//! +---------------------------------------------------------------+
//! |                  Packets Lost (cumulative)                    |
//! +---------------------------------------------------------------+
//! |                  Feedback Sequence Number                     |
//! +---------------------------------------------------------------+
//! ```
//!
//! The cumulative counters wrap modulo 2^32; a reader takes differences.

use crate::field::{self, Field};
use crate::{Error, FEEDBACK_LEN};

mod fields {
    use super::Field;
    pub(super) const ECHO_BUFFER: Field = 12..16;
    pub(super) const ECHO_PACKET: Field = 16..18;
    pub(super) const FLAGS: Field = 18..20;
    pub(super) const HOLD_US: Field = 20..24;
    pub(super) const ARRIVED_PACKETS: Field = 24..28;
    pub(super) const ARRIVED_BYTES: Field = 28..32;
    pub(super) const LOST_PACKETS: Field = 32..36;
    pub(super) const SEQ: Field = 36..40;
}

/// The body of a FEEDBACK packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeedbackRepr {
    /// Buffer number of the most recent DATA/LDATA packet that arrived.
    pub echo_buffer: u32,
    /// Its packet number.
    pub echo_packet: u16,
    /// Microseconds from that packet's arrival to this FEEDBACK's sending,
    /// so the data sender can take it out of its round-trip sample.
    pub hold_us: u32,
    /// Every DATA/LDATA packet that parsed, duplicates included (wraps).
    pub arrived_packets: u32,
    /// Their data bytes (wraps).
    pub arrived_bytes: u32,
    /// Distinct packets found missing so far (wraps).
    pub lost_packets: u32,
    /// One more for each FEEDBACK sent: the data sender ignores older ones.
    pub seq: u32,
}

impl FeedbackRepr {
    /// Parses a FEEDBACK body from `packet`, which must be exactly 40 bytes
    /// ([`Error::BadLength`] otherwise). The reserved flags are ignored.
    pub fn parse(packet: &[u8]) -> Result<Self, Error> {
        if packet.len() != FEEDBACK_LEN {
            return Err(Error::BadLength);
        }
        Ok(FeedbackRepr {
            echo_buffer: field::get_u32(packet, fields::ECHO_BUFFER),
            echo_packet: field::get_u16(packet, fields::ECHO_PACKET),
            hold_us: field::get_u32(packet, fields::HOLD_US),
            arrived_packets: field::get_u32(packet, fields::ARRIVED_PACKETS),
            arrived_bytes: field::get_u32(packet, fields::ARRIVED_BYTES),
            lost_packets: field::get_u32(packet, fields::LOST_PACKETS),
            seq: field::get_u32(packet, fields::SEQ),
        })
    }

    /// Writes the body (bytes 12..40) into `packet`, which must be exactly 40 bytes.
    pub fn emit(&self, packet: &mut [u8]) -> Result<(), Error> {
        if packet.len() != FEEDBACK_LEN {
            return Err(Error::BufferTooSmall);
        }
        field::set_u32(packet, fields::ECHO_BUFFER, self.echo_buffer);
        field::set_u16(packet, fields::ECHO_PACKET, self.echo_packet);
        field::zero(packet, fields::FLAGS);
        field::set_u32(packet, fields::HOLD_US, self.hold_us);
        field::set_u32(packet, fields::ARRIVED_PACKETS, self.arrived_packets);
        field::set_u32(packet, fields::ARRIVED_BYTES, self.arrived_bytes);
        field::set_u32(packet, fields::LOST_PACKETS, self.lost_packets);
        field::set_u32(packet, fields::SEQ, self.seq);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::check_exact;
    use crate::{Packet, Repr};

    #[rustfmt::skip]
    const FEEDBACK: [u8; 40] = [
        0x60, 0x8b,             // checksum (whole packet)
        0x01,                   // version 1
        0x0c,                   // type 12 FEEDBACK
        0x00, 0x28,             // length 40
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        0x00, 0x00, 0x00, 0x03, // echo buffer 3
        0x00, 0x07,             // echo packet 7
        0x00, 0x00,             // flags
        0x00, 0x00, 0x01, 0xf4, // hold 500 us
        0x00, 0x00, 0x10, 0x00, // 4096 packets arrived
        0x00, 0x57, 0x80, 0x00, // 5_734_400 bytes arrived
        0x00, 0x00, 0x00, 0x09, // 9 lost
        0x00, 0x00, 0x00, 0x2a, // feedback 42
    ];

    #[test]
    fn feedback_is_byte_exact() {
        let p = Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::Feedback(FeedbackRepr {
                echo_buffer: 3,
                echo_packet: 7,
                hold_us: 500,
                arrived_packets: 4096,
                arrived_bytes: 5_734_400,
                lost_packets: 9,
                seq: 42,
            }),
        };
        check_exact(&FEEDBACK, &p, 40, 0x608b);
    }

    #[test]
    fn feedback_with_wrong_length_is_rejected() {
        assert_eq!(FeedbackRepr::parse(&FEEDBACK[..36]), Err(Error::BadLength));
        let mut b = FEEDBACK.to_vec();
        b.extend_from_slice(&[0; 4]);
        b[5] = 44;
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
    }
}
