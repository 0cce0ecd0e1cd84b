//! Per-table statistics for `netblt report --json` and the closing note:
//! rows, median and worst |error|, and whether each trend the paper
//! explains is reproduced, with the figures that decide it.

use serde::Serialize;

use crate::fmt::median;
use crate::{rfc1030, rfc1030_sensitivity, rfc1106, Report};

/// One named trend of a paper and whether ours shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    /// What the paper explains, in a few words.
    pub name: String,
    /// Whether ours shows it, by the rule in this module.
    pub reproduced: bool,
    /// The numbers that decide it, paper and ours.
    pub figures: String,
}

/// A row the seeds give too little to model, and why.
#[derive(Clone, Debug, Serialize)]
pub struct UnmodellableRow {
    /// Which row (the table's own inputs).
    pub row: String,
    /// |ours - paper| / paper, %.
    pub abs_error_pct: f64,
    /// "unmodellable: " and the reason: the seed's words, the missing
    /// number, and how far it moves the row (see `unmodellable.rs`).
    pub reason: String,
}

/// One row's error, and why it is not modelled if it is not.
pub struct RowError {
    /// Which row.
    pub row: String,
    /// |ours - paper| / paper, %.
    pub abs_error_pct: f64,
    /// The reason, for a row the seeds give too little to model.
    pub unmodellable: Option<String>,
}

fn row(row: String, abs_error_pct: f64) -> RowError {
    RowError {
        row,
        abs_error_pct,
        unmodellable: None,
    }
}

/// One table's statistics.
#[derive(Clone, Debug, Serialize)]
pub struct TableSummary {
    /// The table's name (paper and number).
    pub table: String,
    /// What the error is computed on.
    pub quantity: String,
    /// Rows compared.
    pub rows: usize,
    /// Median of |ours - paper| / paper over the rows, %.
    pub median_abs_error_pct: f64,
    /// Largest |ours - paper| / paper, %.
    pub worst_abs_error_pct: f64,
    /// Rows ours models (all rows less the unmodellable ones).
    pub modelled_rows: usize,
    /// Median |error| over the modelled rows, %.
    pub median_abs_error_modelled_pct: f64,
    /// Worst |error| over the modelled rows, %.
    pub worst_abs_error_modelled_pct: f64,
    /// The rows the seeds give too little to model, each with its reason.
    pub unmodellable: Vec<UnmodellableRow>,
    /// The paper's trends and whether ours shows them.
    pub trends: Vec<Trend>,
}

fn err(paper: f64, ours: f64) -> f64 {
    crate::fmt::error_pct(paper, ours).map_or(f64::NAN, f64::abs)
}

fn table(name: &str, quantity: &str, rows: Vec<RowError>, trends: Vec<Trend>) -> TableSummary {
    let rows: Vec<RowError> = rows
        .into_iter()
        .filter(|r| r.abs_error_pct.is_finite())
        .collect();
    let errors: Vec<f64> = rows.iter().map(|r| r.abs_error_pct).collect();
    let modelled: Vec<f64> = rows
        .iter()
        .filter(|r| r.unmodellable.is_none())
        .map(|r| r.abs_error_pct)
        .collect();
    let worst = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().copied().fold(0.0, f64::max)
        }
    };
    TableSummary {
        table: name.to_string(),
        quantity: quantity.to_string(),
        rows: errors.len(),
        median_abs_error_pct: median(errors.clone()),
        worst_abs_error_pct: worst(&errors),
        modelled_rows: modelled.len(),
        median_abs_error_modelled_pct: median(modelled.clone()),
        worst_abs_error_modelled_pct: worst(&modelled),
        unmodellable: rows
            .into_iter()
            .filter_map(|r| {
                r.unmodellable.map(|reason| UnmodellableRow {
                    row: r.row,
                    abs_error_pct: r.abs_error_pct,
                    reason: format!("unmodellable: {reason}"),
                })
            })
            .collect(),
        trends,
    }
}

fn mean_of<'a>(
    rows: impl Iterator<Item = &'a rfc1030::RowResult>,
    f: impl Fn(&rfc1030::RowResult) -> f64,
) -> f64 {
    let v: Vec<f64> = rows.map(f).collect();
    crate::fmt::mean(&v)
}

