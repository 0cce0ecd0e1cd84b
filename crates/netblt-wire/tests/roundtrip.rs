//! Property tests: emit/parse round trips for every packet type, ControlWriter round trips,
//! parse never panics, and the fast checksum agrees with the reference.

mod common;

use common::{control_message, naive_checksum, reseal, samples, spec, Built};
use netblt_wire::{
    checksum, emit_data, emit_data_header, ControlMessage, ControlWriter, Error, Packet, Repr,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// `Packet::parse(emit(p)) == p` for every type with arbitrary field values, and emitting
    /// the parsed packet gives the same bytes again.
    #[test]
    fn parse_emit_round_trip(lp in any::<u16>(), fp in any::<u16>(), spec in spec()) {
        let built = Built::new(lp, fp, spec);
        let p = built.packet();
        let bytes = built.bytes();
        prop_assert_eq!(bytes.len() % 4, 0);
        prop_assert_eq!(bytes.len(), p.buffer_len());
        let parsed = Packet::parse(&bytes).unwrap();
        prop_assert_eq!(parsed, p);
        let mut again = vec![0u8; parsed.buffer_len()];
        prop_assert_eq!(parsed.emit(&mut again), Ok(bytes.len()));
        prop_assert_eq!(again, bytes);
    }

    /// The DATA hot path writes the same bytes as `Packet::emit`.
    #[test]
    fn emit_data_equals_packet_emit(lp in any::<u16>(), fp in any::<u16>(), spec in spec()) {
        let built = Built::new(lp, fp, spec);
        let p = built.packet();
        let (ldata, d) = match p.repr {
            Repr::Data(d) => (false, d),
            Repr::LData(d) => (true, d),
            _ => return Ok(()),
        };
        let mut out = vec![0xa5u8; d.buffer_len() + 3];
        prop_assert_eq!(emit_data(&mut out, ldata, lp, fp, &d), Ok(d.buffer_len()));
        prop_assert_eq!(&out[..d.buffer_len()], &built.bytes()[..]);
        // Gathered: header, the data where it lies, zero padding.
        let mut head = [0x5au8; 24];
        prop_assert_eq!(emit_data_header(&mut head, ldata, lp, fp, &d), Ok(d.buffer_len()));
        let mut gathered = head.to_vec();
        gathered.extend_from_slice(d.data);
        gathered.resize(d.buffer_len(), 0);
        prop_assert_eq!(&gathered[..], &built.bytes()[..]);
    }

    /// Arbitrary message lists pushed through ControlWriter come back in order.
    #[test]
    fn control_writer_round_trip(
        lp in any::<u16>(),
        fp in any::<u16>(),
        msgs in prop::collection::vec(control_message(), 0..60),
    ) {
        let mut buf = vec![0u8; 8192];
        let mut w = ControlWriter::new(&mut buf).unwrap();
        for m in &msgs {
            w.push(m).unwrap();
        }
        prop_assert_eq!(w.len(), msgs.len());
        let n = w.finish(lp, fp);
        let p = Packet::parse(&buf[..n]).unwrap();
        prop_assert_eq!(p.local_port, lp);
        prop_assert_eq!(p.foreign_port, fp);
        let Repr::Control(c) = p.repr else { panic!("not CONTROL") };
        let back: Vec<ControlMessage> = c.iter().map(|m| m.to_owned()).collect();
        prop_assert_eq!(back, msgs);
    }

    /// With a small buffer, the writer keeps every message that fit and nothing else.
    #[test]
    fn control_writer_fills_small_buffer(
        cap in 12usize..300,
        msgs in prop::collection::vec(control_message(), 0..30),
    ) {
        let mut buf = vec![0u8; cap];
        let mut w = ControlWriter::new(&mut buf).unwrap();
        let mut kept = Vec::new();
        for m in &msgs {
            match w.push(m) {
                Ok(()) => kept.push(m.clone()),
                Err(Error::BufferTooSmall) => {}
                Err(e) => panic!("unexpected {e}"),
            }
        }
        let n = w.finish(1, 2);
        prop_assert!(n <= cap);
        let Repr::Control(c) = Packet::parse(&buf[..n]).unwrap().repr else { panic!() };
        let back: Vec<ControlMessage> = c.iter().map(|m| m.to_owned()).collect();
        prop_assert_eq!(back, kept);
    }

    /// Parsing arbitrary bytes never panics, and whatever parses re-emits canonically.
    #[test]
    fn parse_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_any(&bytes);
    }

    /// The same on near-valid input: a valid packet with a few bytes changed, the checksum
    /// then repaired (so the mutations reach the body parsers), and possibly cut or extended.
    #[test]
    fn parse_mutated_packets(
        which in 0usize..12,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        fix_sum in any::<bool>(),
        resize in prop_oneof![Just(None), (0usize..80).prop_map(Some)],
    ) {
        let (_, built) = samples().swap_remove(which);
        let mut bytes = built.bytes();
        for (i, v) in edits {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        if let Some(n) = resize {
            bytes.resize(n, 0);
        }
        if fix_sum && bytes.len() >= 6 {
            reseal(&mut bytes);
        }
        check_any(&bytes);
    }

    /// The fast checksum equals the naive reference on any bytes and any alignment.
    #[test]
    fn checksum_matches_reference(
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
        skip in 0usize..16,
    ) {
        let s = &bytes[skip.min(bytes.len())..];
        prop_assert_eq!(checksum(s), naive_checksum(s));
    }
}

/// Parses `bytes`; if that succeeds, emit, reparse and compare.
fn check_any(bytes: &[u8]) {
    if let Ok(p) = Packet::parse(bytes) {
        // The canonical form may be shorter than the input (extra NUL words after a string
        // are dropped), never longer.
        let mut out = vec![0u8; p.buffer_len()];
        assert_eq!(p.emit(&mut out), Ok(out.len()));
        assert!(out.len() <= bytes.len());
        assert_eq!(Packet::parse(&out), Ok(p));
        let _ = p.to_string();
    }
}
