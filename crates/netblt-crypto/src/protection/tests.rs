use super::*;
use proptest::prelude::*;

fn pair(suite: Suite) -> (PacketProtection, PacketProtection) {
    let (s1, s2) = ([1u8; 32], [2u8; 32]);
    (
        PacketProtection::from_secrets(suite, s1, s2),
        PacketProtection::from_secrets(suite, s2, s1),
    )
}

const SUITES: [Suite; 2] = [Suite::Aes256Gcm, Suite::ChaCha20Poly1305];

/// A plaintext NETBLT-like packet of `len` bytes with room for the overhead.
fn packet(len: usize, seed: u8) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    p.resize(len + OVERHEAD, 0);
    p
}

#[test]
fn round_trips_in_both_directions() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        for len in [12, 13, 36, 1400, 16_000] {
            let mut p = packet(len, 1);
            let plain = p[..len].to_vec();
            let n = a.seal_in_place(&mut p, len).unwrap();
            assert_eq!(n, len + 20);
            assert_eq!(p[..12], plain[..12], "the header stays clear");
            if len > 40 {
                assert_ne!(p[12..len], plain[12..], "the body is encrypted");
            }
            assert_eq!(b.open_in_place(&mut p[..n]), Ok(len));
            assert_eq!(p[..len], plain[..]);
            // And back.
            let mut q = vec![0u8; len + OVERHEAD];
            let n = b.seal(&plain, &mut q).unwrap();
            let mut out = vec![0u8; n];
            assert_eq!(a.open(&q[..n], &mut out), Ok(len));
            assert_eq!(out[..len], plain[..]);
        }
        assert_eq!(a.stats().sealed, 5);
        assert_eq!(b.stats().opened, 5);
    }
}

#[test]
fn every_single_bit_flip_is_rejected() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        let len = 60;
        let mut p = packet(len, 2);
        let n = a.seal_in_place(&mut p, len).unwrap();
        let wire = p[..n].to_vec();
        for bit in 0..n * 8 {
            let mut f = wire.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            let r = b.open_in_place(&mut f);
            assert!(
                matches!(r, Err(OpenError::Forged | OpenError::OutOfRange)),
                "bit {bit}: {r:?}"
            );
        }
        assert_eq!(b.stats().opened, 0);
        assert_eq!(b.stats().rejected(), (n * 8) as u64);
        // Forgeries did not move the window: the genuine packet still opens, once.
        let mut g = wire.clone();
        assert_eq!(b.open_in_place(&mut g), Ok(len));
        let mut g = wire.clone();
        assert_eq!(b.open_in_place(&mut g), Err(OpenError::Replayed));
    }
}

#[test]
fn truncation_and_extension_are_rejected() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        let mut p = packet(100, 3);
        let n = a.seal_in_place(&mut p, 100).unwrap();
        for cut in 0..n {
            let mut t = p[..cut].to_vec();
            let r = b.open_in_place(&mut t);
            assert!(r.is_err(), "cut {cut}");
            if cut < CLEAR_HEADER_LEN + OVERHEAD {
                assert_eq!(r, Err(OpenError::TooShort));
            }
        }
        let mut longer = p[..n].to_vec();
        longer.push(0);
        assert!(b.open_in_place(&mut longer).is_err());
        assert_eq!(b.open_in_place(&mut p[..n]), Ok(100));
    }
}

#[test]
fn replays_reordering_and_old_packets() {
    let (mut a, mut b) = pair(Suite::ChaCha20Poly1305);
    let wires: Vec<Vec<u8>> = (0..3000)
        .map(|i| {
            let mut p = packet(20, i as u8);
            let n = a.seal_in_place(&mut p, 20).unwrap();
            p.truncate(n);
            p
        })
        .collect();
    // Out of order inside the window is fine.
    for i in [5, 3, 4, 0, 1, 2] {
        assert_eq!(b.open_in_place(&mut wires[i].clone()), Ok(20), "{i}");
    }
    for w in &wires[..6] {
        assert_eq!(b.open_in_place(&mut w.clone()), Err(OpenError::Replayed));
    }
    assert_eq!(b.open_in_place(&mut wires[2999].clone()), Ok(20));
    // 2999 is block 46; blocks 15..=46 are remembered: 960 is the oldest acceptable.
    assert_eq!(
        b.open_in_place(&mut wires[959].clone()),
        Err(OpenError::TooOld)
    );
    assert_eq!(b.open_in_place(&mut wires[960].clone()), Ok(20));
    assert_eq!(b.stats().replayed, 6);
    assert_eq!(b.stats().too_old, 1);
}

