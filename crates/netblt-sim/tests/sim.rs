//! Simulator stories with toy nodes: exact timings, interface drops,
//! determinism, guards.

mod toys;

use netblt_sim::{
    Duration, HostModel, Instant, LinkConfig, Outcome, PathConfig, Side, SimError, Simulation,
};
use toys::{Blaster, Echo, Pinger, Sink, Spinner};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

const LIMIT: Instant = Instant::from_millis(1_000_000);

#[test]
fn one_packet_through_cpu_nic_and_link_has_exact_timing() {
    let path = PathConfig {
        forward: LinkConfig::with_rate_delay(1_000_000, ms(5)),
        reverse: LinkConfig::default(),
        host_a: HostModel {
            send_fixed: ms(1),
            send_per_byte_ns: 1000.0,
            nic_rate_bps: Some(10_000_000),
            ..HostModel::default()
        },
        host_b: HostModel {
            recv_fixed: ms(2),
            recv_per_byte_ns: 500.0,
            ..HostModel::default()
        },
        wire_overhead: 38,
        segment: None,
    };
    let mut sim = Simulation::new(Blaster::new(1, 100, ms(0)), Sink::new(1), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    // CPU: 1 ms + 100 B x 1 us = 1.1 ms. Interface: 138 B at 10 Mb/s =
    // 110.4 us. Link: 138 B at 1 Mb/s = 1.104 ms, then 5 ms. Receiver CPU:
    // 2 ms + 100 B x 0.5 us = 2.05 ms.
    let expected = 1_100_000 + 110_400 + 1_104_000 + 5_000_000 + 2_050_000;
    let (at, data) = &sim.node_b().got[0];
    assert_eq!(at.as_nanos(), expected);
    assert_eq!(data.len(), 100);
    assert_eq!(sim.now().as_nanos(), expected);
    let s = sim.stats();
    assert_eq!(s.host_a.cpu_busy, us(1100));
    assert_eq!(s.host_b.cpu_busy, us(2050));
    assert_eq!((s.host_a.packets_sent, s.host_b.packets_received), (1, 1));
    assert_eq!((s.forward.offered, s.forward.offered_bytes), (1, 138));
}

#[test]
fn cpu_cost_serializes_work() {
    let path = PathConfig {
        host_a: HostModel {
            send_fixed: ms(1),
            ..HostModel::default()
        },
        host_b: HostModel {
            recv_fixed: ms(3),
            ..HostModel::default()
        },
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Blaster::new(3, 10, ms(0)), Sink::new(3), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    // Sent at 0, 1, 2 ms (each poll waits for the previous send cost),
    // arriving at 1, 2, 3 ms; the receiver needs 3 ms each: done at 4, 7, 10.
    assert_eq!(
        sim.node_a().sent_at,
        [
            Instant::ZERO,
            Instant::from_millis(1),
            Instant::from_millis(2)
        ]
    );
    let done: Vec<_> = sim
        .node_b()
        .got
        .iter()
        .map(|(t, _)| t.as_nanos() / 1_000_000)
        .collect();
    assert_eq!(done, [4, 7, 10]);
    assert_eq!(sim.stats().host_b.cpu_busy, ms(9));
}

#[test]
fn cpu_waits_for_a_free_interface_buffer() {
    // 1 buffer, 1000 B at 1 Mb/s = 8 ms on the wire; the CPU needs 1 ms per
    // packet, so after the first it waits for the interface.
    let path = PathConfig {
        host_a: HostModel {
            send_fixed: ms(1),
            nic_rate_bps: Some(1_000_000),
            nic_buffers: Some(1),
            ..HostModel::default()
        },
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Blaster::new(3, 1000, ms(0)), Sink::new(3), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    // Wire: 1-9, 9-17, 17-25 ms. The second packet's CPU work (1-2 ms)
    // overlaps the first's transmission; it is handed over at 9 ms.
    let arrivals: Vec<_> = sim
        .node_b()
        .got
        .iter()
        .map(|(t, _)| t.as_nanos() / 1_000_000)
        .collect();
    assert_eq!(arrivals, [9, 17, 25]);
    assert_eq!(
        sim.node_a().sent_at,
        [
            Instant::ZERO,
            Instant::from_millis(1),
            Instant::from_millis(9)
        ]
    );
}

#[test]
fn half_duplex_interface_is_deaf_while_it_transmits() {
    // A sends one 1000-byte packet at t = 0 (800 us on a 10 Mb/s wire); B
    // starts sending a packet at 0.5 ms, while A's packet is still arriving.
    let run = |half_duplex: bool| {
        let host_b = HostModel {
            send_fixed: us(500),
            nic_rate_bps: Some(10_000_000),
            half_duplex,
            ..HostModel::default()
        };
        let path = PathConfig {
            host_a: HostModel {
                nic_rate_bps: Some(10_000_000),
                ..HostModel::default()
            },
            host_b,
            forward: LinkConfig::with_rate_delay(1_000_000_000, us(100)),
            ..PathConfig::ideal()
        };
        let b = toys::Blaster::new(1, 100, ms(0));
        let mut sim = Simulation::new(Blaster::new(1, 1000, ms(0)), b, path, 1).unwrap();
        // Both blasters are "finished" once they have sent: step to the end.
        while sim.step() {}
        sim.stats()
    };
    let deaf = run(true);
    assert_eq!(deaf.host_b.nic_deaf_drops, 1);
    assert_eq!(deaf.host_b.packets_received, 0);
    let duplex = run(false);
    assert_eq!(duplex.host_b.nic_deaf_drops, 0);
    assert_eq!(duplex.host_b.packets_received, 1);
}

#[test]
fn deafness_covers_the_whole_reception_not_just_the_last_bit() {
    // B's short packet (12 us at 10 Mb/s) goes out at 0.2-0.212 ms; A's
    // 1000-byte packet is on B's wire from 0.1 to 0.9 ms: lost although B
    // is idle again when its last bit arrives.
    let path = PathConfig {
        host_a: HostModel {
            nic_rate_bps: Some(10_000_000),
            ..HostModel::default()
        },
        host_b: HostModel {
            send_fixed: us(200),
            nic_rate_bps: Some(10_000_000),
            half_duplex: true,
            ..HostModel::default()
        },
        forward: LinkConfig::with_rate_delay(1_000_000_000, us(100)),
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(
        Blaster::new(1, 1000, ms(0)),
        Blaster::new(1, 15, ms(0)),
        path,
        1,
    )
    .unwrap();
    while sim.step() {}
    assert_eq!(sim.stats().host_b.nic_deaf_drops, 1);
}

#[test]
fn one_buffer_interface_drops_when_the_cpu_falls_behind() {
    let path = PathConfig {
        host_a: HostModel {
            nic_rate_bps: Some(10_000_000),
            ..HostModel::default()
        },
        host_b: HostModel {
            recv_fixed: ms(10),
            nic_buffers: Some(1),
            ..HostModel::default()
        },
        ..PathConfig::ideal()
    };
    // Three back-to-back packets, 0.8 ms apart: the CPU takes the first at
    // once, the second waits in the only buffer, the third finds it full.
    let mut sim = Simulation::new(Blaster::new(3, 1000, ms(0)), Sink::new(3), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Idle);
    let s = sim.stats();
    assert_eq!(s.host_b.nic_full_drops, 1);
    assert_eq!(s.host_b.packets_received, 2);
    let got: Vec<u32> = sim
        .node_b()
        .got
        .iter()
        .map(|(_, d)| u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
        .collect();
    assert_eq!(got, [0, 1]);
}

#[test]
fn ping_pong_round_trip_is_twice_the_path() {
    let link = LinkConfig::with_rate_delay(8_000_000, ms(20)); // 1 us per byte
    let host = HostModel {
        send_fixed: us(100),
        recv_fixed: us(100),
        ..HostModel::default()
    };
    let path = PathConfig {
        forward: link.clone(),
        reverse: link,
        host_a: host.clone(),
        host_b: host,
        wire_overhead: 0,
        segment: None,
    };
    let mut sim = Simulation::new(Pinger::new(5, 1000, ms(500)), Echo::default(), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    // Each way: 100 us send + 1 ms wire + 20 ms + 100 us receive.
    let rtt = us(2 * (100 + 1000 + 20_000 + 100));
    assert_eq!(sim.node_a().rtts, vec![rtt; 5]);
}

#[test]
fn timers_pace_the_sender() {
    let mut sim = Simulation::new(
        Blaster::new(4, 100, ms(10)),
        Sink::new(4),
        PathConfig::ideal(),
        1,
    )
    .unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    let times: Vec<_> = sim.node_b().got.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, [0, 10, 20, 30].map(Instant::from_millis).to_vec());
}

#[test]
fn ping_timeouts_fire_when_the_link_loses_everything() {
    let path = PathConfig {
        forward: LinkConfig {
            loss: netblt_sim::profiles::profile("wireless")
                .map(|_| netblt_link::LossModel::Bernoulli { p: 1.0 })
                .unwrap(),
            ..LinkConfig::default()
        },
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Pinger::new(3, 10, ms(100)), Echo::default(), path, 1).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    assert_eq!(sim.node_a().timeouts, 3);
    assert_eq!(sim.now(), Instant::from_millis(300));
    assert_eq!(sim.stats().forward.drops.loss, 3);
}

fn lossy_path() -> PathConfig {
    let link = LinkConfig {
        rate_bps: Some(10_000_000),
        delay: ms(15),
        jitter: ms(3),
        loss: netblt_link::LossModel::Bernoulli { p: 0.05 },
        corrupt: 0.02,
        duplicate: 0.02,
        reorder: 0.05,
        reorder_delay: ms(4),
        ..LinkConfig::default()
    };
    PathConfig {
        forward: link.clone(),
        reverse: link,
        host_a: HostModel {
            send_fixed: us(30),
            send_per_byte_ns: 2.0,
            nic_rate_bps: Some(100_000_000),
            nic_buffers: Some(4),
            ..HostModel::default()
        },
        host_b: HostModel {
            recv_fixed: us(40),
            recv_per_byte_ns: 3.0,
            nic_buffers: Some(3),
            nic_loss: 0.01,
            ..HostModel::default()
        },
        wire_overhead: 46,
        segment: None,
    }
}

#[test]
fn same_seed_same_run() {
    let run = |seed| {
        let mut sim = Simulation::new(
            Blaster::new(3000, 1200, us(900)),
            Sink::new(usize::MAX),
            lossy_path(),
            seed,
        )
        .unwrap();
        let outcome = sim.run(LIMIT);
        let got = std::mem::take(&mut sim.node_b_mut().got);
        (outcome, sim.stats(), got, sim.now())
    };
    let first = run(7);
    assert_eq!(first.0, Outcome::Idle);
    assert_eq!(first, run(7));
    assert_ne!(first.1, run(8).1);
    let s = first.1;
    assert!(s.forward.drops.loss > 0 && s.forward.duplicates > 0 && s.forward.reordered > 0);
    assert!(s.host_b.nic_loss_drops > 0);
    assert!(s.host_b.corrupted_received + s.host_b.header_corrupt_drops > 0);
}

#[test]
fn corrupted_packets_have_exactly_one_payload_bit_flipped() {
    let path = PathConfig {
        forward: LinkConfig {
            corrupt: 1.0,
            ..LinkConfig::default()
        },
        wire_overhead: 0,
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Blaster::new(200, 64, ms(0)), Sink::new(200), path, 3).unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    for (i, (_, d)) in sim.node_b().got.iter().enumerate() {
        let mut clean = (i as u32).to_be_bytes().to_vec();
        clean.resize(64, 0xAB);
        let flipped: u32 = d
            .iter()
            .zip(&clean)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(flipped, 1, "packet {i}");
    }
    assert_eq!(sim.stats().host_b.corrupted_received, 200);
}

#[test]
fn flips_in_the_headers_drop_the_packet() {
    // 64 bytes of payload behind 1000 bytes of headers: most flips hit headers.
    let path = PathConfig {
        forward: LinkConfig {
            corrupt: 1.0,
            ..LinkConfig::default()
        },
        wire_overhead: 1000,
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Blaster::new(500, 64, ms(0)), Sink::new(500), path, 3).unwrap();
    sim.run(LIMIT);
    let s = sim.stats().host_b;
    assert_eq!(s.header_corrupt_drops + s.corrupted_received, 500);
    assert!(s.header_corrupt_drops > 400, "{s:?}");
}

#[test]
fn guards_stop_runaway_runs() {
    // A blaster with no limit in sight: the time limit stops it.
    let mut sim = Simulation::new(
        Blaster::new(u32::MAX, 100, ms(1)),
        Sink::new(usize::MAX),
        PathConfig::ideal(),
        1,
    )
    .unwrap();
    assert_eq!(sim.run(Instant::from_millis(50)), Outcome::TimeLimit);
    assert_eq!(sim.now(), Instant::from_millis(50));
    assert_eq!(sim.node_b().got.len(), 51);
    sim.set_event_limit(10);
    assert_eq!(sim.run(LIMIT), Outcome::EventLimit);

    // A node whose timer never moves: the livelock guard stops it.
    let mut sim = Simulation::new(Spinner, Sink::new(1), PathConfig::ideal(), 1).unwrap();
    sim.set_stall_limit(1000);
    assert_eq!(sim.run(LIMIT), Outcome::Stalled);
    assert_eq!(sim.now(), Instant::ZERO);
}

#[test]
fn profiles_build_simulations_and_bad_paths_are_refused() {
    for p in netblt_sim::profiles::all() {
        let path = PathConfig::from(&p);
        let mut sim =
            Simulation::new(Blaster::new(20, 1000, ms(5)), Sink::new(20), path, 1).unwrap();
        let outcome = sim.run(Instant::from_millis(60_000));
        assert!(
            matches!(outcome, Outcome::Finished | Outcome::Idle),
            "{}: {outcome:?}",
            p.name
        );
        assert!(!sim.node_b().got.is_empty(), "{}", p.name);
    }
    let mut bad = PathConfig::ideal();
    bad.host_b.nic_buffers = Some(0);
    assert!(matches!(
        Simulation::new(Sink::new(0), Sink::new(0), bad, 1),
        Err(SimError::Host { side: Side::B, .. })
    ));
    let mut bad = PathConfig::ideal();
    bad.reverse.duplicate = 2.0;
    assert!(matches!(
        Simulation::new(Sink::new(0), Sink::new(0), bad, 1),
        Err(SimError::Link {
            sender: Side::B,
            ..
        })
    ));
}

#[test]
fn mutating_a_node_wakes_its_host() {
    let mut sim = Simulation::new(
        Blaster::new(0, 10, ms(0)),
        Sink::new(2),
        PathConfig::ideal(),
        1,
    )
    .unwrap();
    assert_eq!(sim.run(LIMIT), Outcome::Idle);
    sim.node_a_mut().count = 2;
    assert_eq!(sim.run(LIMIT), Outcome::Finished);
    assert_eq!(sim.node_b().got.len(), 2);
}

#[test]
fn cpu_holding_a_packet_frees_a_buffer_held_by_an_arrival() {
    // B has one buffer and needs 1 ms to send. Its echo of the first packet
    // is ready at 1 ms, but the second packet (arrived at 0.5 ms) holds the
    // buffer: B copies it out, loads the echo, and both echoes get back.
    let path = PathConfig {
        host_b: HostModel {
            send_fixed: ms(1),
            nic_buffers: Some(1),
            ..HostModel::default()
        },
        ..PathConfig::ideal()
    };
    let mut sim = Simulation::new(Blaster::new(2, 10, us(500)), Echo::default(), path, 1).unwrap();
    while sim.step() {}
    let s = sim.stats();
    assert_eq!(s.host_b.nic_full_drops, 0);
    assert_eq!((s.host_b.packets_sent, s.host_a.packets_received), (2, 2));
    assert_eq!(sim.now(), Instant::from_millis(2));
}
