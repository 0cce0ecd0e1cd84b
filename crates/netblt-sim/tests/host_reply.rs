//! A host answers the datagram it just handled before it serves the next
//! arrival (run to completion; decision Q7). RFC 1030 §6: with two
//! outstanding buffers "the sender of data can transmit constantly; this
//! means that when the receiver of data attempts to send a packet, its
//! interface's receive hardware goes deaf" — the receiver sends its OK/GO
//! while data keep arriving. Also the interface's re-enable time
//! (`HostModel::nic_reenable`).

mod toys;

use netblt_proto::{PacingClock, TransferParams};
use netblt_sim::profiles;
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::{Duration, HostModel, LinkConfig, PathConfig, Simulation};
use toys::{Blaster, Sink};

#[test]
fn a_busy_receiver_still_sends_one_control_packet_per_buffer() {
    // The 3C500 PC/AT receives a packet in 6.1 ms and sends one in 6.0 ms
    // (RFC 1030 §4), so at 5 packets per 30 ms the receiver's CPU always has
    // an arrival waiting. Without the segment the run is deterministic.
    let p = profiles::profile("ethernet-3c500").expect("profile");
    let mut path = PathConfig::from_profile(&p);
    path.segment = None;
    let params = TransferParams {
        packet_size: 1438,
        buffer_size: 14_380,
        burst_size: 5,
        burst_interval_ms: 30,
        max_buffers: 2,
        checksum_data: true,
    };
    let buffers = 20;
    let mut spec = TransferSpec::new(path, params, 14_380 * buffers);
    spec.pacing_clock = PacingClock::FromActualStart;
    let r = run_transfer(&spec).expect("runs");
    assert!(r.verified, "{:?}", r.error);
    // Each completed buffer's OK (with the next GO) leaves at once: about one
    // control packet per buffer. Had arrivals always come first, the OK/GO
    // would wait for the sender to run out of buffers: one packet per two.
    assert!(
        r.control_packets >= buffers - 1,
        "{} control packets for {buffers} buffers",
        r.control_packets
    );
}

/// Ten 1000-byte packets 100 us apart to a host whose interface stays deaf
/// for `reenable` after each copy-out (RFC 1030 §7's "long interface
/// re-enable time"): how many did its interface lose?
fn deaf_drops(reenable: Duration) -> u64 {
    let path = PathConfig {
        forward: LinkConfig::with_rate_delay(1_000_000_000, Duration::from_micros(10)),
        reverse: LinkConfig::with_rate_delay(1_000_000_000, Duration::from_micros(10)),
        host_a: HostModel::default(),
        host_b: HostModel {
            // A 5 us copy-out (half of 10 ns/byte), then the re-enable time.
            recv_per_byte_ns: 10.0,
            nic_buffers: Some(1),
            nic_reenable: reenable,
            ..HostModel::default()
        },
        wire_overhead: 0,
        segment: None,
    };
    let mut sim = Simulation::new(
        Blaster::new(10, 1000, Duration::from_micros(100)),
        Sink::new(10),
        path,
        1,
    )
    .expect("path");
    while sim.step() {}
    sim.stats().host_b.nic_deaf_drops
}

#[test]
fn input_stays_off_for_the_reenable_time() {
    assert_eq!(deaf_drops(Duration::ZERO), 0);
    // 150 us of re-enable time: the packet 100 us after each one taken is
    // lost, the one after it is taken: five of ten.
    assert_eq!(deaf_drops(Duration::from_micros(150)), 5);
}
