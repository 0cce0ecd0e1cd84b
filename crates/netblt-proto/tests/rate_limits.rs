//! Rate limits set by the application while a transfer runs (decision R27),
//! with explicit time: under RFC 998's fixed rate and under the adaptive
//! controller, a cap holds the sender under it from the next packets on,
//! and lifting it gives back the negotiated rate (fixed) or the path's
//! (adaptive).

mod pair;

use netblt_proto::{Config, Duration, Instant, Policy, RateLimits, TransferParams};
use pair::{pattern, Bottleneck, Pair};

const MBIT: f64 = 1e6;

/// RFC 998's fixed rate at 89 packets of 1400 bytes per millisecond (about
/// 1 Gb/s), four buffers of 100 packets.
fn fixed_config() -> Config {
    Config {
        params: TransferParams {
            packet_size: 1400,
            buffer_size: 140_000,
            burst_size: 89,
            burst_interval_ms: 1,
            max_buffers: 4,
            checksum_data: false,
        },
        death_timeout: Duration::from_secs(10),
        ..Config::default()
    }
}

fn cap(bps: f64) -> RateLimits {
    RateLimits {
        min_bps: 0,
        max_bps: Some(bps as u64),
    }
}

/// Steps the pair until its clock reaches `t` (or the transfer ends).
fn drive_until(p: &mut Pair, t: Instant) {
    while p.now < t && p.finished_at.is_none() {
        let next = p.steps + 1;
        p.drive(next);
    }
}

/// Bytes delivered to B's application from `from` to `to`.
fn delivered_between(p: &mut Pair, from: Instant, to: Instant) -> usize {
    drive_until(p, from);
    let before = p.received.len();
    drive_until(p, to);
    p.received.len() - before
}

/// B, the data receiver (made when A's OPEN arrives).
fn receiver(p: &mut Pair) -> &mut netblt_proto::Connection {
    p.b.as_mut().expect("B has accepted the OPEN")
}

fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

#[test]
fn a_cap_set_before_open_holds_a_fixed_rate_transfer_under_it() {
    let cfg = fixed_config();
    let size = 1_400_000; // 1,000 packets
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 1), 1);
    // One 1400-byte packet per millisecond.
    p.a.set_rate_limits(cap(11.2 * MBIT));
    assert!(p.drive(2_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data);
    let secs = p.finished_at.unwrap().since_zero().as_secs_f64();
    // Uncapped, the same transfer takes about 30 ms (tested below).
    assert!(secs > 0.95, "finished in {secs} s: the cap did not hold");
    assert_eq!(p.a.current_rate(), (1, 1));
}

#[test]
fn lifting_a_fixed_rate_cap_gives_back_the_negotiated_rate() {
    let cfg = fixed_config();
    let size = 1_400_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 2), 2);
    p.a.set_rate_limits(cap(11.2 * MBIT));
    let slow = delivered_between(&mut p, at_ms(100), at_ms(300));
    // 200 packets' time, give or take a buffer in flight.
    assert!(slow <= 340 * 1400, "{slow} bytes in 200 ms under the cap");
    // The receiver's OKs echo the capped burst the NULL-ACK told it: taken
    // for the receiver's own limit, they would keep the cap after it lifts.
    p.a.set_rate_limits(RateLimits::default());
    assert!(p.drive(2_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data);
    let end = p.finished_at.unwrap().since_zero().as_secs_f64();
    assert!(end < 0.5, "finished at {end} s: the cap did not lift");
    assert_eq!(p.a.current_rate(), (89, 1));

    let cfg = fixed_config();
    let mut free = Pair::write(cfg.clone(), cfg, pattern(size, 2), 2);
    assert!(free.drive(2_000_000));
    assert!(free.finished_at.unwrap().since_zero().as_secs_f64() < 0.1);
}

