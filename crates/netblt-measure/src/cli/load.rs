//! `netblt load`.

use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::progress::{ByteWatch, ProgressLine};
use super::{pick_bulk_transport, print_json, LoadArgs};
use crate::load::{run_load as run_one, run_sweep, LoadConfig, LoadRun};
use crate::plot::{self, Series};
use crate::transport::Transport;
use crate::units::{format_bytes, format_si};

#[derive(Serialize)]
struct Sweep<'a> {
    target: String,
    runs: &'a [LoadRun],
}

/// Runs one load (or a sweep) and prints the tables or one JSON object.
///
/// # Errors
/// Connection and transfer errors, bad sizes.
pub fn run_load(args: LoadArgs) -> anyhow::Result<()> {
    let transport = pick_bulk_transport(args.tcp, args.udp, args.netblt, Transport::Tcp);
    let mut config = LoadConfig::new(args.target.0, transport);
    config.procs = args.procs as usize;
    config.bytes_per_proc = args.size.0;
    config.write_size = usize::try_from(args.write_size.0)?;
    anyhow::ensure!(
        config.write_size > 0,
        "--write-size must be at least 1 byte"
    );
    config.rtt_size = usize::try_from(args.rtt_size.0)?;
    config.rtt_count = args.rtt_count as usize;
    config.rtt_delay = Duration::from_millis(args.rtt_delay_ms);
    config.rtt_timeout = Duration::from_millis(args.rtt_timeout_ms);
    config.timeout = Duration::from_secs(args.timeout_secs);

    match &args.sweep {
        None => {
            let counter = Arc::new(AtomicU64::new(0));
            let label = Arc::new(Mutex::new(format!("load {} x {}", config.procs, transport)));
            let run = {
                let _watch = ByteWatch::start(
                    label,
                    Arc::clone(&counter),
                    config.bytes_per_proc * config.procs as u64,
                );
                run_one(&config, Some(&counter))?
            };
            if args.json {
                print_json(&run)
            } else {
                print!("{}", single_table(&run, &args.target.to_string()));
                Ok(())
            }
        }
        Some(range) => {
            let mut line = ProgressLine::new();
            let total = range.0.clone().count();
            let mut done = 0;
            let runs = run_sweep(&config, range.0.clone(), &mut |r| {
                done += 1;
                line.show(&format!(
                    "load sweep: {} processes done ({done}/{total})",
                    r.procs
                ));
            });
            line.clear();
            let runs = runs?;
            if let Some(stem) = &args.plot {
                plot_sweep(stem, &runs, transport)?;
            }
            if args.json {
                print_json(&Sweep {
                    target: args.target.to_string(),
                    runs: &runs,
                })
            } else {
                print!("{}", sweep_table(&runs, &args.target.to_string()));
                Ok(())
            }
        }
    }
}

fn rtt_cells(run: &LoadRun) -> String {
    match &run.rtt_us {
        Some(s) => format!("{:>5} {:>9.1} {:>9.1} {:>8.1}", s.n, s.min, s.mean, s.sd),
        None => format!("{:>5} {:>9} {:>9} {:>8}", 0, "-", "-", "-"),
    }
}

fn single_table(run: &LoadRun, target: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "netblt load: {} x {} transfers of {} to {target}",
        run.procs,
        run.transport,
        format_bytes(run.bytes_per_proc)
    );
    let _ = writeln!(
        out,
        "{:>4} {:>12} {:>12} {:>10} {:>10} {:>12}",
        "id", "sent", "received", "start s", "elapsed s", "bytes/s"
    );
    for t in &run.transfers {
        let _ = writeln!(
            out,
            "{:>4} {:>12} {:>12} {:>10.4} {:>10.4} {:>12}",
            t.id,
            t.report.bytes_sent,
            t.report.bytes_received,
            t.report.start_s,
            t.report.elapsed_s(),
            format_si(t.throughput)
        );
    }
    let _ = writeln!(
        out,
        "overall {}B/s (sum), per process {}B/s, aggregate {}B/s (bytes over wall span)",
        format_si(run.overall),
        format_si(run.per_process),
        format_si(run.aggregate)
    );
    if run.bytes_sent != run.bytes_received {
        let _ = writeln!(
            out,
            "lost: {} of {} bytes never reached the sink",
            run.bytes_sent.saturating_sub(run.bytes_received),
            run.bytes_sent
        );
    }
    let _ = match &run.rtt_us {
        Some(s) => writeln!(
            out,
            "rtt under load ({} B probes): n {}, min {:.1} µs, mean {:.1} µs, sd {:.1} µs, lost {}",
            run.rtt_size, s.n, s.min, s.mean, s.sd, run.rtt_lost
        ),
        None => writeln!(
            out,
            "rtt under load ({} B probes): none measured ({} sent, {} lost)",
            run.rtt_size, run.rtt_sent, run.rtt_lost
        ),
    };
    out
}

fn sweep_table(runs: &[LoadRun], target: &str) -> String {
    let mut out = String::new();
    let first = runs.first();
    let _ = writeln!(
        out,
        "netblt load sweep to {target}: {} transfers of {} (XUNET Table III; RTT in µs)",
        first.map_or("?", |r| r.transport.name()),
        format_bytes(first.map_or(0, |r| r.bytes_per_proc))
    );
    let _ = writeln!(
        out,
        "{:>5} {:>14} {:>14} {:>14} {:>5} {:>9} {:>9} {:>8}",
        "procs",
        "overall B/s",
        "per proc B/s",
        "aggregate B/s",
        "n",
        "rtt min",
        "rtt mean",
        "rtt sd"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:>5} {:>14} {:>14} {:>14} {}",
            r.procs,
            format_si(r.overall),
            format_si(r.per_process),
            format_si(r.aggregate),
            rtt_cells(r)
        );
    }
    out
}

fn plot_sweep(
    stem: &std::path::Path,
    runs: &[LoadRun],
    transport: Transport,
) -> anyhow::Result<()> {
    let stem_with = |suffix: &str| {
        let mut s = stem.as_os_str().to_os_string();
        s.push(suffix);
        std::path::PathBuf::from(s)
    };
    let rtt = |f: fn(&crate::stats::Summary) -> f64| -> Vec<(f64, f64)> {
        runs.iter()
            .filter_map(|r| r.rtt_us.as_ref().map(|s| (r.procs as f64, f(s))))
            .collect()
    };
    plot::lines(
        stem_with("-rtt"),
        &format!("Round-trip times with background processes ({transport})"),
        "number of background processes",
        "round-trip time (µs)",
        &[
            Series::new("min", rtt(|s| s.min)),
            Series::new("mean", rtt(|s| s.mean)),
        ],
        false,
        false,
    )?;
    let tp = |f: fn(&LoadRun) -> f64| -> Vec<(f64, f64)> {
        runs.iter().map(|r| (r.procs as f64, f(r))).collect()
    };
    plot::lines(
        stem_with("-throughput"),
        &format!("Throughput vs number of simultaneous processes ({transport})"),
        "number of processes",
        "throughput (bytes/s)",
        &[
            Series::new("overall", tp(|r| r.overall)),
            Series::new("per process", tp(|r| r.per_process)),
        ],
        false,
        false,
    )?;
    Ok(())
}