fn rfc1030_trends(id: &str, rows: &[rfc1030::RowResult]) -> Vec<Trend> {
    let sel = |psz: u16, nbufs: u16| {
        rows.iter()
            .filter(move |r| r.psz == psz && r.nbufs == nbufs)
    };
    match id {
        "II" => {
            let mut out = Vec::new();
            for psz in [1438u16, 1990] {
                let (p1, p2) = (
                    mean_of(sel(psz, 1), |r| r.paper_speed),
                    mean_of(sel(psz, 2), |r| r.paper_speed),
                );
                let (o1, o2) = (
                    mean_of(sel(psz, 1), |r| r.ours.speed),
                    mean_of(sel(psz, 2), |r| r.ours.speed),
                );
                out.push(Trend {
                    name: format!("two buffers faster than one ({psz}-byte packets)"),
                    reproduced: (o2 > o1) == (p2 > p1),
                    figures: format!(
                        "mean Mb/s NBUFS 1 / 2: paper {p1:.3} / {p2:.3}, ours {o1:.3} / {o2:.3}"
                    ),
                });
            }
            out
        }
        "III" => {
            let (p1, p2) = (
                mean_of(sel(1438, 1), |r| r.paper_speed),
                mean_of(sel(1438, 2), |r| r.paper_speed),
            );
            let (o1, o2) = (
                mean_of(sel(1438, 1), |r| r.ours.speed),
                mean_of(sel(1438, 2), |r| r.ours.speed),
            );
            let pl = mean_of(sel(1438, 2), |r| f64::from(r.paper_loss));
            let ol = mean_of(sel(1438, 2), |r| r.ours.loss);
            vec![Trend {
                name: "two-buffer collapse (1438-byte packets: NBUFS 2 slower than 1, with ~100+ losses)".into(),
                reproduced: o2 < o1 && ol >= 0.5 * pl,
                figures: format!(
                    "mean Mb/s NBUFS 1 / 2: paper {p1:.3} / {p2:.3}, ours {o1:.3} / {o2:.3}; \
                     mean losses with NBUFS 2: paper {pl:.0}, ours {ol:.1}"
                ),
            }]
        }
        "IV" => {
            let at90 = |big: bool| {
                rows.iter()
                    .filter(move |r| r.bi == 90 && (r.psz >= 1434) == big)
            };
            let (pb, ps) = (
                mean_of(at90(true), |r| r.paper_speed),
                mean_of(at90(false), |r| r.paper_speed),
            );
            let (ob, os) = (
                mean_of(at90(true), |r| r.ours.speed),
                mean_of(at90(false), |r| r.ours.speed),
            );
            vec![fragmentation_trend(
                "fragmentation drop at 1434-1438-byte packets (BI 90)".into(),
                (pb, ps),
                (ob, os),
            )]
        }
        _ => Vec::new(),
    }
}

/// RFC 1030 §6's statements about Subnet 26's traffic, from the sweep.
fn segment_trends(sweep: &[rfc1030_sensitivity::LoadRow]) -> Vec<Trend> {
    let at = |load: f64| sweep.iter().find(|r| (r.load - load).abs() < 1e-9);
    let (Some(quiet), Some(busy)) = (at(0.0), sweep.last()) else {
        return Vec::new();
    };
    vec![
        Trend {
            //# RFC 1030 §6: "when the same test was conducted on a special
            //# Ethernet LAN with the only two hosts attached being the two
            //# NETBLT machines, no packets were dropped once the burst
            //# interval rose above 40 milliseconds/5 packet burst".
            name: "no drops above 40 ms per burst with only the two hosts on the Ethernet".into(),
            reproduced: quiet.loss_bi45_nbufs2 < 1.0,
            figures: format!(
                "losses per run at 5/45, NBUFS 2: paper 0 on the two-host LAN (72 on Subnet 26), \
                 ours {:.1} with no other traffic",
                quiet.loss_bi45_nbufs2
            ),
        },
        Trend {
            //# §6: "The improved performance was doubtless due to the absence
            //# of extra network traffic."
            name: "losses grow with the other hosts' traffic".into(),
            reproduced: busy.loss_nbufs2 > quiet.loss_nbufs2 + 1.0
                && busy.loss_nbufs1 >= quiet.loss_nbufs1,
            figures: format!(
                "mean losses per run, 1438-byte rows, NBUFS 1 / 2: {:.1} / {:.1} with no other \
                 traffic, {:.1} / {:.1} at {:.0} % load (paper on Subnet 26: 16 / 133)",
                quiet.loss_nbufs1,
                quiet.loss_nbufs2,
                busy.loss_nbufs1,
                busy.loss_nbufs2,
                busy.load * 100.0
            ),
        },
    ]
}

