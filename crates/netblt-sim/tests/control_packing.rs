//! `TransferSpec::one_control_message_per_packet`: the receiver sends each
//! control message in a CONTROL packet of its own, as RFC 1030's
//! implementation did before §7's change ("packing as many control messages
//! as possible into a single control packet (rather than placing only one
//! message in a control packet)").

use netblt_proto::{PacingClock, TransferParams};
use netblt_sim::profiles;
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::PathConfig;

/// Packets host B (the data receiver) sent in a lock-step 3C500 transfer of
/// `buffers` buffers.
fn receiver_packets(one_message: bool, buffers: u64) -> u64 {
    let p = profiles::profile("ethernet-3c500").expect("profile");
    let mut path = PathConfig::from_profile(&p);
    path.segment = None;
    let params = TransferParams {
        packet_size: 1438,
        buffer_size: 14_380,
        burst_size: 5,
        burst_interval_ms: 40,
        max_buffers: 1,
        checksum_data: true,
    };
    let mut spec = TransferSpec::new(path, params, 14_380 * buffers);
    spec.pacing_clock = PacingClock::FromActualStart;
    spec.one_control_message_per_packet = one_message;
    let r = run_transfer(&spec).expect("runs");
    assert!(r.verified, "{:?}", r.error);
    r.sim.expect("stats").host_b.packets_sent
}

#[test]
fn ok_and_go_leave_in_separate_packets() {
    let buffers = 20;
    // The engine packs OK(n) with GO(n+1): about one packet per buffer.
    let packed = receiver_packets(false, buffers);
    assert!(packed <= buffers + 3, "{packed}");
    // One message per packet: OK(n) and GO(n+1) apart, about two.
    let split = receiver_packets(true, buffers);
    assert!(split >= 2 * buffers - 1, "{split}");
}
