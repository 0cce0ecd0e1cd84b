//! Stories on the named profiles: the host and channel figures the papers
//! state come out of the simulator unchanged.

mod toys;

use netblt_sim::profiles::profile;
use netblt_sim::{Duration, Instant, Outcome, PathConfig, Simulation};
use toys::{Blaster, Sink};

const DATA_HEADER: usize = 24;

fn arrival_gaps(sink: &Sink) -> Vec<Duration> {
    sink.got.windows(2).map(|w| w[1].0 - w[0].0).collect()
}

#[test]
fn proteon_pc_at_sends_a_maximum_packet_every_8_ms() {
    // RFC 1030 §4: 8 ms per 1990-byte packet, "a maximum theoretical
    // throughput of 1.99 megabits per second".
    let p = profile("proteon-ring").unwrap();
    let n = 50;
    let mut sim = Simulation::new(
        Blaster::new(n, 1990 + DATA_HEADER, Duration::ZERO),
        Sink::new(n as usize),
        PathConfig::from(&p),
        1,
    )
    .unwrap();
    assert_eq!(sim.run(Instant::from_millis(10_000)), Outcome::Finished);
    for gap in arrival_gaps(sim.node_b()) {
        assert!(
            gap.abs_diff(Duration::from_millis(8)) < Duration::from_nanos(10),
            "{gap:?}"
        );
    }
    let s = sim.stats();
    assert_eq!(s.host_b.nic_full_drops + s.host_b.nic_deaf_drops, 0);
}

#[test]
fn ethernet_pc_at_receiver_keeps_up_with_one_buffer() {
    // §4: 6.0 ms to send and 6.1 ms to receive a 1438-byte packet. A burst
    // of 5 back-to-back packets: the receiver falls behind by 0.1 ms per
    // packet, but its one buffer holds the next arrival while the CPU works.
    let mut p = profile("ethernet-3c500").unwrap();
    p.forward.ber = 0.0;
    let mut sim = Simulation::new(
        Blaster::new(5, 1438 + DATA_HEADER, Duration::ZERO),
        Sink::new(5),
        PathConfig::from(&p),
        1,
    )
    .unwrap();
    assert_eq!(sim.run(Instant::from_millis(1_000)), Outcome::Finished);
    for gap in arrival_gaps(sim.node_b()) {
        assert_eq!(gap, Duration::from_micros(6_100));
    }
}

#[test]
fn wideband_channel_carries_two_packets_per_frame() {
    // Appendix I: 3006 bytes per 21.22 ms frame, two maximum-sized Ethernet
    // packets. A sender far faster than the channel (a modern host here):
    // arrivals come in pairs, one pair per frame.
    let p = profile("wideband").unwrap();
    let mut path = PathConfig::from(&p);
    path.host_a = Default::default();
    path.forward.delay_spike = None;
    path.host_b.nic_loss = 0.0;
    let n = 40;
    let mut sim = Simulation::new(
        Blaster::new(n, 1432 + DATA_HEADER, Duration::ZERO),
        Sink::new(n as usize),
        path,
        1,
    )
    .unwrap();
    assert_eq!(sim.run(Instant::from_millis(10_000)), Outcome::Finished);
    let times: Vec<Instant> = sim.node_b().got.iter().map(|(t, _)| *t).collect();
    for pair in times.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    let frame = Duration::from_micros(21_220);
    for w in times.windows(3).step_by(2) {
        assert_eq!(w[2] - w[0], frame);
    }
    // First delivery: end of frame 0 (the packets reach the channel in it)
    // plus the one-way delay.
    assert_eq!(times[0], Instant::ZERO + frame + p.forward.delay);
}

#[test]
fn satellite_round_trip_is_580_ms() {
    let p = profile("t1-satellite").unwrap();
    let mut path = PathConfig::from(&p);
    path.forward.ber = 0.0;
    path.reverse.ber = 0.0;
    let mut sim = Simulation::new(
        toys::Pinger::new(3, 1, Duration::from_secs(5)),
        toys::Echo::default(),
        path,
        1,
    )
    .unwrap();
    assert_eq!(sim.run(Instant::from_millis(100_000)), Outcome::Finished);
    // 580 ms plus twice the serialization of 1 + 36 bytes at 1.544 Mb/s.
    let wire = Duration::from_nanos((37 * 8 * 1_000_000_000u64).div_ceil(1_544_000));
    for rtt in &sim.node_a().rtts {
        assert_eq!(*rtt, Duration::from_millis(580) + wire * 2);
    }
}
