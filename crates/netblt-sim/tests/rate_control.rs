//! NETBLT's rate controller (docs/decisions.md, R1) in the dumbbell:
//! alone it finds the path's rate without a standing queue, keeps it on a
//! noisy link, follows a rate step, shares with the TCP model and with
//! itself, and `background` yields. Loose bounds: the exact figures belong
//! to bench/wan.sh and bench/fairness.sh. Rates are scaled down (20 Mb/s)
//! so that each scenario runs in a fraction of a second.

use netblt_link::LossModel;
use netblt_sim::dumbbell::{
    run_dumbbell, AqmSpec, BottleneckSpec, DumbbellReport, FlowKind, FlowSpec, NetbltSpec,
    PolicySpec, RateStepSpec, Scenario,
};
use netblt_sim::tcp::{CongestionControl, TcpConfig};

const C: u64 = 20_000_000;
/// Data share of the bottleneck's bits: 1400-byte payloads in 1452-byte
/// datagrams (24-byte NETBLT header, UDP and IPv4).
const PAYLOAD: f64 = 1400.0 / 1452.0;

fn bottleneck(queue_bytes: usize, loss: f64) -> BottleneckSpec {
    BottleneckSpec {
        rate_bps: Some(C),
        rate_steps: Vec::new(),
        trace: None,
        trace_file: None,
        delay_ms: 5.0,
        jitter_ms: 0.0,
        queue_bytes,
        aqm: AqmSpec::DropTail,
        loss: if loss > 0.0 {
            LossModel::Bernoulli { p: loss }
        } else {
            LossModel::None
        },
        reorder: 0.0,
        reorder_delay_ms: 0.0,
        mtu: 1500,
    }
}

/// A lossless bottleneck at `high` bits/s that drops to `low` at `down_s`
/// and comes back at `up_s`.
fn stepped(queue_bytes: usize, high: u64, low: u64, down_s: f64, up_s: f64) -> BottleneckSpec {
    let mut b = bottleneck(queue_bytes, 0.0);
    b.rate_bps = Some(high);
    b.rate_steps = vec![
        RateStepSpec {
            at_s: down_s,
            rate_bps: low,
        },
        RateStepSpec {
            at_s: up_s,
            rate_bps: high,
        },
    ];
    b
}

fn netblt(name: &str, policy: PolicySpec, rtt_ms: f64, start_s: f64) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        kind: FlowKind::Netblt(NetbltSpec {
            rate_bps: None,
            policy,
            buffer_size: 256 * 1400,
            max_buffers: 32,
            pacing_quantum: Some(16),
            ..NetbltSpec::default()
        }),
        rtt_ms,
        start_s,
        stop_s: None,
        size_bytes: None,
        limits: Vec::new(),
    }
}

fn cubic(rtt_ms: f64, start_s: f64) -> FlowSpec {
    FlowSpec {
        name: "cubic".into(),
        kind: FlowKind::Tcp(TcpConfig {
            cc: CongestionControl::Cubic,
            ..TcpConfig::default()
        }),
        rtt_ms,
        start_s,
        stop_s: None,
        size_bytes: None,
        limits: Vec::new(),
    }
}

fn run(duration_s: f64, b: BottleneckSpec, flows: Vec<FlowSpec>) -> DumbbellReport {
    run_lossy_return(duration_s, b, LossModel::None, flows)
}

/// As `run`, with `reverse` loss on the return path (FEEDBACK, control).
fn run_lossy_return(
    duration_s: f64,
    b: BottleneckSpec,
    reverse: LossModel,
    flows: Vec<FlowSpec>,
) -> DumbbellReport {
    run_seeded(7, duration_s, b, reverse, flows)
}

/// As `run_lossy_return`, with the scenario's seed given.
fn run_seeded(
    seed: u64,
    duration_s: f64,
    b: BottleneckSpec,
    reverse: LossModel,
    flows: Vec<FlowSpec>,
) -> DumbbellReport {
    let s = Scenario {
        name: "rate control".into(),
        seed,
        duration_s,
        sample_interval_ms: 100.0,
        bottleneck: b,
        access_rate_bps: 1_000_000_000,
        reverse_loss: reverse,
        flows,
    };
    let r = run_dumbbell(&s).unwrap();
    for f in &r.flows {
        println!(
            "{}: {:.2} Mb/s, sent {}, rxm {}, drops {:?}, queue delay {:?}, error {:?}",
            f.name,
            f.goodput_bps / 1e6,
            f.data_packets_sent,
            f.retransmissions,
            f.bottleneck_drops,
            f.queue_delay_ms,
            f.error
        );
    }
    r
}

fn goodput(r: &DumbbellReport, flow: usize, from_s: f64, to_s: f64) -> f64 {
    r.flows[flow].goodput_between(r.sample_interval_s, from_s, to_s)
}

/// The bottleneck's queue (bytes, one sample per `sample_interval_s`) from
/// `from_s` on.
fn queue_from(r: &DumbbellReport, from_s: f64) -> &[u64] {
    let q = &r.bottleneck.queue_series_bytes;
    &q[((from_s / r.sample_interval_s) as usize).min(q.len())..]
}

/// 20 Mb/s, 50 ms, one BDP of drop-tail queue: the rate is found, the
/// queue stays short, almost nothing is dropped.
#[test]
fn alone_it_fills_the_path_without_a_standing_queue() {
    let r = run(
        15.0,
        bottleneck(125_000, 0.0),
        vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)],
    );
    let g = goodput(&r, 0, 3.0, 15.0);
    println!("steady goodput {:.2} Mb/s", g / 1e6);
    assert!(g > 0.85 * C as f64 * PAYLOAD, "goodput {g}");
    let f = &r.flows[0];
    let q = f.queue_delay_ms.as_ref().unwrap();
    assert!(q.p95 < 15.0, "p95 queueing delay {} ms", q.p95);
    assert!(
        f.bottleneck_drops.queue * 50 < f.data_packets_sent,
        "drops {:?}",
        f.bottleneck_drops
    );
}

