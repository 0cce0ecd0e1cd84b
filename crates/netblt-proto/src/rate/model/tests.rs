//! The controller's unit tests: samples fed by hand, explicit time.

use super::*;
use crate::rate::Policy;

fn sample(now_us: u64, rtt_us: u64, rate: f64) -> RateSample {
    RateSample {
        now: Instant::from_micros(now_us),
        rtt: Some(Duration::from_micros(rtt_us)),
        echoed_sent_at: Some(Instant::from_micros(now_us.saturating_sub(rtt_us))),
        delivery_bps: Some(rate),
        transmit_bps: Some(rate),
        recent: None,
        app_limited: false,
        arrived: 8,
        lost: 0,
        found: 0,
        inflight_bytes: 100_000,
        packet_bytes: 1400,
        group_packets: 8,
    }
}

/// FEEDBACKs 250 us apart on a 30 us path (loopback): whatever the
/// phase, the in-flight cap leaves room for what one FEEDBACK interval
/// delivers before it is reported, or the sender stalls every interval.
#[test]
fn inflight_cap_covers_a_feedback_interval() {
    let rate = 10e9;
    let mut m = Model::new(&RateConfig::default(), 40e9, false, 1);
    let mut checked = 0;
    for i in 0..50u64 {
        let mut s = sample(i * 250, 30, rate);
        s.packet_bytes = 16_000;
        s.group_packets = 32;
        m.on_sample(&s);
        // From the second sample on (a gap is known); the BDP-based
        // cap of the early phases is 2 x 37.5 KB + 4 packets here,
        // far below the 312 KB an interval delivers.
        if i == 0 || m.phase == Phase::Cruise {
            continue;
        }
        let cap = m.inflight_cap().expect("a cap once the path is measured") as f64;
        let interval = m.bottleneck() / 8.0 * 250e-6;
        assert!(
            cap >= interval,
            "cap {cap} < one interval {interval} at {i}"
        );
        checked += 1;
    }
    assert!(checked > 0);
}

/// A pacing group larger than FAST's alpha is not taken for a queue of
/// our own: with 32-packet groups the cruise window still grows.
#[test]
fn fast_alpha_is_at_least_a_pacing_group() {
    let mut small = Model::new(&RateConfig::default(), 40e9, false, 1);
    let mut large = small.clone();
    small.packet_bytes = 16_000;
    large.packet_bytes = 16_000;
    small.group_packets = 1;
    large.group_packets = 32;
    for m in [&mut small, &mut large] {
        m.min_rtt = Some(Duration::from_micros(30));
        m.fast_w = Some(1e6);
        m.r_rtt_n = 1;
        m.r_rtt_sum = 100e-6;
        m.fast();
    }
    let (ws, wl) = (small.fast_w.unwrap(), large.fast_w.unwrap());
    assert!(wl > ws, "group 32: {wl}, group 1: {ws}");
    assert!(wl > 0.5 * 1e6 * 0.3 + 16.0 * 16_000.0, "{wl}");
}

fn fair() -> Model {
    let config = RateConfig {
        policy: Policy::Fair,
        ..RateConfig::default()
    };
    Model::new(&config, 10e9, false, 1)
}

/// A `fair` model alone at 96 Mb/s with a `base_us` round trip, fed a
/// sample every 5 ms until FAST cruises (and two seconds at least);
/// returns it with the time reached, in microseconds.
fn cruising_alone(base_us: u64) -> (Model, u64) {
    let mut m = fair();
    let mut t = 0;
    while !(m.phase == Phase::Cruise && m.fast_w.is_some()) || t < 2_000_000 {
        t += 5_000;
        let mut s = sample(t, base_us, 96e6);
        s.inflight_bytes = 600_000;
        m.on_sample(&s);
        assert!(t < 10_000_000, "never cruised: {m:?}");
    }
    (m, t)
}

fn with_recent(mut s: RateSample, recent: f64) -> RateSample {
    s.recent = Some(crate::rate::recent::RecentSample {
        delivery_bps: recent,
        transmit_bps: recent,
    });
    s
}

/// R6: when STARTUP ends on a grown round trip, the one-round delivery
/// sample still averages the ramp (61 of 96 Mb/s at 600 ms); DRAIN
/// takes the short-span rate, which saw the busy bottleneck.
#[test]
fn drain_takes_the_short_span_rate() {
    let mut m = fair();
    let rtt = 600_000;
    // Three rounds of start-up at a lagging 40 Mb/s, no queue.
    let mut t = 0;
    for _ in 0..3 * 60 {
        t += 10_000;
        m.on_sample(&with_recent(sample(t, rtt, 40e6), 60e6));
    }
    assert_eq!(m.phase, Phase::Startup, "{m:?}");
    // The queue grows by 20 ms: HyStart ends STARTUP, with 8 MB in
    // flight (more than a 96 Mb/s x 600 ms pipe, so DRAIN lasts).
    t += 10_000;
    let mut s = with_recent(sample(t, rtt + 20_000, 61e6), 96e6);
    s.inflight_bytes = 8_000_000;
    m.on_sample(&s);
    assert_eq!(m.phase, Phase::Drain);
    // STARTUP ignored the short span (it compounds with its gain).
    assert!(m.bottleneck() < 62e6, "{}", m.bottleneck());
    s.now += Duration::from_millis(10);
    s.delivery_bps = Some(62e6);
    s.transmit_bps = Some(62e6);
    m.on_sample(&s);
    assert!(m.bottleneck() > 95e6, "{}", m.bottleneck());
}

