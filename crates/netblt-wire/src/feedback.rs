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
//! |      Echo Packet Number       |          Train Rate           |
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
//!
//! Train Rate (decision R29; the field was reserved and zero before, and a
//! reader ignored it, so either side may be older): the data rate at which
//! the latest run of back-to-back packets arrived, in kb/s of data, as an
//! 11-bit mantissa shifted left by a 5-bit exponent (the top bits), rounded
//! down; 0 when none was measured. Packets a sender releases together are
//! spread by the path's slowest link, so the run's spacing shows that
//! link's rate a round trip into a transfer, before the delivery rate can
//! (UDT's and PCC's packet-pair estimate).

use crate::field::{self, Field};
use crate::{Error, FEEDBACK_LEN};

mod fields {
    use super::Field;
    pub(super) const ECHO_BUFFER: Field = 12..16;
    pub(super) const ECHO_PACKET: Field = 16..18;
    pub(super) const TRAIN: Field = 18..20;
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
    /// The rate of the latest run of back-to-back packets, kb/s of data (0:
    /// none). Sent rounded down to 11 significant bits
    /// ([`encode_train_kbps`]).
    pub train_kbps: u64,
}

/// `kbps` as the Train Rate field: an 11-bit mantissa and a 5-bit
/// exponent, rounded down (within 1/1024 below), saturating.
pub fn encode_train_kbps(kbps: u64) -> u16 {
    let mut e = 0u32;
    while e < 31 && (kbps >> e) >= 2048 {
        e += 1;
    }
    let m = (kbps >> e).min(2047) as u16;
    ((e as u16) << 11) | m
}

/// The Train Rate field's value in kb/s.
pub fn decode_train_kbps(v: u16) -> u64 {
    u64::from(v & 0x7ff) << (v >> 11)
}

impl FeedbackRepr {
    /// Parses a FEEDBACK body from `packet`, which must be exactly 40 bytes
    /// ([`Error::BadLength`] otherwise).
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
            train_kbps: decode_train_kbps(field::get_u16(packet, fields::TRAIN)),
        })
    }

    /// Writes the body (bytes 12..40) into `packet`, which must be exactly 40 bytes.
    pub fn emit(&self, packet: &mut [u8]) -> Result<(), Error> {
        if packet.len() != FEEDBACK_LEN {
            return Err(Error::BufferTooSmall);
        }
        field::set_u32(packet, fields::ECHO_BUFFER, self.echo_buffer);
        field::set_u16(packet, fields::ECHO_PACKET, self.echo_packet);
        field::set_u16(packet, fields::TRAIN, encode_train_kbps(self.train_kbps));
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
        0x2a, 0xbf,             // checksum (whole packet)
        0x01,                   // version 1
        0x0c,                   // type 12 FEEDBACK
        0x00, 0x28,             // length 40
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        0x00, 0x00, 0x00, 0x03, // echo buffer 3
        0x00, 0x07,             // echo packet 7
        0x35, 0xcc,             // train: 1484 << 6 kb/s
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
                train_kbps: 94_976,
            }),
        };
        check_exact(&FEEDBACK, &p, 40, 0x2abf);
    }

    #[test]
    fn train_rate_is_rounded_down_to_eleven_bits() {
        assert_eq!(encode_train_kbps(0), 0);
        assert_eq!(decode_train_kbps(encode_train_kbps(2047)), 2047);
        assert_eq!(encode_train_kbps(95_000), 0x35cc);
        assert_eq!(decode_train_kbps(0x35cc), 94_976);
        for k in [
            1u64,
            2048,
            99_999,
            1_000_000,
            40_000_000,
            u64::from(u32::MAX),
        ] {
            let d = decode_train_kbps(encode_train_kbps(k));
            assert!(
                d <= k && d as f64 >= k as f64 * (1.0 - 1.0 / 1024.0),
                "{k} -> {d}"
            );
        }
        // Beyond 2047 << 31 kb/s it saturates.
        assert_eq!(decode_train_kbps(encode_train_kbps(u64::MAX)), 2047 << 31);
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
