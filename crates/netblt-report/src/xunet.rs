//! XUNET (VandeWater 1988) Tables I-IV through the window-limited stream
//! model of `netblt_sim::stream` on the `xunet` profile.

use netblt_link::profiles;
use netblt_measure::models::zero_large::{zero_large, ZeroLargeInput};
use netblt_proto::Duration;
use netblt_sim::stream::{echo_rtt, stream_transfer, Kmc};
use netblt_sim::PathConfig;
use serde::Serialize;

use super::fmt::{error_pct, fmt_error, num, table};

/// The local case's one-byte response time, Vangogh to Monet: "Monet, in
/// the local case, has a 1 byte minimum round trip time (response time) of
/// 5 ms" (§2.5.1) and "for the local case (Vangogh to Monet), the propagation delay is
/// minimal and can be assumed to be zero. The nonzero values in the local
/// case are due to processing time and bus contention" (§2.4). It is the
/// hosts' own time per echo (with one switch's), measured with no trunk and
/// no distance: we split it evenly between the echo's four application
/// steps (write, read, write back, read back) and charge them on the wide-area
/// paths too. The split is ours; the total is the report's.
pub const LOCAL_RESPONSE_MS: f64 = 5.0;

/// One application step of an echo: a quarter of [`LOCAL_RESPONSE_MS`].
fn app_step() -> Duration {
    Duration::from_secs_f64(LOCAL_RESPONSE_MS / 4.0 / 1e3)
}

/// Table I: size, packets/s, KB/s, mean RTT (dkxload), minimum RTT (dkbench).
pub const TABLE_I: &[(usize, f64, f64, f64, f64)] = &[
    (1, 18.07, 0.018, 55.33, 54.64),
    (2, 18.07, 0.036, 55.32, 54.29),
    (16, 17.94, 0.287, 55.73, 55.14),
    (17, 17.88, 0.304, 55.94, 55.13),
    (84, 17.51, 1.470, 57.12, 56.88),
    (85, 17.49, 1.487, 57.18, 56.52),
    (112, 17.21, 1.927, 58.12, 57.34),
    (113, 17.28, 1.952, 57.88, 57.14),
    (168, 16.88, 2.836, 59.23, 58.41),
    (169, 16.95, 2.865, 58.98, 58.60),
    (756, 13.21, 9.987, 75.69, 69.97),
    (757, 5.76, 4.361, 173.6, 160.52),
    (1024, 5.79, 5.928, 172.7, 166.35),
    (1025, 3.68, 3.780, 271.5, 267.36),
];

/// §2.5.2 (Figure 3 era, 84-byte windows both ways): minimum RTTs to
/// Fishonaplatter quoted in the text.
pub const FIGURE_3_TEXT: &[(usize, f64)] = &[
    (1, 54.0),
    (84, 57.0),
    (85, 155.0),
    (112, 156.0),
    (1024, 1266.0),
];

/// Table IV: message size, throughput KB/s, mean transfer rate ms, kilo packets/s.
pub const TABLE_IV: &[(usize, f64, f64)] = &[
    (1, 0.0198, 50.42),
    (2, 0.039, 50.39),
    (16, 0.315, 50.76),
    (17, 0.335, 50.73),
    (84, 1.635, 51.38),
    (85, 1.652, 51.43),
    (112, 2.164, 51.75),
    (113, 2.182, 51.78),
    (168, 3.212, 52.29),
    (169, 3.233, 52.28),
    (756, 12.96, 58.33),
    (757, 7.36, 102.86),
    (1024, 9.68, 105.76),
    (1025, 6.56, 156.25),
];

/// Table III: processes, overall throughput, throughput per process (bytes/s).
pub const TABLE_III: &[(usize, f64, f64)] = &[
    (1, 9761.15, 9761.15),
    (2, 19515.2, 9757.62),
    (3, 29261.9, 9753.97),
    (4, 38947.6, 9736.9),
    (5, 48616.1, 9723.21),
    (6, 58280.3, 9713.38),
    (7, 67955.0, 9707.86),
    (8, 71829.5, 8978.69),
    (9, 72508.3, 8056.48),
    (10, 63550.8, 6355.08),
    (11, 58098.9, 5281.72),
    (12, 56426.9, 4702.24),
    (13, 54905.2, 4223.48),
    (14, 50005.2, 3571.8),
];

