//! Rate control over a bottleneck, with explicit time: the adaptive
//! controller finds the path's rate, keeps it on a noisy link, keeps the
//! queue short, and the FEEDBACK extension falls back to RFC 998 when a peer
//! does not offer it. Bounds are loose; exact figures belong to the
//! benchmarks (bench/wan.sh) and the simulator's dumbbell.

mod pair;

use netblt_proto::{Config, Duration, Policy};
use pair::{pattern, Bottleneck, Pair};

const MBIT: f64 = 1e6;

fn adaptive(policy: Policy) -> Config {
    pair::adaptive_config(policy, 32)
}

struct Run {
    goodput_bps: f64,
    drops: u64,
    offered: u64,
    p95_queue: Duration,
    /// After the first quarter of the packets (start-up left out).
    p95_queue_steady: Duration,
    retransmitted: u64,
    pair: Pair,
}

/// Sends `size` bytes over `rate` bits/s, `rtt` round trip, `queue` bytes
/// of drop-tail queue and `loss` random loss after the bottleneck.
fn run(
    policy: Policy,
    size: usize,
    rate: f64,
    rtt_ms: u64,
    queue: usize,
    loss: f64,
    seed: u64,
) -> Run {
    let cfg = adaptive(policy);
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, seed), seed);
    p.latency = Duration::from_millis(rtt_ms / 2);
    p.bottleneck = Some(Bottleneck::new(rate, queue));
    p.impair_ab.loss = loss;
    p.recycle = true;
    assert!(p.drive(20_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data, "bytes differ");
    let start = p.a.stats().first_data_at.unwrap();
    let end = p.finished_at.unwrap();
    let secs = end.saturating_duration_since(start).as_secs_f64();
    let b = p.bottleneck.as_ref().unwrap();
    Run {
        goodput_bps: size as f64 * 8.0 / secs,
        drops: b.dropped,
        offered: b.offered,
        p95_queue: b.delay_quantile(0.95),
        p95_queue_steady: b.delay_quantile_from(b.delays_us.len() / 4, 0.95),
        retransmitted: p.a.stats().data_packets_retransmitted,
        pair: p,
    }
}

#[test]
fn finds_the_path_rate_alone() {
    // 100 Mb/s, 40 ms, one BDP of queue; 25 MB (about 2 s).
    let r = run(Policy::Fair, 25_000_000, 100.0 * MBIT, 40, 500_000, 0.0, 1);
    let st = r.pair.a.rate_state().expect("rate control on");
    println!(
        "goodput {:.1} Mb/s, drops {}/{}, p95 queue {:?} (steady {:?}), rxm {}, state {:?}",
        r.goodput_bps / MBIT,
        r.drops,
        r.offered,
        r.p95_queue,
        r.p95_queue_steady,
        r.retransmitted,
        st
    );
    // Payload share of the wire: 1400 of 1452 bytes.
    assert!(r.goodput_bps > 0.80 * 100.0 * MBIT * 1400.0 / 1452.0);
    assert!(
        r.drops * 20 < r.offered,
        "{} of {} dropped",
        r.drops,
        r.offered
    );
    let bw = st.bottleneck_bps.unwrap();
    assert!(bw > 80.0 * MBIT && bw < 130.0 * MBIT, "estimate {bw}");
}

#[test]
fn keeps_the_rate_on_a_noisy_link() {
    // 5 % random loss after the bottleneck, no congestion: the rate stays.
    let r = run(Policy::Fair, 8_000_000, 50.0 * MBIT, 20, 250_000, 0.05, 2);
    let st = r.pair.a.rate_state().unwrap();
    println!(
        "goodput {:.1} Mb/s, drops {}, random losses {}, rxm {}, p95 queue {:?}, state {:?}",
        r.goodput_bps / MBIT,
        r.drops,
        r.pair.bottleneck.as_ref().unwrap().lost,
        r.retransmitted,
        r.p95_queue,
        st
    );
    assert!(r.goodput_bps > 0.70 * 50.0 * MBIT * 0.95 * 1400.0 / 1452.0);
    assert!(st.noise_loss > 0.02, "noise {}", st.noise_loss);
}

#[test]
fn fixed_policy_and_plain_peers_keep_rfc998_rates() {
    // A peer that does not offer FEEDBACK: no FEEDBACK is sent, the sender
    // keeps the negotiated rate.
    let a = adaptive(Policy::Fair);
    let mut b = adaptive(Policy::Fair);
    b.rate_feedback = false;
    let mut p = Pair::write(a, b, pattern(200_000, 3), 3);
    assert!(p.drive(1_000_000));
    assert_eq!(p.received, p.sent_data);
    assert!(!p.a.rate_feedback());
    assert!(p.a.rate_state().is_none());
    assert_eq!(p.b.as_ref().unwrap().stats().feedback_sent, 0);
}