/// 3 % random loss and no congestion: the rate is kept (CUBIC gets a
/// fraction of the link here).
#[test]
fn five_percent_loss_on_a_short_path_keeps_its_rate() {
    let r = run(
        10.0,
        bottleneck(25_000, 0.05),
        vec![netblt("fair", PolicySpec::Fair, 10.0, 0.0)],
    );
    let g = goodput(&r, 0, 2.0, 10.0);
    println!("steady goodput {:.2} Mb/s", g / 1e6);
    assert!(g > 0.8 * C as f64 * 0.95 * PAYLOAD, "goodput {g}");
}

/// 5 % loss each way at 10 ms, a queue of 17 packets: resent copies lost
/// again are counted out of the in-flight estimate at once (decision R14).
/// Counted late, they held the sender at FAST's in-flight cap until a
/// FEEDBACK, and each release overflowed the queue: 328 queue drops for
/// 15,701 packets (2.1 %) instead of 48 for 15,342. Issue 9's bound: 1 %.
#[test]
fn five_percent_loss_each_way_on_a_short_path() {
    let r = run_lossy_return(
        10.0,
        bottleneck(25_000, 0.05),
        LossModel::Bernoulli { p: 0.05 },
        vec![netblt("fair", PolicySpec::Fair, 10.0, 0.0)],
    );
    let g = goodput(&r, 0, 2.0, 10.0);
    println!("steady goodput {:.2} Mb/s", g / 1e6);
    assert!(g > 0.8 * C as f64 * 0.95 * PAYLOAD, "goodput {g}");
    let f = &r.flows[0];
    let sent = f.data_packets_sent + f.retransmissions;
    assert!(
        f.bottleneck_drops.queue * 100 <= sent,
        "{} queue drops for {sent} packets",
        f.bottleneck_drops.queue
    );
}

/// 5 % random loss at 100 ms: the link stays busy. Packets lost and not yet
/// reported count as in flight for a round trip and more, about the noise
/// share of FAST's window; a window cap without room for them held the
/// sender at 0.97 of the path (decision R35).
#[test]
fn five_percent_loss_at_a_hundred_ms_keeps_the_link_busy() {
    let share = share_alone_at_five_percent(100.0, 15.0, 3.0);
    assert!(share > 0.98, "{share:.4} of the path");
}

/// 300 ms and 5 % loss, alone: after a probe's queue drains, the window
/// goes back to the estimated pipe at once (decision R37): 0.975 of the
/// path from 5 to 25 s. Before, FAST's cut, a round late, left the link
/// under-used for two rounds of every eight: 0.968.
#[test]
fn at_three_hundred_ms_the_drains_leave_the_link_busy() {
    let share = share_alone_at_five_percent(300.0, 25.0, 5.0);
    assert!(share > 0.972, "{share:.4} of the path");
}

/// 300 ms alone at 100 Mb/s, no loss: once STARTUP's queue has drained,
/// FAST keeps the link busy. The round after the settling one still echoed
/// packets the overshoot had queued, and its mean round trip (382 ms with
/// the queue gone) cut the pacing to 68 of 96 Mb/s: the link carried
/// 0.59-0.71 of its rate from 2.1 to 2.4 s, after every start-up, and 0.81
/// over 1.8-2.8 s (decision R64). Each quarter second from 1.8 to 2.8 s now
/// carries 0.9 of the path or more.
#[test]
fn after_start_up_at_300_ms_the_link_stays_busy() {
    const RATE: u64 = 100_000_000;
    let mut b = bottleneck((RATE as f64 / 8.0 * 0.3) as usize, 0.0);
    b.rate_bps = Some(RATE);
    let r = run(3.0, b, vec![netblt("fair", PolicySpec::Fair, 300.0, 0.0)]);
    let path = RATE as f64 * PAYLOAD;
    let quarters: Vec<f64> = (0..4)
        .map(|i| {
            let from = 1.8 + 0.25 * f64::from(i);
            goodput(&r, 0, from, from + 0.25) / path
        })
        .collect();
    println!("share of the path per quarter second from 1.8 s: {quarters:.2?}");
    assert!(quarters.iter().all(|&s| s >= 0.9), "{quarters:?}");
}

/// A `fair` flow with the tool's buffers (1 MiB, 32 to 128 outstanding,
/// its recovery) at `rtt_ms`, from the start.
fn tool_flow(rtt_ms: f64) -> FlowSpec {
    let mut f = netblt("fair", PolicySpec::Fair, rtt_ms, 0.0);
    if let FlowKind::Netblt(n) = &mut f.kind {
        n.buffer_size = 1 << 20;
        n.max_buffers = 128;
        n.min_buffers = Some(32);
        n.tool_recovery = true;
    }
    f
}

/// One `fair` flow alone at `rtt_ms` with 5 % loss and a queue of one
/// bandwidth-delay product: its goodput from `from_s` to the end of the
/// run, as a share of what the path can carry, C (1 - p) payload/wire.
fn share_alone_at_five_percent(rtt_ms: f64, duration_s: f64, from_s: f64) -> f64 {
    let bdp = (C as f64 / 8.0 * rtt_ms / 1000.0) as usize;
    let r = run(
        duration_s,
        bottleneck(bdp, 0.05),
        vec![netblt("fair", PolicySpec::Fair, rtt_ms, 0.0)],
    );
    let g = goodput(&r, 0, from_s, duration_s);
    let share = g / (C as f64 * 0.95 * PAYLOAD);
    println!("steady goodput {:.2} Mb/s, {share:.4} of the path", g / 1e6);
    share
}

#[test]
fn a_noisy_link_keeps_its_rate() {
    let r = run(
        15.0,
        bottleneck(125_000, 0.03),
        vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)],
    );
    let g = goodput(&r, 0, 3.0, 15.0);
    println!("steady goodput {:.2} Mb/s", g / 1e6);
    assert!(g > 0.8 * C as f64 * 0.97 * PAYLOAD, "goodput {g}");
}

