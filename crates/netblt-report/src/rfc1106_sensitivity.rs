//! Two numbers RFC 1106's appendix needs and does not give, each swept so
//! the report can say how far the rows they decide would move (issue 13):
//!
//! * **Host time per round trip.** §4.1's arithmetic "assume\[s\] that
//!   processing time of the hosts is negligible", but §7 says "the machines
//!   used are SGI Iris 2500 Turbos ... slower than a Sun 3/260", with no
//!   figure. Without errors a window below the path's bandwidth-delay
//!   product runs at W / round trip, so the window-limited rows (64-92K)
//!   are rerun with the round trip lengthened by `d`.
//! * **How many NAKs were lost.** §7: "With a 10e-6 error rate, many naks
//!   as well as data packets were dropped, causing the wild swing in
//!   transfer times." Our NAKs ride on 56-byte ACKs, which bit errors at
//!   1e-6 hit 0.045 % of the time. The NAK column at 1e-6 is rerun with a
//!   fraction `q` of the ACKs (and the NAKs they carry) lost besides.
//!
//! * **The bottleneck's queue.** §7 names only "the satellite simulator"
//!   (§4.2: "when the satellite simulator was not used"), never its
//!   buffering; the `t1-satellite` profile ASSUMES one bandwidth-delay
//!   product (111,940 bytes). With NAKs the window never shrinks, so when a
//!   NAKed retransmission fills a hole at the left edge the cumulative ACK
//!   jumps by up to a window and 4.3BSD's `tcp_output` sends all of it at
//!   once; a window larger on the wire than the queue overflows it, and each
//!   drop is a new hole. Figure 2's and Figure 1's 1e-7 columns, and both
//!   no-error columns from 100K, are rerun with 1, 2 and 4 times the
//!   profile's queue and with none.
//!
//! None of these values is used by the figures' tables: the sweeps only
//! bound what the seeds leave open.

use std::time::Duration;

use netblt_link::profiles;
use netblt_link::LossModel;
use serde::Serialize;

use crate::fmt::{error_pct, fmt_error, mean, num, table};
use crate::rfc1106::{
    run_cell, run_window, t1_path, Cell, BERS, PAPER_NAK, PAPER_NO_NAK, WINDOWS_K,
};

/// Extra round-trip time (ms) of the host-time sweep.
pub const EXTRA_RTT_MS: [u64; 4] = [0, 50, 100, 150];
/// Windows (K) the host-time sweep reruns: those below the path's
/// bandwidth-delay product (580 ms x 168 K/s = 97K), where the window, not
/// the T1, sets the rate.
pub const WINDOW_LIMITED_K: [u64; 4] = [64, 72, 80, 92];
/// Fractions of ACKs lost besides bit errors in the NAK sweep.
pub const ACK_LOSS: [f64; 4] = [0.0, 0.05, 0.1, 0.2];
/// Queues of the queue sweep, in multiples of the profile's one
/// bandwidth-delay product (111,940 bytes each way); `None`: no limit.
pub const QUEUE_BDP: [Option<usize>; 4] = [Some(1), Some(2), Some(4), None];
/// The no-error rows the queue sweep reruns: windows from here up, larger
/// than the profile's queue on the wire (100K of 512-byte segments is
/// 112,800 bytes with headers and framing), where a larger queue could
/// matter if anything were lost.
pub const QUEUE_NO_ERROR_FROM_K: u64 = 100;

/// One run of the host-time sweep (no errors, no NAKs).
#[derive(Clone, Debug, Serialize)]
pub struct HostTimeRow {
    /// Round trip added to the path's 580 ms, ms.
    pub extra_rtt_ms: u64,
    /// Window, K.
    pub window_k: u64,
    /// Figure 1's no-error rate, K/s.
    pub paper: f64,
    /// Ours, K/s.
    pub ours: f64,
}

/// One point of the NAK-loss sweep: Figure 2's 1e-6 column.
#[derive(Clone, Debug, Serialize)]
pub struct NakLossRow {
    /// Fraction of ACKs lost besides bit errors.
    pub ack_loss: f64,
    /// The column's mean, paper, K/s.
    pub paper_mean: f64,
    /// Ours, K/s.
    pub ours_mean: f64,
    /// Median |error| over the column's nine rows, %.
    pub median_abs_error_pct: f64,
}