/// R6: the first round's packets all left before any FEEDBACK, so no
/// one-round sample exists; the short span gives the first estimate
/// when the measuring train gave none (R56: one report covered it all,
/// on a path faster than the receiver's report interval).
#[test]
fn the_first_estimate_comes_from_the_short_span() {
    let mut m = fair();
    m.train = false;
    let mut s = with_recent(sample(600_000, 600_000, 1.0), 20e6);
    s.delivery_bps = None;
    s.transmit_bps = None;
    m.on_sample(&s);
    assert!((m.bottleneck() - 20e6).abs() < 1.0, "{}", m.bottleneck());
    // Later short spans in STARTUP do not move it.
    let mut s = with_recent(sample(610_000, 600_000, 1.0), 80e6);
    s.delivery_bps = None;
    m.on_sample(&s);
    assert!((m.bottleneck() - 20e6).abs() < 1.0, "{}", m.bottleneck());
}

/// R56: the first flight is a train of 10 ms at STARTUP's first pacing
/// (32 packets, 44.8 KB, at 28.85 Mb/s), held until it is reported; its
/// estimate is its dispersion at the receiver, and one slower than it
/// was sent ends STARTUP. The receiver reports the first packet at once, then every
/// 10 ms the packets that arrived since, the newest just before the
/// report; `bps` is a whole number of packets per report.
fn train_reports(m: &mut Model, bps: f64, lost_every: u64) -> u64 {
    let pkt = 1400.0;
    let per_report = (bps / 8.0 * 0.010 / pkt).round() as u64;
    let mut reports = 0;
    let mut sent = m.train_bytes();
    let rtt = 100_000;
    let mut now = rtt;
    // The train leaves at its pacing (28.85 Mb/s: 388 us a packet) and
    // arrives at the path's rate: each report echoes its newest packet,
    // sent then, and its round trip grows with the queue.
    let gap_us = 1400.0 * 8.0 / m.pacing_bps() * 1e6;
    let mut newest = 0u64;
    while m.train {
        let n = if reports == 0 { 1 } else { per_report };
        newest += n;
        let sent_us = ((newest - 1) as f64 * gap_us) as u64;
        let mut s = sample(now, now - sent_us, bps);
        s.delivery_bps = None;
        s.transmit_bps = None;
        s.lost = u64::from(lost_every > 0 && reports % lost_every == 1);
        s.arrived = n - s.lost;
        sent -= n as f64 * pkt;
        s.inflight_bytes = sent.max(0.0) as u64;
        m.on_sample(&s);
        now += 10_000;
        reports += 1;
        assert!(reports < 100, "the train never ended: {m:?}");
    }
    reports
}

#[test]
fn the_train_gives_the_first_estimate() {
    let mut m = fair();
    // Held to the train before anything is measured, and what is
    // reported frees no room.
    let train = m.inflight_cap().expect("a train");
    assert_eq!(train, 32 * 1400);
    assert_eq!(m.overdue_growth(), None);
    // A 2.24 Mb/s path (two packets per report): the train arrives at
    // the path's rate.
    let reports = train_reports(&mut m, 2.24e6, 0);
    assert!(reports >= 10, "{reports}");
    let bw = m.bottleneck();
    assert!((bw - 2.24e6).abs() < 1.0, "{bw}");
    assert_ne!(m.phase, Phase::Startup, "found the bottleneck: {m:?}");
    // A path faster than the train: the estimate is the train's rate,
    // and STARTUP goes on from it.
    let mut m = fair();
    train_reports(&mut m, 28e6, 0);
    let bw = m.bottleneck();
    assert!((bw - 28e6).abs() < 1.0, "{bw}");
    assert_eq!(m.phase, Phase::Startup);
    assert!(m.pacing_bps() > 2.5 * bw);
    // Noise: packets lost on the way used the path as much.
    let mut m = fair();
    train_reports(&mut m, 28e6, 3);
    let bw = m.bottleneck();
    assert!((bw - 28e6).abs() < 1.0, "{bw}");
    assert_eq!(m.phase, Phase::Startup);
}