/// Issue 9: noise is "random or bursty link loss with no queue growth".
/// Bursts (Gilbert-Elliott: 5 % of packets lost, in runs of ten on
/// average) at 50 ms: a round now and then loses several times the mean,
/// with nothing queued, and the rate stays; the TCP model (CUBIC) alone on
/// the same path gets a fraction of it, so the bursts are ones a loss-based
/// sender backs off from. (Seed 7: NETBLT 0.983 of C (1 - p) from 3 s on,
/// p95 queue 12.8 ms against 10.4 without loss, where FAST's alpha alone
/// is 5.6 ms at 20 Mb/s; CUBIC 0.115.)
#[test]
fn bursty_loss_is_noise_too() {
    let mut b = bottleneck(125_000, 0.0);
    // pi_bad = g / (g + r) = 0.05 with r = 0.1 (bursts of 1 / r = 10).
    b.loss = LossModel::GilbertElliott {
        p_good_to_bad: 0.1 * 0.05 / 0.95,
        p_bad_to_good: 0.1,
        loss_good: 0.0,
        loss_bad: 1.0,
    };
    let path = C as f64 * 0.95 * PAYLOAD;
    let r = run(
        20.0,
        b.clone(),
        vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)],
    );
    let share = goodput(&r, 0, 3.0, 20.0) / path;
    let q = r.flows[0].queue_delay_ms.as_ref().unwrap();
    println!("NETBLT {share:.3} of the path, p95 queue {} ms", q.p95);
    let tcp = run(20.0, b, vec![cubic(50.0, 0.0)]);
    let tcp_share = goodput(&tcp, 0, 3.0, 20.0) / path;
    println!("CUBIC {tcp_share:.3} of the path");
    assert!(share > 0.9, "{share:.3} of the path");
    assert!(q.p95 < 15.0, "p95 queueing delay {} ms", q.p95);
    assert!(
        tcp_share < 0.5,
        "CUBIC {tcp_share:.3}: the bursts are too mild to tell"
    );
}

/// Reordering is not loss (decision R53): 5 % of packets held back 10 ms
/// at 50 ms, overtaken by the next ones. Counted lost, they read as 5 % of
/// noise, the delivery-rate estimate (which adds losses back) ran 5 % over
/// the path, FAST's window with it, and the held packets' round trips read
/// as queue: 0.953 of the path, p95 queue 21.8 ms, 101 queue drops; now
/// 0.989, 10.6 ms (as without reordering), none.
#[test]
fn reordered_packets_are_not_lost() {
    let mut b = bottleneck(125_000, 0.0);
    b.reorder = 0.05;
    b.reorder_delay_ms = 10.0;
    let r = run(15.0, b, vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)]);
    let share = goodput(&r, 0, 3.0, 15.0) / (C as f64 * PAYLOAD);
    let f = &r.flows[0];
    let q = f.queue_delay_ms.as_ref().unwrap();
    println!("{share:.3} of the path, p95 queue {} ms", q.p95);
    assert!(share > 0.97, "{share:.3} of the path");
    assert!(q.p95 < 15.0, "p95 queueing delay {} ms", q.p95);
    assert!(
        f.retransmissions * 1000 < f.data_packets_sent,
        "{} resent of {}",
        f.retransmissions,
        f.data_packets_sent
    );
}

/// The path drops to a quarter and comes back: the rate follows both ways.
#[test]
fn a_rate_step_is_followed_down_and_up() {
    let b = stepped(125_000, C, C / 4, 5.0, 10.0);
    let r = run(16.0, b, vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)]);
    let low = goodput(&r, 0, 7.0, 10.0);
    let back = goodput(&r, 0, 12.0, 16.0);
    println!("low {:.2} Mb/s, back {:.2} Mb/s", low / 1e6, back / 1e6);
    assert!(low > 0.7 * (C / 4) as f64 * PAYLOAD, "low {low}");
    assert!(back > 0.8 * C as f64 * PAYLOAD, "back {back}");
    // Not a flood during the low phase.
    let f = &r.flows[0];
    assert!(
        f.bottleneck_drops.queue * 20 < f.data_packets_sent,
        "drops {:?}",
        f.bottleneck_drops
    );
}

/// Issue 9: a path that goes from 20 to 100 Mb/s is filled again within
/// 2 s (R40: the steps double while the path delivers more with nothing
/// queued). At 20 Mb/s FAST's alpha alone is a large share of the window
/// and the old growth sufficed; at 100 Mb/s it stayed at 5 % past the
/// estimate per round, and 1-2 s after the step delivered 62.6 Mb/s (96.2
/// with R40).
#[test]
fn a_path_five_times_faster_is_filled_within_two_seconds() {
    let high = 5 * C;
    let b = stepped(625_000, high, C, 4.0, 12.0);
    let r = run(16.0, b, vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)]);
    let low = goodput(&r, 0, 8.0, 12.0);
    let back = goodput(&r, 0, 13.0, 14.0);
    println!(
        "low {:.2} Mb/s, 1-2 s after {:.2} Mb/s",
        low / 1e6,
        back / 1e6
    );
    assert!(low < 1.1 * C as f64, "low {low}");
    assert!(back > 0.9 * high as f64 * PAYLOAD, "back {back}");
}

/// R42: 2 ms of jitter on the bottleneck (uniform, in FIFO order), 100 ms,
/// and a step from 20 back to 100 Mb/s. FAST reads the jitter as half of
/// its alpha queued, so a window under the path's pipe looked like its
/// equilibrium and grew by alpha / 4 a round: 43.5 Mb/s three to six seconds
/// after the step before R42's probes (70 Mb/s with them).
#[test]
fn jitter_does_not_hold_the_rate_under_the_path() {
    let high = 5 * C;
    let mut b = stepped(1_250_000, high, C, 3.0, 8.0);
    b.jitter_ms = 2.0;
    let r = run(14.0, b, vec![netblt("fair", PolicySpec::Fair, 100.0, 0.0)]);
    let back = goodput(&r, 0, 11.0, 14.0);
    println!("3-6 s after the step up: {:.2} Mb/s", back / 1e6);
    assert!(back > 0.6 * high as f64, "back {back}");
}

