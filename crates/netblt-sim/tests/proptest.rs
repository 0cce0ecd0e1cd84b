//! Arbitrary paths and traffic: the simulator never panics, always stops,
//! and accounts for every packet.

mod toys;

use netblt_sim::profiles::{CrossTraffic, EthernetSegment};
use netblt_sim::{Duration, HostModel, Instant, LinkConfig, PathConfig, Simulation};
use proptest::prelude::*;
use toys::{Blaster, Echo};

fn host() -> impl Strategy<Value = HostModel> {
    (
        0u64..2_000_000,
        0.0..5_000.0f64,
        0u64..2_000_000,
        0.0..5_000.0f64,
        proptest::option::of(1_000u64..1_000_000_000),
        proptest::option::of(1usize..4),
        any::<bool>(),
        0.0..0.5f64,
    )
        .prop_map(|(sf, sb, rf, rb, rate, bufs, hd, loss)| HostModel {
            send_fixed: Duration::from_nanos(sf),
            send_per_byte_ns: sb,
            recv_fixed: Duration::from_nanos(rf),
            recv_per_byte_ns: rb,
            nic_rate_bps: rate,
            nic_buffers: bufs,
            half_duplex: hd,
            nic_loss: loss,
            nic_reenable: Duration::ZERO,
        })
}

fn link() -> impl Strategy<Value = LinkConfig> {
    (
        proptest::option::of(10_000u64..1_000_000_000),
        0u64..50_000_000,
        0u64..5_000_000,
        0.0..0.3f64,
        0.0..0.3f64,
        0.0..0.3f64,
        0.0..0.3f64,
        proptest::option::of(100usize..3000),
    )
        .prop_map(
            |(rate, delay, jitter, loss, corrupt, dup, reorder, mtu)| LinkConfig {
                rate_bps: rate,
                delay: Duration::from_nanos(delay),
                jitter: Duration::from_nanos(jitter),
                loss: netblt_link::LossModel::Bernoulli { p: loss },
                corrupt,
                duplicate: dup,
                reorder,
                reorder_delay: Duration::from_millis(3),
                mtu,
                ..LinkConfig::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_packet_is_accounted_for(
        host_a in host(), host_b in host(), forward in link(), reverse in link(),
        overhead in 0usize..64, count in 0u32..200, size in 0usize..2000, gap in 0u64..2_000_000,
        seed: u64, cross in proptest::option::of(0.0..0.95f64),
    ) {
        // Sometimes both hosts share a CSMA/CD segment with other traffic.
        let segment = cross.map(|load| EthernetSegment {
            cross: CrossTraffic { load, ..CrossTraffic::default() },
            ..EthernetSegment::default()
        });
        let path = PathConfig { forward, reverse, host_a, host_b, wire_overhead: overhead, segment };
        let mut sim = Simulation::new(
            Blaster::new(count, size, Duration::from_nanos(gap)),
            Echo::default(),
            path,
            seed,
        ).unwrap();
        let mut steps = 0u64;
        while sim.step() {
            steps += 1;
            prop_assert!(steps < 1_000_000, "did not stop");
        }
        let s = sim.stats();
        prop_assert!(sim.now() < Instant::from_millis(1_000_000));
        for (host, link) in [(s.host_b, s.forward), (s.host_a, s.reverse)] {
            let arrived = link.delivered + link.duplicates;
            let lost = host.nic_deaf_drops + host.nic_full_drops + host.nic_loss_drops
                + host.header_corrupt_drops;
            prop_assert_eq!(arrived, host.packets_received + lost);
        }
        // A frame the segment gave up on (16 collisions) was not sent.
        prop_assert_eq!(s.host_a.packets_sent + s.host_a.nic_tx_aborts, u64::from(sim.node_a().sent));
        prop_assert_eq!(s.host_b.packets_sent + s.host_b.nic_tx_aborts, u64::from(sim.node_b().echoed));
    }
}
