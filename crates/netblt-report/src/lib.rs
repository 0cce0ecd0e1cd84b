//! The seed documents' measurements reproduced in the simulator, the
//! paper's numbers beside ours, written to one Markdown file with figures
//! (`docs/reproduction.md`). The `netblt report` command calls [`run`].
//!
//! This crate sits beside the command-line tool, not under it: it uses the
//! simulator (`netblt-sim`), the link profiles (`netblt-link`) and the
//! measurement crate (`netblt-measure`), and nothing of the UDP driver.
//!
//! Everything is deterministic (fixed seeds). RFC 415's table is a
//! measurement of this machine's kernel TCP over loopback, which differs run
//! to run: it is made only when asked (`Options::measure_host`) and kept in a
//! file that later reports read.

#![deny(missing_docs)]

pub mod fmt;
pub mod rfc1030;
pub mod rfc1030_s8;
pub mod rfc1030_sensitivity;
pub mod rfc1030_timers;
pub mod rfc1106;
pub mod rfc1106_sensitivity;
pub mod rfc415;
pub mod summary;
pub mod unmodellable;
pub mod xunet;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use netblt_measure::plot::{self, Series};
use serde::Serialize;

/// What to run and where to write.
#[derive(Clone, Debug)]
pub struct Options {
    /// The Markdown file to write.
    pub out: PathBuf,
    /// Directory for the figures (PNG and SVG).
    pub figures: PathBuf,
    /// Fewer seeds, repetitions and bytes: minutes become seconds.
    pub quick: bool,
    /// Where RFC 415's host measurement is kept (`docs/rfc415-host.json`).
    pub host_file: PathBuf,
    /// Measure this host for RFC 415's table and keep it in `host_file`;
    /// otherwise the kept measurement is used and the report is the same
    /// every time.
    pub measure_host: bool,
}

/// Seeds averaged on random profiles.
pub fn seeds(quick: bool) -> Vec<u64> {
    if quick {
        vec![1]
    } else {
        vec![1, 2, 3, 4, 5]
    }
}

/// Everything measured, for `--json`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Per table: rows, median and worst |error|, trends reproduced.
    pub summary: Vec<summary::TableSummary>,
    /// Whether this was a `--quick` run.
    pub quick: bool,
    /// Seeds averaged on random profiles.
    pub seeds: Vec<u64>,
    /// RFC 1030 appendices II-IV: appendix id and its rows beside ours.
    pub rfc1030: Vec<(String, Vec<rfc1030::RowResult>)>,
    /// Appendix III rerun with the other Subnet 26 hosts' load from 0 to 30 %.
    pub rfc1030_segment_sweep: Vec<rfc1030_sensitivity::LoadRow>,
    /// Appendix III with the 3C500s' re-enable time swept (not in the tables).
    pub rfc1030_reenable_sweep: Vec<rfc1030_sensitivity::LoadRow>,
    /// Appendix III with Subnet 26's broadcasts swept (not in the tables).
    pub rfc1030_broadcast_sweep: Vec<rfc1030_sensitivity::LoadRow>,
    /// Appendices II-III with one control message per packet (not in the tables).
    pub rfc1030_control_packing: Vec<rfc1030_sensitivity::PackingRow>,
    /// Appendix IV with extra random channel loss (not in the tables).
    pub rfc1030_wideband_loss: Vec<rfc1030_sensitivity::WidebandLossRow>,
    /// Appendix IV's BI-90 rows with ten times the transfer size.
    pub rfc1030_wideband_long: Vec<rfc1030_sensitivity::LongRow>,
    /// Appendices II-IV under each receiver data-timer policy.
    pub rfc1030_data_timers: Vec<rfc1030_timers::PolicyRow>,
    /// RFC 1030 §8's proposed experiment: parallel NETBLT processes.
    pub rfc1030_s8: Vec<rfc1030_s8::ParallelRow>,
    /// XUNET Table I: the RTT test, paper and ours.
    pub xunet_table_i: Vec<xunet::EchoRow>,
    /// XUNET §2.5.2 (84-byte windows): size, paper's min RTT (ms), ours (ms).
    pub xunet_figure_3: Vec<(usize, f64, f64)>,
    /// XUNET Table II: ZERO/LARGE throughput analysis, paper and ours.
    pub xunet_table_ii: Vec<xunet::ZeroLargeResult>,
    /// XUNET Table III: throughput against the number of processes.
    pub xunet_table_iii: Vec<xunet::ProcessRow>,
    /// XUNET Table IV: the transfer test, paper and ours.
    pub xunet_table_iv: Vec<xunet::TransferRow>,
    /// RFC 1106's Figures 1 and 2, cell by cell.
    pub rfc1106: Vec<rfc1106::Cell>,
    /// RFC 1106's window-limited no-error rows with longer round trips.
    pub rfc1106_host_time: Vec<rfc1106_sensitivity::HostTimeRow>,
    /// RFC 1106's NAK column at 1e-6 with ACKs (and NAKs) lost besides.
    pub rfc1106_nak_loss: Vec<rfc1106_sensitivity::NakLossRow>,
    /// RFC 1106's 1e-7 columns and no-error rows from 100K with 1, 2, 4
    /// times the profile's queue and none.
    pub rfc1106_queue: Vec<rfc1106_sensitivity::QueueRow>,
    /// RFC 415's table measured on this machine: the kept measurement
    /// (`Options::host_file`) or a new one, with when it was made.
    pub rfc415: Option<rfc415::HostRecord>,
    /// Why there are no RFC 415 figures, if there are none.
    pub rfc415_error: Option<String>,
    /// Stems of the figures written (PNG and SVG each).
    pub figures: Vec<String>,
}

