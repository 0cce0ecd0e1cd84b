//! Helpers shared by the in-file unit tests.

use crate::{Error, Packet};

/// The textbook Internet checksum, 16 bits at a time with a carry fold per step: the reference
/// the fast [`checksum`](crate::checksum) is compared against.
pub(crate) fn naive_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut i = 0;
    while i < data.len() {
        let hi = u32::from(data[i]);
        let lo = if i + 1 < data.len() {
            u32::from(data[i + 1])
        } else {
            0
        };
        sum += (hi << 8) | lo;
        sum = (sum & 0xffff) + (sum >> 16);
        i += 2;
    }
    !(sum as u16)
}

/// Checks a hand-written packet both ways: `bytes` parses to `expected`, and `expected` emits
/// exactly `bytes`. `covered` is the end of the checksummed region and `sum` the checksum,
/// worked out independently (and re-checked here with the naive reference).
pub(crate) fn check_exact(bytes: &[u8], expected: &Packet<'_>, covered: usize, sum: u16) {
    assert_eq!(
        u16::from_be_bytes([bytes[0], bytes[1]]),
        sum,
        "checksum bytes"
    );
    assert_eq!(
        naive_checksum(&bytes[2..covered]),
        sum,
        "reference checksum"
    );
    assert_eq!(Packet::parse(bytes), Ok(*expected), "parse");
    assert_eq!(expected.buffer_len(), bytes.len(), "buffer_len");

    let mut out = vec![0xaau8; bytes.len() + 8];
    let n = expected.emit(&mut out).expect("emit");
    assert_eq!(n, bytes.len());
    assert_eq!(&out[..n], bytes, "emit");
    assert!(
        out[n..].iter().all(|&b| b == 0xaa),
        "emit wrote past its length"
    );

    let mut short = vec![0u8; bytes.len() - 1];
    assert_eq!(expected.emit(&mut short), Err(Error::BufferTooSmall));
}
