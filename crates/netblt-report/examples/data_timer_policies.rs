//! RFC 1030's appendices II-IV under each receiver data-timer policy
//! (decision Q5): per appendix the median and worst |SPEED error|, mean #RXM
//! and DTMOS per row, and appendix IV's BI-90 fragmentation drop.
//!
//! `cargo run --release -p netblt-report --example data_timer_policies [--quick]`

use netblt_report::rfc1030;
use netblt_report::rfc1030_timers::CHOICES;

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rows = std::env::args().any(|a| a == "--rows");
    let seeds = netblt_report::seeds(quick);
    for a in &rfc1030::APPENDICES {
        let path = rfc1030::path_of(a.profile)?;
        let seeds: &[u64] = if a.random { &seeds } else { &seeds[..1] };
        for c in CHOICES {
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
                        c.label(), row.bs, row.bi, row.psz, row.nbufs, row.speed, row.loss, row.rxm,
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
            let n = errs.len();
            let median = netblt_report::fmt::median(errs.clone());
            let worst = errs.iter().copied().fold(0.0, f64::max);
            let mut line = format!(
                "App {:>3} {:<24} median {:5.1} % worst {:5.1} % | per row: #LOSS {:6.1} #RXM {:6.1} DTMOS {:6.1} | failed runs {}",
                a.id,
                c.label(),
                median,
                worst,
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
