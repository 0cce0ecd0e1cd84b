//! The shared CSMA/CD segment: carrier sense, collisions and backoff, the
//! other stations' load, and RFC 1030 §6's deaf 3C500 waiting for the medium.

mod toys;

use netblt_sim::profiles::{CrossTraffic, EthernetSegment};
use netblt_sim::{Duration, HostModel, LinkConfig, Outcome, PathConfig, SimStats, Simulation};
use toys::{Blaster, Sink};

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn segment(load: f64) -> EthernetSegment {
    EthernetSegment {
        cross: CrossTraffic {
            load,
            ..CrossTraffic::default()
        },
        ..EthernetSegment::default()
    }
}

fn path(host_b: HostModel, seg: EthernetSegment) -> PathConfig {
    PathConfig {
        forward: LinkConfig::with_rate_delay(1_000_000_000, us(10)),
        reverse: LinkConfig::with_rate_delay(1_000_000_000, us(10)),
        host_a: HostModel::default(),
        host_b,
        wire_overhead: 0,
        segment: Some(seg),
    }
}

/// A sends one 1000-byte frame at 0; B one 100-byte frame from `b_at`.
fn two_frames(host_b: HostModel, seg: EthernetSegment, seed: u64) -> SimStats {
    let mut sim = Simulation::new(
        Blaster::new(1, 1000, us(0)),
        Blaster::new(1, 100, us(0)),
        path(host_b, seg),
        seed,
    )
    .unwrap();
    while sim.step() {}
    sim.stats()
}

#[test]
fn a_station_defers_to_a_frame_on_the_medium() {
    // A's frame: (1000 + 8 preamble) bytes at 10 Mb/s = 806.4 us. B is ready
    // at 500 us, hears the carrier and waits for its end plus the 9.6 us
    // inter-frame gap: 316 us.
    let b = HostModel {
        send_fixed: us(500),
        ..HostModel::default()
    };
    let s = two_frames(b, segment(0.0), 1);
    let seg = s.segment.unwrap();
    assert_eq!(seg.host_frames_sent, 2);
    assert_eq!(seg.collisions, 0);
    assert_eq!(seg.host_access_wait_ns, 316_000);
    assert_eq!(s.host_a.packets_received + s.host_b.packets_received, 2);
}

#[test]
fn simultaneous_starts_collide_and_back_off() {
    // Both ready at 0: they collide, jam and back off by whole slots until
    // one gets through; both frames arrive in the end, the same way for the
    // same seed.
    let s = two_frames(HostModel::default(), segment(0.0), 3);
    let seg = s.segment.unwrap();
    assert!(seg.collisions >= 1);
    assert!(seg.host_collisions >= 2);
    assert_eq!(seg.host_frames_sent, 2);
    assert_eq!(s.host_a.packets_received + s.host_b.packets_received, 2);
    assert_eq!(s, two_frames(HostModel::default(), segment(0.0), 3));
}

#[test]
fn a_frame_is_discarded_after_the_attempt_limit() {
    let seg = EthernetSegment {
        attempt_limit: 1,
        ..segment(0.0)
    };
    let s = two_frames(HostModel::default(), seg, 1);
    assert_eq!(s.host_a.nic_tx_aborts, 1);
    assert_eq!(s.host_b.nic_tx_aborts, 1);
    assert_eq!(s.segment.unwrap().host_frames_aborted, 2);
    assert_eq!(s.host_a.packets_received + s.host_b.packets_received, 0);
}