/// One column of the queue sweep at one queue.
#[derive(Clone, Debug, Serialize)]
pub struct QueueRow {
    /// Both directions' queue in bandwidth-delay products (the profile's is
    /// 1); `None`: no limit.
    pub queue_bdp: Option<usize>,
    /// The same in bytes.
    pub queue_bytes: Option<usize>,
    /// Figure 2 (NAKs) or Figure 1 (no NAKs).
    pub nak: bool,
    /// The column's bit-error rate.
    pub ber: f64,
    /// The paper's mean over the column's rows here, K/s.
    pub paper_mean: f64,
    /// Ours, K/s.
    pub ours_mean: f64,
    /// Median |error| over these rows, %.
    pub median_abs_error_pct: f64,
    /// Worst |error| over these rows, %.
    pub worst_abs_error_pct: f64,
    /// Data segments the full queue dropped, per run (mean over the rows).
    pub queue_drops: f64,
    /// Retransmission timeouts per run (mean over the rows).
    pub timeouts: f64,
    /// The rows: window, paper, ours and the per-run counts.
    pub cells: Vec<Cell>,
}

/// The columns the queue sweep reruns: (NAK, index into [`BERS`], first
/// window).
const QUEUE_COLUMNS: [(bool, usize, u64); 4] = [
    (true, 1, 0),
    (false, 1, 0),
    (true, 0, QUEUE_NO_ERROR_FROM_K),
    (false, 0, QUEUE_NO_ERROR_FROM_K),
];

/// The queue sweep. `figures`: the figures' own cells, which are the
/// profile's queue (1 BDP) and are taken as they are, not rerun; the larger
/// queues are run with the same seeds. A cell none of whose runs filled
/// the next smaller queue (no drop either way) is that queue's cell again,
/// not rerun: a drop-tail queue's size changes nothing until it is full,
/// so the runs would be the same event for event.
pub fn queue(figures: &[Cell], seeds: &[u64], quick: bool) -> anyhow::Result<Vec<QueueRow>> {
    let p = profiles::profile("t1-satellite")
        .ok_or_else(|| anyhow::anyhow!("no t1-satellite profile"))?;
    let mut out = Vec::new();
    for &(nak, bi, from) in &QUEUE_COLUMNS {
        let mut smaller: Vec<Cell> = Vec::new();
        for q in crate::rfc1030_sensitivity::sweep_values(&QUEUE_BDP, quick) {
            let mut cells = Vec::new();
            for (i, &w) in WINDOWS_K.iter().filter(|&&w| w >= from).enumerate() {
                let figure = figures
                    .iter()
                    .find(|c| c.nak == nak && c.window_k == w && c.ber == BERS[bi]);
                let unfilled = smaller
                    .get(i)
                    .filter(|c| c.queue_drops == 0.0 && c.ack_queue_drops == 0.0);
                cells.push(match (q, figure, unfilled) {
                    (Some(1), Some(c), _) => c.clone(),
                    (_, _, Some(c)) => c.clone(),
                    _ => run_cell(w, nak, bi, seeds, quick, q)?,
                });
            }
            smaller.clone_from(&cells);
            out.push(queue_row(
                q,
                q.and_then(|k| p.forward.queue_limit_bytes.map(|b| b * k)),
                nak,
                BERS[bi],
                cells,
            ));
        }
    }
    Ok(out)
}

fn queue_row(
    queue_bdp: Option<usize>,
    queue_bytes: Option<usize>,
    nak: bool,
    ber: f64,
    cells: Vec<Cell>,
) -> QueueRow {
    let errs: Vec<f64> = cells
        .iter()
        .map(|c| c.error_pct.map_or(f64::NAN, f64::abs))
        .collect();
    let of = |f: fn(&Cell) -> f64| mean(&cells.iter().map(f).collect::<Vec<_>>());
    QueueRow {
        queue_bdp,
        queue_bytes,
        nak,
        ber,
        paper_mean: of(|c| c.paper),
        ours_mean: of(|c| c.ours),
        median_abs_error_pct: crate::fmt::median(errs.clone()),
        worst_abs_error_pct: errs
            .iter()
            .copied()
            .filter(|e| e.is_finite())
            .fold(f64::NAN, f64::max),
        queue_drops: of(|c| c.queue_drops),
        timeouts: of(|c| c.timeouts),
        cells,
    }
}