/// R59: the report of the train's last two packets is lost and no other
/// follows; when the sender's guard lets it go on, the train ends with
/// the dispersion its reports measured, and a report of packets sent a
/// second later is not stretched into the train's estimate.
#[test]
fn a_train_whose_last_report_is_lost_ends_with_what_it_measured() {
    let mut m = fair();
    let rtt = 300_000;
    let report = |m: &mut Model, at: u64, arrived: u64, inflight: u64| {
        let mut s = sample(at, rtt, 28e6);
        (s.delivery_bps, s.transmit_bps) = (None, None);
        (s.arrived, s.inflight_bytes) = (arrived, inflight * 1400);
        m.on_sample(&s);
    };
    report(&mut m, rtt, 1, 31);
    report(&mut m, rtt + 10_000, 29, 2);
    assert!(m.train, "two packets are not reported");
    m.cap_gave_way();
    assert!(!m.train);
    // 29 packets in 10 ms.
    let measured = 29.0 * 1400.0 * 8.0 / 0.010;
    assert!((m.bottleneck() - measured).abs() < 1.0, "{m:?}");
    report(&mut m, rtt + 1_010_000, 3, 700);
    assert!(m.bottleneck() >= measured, "{m:?}");
    // The second and third reports lost, and the next echoes a packet a
    // RESEND asked for a round trip later: the train ends on the first
    // report alone (no dispersion: the short span gives the estimate),
    // not with 30 packets over 0.6 s.
    let mut m = fair();
    report(&mut m, rtt, 1, 31);
    report(&mut m, rtt + 627_000, 30, 2);
    assert!(!m.train);
    assert!(m.bottleneck() > 1e6, "{m:?}");
    // R60: that report's delivery sample spans the hold (the sender
    // marks it application-limited): it sets no first estimate below
    // the initial rate.
    let mut m = fair();
    report(&mut m, rtt, 1, 31);
    let mut s = sample(rtt + 627_000, rtt, 0.54e6);
    (s.arrived, s.inflight_bytes, s.app_limited) = (30, 2 * 1400, true);
    m.on_sample(&s);
    assert!(!m.train);
    assert!(m.bottleneck() >= m.initial_bps, "{m:?}");
}

/// R56: `background` keeps the first round as before (its start is not
/// a quick one anyway), and a train reported all at once (one report)
/// leaves the estimate to the short span and the one-round samples.
#[test]
fn no_train_without_a_dispersion() {
    let config = RateConfig {
        policy: Policy::Background,
        ..RateConfig::default()
    };
    let m = Model::new(&config, 10e9, true, 1);
    assert!(!m.train && m.inflight_cap().is_none());
    let mut m = fair();
    let mut s = sample(1_000, 1_000, 1.0);
    s.inflight_bytes = 0;
    s.arrived = 26;
    m.on_sample(&s);
    assert!(!m.train);
    assert!(m.bw.get().is_none(), "{m:?}");
}

/// R7: a competitor that fills the queue (its start-up's losses cut
/// us, FAST's own cuts do not shrink the queue) leaves us, once the
/// queue is found foreign, at least half the rate we had before it.
#[test]
fn a_foreign_queue_gets_at_least_half_the_calm_rate() {
    // Alone: 96 Mb/s, no queue, until FAST cruises.
    let base = 50_000;
    let (mut m, mut t) = cruising_alone(base);
    let calm = m.bottleneck();
    assert!(calm > 90e6, "{calm}");
    // A competitor arrives: the queue stands at 50 ms, 10 % of our
    // packets are lost for a few rounds, and we deliver little.
    for i in 0..400u64 {
        t += 5_000;
        let mut s = sample(t, 2 * base, 20e6);
        s.inflight_bytes = 300_000;
        s.transmit_bps = Some(20e6);
        if i < 60 {
            s.lost = 2;
        }
        m.on_sample(&s);
        if m.foreign_rounds > 0 {
            break;
        }
    }
    assert!(m.foreign_rounds > 0, "never found the queue foreign: {m:?}");
    assert!(
        m.bottleneck() >= 0.5 * calm - 1.0,
        "{} of {calm}",
        m.bottleneck()
    );
}

/// R63's test, at the brim of a queue a competitor filled over seconds:
/// FAST cruising with alpha of its own in a 30 ms queue at 3.7 Mb/s (of
/// a calm 96), the rounds before at 29 ms.
fn at_the_brim() -> Model {
    let (mut m, _) = cruising_alone(50_000);
    assert!(m.calm.get().is_some_and(|c| c > 90e6), "{:?}", m.calm);
    m.fast_settle = false;
    m.fast_probe = None;
    m.fast_overshoot = None;
    m.fast_found = 0;
    m.bw.reset(m.bw_round, 3.7e6);
    let rtt = Duration::from_millis(80);
    m.fast_w = Some(3.7e6 / 8.0 * rtt.as_secs_f64());
    m.r_rtt_sum = 10.0 * rtt.as_secs_f64();
    m.r_rtt_n = 10;
    m.r_min_rtt = Some(rtt);
    m.recent_min_rtt = MinFilter::new(OVERFLOW_RISE_ROUNDS);
    for r in m.round - 4..m.round {
        m.recent_min_rtt.update(r, 0.079);
    }
    m
}

/// R63: such a queue's overflow is a competitor's; not when the queue
/// jumped there (another flow's STARTUP), nor when our rate is a fair
/// share among a few flows, nor when losses came lately already.
#[test]
fn a_slowly_filled_queue_that_overflows_is_a_competitors() {
    let m = at_the_brim();
    assert!(m.overflow_not_ours(), "{m:?}");
    let mut sudden = at_the_brim();
    sudden.recent_min_rtt = MinFilter::new(OVERFLOW_RISE_ROUNDS);
    for r in sudden.round - 4..sudden.round {
        sudden.recent_min_rtt.update(r, 0.055);
    }
    assert!(!sudden.overflow_not_ours());
    let mut fair_share = at_the_brim();
    fair_share.bw.reset(fair_share.bw_round, 30e6);
    fair_share.fast_w = Some(30e6 / 8.0 * 0.0515);
    fair_share.r_rtt_sum = 10.0 * 0.0515;
    assert!(!fair_share.overflow_not_ours());
    let mut lossy = at_the_brim();
    lossy.last_lossy = Some(lossy.round - 3);
    assert!(!lossy.overflow_not_ours());
    let mut ours = at_the_brim();
    ours.fast_w = ours.fast_w.map(|w| 3.0 * w);
    assert!(!ours.overflow_not_ours());
}