/// Progress callback: (message, steps done, steps total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// Runs every reproduction.
pub fn run(opts: &Options, progress: Progress<'_>) -> anyhow::Result<Report> {
    let seeds = seeds(opts.quick);
    let total: u64 = rfc1030::APPENDICES
        .iter()
        .map(|a| rfc1030::distinct_inputs(a) as u64)
        .sum::<u64>()
        + rfc1030_sensitivity::LOADS.len() as u64
        + rfc1030_sensitivity::REENABLE_US.len() as u64
        + rfc1030_sensitivity::BROADCASTS.len() as u64
        + 4
        + rfc1030_sensitivity::WIDEBAND_LOSS.len() as u64
        + rfc1030_timers::steps() as u64
        + 7
        + 14
        + 7;
    let mut done = 0u64;
    let mut rfc1030_out = Vec::new();
    for a in &rfc1030::APPENDICES {
        let label = format!("RFC 1030 appendix {}", a.id);
        progress(&label, done, total);
        let rows = rfc1030::run_appendix(a, &seeds, &mut || {
            done += 1;
            progress(&label, done, total);
        })?;
        rfc1030_out.push((a.id.to_string(), rows));
    }
    progress(
        "RFC 1030 appendix III against Subnet 26's load",
        done,
        total,
    );
    let sweep = rfc1030_sensitivity::segment_sweep(&seeds, &mut || {
        done += 1;
        progress(
            "RFC 1030 appendix III against Subnet 26's load",
            done,
            total,
        );
    })?;
    let reenable = rfc1030_sensitivity::reenable_sweep(&seeds, opts.quick, &mut || {
        done += 1;
        progress(
            "RFC 1030 appendix III against the 3C500's re-enable time",
            done,
            total,
        );
    })?;
    let bcast = rfc1030_sensitivity::broadcast_sweep(&seeds, opts.quick, &mut || {
        done += 1;
        progress(
            "RFC 1030 appendix III against Subnet 26's broadcasts",
            done,
            total,
        );
    })?;
    let packing = rfc1030_sensitivity::control_packing(&seeds, &mut || {
        done += 1;
        progress(
            "RFC 1030 appendices II-III, one control message per packet",
            done,
            total,
        );
    })?;
    let wloss = rfc1030_sensitivity::wideband_loss_sweep(&seeds, opts.quick, &mut || {
        done += 1;
        progress("RFC 1030 appendix IV with extra channel loss", done, total);
    })?;
    let short = rfc1030_out
        .iter()
        .find(|(id, _)| id == "IV")
        .map(|(_, rows)| rows.as_slice())
        .unwrap_or_default();
    let long = rfc1030_sensitivity::wideband_long(short, &seeds, &mut || {
        done += 1;
        progress("RFC 1030 appendix IV, longer transfers", done, total);
    })?;
    let timers = rfc1030_timers::run(&seeds, opts.quick, &mut || {
        done += 1;
        progress(
            "RFC 1030 appendices II-IV, data timer policies",
            done,
            total,
        );
    })?;
    progress("RFC 1030 §8 (parallel NETBLT processes)", done, total);
    let s8 = rfc1030_s8::run(if opts.quick { 60.0 } else { 180.0 }, 1)?;
    done += 1;
    let reps = if opts.quick { 3 } else { 20 };
    progress("XUNET Table I", done, total);
    let t1 = xunet::table_i(reps)?;
    let f3 = xunet::figure_3(reps)?;
    done += 1;
    progress("XUNET Table IV", done, total);
    let t4 = xunet::table_iv(if opts.quick { 10 } else { 50 })?;
    done += 1;
    progress("XUNET Table II", done, total);
    let t2 = xunet::table_ii(if opts.quick { 30_000 } else { 300_000 })?;
    done += 1;
    let per_process = if opts.quick { 50_000 } else { 1_000_000 };
    let t3 = xunet::table_iii(per_process, &mut || {
        done += 1;
        progress("XUNET Table III", done, total);
    })?;
    progress("RFC 1106 (4.3BSD TCP, Big Windows, NAKs)", done, total);
    let r1106 = rfc1106::run(&seeds, opts.quick)?;
    let host_time =
        rfc1106_sensitivity::host_time(seeds.first().copied().unwrap_or(1), opts.quick)?;
    let nak_loss = rfc1106_sensitivity::nak_loss(&seeds, opts.quick)?;
    let queue = rfc1106_sensitivity::queue(&r1106, &seeds, opts.quick)?;
    done += 1;
    progress("RFC 415 (TCP over loopback)", done, total);
    let host = if opts.measure_host {
        rfc415::measure_and_keep(&opts.host_file, if opts.quick { 1 << 20 } else { 64 << 20 })
    } else {
        rfc415::load(&opts.host_file)
            .context("no kept host measurement (`netblt report --measure-host` makes one)")
    };
    let (cpu, cpu_err) = match host {
        Ok(rec) => (Some(rec), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    done = total;
    progress("figures", done, total);
    let mut report = Report {
        summary: Vec::new(),
        quick: opts.quick,
        seeds,
        rfc1030: rfc1030_out,
        rfc1030_segment_sweep: sweep,
        rfc1030_reenable_sweep: reenable,
        rfc1030_broadcast_sweep: bcast,
        rfc1030_control_packing: packing,
        rfc1030_wideband_loss: wloss,
        rfc1030_wideband_long: long,
        rfc1030_data_timers: timers,
        rfc1030_s8: s8,
        xunet_table_i: t1,
        xunet_figure_3: f3,
        xunet_table_ii: t2,
        xunet_table_iii: t3,
        xunet_table_iv: t4,
        rfc1106: r1106,
        rfc1106_host_time: host_time,
        rfc1106_nak_loss: nak_loss,
        rfc1106_queue: queue,
        rfc415: cpu,
        rfc415_error: cpu_err,
        figures: Vec::new(),
    };
    report.summary = summary::summarise(&report);
    report.figures = figures(&report, &opts.figures, opts.quick)?;
    let md = markdown(&report, &opts.out, &opts.figures);
    if let Some(dir) = opts.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&opts.out, md)?;
    Ok(report)
}

fn figures(r: &Report, dir: &Path, quick: bool) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for (id, rows) in &r.rfc1030 {
        let mut combos: Vec<(u16, u16)> = rows.iter().map(|x| (x.psz, x.nbufs)).collect();
        combos.sort_unstable();
        combos.dedup();
        let mut series = Vec::new();
        for (psz, nb) in combos {
            let sel: Vec<_> = rows
                .iter()
                .filter(|x| x.psz == psz && x.nbufs == nb)
                .collect();
            let paper: Vec<(f64, f64)> = sel
                .iter()
                .map(|x| (f64::from(x.bi), x.paper_speed))
                .collect();
            let mut ours: Vec<(f64, f64)> = sel
                .iter()
                .map(|x| (f64::from(x.bi), x.ours.speed))
                .collect();
            ours.dedup_by(|a, b| a.0 == b.0);
            series.push(
                Series::new(format!("paper PSZ {psz} NBUFS {nb}"), paper)
                    .with_style(plot::SeriesStyle::Points),
            );
            series.push(Series::new(format!("ours PSZ {psz} NBUFS {nb}"), ours));
        }
        let stem = format!("rfc1030-appendix-{}", id.to_lowercase());
        plot::lines(
            dir.join(&stem),
            &format!("RFC 1030 appendix {id}: steady-state throughput against burst interval"),
            "burst interval (ms, 5 packets per burst)",
            "throughput (Mb/s)",
            &series,
            false,
            false,
        )?;
        out.push(stem);
    }
    let reps = if quick { 2 } else { 5 };
    let (small, large) = xunet::rtt_curve(reps)?;
    let paper: Vec<(f64, f64)> = xunet::TABLE_I.iter().map(|x| (x.0 as f64, x.4)).collect();
    let fig3: Vec<(f64, f64)> = xunet::FIGURE_3_TEXT
        .iter()
        .map(|x| (x.0 as f64, x.1))
        .collect();
    plot::lines(
        dir.join("xunet-rtt"),
        "XUNET: minimum RTT against message size (Vangogh to Fishonaplatter)",
        "message size (bytes)",
        "minimum RTT (ms)",
        &[
            Series::new("paper, 756-byte windows (Table I)", paper)
                .with_style(plot::SeriesStyle::Points),
            Series::new("paper, 84-byte windows (§2.5.2 text)", fig3)
                .with_style(plot::SeriesStyle::Points),
            Series::new("ours, 756-byte windows", large),
            Series::new("ours, 84-byte windows", small),
        ],
        true,
        true,
    )?;
    out.push("xunet-rtt".into());
    let t3 = &r.xunet_table_iii;
    let pts = |f: fn(&xunet::ProcessRow) -> f64| {
        t3.iter()
            .map(|x| (x.processes as f64, f(x)))
            .collect::<Vec<_>>()
    };
    plot::lines(
        dir.join("xunet-processes"),
        "XUNET Table III: throughput against number of processes",
        "processes",
        "throughput (bytes/s)",
        &[
            Series::new("paper total", pts(|x| x.paper_total))
                .with_style(plot::SeriesStyle::Points),
            Series::new("ours total", pts(|x| x.ours_total)),
            Series::new("paper per process", pts(|x| x.paper_per_process))
                .with_style(plot::SeriesStyle::Points),
            Series::new("ours per process", pts(|x| x.ours_per_process)),
        ],
        false,
        false,
    )?;
    out.push("xunet-processes".into());
    Ok(out)
}

