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
//! Neither value is used by the figures' tables: the sweeps only bound
//! what the seeds leave open.

use std::time::Duration;

use netblt_link::profiles;
use netblt_link::LossModel;
use netblt_sim::tcp::TcpConfig;
use netblt_sim::tcp_path::{run_tcp_path, TcpPathConfig};
use serde::Serialize;

use crate::fmt::{error_pct, fmt_error, mean, num, table};
use crate::rfc1106::{duration, PAPER_NAK, PAPER_NO_NAK, WINDOWS_K};

/// Extra round-trip time (ms) of the host-time sweep.
pub const EXTRA_RTT_MS: [u64; 4] = [0, 50, 100, 150];
/// Windows (K) the host-time sweep reruns: those below the path's
/// bandwidth-delay product (580 ms x 168 K/s = 97K), where the window, not
/// the T1, sets the rate.
pub const WINDOW_LIMITED_K: [u64; 4] = [64, 72, 80, 92];
/// Fractions of ACKs lost besides bit errors in the NAK sweep.
pub const ACK_LOSS: [f64; 4] = [0.0, 0.05, 0.1, 0.2];

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

fn run_one(
    w: u64,
    nak: bool,
    ber: f64,
    extra_rtt: Duration,
    ack_loss: f64,
    seed: u64,
    quick: bool,
) -> anyhow::Result<f64> {
    let p = profiles::profile("t1-satellite")
        .ok_or_else(|| anyhow::anyhow!("no t1-satellite profile"))?;
    let framing = p
        .wire_overhead
        .saturating_sub(profiles::IP_HEADER + profiles::UDP_HEADER);
    let (mut forward, mut reverse) = (p.forward.clone(), p.reverse.clone());
    forward.ber = ber;
    reverse.ber = ber;
    forward.delay += extra_rtt / 2;
    reverse.delay += extra_rtt / 2;
    if ack_loss > 0.0 {
        reverse.loss = LossModel::Bernoulli { p: ack_loss };
    }
    let r = run_tcp_path(&TcpPathConfig {
        forward,
        reverse,
        framing,
        tcp: TcpConfig::bsd43_rfc1106(w * 1024, nak),
        duration: duration(quick),
        warmup: Duration::ZERO,
        seed,
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    Ok(r.rate / 1024.0)
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