/// R21: competing with a flow that keeps the queue full, the packets that
/// queue drops of ours are sent on top of the rate (and of the in-flight
/// cap), up to 1.25x; outside the competition, nothing changes.
#[test]
fn a_competitors_queue_losses_are_sent_on_top() {
    let base = 50_000;
    let (mut m, mut t) = cruising_alone(base);
    assert_eq!(m.foreign_loss, 0.0);
    // The competitor fills the queue (its arrival loses some of ours);
    // once we compete, one packet in five of ours is lost there, every
    // round.
    let mut competing_rounds = 0;
    for i in 0..4_000u64 {
        t += 5_000;
        let mut s = sample(t, 2 * base, 30e6);
        s.inflight_bytes = 300_000;
        s.arrived = 8;
        if i < 60 || m.foreign_rounds > 0 {
            s.lost = 2;
        }
        let r0 = m.round;
        m.on_sample(&s);
        if m.foreign_rounds > 0 && m.round != r0 {
            competing_rounds += 1;
        }
        if competing_rounds >= 30 && m.phase == Phase::Cruise {
            break;
        }
    }
    assert!(competing_rounds >= 30, "never competed long: {m:?}");
    assert!(
        m.foreign_loss > 0.15 && m.foreign_loss <= FOREIGN_LOSS_MAX,
        "{}",
        m.foreign_loss
    );
    let paced = m.pacing_bps() / m.bottleneck();
    assert!(
        paced > 1.15 && paced <= 1.25 + 1e-9,
        "paced {paced}x the estimate"
    );
}

/// R20: PROBE_RTT halves the rate; it does not age the bottleneck-rate
/// filter, which at a 10 ms round trip forgot the path's rate half way
/// through the probe's 200 ms and quartered it.
#[test]
fn probe_rtt_halves_the_rate_and_keeps_the_estimate() {
    let mut m = fair();
    let base = 10_000;
    let mut t = 0;
    while !(m.phase == Phase::Cruise && m.fast_w.is_some()) || t < 1_000_000 {
        t += 1_000;
        m.on_sample(&sample(t, base, 96e6));
        assert!(t < 10_000_000, "never cruised: {m:?}");
    }
    // A millisecond of our own queue from now on: the base is not seen
    // again, so PROBE_RTT comes within five seconds.
    let mut probed = false;
    let mut lowest = f64::MAX;
    for _ in 0..8_000 {
        t += 1_000;
        let probing = m.phase == Phase::ProbeRtt;
        // In the probe the path delivers what we send.
        let rate = if probing {
            m.pacing_bps().min(96e6)
        } else {
            96e6
        };
        let rtt = if probing { base } else { base + 1_000 };
        m.on_sample(&sample(t, rtt, rate));
        if m.phase == Phase::ProbeRtt {
            probed = true;
            lowest = lowest.min(m.pacing_bps());
        } else if probed {
            break;
        }
    }
    assert!(probed, "no PROBE_RTT: {m:?}");
    assert!(lowest >= 0.45 * 96e6, "paced {lowest} in PROBE_RTT");
    assert!(
        m.bottleneck() >= 0.95 * 96e6,
        "{} after PROBE_RTT",
        m.bottleneck()
    );
}

/// R23: round trips that come back within a quarter of the queue
/// threshold of the base (0.5 ms at 10 ms) confirm it, and no PROBE_RTT
/// comes in 12 s; the same flow 0.8 ms above the base probes, and so
/// does one that has met a queue-filling competitor.
#[test]
fn a_base_seen_again_within_the_tolerance_puts_off_probe_rtt() {
    let probes = |above_us: u64, competed: bool| {
        let mut m = fair();
        m.met_competitor = competed;
        let base = 10_000;
        let mut t = 0;
        while t < 1_000_000 {
            t += 1_000;
            m.on_sample(&sample(t, base, 96e6));
        }
        let mut n = 0;
        for _ in 0..12_000u64 {
            t += 1_000;
            let was = m.phase == Phase::ProbeRtt;
            // A little of our own queue from now on, below every
            // threshold that would call it standing.
            m.on_sample(&sample(t, base + above_us, 96e6));
            if !was && m.phase == Phase::ProbeRtt {
                n += 1;
            }
        }
        n
    };
    assert_eq!(probes(400, false), 0, "a base confirmed within 0.5 ms");
    // (After the probe the base is what the probe saw, here 0.8 ms
    // higher, so one probe is all this script can show.)
    assert!(probes(800, false) >= 1, "a base not seen again for 12 s");
    assert!(probes(400, true) >= 1, "no PROBE_RTT after a competitor");
}