#[test]
fn reflected_packets_are_forgeries() {
    // A packet sent back to its sender does not open: each direction has its own key.
    let (mut a, _) = pair(Suite::Aes256Gcm);
    let mut p = packet(40, 4);
    let n = a.seal_in_place(&mut p, 40).unwrap();
    assert_eq!(a.open_in_place(&mut p[..n]), Err(OpenError::Forged));
}

#[test]
fn key_epochs_change_without_a_message() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        let start = EPOCH_PACKETS - 3;
        a.set_next_counter(start);
        let mut wires: Vec<Vec<u8>> = (0..6)
            .map(|_| {
                let mut p = packet(30, 9);
                let n = a.seal_in_place(&mut p, 30).unwrap();
                p.truncate(n);
                p
            })
            .collect();
        // Epoch 0 packets decrypt, then epoch 1, then late epoch 0 ones still do.
        assert_eq!(b.open_in_place(&mut wires[0]), Ok(30));
        assert_eq!(b.open_in_place(&mut wires[4]), Ok(30));
        assert_eq!(b.open_in_place(&mut wires[1]), Ok(30));
        assert_eq!(b.open_in_place(&mut wires[5]), Ok(30));
        assert_eq!(b.open_in_place(&mut wires[2]), Ok(30));
        assert_eq!(b.open_in_place(&mut wires[3]), Ok(30));
        // A sealed packet of epoch 1 with the epoch-0 key would not open: the keys differ.
        assert_ne!(
            EpochKey::derive(&a.send_secret, suite, 0).iv,
            EpochKey::derive(&a.send_secret, suite, 1).iv
        );
    }
}

#[test]
fn counters_far_ahead_are_refused_without_key_derivation() {
    let (mut a, mut b) = pair(Suite::Aes256Gcm);
    a.set_next_counter(2 * EPOCH_PACKETS);
    let mut p = packet(30, 1);
    let n = a.seal_in_place(&mut p, 30).unwrap();
    assert_eq!(b.open_in_place(&mut p[..n]), Err(OpenError::OutOfRange));
    a.set_next_counter(MAX_COUNTER);
    assert_eq!(
        a.seal_in_place(&mut p, 30),
        Err(SealError::CounterExhausted)
    );
}

#[test]
fn seal_errors() {
    let (mut a, _) = pair(Suite::Aes256Gcm);
    let mut small = [0u8; 40];
    assert_eq!(a.seal_in_place(&mut small, 11), Err(SealError::TooShort));
    assert_eq!(a.seal_in_place(&mut small, 21), Err(SealError::NoRoom));
    assert_eq!(a.seal_in_place(&mut small, 20), Ok(40));
    assert_eq!(a.seal(&[0u8; 21], &mut small), Err(SealError::NoRoom));
}

