//! RFC 1030's appendices II-IV under each receiver data-timer policy
//! (decision Q5): per appendix the median and worst |SPEED error|, mean #RXM
//! and DTMOS per row, and appendix IV's BI-90 fragmentation drop.
//!
//! `cargo run --release -p netblt-report --example data_timer_policies [--quick]`

use netblt_proto::{DataTimerPolicy, Duration};
use netblt_report::rfc1030::{self, PaperRow};

/// A policy, possibly depending on the row (variance in burst intervals).
#[derive(Clone, Copy)]
enum Choice {
    Adaptive,
    Rfc998 { variance_intervals: u32 },
}

impl Choice {
    fn policy(self, row: &PaperRow) -> DataTimerPolicy {
        match self {
            Choice::Adaptive => DataTimerPolicy::Adaptive,
            Choice::Rfc998 { variance_intervals } => DataTimerPolicy::Rfc998 {
                variance: Duration::from_millis(u64::from(row.bi)) * variance_intervals,
            },
        }
    }

    fn name(self) -> String {
        match self {
            Choice::Adaptive => "adaptive".into(),
            Choice::Rfc998 { variance_intervals } => {
                format!("rfc998, variance {variance_intervals} BI")
            }
        }
    }
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rows = std::env::args().any(|a| a == "--rows");
    let seeds = netblt_report::seeds(quick);
    let choices = [
        Choice::Adaptive,
        Choice::Rfc998 {
            variance_intervals: 0,
        },
        Choice::Rfc998 {
            variance_intervals: 1,
        },
    ];
    for a in &rfc1030::APPENDICES {
        let path = rfc1030::path_of(a.profile)?;
        let seeds: &[u64] = if a.random { &seeds } else { &seeds[..1] };
        for c in choices {
            let mut errs = Vec::new();
            let (mut rxm, mut dtmos, mut loss) = (0.0, 0.0, 0.0);
            let (mut frag, mut whole) = (Vec::new(), Vec::new());
            let mut failed = 0;
            for row in a.rows {
                let o = rfc1030::run_row_with(&path, row, seeds, c.policy(row))?;
                errs.push(((o.speed - row.speed) / row.speed * 100.0).abs());
                if rows {
                    println!(
                        "  {} {}/{} psz {} nbufs {}: paper {:.3} #LOSS {} #RXM {} | ours {:.3} #LOSS {:.1} #RXM {:.1} DTMOS {:.1}",
                        c.name(), row.bs, row.bi, row.psz, row.nbufs, row.speed, row.loss, row.rxm,
                        o.speed, o.loss, o.rxm, o.dtmos
                    );
                }
                rxm += o.rxm;
                dtmos += o.dtmos;
                loss += o.loss;
                failed += o.failed;
                if a.id == "IV" && row.bi == 90 {
                    if row.psz > 1432 {
                        frag.push(o.speed);
                    } else {
                        whole.push(o.speed);
                    }
                }
            }
            errs.sort_by(f64::total_cmp);
            let n = errs.len();
            let median = if n % 2 == 1 {
                errs[n / 2]
            } else {
                (errs[n / 2 - 1] + errs[n / 2]) / 2.0
            };
            let mut line = format!(
                "App {:>3} {:<24} median {:5.1} % worst {:5.1} % | per row: #LOSS {:6.1} #RXM {:6.1} DTMOS {:6.1} | failed runs {}",
                a.id,
                c.name(),
                median,
                errs[n - 1],
                loss / n as f64,
                rxm / n as f64,
                dtmos / n as f64,
                failed
            );
            if !frag.is_empty() {
                let m = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let (f, w) = (m(&frag), m(&whole));
                line += &format!(
                    " | BI-90 1434-1438 / 1400-1432: {f:.3} / {w:.3} ({:+.0} %)",
                    (f / w - 1.0) * 100.0
                );
            }
            println!("{line}");
        }
    }
    Ok(())
}