/// R42: jitter that FAST reads as about 0.75 alpha of its own queue
/// (round trips up to 1.8 ms over the base, uniform, so some packet of
/// each round sees almost no queue) on a path that delivers 94 Mb/s
/// and no more. FAST probes the delivery rate; each probe finds
/// nothing, so the waits between them grow.
#[test]
fn probes_that_find_nothing_come_less_often() {
    let base = 50_000;
    let (mut m, mut t) = cruising_alone(base);
    // A window at the path's pipe (94 Mb/s x 50 ms), where the jitter
    // is 0.76 alpha of it: FAST's own rule would grow it by a quarter
    // alpha a round from there, and the path takes no more.
    m.fast_w = Some(587_500.0);
    let start = t;
    let (mut early, mut late) = (0, 0);
    let mut x: u32 = 7;
    while t < start + 40_000_000 {
        t += 5_000;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        // Jitter uniform in 0.7-1.8 ms, and the queue a window past the
        // pipe builds (11.75 bytes a microsecond at 94 Mb/s). No packet
        // comes back within 0.6 ms (alpha / 2) of the base, so no round
        // shows R45's jitter floor and FAST reads the jitter as queue,
        // which only R42's probes get past.
        let queue = (m.fast_w.unwrap_or(0.0) - 587_500.0).max(0.0) / 11.75;
        let rtt = base + 700 + u64::from(x % 1_100) + queue as u64;
        let mut s = sample(t, rtt, m.pacing_bps().min(94e6));
        s.inflight_bytes = 600_000;
        let before = m.fast_probe.is_some();
        m.on_sample(&s);
        if !before && m.fast_probe.is_some() {
            if t < start + 10_000_000 {
                early += 1;
            } else if t >= start + 30_000_000 {
                late += 1;
            }
        }
    }
    println!("probes in the first 10 s {early}, in the last 10 s {late}");
    // Every 4-8 rounds and 0.5-1 s would be about nine in 10 s (nine
    // without the backoff); after misses, at most 8x as long.
    assert!(early >= 2, "{early} probes in the first 10 s");
    assert!(
        late <= 4,
        "{late} probes in the last 10 s ({early} in the first)"
    );
}

/// R45: jitter uniform in 0-2.4 ms on a 94 Mb/s, 300 ms path, and a
/// window a fifth under the pipe. FAST reads the jitter as 0.8 alpha
/// queued and, by its own rule, closes the gap by a tenth of alpha a
/// round (0.03 % of the window); R42's probes took it from 0.80 to
/// 0.83 of the pipe in 3 s. With the floor (the smallest mean delay of
/// the last eight rounds in which some packet found the queue empty;
/// here once the jitter-free rounds before have left it) the window
/// goes back to the pipe.
#[test]
fn a_window_under_the_pipe_is_not_held_there_by_jitter() {
    let base = 300_000;
    let pipe = 94e6 / 8.0 * 0.3;
    let (mut m, mut t) = cruising_alone(base);
    let mut x: u32 = 11;
    let mut jittered = |m: &mut Model, t: u64| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let queue = (m.fast_w.unwrap_or(0.0) - pipe).max(0.0) / 11.75;
        let rtt = base + u64::from(x % 2_400) + queue as u64;
        let mut s = sample(t, rtt, m.pacing_bps().min(94e6));
        s.inflight_bytes = 4_000_000;
        m.on_sample(&s);
    };
    // Two rounds of jitter first, so the round the window is set in
    // is a jittery one.
    let start = t;
    while t < start + 600_000 {
        t += 5_000;
        jittered(&mut m, t);
    }
    m.fast_w = Some(0.8 * pipe);
    let start = t;
    while t < start + 3_000_000 {
        t += 5_000;
        jittered(&mut m, t);
    }
    let w = m.fast_w.unwrap_or(0.0);
    println!("window after 3 s: {w:.0} bytes (pipe {pipe:.0})");
    assert!(w > 0.95 * pipe, "window {w}");
}

/// R49: the queue an overshoot left has drained (R46's drain was on) and
/// the round shows FAST's own alpha queued, no more: the window FAST's
/// cuts left under the pipe goes back to the pipe at once. Before, it
/// stayed there for the round (neither growth nor R37 runs with alpha
/// queued): 74 of 96 Mb/s after a 100 ms step up (simulator).
#[test]
fn the_window_is_back_at_the_pipe_once_an_overshoot_has_drained() {
    let base = 100_000;
    let (mut m, mut t) = cruising_alone(base);
    // To the start of a round.
    let r = m.round;
    while m.round == r {
        t += 5_000;
        m.on_sample(&sample(t, base, 96e6));
    }
    let pipe = 96e6 / 8.0 * 0.1;
    m.fast_w = Some(0.75 * pipe);
    m.fast_overshoot = Some((96e6, m.round + OVERSHOOT_DRAIN_ROUNDS));
    let r0 = m.round;
    while m.round < r0 + 1 {
        t += 5_000;
        // About alpha of the window's own queued: 1.6 ms at 72 Mb/s.
        let mut s = sample(t, base + 1_600, 72e6);
        s.inflight_bytes = 900_000;
        m.on_sample(&s);
    }
    let (own, alpha) = m.fast_own;
    let w = m.fast_w.unwrap_or(0.0);
    println!("own {own:.0}, alpha {alpha:.0}, window {w:.0} (pipe {pipe:.0})");
    assert!(own > alpha / 2.0 && own <= 2.0 * alpha, "own {own}");
    assert!(w >= pipe, "window {w}");
}