/// R43: the same step at 300 ms. The estimate answers a window's growth
/// two rounds later, so it rose every other round and R40's doubling reset
/// in between; and FAST paced at most 1.25x the estimate. From 20 Mb/s the
/// path was refilled by about 8 % per two rounds: 3-5 s after the step the
/// flow had 25 Mb/s of the 100 (the emulator: 20 -> 58 Mb/s in 10 s).
#[test]
fn a_path_five_times_faster_is_refilled_at_300_ms() {
    let back = refilled_at_300_ms(0.0, 3.0, 5.0);
    assert!(back > 0.8 * (5 * C) as f64 * PAYLOAD, "back {back}");
}

/// The goodput from `from_s` to `to_s` after a 300 ms path (one BDP of
/// queue) went from 20 back to 100 Mb/s, with `jitter_ms` of jitter after
/// its queue. (R55's test of the restart's settling round, which used it
/// with seeds whose step came at one point of FAST's cycle, is a unit test
/// of the model since R56 moved that cycle: `rate::model`'s
/// `a_settling_round_with_room_takes_the_window_to_the_pipe`.)
fn refilled_at_300_ms(jitter_ms: f64, from_s: f64, to_s: f64) -> f64 {
    let high = 5 * C;
    let mut b = stepped(3_750_000, high, C, 5.0, 12.0);
    b.jitter_ms = jitter_ms;
    let r = run(
        12.0 + to_s,
        b,
        vec![netblt("fair", PolicySpec::Fair, 300.0, 0.0)],
    );
    let back = goodput(&r, 0, 12.0 + from_s, 12.0 + to_s);
    println!(
        "{from_s}-{to_s} s after the step up: {:.2} Mb/s",
        back / 1e6
    );
    back
}

/// R50: the same refill, sooner: once the path has delivered more twice
/// running with nothing queued, the flow starts up again (2.885x a round)
/// instead of FAST's doubling, which the estimate's two-round lag holds to
/// about 1.4x a round. Goodput 2-3 s after the step: before, 47.1 Mb/s of
/// the 100; since, 93.0. The test asks for 0.75 of the path.
#[test]
fn a_refill_at_300_ms_starts_up_again() {
    let back = refilled_at_300_ms(0.0, 2.0, 3.0);
    assert!(back > 0.75 * (5 * C) as f64 * PAYLOAD, "back {back}");
}

/// R51: the same refill, a round or two sooner. Once growth has found the
/// queue empty for three rounds running, one rise of the estimate (and a
/// rise of a quarter of an overshoot, 0.8 % at 300 ms, instead of half)
/// starts up again: the estimate answers growth two rounds late and rose
/// by 1.6 % a round where 1.7 % was asked. Goodput 1.5-2.5 s after the
/// step: before, 66.0 Mb/s of the 100; since, 91.2. The test asks for 0.8
/// of the path.
#[test]
fn a_refill_at_300_ms_starts_up_within_two_seconds() {
    let back = refilled_at_300_ms(0.0, 1.5, 2.5);
    assert!(back > 0.8 * (5 * C) as f64 * PAYLOAD, "back {back}");
}

/// R74: the same refill, at the prior rate at once. The restart paced
/// 2.885x the estimate (60 of 100 Mb/s) and took two more rounds to reach
/// the path, as the estimate answered a round late; a path whose rate fell
/// and came back is paced at the rate it carried before (at most two
/// rounds of STARTUP past the estimate, and no further than the queue it
/// was seen to hold without loss, one BDP here). Goodput 1-2 s after the
/// step: before, 63.7 Mb/s of the 100; since, 87.5. The test asks for 0.85
/// of the path.
#[test]
fn a_refill_at_300_ms_returns_to_the_prior_rate_at_once() {
    let back = refilled_at_300_ms(0.0, 1.0, 2.0);
    assert!(back > 0.85 * (5 * C) as f64 * PAYLOAD, "back {back}");
}

/// R74's bound: a path that was seen to hold only a shallow queue (400 KB,
/// 32 ms at 100 Mb/s) and comes back only in part (100 -> 20 -> 30 Mb/s at
/// 300 ms) is refilled by STARTUP as before, not at the prior rate, whose
/// first round trip would overflow it. The queue drops after the step up
/// (a run to 16 s less one to 12 s): with the prior rate unbounded, 1,734;
/// with the bound, 211 (STARTUP's own overshoot). The test asks for at most
/// 800.
#[test]
fn a_shallow_queue_bounds_the_refill_at_the_prior_rate() {
    let drops = |to_s: f64| {
        let mut b = stepped(400_000, 5 * C, C, 5.0, 12.0);
        b.rate_steps[1].rate_bps = 3 * C / 2;
        let r = run(to_s, b, vec![netblt("fair", PolicySpec::Fair, 300.0, 0.0)]);
        r.flows[0].bottleneck_drops.queue
    };
    let after = drops(16.0).saturating_sub(drops(12.0));
    println!("queue drops after the step up: {after}");
    assert!(after <= 800, "{after}");
}

/// R56: on a path slower than STARTUP's first pacing (28.85 Mb/s) the first
/// round is a measuring train, not a round trip of blind pacing. Before,
/// the first round trip overfilled these queues once: 2 Mb/s, 100 ms and a
/// 50 KB queue lost 228 packets (this test, with the train switched off),
/// 10 Mb/s, 600 ms and one BDP 769 (R54). Now none; the test asks for at
/// most two queue drops in each and 0.85 of the path from 3 s on.
#[test]
fn a_slow_path_is_not_flooded_in_the_first_round() {
    for (rate, rtt_ms, queue) in [(2_000_000u64, 100.0, 50_000), (10_000_000, 600.0, 750_000)] {
        let mut b = bottleneck(queue, 0.0);
        b.rate_bps = Some(rate);
        let r = run(12.0, b, vec![netblt("fair", PolicySpec::Fair, rtt_ms, 0.0)]);
        let f = &r.flows[0];
        assert!(
            f.bottleneck_drops.queue <= 2,
            "{rate} b/s, {rtt_ms} ms: drops {:?}",
            f.bottleneck_drops
        );
        let g = goodput(&r, 0, 3.0, 12.0);
        assert!(
            g > 0.85 * rate as f64 * PAYLOAD,
            "{rate} b/s, {rtt_ms} ms: {g}"
        );
    }
}