/// "1 BDP (111,940 bytes)" or "no limit".
pub fn queue_label(queue_bdp: Option<usize>, queue_bytes: Option<usize>) -> String {
    match (queue_bdp, queue_bytes) {
        (Some(k), Some(b)) => format!("{k} BDP ({} bytes)", thousands(b)),
        (Some(k), None) => format!("{k} BDP"),
        (None, _) => "no limit".into(),
    }
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn run_one(
    w: u64,
    nak: bool,
    ber: f64,
    extra_rtt: Duration,
    ack_loss: f64,
    seed: u64,
    quick: bool,
) -> anyhow::Result<f64> {
    let mut path = t1_path(ber)?;
    path.forward.delay += extra_rtt / 2;
    path.reverse.delay += extra_rtt / 2;
    if ack_loss > 0.0 {
        path.reverse.loss = LossModel::Bernoulli { p: ack_loss };
    }
    Ok(run_window(path, w, nak, quick, seed)?.rate / 1024.0)
}

/// The host-time sweep: window-limited rows of Figure 1's no-error column.
pub fn host_time(seed: u64, quick: bool) -> anyhow::Result<Vec<HostTimeRow>> {
    let mut out = Vec::new();
    for d in crate::rfc1030_sensitivity::sweep_values(&EXTRA_RTT_MS, quick) {
        for &w in &WINDOW_LIMITED_K {
            let wi = WINDOWS_K.iter().position(|&x| x == w).unwrap_or(0);
            let ours = run_one(w, false, 0.0, Duration::from_millis(d), 0.0, seed, quick)?;
            out.push(HostTimeRow {
                extra_rtt_ms: d,
                window_k: w,
                paper: PAPER_NO_NAK[wi][0],
                ours,
            });
        }
    }
    Ok(out)
}

/// The NAK-loss sweep: Figure 2's 1e-6 column with ACKs lost besides.
pub fn nak_loss(seeds: &[u64], quick: bool) -> anyhow::Result<Vec<NakLossRow>> {
    let mut out = Vec::new();
    for q in crate::rfc1030_sensitivity::sweep_values(&ACK_LOSS, quick) {
        let (mut papers, mut ours, mut errs) = (vec![], vec![], vec![]);
        for (wi, &w) in WINDOWS_K.iter().enumerate() {
            let mut v = Vec::new();
            for &s in seeds {
                v.push(run_one(
                    w,
                    true,
                    1e-6,
                    Duration::ZERO,
                    q,
                    s.wrapping_mul(7919).wrapping_add(w),
                    quick,
                )?);
            }
            let o = mean(&v);
            let p = PAPER_NAK[wi][2];
            papers.push(p);
            ours.push(o);
            errs.push(error_pct(p, o).map_or(f64::NAN, f64::abs));
        }
        out.push(NakLossRow {
            ack_loss: q,
            paper_mean: mean(&papers),
            ours_mean: mean(&ours),
            median_abs_error_pct: crate::fmt::median(errs),
        });
    }
    Ok(out)
}

/// The host-time sweep as a Markdown table.
pub fn md_host_time(rows: &[HostTimeRow]) -> String {
    let mut header = vec!["window".to_string(), "paper (K/s)".to_string()];
    for d in EXTRA_RTT_MS {
        header.push(format!("ours, +{d} ms"));
    }
    let mut body = Vec::new();
    for &w in &WINDOW_LIMITED_K {
        let mut line = vec![format!("{w}K")];
        let cells: Vec<&HostTimeRow> = rows.iter().filter(|r| r.window_k == w).collect();
        line.push(cells.first().map_or("-".into(), |r| num(r.paper, 0) + "K"));
        for d in EXTRA_RTT_MS {
            line.push(
                cells
                    .iter()
                    .find(|r| r.extra_rtt_ms == d)
                    .map_or("-".into(), |r| {
                        format!(
                            "{}K ({})",
                            num(r.ours, 0),
                            fmt_error(error_pct(r.paper, r.ours))
                        )
                    }),
            );
        }
        body.push(line);
    }
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&h, &body)
}

/// The NAK-loss sweep as a Markdown table.
pub fn md_nak_loss(rows: &[NakLossRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                format!("{} %", num(r.ack_loss * 100.0, 0)),
                num(r.paper_mean, 0) + "K",
                num(r.ours_mean, 0) + "K",
                num(r.median_abs_error_pct, 1) + " %",
            ]
        })
        .collect();
    table(
        &[
            "ACKs (and NAKs) lost besides bit errors",
            "paper's column mean",
            "ours",
            "median abs error of the column",
        ],
        &body,
    )
}

