//! The end of a transfer on a lossy path (decision R34): once every packet
//! has been sent once, resends go twice, so the last rounds of RESENDs are
//! fewer. Explicit time, 50 ms each way, 5 % loss each way, twenty seeds.

mod pair;

use netblt_proto::{Duration, Policy};
use pair::{pattern, Impair, Pair};

/// When the sender finished, for each seed.
fn finish_times(double_tail: bool) -> Vec<f64> {
    (0..20)
        .map(|seed| {
            let cfg = netblt_proto::Config {
                double_tail,
                ..pair::adaptive_config(Policy::Fair, 32)
            };
            let mut p = Pair::write(cfg.clone(), cfg, pattern(3_000_000, seed), seed);
            p.latency = Duration::from_millis(50);
            let imp = Impair {
                loss: 0.05,
                ..Impair::default()
            };
            p.impair_ab = imp;
            p.impair_ba = imp;
            assert!(p.drive(20_000_000), "seed {seed}: did not finish");
            assert!(p.received == p.sent_data, "seed {seed}: bytes differ");
            p.a.stats()
                .completed_at
                .expect("finished")
                .since_zero()
                .as_secs_f64()
        })
        .collect()
}

#[test]
fn doubled_resends_at_the_end_shorten_the_tail() {
    let single = finish_times(false);
    let double = finish_times(true);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "mean {:.3} s, worst {:.3} s with one copy; mean {:.3} s, worst {:.3} s with two",
        mean(&single),
        worst(&single),
        mean(&double),
        worst(&double)
    );
    // A round trip is 100 ms.
    assert!(
        mean(&double) + 0.05 < mean(&single),
        "{double:?} vs {single:?}"
    );
}