/// R50 and R51 start up again only when the path has more to give. On a
/// path that never changes (20 Mb/s, 50 ms, 2 ms of jitter, where R51's
/// growth is smallest against alpha) a restart would double the window and
/// queue half a BDP or more before HyStart++ ends it; with none, the queue
/// peaks at 0.22-0.27 BDP after the first 3 s over 40 s (jitter 0-2 ms,
/// seeds 1-2, also 0.10-0.17 at 100 and 300 ms). The test asks for under
/// 0.4 BDP; with any rise counted (R43's bar at zero) it reads 0.99.
#[test]
fn a_steady_path_never_starts_up_again() {
    let bdp = C / 8 / 20;
    let mut b = bottleneck(bdp as usize, 0.0);
    b.jitter_ms = 2.0;
    let r = run(40.0, b, vec![netblt("fair", PolicySpec::Fair, 50.0, 0.0)]);
    let peak = queue_from(&r, 3.0).iter().copied().max().unwrap_or(0);
    println!(
        "peak queue after 3 s: {peak} B ({:.2} BDP)",
        peak as f64 / bdp as f64
    );
    assert!(peak < bdp * 4 / 10, "peak {peak} of a {bdp} B BDP");
}

/// R45: the same refill with 2 ms of jitter on the bottleneck. The jitter
/// adds about a millisecond to every round's mean, which FAST reads as
/// more bytes of its own queued the faster it goes: R43's doubling stopped
/// at half the path and R42's probes took it on two rounds at a time (57.8
/// Mb/s 3-5 s after the step; 91.6 since R45). Growth now asks about the
/// queue above the jitter floor, the mean delay of rounds in which some
/// packet found the queue empty.
#[test]
fn jitter_does_not_hold_the_refill_at_300_ms() {
    let back = refilled_at_300_ms(2.0, 3.0, 5.0);
    assert!(back > 0.75 * (5 * C) as f64 * PAYLOAD, "back {back}");
}

/// R48: a 300 ms path (one BDP of queue at 100 Mb/s) that falls to 20
/// Mb/s. The window filled the queue in the round trip before any FEEDBACK
/// said so, which stretched the round trip, and with it FAST's round, to
/// 1.3-1.6 s: four rounds, 3.6-3.8 s, went by before the queue had drained
/// (`bench/sim_ratestep.sh`). A round that a standing queue stretches to
/// twice the base round trip now ends there, and FAST's six-round test for a
/// queue not its own waits for the peak to drain. Here, before, that test
/// called the queue a competitor's and the flow paced its old 96 Mb/s into
/// the queue, which never drained (4,142 drops); now it drains 2.3 s after
/// the step, with no drops. The test asks for 3 s.
#[test]
fn a_queue_left_by_a_rate_step_down_drains_within_three_seconds_at_300_ms() {
    let high = 5 * C;
    let b = stepped(3_750_000, high, C, 6.0, 60.0);
    let r = run(13.0, b, vec![netblt("fair", PolicySpec::Fair, 300.0, 0.0)]);
    let dt = r.sample_interval_s;
    // Drained: under 30 ms (a tenth of the round trip) at 20 Mb/s for a
    // whole second.
    let bound = (0.030 * C as f64 / 8.0) as u64;
    let per_s = (1.0 / dt).round() as usize;
    let q = queue_from(&r, 6.0);
    let drained = (0..q.len().saturating_sub(per_s))
        .find(|&i| q[i..=i + per_s].iter().all(|&b| b <= bound))
        .map(|i| i as f64 * dt);
    println!("queue drained {drained:?} s after the step down");
    assert!(drained.is_some_and(|d| d <= 3.0), "drained {drained:?}");
    // And the path stayed busy: the low phase's last 3 s at 0.9 of it.
    let low = goodput(&r, 0, 9.0, 12.0);
    assert!(low > 0.9 * C as f64 * PAYLOAD, "low {low}");
}

/// R46: at the top of a refill the doubling passes the path by up to a
/// round of growth, seen a round late; FAST's cut then paced the window over
/// a round trip the overshoot had lengthened, and the round after, a
/// congestion round, did the same. On the emulator's trace (1500-byte
/// delivery opportunities in 1 ms slots, as `bench/ratestep.sh` builds it),
/// 100 ms, 20 -> 100 Mb/s, R43's rules carried 94.0 Mb/s in the half
/// second at the top and 82.7 in the next (0.87). Draining such an
/// overshoot now keeps pacing at 0.9 of what the path delivered at the top
/// (no half second under 0.98 of the top once there).
#[test]
fn the_drain_after_a_refill_keeps_the_link_busy() {
    let mut b = bottleneck(1_250_000, 0.0);
    let (mut acc, mut trace) = (0.0, Vec::new());
    for ms in 0..14_000u64 {
        let rate = if (4_000..10_000).contains(&ms) {
            20e6
        } else {
            100e6
        };
        acc += rate / 8.0 / 1500.0 / 1000.0;
        while acc >= 1.0 {
            trace.push(ms);
            acc -= 1.0;
        }
    }
    b.rate_bps = None;
    b.trace = Some(trace);
    let r = run(14.0, b, vec![netblt("fair", PolicySpec::Fair, 100.0, 0.0)]);
    let halves: Vec<f64> = (0..8)
        .map(|k| goodput(&r, 0, 10.0 + 0.5 * f64::from(k), 10.5 + 0.5 * f64::from(k)))
        .collect();
    println!(
        "half seconds after the step up (Mb/s): {:.1?}",
        halves.iter().map(|g| g / 1e6).collect::<Vec<_>>()
    );
    let top = halves.iter().cloned().fold(0.0, f64::max);
    let first = halves.iter().position(|&g| g >= 0.9 * top).unwrap_or(0);
    let low = halves[first..]
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    assert!(
        low > 0.9 * top,
        "the link fell to {low} of {top} after the top"
    );
}

