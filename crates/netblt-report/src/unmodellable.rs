//! Rows the seeds give too little to model (issue 13): which rows, the
//! seed's own words, the number that is missing, and how far that number
//! moves the rows (from the report's sensitivity runs). `netblt report
//! --json` marks these rows and gives each table's statistics over all rows
//! and over the modelled ones.
//!
//! A row is put here by the mechanism the paper says sets it, never by its
//! error: every row of a group is marked, however close ours happens to be.

use crate::fmt::{mean, num};
use crate::rfc1030::RowResult;
use crate::rfc1030_sensitivity::LoadRow;
use crate::rfc1030_timers::{Choice, PolicyRow};
use crate::rfc1106_sensitivity::{queue_label, HostTimeRow, NakLossRow, QueueRow};
use crate::Report;

/// RFC 1030 appendix III, two outstanding buffers: the 3C500's deafness
/// (`sweep`: the other hosts' load; `reenable`: the board's re-enable time).
pub fn app_iii_two_buffers(
    sweep: &[LoadRow],
    reenable: &[LoadRow],
    broadcasts: &[LoadRow],
) -> String {
    let range = |f: fn(&LoadRow) -> f64, d: usize| {
        let v: Vec<f64> = sweep.iter().map(f).collect();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{}-{}", num(lo, d), num(hi, d))
    };
    let loads = match (sweep.first(), sweep.last()) {
        (Some(a), Some(b)) => format!("{:.0}-{:.0} %", a.load * 100.0, b.load * 100.0),
        _ => "-".into(),
    };
    format!(
        "RFC 1030 §6 explains the two-buffer rows by the 3C500: \"when the receiver of data \
         attempts to send a packet, its interface's receive hardware goes deaf to the network \
         and any packets being transmitted at the time by the sender of data are lost\", on \
         Subnet 26, \"known for being somewhat noisy\"; §7 adds the board's \"long interface \
         re-enable time\". Missing: how long the board stays deaf around each packet it sends \
         or takes in (the re-enable time), and what Subnet 26 carried (the other hosts' load \
         and the broadcasts the board must take into its one buffer). With the other hosts' \
         load anywhere in {loads} the 1438-byte two-buffer rows stay at {} Mb/s (paper 1.024) \
         with {} losses per run (paper 133): the load alone cannot make the collapse; a deaf \
         time of milliseconds per packet, which no seed gives, would be needed. {} {}",
        range(|r| r.speed_nbufs2, 3),
        range(|r| r.loss_nbufs2, 1),
        reenable_text(reenable),
        broadcast_text(broadcasts)
    )
}

/// What the broadcast sweep shows.
fn broadcast_text(rows: &[LoadRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let pts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}/s: NBUFS 1 / 2 {} / {} Mb/s, losses {} / {}",
                num(r.broadcasts_per_s, 0),
                num(r.speed_nbufs1, 3),
                num(r.speed_nbufs2, 3),
                num(r.loss_nbufs1, 0),
                num(r.loss_nbufs2, 0)
            )
        })
        .collect();
    format!(
        "With Subnet 26's other stations sending broadcasts that both boards must take in \
         (paper: losses 16 / 133): {}.",
        pts.join("; ")
    )
}

/// What the re-enable sweep shows, in one sentence per value.
fn reenable_text(rows: &[LoadRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let pts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} ms: NBUFS 1 / 2 {} / {} Mb/s, {} losses with NBUFS 2",
                num(r.reenable_us as f64 / 1000.0, 2),
                num(r.speed_nbufs1, 3),
                num(r.speed_nbufs2, 3),
                num(r.loss_nbufs2, 0)
            )
        })
        .collect();
    format!(
        "With the board deaf for a re-enable time after every transmission and copy-out \
         (paper: NBUFS 1 / 2 1.330 / 1.024 Mb/s, 133 losses): {}.",
        pts.join("; ")
    )
}

/// RFC 1030 appendix IV, fragmented packets: the adaptive data timer.
pub fn app_iv_fragmented(timers: &[PolicyRow]) -> String {
    let at = |c: Choice| {
        timers
            .iter()
            .find(|p| p.appendix == "IV" && p.choice.label() == c.label())
            .and_then(|p| p.bi90_fragmented_whole)
            .map_or("-".to_string(), |(f, w)| {
                format!("{} Mb/s ({:+.0} %)", num(f, 3), (f / w - 1.0) * 100.0)
            })
    };
    format!(
        "RFC 1030 §7: 1438-byte packets \"were fragmented before transmission over the \
         Wideband network, causing packet delay and poor performance\", and the receiver used \
         \"an adaptive data timer value calculation algorithm. The algorithm maintains an \
         average inter-packet arrival value, and uses that to determine the data timer value\", \
         with no formula. The delayed fragments' resends (paper #RXM 109-153) are set by that \
         formula. Our two readings bracket the paper's -15 %: the adaptive timer gives {}, RFC \
         998's literal timer {} against the 1400-1432-byte rows.",
        at(Choice::Adaptive),
        at(Choice::Rfc998 {
            variance_intervals: 0
        })
    )
}