fn rel(from: &Path, to: &Path) -> String {
    // Figures are linked relative to the report when they sit below its directory.
    let base = from.parent().unwrap_or(Path::new(""));
    to.strip_prefix(base).unwrap_or(to).display().to_string()
}

fn markdown(r: &Report, out: &Path, figs: &Path) -> String {
    let mut s = String::new();
    let fig = |s: &mut String, stem: &str, alt: &str| {
        let p = rel(out, &figs.join(format!("{stem}.png")));
        let _ = writeln!(
            s,
            "![{alt}]({p}) ([SVG]({}))\n",
            p.trim_end_matches(".png").to_string() + ".svg"
        );
    };
    let _ = writeln!(s, "# Reproductions of the seed documents' measurements\n");
    let _ = writeln!(
        s,
        "Generated by `netblt report{}` (deterministic seeds; only RFC 415's table measures this machine). \
         Errors are (ours - paper) / paper. Random profiles (ethernet-3c500, wideband) are averaged over {} seed(s): {:?}; \
         the Proteon ring is deterministic and run once.\n",
        if r.quick { " --quick" } else { "" },
        r.seeds.len(),
        r.seeds
    );
    s.push_str(include_str!("notes_rfc1030.md"));
    for (id, rows) in &r.rfc1030 {
        let a = rfc1030::APPENDICES.iter().find(|a| a.id == id);
        let title = a.map_or("", |a| a.title);
        let profile = a.map_or("", |a| a.profile);
        let _ = writeln!(s, "\n### Appendix {id}: {title} (profile `{profile}`)\n");
        let errs: Vec<f64> = rows
            .iter()
            .filter_map(|x| x.speed_error_pct)
            .map(f64::abs)
            .collect();
        let _ = writeln!(
            s,
            "{} rows; mean |SPEED error| {}, worst {}.\n",
            rows.len(),
            fmt::num(fmt::mean(&errs), 1) + " %",
            fmt::num(errs.iter().copied().fold(0.0, f64::max), 1) + " %"
        );
        s.push_str(&rfc1030::markdown(rows, id != "IV"));
        s.push('\n');
        fig(
            &mut s,
            &format!("rfc1030-appendix-{}", id.to_lowercase()),
            &format!("appendix {id}"),
        );
        if id == "III" {
            s.push_str(include_str!("notes_rfc1030_sweep.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_sweep(&r.rfc1030_segment_sweep));
            s.push_str(include_str!("notes_rfc1030_reenable.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_reenable(&r.rfc1030_reenable_sweep));
            s.push_str(include_str!("notes_rfc1030_broadcasts.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_broadcasts(
                &r.rfc1030_broadcast_sweep,
            ));
            s.push_str(include_str!("notes_rfc1030_packing.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_packing(&r.rfc1030_control_packing));
        }
        if id == "IV" {
            s.push_str(include_str!("notes_rfc1030_long.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_long(&r.rfc1030_wideband_long));
            s.push_str(include_str!("notes_rfc1030_wideband_rate.md"));
            s.push('\n');
            s.push_str(&rfc1030_sensitivity::md_wideband_loss(
                &r.rfc1030_wideband_loss,
            ));
        }
    }
    s.push_str(include_str!("notes_rfc1030_timers.md"));
    s.push('\n');
    s.push_str(&rfc1030_timers::markdown(&r.rfc1030_data_timers));
    s.push_str(include_str!("notes_rfc1030_s8.md"));
    s.push('\n');
    s.push_str(&rfc1030_s8::markdown(&r.rfc1030_s8));
    s.push_str(&rfc1030_s8::verdict(&r.rfc1030_s8));
    s.push_str(include_str!("notes_xunet.md"));
    let _ = writeln!(
        s,
        "\n### Table I: RTT test to Fishonaplatter (756-byte windows both ways)\n"
    );
    s.push_str(&xunet::md_table_i(&r.xunet_table_i));
    s.push('\n');
    s.push_str(&unmodellable::xunet_fixed_cost(&r.xunet_table_i));
    let _ = writeln!(
        s,
        "\n### Before the change: 84-byte windows both ways (§2.5.2)\n"
    );
    s.push_str(&xunet::md_figure_3(&r.xunet_figure_3));
    s.push('\n');
    fig(&mut s, "xunet-rtt", "RTT against size");
    let _ = writeln!(
        s,
        "\n### Table II: maximum against measured throughput, one process (eqs. 7-9)\n"
    );
    s.push_str(&xunet::md_table_ii(&r.xunet_table_ii));
    let _ = writeln!(
        s,
        "\n### Table III: multiple processes (1024-byte writes, one T1 trunk)\n"
    );
    s.push_str(&xunet::md_table_iii(&r.xunet_table_iii));
    s.push('\n');
    fig(&mut s, "xunet-processes", "throughput against processes");
    let _ = writeln!(s, "\n### Table IV: transfer test to Fishonaplatter\n");
    s.push_str(&xunet::md_table_iv(&r.xunet_table_iv));
    s.push_str(include_str!("notes_rfc1106.md"));
    s.push('\n');
    s.push_str(&rfc1106::md_scatter(&r.rfc1106));
    let _ = writeln!(
        s,
        "\n### Figure 1: TCP with Big Windows, no NAKs (K/s; ours: mean of {} seed(s), {} s runs)\n",
        r.seeds.len(),
        rfc1106::duration(r.quick).as_secs()
    );
    s.push_str(&rfc1106::markdown(&r.rfc1106, false));
    let _ = writeln!(s, "\n### Figure 2: TCP with Big Windows and NAKs (K/s)\n");
    s.push_str(&rfc1106::markdown(&r.rfc1106, true));
    let _ = writeln!(s, "\n### Column means\n");
    s.push_str(&rfc1106::md_means(&r.rfc1106));
    let _ = writeln!(
        s,
        "\n### What happened in our runs (per run, mean over seeds)\n"
    );
    s.push_str(&rfc1106::md_counts(&r.rfc1106));
    s.push_str(include_str!("notes_rfc1106_sensitivity.md"));
    let _ = writeln!(
        s,
        "\n#### Figure 1's window-limited rows with a longer round trip (no errors; seed {})\n",
        r.seeds.first().copied().unwrap_or(1)
    );
    s.push_str(&rfc1106_sensitivity::md_host_time(&r.rfc1106_host_time));
    let _ = writeln!(
        s,
        "\n#### Figure 2's 1e-6 column with ACKs (and their NAKs) lost besides bit errors\n"
    );
    s.push_str(&rfc1106_sensitivity::md_nak_loss(&r.rfc1106_nak_loss));
    s.push_str(include_str!("notes_rfc1106_queue.md"));
    let _ = writeln!(
        s,
        "\n#### The 1e-7 columns, and the no-error rows from {}K, against the bottleneck's queue (mean of {} seed(s), {} s runs)\n",
        rfc1106_sensitivity::QUEUE_NO_ERROR_FROM_K,
        r.seeds.len(),
        rfc1106::duration(r.quick).as_secs()
    );
    s.push_str(&rfc1106_sensitivity::md_queue(&r.rfc1106_queue));
    let _ = writeln!(
        s,
        "\n#### Figure 2's 1e-7 column window by window (K/s; error against the paper; queue drops per run)\n"
    );
    s.push_str(&rfc1106_sensitivity::md_queue_nak_column(&r.rfc1106_queue));
    s.push_str(include_str!("notes_rfc415.md"));
    match (&r.rfc415, &r.rfc415_error) {
        (Some(rec), _) => {
            s.push('\n');
            s.push_str(&rfc415::provenance(rec));
            s.push('\n');
            s.push_str(&rfc415::markdown(&rec.rows));
        }
        (None, e) => {
            let e = e.as_deref().unwrap_or("not measured");
            let _ = writeln!(s, "\nNo figures for this machine: {e}\n");
        }
    }
    s.push_str(include_str!("notes_summary.md"));
    s.push('\n');
    s.push_str(&summary::markdown(&r.summary));
    s
}
