//! The Internet checksum, as RFC 998 uses it.
//!
//! RFC 998 §5.1: "The checksum value is the bitwise negation of the ones-complement sum of the
//! 16-bit words being checksummed." This is the RFC 1071 Internet checksum. We take the words
//! big-endian, pad an odd trailing byte with a zero, and use no pseudo-header. A checksum field
//! inside the covered bytes counts as zero; callers get that by leaving the field out of the
//! slice (it sits at offset 0, so the remaining words keep their 16-bit alignment).
//!
//! [`checksum`] never panics, for any input.

/// Computes the Internet checksum of `data`: the bitwise NOT of the ones-complement sum of its
/// big-endian 16-bit words, an odd trailing byte padded with zero.
///
/// This runs over every DATA header and, with C = 1, every data segment, so it is written to be
/// fast: it adds 64-bit big-endian words into a 128-bit accumulator and folds once at the end.
/// That is the same sum, because 2^16 ≡ 1 (mod 2^16 − 1), hence 2^64 ≡ 1 as well: carries out
/// of any 16-bit boundary wrap around exactly as ones-complement addition requires (RFC 1071 §2).
pub fn checksum(data: &[u8]) -> u16 {
    // 32-bit big-endian words summed into 64 bits cannot overflow below
    // 2^32 words, and the loop vectorizes; short headers (the hot case: a
    // DATA header per packet) pay no wide arithmetic.
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        acc += u64::from(u32::from_be_bytes(
            <[u8; 4]>::try_from(chunk).unwrap_or_default(),
        ));
    }
    // The tail has 0..=3 bytes, left-aligned in a zero-padded word; this pads
    // an odd last byte with zero, too.
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 4];
        if let Some(dst) = word.get_mut(..rest.len()) {
            dst.copy_from_slice(rest);
        }
        acc += u64::from(u32::from_be_bytes(word));
    }
    !fold(acc)
}

/// Folds a wide ones-complement accumulator down to 16 bits with end-around carries.
fn fold(mut acc: u64) -> u16 {
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    // Three folds of a value below 2^33 leave it <= 0xffff.
    acc as u16
}

/// Rounds `n` up to the next multiple of 4, the NETBLT alignment.
///
/// RFC 998 §8: "all packets are a multiple of 4 bytes in length". Saturates near `usize::MAX`
/// instead of overflowing.
pub fn round_up4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_util::naive_checksum as naive;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2, so the checksum is 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&data), 0x220d);
        assert_eq!(naive(&data), 0x220d);
    }

    #[test]
    fn empty_and_zero() {
        assert_eq!(checksum(&[]), 0xffff);
        assert_eq!(checksum(&[0; 13]), 0xffff);
    }

    #[test]
    fn odd_byte_is_padded_with_zero() {
        // One byte 0x12 is the word 0x1200.
        assert_eq!(checksum(&[0x12]), !0x1200);
        assert_eq!(checksum(&[0xab, 0xcd, 0x12]), !(0xabcdu16 + 0x1200));
    }

    #[test]
    fn carries_wrap_around() {
        // 0xffff + 0x0001 = 0x1_0000 -> 0x0001 after the end-around carry.
        assert_eq!(checksum(&[0xff, 0xff, 0x00, 0x01]), !0x0001);
        // All-ones data of every length 0..64 matches the reference.
        for n in 0..64 {
            let data = vec![0xffu8; n];
            assert_eq!(checksum(&data), naive(&data), "n = {n}");
        }
    }

    #[test]
    fn matches_naive_on_pattern() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for end in [0, 1, 2, 7, 8, 9, 15, 16, 17, 1990, 65_535, 70_000] {
            assert_eq!(checksum(&data[..end]), naive(&data[..end]), "end = {end}");
            assert_eq!(checksum(&data[3..end.max(3)]), naive(&data[3..end.max(3)]));
        }
    }

    #[test]
    fn round_up4_values() {
        assert_eq!(round_up4(0), 0);
        assert_eq!(round_up4(1), 4);
        assert_eq!(round_up4(4), 4);
        assert_eq!(round_up4(1990 + 24), 2016);
        assert_eq!(round_up4(65_535), 65_536);
        assert_eq!(round_up4(usize::MAX), usize::MAX & !3);
    }
}