/// R55: FAST's settling round after a STARTUP is not judged on its mean
/// round trip, but if some packet of it found the queue (almost) empty
/// the window is taken up to the estimate's pipe: a restart at 300 ms
/// whose STARTUP ended on HyStart's round trip left the window at 78 of
/// 96 Mb/s while the drain's short-span sample had found 96, and the
/// flow paced 78 for two more rounds (simulator).
#[test]
fn a_settling_round_with_room_takes_the_window_to_the_pipe() {
    let base = 300_000;
    let (mut m, mut t) = cruising_alone(base);
    let pipe = m.bdp_bytes().expect("a pipe") + m.fast_alpha();
    let behind = 0.8 * pipe;
    // From the start of a round, a settling round with the window left
    // `behind` whose round trips are `rtt_us`: the window after it.
    fn finish_round(m: &mut Model, t: &mut u64, rtt_us: u64) {
        let r = m.round;
        while m.round == r {
            *t += 5_000;
            m.on_sample(&sample(*t, rtt_us, 96e6));
        }
    }
    let mut settle = |m: &mut Model, rtt_us: u64| {
        finish_round(m, &mut t, base);
        m.fast_w = Some(behind);
        m.fast_settle = true;
        finish_round(m, &mut t, rtt_us);
        m.fast_w.unwrap_or(0.0)
    };
    let w = settle(&mut m, base);
    assert!(
        w >= 0.99 * pipe && w <= 2.0 * behind,
        "window {w}, pipe {pipe}"
    );
    // A settling round whose packets all queued is left alone.
    assert_eq!(settle(&mut m, base + 20_000), behind);
}

/// R24: a competition ends and the competitor keeps a standing queue of
/// 5 ms at 50 ms (like BBR v1's), too little for FAST to see its own share
/// above 2 alpha: the competition resumes within FAST's test, at the
/// rate it had, instead of FAST yielding round after round.
#[test]
fn a_small_foreign_queue_after_a_competition_resumes_it() {
    let base = 50_000;
    let (mut m, mut t) = cruising_alone(base);
    let share = 33e6;
    let mut stage = 0;
    let mut ended_round = 0;
    let mut competed_at = 0.0;
    for _ in 0..200_000u64 {
        t += 5_000;
        let pacing = m.pacing_bps();
        // After the competition the competitor's queue is small and
        // shrinks while we drain (so PROBE-DOWN finds it ours), then
        // stands again whatever FAST does.
        let rtt = match (stage, m.phase) {
            (_, Phase::ProbeRtt) => base,
            (0 | 1, _) => 2 * base,
            (_, Phase::ProbeDown) => base + 2_000,
            _ => base + 5_000,
        };
        let mut s = sample(t, rtt, pacing.min(share));
        s.inflight_bytes = 300_000;
        m.on_sample(&s);
        match stage {
            0 if m.foreign_rounds > 0 => stage = 1,
            1 if m.foreign_rounds == 0 => {
                competed_at = m.bottleneck();
                ended_round = m.round;
                stage = 2;
            }
            2 if m.foreign_rounds > 0 => {
                assert!(
                    m.round <= ended_round + COMPETE_MEMORY_ROUNDS,
                    "resumed only at round {} (ended {ended_round})",
                    m.round
                );
                assert!(
                    m.bottleneck() >= 0.9 * competed_at,
                    "resumed at {} after competing at {competed_at}",
                    m.bottleneck()
                );
                return;
            }
            2 if m.round > ended_round + 200 => break,
            _ => {}
        }
    }
    panic!("the competition never resumed (stage {stage}): {m:?}");
}

