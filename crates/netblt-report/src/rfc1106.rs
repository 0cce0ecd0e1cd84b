//! RFC 1106's appendix (Figures 1 and 2): TCP with Big Windows, without and
//! with NAKs, over "a 1.544 Mbit link with a 580ms round trip delay", at no
//! error, 10e-7 and 10e-6 bit-error rates, rerun with the simulator's
//! 4.3BSD-Tahoe TCP ([`TcpConfig::bsd43_rfc1106`]) over the `t1-satellite`
//! profile. Today's kernel TCP (CUBIC, SACK off / on, `bench/rfc1106.sh`,
//! docs/rfc1106.md) stays beside it as a modern column.

use std::time::Duration;

use netblt_link::profiles;
use netblt_sim::tcp::TcpConfig;
use netblt_sim::tcp_path::{run_tcp_path, TcpPathConfig, TcpPathResult};
use serde::Serialize;

use crate::fmt;

/// Windows of the appendix, in K (1024 bytes).
pub const WINDOWS_K: [u64; 9] = [64, 72, 80, 92, 100, 112, 124, 136, 156];
/// Bit-error rates of the appendix's three columns.
pub const BERS: [f64; 3] = [0.0, 1e-7, 1e-6];

/// Figure 1, "TCP with Big Windows, No Naks" (K/s), per window: no error,
/// 10e-7, 10e-6.
pub const PAPER_NO_NAK: [[f64; 3]; 9] = [
    [94.0, 53.0, 14.0],
    [106.0, 51.0, 15.0],
    [115.0, 42.0, 14.0],
    [115.0, 43.0, 14.0],
    [135.0, 66.0, 15.0],
    [126.0, 53.0, 17.0],
    [154.0, 45.0, 14.0],
    [160.0, 66.0, 15.0],
    [167.0, 45.0, 14.0],
];

/// Figure 2, "TCP with Big Windows, and Naks" (K/s).
pub const PAPER_NAK: [[f64; 3]; 9] = [
    [95.0, 83.0, 43.0],
    [104.0, 87.0, 49.0],
    [117.0, 96.0, 62.0],
    [124.0, 119.0, 39.0],
    [140.0, 124.0, 35.0],
    [151.0, 126.0, 53.0],
    [160.0, 140.0, 36.0],
    [167.0, 148.0, 38.0],
    [167.0, 160.0, 38.0],
];

/// Today's Linux TCP on the emulated path (CUBIC, MSS 1448; K/s after the
/// first 10 s of a 90 s run, one run per cell), from docs/rfc1106.md
/// (`bench/rfc1106.sh`, runs of 2026-11-22): SACK off (beside Figure 1).
pub const KERNEL_SACK_OFF: [[f64; 3]; 9] = [
    [107.0, 99.0, 50.0],
    [118.0, 110.0, 60.0],
    [133.0, 114.0, 45.0],
    [154.0, 140.0, 52.0],
    [166.0, 154.0, 66.0],
    [182.0, 148.0, 37.0],
    [182.0, 140.0, 46.0],
    [182.0, 120.0, 67.0],
    [182.0, 89.0, 53.0],
];

/// The same with SACK on (beside Figure 2).
pub const KERNEL_SACK_ON: [[f64; 3]; 9] = [
    [107.0, 99.0, 51.0],
    [119.0, 110.0, 62.0],
    [132.0, 115.0, 47.0],
    [154.0, 141.0, 52.0],
    [166.0, 154.0, 67.0],
    [181.0, 150.0, 38.0],
    [182.0, 160.0, 48.0],
    [182.0, 165.0, 65.0],
    [182.0, 162.0, 58.0],
];

/// One cell of a figure.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Receive window, K (1024 bytes).
    pub window_k: u64,
    /// Bit-error rate applied to both directions.
    pub ber: f64,
    /// Whether the NAK option is on (Figure 2) or off (Figure 1).
    pub nak: bool,
    /// K/s (1024 bytes per second), the paper's.
    pub paper: f64,
    /// K/s, ours: mean over the seeds of the whole run's rate (from the SYN).
    pub ours: f64,
    /// (ours - paper) / paper, %.
    pub error_pct: Option<f64>,
    /// K/s, today's kernel TCP (see [`KERNEL_SACK_OFF`]).
    pub kernel: f64,
    /// Per run, averaged: bit-error drops of data segments, fast
    /// retransmits, timeouts, NAKs received.
    pub drops: f64,
    /// Data segments the forward link's queue dropped (full), per run.
    pub queue_drops: f64,
    /// ACKs the reverse link's queue dropped (full), per run.
    pub ack_queue_drops: f64,
    /// Fast retransmits per run (three duplicate ACKs).
    pub fast_retransmits: f64,
    /// Retransmission timeouts per run.
    pub timeouts: f64,
    /// NAKs the sender acted on per run.
    pub naks: f64,
}

/// How long each run lasts.
pub fn duration(quick: bool) -> Duration {
    Duration::from_secs(if quick { 60 } else { 300 })
}