/// Sharing with the TCP model (CUBIC): neither flow starves. (The issue's
/// target is a ratio within 0.5x-2x; at 20 Mb/s this scenario gives NETBLT
/// 5.7 of CUBIC's 13.6 Mb/s over 15-30 s, 0.42: FAST gives way to CUBIC's
/// growing queue until it first overflows, decision R63. The benchmark's
/// 100 Mb/s arrangement is `netblt_first_keeps_a_share_when_cubic_arrives`.)
#[test]
fn it_shares_with_cubic() {
    let r = run(
        30.0,
        bottleneck(125_000, 0.0),
        vec![
            cubic(50.0, 0.0),
            netblt("fair", PolicySpec::Fair, 50.0, 5.0),
        ],
    );
    let (t, n) = (goodput(&r, 0, 15.0, 30.0), goodput(&r, 1, 15.0, 30.0));
    println!("cubic {:.2} Mb/s, netblt {:.2} Mb/s", t / 1e6, n / 1e6);
    assert!(
        t > 0.15 * C as f64 && n > 0.15 * C as f64,
        "cubic {t}, netblt {n}"
    );
}

/// NETBLT first, CUBIC arriving later (bench/fairness.sh's netblt-cubic):
/// FAST, keeping alpha of its own in whatever queue stands, yielded to
/// CUBIC's slowly growing queue down to alpha over its delay (0.26 of
/// CUBIC's rate over 15-35 s at 100 Mb/s, emulator and simulator alike).
/// CUBIC's overflow, with only our own share queued, is the sign that the
/// queue is not ours (R63), and the competition that follows holds.
/// At 100 Mb/s, as the benchmark: at 20 Mb/s the simulated CUBIC's queue
/// overflows once in 20 s and FAST's squeeze leaves it 0.49 of CUBIC's rate
/// with or without R63 (decision R63: still weak there).
/// Whether R63 acts depends on where CUBIC's overflows find us: one that
/// came while we were in a refill's STARTUP counted as congestion, and
/// CUBIC's next was seconds away; over seeds 1-9 four ratios were outside
/// 0.5-2x (0.11-2.4, decision R64). Since R65 such an overflow is read as
/// CUBIC's too: 0.62-2.25, one seed outside. The test asks the median of
/// nine seeds and seven of them within 0.5-2x; before R63 every seed gave
/// about 0.26.
#[test]
fn netblt_first_keeps_a_share_when_cubic_arrives() {
    let mut ratios: Vec<f64> = (1..=9)
        .map(|seed| {
            let mut b = bottleneck(625_000, 0.0);
            b.rate_bps = Some(100_000_000);
            let r = run_seeded(
                seed,
                35.0,
                b,
                LossModel::None,
                vec![
                    netblt("fair", PolicySpec::Fair, 50.0, 0.0),
                    cubic(50.0, 5.0),
                ],
            );
            let (n, t) = (goodput(&r, 0, 15.0, 35.0), goodput(&r, 1, 15.0, 35.0));
            println!(
                "seed {seed}: netblt {:.2} Mb/s, cubic {:.2} Mb/s, ratio {:.2}",
                n / 1e6,
                t / 1e6,
                n / t
            );
            n / t
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let within = ratios.iter().filter(|r| (0.5..2.0).contains(*r)).count();
    println!("ratios {ratios:.2?}, median {median:.2}, {within} of 9 within 0.5-2x");
    assert!(median > 0.5 && median < 2.0, "median {median}: {ratios:?}");
    assert!(within >= 7, "{within} of 9 within 0.5-2x: {ratios:?}");
}

/// Two NETBLT flows, the second starting later: they converge.
#[test]
fn two_flows_share() {
    let r = run(
        30.0,
        bottleneck(125_000, 0.0),
        vec![
            netblt("a", PolicySpec::Fair, 50.0, 0.0),
            netblt("b", PolicySpec::Fair, 50.0, 5.0),
        ],
    );
    let j = r.jain(&[0, 1], 15.0, 30.0).unwrap();
    let (a, b) = (goodput(&r, 0, 15.0, 30.0), goodput(&r, 1, 15.0, 30.0));
    println!("a {:.2} Mb/s, b {:.2} Mb/s, Jain {j:.3}", a / 1e6, b / 1e6);
    assert!(j > 0.9, "Jain {j}");
    assert!(a + b > 0.8 * C as f64 * PAYLOAD, "total {}", a + b);
}

/// `background` leaves CUBIC most of what it gets alone.
#[test]
fn background_yields_to_cubic() {
    let solo = run(20.0, bottleneck(125_000, 0.0), vec![cubic(50.0, 0.0)]);
    let both = run(
        20.0,
        bottleneck(125_000, 0.0),
        vec![
            cubic(50.0, 0.0),
            netblt("bg", PolicySpec::Background, 50.0, 2.0),
        ],
    );
    let (alone, shared) = (goodput(&solo, 0, 8.0, 20.0), goodput(&both, 0, 8.0, 20.0));
    println!(
        "cubic alone {:.2} Mb/s, beside background {:.2} Mb/s",
        alone / 1e6,
        shared / 1e6
    );
    assert!(shared > 0.8 * alone, "cubic kept {}", shared / alone);
}

/// Four flows starting two seconds apart: Jain's index after the last start.
#[test]
fn four_staggered_flows_converge() {
    let flows = (0..4)
        .map(|i| netblt(&format!("f{i}"), PolicySpec::Fair, 50.0, 2.0 * i as f64))
        .collect();
    let r = run(26.0, bottleneck(125_000, 0.0), flows);
    let j = r.jain(&[0, 1, 2, 3], 16.0, 26.0).unwrap();
    let total: f64 = (0..4).map(|i| goodput(&r, i, 16.0, 26.0)).sum();
    println!("Jain {j:.3}, total {:.2} Mb/s", total / 1e6);
    assert!(j > 0.9, "Jain {j}");
    assert!(total > 0.8 * C as f64 * PAYLOAD, "total {total}");
}

/// Different round trips (20 and 80 ms): the short one must not starve the
/// long one (rate-based flows do not share by RTT as TCP does).
#[test]
fn different_rtts_share() {
    let r = run(
        30.0,
        bottleneck(125_000, 0.0),
        vec![
            netblt("short", PolicySpec::Fair, 20.0, 0.0),
            netblt("long", PolicySpec::Fair, 80.0, 2.0),
        ],
    );
    let (s, l) = (goodput(&r, 0, 15.0, 30.0), goodput(&r, 1, 15.0, 30.0));
    println!("short {:.2} Mb/s, long {:.2} Mb/s", s / 1e6, l / 1e6);
    assert!(l > 0.33 * s && s > 0.33 * l, "short {s}, long {l}");
}

/// 100 Mb/s, 10 ms, a 150 kB queue (issue 9's short cell, as bench/wan.sh
/// sets it up), 20 s of one `fair` flow with the tool's buffers and pacing
/// quantum; `forward` loss after the bottleneck, `back` on the return path.
fn short_fast_path(forward: f64, back: f64) -> DumbbellReport {
    let mut b = bottleneck(150_000, forward);
    b.rate_bps = Some(100_000_000);
    let mut f = netblt("fair", PolicySpec::Fair, 10.0, 0.0);
    if let FlowKind::Netblt(n) = &mut f.kind {
        n.buffer_size = 1 << 20;
        n.max_buffers = 128;
        n.min_buffers = Some(32);
        n.pacing_quantum = Some(32);
    }
    let reverse = if back > 0.0 {
        LossModel::Bernoulli { p: back }
    } else {
        LossModel::None
    };
    run_lossy_return(20.0, b, reverse, vec![f])
}

/// Decision R18: FEEDBACKs lost on the way back (5 %) cost the flow
/// nothing. The in-flight allowance used to follow the longest FEEDBACK gap
/// of four rounds, so every lost FEEDBACK loosened the cap for four rounds,
/// FAST's window stopped clocking the sender and its pacing swung the
/// queue (a millisecond of alpha at 100 Mb/s) empty every few rounds:
/// 96.2 % of the bottleneck used against 97.8 % without the loss. The bound
/// leaves room for one PROBE_RTT more or less in the 18 s window (200 ms at
/// half rate: 0.55 %), whose timing the FEEDBACKs lost shift (R23).
#[test]
fn lost_feedbacks_leave_the_short_path_full() {
    let clean = goodput(&short_fast_path(0.0, 0.0), 0, 2.0, 20.0);
    let lossy = goodput(&short_fast_path(0.0, 0.05), 0, 2.0, 20.0);
    println!(
        "goodput {:.2} Mb/s clean, {:.2} Mb/s with 5 % FEEDBACK loss",
        clean / 1e6,
        lossy / 1e6
    );
    assert!(lossy > 0.99 * clean, "{lossy} against {clean}");
}

/// R27: the application caps a fair flow at a quarter of the path for a
/// while, then lifts the cap: held under it, then back near the path's rate
/// within a second (STARTUP again).
#[test]
fn a_cap_set_while_running_holds_the_flow_and_lifting_it_gives_the_path_back() {
    use netblt_sim::dumbbell::LimitStepSpec;
    let mut f = netblt("fair", PolicySpec::Fair, 50.0, 0.0);
    f.limits = vec![
        LimitStepSpec {
            at_s: 4.0,
            max_bps: Some(C / 4),
            min_bps: 0,
        },
        LimitStepSpec {
            at_s: 8.0,
            max_bps: None,
            min_bps: 0,
        },
    ];
    let r = run(12.0, bottleneck(125_000, 0.0), vec![f]);
    let path = C as f64 * PAYLOAD;
    let before = goodput(&r, 0, 2.0, 4.0);
    let capped = goodput(&r, 0, 5.0, 8.0);
    let after = goodput(&r, 0, 9.0, 12.0);
    println!("before {before:.0}, capped {capped:.0}, after {after:.0}");
    assert!(before > 0.9 * path, "{before}");
    assert!(capped <= C as f64 / 4.0 * 1.01, "{capped} under a C/4 cap");
    assert!(capped > C as f64 / 4.0 * 0.9, "{capped}: far under the cap");
    assert!(after > 0.9 * path, "{after} after the cap lifted");
}

/// A flow alone on the path with buffers of `buffer_size` bytes cut into
/// packets of `packet_size`, and the share of the path its data can have
/// (decision R69).
fn small_buffers(packet_size: u16, buffer_size: u32, rtt_ms: f64) -> (f64, f64) {
    let mut f = netblt("small", PolicySpec::Fair, rtt_ms, 0.0);
    if let FlowKind::Netblt(n) = &mut f.kind {
        n.packet_size = packet_size;
        n.buffer_size = buffer_size;
        n.max_buffers = 128;
    }
    let r = run(10.0, bottleneck(125_000, 0.0), vec![f]);
    let data = f64::from(packet_size).min(f64::from(buffer_size));
    let g = goodput(&r, 0, 5.0, 10.0);
    println!("goodput {:.2} Mb/s", g / 1e6);
    (g, C as f64 * data / (data + 52.0))
}

/// R69: a buffer smaller than a packet is one short packet, and the pacer
/// counted it at the negotiated size: 500-byte buffers under 1400-byte
/// packets went out at a third of the controller's rate, whose delivery
/// samples then took the rate down with them (loopback, 2800-byte buffers
/// under 16,000-byte packets: 5 Mb/s).
#[test]
fn buffers_smaller_than_a_packet_are_paced_at_their_size() {
    let (g, path) = small_buffers(1400, 500, 10.0);
    assert!(g > 0.8 * path, "goodput {g} of {path}");
}

/// R69: buffers of a few packets are OK'd before the FEEDBACK that echoes
/// their last packet comes back, and the sender had forgotten what it sent
/// by then: on loopback nearly every FEEDBACK gave the controller no
/// sample, its rounds stopped ending, and it held 29 Mb/s. At this path's
/// 10 ms (the dumbbell's shortest here) most echoes still found their
/// buffer before the fix too, so this guards such buffers' throughput; the
/// fault itself is caught by netblt-proto's
/// `buffers_of_two_packets_feed_the_controller_on_a_short_path`.
#[test]
fn buffers_of_a_few_packets_still_feed_the_controller() {
    let (g, path) = small_buffers(1400, 2 * 1400, 10.0);
    assert!(g > 0.8 * path, "goodput {g} of {path}");
}

/// R70: a STARTUP begun again from FAST (R50/R51) near the path's rate on a
/// long path with a shallow queue (100 Mb/s, 600 ms, a 100 ms queue: a
/// sixth of the bandwidth-delay product; the tool's own buffers). It
/// restarted from 72 Mb/s at 2.885x and overflowed the queue for a round,
/// which a doubling search cannot avoid there (its signal takes a round
/// trip to come back); but it took the
/// 30 % it lost for noise, and an estimate counting those losses as
/// delivered (137 Mb/s) kept it overflowing for five more rounds: 7,565
/// queue drops for 100 MB, 9.6 % of what it sent, done at 11.81 s. Now the
/// round after STARTUP teaches the noise estimate nothing and its samples
/// count no overflow as delivered: 2,330 (3.2 %, the restart's own round),
/// 11.41 s. The test asks for under 5 % and 12 s. (A gentler restart lost
/// none here, but left a flow beside CUBIC at a tenth of its rate in 10 of
/// 30 seeds: decision R70.) Since R73 the first STARTUP leaves with the
/// path's rate here and nothing restarts: 0 drops, 10.64 s; the test now
/// guards the start-up as a whole, and R70's rules act where a restart
/// still happens (a rate step up).
#[test]
fn a_restart_on_a_long_path_does_not_flood_a_shallow_queue() {
    let mut b = bottleneck(1_250_000, 0.0);
    b.rate_bps = Some(100_000_000);
    let mut f = tool_flow(600.0);
    f.size_bytes = Some(100_000_000);
    let r = run(20.0, b, vec![f]);
    let fl = &r.flows[0];
    let drops = fl.bottleneck_drops.queue;
    println!(
        "queue drops {drops} of {} sent, done at {:?} s",
        fl.data_packets_sent, fl.completed_at_s
    );
    assert!(
        (drops as f64) < 0.05 * fl.data_packets_sent as f64,
        "{drops} of {}",
        fl.data_packets_sent
    );
    assert!(
        fl.completed_at_s.is_some_and(|t| t < 12.0),
        "{:?}",
        fl.completed_at_s
    );
}

/// R73: STARTUP's estimate is the path's when it ends. At 600 ms (100
/// Mb/s, a one-BDP queue, no loss, the tool's buffers) STARTUP ended on
/// HyStart's round trip with the one-round delivery sample averaging the
/// ramp, 67 of 96 Mb/s, and DRAIN (whose short-span sample, R6, shows the
/// bottleneck's rate) ended with its round; FAST paced 71 Mb/s until R51's
/// restart five rounds later: 0.74 of the path over 3.5-5.5 s. The
/// short-span sample now also counts for the rest of STARTUP's last round
/// and the round after, while STARTUP's queue still reaches the
/// bottleneck: 96 Mb/s from round 4, 0.98 over 3.5-5.5 s. The test asks
/// for 0.9.
#[test]
fn a_long_path_is_paced_at_its_rate_right_after_startup() {
    let mut b = bottleneck(7_500_000, 0.0);
    b.rate_bps = Some(100_000_000);
    let f = tool_flow(600.0);
    let r = run(5.5, b, vec![f]);
    let share = goodput(&r, 0, 3.5, 5.5) / (100e6 * PAYLOAD);
    println!("3.5-5.5 s: {share:.3} of the path");
    assert!(share > 0.9, "{share:.3} of the path");
}

/// R72: on a noisy long path FAST finds capacity that was freed. At 600
/// ms and 5 % loss (a one-BDP queue, the tool's buffers) a path going from
/// 50 to 100 Mb/s at 6 s: FAST's growth may pass the estimate by 10 ms a
/// round, 1.7 % at 600 ms, while on a noisy path a rise counts as capacity
/// found only at 2.5 %; none ever counted, no STARTUP ran again, and the
/// rate crept up 1-2 % a round: 0.55 of the new path over 10-16 s, 0.61
/// over 18-24 s. While the estimate rises, the growth may now pass it by
/// twice what counts, the rise is seen, and STARTUP runs again: 0.94 over
/// 10-16 s. The test asks for 0.85. (The same climb followed the first
/// STARTUP there, until R73.)
#[test]
fn a_noisy_long_path_finds_freed_capacity() {
    let mut b = bottleneck(7_500_000, 0.05);
    b.rate_bps = Some(50_000_000);
    b.rate_steps = vec![RateStepSpec {
        at_s: 6.0,
        rate_bps: 100_000_000,
    }];
    let f = tool_flow(600.0);
    let r = run(16.0, b, vec![f]);
    let share = goodput(&r, 0, 10.0, 16.0) / (100e6 * 0.95 * PAYLOAD);
    println!("10-16 s: {share:.3} of the path");
    assert!(share > 0.85, "{share:.3} of the path");
}

/// R71: `--min-rate` above the path is kept, as it promises ("never slower
/// than this, whatever the path says"): the pacing floor held, but the
/// window (two BDPs of the estimate) held the sender at the path's 9.4 Mb/s
/// while the report said "30 Mb/s (floor)". Now the window keeps two base
/// round trips of the floor: 10 Mb/s, 100 ms, floor 30 Mb/s, 20 MB: the
/// sender offers 24.8 Mb/s over the whole transfer (its start and tail
/// included; 9.5 before), and what the path cannot carry is lost and
/// resent. The test asks for 0.7 of the floor.
#[test]
fn a_minimum_rate_above_the_path_is_kept() {
    let mut b = bottleneck(125_000, 0.0);
    b.rate_bps = Some(10_000_000);
    let mut f = netblt("fair", PolicySpec::Fair, 100.0, 0.0);
    if let FlowKind::Netblt(n) = &mut f.kind {
        n.min_rate_bps = 30_000_000;
    }
    f.size_bytes = Some(20_000_000);
    let r = run(30.0, b, vec![f]);
    let fl = &r.flows[0];
    let secs = fl.completed_at_s.expect("completes") - fl.start_s;
    let offered = fl.data_packets_sent as f64 * 1452.0 * 8.0 / secs;
    println!("offered {:.1} Mb/s over {secs:.2} s", offered / 1e6);
    assert!(offered > 0.7 * 30e6, "offered {offered}");
}