/// R19: a competition ends every 64 rounds so that FAST can test whether
/// the competitor is still there. When it is, the competition resumes at
/// the rate it had, although the test's rounds cut us (the competitor's
/// queue, its losses) and one of them found the queue empty (BBR v1's
/// PROBE_RTT), which made the cut-down rate the "calm" one.
#[test]
fn a_competition_resumes_at_its_own_rate_after_fasts_test() {
    let base = 50_000;
    let (mut m, mut t) = cruising_alone(base);
    // The competitor holds the queue at 50 ms and leaves us 33 Mb/s;
    // its arrival, and FAST's test later, lose some of what we send.
    let share = 33e6;
    let mut stage = 0;
    let mut lossy = 60;
    let mut competed_at = 0.0;
    let mut calm_round = None;
    for _ in 0..200_000u64 {
        t += 5_000;
        let pacing = m.pacing_bps();
        // Our own PROBE_RTTs find the base (the competitor's queue is
        // drained then too), so that the queue stays visible.
        let mut rtt = if m.phase == Phase::ProbeRtt {
            base
        } else {
            2 * base
        };
        if stage == 2 {
            // As the competition ends the competitor drains the queue for
            // a round trip (BBR v1's PROBE_RTT): FAST starts, and finds
            // its first round calm at the rate the competition had.
            if calm_round.is_none() && m.fast_w.is_some() {
                calm_round = Some(m.round + 1);
            }
            if calm_round.is_none_or(|r| m.round <= r) {
                rtt = base;
            } else if lossy == 0 && m.round == calm_round.unwrap_or(0) + 1 {
                // Then the queue is back, with the competitor's losses.
                lossy = 20;
            }
        }
        // What is sent beyond the share only queues (and is lost). After
        // its PROBE_RTT the competitor takes more for a while, as BBR's
        // STARTUP-like refill does.
        let share = if calm_round.is_some_and(|r| m.round > r) {
            20e6
        } else {
            share
        };
        let mut s = sample(t, rtt, pacing.min(share));
        s.inflight_bytes = 300_000;
        if lossy > 0 && rtt > base {
            lossy -= 1;
            s.lost = 2;
        }
        m.on_sample(&s);
        match stage {
            0 if m.foreign_rounds > 0 => stage = 1,
            1 if m.foreign_rounds == 0 => {
                competed_at = m.bottleneck();
                stage = 2;
            }
            2 if m.foreign_rounds > 0 => {
                assert!(
                    calm_round.is_some_and(|r| r < m.round),
                    "no calm round: {m:?}"
                );
                assert!(
                    m.bottleneck() >= 0.9 * competed_at,
                    "resumed at {} after competing at {competed_at}",
                    m.bottleneck()
                );
                return;
            }
            _ => {}
        }
    }
    panic!("the competition never resumed (stage {stage}): {m:?}");
}

/// R15: a FAST flow whose queue stays empty grows quickly up to the
/// path's estimated rate and then only 5 % past it per round, not the
/// 10 % that queued a tenth of a round trip before the delay answered.
#[test]
fn fast_growth_stops_five_percent_past_the_estimate() {
    let mut m = fair();
    let base = 300_000;
    let mut t = 0;
    // Alone at 96 Mb/s until FAST cruises.
    while !(m.phase == Phase::Cruise && m.fast_w.is_some()) {
        t += 20_000;
        m.on_sample(&sample(t, base, 96e6));
        assert!(t < 60_000_000, "never cruised: {m:?}");
    }
    let start = m.pacing_bps();
    // The queue empties for six rounds (every round trip the base) and
    // the path delivers no more: FAST's growth after two empty rounds
    // (2.5 %, 5 %, then 10 % a round) is held 5 % past the estimate.
    let mut most: f64 = 0.0;
    for _ in 0..(6 * base / 20_000) {
        t += 20_000;
        m.on_sample(&sample(t, base, 96e6));
        if m.phase == Phase::Cruise && m.fast_w.is_some() {
            most = most.max(m.pacing_bps());
        }
    }
    let bw = m.bottleneck();
    assert!((95e6..97e6).contains(&bw), "estimate {bw}");
    // 5 % past it (or where it started), and FAST's own alpha / 2 per
    // round (10 packets a round trip: 0.19 Mb/s a round).
    let limit = (1.05 * bw).max(start) + 6.0 * 0.19e6 + 0.1e6;
    assert!(most <= limit, "paced {most} on {bw}, from {start}");
    assert!(most >= bw, "never reached the estimate: {most}");
}

/// R16: on a long path 5 % of a round trip is a long queue (90 ms at
/// 1.8 s) that FAST then drains for several rounds below the path's
/// rate; past the estimate it grows by at most 20 ms of queue a round.
#[test]
fn fast_growth_past_the_estimate_is_at_most_twenty_ms_of_queue() {
    let mut m = fair();
    let base = 1_800_000;
    let step = 50_000;
    let mut t = 0;
    while !(m.phase == Phase::Cruise && m.fast_w.is_some()) {
        t += step;
        m.on_sample(&sample(t, base, 96e6));
        assert!(t < 300_000_000, "never cruised: {m:?}");
    }
    let start = m.pacing_bps();
    let mut most: f64 = 0.0;
    for _ in 0..(6 * base / step) {
        t += step;
        m.on_sample(&sample(t, base, 96e6));
        if m.phase == Phase::Cruise && m.fast_w.is_some() {
            most = most.max(m.pacing_bps());
        }
    }
    let bw = m.bottleneck();
    assert!((95e6..97e6).contains(&bw), "estimate {bw}");
    // 20 ms of 1.8 s past it (1.1 %, not 5 %), and alpha / 2 a round
    // (10 packets a round trip at 1.8 s: 0.03 Mb/s a round).
    let limit = (bw * (1.0 + 0.020 / 1.8)).max(start) + 6.0 * 0.03e6 + 0.1e6;
    assert!(most <= limit, "paced {most} on {bw}, from {start}");
    assert!(most >= bw, "never reached the estimate: {most}");
}