/// The fragmentation drop with transfers long enough to fill the window.
fn long_trends(rows: &[rfc1030_sensitivity::LongRow]) -> Vec<Trend> {
    let m = |big: bool, f: fn(&rfc1030_sensitivity::LongRow) -> f64| {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| (r.psz >= 1434) == big)
            .map(f)
            .collect();
        crate::fmt::mean(&v)
    };
    let (pb, ps) = (m(true, |r| r.paper_speed), m(false, |r| r.paper_speed));
    let (ob, os) = (
        m(true, |r| r.ours_long_speed),
        m(false, |r| r.ours_long_speed),
    );
    if !(pb.is_finite() && ps.is_finite() && ob.is_finite() && os.is_finite()) {
        return Vec::new();
    }
    vec![fragmentation_trend(
        format!(
            "fragmentation drop at 1434-1438-byte packets (BI 90) with {}x the transfer size",
            rfc1030_sensitivity::LONG_FACTOR
        ),
        (pb, ps),
        (ob, os),
    )]
}

/// App. IV's fragmentation drop from the mean speeds (fragmented, whole) of
/// the paper and ours: reproduced when ours drops by at least half the
/// paper's drop (the paper's is 15 %).
fn fragmentation_trend(name: String, paper: (f64, f64), ours: (f64, f64)) -> Trend {
    let ((pb, ps), (ob, os)) = (paper, ours);
    let (pr, or) = (pb / ps, ob / os);
    Trend {
        name,
        reproduced: or <= 1.0 - (1.0 - pr) / 2.0,
        figures: format!(
            "mean Mb/s 1434-1438 / 1400-1432: paper {pb:.3} / {ps:.3} ({:+.0} %), \
             ours {ob:.3} / {os:.3} ({:+.0} %)",
            (pr - 1.0) * 100.0,
            (or - 1.0) * 100.0
        ),
    }
}

