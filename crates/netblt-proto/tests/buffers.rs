//! How many buffers a sender keeps outstanding (decision R11): RFC 1030
//! §8's "number of outstanding buffers" chosen from end-to-end measurement.
//! A buffer with a lost packet stays outstanding until its RESEND is
//! answered, two or three round trips, so a long lossy path needs many
//! buffers and a short clean one few. And a passive receiver GOs only a
//! few buffers until it hears the sender. Bounds are loose; exact figures
//! belong to the benchmarks (bench/wan.sh).

mod pair;

use std::collections::BTreeSet;

use netblt_proto::{Config, Connection, Duration, Instant, Policy, RateConfig};
use netblt_wire::{ControlMessageRef, NullAckRepr, Packet, Repr};
use pair::{emit_from_5000, open_write, pattern, Bottleneck, Pair};

const MBIT: f64 = 1e6;

fn config(max_buffers: u16, min_buffers: Option<u16>) -> Config {
    Config {
        min_buffers,
        ..pair::adaptive_config(Policy::Fair, max_buffers)
    }
}

struct Run {
    goodput_bps: f64,
    peak_buffers: u64,
    stats: netblt_proto::Stats,
    /// Packets the path lost: the queue's drops and the random losses.
    path_losses: u64,
}

/// `size` bytes over `rate` bits/s, `rtt_ms`, a one-BDP drop-tail queue and
/// `loss` random loss after the bottleneck (DATA's direction only).
fn run(cfg: Config, size: usize, rate: f64, rtt_ms: u64, loss: f64, seed: u64) -> Run {
    let mut p = Pair::write(cfg.clone(), cfg, pattern(size, seed), seed);
    p.latency = Duration::from_millis(rtt_ms / 2);
    let bdp = (rate / 8.0 * rtt_ms as f64 / 1e3) as usize;
    p.bottleneck = Some(Bottleneck::new(rate, bdp.max(100_000)));
    p.impair_ab.loss = loss;
    p.recycle = true;
    assert!(p.drive(20_000_000), "transfer did not finish");
    assert_eq!(p.received, p.sent_data, "bytes differ");
    let st = p.a.stats();
    let start = st.first_data_at.unwrap();
    let secs = p
        .finished_at
        .unwrap()
        .saturating_duration_since(start)
        .as_secs_f64();
    Run {
        goodput_bps: size as f64 * 8.0 / secs,
        peak_buffers: st.peak_buffers,
        path_losses: p.bottleneck.as_ref().map_or(0, |b| b.lost + b.dropped),
        stats: st,
    }
}

#[test]
fn a_long_lossy_path_gets_the_buffers_it_needs() {
    // 20 Mb/s, 600 ms, 5 % loss: a buffer waits about three round trips,
    // 1.8 s, for its last RESEND; 4 buffers of 358 kB hold the sender to a
    // third of the path. Adaptive: at least 4, at most 64.
    let (size, rate, rtt, loss) = (12_000_000, 20.0 * MBIT, 600, 0.05);
    let four = run(config(4, None), size, rate, rtt, loss, 11);
    let grown = run(config(64, Some(4)), size, rate, rtt, loss, 11);
    println!(
        "4 buffers: {:.1} Mb/s; 4..64: {:.1} Mb/s, peak {} buffers",
        four.goodput_bps / MBIT,
        grown.goodput_bps / MBIT,
        grown.peak_buffers
    );
    assert_eq!(four.peak_buffers, 4);
    assert!(grown.peak_buffers > 8, "peak {}", grown.peak_buffers);
    // Over seeds 1-12 the ratio is 1.7-2.3 (medians 11.3 / 5.5 Mb/s, R61's
    // build; 2.0 before it, with outliers both ways): 2x was the median,
    // not a bound.
    assert!(
        grown.goodput_bps > 1.7 * four.goodput_bps,
        "{:.1} against {:.1} Mb/s",
        grown.goodput_bps / MBIT,
        four.goodput_bps / MBIT
    );
}

#[test]
fn a_short_clean_path_keeps_few_buffers() {
    // 100 Mb/s, 20 ms, no loss: a buffer is outstanding about a round trip
    // and its own sending time (51 ms); 5 buffers are enough, a few more
    // during start-up's overshoot (twice the rate, a queue), and far fewer
    // than the 64 allowed are taken from the application. (R56's measuring
    // train holds the first buffer a round trip longer, and the longest
    // life lately sets the count: peak 12 before, 13 since.)
    let r = run(config(64, Some(4)), 12_000_000, 100.0 * MBIT, 20, 0.0, 12);
    println!(
        "{:.1} Mb/s, peak {} buffers",
        r.goodput_bps / MBIT,
        r.peak_buffers
    );
    assert!(r.peak_buffers <= 14, "peak {}", r.peak_buffers);
    assert!(r.goodput_bps > 0.7 * 100.0 * MBIT * 1400.0 / 1452.0);
    // Without a floor every negotiated buffer is taken (RFC 998).
    let all = run(config(64, None), 12_000_000, 100.0 * MBIT, 20, 0.0, 12);
    assert!(all.peak_buffers >= 32, "peak {}", all.peak_buffers);
}