#[test]
fn batches_round_trip_and_count_forgeries() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        let stride = 1400 + OVERHEAD;
        let mut train = vec![0u8; stride * 8];
        for (i, seg) in train.chunks_mut(stride).enumerate() {
            seg[..1400].copy_from_slice(&packet(1400, i as u8)[..1400]);
        }
        let plain = train.clone();
        {
            let mut batch: Vec<Datagram<'_>> = train
                .chunks_mut(stride)
                .map(|buf| Datagram { buf, len: 1400 })
                .collect();
            a.seal_batch(&mut batch).unwrap();
            assert!(batch.iter().all(|d| d.len == stride));
        }
        train[3 * stride + 500] ^= 0x40;
        let mut batch: Vec<Datagram<'_>> = train
            .chunks_mut(stride)
            .map(|buf| Datagram { buf, len: stride })
            .collect();
        assert_eq!(b.open_batch(&mut batch), 1);
        let lens: Vec<usize> = batch.iter().map(|d| d.len).collect();
        assert_eq!(lens, [1400, 1400, 1400, 0, 1400, 1400, 1400, 1400]);
        for (i, (got, want)) in train.chunks(stride).zip(plain.chunks(stride)).enumerate() {
            if i != 3 {
                assert_eq!(got[..1400], want[..1400]);
            }
        }
        assert_eq!(b.stats().forged, 1);
    }
}

#[test]
fn suite_choice() {
    let hw = SuiteOffer::for_hardware(true);
    let soft = SuiteOffer::for_hardware(false);
    assert_eq!(SuiteOffer::choose(hw, hw), Some(Suite::Aes256Gcm));
    assert_eq!(SuiteOffer::choose(hw, soft), Some(Suite::ChaCha20Poly1305));
    assert_eq!(SuiteOffer::choose(soft, hw), Some(Suite::ChaCha20Poly1305));
    let aes = SuiteOffer::only(Suite::Aes256Gcm);
    let cc = SuiteOffer::only(Suite::ChaCha20Poly1305);
    assert_eq!(SuiteOffer::choose(aes, soft), Some(Suite::Aes256Gcm));
    assert_eq!(SuiteOffer::choose(aes, cc), None);
    assert_eq!(
        SuiteOffer::choose(SuiteOffer(0xff), cc),
        Some(Suite::ChaCha20Poly1305)
    );
}

#[test]
fn the_wire_carries_the_counters_low_32_bits() {
    let (mut a, mut b) = pair(Suite::Aes256Gcm);
    a.set_next_counter(0x1_2345_6789);
    b.set_highest_opened(0x1_2345_6700);
    let mut p = packet(30, 3);
    let n = a.seal_in_place(&mut p, 30).unwrap();
    assert_eq!(n, 30 + 4 + 16);
    assert_eq!(
        p[30..34],
        [0x23, 0x45, 0x67, 0x89],
        "big-endian, low 32 bits"
    );
    assert_eq!(b.open_in_place(&mut p[..n]), Ok(30));
    assert_eq!(b.highest_opened(), Some(0x1_2345_6789));
}

#[test]
fn counters_are_rebuilt_across_the_32_bit_boundary_in_any_order() {
    for suite in SUITES {
        let (mut a, mut b) = pair(suite);
        let start = (1u64 << 32) - 3;
        a.set_next_counter(start);
        b.set_highest_opened(start - 1);
        let wires: Vec<Vec<u8>> = (0..6)
            .map(|i| {
                let mut p = packet(30, i);
                let n = a.seal_in_place(&mut p, 30).unwrap();
                p.truncate(n);
                p
            })
            .collect();
        // 2^32 + 2 first: the wire says 2, the receiver expects 2^32 - 2.
        for i in [5, 0, 3, 1, 4, 2] {
            assert_eq!(b.open_in_place(&mut wires[i].clone()), Ok(30), "{i}");
        }
        assert_eq!(b.highest_opened(), Some(start + 5));
        for w in &wires {
            assert_eq!(b.open_in_place(&mut w.clone()), Err(OpenError::Replayed));
        }
    }
}

#[test]
fn a_counter_taken_wrongly_fails_authentication() {
    // A sender 2^32 packets ahead of the receiver's window: its low bits
    // say 7, the receiver takes 7, and the whole counter in the associated
    // data (and the nonce) differ, so the packet is refused, not opened.
    let (mut a, mut b) = pair(Suite::ChaCha20Poly1305);
    a.set_next_counter((1 << 32) + 7);
    let mut p = packet(30, 5);
    let n = a.seal_in_place(&mut p, 30).unwrap();
    assert_eq!(b.open_in_place(&mut p[..n]), Err(OpenError::Forged));
    assert_eq!(b.highest_opened(), None, "a refused packet moves nothing");
}