#[test]
fn an_adaptive_sender_stays_under_a_cap_and_finds_the_path_again_when_it_lifts() {
    let cfg = pair::adaptive_config(Policy::Fair, 32);
    let size = 60_000_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 3), 3);
    p.latency = Duration::from_millis(20);
    p.bottleneck = Some(Bottleneck::new(100.0 * MBIT, 500_000));
    p.recycle = true;
    let free = delivered_between(&mut p, at_ms(1_000), at_ms(1_500)) as f64 * 8.0 / 0.5;
    assert!(free > 80.0 * MBIT, "{free} b/s before the cap");
    drive_until(&mut p, at_ms(1_500));
    p.a.set_rate_limits(cap(20.0 * MBIT));
    // A round trip for what was in flight, then the cap.
    let capped = delivered_between(&mut p, at_ms(1_700), at_ms(2_700)) as f64 * 8.0;
    assert!(
        capped <= 20.0 * MBIT * 1.02,
        "{capped} b/s under a 20 Mb/s cap"
    );
    assert!(capped > 15.0 * MBIT, "{capped} b/s: far under the cap");
    let st = p.a.rate_state().expect("rate control on");
    assert_eq!(st.reason, netblt_proto::RateReason::Cap);
    p.a.set_rate_limits(RateLimits::default());
    // STARTUP again: near the path's rate from a round trip or two after
    // the cap lifts (with 1.25x probes instead, 57 Mb/s in this window and
    // 100 Mb/s only from 400 ms on).
    let lifted = delivered_between(&mut p, at_ms(2_800), at_ms(3_100)) as f64 * 8.0 / 0.3;
    assert!(lifted > 75.0 * MBIT, "{lifted} b/s after the cap lifted");
    assert!(p.drive(40_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data);
}

/// The data receiver's limit (R31): set on B, it reaches A in the burst
/// values of B's OKs (RFC 998 §4, "The receiving end sends burst size and
/// burst rate values in its OK messages") and holds A's controller under
/// it; lifted, the OKs offer the agreed rate again and A finds the path.
#[test]
fn a_receivers_cap_holds_an_adaptive_sender_and_lifting_it_frees_it() {
    let cfg = pair::adaptive_config(Policy::Fair, 32);
    let size = 60_000_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 4), 4);
    p.latency = Duration::from_millis(20);
    p.bottleneck = Some(Bottleneck::new(100.0 * MBIT, 500_000));
    p.recycle = true;
    let free = delivered_between(&mut p, at_ms(1_000), at_ms(1_500)) as f64 * 8.0 / 0.5;
    assert!(free > 80.0 * MBIT, "{free} b/s before the cap");
    receiver(&mut p).set_rate_limits(cap(20.0 * MBIT));
    // The next OK and half a round trip, then the cap.
    let capped = delivered_between(&mut p, at_ms(1_800), at_ms(2_800)) as f64 * 8.0;
    assert!(
        capped <= 20.0 * MBIT * 1.02,
        "{capped} b/s under the receiver's 20 Mb/s cap"
    );
    assert!(capped > 15.0 * MBIT, "{capped} b/s: far under the cap");
    assert_eq!(
        p.a.rate_state().expect("rate control on").reason,
        netblt_proto::RateReason::Cap
    );
    receiver(&mut p).set_rate_limits(RateLimits::default());
    let lifted = delivered_between(&mut p, at_ms(3_000), at_ms(3_300)) as f64 * 8.0 / 0.3;
    assert!(lifted > 75.0 * MBIT, "{lifted} b/s after the cap lifted");
    assert!(p.drive(40_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data);
}

/// Under RFC 998's fixed rate the receiver's offer is the rate when it is
/// lower; the sender's NULL-ACK says so, and the agreed rate comes back
/// when the offer does.
#[test]
fn a_receivers_cap_sets_a_fixed_rate_and_lifting_it_gives_the_agreed_rate_back() {
    let cfg = fixed_config();
    let size = 1_400_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 5), 5);
    drive_until(&mut p, at_ms(1));
    receiver(&mut p).set_rate_limits(cap(11.2 * MBIT));
    // The first buffer goes at the agreed rate (no OK yet); then one packet
    // per millisecond.
    let slow = delivered_between(&mut p, at_ms(100), at_ms(300));
    assert!(slow <= 340 * 1400, "{slow} bytes in 200 ms under the cap");
    assert_eq!(p.a.current_rate(), (1, 1));
    receiver(&mut p).set_rate_limits(RateLimits::default());
    assert!(p.drive(2_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data);
    let end = p.finished_at.unwrap().since_zero().as_secs_f64();
    assert!(end < 0.6, "finished at {end} s: the cap did not lift");
    assert_eq!(p.a.current_rate(), (89, 1));
}