/// XUNET Table III beyond 7 processes.
pub const XUNET_III_DECLINE: &str =
    "VandeWater attributes the decline to \"congestion of the trunk interface board\" and to \
     \"buffer overruns at the receiver ... the greater the possibility that a buffer is overrun \
     and a retransmission is required\", with data \"arriving from the Datakit backplane at a \
     rate of 8 Mb/s\" into a FIFO \"connected to the trunk\". Missing: the FIFO's size, the \
     receiving KMC's buffers, URP's retransmission timeout and the remote interface's \
     demultiplexing rate. The 72.5 KB/s peak is 43 % of the trunk's 168 KB/s, so no stated rate \
     gives it; any overrun model would have its buffer and timeout chosen to hit the table.";

/// XUNET Table II, the UIUC* rows.
pub const XUNET_II_UIUC: &str =
    "The report: \"The Illinois host we began our experiments on was a VAX 750, but, during the \
     course of our testing it was changed to a VAX 780\" (UIUC*). Its per-byte costs (eq. 6 \
     gives 0.004 ms/byte per host only for Vangogh and Fishonaplatter) and the delays of the \
     Chicago and Urbana switches on that path are not given; ours runs the UIUC* path with \
     the Fishonaplatter host model.";

/// RFC 1106, window-limited rows without errors: the Irises' host time.
pub fn rfc1106_host_time(rows: &[HostTimeRow]) -> String {
    let at = |d: u64| {
        let e: Vec<f64> = rows
            .iter()
            .filter(|r| r.extra_rtt_ms == d)
            .filter_map(|r| crate::fmt::error_pct(r.paper, r.ours))
            .collect();
        if e.is_empty() {
            "-".to_string()
        } else {
            format!("{:+.0} %", mean(&e))
        }
    };
    let (lo, hi) = (
        crate::rfc1106_sensitivity::EXTRA_RTT_MS[0],
        crate::rfc1106_sensitivity::EXTRA_RTT_MS
            [crate::rfc1106_sensitivity::EXTRA_RTT_MS.len() - 1],
    );
    format!(
        "RFC 1106 §4.1 \"assume[s] that processing time of the hosts is negligible\", but §7 \
         says \"the machines used are SGI Iris 2500 Turbos ... slower than a Sun 3/260\", \
         without a figure. Below the path's bandwidth-delay product (64-92K) the window sets \
         the rate, W / round trip, so these rows depend on the hosts' time per round trip. \
         With {lo} to {hi} ms added to the 580 ms round trip, Figure 1's no-error rows at 64-92K (Figure \
         2's are within 1-8 % of them) move in mean error from \
         {} to {} (with 100 ms: {}).",
        at(lo),
        at(hi),
        at(100)
    )
}

/// RFC 1106 Figure 2 at 1e-6: the lost NAKs.
pub fn rfc1106_nak_drops(rows: &[NakLossRow]) -> String {
    let pts: Vec<String> = rows
        .iter()
        .map(|r| format!("{:.0} % -> {}K", r.ack_loss * 100.0, num(r.ours_mean, 0)))
        .collect();
    let paper = rows.first().map_or(f64::NAN, |r| r.paper_mean);
    format!(
        "RFC 1106 §7: \"With a 10e-6 error rate, many naks as well as data packets were \
         dropped, causing the wild swing in transfer times.\" Our NAKs ride on 56-byte ACKs, \
         which bit errors at 1e-6 hit 0.045 % of the time; what lost theirs, and how many, is \
         not said. With a share of the ACKs (and their NAKs) lost besides bit errors, the \
         column's mean goes {} (paper {}K).",
        pts.join(", "),
        num(paper, 0)
    )
}

/// Whether RFC 1106 Figure 2's 1e-7 row at `window_k` is set by the
/// bottleneck's queue: its runs with the profile's queue lost data to the
/// full queue (the mechanism, whatever the row's error).
pub fn rfc1106_queue_decides(rows: &[QueueRow], window_k: u64) -> bool {
    rows.iter()
        .filter(|r| r.nak && r.ber > 0.0 && r.queue_bdp == Some(1))
        .flat_map(|r| r.cells.iter())
        .any(|c| c.window_k == window_k && c.queue_drops > 0.0)
}

