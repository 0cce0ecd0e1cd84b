//! RFC 1030's appendices II-IV under each of the receiver's data-timer
//! policies (decisions Q5, Q6). The appendices use the engine's adaptive
//! timers ([`rfc1030::DATA_TIMER`]); this table shows what RFC 998's literal
//! rule would do to each appendix instead, and how the unquantified
//! "variance factor" moves it (zero and one burst interval; RFC 998 gives
//! no value).

use netblt_proto::{DataTimerPolicy, Duration};
use serde::Serialize;

use crate::fmt::{mean, num, table};
use crate::rfc1030::{self, path_of, run_row_with, PaperRow};

/// A receiver policy as the comparison runs it.
#[derive(Clone, Copy, Debug, Serialize)]
pub enum Choice {
    /// [`DataTimerPolicy::Adaptive`], the engine's default.
    Adaptive,
    /// [`DataTimerPolicy::Rfc998`] with this many of the row's burst
    /// intervals as the variance factor.
    Rfc998 {
        /// Variance factor in burst intervals.
        variance_intervals: u32,
    },
}

/// The policies compared: the default (the tables'), RFC 998's literal rule, and that rule with
/// one burst interval of variance.
pub const CHOICES: [Choice; 3] = [
    Choice::Adaptive,
    Choice::Rfc998 {
        variance_intervals: 0,
    },
    Choice::Rfc998 {
        variance_intervals: 1,
    },
];

impl Choice {
    /// The receiver's policy for `row` (the variance in its burst intervals).
    pub fn policy(self, row: &PaperRow) -> DataTimerPolicy {
        match self {
            Choice::Adaptive => DataTimerPolicy::Adaptive,
            Choice::Rfc998 { variance_intervals } => DataTimerPolicy::Rfc998 {
                variance: Duration::from_millis(u64::from(row.bi)) * variance_intervals,
            },
        }
    }

    /// A label for tables.
    pub fn label(self) -> String {
        match self {
            Choice::Adaptive => "adaptive (engine default; the tables above)".into(),
            Choice::Rfc998 {
                variance_intervals: 0,
            } => "RFC 998, no variance".into(),
            Choice::Rfc998 { variance_intervals } => {
                format!("RFC 998, variance {variance_intervals} burst interval(s)")
            }
        }
    }
}

/// One appendix under one policy.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyRow {
    /// Appendix id ("II", "III", "IV").
    pub appendix: String,
    /// The policy.
    pub choice: Choice,
    /// Median |SPEED error| over the appendix's rows, %.
    pub median_abs_error_pct: f64,
    /// Worst |SPEED error|, %.
    pub worst_abs_error_pct: f64,
    /// Mean #RXM per paper row: paper, ours.
    pub rxm: (f64, f64),
    /// Mean DTMOS per paper row: paper (none in appendix IV), ours.
    pub dtmos: (Option<f64>, f64),
    /// Appendix IV: mean Mb/s of the BI-90 rows with 1434-1438-byte and with
    /// 1400-1432-byte packets.
    pub bi90_fragmented_whole: Option<(f64, f64)>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Runs every appendix under every [`CHOICES`] policy; `tick` after each
/// appendix and policy. A quick report runs every other row (it checks the
/// comparison runs, not its figures; that keeps the test suite fast).
pub fn run(seeds: &[u64], quick: bool, tick: &mut dyn FnMut()) -> anyhow::Result<Vec<PolicyRow>> {
    let mut out = Vec::new();
    let step = if quick { 2 } else { 1 };
    for a in &rfc1030::APPENDICES {
        let path = path_of(a.profile)?;
        let seeds: &[u64] = if a.random {
            seeds
        } else {
            &seeds[..1.min(seeds.len())]
        };
        for choice in CHOICES {
            let (mut errs, mut rxm, mut dtmos) = (Vec::new(), Vec::new(), Vec::new());
            let (mut frag, mut whole) = (Vec::new(), Vec::new());
            for row in a.rows.iter().step_by(step) {
                let o = run_row_with(&path, row, seeds, choice.policy(row))?;
                if let Some(e) = crate::fmt::error_pct(row.speed, o.speed) {
                    errs.push(e.abs());
                }
                rxm.push(o.rxm);
                dtmos.push(o.dtmos);
                if a.id == "IV" && row.bi == 90 {
                    if row.psz > 1432 {
                        frag.push(o.speed);
                    } else {
                        whole.push(o.speed);
                    }
                }
            }
            tick();
            let worst = errs.iter().copied().fold(0.0, f64::max);
            let paper_rxm: Vec<f64> = a
                .rows
                .iter()
                .step_by(step)
                .map(|r| f64::from(r.rxm))
                .collect();
            let paper_dtmos: Vec<f64> = a
                .rows
                .iter()
                .step_by(step)
                .filter_map(|r| r.dtmos.map(f64::from))
                .collect();
            out.push(PolicyRow {
                appendix: a.id.to_string(),
                choice,
                median_abs_error_pct: median(errs),
                worst_abs_error_pct: worst,
                rxm: (mean(&paper_rxm), mean(&rxm)),
                dtmos: (
                    (!paper_dtmos.is_empty()).then(|| mean(&paper_dtmos)),
                    mean(&dtmos),
                ),
                bi90_fragmented_whole: (!frag.is_empty() && !whole.is_empty())
                    .then(|| (mean(&frag), mean(&whole))),
            });
        }
    }
    Ok(out)
}

/// Steps [`run`] takes (for progress counting).
pub fn steps() -> usize {
    rfc1030::APPENDICES.len() * CHOICES.len()
}

/// The comparison as a Markdown table.
pub fn markdown(rows: &[PolicyRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.appendix.clone(),
                r.choice.label(),
                num(r.median_abs_error_pct, 1) + " %",
                num(r.worst_abs_error_pct, 1) + " %",
                num(r.rxm.0, 1),
                num(r.rxm.1, 1),
                r.dtmos.0.map_or("-".into(), |d| num(d, 1)),
                num(r.dtmos.1, 1),
                r.bi90_fragmented_whole.map_or("-".into(), |(f, w)| {
                    format!(
                        "{} / {} ({:+.0} %; paper -15 %)",
                        num(f, 3),
                        num(w, 3),
                        (f / w - 1.0) * 100.0
                    )
                }),
            ]
        })
        .collect();
    table(
        &[
            "appendix",
            "receiver's data timers",
            "median abs error",
            "worst abs error",
            "#RXM per row paper",
            "ours",
            "DTMOS per row paper",
            "ours",
            "Mb/s BI 90, 1434-1438 / 1400-1432",
        ],
        &body,
    )
}
