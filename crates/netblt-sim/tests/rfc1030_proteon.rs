//! RFC 1030 §5 on the Proteon ring, from physical parameters alone: within
//! 10 % of the paper's single-buffer 5/40 (1.49 Mb/s) and two-buffer 5/43
//! (1.75 Mb/s) results, and two buffers clearly faster than one (lock-step
//! costs a round trip per buffer). Simulated time: deterministic.

use netblt_proto::{PacingClock, TransferParams};
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::{profiles, PathConfig};

fn proteon(interval: u16, buffers: u16) -> f64 {
    let p = profiles::profile("proteon-ring").expect("profile");
    let params = TransferParams {
        packet_size: 1990,
        buffer_size: 19_900,
        burst_size: 5,
        burst_interval_ms: interval,
        max_buffers: buffers,
        checksum_data: true,
    };
    let mut spec = TransferSpec::new(PathConfig::from_profile(&p), params, 1_990_000);
    spec.pacing_clock = PacingClock::FromActualStart;
    let r = run_transfer(&spec).expect("runs");
    assert!(r.verified, "{:?}", r.error);
    r.steady_throughput_bps.expect("steady throughput") / 1e6
}

#[test]
fn single_buffer_5_40_within_10_percent_of_1_49() {
    let mbps = proteon(40, 1);
    assert!((mbps / 1.49 - 1.0).abs() <= 0.10, "{mbps:.3} Mb/s");
}

#[test]
fn two_buffers_5_43_within_10_percent_of_1_75() {
    let mbps = proteon(43, 2);
    assert!((mbps / 1.75 - 1.0).abs() <= 0.10, "{mbps:.3} Mb/s");
}

#[test]
fn lock_step_costs_a_round_trip_per_buffer() {
    let one = proteon(40, 1);
    let two = proteon(40, 2);
    assert!(two > one * 1.05, "one buffer {one:.3}, two {two:.3}");
}