/// A receiver with a FEEDBACK pending when the peer QUITs: its timer must
/// not stay in the past (FEEDBACKs go out only while open; a busy loop).
#[test]
fn a_pending_feedback_does_not_spin_after_quit() {
    use netblt_proto::{Connection, Instant};
    use netblt_wire::{DataRepr, Repr};
    let cfg = adaptive(Policy::Fair);
    let open = pair::open_write(2800, 2800, 2);
    let t0 = Instant::ZERO;
    let mut r = Connection::accept(cfg, &open, 7000, 5000, vec![], t0).unwrap();
    let mut buf = vec![0u8; 70_000];
    while r.poll_transmit(t0, &mut buf).is_some() {}
    let emit = pair::emit_from_5000;
    let payload = vec![7u8; 1400];
    let data = emit(Repr::Data(DataRepr {
        buffer: 1,
        high_ack: 0,
        packet: 0,
        last_buffer: false,
        data_checksum: 0,
        data: &payload,
    }));
    let t1 = Instant::from_millis(1);
    r.handle_datagram(t1, &data);
    assert!(r.rate_feedback());
    r.handle_datagram(t1, &emit(Repr::Quit { reason: b"bye" }));
    while r.poll_transmit(t1, &mut buf).is_some() {}
    let t = r.poll_timeout().expect("a dally timer");
    assert!(t > t1, "timer at {t}, now {t1}: would spin");
}

/// Decision R22: what the sender counts in flight, less what is really on
/// its way (queued or travelling), averaged over each second of a transfer
/// at 100 Mb/s, 10 ms and 10 % loss after the bottleneck (5 % back).
fn inflight_excess_by_second(seed: u64) -> Vec<f64> {
    let cfg = adaptive(Policy::Fair);
    let size = 40_000_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, seed), seed);
    p.latency = Duration::from_millis(5);
    p.bottleneck = Some(Bottleneck::new(100.0 * MBIT, 150_000));
    p.impair_ab.loss = 0.10;
    p.impair_ba.loss = 0.05;
    p.recycle = true;
    let mut sums: Vec<(f64, u32)> = Vec::new();
    let mut done = false;
    while !done && p.steps < 20_000_000 {
        done = p.drive(p.steps + 20);
        let Some(st) = p.a.rate_state() else { continue };
        let excess = st.inflight_bytes as f64 - p.data_in_transit_ab() as f64;
        let s = p.now.since_zero().as_secs() as usize;
        if sums.len() <= s {
            sums.resize(s + 1, (0.0, 0));
        }
        sums[s].0 += excess / 1400.0;
        sums[s].1 += 1;
    }
    assert!(done, "transfer did not finish");
    assert_eq!(p.received, p.sent_data, "bytes differ");
    sums.iter().map(|&(s, n)| s / f64::from(n.max(1))).collect()
}

/// Some losses are never counted: one copy of a packet sent twice back to
/// back (R12) lost while the other arrives (no hole, no RESEND), a lost
/// tail while FEEDBACK's holes lead the RESEND count. Counted only so, they
/// stayed "in flight" for good and the in-flight cap shrank as the transfer
/// went on: here by 15 packets a second (57, 72, 88, 103 packets above what
/// was on its way). The excess that remains is what arrived in the last
/// half round trip and is not reported yet (about 50 packets), plus at most
/// the ten packets of uncounted loss R22 leaves (57, 64, 64, 63), and it
/// must not grow.
#[test]
fn lost_copies_that_no_count_reports_leave_the_in_flight_estimate() {
    for seed in [3, 4] {
        let e = inflight_excess_by_second(seed);
        println!("seed {seed}: excess by second (packets) {e:.1?}");
        assert!(e.len() >= 4, "{e:?}");
        assert!(
            e[3] - e[0] < 15.0 && e[3] - e[2] < 3.0,
            "the in-flight estimate drifts: {e:.1?}"
        );
    }
}