/// Runs both figures: 2 x 9 x 3 cells, each over `seeds`.
pub fn run(seeds: &[u64], quick: bool) -> anyhow::Result<Vec<Cell>> {
    let mut out = Vec::new();
    for nak in [false, true] {
        for &w in &WINDOWS_K {
            for bi in 0..BERS.len() {
                out.push(run_cell(w, nak, bi, seeds, quick, Some(1))?);
            }
        }
    }
    Ok(out)
}

/// The appendix's path: the `t1-satellite` profile's links with bit errors
/// at `ber` in both directions, on data and ACKs (and the NAKs they carry:
/// §7, "many naks as well as data packets were dropped"), and its framing.
/// The profile's overhead is IP + UDP + HDLC; a TCP segment's wire length
/// already counts IP and TCP, so only the link framing is added. The
/// sensitivity sweeps change the links further before [`run_window`].
pub(crate) struct T1Path {
    pub forward: netblt_link::LinkConfig,
    pub reverse: netblt_link::LinkConfig,
    framing: usize,
}

pub(crate) fn t1_path(ber: f64) -> anyhow::Result<T1Path> {
    let p = profiles::profile("t1-satellite")
        .ok_or_else(|| anyhow::anyhow!("no t1-satellite profile"))?;
    let (mut forward, mut reverse) = (p.forward.clone(), p.reverse.clone());
    forward.ber = ber;
    reverse.ber = ber;
    Ok(T1Path {
        forward,
        reverse,
        framing: p
            .wire_overhead
            .saturating_sub(profiles::IP_HEADER + profiles::UDP_HEADER),
    })
}

/// One run of the 4.3BSD-Tahoe TCP with RFC 1106's Big Window option
/// (window `w` K) and, with `nak`, its NAK option, over `path`.
pub(crate) fn run_window(
    path: T1Path,
    w: u64,
    nak: bool,
    quick: bool,
    seed: u64,
) -> anyhow::Result<TcpPathResult> {
    run_tcp_path(&TcpPathConfig {
        forward: path.forward,
        reverse: path.reverse,
        framing: path.framing,
        tcp: TcpConfig::bsd43_rfc1106(w * 1024, nak),
        duration: duration(quick),
        warmup: Duration::ZERO,
        seed,
    })
    .map_err(|e| anyhow::anyhow!(e))
}

/// One cell of a figure: window `w` (K), the NAK option on or off, the
/// appendix's `bi`-th bit-error rate, averaged over `seeds`. `queue`: both
/// directions' queue as a multiple of the profile's (`Some(1)`: the
/// profile's own, as in the figures), or `None` for no limit. The seeds are
/// the figures' own whatever the queue, so a run differs from the figures'
/// only by its queue.
pub fn run_cell(
    w: u64,
    nak: bool,
    bi: usize,
    seeds: &[u64],
    quick: bool,
    queue: Option<usize>,
) -> anyhow::Result<Cell> {
    let wi = WINDOWS_K
        .iter()
        .position(|&x| x == w)
        .ok_or_else(|| anyhow::anyhow!("{w}K is not one of the appendix's windows"))?;
    let ber = *BERS
        .get(bi)
        .ok_or_else(|| anyhow::anyhow!("no bit-error rate #{bi}"))?;
    let (mut rate, mut drops, mut qdrops, mut ack_qdrops) = (0.0, 0.0, 0.0, 0.0);
    let (mut fr, mut to, mut naks) = (0.0, 0.0, 0.0);
    for &seed in seeds {
        let mut path = t1_path(ber)?;
        for link in [&mut path.forward, &mut path.reverse] {
            link.queue_limit_bytes = match queue {
                Some(k) => link.queue_limit_bytes.map(|q| q.saturating_mul(k)),
                None => None,
            };
        }
        let seed = seed.wrapping_mul(1000).wrapping_add(w * 10 + bi as u64);
        let r = run_window(path, w, nak, quick, seed)?;
        rate += r.rate / 1024.0;
        drops += r.forward.drops.bit_error as f64;
        qdrops += r.forward.drops.queue as f64;
        ack_qdrops += r.reverse.drops.queue as f64;
        fr += r.sender.fast_recoveries as f64;
        to += r.sender.timeouts as f64;
        naks += r.sender.naks_received as f64;
    }
    let n = seeds.len().max(1) as f64;
    let (paper, kernel) = if nak {
        (PAPER_NAK[wi][bi], KERNEL_SACK_ON[wi][bi])
    } else {
        (PAPER_NO_NAK[wi][bi], KERNEL_SACK_OFF[wi][bi])
    };
    let ours = rate / n;
    Ok(Cell {
        window_k: w,
        ber,
        nak,
        paper,
        ours,
        error_pct: fmt::error_pct(paper, ours),
        kernel,
        drops: drops / n,
        queue_drops: qdrops / n,
        ack_queue_drops: ack_qdrops / n,
        fast_retransmits: fr / n,
        timeouts: to / n,
        naks: naks / n,
    })
}

