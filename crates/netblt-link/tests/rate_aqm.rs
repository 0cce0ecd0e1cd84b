//! Rate steps over time and CoDel (RFC 8289), with fixed seeds.

use std::time::Duration;

use netblt_link::{Aqm, ConfigError, DropReason, Link, LinkConfig, RateStep};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn a_rate_step_changes_the_serialization_time() {
    // 8 Mb/s (1 ms per 1000 bytes), 0.8 Mb/s from 10 ms on.
    let cfg = LinkConfig {
        rate_bps: Some(8_000_000),
        rate_steps: vec![RateStep {
            at: ms(10),
            rate_bps: 800_000,
        }],
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let f = link.offer(ms(0), 1000);
    assert_eq!(f.tx_end, ms(1));
    // Straddles the step: 0.5 ms at 8 Mb/s (500 bytes), then 500 bytes at
    // 0.8 Mb/s (5 ms).
    let f = link.offer(Duration::from_micros(9_500), 1000);
    assert_eq!(f.tx_end, ms(15));
    // Queued before the step ends, sent after it at the new rate.
    let f = link.offer(ms(11), 1000);
    assert_eq!((f.tx_start, f.tx_end), (ms(15), ms(25)));
}

#[test]
fn rate_steps_keep_long_runs_exact() {
    // 100 -> 20 -> 100 Mb/s: 1250 packets of 1000 bytes at 100 Mb/s take
    // 100 ms; a backlog offered at 0 drains in the three regimes.
    let cfg = LinkConfig {
        rate_bps: Some(100_000_000),
        rate_steps: vec![
            RateStep {
                at: ms(50),
                rate_bps: 20_000_000,
            },
            RateStep {
                at: ms(100),
                rate_bps: 100_000_000,
            },
        ],
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 1).unwrap();
    let mut end = Duration::ZERO;
    for _ in 0..2000 {
        end = link.offer(Duration::ZERO, 1000).tx_end;
    }
    // 2 MB = 16 Mbit: 5 Mbit by 50 ms, 1 Mbit by 100 ms, 10 Mbit at 100 Mb/s.
    assert_eq!(end, ms(200));
}

#[test]
fn rate_steps_are_validated() {
    let mut cfg = LinkConfig {
        rate_steps: vec![RateStep {
            at: ms(1),
            rate_bps: 1,
        }],
        ..LinkConfig::default()
    };
    assert!(matches!(cfg.validate(), Err(ConfigError::RateSteps(_))));
    cfg.rate_bps = Some(1000);
    assert_eq!(cfg.validate(), Ok(()));
    cfg.rate_steps.push(RateStep {
        at: Duration::ZERO,
        rate_bps: 5,
    });
    assert!(matches!(cfg.validate(), Err(ConfigError::RateSteps(_))));
    cfg.rate_steps = vec![RateStep {
        at: ms(1),
        rate_bps: 0,
    }];
    assert!(matches!(cfg.validate(), Err(ConfigError::Zero { .. })));
}

/// A sender at twice the link rate into a large queue: drop-tail lets the
/// queue (and so the delay) grow to the limit; CoDel drops at the head once
/// the sojourn time has stayed above 5 ms for 100 ms, and goes on dropping
/// more often while it stays above.
#[test]
fn codel_drops_a_standing_queue_drop_tail_does_not() {
    let run = |aqm: Aqm| {
        let cfg = LinkConfig {
            rate_bps: Some(10_000_000),
            queue_limit_bytes: Some(10_000_000),
            aqm,
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg, 7).unwrap();
        let mut max_sojourn = Duration::ZERO;
        let mut drops = Vec::new();
        // 1500 bytes every 0.6 ms = 20 Mb/s for 1 s.
        for i in 0..1667u64 {
            let now = Duration::from_micros(600 * i);
            let f = link.offer(now, 1500);
            if f.drop == Some(DropReason::Aqm) {
                // An AQM drop happens when the packet reaches the head.
                drops.push(f.tx_start);
            } else {
                max_sojourn = max_sojourn.max(f.tx_start - now);
            }
        }
        (*link.stats(), max_sojourn, drops)
    };
    let (tail, tail_sojourn, _) = run(Aqm::DropTail);
    assert_eq!(tail.drops.total(), 0);
    assert!(tail_sojourn > ms(400), "{tail_sojourn:?}");
    let (codel, codel_sojourn, drops) = run(Aqm::CODEL);
    assert_eq!(codel.drops.queue, 0);
    // Sojourn passes 5 ms after ~10 ms of overload (at the head at ~15 ms);
    // the first drop follows one interval later.
    let first = drops[0];
    assert!(first >= ms(100) && first <= ms(130), "{first:?}");
    // The control law: after the first drop (count 1) the next comes
    // interval / sqrt(count) later, so the gaps shrink (100 ms, 70.7 ms,
    // 57.7 ms, ..., to within a packet time of 0.6 ms). An
    // open-loop sender does not slow down, so the queue still grows, a
    // little more slowly than under drop-tail.
    let gaps: Vec<Duration> = drops.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 10, "{drops:?}");
    assert!(gaps[0] >= ms(100) && gaps[0] < ms(102), "{gaps:?}");
    assert!(gaps[1] > ms(70) && gaps[1] < ms(72), "{gaps:?}");
    assert!(gaps[gaps.len() - 1] < gaps[0] / 3, "{gaps:?}");
    assert!(codel_sojourn < tail_sojourn, "{codel_sojourn:?}");
}

#[test]
fn codel_leaves_a_link_below_capacity_alone() {
    let cfg = LinkConfig {
        rate_bps: Some(10_000_000),
        aqm: Aqm::CODEL,
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 7).unwrap();
    for i in 0..5000u64 {
        // 1500 bytes every 1.5 ms = 8 Mb/s, with bursts of two.
        let now = Duration::from_micros(3000 * (i / 2));
        assert_eq!(link.offer(now, 1500).drop, None);
    }
}

#[test]
fn backlog_bytes_matches_queued_bytes() {
    let mut link = Link::new(LinkConfig::with_rate_delay(8_000_000, ms(5)), 1).unwrap();
    for _ in 0..10 {
        link.offer(Duration::ZERO, 1000);
    }
    for t in [0u64, 1, 3, 9, 10, 20] {
        assert_eq!(link.queued_bytes(ms(t)), link.backlog_bytes(ms(t)));
    }
}

#[test]
fn aqm_round_trips_through_json() {
    let cfg = LinkConfig {
        rate_bps: Some(1_000_000),
        aqm: Aqm::CODEL,
        rate_steps: vec![RateStep {
            at: ms(3),
            rate_bps: 5,
        }],
        ..LinkConfig::default()
    };
    let text = serde_json::to_string(&cfg).unwrap();
    assert_eq!(serde_json::from_str::<LinkConfig>(&text).unwrap(), cfg);
    // A drop-tail config without steps serializes as before.
    let plain = serde_json::to_string(&LinkConfig::default()).unwrap();
    assert!(!plain.contains("aqm") && !plain.contains("rate_steps"));
}