/// R56: the `fair` sender's first flight is a measuring train (32 packets
/// at 1400 bytes), and nothing more goes until a FEEDBACK reports it. With
/// every report of the train lost, the sender holds for RFC 6298's 3 s and
/// then goes on; the transfer completes intact.
#[test]
fn the_first_train_waits_for_its_reports_then_gives_way() {
    use std::cell::Cell;
    use std::rc::Rc;
    let cfg = adaptive(Policy::Fair);
    let mut p = Pair::write(cfg.clone(), cfg, pattern(2_000_000, 5), 5);
    p.latency = Duration::from_millis(50);
    p.bottleneck = Some(Bottleneck::new(20.0 * MBIT, 250_000));
    p.recycle = true;
    let lose = Rc::new(Cell::new(true));
    let lose_in = lose.clone();
    p.drop_to_a = Some(Box::new(move |bytes| {
        lose_in.get()
            && matches!(
                netblt_wire::Packet::parse(bytes),
                Ok(netblt_wire::Packet {
                    repr: netblt_wire::Repr::Feedback(_),
                    ..
                })
            )
    }));
    let mut held_until = None;
    let mut sent_while_held = 0;
    while p.steps < 20_000_000 && p.finished_at.is_none() {
        let limit = p.steps + 1;
        p.drive(limit);
        let Some(first) = p.a.stats().first_data_at else {
            continue;
        };
        let since = p.now.saturating_duration_since(first);
        // Every report of the train (and of anything else) lost for 0.5 s.
        if since > Duration::from_millis(500) {
            lose.set(false);
        }
        if since < Duration::from_millis(2_900) {
            sent_while_held = p.a.stats().data_packets_sent;
        } else if held_until.is_none() && p.a.stats().data_packets_sent > sent_while_held {
            held_until = Some(since);
        }
    }
    assert!(p.finished_at.is_some(), "transfer did not finish");
    assert_eq!(p.received, p.sent_data, "bytes differ");
    println!("{sent_while_held} packets sent in the first 2.9 s; more at {held_until:?}");
    assert!(sent_while_held <= 33, "{sent_while_held} sent while held");
    let resumed = held_until.expect("sending resumed");
    assert!(
        resumed < Duration::from_millis(3_100),
        "resumed at {resumed:?}"
    );
}

/// R61: the data receiver sends its last report before a pause twice. The
/// measuring train's last report is the one its sender waits for (R56,
/// R59); lost, nothing newer came, and the sender waited for its guard,
/// 0.3 s at 100 ms (the emulator, issue 9's completion runs). Losing any
/// one of the first reports now costs the transfer at most a few
/// milliseconds.
#[test]
fn a_lost_report_at_the_trains_end_is_sent_again() {
    let run = |lose: Option<u32>| {
        let mut p = Pair::write(
            adaptive(Policy::Fair),
            adaptive(Policy::Fair),
            pattern(4_000_000, 3),
            3,
        );
        p.latency = Duration::from_millis(50);
        p.bottleneck = Some(Bottleneck::new(100.0 * MBIT, 1_250_000));
        // The first copy of report `lose` is lost.
        let mut seen = false;
        p.drop_to_a = Some(Box::new(
            move |d: &[u8]| match netblt_wire::Packet::parse(d).map(|p| p.repr) {
                Ok(netblt_wire::Repr::Feedback(f)) if Some(f.seq) == lose && !seen => {
                    seen = true;
                    true
                }
                _ => false,
            },
        ));
        assert!(p.drive(5_000_000), "{:?}", p.events_a);
        assert!(p.received == p.sent_data);
        p.finished_at.unwrap().since_zero()
    };
    let clean = run(None);
    for seq in 0..4 {
        let lost = run(Some(seq));
        eprintln!("report {seq} lost: {lost:?} (clean {clean:?})");
        assert!(
            lost <= clean + Duration::from_millis(30),
            "report {seq} lost: {lost:?}, clean {clean:?}"
        );
    }
}

/// R69: buffers of two packets on a short path are OK'd before the
/// FEEDBACK that echoes their last packet arrives, and the sender had
/// forgotten what it sent by then: hardly a FEEDBACK gave the controller a
/// sample, its rounds stopped ending and its rate fell with the few it got
/// (23 kb/s here; `netblt bench` on loopback held 29 Mb/s). Loopback's
/// 16,000-byte packets, 100 us round trip, 1 Gb/s.
#[test]
fn buffers_of_two_packets_feed_the_controller_on_a_short_path() {
    let mut cfg = adaptive(Policy::Fair);
    cfg.params.packet_size = 16_000;
    cfg.params.buffer_size = 2 * 16_000;
    cfg.params.max_buffers = 128;
    let size = 20_000_000;
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, 3), 3);
    p.latency = Duration::from_micros(50);
    p.bottleneck = Some(Bottleneck::new(1000.0 * MBIT, 1_000_000));
    p.recycle = true;
    assert!(p.drive(20_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data, "bytes differ");
    let start = p.a.stats().first_data_at.unwrap();
    let secs = p
        .finished_at
        .unwrap()
        .saturating_duration_since(start)
        .as_secs_f64();
    let goodput = size as f64 * 8.0 / secs;
    println!("goodput {:.1} Mb/s", goodput / MBIT);
    assert!(goodput > 200.0 * MBIT, "goodput {goodput}");
}
