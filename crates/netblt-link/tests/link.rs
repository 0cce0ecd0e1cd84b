//! Behaviour of `Link`, one knob at a time, with fixed seeds.

use std::time::Duration;

use netblt_link::{
    packet_error_rate, ConfigError, DelaySpike, DeliveryTrace, DropReason, Fate, FrameConfig, Link,
    LinkConfig, LossModel, TraceError,
};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn arrival(f: &Fate) -> Duration {
    f.deliveries[0].expect("delivered").at
}

/// Binomial bounds: |k - np| <= 5 sigma (fails with probability ~6e-7, and
/// the seeds are fixed anyway).
fn assert_binomial(k: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (k as f64 - mean).abs() <= 5.0 * sigma,
        "{k} of {n} outside {mean} +- 5 x {sigma}"
    );
}

#[test]
fn ideal_link_delivers_at_once() {
    let mut link = Link::new(LinkConfig::default(), 1).unwrap();
    let f = link.offer(ms(7), 1500);
    assert_eq!(f.drop, None);
    assert_eq!((f.tx_start, f.tx_end), (ms(7), ms(7)));
    assert_eq!(arrival(&f), ms(7));
    assert_eq!(f.deliveries[1], None);
    assert_eq!(link.queued_bytes(ms(7)), 0);
}

#[test]
fn rate_is_exact_for_back_to_back_packets() {
    // 1500 bytes at 1.544 Mb/s is 7.772020725... ms: not a whole number of
    // nanoseconds, so per-packet rounding would drift.
    let rate = 1_544_000u64;
    let mut link = Link::new(LinkConfig::with_rate_delay(rate, ms(290)), 1).unwrap();
    let n = 10_000u64;
    let mut last = None;
    for _ in 0..n {
        last = Some(link.offer(Duration::ZERO, 1500));
    }
    let last = last.unwrap();
    let exact_ns = (n as u128 * 1500 * 8 * 1_000_000_000).div_ceil(rate as u128);
    assert_eq!(last.tx_end.as_nanos(), exact_ns);
    assert_eq!(arrival(&last), last.tx_end + ms(290));
}

#[test]
fn departures_follow_the_transmitter_not_the_caller() {
    // 1000 bytes at 8 Mb/s = 1 ms each.
    let mut link = Link::new(LinkConfig::with_rate_delay(8_000_000, ms(10)), 1).unwrap();
    let a = link.offer(Duration::ZERO, 1000);
    // Offered late but while the first is still going: starts when it ends.
    let b = link.offer(us(500), 1000);
    assert_eq!((b.tx_start, b.tx_end), (ms(1), ms(2)));
    assert_eq!(link.queued_bytes(us(500)), 2000);
    assert_eq!(link.queued_bytes(us(1500)), 1000);
    assert_eq!(link.queued_bytes(ms(2)), 0);
    // After an idle gap the transmitter starts at `now`.
    let c = link.offer(ms(5), 1000);
    assert_eq!((c.tx_start, c.tx_end), (ms(5), ms(6)));
    assert_eq!(arrival(&a), ms(11));
}

#[test]
fn time_going_backwards_is_clamped() {
    let mut link = Link::new(LinkConfig::with_rate_delay(8_000_000, ms(0)), 1).unwrap();
    link.offer(ms(10), 1000);
    let f = link.offer(ms(3), 1000);
    assert_eq!(f.tx_start, ms(11));
}