/// Mean of `ours` (or the paper's) over one figure's column.
pub fn column_mean(cells: &[Cell], nak: bool, ber: f64, paper: bool) -> f64 {
    let v: Vec<f64> = cells
        .iter()
        .filter(|c| c.nak == nak && c.ber == ber)
        .map(|c| if paper { c.paper } else { c.ours })
        .collect();
    fmt::mean(&v)
}

fn ber_label(ber: f64) -> &'static str {
    if ber == 0.0 {
        "no error"
    } else if ber < 5e-7 {
        "1e-7"
    } else {
        "1e-6"
    }
}

/// One figure as a Markdown table: a row per window, per BER the paper,
/// ours, the error and today's kernel TCP.
pub fn markdown(cells: &[Cell], nak: bool) -> String {
    let mut header = vec!["Window".to_string()];
    for ber in BERS {
        let l = ber_label(ber);
        header.push(format!("{l}: paper"));
        header.push("ours".into());
        header.push("error".into());
        header.push(
            if nak {
                "kernel, SACK"
            } else {
                "kernel, no SACK"
            }
            .into(),
        );
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut rows = Vec::new();
    for w in WINDOWS_K {
        let mut r = vec![format!("{w}K")];
        for ber in BERS {
            if let Some(c) = cells
                .iter()
                .find(|c| c.nak == nak && c.window_k == w && c.ber == ber)
            {
                r.push(format!("{:.0}K", c.paper));
                r.push(format!("{:.0}K", c.ours));
                r.push(fmt::fmt_error(c.error_pct));
                r.push(format!("{:.0}K", c.kernel));
            }
        }
        rows.push(r);
    }
    fmt::table(&header, &rows)
}

/// Per-run counts behind the figures: drops (bit errors, full queue), fast
/// retransmits, timeouts, NAKs.
pub fn md_counts(cells: &[Cell]) -> String {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter(|c| c.ber > 0.0)
        .map(|c| {
            vec![
                if c.nak { "NAK" } else { "no NAK" }.to_string(),
                format!("{}K", c.window_k),
                ber_label(c.ber).to_string(),
                fmt::num(c.drops, 1),
                fmt::num(c.queue_drops, 1),
                fmt::num(c.fast_retransmits, 1),
                fmt::num(c.timeouts, 1),
                fmt::num(c.naks, 1),
            ]
        })
        .collect();
    fmt::table(
        &[
            "variant",
            "window",
            "BER",
            "data segments lost to bit errors",
            "to the full queue",
            "fast retransmits",
            "timeouts",
            "NAKs acted on",
        ],
        &rows,
    )
}

/// Column means (K/s), paper and ours, both figures.
pub fn md_means(cells: &[Cell]) -> String {
    let mut rows = Vec::new();
    for (nak, label) in [(false, "no NAKs"), (true, "NAKs")] {
        for paper in [true, false] {
            let mut r = vec![format!("{}, {label}", if paper { "paper" } else { "ours" })];
            for ber in BERS {
                r.push(format!("{:.0}K", column_mean(cells, nak, ber, paper)));
            }
            rows.push(r);
        }
    }
    fmt::table(&["", "no error", "1e-7", "1e-6"], &rows)
}

/// Per column with errors of both figures: the median and worst |error| a model would
/// have if it predicted the column's mean for every window (the paper's own
/// scatter), beside ours.
pub fn md_scatter(cells: &[Cell]) -> String {
    let mut rows = Vec::new();
    for (nak, label, paper) in [
        (false, "no NAKs", &PAPER_NO_NAK),
        (true, "NAKs", &PAPER_NAK),
    ] {
        // Only the columns with errors: without them the rate follows the
        // window, and a flat prediction would be no reference.
        for (i, ber) in BERS.iter().enumerate().filter(|(_, b)| **b > 0.0) {
            let col: Vec<f64> = paper.iter().map(|r| r[i]).collect();
            let m = fmt::mean(&col);
            let flat: Vec<f64> = col
                .iter()
                .filter_map(|&p| fmt::error_pct(p, m).map(f64::abs))
                .collect();
            let ours: Vec<f64> = cells
                .iter()
                .filter(|c| c.nak == nak && c.ber == *ber)
                .filter_map(|c| c.error_pct.map(f64::abs))
                .collect();
            let stat = |v: &[f64]| {
                let mut v = v.to_vec();
                v.sort_by(f64::total_cmp);
                let med = match v.len() {
                    0 => f64::NAN,
                    n if n % 2 == 1 => v[n / 2],
                    n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
                };
                (med, v.last().copied().unwrap_or(f64::NAN))
            };
            let (fm, fw) = stat(&flat);
            let (om, ow) = stat(&ours);
            rows.push(vec![
                label.to_string(),
                ber_label(*ber).to_string(),
                format!("{m:.0}K"),
                fmt::num(fm, 1) + " %",
                fmt::num(fw, 1) + " %",
                fmt::num(om, 1) + " %",
                fmt::num(ow, 1) + " %",
            ]);
        }
    }
    fmt::table(
        &[
            "figure",
            "BER",
            "paper's column mean",
            "median |error| of the mean",
            "worst |error| of the mean",
            "ours: median",
            "ours: worst",
        ],
        &rows,
    )
}