#[test]
fn a_packet_lost_twice_is_resent_twice() {
    // Decision R12: at 5 % loss, p^2 = 0.25 % of the packets are lost a
    // second time; their next copy goes out twice. Not with a fixed rate
    // (RFC 998's sender keeps no per-packet record).
    let r = run(config(64, Some(4)), 12_000_000, 20.0 * MBIT, 600, 0.05, 13);
    let st = &r.stats;
    println!(
        "sent {}, resent {}, doubled {}, lost {}",
        st.data_packets_sent, st.data_packets_retransmitted, st.resends_doubled, r.path_losses
    );
    assert!(st.resends_doubled > 0);
    // About p^2 of the packets: 0.25 %, not 1 %.
    assert!(st.resends_doubled * 100 < st.data_packets_sent);
    // Each doubled packet costs one extra copy, no more.
    assert!(
        st.data_packets_retransmitted <= r.path_losses + st.resends_doubled + 50,
        "{} resent for {} lost",
        st.data_packets_retransmitted,
        r.path_losses
    );
    let fixed = Config {
        rate: RateConfig::default(),
        rate_feedback: false,
        ..config(64, None)
    };
    let f = run(fixed, 2_000_000, 20.0 * MBIT, 100, 0.05, 13);
    assert_eq!(f.stats.resends_doubled, 0);
}

#[test]
fn the_extra_copies_keep_resends_within_five_percent_of_the_losses() {
    // Decision R39: R12's copies and the tool's doubled tail (R34) share a
    // budget, so that what is resent stays within issue 9's bound of 1.05
    // times what the path lost. 20 Mb/s, 600 ms, 5 % loss: without the
    // budget the doubled tail alone resent 1.09 times the losses here.
    let cfg = config(64, Some(4)).with_tool_recovery();
    let r = run(cfg, 12_000_000, 20.0 * MBIT, 600, 0.05, 13);
    let st = &r.stats;
    let ratio = st.data_packets_retransmitted as f64 / r.path_losses as f64;
    println!(
        "resent {}, doubled {}, lost {}: {ratio:.3}",
        st.data_packets_retransmitted, st.resends_doubled, r.path_losses
    );
    assert!(st.resends_doubled > 0, "no copies at all");
    assert!(ratio <= 1.05, "resent {ratio:.3} times the losses");
}

#[test]
fn a_buffer_the_sender_has_not_reached_is_not_asked_for() {
    // Decision R13: 64 buffers GO'd, 4 to about 20 queued by the sender.
    // The GO'd buffers it has not reached must not be asked for (RESENDs
    // of whole buffers, packets on their way queued again): what is resent
    // is what was lost.
    let r = run(config(64, Some(4)), 12_000_000, 20.0 * MBIT, 600, 0.01, 14);
    let st = &r.stats;
    println!(
        "{:.1} Mb/s, resent {} for {} lost, peak {} buffers",
        r.goodput_bps / MBIT,
        st.data_packets_retransmitted,
        r.path_losses,
        r.peak_buffers
    );
    assert!(r.peak_buffers < 64);
    assert!(
        st.data_packets_retransmitted * 10 <= r.path_losses * 11 + 100,
        "{} resent for {} lost",
        st.data_packets_retransmitted,
        r.path_losses
    );
}

/// Buffer numbers GO'd in the CONTROL packets `c` sends now.
fn gos(c: &mut Connection, now: Instant, into: &mut BTreeSet<u32>) {
    let mut buf = vec![0u8; 70_000];
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        let Ok(p) = Packet::parse(&buf[..n]) else {
            continue;
        };
        if let Repr::Control(ctl) = p.repr {
            for m in ctl.iter() {
                if let ControlMessageRef::Go { buffer, .. } = m {
                    into.insert(buffer);
                }
            }
        }
    }
}

#[test]
fn a_passive_receiver_gos_a_few_buffers_until_it_hears_the_sender() {
    // Over an encrypted session the passive end may send three times what
    // it received before the sender's address is proven: 8 bytes per GO.
    let cfg = Config {
        initial_gos: Some(3),
        ..config(10, None)
    };
    let open = open_write(2800, 28_000, 10);
    let t0 = Instant::ZERO;
    let mut r = Connection::accept(cfg, &open, 7000, 5000, vec![], t0).unwrap();
    let mut seen = BTreeSet::new();
    gos(&mut r, t0, &mut seen);
    assert_eq!(seen, (1..=3).collect(), "before the sender is heard");
    // A retransmitted OPEN is not the sender heard from.
    let t1 = Instant::from_millis(50);
    let o = emit_from_5000(Repr::Open(open));
    r.handle_datagram(t1, &o);
    gos(&mut r, t1, &mut seen);
    assert_eq!(seen.len(), 3);
    // Its NULL-ACK (R10) is: every buffer is GO'd.
    let t2 = Instant::from_millis(100);
    r.handle_datagram(
        t2,
        &emit_from_5000(Repr::NullAck(NullAckRepr {
            high_ack: 0,
            burst_size: 4,
            burst_interval_ms: 1,
        })),
    );
    gos(&mut r, t2, &mut seen);
    assert_eq!(seen, (1..=10).collect());
}