/// The queue sweep, per column and queue, as a Markdown table.
pub fn md_queue(rows: &[QueueRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let first = r.cells.first().map_or(0, |c| c.window_k);
            let last = r.cells.last().map_or(0, |c| c.window_k);
            vec![
                format!(
                    "{}, {} ({first}-{last}K)",
                    if r.nak {
                        "Figure 2 (NAKs)"
                    } else {
                        "Figure 1 (no NAKs)"
                    },
                    if r.ber == 0.0 { "no error" } else { "1e-7" }
                ),
                queue_label(r.queue_bdp, r.queue_bytes),
                num(r.paper_mean, 0) + "K",
                num(r.ours_mean, 0) + "K",
                num(r.median_abs_error_pct, 1) + " %",
                num(r.worst_abs_error_pct, 1) + " %",
                num(r.queue_drops, 1),
                num(r.timeouts, 1),
            ]
        })
        .collect();
    table(
        &[
            "column (rows)",
            "queue, each way",
            "paper's mean",
            "ours",
            "median abs error",
            "worst abs error",
            "queue drops per run",
            "timeouts per run",
        ],
        &body,
    )
}

/// Figure 2's 1e-7 column window by window at every queue of the sweep.
pub fn md_queue_nak_column(rows: &[QueueRow]) -> String {
    let col: Vec<&QueueRow> = rows.iter().filter(|r| r.nak && r.ber > 0.0).collect();
    let mut header = vec!["window".to_string(), "paper".to_string()];
    for r in &col {
        header.push(format!("ours, {}", queue_label(r.queue_bdp, None)));
    }
    let mut body = Vec::new();
    for &w in &WINDOWS_K {
        let mut line = vec![format!("{w}K")];
        let paper = col
            .iter()
            .flat_map(|r| r.cells.iter())
            .find(|c| c.window_k == w)
            .map_or(f64::NAN, |c| c.paper);
        line.push(num(paper, 0) + "K");
        for r in &col {
            line.push(
                r.cells
                    .iter()
                    .find(|c| c.window_k == w)
                    .map_or("-".into(), |c| {
                        format!(
                            "{}K ({}; {} drops)",
                            num(c.ours, 0),
                            fmt_error(c.error_pct),
                            num(c.queue_drops, 0)
                        )
                    }),
            );
        }
        body.push(line);
    }
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&h, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twice_the_queue_removes_the_queue_drops_at_156k() {
        // The profile's queue (one bandwidth-delay product) overflows at
        // 156K with NAKs and 1e-7: each NAKed hole ends in a window-sized
        // burst. Twice the queue holds the burst. 60 s runs, one seed.
        let one = run_cell(156, true, 1, &[1], true, Some(1)).unwrap();
        let two = run_cell(156, true, 1, &[1], true, Some(2)).unwrap();
        assert!(one.queue_drops > 50.0, "1 BDP: {} drops", one.queue_drops);
        assert_eq!(two.queue_drops, 0.0, "2 BDP: {} drops", two.queue_drops);
        assert!(
            two.ours > one.ours * 1.05,
            "2 BDP {} K/s vs 1 BDP {} K/s",
            two.ours,
            one.ours
        );
        // No queue at all behaves as a queue that never fills.
        let none = run_cell(156, true, 1, &[1], true, None).unwrap();
        assert_eq!(none.queue_drops, 0.0);
    }

    #[test]
    fn a_queue_that_never_fills_could_be_any_larger() {
        // What `queue` relies on to copy a cell instead of rerunning it.
        for (nak, bi) in [(true, 0), (false, 1)] {
            let one = run_cell(156, nak, bi, &[1], true, Some(1)).unwrap();
            let none = run_cell(156, nak, bi, &[1], true, None).unwrap();
            assert_eq!((one.queue_drops, one.ack_queue_drops), (0.0, 0.0));
            assert_eq!(one.ours, none.ours);
            assert_eq!(one.timeouts, none.timeouts);
        }
    }

    #[test]
    fn labels() {
        assert_eq!(queue_label(Some(2), Some(223_880)), "2 BDP (223,880 bytes)");
        assert_eq!(queue_label(None, None), "no limit");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
    }
}
