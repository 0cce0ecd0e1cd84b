//! 16-bit control-message sequence numbers, extended to 64 bits inside the engine.
//!
//! RFC 998 §5.2.1: "Each control message includes a sequence number which
//! starts at one and increases by one for each control message sent." A long
//! transfer sends more than 65535 messages (a GO and an OK per buffer), so the
//! wire value wraps. The engine counts in u64 and only the low 16 bits travel;
//! a received value is expanded to the u64 nearest to the one expected, as QUIC
//! decodes packet numbers (RFC 9000 §A.3). This is sound while fewer than 32768
//! messages are unacknowledged, which the control FIFO guarantees in practice.

/// Expands a 16-bit wire value to the 64-bit sequence number nearest `expected`.
pub(crate) fn expand(wire: u16, expected: u64) -> u64 {
    const WIN: u64 = 1 << 16;
    const HALF: u64 = WIN / 2;
    let candidate = (expected & !(WIN - 1)) | u64::from(wire);
    if candidate + HALF <= expected && candidate < u64::MAX - WIN {
        candidate + WIN
    } else if candidate > expected + HALF && candidate >= WIN {
        candidate - WIN
    } else {
        candidate
    }
}

/// The 16 bits of `seq` that travel on the wire.
pub(crate) fn truncate(seq: u64) -> u16 {
    (seq & 0xffff) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn expands_across_wrap() {
        assert_eq!(expand(1, 1), 1);
        assert_eq!(expand(0xffff, 0x1_0001), 0xffff);
        assert_eq!(expand(2, 0xfffe), 0x1_0002);
        assert_eq!(expand(0, 0), 0);
    }

    proptest! {
        #[test]
        fn round_trips_near_expected(expected in 0u64..(1 << 40), delta in -30000i64..30000) {
            let actual = expected as i64 + delta;
            prop_assume!(actual >= 0);
            let actual = actual as u64;
            prop_assert_eq!(expand(truncate(actual), expected), actual);
        }
    }
}