fn xunet_summaries(r: &Report) -> Vec<TableSummary> {
    let mut out = Vec::new();
    let t1 = &r.xunet_table_i;
    let rtt = |size: usize, ours: bool| {
        t1.iter().find(|x| x.size == size).map_or(f64::NAN, |x| {
            if ours {
                x.ours_min_ms
            } else {
                x.paper_min_ms
            }
        })
    };
    let jump = |a: usize, b: usize, ours: bool| rtt(b, ours) / rtt(a, ours);
    out.push(table(
        "XUNET Table I",
        "dkbench min RTT",
        t1.iter()
            .map(|x| row(format!("{} B", x.size), err(x.paper_min_ms, x.ours_min_ms)))
            .collect(),
        vec![Trend {
            name: "RTT jumps at 757 and 1025 bytes (one more window round trip)".into(),
            reproduced: jump(756, 757, true) > 1.8 && jump(1024, 1025, true) > 1.4,
            figures: format!(
                "RTT(757)/RTT(756): paper {:.2}, ours {:.2}; RTT(1025)/RTT(1024): paper {:.2}, ours {:.2}",
                jump(756, 757, false),
                jump(756, 757, true),
                jump(1024, 1025, false),
                jump(1024, 1025, true)
            ),
        }],
    ));
    out.push(table(
        "XUNET Table II",
        "measured throughput",
        r.xunet_table_ii
            .iter()
            .map(|x| RowError {
                row: x.label.to_string(),
                abs_error_pct: err(x.paper[2], x.ours[2]),
                unmodellable: x
                    .label
                    .contains("UIUC")
                    .then(|| crate::unmodellable::XUNET_II_UIUC.to_string()),
            })
            .collect(),
        Vec::new(),
    ));
    let t3 = &r.xunet_table_iii;
    let peak = |ours: bool| {
        t3.iter()
            .map(|x| if ours { x.ours_total } else { x.paper_total })
            .fold(0.0, f64::max)
    };
    let last = |ours: bool| {
        t3.last().map_or(
            f64::NAN,
            |x| if ours { x.ours_total } else { x.paper_total },
        )
    };
    out.push(table(
        "XUNET Table III",
        "total throughput",
        t3.iter()
            .map(|x| RowError {
                row: format!("{} processes", x.processes),
                abs_error_pct: err(x.paper_total, x.ours_total),
                // The paper's totals rise with the processes to 7, then fall:
                // the fall is the mechanism it does not quantify.
                unmodellable: (x.processes >= 8)
                    .then(|| crate::unmodellable::XUNET_III_DECLINE.to_string()),
            })
            .collect(),
        vec![Trend {
            name: "total declines past 8-9 processes".into(),
            reproduced: last(true) < 0.9 * peak(true),
            figures: format!(
                "total at 14 / peak (B/s): paper {:.0} / {:.0}, ours {:.0} / {:.0}",
                last(false),
                peak(false),
                last(true),
                peak(true)
            ),
        }],
    ));
    let t4 = &r.xunet_table_iv;
    let kbs = |size: usize, ours: bool| {
        t4.iter().find(|x| x.size == size).map_or(f64::NAN, |x| {
            if ours {
                x.ours_kbytes_per_s
            } else {
                x.paper_kbytes_per_s
            }
        })
    };
    out.push(table(
        "XUNET Table IV",
        "throughput",
        t4.iter()
            .map(|x| {
                row(
                    format!("{} B", x.size),
                    err(x.paper_kbytes_per_s, x.ours_kbytes_per_s),
                )
            })
            .collect(),
        vec![Trend {
            name: "757-byte messages slower than 756-byte ones".into(),
            reproduced: kbs(757, true) < kbs(756, true),
            figures: format!(
                "KB/s 756 / 757: paper {:.2} / {:.2}, ours {:.2} / {:.2}",
                kbs(756, false),
                kbs(757, false),
                kbs(756, true),
                kbs(757, true)
            ),
        }],
    ));
    out
}

fn rfc1106_summaries(r: &Report) -> Vec<TableSummary> {
    let cells = &r.rfc1106;
    let host_time = crate::unmodellable::rfc1106_host_time(&r.rfc1106_host_time);
    let nak_drops = crate::unmodellable::rfc1106_nak_drops(&r.rfc1106_nak_loss);
    let queue = crate::unmodellable::rfc1106_queue(&r.rfc1106_queue);
    let mut out = Vec::new();
    for (nak, name) in [
        (false, "RFC 1106 Figure 1 (no NAKs)"),
        (true, "RFC 1106 Figure 2 (NAKs)"),
    ] {
        let errors = cells
            .iter()
            .filter(|c| c.nak == nak)
            .map(|c| RowError {
                row: if c.ber == 0.0 {
                    format!("{}K, no error", c.window_k)
                } else {
                    format!("{}K, BER {:e}", c.window_k, c.ber)
                },
                abs_error_pct: c.error_pct.map_or(f64::NAN, f64::abs),
                unmodellable: if c.ber == 0.0
                    && crate::rfc1106_sensitivity::WINDOW_LIMITED_K.contains(&c.window_k)
                {
                    Some(host_time.clone())
                } else if c.nak && c.ber >= 1e-6 {
                    Some(nak_drops.clone())
                } else if c.nak
                    && c.ber > 0.0
                    && crate::unmodellable::rfc1106_queue_decides(&r.rfc1106_queue, c.window_k)
                {
                    Some(queue.clone())
                } else {
                    None
                },
            })
            .collect();
        let mut trends = Vec::new();
        if nak {
            for ber in [1e-7, 1e-6] {
                let m = |nak: bool, paper: bool| rfc1106::column_mean(cells, nak, ber, paper);
                let (pg, og) = (
                    m(true, true) / m(false, true),
                    m(true, false) / m(false, false),
                );
                trends.push(Trend {
                    name: format!("NAK gain at BER {ber:e}"),
                    // The paper's gains are 2.3x and 2.9x; ours must at least
                    // reach 1.5x.
                    reproduced: og >= 1.5,
                    figures: format!(
                        "column mean K/s no NAK / NAK: paper {:.0} / {:.0} ({pg:.1}x), ours {:.0} / {:.0} ({og:.1}x)",
                        m(false, true),
                        m(true, true),
                        m(false, false),
                        m(true, false)
                    ),
                });
            }
        }
        out.push(table(name, "transfer rate", errors, trends));
    }
    out
}