/// Table II rows: label, window, far end (UIUC or New Jersey), the paper's
/// effective window, maximum throughput, measured throughput, correction (ms).
pub const TABLE_II: &[(&str, usize, Far, f64, f64, f64, f64)] = &[
    (
        "UIUC* >> Vangogh",
        84,
        Far::Uiuc,
        82.68,
        2100.0,
        2066.9,
        0.6,
    ),
    (
        "Vangogh >> Fishonaplatter",
        756,
        Far::NewJersey,
        518.76,
        13830.0,
        9490.7,
        25.0,
    ),
    (
        "Fishonaplatter >> Vangogh",
        756,
        Far::NewJersey,
        520.53,
        13830.0,
        9523.2,
        24.7,
    ),
    (
        "Vangogh >> UIUC*",
        756,
        Far::Uiuc,
        459.49,
        17784.0,
        10808.9,
        27.4,
    ),
];

/// The far end of a Table II path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Far {
    /// Fishonaplatter: 3,000 miles, the `xunet` profile as it is.
    NewJersey,
    /// UIUC: §2.4 approximates "the round trip distance from Berkeley to
    /// Illinois at 3,900 miles", i.e. 1,950 miles one way at 2/3 c.
    Uiuc,
}

fn path(far: Far) -> anyhow::Result<PathConfig> {
    let p = profiles::profile("xunet").ok_or_else(|| anyhow::anyhow!("no xunet profile"))?;
    let mut path = PathConfig::from_profile(&p);
    // Datakit carries the blocks itself: the block trailer is the overhead;
    // the profile's IP/UDP headers are for NETBLT over UDP, not URP.
    path.wire_overhead = 0;
    if far == Far::Uiuc {
        let one_way = Duration::from_secs_f64(1950.0 * 1609.344 / 2e8);
        path.forward.delay = one_way;
        path.reverse.delay = one_way;
    }
    Ok(path)
}

fn kmc(window: usize) -> Kmc {
    if window <= Kmc::SMALL.window() {
        Kmc::SMALL
    } else {
        Kmc::LARGE
    }
}

/// One row of Table I (the RTT test), paper and ours.
#[derive(Clone, Debug, Serialize)]
pub struct EchoRow {
    /// Message size, bytes.
    pub size: usize,
    /// dkxload's mean RTT, ms (paper).
    pub paper_mean_ms: f64,
    /// dkbench's minimum RTT, ms (paper).
    pub paper_min_ms: f64,
    /// dkxload's throughput, KB/s (paper).
    pub paper_kbytes_per_s: f64,
    /// Our minimum RTT, ms.
    pub ours_min_ms: f64,
    /// Our mean RTT, ms.
    pub ours_mean_ms: f64,
    /// Our throughput, KB/s.
    pub ours_kbytes_per_s: f64,
}

/// Table I: 756-byte windows both ways (Vangogh and Fishonaplatter had both
/// switched, §2.5.3).
pub fn table_i(reps: u32) -> anyhow::Result<Vec<EchoRow>> {
    let p = path(Far::NewJersey)?;
    TABLE_I
        .iter()
        .map(|&(size, _pps, kbs, mean, min)| {
            let e = echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, app_step(), size, reps, 1)?;
            Ok(EchoRow {
                size,
                paper_mean_ms: mean,
                paper_min_ms: min,
                paper_kbytes_per_s: kbs,
                ours_min_ms: e.min_ms,
                ours_mean_ms: e.mean_ms,
                ours_kbytes_per_s: size as f64 * e.messages_per_s / 1e3,
            })
        })
        .collect()
}

/// Figure 3's sizes with 84-byte windows both ways (before the change).
pub fn figure_3(reps: u32) -> anyhow::Result<Vec<(usize, f64, f64)>> {
    let p = path(Far::NewJersey)?;
    FIGURE_3_TEXT
        .iter()
        .map(|&(size, paper)| {
            Ok((
                size,
                paper,
                echo_rtt(&p, Kmc::SMALL, Kmc::SMALL, app_step(), size, reps, 1)?.min_ms,
            ))
        })
        .collect()
}

/// Points (x, y) of one plotted curve.
type Curve = Vec<(f64, f64)>;

