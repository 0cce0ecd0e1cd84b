//! `netblt rtt`.

use std::fmt::Write as _;
use std::time::Duration;

use super::progress::ProgressLine;
use super::{pick_transport, print_json, RttArgs};
use crate::plot::{self, Series};
use crate::rtt::{measure_rtt, RttConfig, RttReport, DEFAULT_SIZES};
use crate::transport::Transport;

/// Measures RTT per size and prints the table or one JSON object.
///
/// # Errors
/// Connection, protocol and size errors (one line each).
pub fn run_rtt(args: RttArgs) -> anyhow::Result<()> {
    let transport = pick_transport(args.tcp, args.udp, Transport::Udp);
    let mut config = RttConfig::new(args.target.0, transport);
    if let Some(spec) = &args.sizes {
        config.sizes = spec.resolve(&DEFAULT_SIZES);
    }
    config.count = args.count as usize;
    config.warmup = args.warmup as usize;
    config.timeout = Duration::from_millis(args.timeout_ms);

    let mut line = ProgressLine::new();
    let report = measure_rtt(&config, &mut |p| {
        line.show(&format!(
            "rtt {transport} {}: size {} B ({}/{}), {}/{}",
            config.target,
            p.size,
            p.size_index + 1,
            p.sizes,
            p.done,
            p.count
        ));
    });
    line.clear();
    let report = report?;

    if let Some(stem) = &args.plot {
        let pick = |f: fn(&crate::stats::Summary) -> f64| -> Vec<(f64, f64)> {
            report
                .sizes
                .iter()
                .filter_map(|s| s.rtt_us.as_ref().map(|r| (s.size as f64, f(r))))
                .collect()
        };
        plot::lines(
            stem,
            &format!(
                "Round-trip time vs message size ({transport}, {})",
                report.target
            ),
            "message size (bytes)",
            "round-trip time (µs)",
            &[
                Series::new("min", pick(|r| r.min)),
                Series::new("mean", pick(|r| r.mean)),
            ],
            true,
            true,
        )?;
    }
    if args.json {
        print_json(&report)
    } else {
        print!("{}", table(&report));
        Ok(())
    }
}

/// The text table: one row per size, times in microseconds.
pub(crate) fn table(r: &RttReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "netblt rtt: {} {}, {} messages per size, one outstanding; times in µs",
        r.transport, r.target, r.count
    );
    let _ = writeln!(
        out,
        "{:>8} {:>6} {:>5} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "size", "n", "lost", "min", "mean", "sd", "p50", "p90", "p99", "max"
    );
    let mut flagged = false;
    for s in &r.sizes {
        let mark = if s.load_changed { "*" } else { " " };
        flagged |= s.load_changed;
        let _ = match &s.rtt_us {
            Some(t) => writeln!(
                out,
                "{:>7}{mark} {:>6} {:>5} {:>9.1} {:>9.1} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                s.size, t.n, s.lost, t.min, t.mean, t.sd, t.p50, t.p90, t.p99, t.max
            ),
            None => writeln!(
                out,
                "{:>7}{mark} {:>6} {:>5}   (every message lost)",
                s.size, 0, s.lost
            ),
        };
    }
    if flagged {
        let _ = writeln!(
            out,
            "* the 1-minute load average changed by more than {} during this size's run",
            r.load_change_threshold
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtt::SizeRtt;
    use crate::stats::Summary;

    fn size(size: usize, load_changed: bool, values: &[f64]) -> SizeRtt {
        SizeRtt {
            size,
            sent: values.len(),
            lost: 0,
            rtt_us: Summary::from_values(values),
            load_changed,
            load_change: Some(if load_changed { 0.9 } else { 0.1 }),
            start_s: 0.0,
            end_s: 1.0,
        }
    }

    #[test]
    fn table_marks_sizes_whose_load_changed() {
        let r = RttReport {
            target: "127.0.0.1:7007".into(),
            transport: Transport::Udp,
            count: 3,
            timeout_ms: 1000.0,
            sizes: vec![
                size(1, false, &[10.0, 11.0, 12.0]),
                size(1025, true, &[20.0, 21.0, 22.0]),
                size(2, false, &[]),
            ],
            load_change_threshold: 0.5,
            load_samples: Vec::new(),
        };
        let t = table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].trim_start().starts_with("1 "), "{t}");
        assert!(lines[3].trim_start().starts_with("1025*"), "{t}");
        assert!(lines[4].contains("every message lost"), "{t}");
        assert!(lines[5].starts_with("* the 1-minute load average changed by more than 0.5"));
    }
}
