//! IP fragmentation at the link's entrance (RFC 791), as the Wideband
//! profile uses it for RFC 1030 §7's gateway bug.

use std::time::Duration;

use netblt_link::{profiles, DropReason, Fragmentation, FrameConfig, Link, LinkConfig, LossModel};

const FRAG: Fragmentation = Fragmentation {
    mtu: 1476,
    ip_header: 20,
    framing: 18,
};

#[test]
fn pieces_follow_rfc_791() {
    // 1478-byte datagram (1434 data + 24 DATA header + 20 IP) with 18 bytes
    // of framing: 1456 data bytes (a multiple of 8) and then the last 2.
    let pieces: Vec<usize> = FRAG.pieces(1478 + 18).collect();
    assert_eq!(pieces, vec![18 + 20 + 1456, 18 + 20 + 2]);
    // A datagram that fits is one piece, unchanged.
    assert_eq!(FRAG.pieces(1476 + 18).collect::<Vec<_>>(), vec![1494]);
    // Every piece but the last carries a multiple of 8 data bytes, and the
    // data adds up to the original payload.
    for ip_len in [1477usize, 2000, 4000, 9000] {
        let pieces: Vec<usize> = FRAG.pieces(ip_len + 18).collect();
        let data: Vec<usize> = pieces.iter().map(|p| p - 38).collect();
        assert!(data[..data.len() - 1]
            .iter()
            .all(|d| d % 8 == 0 && *d <= 1456));
        assert_eq!(data.iter().sum::<usize>(), ip_len - 20);
        assert!(pieces.iter().all(|p| p - 18 <= FRAG.mtu));
    }
}

#[test]
fn a_fragmented_datagram_takes_more_of_the_channel() {
    // Wideband's frames: 3006 bytes every 21.22 ms. Two whole 1496-byte
    // packets share a frame; two fragmented ones (1494 + 40 each) do not.
    let frames = Some(FrameConfig {
        interval: Duration::from_micros(21_220),
        bytes_per_frame: 3006,
    });
    let whole = LinkConfig {
        frames: frames.clone(),
        ..LinkConfig::default()
    };
    let split = LinkConfig {
        frames,
        fragmentation: Some(FRAG),
        ..LinkConfig::default()
    };
    let end_of_second = |cfg: LinkConfig, len: usize| {
        let mut link = Link::new(cfg, 1).unwrap();
        link.offer(Duration::ZERO, len);
        link.offer(Duration::from_millis(6), len).tx_end
    };
    let frame = Duration::from_micros(21_220);
    assert_eq!(end_of_second(whole.clone(), 1496), frame);
    assert_eq!(end_of_second(split.clone(), 1494), frame, "fits: not split");
    assert_eq!(end_of_second(split, 1496), frame * 2, "split: next frame");
    let mut link = Link::new(whole, 1).unwrap();
    link.offer(Duration::ZERO, 1496);
    assert_eq!(link.stats().fragmented, 0);
}

#[test]
fn losing_any_fragment_loses_the_datagram() {
    // With 50 % loss per piece, a two-piece datagram survives a quarter of
    // the time; a whole one half of the time.
    let cfg = |frag| LinkConfig {
        loss: LossModel::Bernoulli { p: 0.5 },
        fragmentation: frag,
        ..LinkConfig::default()
    };
    let delivered = |cfg: LinkConfig, len: usize| {
        let mut link = Link::new(cfg, 7).unwrap();
        (0..20_000)
            .filter(|i| link.offer(Duration::from_millis(*i), len).is_delivered())
            .count() as f64
            / 20_000.0
    };
    let split = delivered(cfg(Some(FRAG)), 1496);
    let whole = delivered(cfg(None), 1496);
    assert!((split - 0.25).abs() < 0.02, "split {split}");
    assert!((whole - 0.5).abs() < 0.02, "whole {whole}");
    let mut link = Link::new(cfg(Some(FRAG)), 7).unwrap();
    let fate = link.offer(Duration::ZERO, 70_000);
    assert_eq!(fate.drop, Some(DropReason::Mtu), "longer than IP allows");
}

#[test]
fn the_wideband_profile_fragments_above_1432_data_bytes() {
    let p = profiles::profile("wideband").unwrap();
    let frag = p.forward.fragmentation.expect("wideband fragments");
    // The offered length is the NETBLT datagram (24-byte DATA header) plus
    // the profile's wire overhead (IP and Ethernet framing).
    let offered = |psz: usize| psz + profiles::DATA_HEADER_LEN + p.wire_overhead;
    assert_eq!(frag.pieces(offered(1432)).count(), 1);
    assert_eq!(frag.pieces(offered(1434)).count(), 2);
    assert_eq!(frag.pieces(offered(1438)).count(), 2);
}

#[test]
fn an_mtu_without_room_for_eight_data_bytes_is_refused() {
    let cfg = |mtu| LinkConfig {
        fragmentation: Some(Fragmentation { mtu, ..FRAG }),
        ..LinkConfig::default()
    };
    assert!(cfg(27).validate().is_err());
    assert!(cfg(28).validate().is_ok());
}