#[test]
fn whole_counter_examples() {
    let w = |c: u64| wire_counter(c);
    // RFC 9000 A.3's rule at a fixed 32 bits: nearest to the expected counter.
    assert_eq!(whole_counter(0, w(0)), 0);
    assert_eq!(whole_counter(0, w(5)), 5);
    assert_eq!(
        whole_counter(0, w(u64::from(u32::MAX))),
        u64::from(u32::MAX)
    );
    assert_eq!(whole_counter(1 << 32, w(3)), (1 << 32) + 3);
    assert_eq!(whole_counter(1 << 32, w((1 << 32) - 3)), (1 << 32) - 3);
    assert_eq!(whole_counter((1 << 33) + 10, w(9)), (1 << 33) + 9);
    let near_top = MAX_COUNTER - 1;
    assert_eq!(whole_counter(near_top, w(near_top)), near_top);
}

proptest! {
    #[test]
    fn counters_within_half_a_window_are_rebuilt(
        c in 0u64..MAX_COUNTER,
        delta in -(1i64 << 31) + 1..(1i64 << 31),
    ) {
        // Any counter up to 2^31 - 1 behind or ahead of the expected one
        // (reordering or loss) comes back whole.
        let expected = c as i64 - delta;
        prop_assume!(expected >= 0);
        prop_assert_eq!(whole_counter(expected as u64, wire_counter(c)), c);
    }

    #[test]
    fn junk_never_opens_or_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (_, mut b) = pair(Suite::Aes256Gcm);
        let mut buf = bytes.clone();
        prop_assert!(b.open_in_place(&mut buf).is_err());
        let (_, mut c) = pair(Suite::ChaCha20Poly1305);
        let mut buf = bytes;
        prop_assert!(c.open_in_place(&mut buf).is_err());
    }

    #[test]
    fn round_trip_any_body(body in proptest::collection::vec(any::<u8>(), 12..2000), aes in any::<bool>()) {
        let suite = if aes { Suite::Aes256Gcm } else { Suite::ChaCha20Poly1305 };
        let (mut a, mut b) = pair(suite);
        let mut out = vec![0u8; body.len() + OVERHEAD];
        let n = a.seal(&body, &mut out).unwrap();
        let mut plain = vec![0u8; n];
        let m = b.open(&out[..n], &mut plain).unwrap();
        prop_assert_eq!(&plain[..m], &body[..]);
    }
}

#[test]
fn sealing_a_gathered_payload_puts_the_same_bytes_on_the_wire() {
    for suite in SUITES {
        // Two senders with the same keys and counters: one seals the whole
        // plaintext in place, the other the header in place and the payload
        // from elsewhere; the datagrams must be identical and open.
        let (mut whole, mut rx) = pair(suite);
        let (mut gathered, _) = pair(suite);
        for (head, len) in [(12, 12), (12, 13), (24, 1424), (24, 16_024), (13, 1000)] {
            let mut p = packet(len, 7);
            let plain = p[..len].to_vec();
            let n = whole.seal_in_place(&mut p, len).unwrap();
            let mut g = vec![0xeeu8; len + OVERHEAD + 5];
            g[..head].copy_from_slice(&plain[..head]);
            let m = gathered
                .seal_gathered(&mut g, head, &plain[head..])
                .unwrap();
            assert_eq!((m, &g[..m]), (n, &p[..n]), "head {head}, len {len}");
            assert_eq!(g[m..], [0xee; 5], "nothing written past the datagram");
            assert_eq!(rx.open_in_place(&mut g[..m]), Ok(len));
            assert_eq!(g[..len], plain[..]);
        }
        let mut short = vec![0u8; 100];
        assert_eq!(
            gathered.seal_gathered(&mut short, 24, &[1; 60]),
            Err(SealError::NoRoom)
        );
        assert_eq!(
            gathered.seal_gathered(&mut short, 11, &[1; 20]),
            Err(SealError::TooShort)
        );
    }
}