#[test]
fn the_other_stations_offer_their_load() {
    // A sends a small frame every 10 ms for 20 s, which keeps the segment
    // awake; the other stations' frames (half 64, half 1518 bytes, plus
    // preambles) should fill about 30 % of the medium.
    let mut sim = Simulation::new(
        Blaster::new(2000, 46, Duration::from_millis(10)),
        Sink::new(usize::MAX),
        path(HostModel::default(), segment(0.3)),
        9,
    )
    .unwrap();
    sim.run(netblt_sim::Instant::from_millis(20_000));
    let seg = sim.stats().segment.unwrap();
    let elapsed_ns = sim.now().since_zero().as_nanos() as f64;
    let busy = seg.busy_ns as f64 / elapsed_ns;
    // A's own frames: 2000 * (64 + 8) bytes = 115 us in 20 s.
    assert!((busy - 0.3).abs() < 0.03, "medium busy {busy}");
    let mean_bits = (791.0 + 8.0) * 8.0;
    let expected = 0.3 * 10e6 * 20.0 / mean_bits;
    let offered = seg.cross_frames_offered as f64;
    assert!(
        (offered / expected - 1.0).abs() < 0.05,
        "{offered} vs {expected}"
    );
    // Frames still waiting or on the wire at the end are neither.
    assert!(seg.cross_frames_sent + seg.cross_frames_aborted <= seg.cross_frames_offered);
    assert!(seg.cross_frames_sent + 5 >= seg.cross_frames_offered);
}

#[test]
fn other_stations_do_not_keep_an_idle_simulation_running() {
    let mut sim = Simulation::new(
        Blaster::new(1, 100, us(0)),
        Sink::new(usize::MAX),
        path(HostModel::default(), segment(0.5)),
        1,
    )
    .unwrap();
    assert_eq!(
        sim.run(netblt_sim::Instant::from_millis(1_000_000)),
        Outcome::Idle
    );
}

#[test]
fn a_3c500_waiting_for_the_medium_is_deaf() {
    // RFC 1030 §6: B (one buffer shared by both directions, half duplex)
    // loads a 100-byte packet at 500 us while A's frame is on the wire. B
    // defers, holding its packet in its only buffer, so A's frame, which
    // ends before B ever transmits, still finds B deaf and is lost.
    let b = HostModel {
        send_fixed: us(500),
        nic_rate_bps: Some(10_000_000),
        nic_buffers: Some(1),
        half_duplex: true,
        ..HostModel::default()
    };
    let s = two_frames(b.clone(), segment(0.0), 1);
    assert!(s.segment.unwrap().host_access_wait_ns > 0);
    assert_eq!(s.host_b.nic_deaf_drops + s.host_b.nic_full_drops, 1);
    assert_eq!(s.host_b.packets_received, 0);
    // With two buffers and a full-duplex interface the frame gets in.
    let fine = HostModel {
        nic_buffers: Some(2),
        half_duplex: false,
        ..b
    };
    assert_eq!(two_frames(fine, segment(0.0), 1).host_b.packets_received, 1);
}

#[test]
fn other_stations_broadcasts_reach_both_hosts_and_stop_when_idle() {
    // A sends ten frames 1 ms apart; B takes them in. The other stations
    // broadcast 2000 times a second, to both hosts: A receives nothing else.
    let mut seg = segment(0.0);
    seg.cross.broadcasts_per_s = 2000.0;
    let mut sim = Simulation::new(
        Blaster::new(10, 1000, us(1000)),
        Sink::new(1000),
        path(HostModel::default(), seg),
        7,
    )
    .unwrap();
    // The sink never finishes (it expects more), so the run ends when
    // nothing is left to do: the broadcasts stop with the rest.
    let out = sim.run(netblt_sim::Instant::ZERO + Duration::from_secs(3600));
    assert_eq!(out, Outcome::Idle);
    let s = sim.stats();
    // About 20 broadcasts in the ~10 ms A is busy, and then no more.
    assert!(
        s.host_a.packets_received >= 5,
        "{}",
        s.host_a.packets_received
    );
    assert!(
        s.host_a.packets_received <= 60,
        "{}",
        s.host_a.packets_received
    );
    assert!(s.host_b.packets_received >= 10 + 5);
    assert!(sim.now() < netblt_sim::Instant::ZERO + Duration::from_secs(1));
}