/// RTT against size for the log-log figure: both window sizes.
pub fn rtt_curve(reps: u32) -> anyhow::Result<(Curve, Curve)> {
    let p = path(Far::NewJersey)?;
    let sizes = [
        1usize, 2, 16, 17, 84, 85, 112, 113, 168, 169, 252, 253, 504, 505, 756, 757, 1023, 1024,
        1025, 2048,
    ];
    let mut small = Vec::new();
    let mut large = Vec::new();
    for s in sizes {
        small.push((
            s as f64,
            echo_rtt(&p, Kmc::SMALL, Kmc::SMALL, app_step(), s, reps, 1)?.min_ms,
        ));
        large.push((
            s as f64,
            echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, app_step(), s, reps, 1)?.min_ms,
        ));
    }
    Ok((small, large))
}

/// One row of Table IV (the transfer test), paper and ours.
#[derive(Clone, Debug, Serialize)]
pub struct TransferRow {
    /// Message size, bytes.
    pub size: usize,
    /// Throughput, KB/s (paper).
    pub paper_kbytes_per_s: f64,
    /// Milliseconds per message (paper).
    pub paper_mean_ms: f64,
    /// Our throughput, KB/s.
    pub ours_kbytes_per_s: f64,
    /// Our milliseconds per message.
    pub ours_mean_ms: f64,
}

/// Table IV: dkxload's transfer test to Fishonaplatter, `messages` per size.
pub fn table_iv(messages: u64) -> anyhow::Result<Vec<TransferRow>> {
    let p = path(Far::NewJersey)?;
    TABLE_IV
        .iter()
        .map(|&(size, kbs, ms)| {
            let r = stream_transfer(&p, Kmc::LARGE, size, size as u64 * messages, 1, 1)?;
            Ok(TransferRow {
                size,
                paper_kbytes_per_s: kbs,
                paper_mean_ms: ms,
                ours_kbytes_per_s: r.total_bytes_per_s / 1e3,
                ours_mean_ms: r.mean_message_ms,
            })
        })
        .collect()
}

/// One row of Table II (eqs. 7-9), paper and ours.
#[derive(Clone, Debug, Serialize)]
pub struct ZeroLargeResult {
    /// Source and destination, as the paper names them.
    pub label: &'static str,
    /// URP window, bytes.
    pub window: usize,
    /// Effective window, maximum throughput, measured throughput, correction (ms): the paper's.
    pub paper: [f64; 4],
    /// Effective window, maximum throughput, measured throughput, correction (ms).
    pub ours: [f64; 4],
    /// Our minimum (1-byte echo) RTT on the same path, ms.
    pub min_rtt_ms: f64,
}

/// Table II by §3.5's method on our model: LARGE pushed with 1024-byte
/// writes; ZERO costs nothing here (no call set-up is modelled); the minimum
/// RTT is our own 1-byte echo on the same path.
pub fn table_ii(large_bytes: u64) -> anyhow::Result<Vec<ZeroLargeResult>> {
    TABLE_II
        .iter()
        .map(|&(label, window, far, ew, max, meas, corr)| {
            let p = path(far)?;
            let k = kmc(window);
            let rtt = echo_rtt(&p, k, k, app_step(), 1, 5, 1)?.min_ms / 1e3;
            let t = stream_transfer(&p, k, 1024, large_bytes, 1, 1)?;
            let large_s = large_bytes as f64 / t.total_bytes_per_s;
            let row = zero_large(&ZeroLargeInput::new(
                0.0,
                large_s,
                large_bytes as f64,
                window as f64,
                rtt,
            ))?;
            Ok(ZeroLargeResult {
                label,
                window,
                paper: [ew, max, meas, corr],
                ours: [
                    row.effective_window_bytes,
                    row.max_throughput,
                    row.measured_throughput,
                    row.correction_ms,
                ],
                min_rtt_ms: rtt * 1e3,
            })
        })
        .collect()
}

/// One row of Table III (multiple processes), paper and ours.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessRow {
    /// Concurrent trafgen processes.
    pub processes: usize,
    /// Total throughput, bytes/s (paper).
    pub paper_total: f64,
    /// Throughput per process, bytes/s (paper).
    pub paper_per_process: f64,
    /// Our total, bytes/s.
    pub ours_total: f64,
    /// Ours per process, bytes/s.
    pub ours_per_process: f64,
}