/// R18: a lost FEEDBACK (one gap twice as long) must not loosen the
/// in-flight cap for the rounds after it: with the longest gap of four
/// rounds the cap grew by one FEEDBACK interval's delivery (15 KB at
/// 96 Mb/s and 10 ms) for four rounds after every loss, FAST's window
/// stopped clocking the sender and its pacing swung the queue empty.
/// The gap itself is bridged while it lasts (`overdue_growth`).
#[test]
fn a_lost_feedback_does_not_loosen_the_cap_afterwards() {
    let (base, step) = (10_000, 1_250);
    let mut all = fair();
    let mut lossy = fair();
    let mut t = 0;
    let mut worst: f64 = 0.0;
    for i in 0..4_000u64 {
        t += step;
        // A round trip of 11 ms: FAST cruises with its alpha queued.
        let mut s = sample(t, base + 1_000, 96e6);
        s.inflight_bytes = 130_000;
        all.on_sample(&s);
        // Every 200th FEEDBACK is lost on the way back.
        if i % 200 != 100 {
            lossy.on_sample(&s);
        }
        if i > 1_000 {
            let (a, b) = (all.inflight_cap().unwrap(), lossy.inflight_cap().unwrap());
            worst = worst.max(b as f64 - a as f64);
        }
    }
    assert_eq!(lossy.phase, Phase::Cruise, "{lossy:?}");
    assert!(lossy.fast_w.is_some(), "{lossy:?}");
    // At most a packet's worth (the mean gap moves a little).
    assert!(
        worst <= 1_400.0,
        "a lost FEEDBACK loosened the cap by {worst} bytes"
    );
    // While a FEEDBACK is overdue the cap grows at the bottleneck's
    // rate, from about one interval after the last one.
    let (after, bps) = lossy.overdue_growth().unwrap();
    assert!(
        (1_250..1_500).contains(&after.as_micros()),
        "overdue after {after:?}"
    );
    assert!((95e6..97e6).contains(&bps), "grows at {bps}");
}

/// Loopback gives round trips of zero: every phase must stay finite.
#[test]
fn zero_round_trips_stay_finite() {
    let mut m = Model::new(&RateConfig::default(), 1e9, false, 1);
    for i in 0..5_000u64 {
        m.on_sample(&sample(i * 10, if i % 3 == 0 { 0 } else { 1 }, 1e9));
        let r = m.pacing_bps();
        assert!(r.is_finite() && r >= 1.0, "rate {r} at {i}");
        if let Some(c) = m.inflight_cap() {
            assert!(c > 0);
        }
    }
}

/// Any numbers a caller or a hostile peer can produce: no panic, a
/// finite rate within the configured bounds.
#[test]
fn arbitrary_samples_and_bounds_never_panic() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..200 {
        let cfg = RateConfig {
            policy: Policy::Fair,
            max_bps: Some(next() % 3_000_000_000),
            min_bps: next() % 2_000_000_000,
            initial_bps: next() % 1_000_000_000,
        };
        let mut m = Model::new(&cfg, 1e9, round % 2 == 0, next() as u32);
        let mut now = 0u64;
        for _ in 0..300 {
            now += next() % 50_000;
            let mut s = sample(now, next() % 2_000_000, (next() % 2_000_000_000) as f64);
            s.arrived = next() % 100;
            s.lost = next() % 100;
            s.app_limited = next() % 4 == 0;
            if next() % 5 == 0 {
                s.rtt = None;
                s.delivery_bps = Some(f64::INFINITY);
            }
            m.on_sample(&s);
            let r = m.pacing_bps();
            assert!(r.is_finite() && r >= 1.0, "rate {r}");
        }
    }
}

/// R27: a cap lowered during the transfer holds the pacing rate at once
/// and is reported as the reason; lifted well above a rate it held, the
/// controller starts up again and paces above the old cap within a
/// round trip or two.
#[test]
fn a_cap_set_while_cruising_holds_the_rate_and_lifting_it_starts_up() {
    let (mut m, mut t) = cruising_alone(100_000);
    assert!(m.pacing_bps() > 80e6, "{}", m.pacing_bps());
    m.set_limits(0.0, 20e6);
    assert!(m.pacing_bps() <= 20e6);
    assert_eq!(m.state().reason, RateReason::Cap);
    // Twenty round trips at the cap: the path delivers what we send.
    for _ in 0..400 {
        t += 5_000;
        m.on_sample(&sample(t, 100_000, 20e6));
    }
    assert!(m.pacing_bps() <= 20e6);
    m.set_limits(0.0, f64::INFINITY);
    assert_eq!(m.phase, Phase::Startup);
    // STARTUP paces at 2.885x what the path delivered.
    assert!(m.pacing_bps() > 50e6, "{}", m.pacing_bps());
}

/// A cap that never held the rate (the path is slower) changes nothing
/// when it lifts; neither limit goes above the negotiated rate, and a
/// floor above the cap is held to it.
#[test]
fn limits_stay_under_the_negotiated_rate_and_a_slack_cap_changes_nothing() {
    let (mut m, _) = cruising_alone(100_000);
    m.set_limits(0.0, 500e6);
    let phase = m.phase;
    m.set_limits(0.0, 5e9);
    assert_eq!(m.phase, phase, "a cap above the path restarted STARTUP");
    let mut capped = Model::new(&RateConfig::default(), 50e6, false, 1);
    capped.set_limits(80e6, 1e12);
    assert!(capped.pacing_bps() <= 50e6);
    capped.set_limits(1e9, 10e6);
    assert!(capped.pacing_bps() <= 10e6, "{}", capped.pacing_bps());
    assert!(capped.min_bps <= capped.max_bps);
}