/// RFC 1106 Figure 2 at 1e-7, the windows larger than the profile's queue:
/// the satellite simulator's buffering.
pub fn rfc1106_queue(rows: &[QueueRow]) -> String {
    let col: Vec<&QueueRow> = rows.iter().filter(|r| r.nak && r.ber > 0.0).collect();
    let decided: Vec<u64> = crate::rfc1106::WINDOWS_K
        .iter()
        .copied()
        .filter(|&w| rfc1106_queue_decides(rows, w))
        .collect();
    let list = |r: &QueueRow, f: fn(&crate::rfc1106::Cell) -> f64| {
        decided
            .iter()
            .filter_map(|&w| r.cells.iter().find(|c| c.window_k == w))
            .map(|c| num(f(c), 0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Queues with the same rows are named together.
    let mut per_queue: Vec<(Vec<String>, String)> = Vec::new();
    for r in &col {
        let rows = format!(
            "{}K ({} queue drops per run)",
            list(r, |c| c.ours),
            list(r, |c| c.queue_drops)
        );
        let label = queue_label(r.queue_bdp, None);
        match per_queue.iter_mut().find(|(_, x)| *x == rows) {
            Some((labels, _)) => labels.push(label),
            None => per_queue.push((vec![label], rows)),
        }
    }
    let per_queue: Vec<String> = per_queue
        .into_iter()
        .map(|(labels, rows)| format!("{}: {rows}", labels.join(", ")))
        .collect();
    let windows = match (decided.first(), decided.last()) {
        (Some(a), Some(b)) => format!("{a}-{b}K"),
        _ => "-".into(),
    };
    let paper = col.first().map_or(String::new(), |r| list(r, |c| c.paper));
    format!(
        "RFC 1106 ran its errors through \"the satellite simulator\" (§4.2: \"when the \
         satellite simulator was not used\") and gives neither its buffering nor where the \
         bottleneck's queue was; the profile ASSUMES one bandwidth-delay product. The NAK TCP \
         \"assumed that lost packets were the result of noise and not congestion\" (§4.2) and \
         its sender will \"resend the missing data immediately and then continue sending data \
         where it left off\" (§2.1): the window never shrinks, so when a NAKed retransmission \
         fills the hole at the left edge the ACK jumps by up to a window and 4.3BSD's \
         tcp_output sends all of it at once. At {windows} a window is larger on the wire than \
         the profile's queue, which then overflows, and each drop is a new hole and a new \
         burst. Rows {windows} (paper {paper}K) with each queue: {}. Each row is set by one \
         comparison, its window on the wire against the queue: held, it runs near the T1's \
         rate; not held, it loses to the queue. No one queue gives the paper's rise with the \
         window.",
        per_queue.join("; ")
    )
}

/// The reason an RFC 1030 row is not modelled, if it is not.
pub fn rfc1030_row(r: &Report, id: &str, row: &RowResult) -> Option<String> {
    match id {
        "III" if row.nbufs == 2 => Some(app_iii_two_buffers(
            &r.rfc1030_segment_sweep,
            &r.rfc1030_reenable_sweep,
            &r.rfc1030_broadcast_sweep,
        )),
        "IV" if row.psz >= 1434 => Some(app_iv_fragmented(&r.rfc1030_data_timers)),
        _ => None,
    }
}

/// XUNET Table I's fixed cost per round trip still missing after the local
/// case's 5 ms: what the rows would be with `c` ms more added to each of ours
/// (a sensitivity, not a model: the report gives no such figure for the
/// wide-area switches).
pub fn xunet_fixed_cost(rows: &[crate::xunet::EchoRow]) -> String {
    let Some(one) = rows.iter().find(|r| r.size == 1) else {
        return String::new();
    };
    let gap = one.paper_min_ms - one.ours_min_ms;
    let at = |c: f64| {
        let e: Vec<f64> = rows
            .iter()
            .filter_map(|r| crate::fmt::error_pct(r.paper_min_ms, r.ours_min_ms + c))
            .map(f64::abs)
            .collect();
        let worst = e.iter().copied().fold(0.0, f64::max);
        format!(
            "{} ms: median {} %, worst {} %",
            num(c, 1),
            num(crate::fmt::median(e), 1),
            num(worst, 1)
        )
    };
    format!(
        "**Sensitivity: a fixed cost per round trip.** The report's eq. 6 folds \
         everything that is not propagation, serialization or 0.008 ms/byte into its \
         measured one-byte \"response time\" (54.64 ms). Ours charges the hosts' time per \
         echo that the local case measured (5 ms, no trunk, one switch) and is {} ms \
         shorter: the wide-area switches and trunk interfaces, for which the report gives \
         no figure. With a further fixed cost c added to each of our round trips (not a \
         parameter of the model), Table I's |error| would be: {}; {}; {}.\n",
        num(gap, 2),
        at(0.0),
        at(gap / 2.0),
        at(gap)
    )
}
