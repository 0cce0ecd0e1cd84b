//! NUL-terminated, longword-aligned strings: the OPEN/RESPONSE client string and the
//! QUIT/ABORT/REFUSED reason.
//!
//! RFC 998 §8: "All arbitrary-length string fields are terminated with at least one null byte,
//! with extra null bytes added at the end to create a field that is a multiple of 4 bytes long."
//!
//! ```text
//! QUIT (3), ABORT (5), REFUSED (10):
//! +-------------------------------+-------------------------------+
//! |                    common header (12 bytes)                   |
//! +-------------------------------+-------------------------------+
//! | Reason for QUIT/ABORT/REFUSE...   NUL, NUL padding to 4       |
//! +---------------------------------------------------------------+
//! ```
//!
//! The string area is counted in Length. A string value is the bytes before the first NUL;
//! whatever follows that NUL is padding and ignored on parse. Never-panic contract: every
//! function here bounds-checks and returns [`Error`] instead.

use crate::{round_up4, Error};

/// Returns the bytes before the first NUL in `area`; [`Error::BadString`] if there is none.
pub(crate) fn parse(area: &[u8]) -> Result<&[u8], Error> {
    let end = area.iter().position(|&b| b == 0).ok_or(Error::BadString)?;
    area.get(..end).ok_or(Error::BadString)
}

/// The size of the string area holding `s`: at least one NUL, padded to a multiple of 4.
pub(crate) fn area_len(s: &[u8]) -> usize {
    round_up4(s.len().saturating_add(1))
}

/// Checks that `s` can be sent: it must not contain a NUL, which would cut it short.
pub(crate) fn check(s: &[u8]) -> Result<(), Error> {
    if s.contains(&0) {
        Err(Error::BadString)
    } else {
        Ok(())
    }
}

/// Writes `s` followed by NULs to fill `area` exactly. `area` must be at least `s.len() + 1`
/// long; callers size it with [`area_len`] and have run [`check`].
pub(crate) fn emit(s: &[u8], area: &mut [u8]) -> Result<(), Error> {
    check(s)?;
    if area.len() <= s.len() {
        return Err(Error::BufferTooSmall);
    }
    let (head, tail) = area.split_at_mut(s.len());
    head.copy_from_slice(s);
    tail.fill(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_takes_bytes_before_first_nul() {
        assert_eq!(parse(b"abc\0"), Ok(&b"abc"[..]));
        assert_eq!(parse(b"\0\0\0\0"), Ok(&b""[..]));
        // Bytes after the first NUL are padding, even if not zero.
        assert_eq!(parse(b"ab\0x"), Ok(&b"ab"[..]));
        assert_eq!(parse(b"abcd"), Err(Error::BadString));
        assert_eq!(parse(b""), Err(Error::BadString));
    }

    #[test]
    fn area_len_always_has_a_nul() {
        assert_eq!(area_len(b""), 4);
        assert_eq!(area_len(b"abc"), 4);
        assert_eq!(area_len(b"abcd"), 8);
    }

    #[test]
    fn emit_pads_and_rejects_nul() {
        let mut area = [0xffu8; 8];
        emit(b"hello", &mut area).unwrap();
        assert_eq!(&area, b"hello\0\0\0");
        assert_eq!(emit(b"a\0b", &mut area), Err(Error::BadString));
        assert_eq!(emit(b"abcd", &mut area[..4]), Err(Error::BufferTooSmall));
    }
}

#[cfg(test)]
mod packet_tests {
    //! Byte-exact tests for the string-carrying packets: QUIT, ABORT, REFUSED.
    use crate::test_util::check_exact;
    use crate::{Error, Packet, Repr};

    #[rustfmt::skip]
    const QUIT: [u8; 16] = [
        0x2b, 0xbb,             // checksum
        0x01,                   // version 1
        0x03,                   // type QUIT
        0x00, 0x10,             // length 16
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        b'b', b'y', b'e', 0x00, // reason "bye" + NUL (already 4-aligned)
    ];

    #[rustfmt::skip]
    const ABORT: [u8; 20] = [
        0x2d, 0xea,             // checksum
        0x01,                   // version 1
        0x05,                   // type ABORT
        0x00, 0x14,             // length 20
        0x03, 0xe8,             // local port 1000
        0x07, 0xd0,             // foreign port 2000
        0x00, 0x00,             // padding
        b't', b'i', b'm', b'e', // reason "timeout"
        b'o', b'u', b't', 0x00, //   + NUL
    ];

    #[rustfmt::skip]
    const REFUSED: [u8; 20] = [
        0x1d, 0x3b,             // checksum
        0x01,                   // version 1
        0x0a,                   // type REFUSED
        0x00, 0x14,             // length 20
        0x07, 0xd0,             // local port 2000
        0x03, 0xe8,             // foreign port 1000
        0x00, 0x00,             // padding
        b'b', b'u', b's', b'y', // reason "busy"
        0x00, 0x00, 0x00, 0x00, //   NUL + 3 pad: a 4-byte string needs a second word
    ];

    #[test]
    fn quit_bytes() {
        let p = Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::Quit { reason: b"bye" },
        };
        check_exact(&QUIT, &p, 16, 0x2bbb);
        assert_eq!(p.to_string(), "QUIT 1000>2000 reason=\"bye\"");
    }

    #[test]
    fn abort_bytes() {
        let p = Packet {
            local_port: 1000,
            foreign_port: 2000,
            repr: Repr::Abort { reason: b"timeout" },
        };
        check_exact(&ABORT, &p, 20, 0x2dea);
    }

    #[test]
    fn refused_bytes() {
        let p = Packet {
            local_port: 2000,
            foreign_port: 1000,
            repr: Repr::Refused { reason: b"busy" },
        };
        check_exact(&REFUSED, &p, 20, 0x1d3b);
    }

    #[test]
    fn reason_without_nul_is_rejected() {
        let mut b = QUIT;
        b[15] = b'!';
        let sum = crate::checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadString));
    }

    #[test]
    fn quit_with_unaligned_length_is_rejected() {
        // Length 15 would be padded to 16 on the wire, but strings are counted whole.
        let mut b = QUIT;
        b[5] = 15;
        let sum = crate::checksum(&b[2..15]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(Error::BadLength));
    }

    #[test]
    fn reason_with_nul_does_not_emit() {
        let p = Packet {
            local_port: 1,
            foreign_port: 2,
            repr: Repr::Abort { reason: b"x\0y" },
        };
        assert_eq!(p.emit(&mut [0u8; 32]), Err(Error::BadString));
    }
}

#[cfg(test)]
mod canonical_tests {
    use crate::{Packet, Repr};

    #[test]
    fn extra_nul_words_are_accepted_and_dropped_on_emit() {
        #[rustfmt::skip]
        let mut b = [
            0x00, 0x00,             // checksum, filled in below
            0x01, 0x03,             // version 1, QUIT
            0x00, 0x14,             // length 20
            0x03, 0xe8, 0x07, 0xd0, // ports 1000 > 2000
            0x00, 0x00,             // padding
            b'b', b'y', b'e', 0x00, // "bye" + NUL
            0x00, 0x00, 0x00, 0x00, // a whole extra word of NULs
        ];
        let sum = crate::test_util::naive_checksum(&b[2..]);
        b[..2].copy_from_slice(&sum.to_be_bytes());
        let p = Packet::parse(&b).unwrap();
        assert_eq!(p.repr, Repr::Quit { reason: b"bye" });
        assert_eq!(p.buffer_len(), 16);
    }
}