/// Table III: 1..14 concurrent channels of 1024-byte writes over one trunk.
pub fn table_iii(
    bytes_per_process: u64,
    tick: &mut dyn FnMut(),
) -> anyhow::Result<Vec<ProcessRow>> {
    let p = path(Far::NewJersey)?;
    TABLE_III
        .iter()
        .map(|&(n, total, per)| {
            let r = stream_transfer(&p, Kmc::LARGE, 1024, bytes_per_process, n, 1)?;
            tick();
            Ok(ProcessRow {
                processes: n,
                paper_total: total,
                paper_per_process: per,
                ours_total: r.total_bytes_per_s,
                ours_per_process: r.total_bytes_per_s / n as f64,
            })
        })
        .collect()
}

/// Table I beside ours, as Markdown.
pub fn md_table_i(rows: &[EchoRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.size.to_string(),
                num(r.paper_min_ms, 2),
                num(r.ours_min_ms, 2),
                fmt_error(error_pct(r.paper_min_ms, r.ours_min_ms)),
                num(r.paper_mean_ms, 2),
                num(r.paper_kbytes_per_s, 3),
                num(r.ours_kbytes_per_s, 3),
                fmt_error(error_pct(r.paper_kbytes_per_s, r.ours_kbytes_per_s)),
            ]
        })
        .collect();
    table(
        &[
            "size (B)",
            "dkbench min RTT paper (ms)",
            "ours",
            "error",
            "dkxload mean RTT paper (ms)",
            "KB/s paper",
            "ours",
            "error",
        ],
        &body,
    )
}

/// The 84-byte-window RTTs beside ours, as Markdown.
pub fn md_figure_3(rows: &[(usize, f64, f64)]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|&(s, p, o)| {
            vec![
                s.to_string(),
                num(p, 0),
                num(o, 1),
                fmt_error(error_pct(p, o)),
            ]
        })
        .collect();
    table(
        &[
            "size (B)",
            "min RTT paper (ms, §2.5.2 text)",
            "ours",
            "error",
        ],
        &body,
    )
}

/// Table IV beside ours, as Markdown.
pub fn md_table_iv(rows: &[TransferRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.size.to_string(),
                num(r.paper_kbytes_per_s, 4),
                num(r.ours_kbytes_per_s, 4),
                fmt_error(error_pct(r.paper_kbytes_per_s, r.ours_kbytes_per_s)),
                num(r.paper_mean_ms, 2),
                num(r.ours_mean_ms, 2),
                fmt_error(error_pct(r.paper_mean_ms, r.ours_mean_ms)),
            ]
        })
        .collect();
    table(
        &[
            "message (B)",
            "throughput paper (KB/s)",
            "ours",
            "error",
            "ms per message paper",
            "ours",
            "error",
        ],
        &body,
    )
}

/// Table II beside ours, as Markdown.
pub fn md_table_ii(rows: &[ZeroLargeResult]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = vec![
                r.label.to_string(),
                r.window.to_string(),
                num(r.min_rtt_ms, 2),
            ];
            for (i, d) in [2usize, 0, 0, 1].iter().enumerate() {
                v.push(num(r.paper[i], *d));
                v.push(num(r.ours[i], *d));
            }
            v.push(fmt_error(error_pct(r.paper[2], r.ours[2])));
            v
        })
        .collect();
    table(
        &[
            "source >> destination",
            "window",
            "our min RTT (ms)",
            "eff. window paper",
            "ours",
            "max thr. paper (B/s)",
            "ours",
            "measured paper (B/s)",
            "ours",
            "correction paper (ms)",
            "ours",
            "measured error",
        ],
        &body,
    )
}

/// Table III beside ours, as Markdown.
pub fn md_table_iii(rows: &[ProcessRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.processes.to_string(),
                num(r.paper_total, 0),
                num(r.ours_total, 0),
                fmt_error(error_pct(r.paper_total, r.ours_total)),
                num(r.paper_per_process, 0),
                num(r.ours_per_process, 0),
                fmt_error(error_pct(r.paper_per_process, r.ours_per_process)),
            ]
        })
        .collect();
    table(
        &[
            "processes",
            "total paper (B/s)",
            "ours",
            "error",
            "per process paper (B/s)",
            "ours",
            "error",
        ],
        &body,
    )
}
