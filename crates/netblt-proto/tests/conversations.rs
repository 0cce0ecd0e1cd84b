//! Scripted transfers over the in-memory pair, with explicit time.

mod pair;

use netblt_proto::{Config, ConnectionError, Duration, TransferParams};
use pair::{pattern, Impair, Pair};

fn config(psz: u16, bsz: u32, buffers: u16) -> Config {
    Config {
        params: TransferParams {
            packet_size: psz,
            buffer_size: bsz,
            burst_size: 5,
            burst_interval_ms: 2,
            max_buffers: buffers,
            checksum_data: true,
        },
        death_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

fn run_write(len: usize, psz: u16, bsz: u32, buffers: u16, seed: u64, imp: Impair) -> Pair {
    let mut p = Pair::write(
        config(psz, bsz, buffers),
        config(psz, bsz, buffers),
        pattern(len, seed),
        seed,
    );
    p.impair_ab = imp;
    p.impair_ba = imp;
    assert!(
        p.drive(2_000_000),
        "transfer did not finish: {:?} {:?}",
        p.events_a,
        p.events_b
    );
    p
}

#[test]
fn lossless_single_buffer_lock_step() {
    let p = run_write(19_900, 1990, 19_900, 1, 1, Impair::default());
    assert!(p.received == p.sent_data);
    assert_eq!(p.a.result(), Some(&Ok(())));
    assert_eq!(p.b.as_ref().unwrap().result(), Some(&Ok(())));
    let s = p.a.stats();
    assert_eq!(s.data_packets_sent, 10);
    assert_eq!(s.data_packets_retransmitted, 0);
    assert_eq!(p.events_b[0], "\"Connected(psz=1990, bsz=19900)\"");
}

#[test]
fn lossless_many_buffers_in_order() {
    let p = run_write(1_000_003, 1000, 10_000, 4, 2, Impair::default());
    assert_eq!(p.received.len(), p.sent_data.len());
    assert!(p.received == p.sent_data);
    let rs = p.b.as_ref().unwrap().stats();
    assert_eq!(rs.buffers, 101);
    assert_eq!(rs.data_timeouts, 0);
    assert_eq!(p.a.stats().data_packets_retransmitted, 0);
}

#[test]
fn boundary_sizes() {
    for len in [0usize, 1, 999, 1000, 1001, 9_999, 10_000, 10_001, 30_001] {
        let p = run_write(len, 1000, 10_000, 2, len as u64, Impair::default());
        assert!(p.received == p.sent_data, "len {len}");
        assert_eq!(p.a.result(), Some(&Ok(())), "len {len}");
    }
}

#[test]
fn read_mode_passive_end_sends() {
    let data = pattern(55_555, 9);
    let mut p = Pair::read(
        config(1000, 10_000, 3),
        config(1000, 10_000, 3),
        data.clone(),
        9,
    );
    assert!(p.drive(2_000_000));
    assert!(p.received == data);
}

#[test]
fn passive_end_restricts_parameters() {
    let mut b = config(500, 4_000, 2);
    b.params.burst_interval_ms = 7;
    let data = pattern(20_000, 3);
    let mut p = Pair::write(config(1000, 10_000, 4), b, data.clone(), 3);
    assert!(p.drive(2_000_000));
    assert!(p.received == data);
    let params = *p.a.params();
    assert_eq!(
        (
            params.packet_size,
            params.buffer_size,
            params.max_buffers,
            params.burst_interval_ms
        ),
        (500, 4_000, 2, 7)
    );
}

#[test]
fn recovers_from_loss_both_ways() {
    for seed in 0..40 {
        let imp = Impair {
            loss: 0.2,
            duplicate: 0.05,
            corrupt: 0.05,
            reorder: 0.1,
        };
        let p = run_write(50_000, 1000, 10_000, 3, seed, imp);
        assert_eq!(
            p.a.result(),
            Some(&Ok(())),
            "seed {seed}: {:?} / {:?}",
            p.events_a,
            p.events_b
        );
        assert!(p.received == p.sent_data, "seed {seed}");
    }
}

#[test]
fn death_timer_when_receiver_vanishes() {
    let data = pattern(100_000, 4);
    let mut p = Pair::write(config(1000, 10_000, 2), config(1000, 10_000, 2), data, 4);
    p.impair_ba = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.drive(2_000_000);
    match p.a.result() {
        Some(Err(ConnectionError::OpenTimeout { .. })) => {}
        other => panic!("{other:?}"),
    }
    // Now a receiver that dies after the connection opened.
    let mut p = Pair::write(
        config(1000, 10_000, 2),
        config(1000, 10_000, 2),
        pattern(1_000_000, 5),
        5,
    );
    assert!(!p.drive(40), "should not finish in 40 steps");
    assert!(!p.received.is_empty() && p.received.len() < 1_000_000);
    p.impair_ba = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.impair_ab = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.drive(2_000_000);
    assert!(
        matches!(
            p.a.result(),
            Some(Err(ConnectionError::DeathTimeout { .. }))
        ),
        "{:?}",
        p.a.result()
    );
    let b = p.b.as_ref().unwrap();
    assert!(
        matches!(b.result(), Some(Err(ConnectionError::DeathTimeout { .. }))),
        "{:?} after {} bytes",
        b.result(),
        p.received.len()
    );
    assert!(p.events_a.iter().any(|e| e.contains("DeathTimeout")));
    assert!(!p.events_b.iter().any(|e| e.contains("Finished")));
}
