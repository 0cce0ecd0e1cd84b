//! A host answers the datagram it just handled before it serves the next
//! arrival (run to completion; decision Q7). RFC 1030 §6: with two
//! outstanding buffers "the sender of data can transmit constantly; this
//! means that when the receiver of data attempts to send a packet, its
//! interface's receive hardware goes deaf" — the receiver sends its OK/GO
//! while data keep arriving.

use netblt_proto::{PacingClock, TransferParams};
use netblt_sim::profiles;
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::PathConfig;

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
