//! Rejection tests over one valid sample of every packet type: each kind of damage is caught
//! with the documented error.

mod common;

use common::{reseal, samples};
use netblt_wire::{Error, Packet, PacketType, DATA_HEADER_LEN, HEADER_LEN};

#[test]
fn samples_are_valid() {
    for (ty, built) in samples() {
        let bytes = built.bytes();
        let p = Packet::parse(&bytes).unwrap_or_else(|e| panic!("{ty}: {e}"));
        assert_eq!(p.repr.packet_type(), ty);
        assert_eq!(p, built.packet());
    }
}

#[test]
fn truncated() {
    for (ty, built) in samples() {
        let bytes = built.bytes();
        for n in 0..HEADER_LEN {
            assert_eq!(
                Packet::parse(&bytes[..n]),
                Err(Error::Truncated),
                "{ty} cut to {n}"
            );
        }
        // Cut by whole words, so the length is a plausible padded size but below Length.
        let mut n = bytes.len();
        while n > HEADER_LEN {
            n -= 4;
            assert_eq!(
                Packet::parse(&bytes[..n]),
                Err(Error::Truncated),
                "{ty} cut to {n}"
            );
        }
    }
}

#[test]
fn wrong_length_field() {
    for (ty, built) in samples() {
        let mut bytes = built.bytes();
        let len = u16::from_be_bytes([bytes[4], bytes[5]]);
        // Below the minimum for the type (and no longer matching the buffer size).
        for bad in [0u16, 4, 8, 11] {
            bytes[4..6].copy_from_slice(&bad.to_be_bytes());
            reseal(&mut bytes);
            assert_eq!(
                Packet::parse(&bytes),
                Err(Error::BadLength),
                "{ty} Length {bad}"
            );
        }
        // Length claims more than the buffer holds.
        bytes[4..6].copy_from_slice(&(len + 4).to_be_bytes());
        assert_eq!(Packet::parse(&bytes), Err(Error::Truncated), "{ty}");
    }
}

#[test]
fn bad_padding_length() {
    for (ty, built) in samples() {
        let bytes = built.bytes();
        // Any extra bytes beyond Length rounded up to 4 are rejected.
        for extra in 1..=8 {
            let mut longer = bytes.clone();
            longer.resize(bytes.len() + extra, 0);
            assert_eq!(
                Packet::parse(&longer),
                Err(Error::BadLength),
                "{ty} +{extra}"
            );
        }
    }
    // DATA with Length 29 (5 bytes of data) must be exactly 32 bytes.
    let (_, built) = samples().swap_remove(6);
    let bytes = built.bytes();
    assert_eq!(u16::from_be_bytes([bytes[4], bytes[5]]), 29);
    assert_eq!(Packet::parse(&bytes[..30]), Err(Error::BadLength));
    assert_eq!(Packet::parse(&bytes[..29]), Err(Error::BadLength));
}

#[test]
fn bad_checksum() {
    for (ty, built) in samples() {
        let bytes = built.bytes();
        let covered = match ty {
            PacketType::Data | PacketType::LData => DATA_HEADER_LEN,
            _ => bytes.len(),
        };
        let mut b = bytes.clone();
        b[0] ^= 0x01;
        assert_eq!(
            Packet::parse(&b),
            Err(Error::BadChecksum),
            "{ty} checksum field"
        );
        // Every single-bit error in the covered area is detected (by some check).
        for i in 2..covered {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(Packet::parse(&b).is_err(), "{ty} byte {i} bit {bit}");
            }
        }
        // Bit errors in fields only the checksum guards are reported as checksum errors.
        for i in (6..10).chain(12..covered.min(16)) {
            let mut b = bytes.clone();
            b[i] ^= 0x80;
            assert_eq!(Packet::parse(&b), Err(Error::BadChecksum), "{ty} byte {i}");
        }
    }
}

#[test]
fn wrong_version() {
    for (ty, built) in samples() {
        for v in [0u8, 2, 5, 255] {
            let mut b = built.bytes();
            b[2] = v;
            reseal(&mut b);
            assert_eq!(Packet::parse(&b), Err(Error::BadVersion(v)), "{ty}");
        }
    }
}

#[test]
fn unknown_type() {
    let (_, built) = samples().swap_remove(2); // KEEPALIVE
    for t in 13..=255u8 {
        let mut b = built.bytes();
        b[3] = t;
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::UnknownType(t)));
    }
}

#[test]
fn missing_nul() {
    for (ty, built) in samples() {
        let string_start = match ty {
            PacketType::Open | PacketType::Response => 36,
            PacketType::Quit | PacketType::Abort | PacketType::Refused => 12,
            _ => continue,
        };
        let mut b = built.bytes();
        for x in &mut b[string_start..] {
            if *x == 0 {
                *x = b'x';
            }
        }
        reseal(&mut b);
        assert_eq!(Packet::parse(&b), Err(Error::BadString), "{ty}");
    }
}

/// The sample CONTROL packet: GO at 12..20, OK at 20..36, RESEND (3 packets) at 36..56.
fn control() -> Vec<u8> {
    samples().swap_remove(9).1.bytes()
}

#[test]
fn bad_control_tiling() {
    let b = control();
    // Cut inside the RESEND, inside the OK, and inside the GO (Length adjusted to match).
    for cut in [52, 48, 40, 32, 24, 16] {
        let mut c = b[..cut].to_vec();
        c[4..6].copy_from_slice(&(cut as u16).to_be_bytes());
        reseal(&mut c);
        assert_eq!(Packet::parse(&c), Err(Error::BadControl), "cut at {cut}");
    }
    // A lone 4-byte word after the messages is no message.
    let mut c = b.clone();
    c.extend_from_slice(&[1, 0, 0, 9]);
    c[4..6].copy_from_slice(&60u16.to_be_bytes());
    reseal(&mut c);
    assert_eq!(Packet::parse(&c), Err(Error::BadControl));
}

#[test]
fn unknown_control_type() {
    for at in [12, 20, 36] {
        for t in [3u8, 4, 0x80, 0xff] {
            let mut c = control();
            c[at] = t;
            reseal(&mut c);
            assert_eq!(
                Packet::parse(&c),
                Err(Error::BadControl),
                "type {t} at {at}"
            );
        }
    }
}

#[test]
fn resend_count_overflowing() {
    for n in [5u16, 6, 100, 0x7fff, 0xffff] {
        let mut c = control();
        c[44..46].copy_from_slice(&n.to_be_bytes());
        reseal(&mut c);
        assert_eq!(Packet::parse(&c), Err(Error::BadControl), "n = {n}");
    }
    // n = 4 still fits the 20 bytes the RESEND occupies (12 + 8).
    let mut c = control();
    c[44..46].copy_from_slice(&4u16.to_be_bytes());
    reseal(&mut c);
    assert!(Packet::parse(&c).is_ok());
}