#[test]
fn mtu_drops_larger_packets_before_using_the_transmitter() {
    let cfg = LinkConfig {
        rate_bps: Some(8_000_000),
        mtu: Some(1500),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let f = link.offer(ms(1), 1501);
    assert_eq!(f.drop, Some(DropReason::Mtu));
    assert_eq!((f.tx_start, f.tx_end), (ms(1), ms(1)));
    assert!(!f.is_delivered());
    let g = link.offer(ms(1), 1500);
    assert_eq!(g.tx_start, ms(1));
    assert_eq!(link.stats().drops.mtu, 1);
}

#[test]
fn drop_tail_queue_drops_at_the_limit() {
    let cfg = LinkConfig {
        rate_bps: Some(8_000_000), // 1 ms per 1000 bytes
        queue_limit_bytes: Some(3000),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let fates: Vec<Fate> = (0..5).map(|_| link.offer(Duration::ZERO, 1000)).collect();
    let drops: Vec<_> = fates.iter().map(|f| f.drop).collect();
    assert_eq!(
        drops,
        [
            None,
            None,
            None,
            Some(DropReason::Queue),
            Some(DropReason::Queue)
        ]
    );
    assert_eq!(link.queued_bytes(Duration::ZERO), 3000);
    // Once the first packet is out there is room for one more.
    let f = link.offer(ms(1), 1000);
    assert_eq!(f.drop, None);
    assert_eq!(f.tx_end, ms(4));
    assert_eq!(link.stats().drops.queue, 2);
}

#[test]
fn bernoulli_loss_is_within_binomial_bounds() {
    let p = 0.03;
    let cfg = LinkConfig {
        loss: LossModel::Bernoulli { p },
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 42).unwrap();
    let n = 100_000;
    for i in 0..n {
        link.offer(us(i), 100);
    }
    let s = link.stats();
    assert_eq!(s.offered, n);
    assert_eq!(s.delivered + s.drops.loss, n);
    assert_binomial(s.drops.loss, n, p);
}

#[test]
fn gilbert_elliott_mean_loss_matches_the_stationary_mix() {
    let loss = LossModel::GilbertElliott {
        p_good_to_bad: 0.01,
        p_bad_to_good: 0.2,
        loss_good: 0.001,
        loss_bad: 0.4,
    };
    let pi_bad = 0.01 / 0.21;
    let expected = pi_bad * 0.4 + (1.0 - pi_bad) * 0.001;
    assert!((loss.mean_loss() - expected).abs() < 1e-12);
    let mut link = Link::new(
        LinkConfig {
            loss,
            ..LinkConfig::default()
        },
        7,
    )
    .unwrap();
    let n = 400_000u64;
    for i in 0..n {
        link.offer(us(i), 100);
    }
    let rate = link.stats().drops.loss as f64 / n as f64;
    // Losses are correlated, so allow more than the binomial spread.
    assert!(
        (rate - expected).abs() < 0.1 * expected,
        "{rate} vs {expected}"
    );
}

#[test]
fn gilbert_elliott_losses_come_in_bursts() {
    let cfg = LinkConfig {
        loss: LossModel::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.1,
            loss_good: 0.0,
            loss_bad: 1.0,
        },
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 3).unwrap();
    let lost: Vec<bool> = (0..100_000)
        .map(|i| link.offer(us(i), 10).drop.is_some())
        .collect();
    let losses = lost.iter().filter(|&&l| l).count() as f64;
    let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
    // Mean bad run is 1 / p_bad_to_good = 10 packets.
    let mean_run = losses / runs;
    assert!((8.0..12.0).contains(&mean_run), "mean run {mean_run}");
}

#[test]
fn ber_follows_the_formula() {
    assert_eq!(packet_error_rate(0.0, 1500), 0.0);
    assert_eq!(packet_error_rate(1.0, 1), 1.0);
    let closed = 1.0 - (1.0f64 - 1e-5).powi(8 * 1500);
    assert!((packet_error_rate(1e-5, 1500) - closed).abs() < 1e-12);
    // Tiny rates must not round to zero.
    assert!(packet_error_rate(1e-12, 1500) > 1.1e-8);

    let ber = 1e-5;
    let cfg = LinkConfig {
        ber,
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 11).unwrap();
    let n = 50_000u64;
    for i in 0..n {
        link.offer(us(i), 1500);
    }
    assert_binomial(link.stats().drops.bit_error, n, closed);
}

#[test]
fn lost_packets_still_use_the_transmitter() {
    let cfg = LinkConfig {
        rate_bps: Some(8_000_000),
        loss: LossModel::Bernoulli { p: 1.0 },
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let a = link.offer(Duration::ZERO, 1000);
    let b = link.offer(Duration::ZERO, 1000);
    assert_eq!(a.drop, Some(DropReason::Loss));
    assert_eq!(b.tx_end, ms(2));
}

#[test]
fn frames_carry_two_1500_byte_packets_each() {
    let interval = us(21_220);
    let cfg = LinkConfig {
        frames: Some(FrameConfig {
            interval,
            bytes_per_frame: 3006,
        }),
        delay: ms(800),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let at: Vec<Duration> = (0..6)
        .map(|_| arrival(&link.offer(Duration::ZERO, 1500)))
        .collect();
    let frame_end = |k: u32| interval * k + ms(800);
    assert_eq!(
        at,
        [
            frame_end(1),
            frame_end(1),
            frame_end(2),
            frame_end(2),
            frame_end(3),
            frame_end(3)
        ]
    );
    // The 6 bytes left in a frame take a 6-byte packet, not a 7-byte one.
    let f = link.offer(Duration::ZERO, 6);
    assert_eq!(arrival(&f), frame_end(3));
    let f = link.offer(Duration::ZERO, 7);
    assert_eq!(arrival(&f), frame_end(4));
    // A packet offered mid-way through a later, empty frame uses that frame.
    let g = link.offer(interval * 10 + ms(5), 1500);
    assert_eq!(g.tx_start, interval * 10 + ms(5));
    assert_eq!(arrival(&g), frame_end(11));
}

#[test]
fn oversized_packets_span_whole_frames() {
    let cfg = LinkConfig {
        frames: Some(FrameConfig {
            interval: ms(10),
            bytes_per_frame: 1000,
        }),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let a = link.offer(Duration::ZERO, 100);
    let b = link.offer(Duration::ZERO, 2500); // fresh frame 1, then 2 and 3
    let c = link.offer(Duration::ZERO, 500); // rest of frame 3
    let d = link.offer(Duration::ZERO, 1);
    assert_eq!(arrival(&a), ms(10));
    assert_eq!((b.tx_start, arrival(&b)), (ms(10), ms(40)));
    assert_eq!(arrival(&c), ms(40));
    assert_eq!(arrival(&d), ms(50));
}

#[test]
fn mahimahi_traces_parse_and_pace() {
    let trace = DeliveryTrace::parse("# comment\n0\n0\n5\n\n10\n").unwrap();
    assert_eq!(trace.opportunities_ms, [0, 0, 5, 10]);
    assert_eq!(trace.period_ms(), 10);
    assert!((trace.mean_rate_bps() - 4.0 * 1500.0 * 8.0 * 100.0).abs() < 1e-6);
    assert_eq!(DeliveryTrace::parse(&trace.to_mahimahi()).unwrap(), trace);

    assert_eq!(DeliveryTrace::parse(""), Err(TraceError::Empty));
    assert_eq!(
        DeliveryTrace::parse("1\nx\n"),
        Err(TraceError::Parse { line: 2 })
    );
    assert_eq!(
        DeliveryTrace::parse("5\n3\n"),
        Err(TraceError::Decreasing { line: 2, value: 3 })
    );
    assert_eq!(DeliveryTrace::parse("0\n0\n"), Err(TraceError::ZeroPeriod));
    assert_eq!(
        DeliveryTrace::parse("-1\n"),
        Err(TraceError::Parse { line: 1 })
    );

    let cfg = LinkConfig {
        trace: Some(trace),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    // Opportunities at 0, 0, 5, 10 | 10, 10, 15, 20 | ...
    let at: Vec<_> = (0..6)
        .map(|_| arrival(&link.offer(Duration::ZERO, 1500)))
        .collect();
    assert_eq!(at, [ms(0), ms(0), ms(5), ms(10), ms(10), ms(10)]);
    // Small packets share an opportunity; big ones span several.
    let mut link = Link::new(
        LinkConfig {
            trace: Some(DeliveryTrace::from_offsets(vec![1, 2, 3, 4]).unwrap()),
            ..LinkConfig::default()
        },
        1,
    )
    .unwrap();
    assert_eq!(arrival(&link.offer(Duration::ZERO, 1000)), ms(1));
    assert_eq!(arrival(&link.offer(Duration::ZERO, 500)), ms(1));
    assert_eq!(arrival(&link.offer(Duration::ZERO, 3001)), ms(4));
    // Unused opportunities are lost: offered at 9.5 ms, the next is at 10.
    assert_eq!(arrival(&link.offer(us(9_500), 10)), ms(10));
}

#[test]
fn jitter_never_reorders() {
    let cfg = LinkConfig {
        rate_bps: Some(100_000_000),
        delay: ms(20),
        jitter: ms(10),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 5).unwrap();
    let mut last = Duration::ZERO;
    let mut spread = (Duration::MAX, Duration::ZERO);
    for i in 0..10_000 {
        let f = link.offer(us(i * 100), 1000);
        let at = arrival(&f);
        assert!(at >= last, "reordered at packet {i}");
        last = at;
        let extra = at - f.tx_end;
        spread = (spread.0.min(extra), spread.1.max(extra));
    }
    assert!(spread.0 >= ms(20) && spread.1 <= ms(30), "{spread:?}");
    assert_eq!(link.stats().reordered, 0);
}

#[test]
fn reordered_packets_are_overtaken() {
    let cfg = LinkConfig {
        delay: ms(10),
        reorder: 1.0,
        reorder_delay: ms(5),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let f = link.offer(Duration::ZERO, 100);
    assert_eq!(arrival(&f), ms(15));
    let mut cfg = link.config().clone();
    cfg.reorder = 0.3;
    let mut link = Link::new(cfg, 9).unwrap();
    let arrivals: Vec<_> = (0..1000)
        .map(|i| arrival(&link.offer(ms(i), 100)))
        .collect();
    let inversions = arrivals.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(inversions > 100, "{inversions}");
    assert_binomial(link.stats().reordered, 1000, 0.3);
}

#[test]
fn duplicates_and_corruption() {
    let cfg = LinkConfig {
        delay: ms(1),
        duplicate: 1.0,
        corrupt: 1.0,
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    for i in 0..1000 {
        let f = link.offer(ms(i), 20);
        let [Some(first), Some(second)] = f.deliveries else {
            panic!("expected two deliveries");
        };
        assert!(first.flip_bit.is_some_and(|b| b < 160));
        assert_eq!(second.flip_bit, None);
        assert_eq!(first.at, second.at);
    }
    let s = link.stats();
    assert_eq!((s.duplicates, s.corrupted, s.delivered), (1000, 1000, 1000));
}

#[test]
fn delay_spikes_are_whole_multiples() {
    let cfg = LinkConfig {
        delay: ms(100),
        delay_spike: Some(DelaySpike {
            prob: 0.2,
            quantum: ms(600),
            max_multiple: 3,
        }),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 2).unwrap();
    let mut seen = [0u32; 4];
    for i in 0..5000 {
        let f = link.offer(ms(i), 100);
        let extra = arrival(&f) - ms(i) - ms(100);
        assert_eq!(extra.as_millis() % 600, 0, "{extra:?}");
        seen[(extra.as_millis() / 600) as usize] += 1;
    }
    assert!(seen.iter().all(|&c| c > 0), "{seen:?}");
    assert_binomial(link.stats().spiked, 5000, 0.2);
}

#[test]
fn same_seed_same_fates() {
    let cfg = LinkConfig {
        rate_bps: Some(10_000_000),
        delay: ms(5),
        jitter: ms(2),
        loss: LossModel::GilbertElliott {
            p_good_to_bad: 0.05,
            p_bad_to_good: 0.3,
            loss_good: 0.01,
            loss_bad: 0.5,
        },
        ber: 1e-6,
        corrupt: 0.01,
        duplicate: 0.01,
        reorder: 0.05,
        reorder_delay: ms(3),
        delay_spike: Some(DelaySpike {
            prob: 0.01,
            quantum: ms(50),
            max_multiple: 2,
        }),
        queue_limit_bytes: Some(20_000),
        ..LinkConfig::default()
    };
    let run = |seed| {
        let mut link = Link::new(cfg.clone(), seed).unwrap();
        let fates: Vec<Fate> = (0..5000).map(|i| link.offer(us(i * 700), 1200)).collect();
        (fates, *link.stats())
    };
    assert_eq!(run(99), run(99));
    assert_ne!(run(99).0, run(100).0);
}

#[test]
fn validation_rejects_bad_configs() {
    let bad = |cfg: LinkConfig| Link::new(cfg, 0).expect_err("should be rejected");
    assert_eq!(
        bad(LinkConfig {
            loss: LossModel::Bernoulli { p: 1.5 },
            ..LinkConfig::default()
        }),
        ConfigError::Probability {
            field: "loss.p",
            value: 1.5
        }
    );
    assert!(matches!(
        bad(LinkConfig {
            ber: f64::NAN,
            ..LinkConfig::default()
        }),
        ConfigError::Probability { field: "ber", .. }
    ));
    assert!(matches!(
        bad(LinkConfig {
            corrupt: -0.1,
            ..LinkConfig::default()
        }),
        ConfigError::Probability {
            field: "corrupt",
            ..
        }
    ));
    assert_eq!(
        bad(LinkConfig {
            rate_bps: Some(0),
            ..LinkConfig::default()
        }),
        ConfigError::Zero { field: "rate_bps" }
    );
    assert_eq!(
        bad(LinkConfig {
            mtu: Some(0),
            ..LinkConfig::default()
        }),
        ConfigError::Zero { field: "mtu" }
    );
    assert_eq!(
        bad(LinkConfig {
            rate_bps: Some(1),
            frames: Some(FrameConfig {
                interval: ms(1),
                bytes_per_frame: 1
            }),
            ..LinkConfig::default()
        }),
        ConfigError::ConflictingTransmitters
    );
    assert!(matches!(
        bad(LinkConfig {
            delay: Duration::from_secs(1 << 40),
            ..LinkConfig::default()
        }),
        ConfigError::TooLong { field: "delay", .. }
    ));
    assert_eq!(
        bad(LinkConfig {
            delay_spike: Some(DelaySpike {
                prob: 0.1,
                quantum: ms(1),
                max_multiple: 0
            }),
            ..LinkConfig::default()
        }),
        ConfigError::Zero {
            field: "delay_spike.max_multiple"
        }
    );
    assert_eq!(
        bad(LinkConfig {
            trace: Some(DeliveryTrace {
                opportunities_ms: vec![]
            }),
            ..LinkConfig::default()
        }),
        ConfigError::Trace(TraceError::Empty)
    );
    assert_eq!(
        bad(LinkConfig {
            frames: Some(FrameConfig {
                interval: Duration::ZERO,
                bytes_per_frame: 10
            }),
            ..LinkConfig::default()
        }),
        ConfigError::Zero {
            field: "frames.interval"
        }
    );
}