/// Every table's statistics, in report order.
pub fn summarise(r: &Report) -> Vec<TableSummary> {
    let mut out = Vec::new();
    for (id, rows) in &r.rfc1030 {
        out.push(table(
            &format!("RFC 1030 Appendix {id}"),
            "SPEED",
            rows.iter()
                .map(|x| RowError {
                    row: format!(
                        "{}/{} PSZ {} NBUFS {} XFSZ {}",
                        x.bs, x.bi, x.psz, x.nbufs, x.xfsz_kb
                    ),
                    abs_error_pct: x.speed_error_pct.map_or(f64::NAN, f64::abs),
                    unmodellable: crate::unmodellable::rfc1030_row(r, id, x),
                })
                .collect(),
            {
                let mut t = rfc1030_trends(id, rows);
                match id.as_str() {
                    "III" => t.extend(segment_trends(&r.rfc1030_segment_sweep)),
                    "IV" => t.extend(long_trends(&r.rfc1030_wideband_long)),
                    _ => {}
                }
                t
            },
        ));
    }
    out.extend(xunet_summaries(r));
    out.extend(rfc1106_summaries(r));
    out
}

/// The statistics as a Markdown table (the report's closing note), then
/// the rows declared unmodellable, grouped by reason.
pub fn markdown(s: &[TableSummary]) -> String {
    let pct = |v: f64| crate::fmt::num(v, 1) + " %";
    let mut rows = Vec::new();
    for t in s {
        rows.push(vec![
            t.table.clone(),
            t.quantity.clone(),
            format!("{} ({})", t.rows, t.modelled_rows),
            format!(
                "{} / {}",
                pct(t.median_abs_error_pct),
                pct(t.worst_abs_error_pct)
            ),
            format!(
                "{} / {}",
                pct(t.median_abs_error_modelled_pct),
                pct(t.worst_abs_error_modelled_pct)
            ),
            if t.trends.is_empty() {
                "-".into()
            } else {
                t.trends
                    .iter()
                    .map(|x| {
                        format!(
                            "{}: **{}** ({})",
                            x.name,
                            if x.reproduced { "yes" } else { "no" },
                            x.figures
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        ]);
    }
    let mut out = crate::fmt::table(
        &[
            "table",
            "error on",
            "rows (modelled)",
            "median / worst abs error, all rows",
            "median / worst, modelled rows",
            "trends reproduced",
        ],
        &rows,
    );
    out.push_str("\n### Rows declared unmodellable\n");
    for t in s {
        // Group the table's rows by reason, in order of first appearance.
        let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
        for u in &t.unmodellable {
            let label = format!("{} ({})", u.row, crate::fmt::num(u.abs_error_pct, 1) + " %");
            match groups.iter_mut().find(|(r, _)| *r == u.reason) {
                Some((_, v)) => v.push(label),
                None => groups.push((&u.reason, vec![label])),
            }
        }
        for (reason, labels) in groups {
            out.push_str(&format!(
                "\n- **{}**, {} row(s): {}. {}\n",
                t.table,
                labels.len(),
                labels.join("; "),
                reason
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modelled_statistics_leave_out_the_declared_rows_only() {
        let rows = vec![
            row("a".into(), 2.0),
            row("b".into(), 4.0),
            RowError {
                row: "c".into(),
                abs_error_pct: 60.0,
                unmodellable: Some("no figure".into()),
            },
            row("d".into(), f64::NAN),
        ];
        let t = table("t", "q", rows, Vec::new());
        assert_eq!((t.rows, t.modelled_rows), (3, 2));
        assert_eq!(t.worst_abs_error_pct, 60.0);
        assert_eq!(t.median_abs_error_pct, 4.0);
        assert_eq!(t.median_abs_error_modelled_pct, 3.0);
        assert_eq!(t.worst_abs_error_modelled_pct, 4.0);
        assert_eq!(t.unmodellable.len(), 1);
        assert_eq!(t.unmodellable[0].reason, "unmodellable: no figure");
    }
}
