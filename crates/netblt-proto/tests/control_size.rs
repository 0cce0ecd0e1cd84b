//! Control packets stay within one datagram of the path's size.
//!
//! Regression test for issue 9: a sender offering far more than the path
//! carries lost most of its DATA in the bottleneck queue, the receiver's
//! RESEND lists grew, and its whole control FIFO went out as one UDP
//! datagram of 7-22 KB (the driver's transmit slot is 64 KB). IP cut each
//! into 5-16 fragments; with 5 % loss per fragment the incomplete ones
//! filled the sender's reassembly memory (`ipfrag_high_thresh`, 4 MB, held
//! for `ipfrag_time`, 30 s), after which the kernel refused every fragment
//! and the live receiver was declared dead by the 10 s death timer. The
//! FIFO must be sent as several datagrams of at most `Config::max_datagram`
//! bytes each (RFC 998 §5.2.1 allows "multiple control packets if a single
//! control packet may not be sufficient").

mod pair;

use netblt_proto::{Config, Duration, TransferParams};
use pair::{pattern, Impair, Pair};

fn config() -> Config {
    Config {
        params: TransferParams {
            // 1000 packets per buffer: half of them lost makes RESEND lists
            // of about a kilobyte per buffer, several buffers outstanding.
            packet_size: 100,
            buffer_size: 100_000,
            burst_size: 50,
            burst_interval_ms: 1,
            max_buffers: 8,
            checksum_data: false,
        },
        death_timeout: Duration::from_secs(10),
        max_datagram: 1472,
        ..Config::default()
    }
}

/// A flood that the path halves, control coming back over a lossy path:
/// every control datagram fits the MTU, and the transfer completes.
#[test]
fn control_fifo_is_split_to_the_mtu_under_heavy_loss() {
    for seed in 0..4 {
        let mut p = Pair::write(config(), config(), pattern(1_600_000, seed), seed);
        p.mtu = Some(1472);
        p.impair_ab = Impair {
            loss: 0.5,
            ..Impair::default()
        };
        p.impair_ba = Impair {
            loss: 0.05,
            ..Impair::default()
        };
        let done = p.drive(5_000_000);
        let rs = p.b.as_ref().map(|b| b.stats().clone()).unwrap_or_default();
        assert!(
            rs.data_packets_lost > 1000,
            "seed {seed}: the scenario needs long RESEND lists ({} lost)",
            rs.data_packets_lost
        );
        assert_eq!(
            p.fragmented, 0,
            "seed {seed}: {} datagrams over the MTU, largest {} bytes",
            p.fragmented, p.largest
        );
        assert!(
            done && p.a.result() == Some(&Ok(())),
            "seed {seed}: {:?} / {:?}",
            p.a.result(),
            p.events_b.last()
        );
        assert!(p.received == p.sent_data, "seed {seed}");
    }
}
