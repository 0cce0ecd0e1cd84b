//! `netblt model`.

use std::fmt::Write as _;

use anyhow::Context as _;
use serde::Serialize;

use super::{print_json, DelayArgs, FitArgs, ModelArgs, ModelCommand, RttStat, ZeroLargeArgs};
use crate::models::delay::{line_rtt_ms, local_rtt_ms, windowed_rtt_ms};
use crate::models::fit::{fit_delay, DelayFit, Prediction};
use crate::models::zero_large::{zero_large, ZeroLargeInput, ZeroLargeRow};
use crate::rtt::DEFAULT_SIZES;
use crate::units::format_sig;

/// Evaluates one of XUNET's models and prints the result.
///
/// # Errors
/// Invalid model inputs, unreadable `--rtt-json`.
pub fn run_model(args: ModelArgs) -> anyhow::Result<()> {
    match &args.model {
        ModelCommand::ZeroLarge(z) => zero_large_cmd(z, args.json),
        ModelCommand::Delay(d) => delay_cmd(d, args.json),
        ModelCommand::Fit(f) => fit_cmd(f, args.json),
    }
}

#[derive(Serialize)]
struct ZeroLargeOut {
    input: ZeroLargeInput,
    row: ZeroLargeRow,
}

fn zero_large_cmd(a: &ZeroLargeArgs, json: bool) -> anyhow::Result<()> {
    let input = ZeroLargeInput::new(
        a.zero_secs,
        a.large_secs,
        a.size.0 as f64,
        a.window,
        a.rtt_ms / 1e3,
    );
    let row = zero_large(&input)?;
    if json {
        return print_json(&ZeroLargeOut { input, row });
    }
    print!("{}", zero_large_table(a, &row));
    Ok(())
}

/// Table II's columns for one row.
fn zero_large_table(a: &ZeroLargeArgs, row: &ZeroLargeRow) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "XUNET Table II row (eqs. 7-9): ZERO {} s, LARGE {} s of {} bytes, minimum RTT {} ms",
        a.zero_secs, a.large_secs, a.size.0, a.rtt_ms
    );
    let _ = writeln!(
        out,
        "{:>14} {:>18} {:>22} {:>22} {:>17}",
        "Window (bytes)",
        "Effective (bytes)",
        "Maximum tput (B/s)",
        "Measured tput (B/s)",
        "Correction (ms)"
    );
    let _ = writeln!(
        out,
        "{:>14} {:>18.2} {:>22.2} {:>22.2} {:>17.2}",
        fmt_num(row.window_bytes),
        row.effective_window_bytes,
        row.max_throughput,
        row.measured_throughput,
        row.correction_ms
    );
    out
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[derive(Serialize)]
struct DelayRow {
    size: usize,
    eq4_windowed_ms: Option<f64>,
    eq5_local_ms: Option<f64>,
    eq6_line_ms: Option<f64>,
}

fn delay_cmd(a: &DelayArgs, json: bool) -> anyhow::Result<()> {
    let sizes = a
        .sizes
        .as_ref()
        .map_or_else(|| DEFAULT_SIZES.to_vec(), |s| s.resolve(&DEFAULT_SIZES));
    anyhow::ensure!(
        a.window.is_some() || a.ms_per_byte.is_some() || a.line_bps.is_some(),
        "give --window (eq. 4), --ms-per-byte (eq. 5) or --line-bps with --extra-ms-per-byte (eq. 6)"
    );
    let mut rows = Vec::with_capacity(sizes.len());
    for size in sizes {
        let s = size as f64;
        rows.push(DelayRow {
            size,
            eq4_windowed_ms: a
                .window
                .map(|w| windowed_rtt_ms(s, w, a.response_ms))
                .transpose()?,
            eq5_local_ms: a.ms_per_byte.map(|k| local_rtt_ms(s, k, a.response_ms)),
            eq6_line_ms: match (a.line_bps, a.extra_ms_per_byte) {
                (Some(bps), Some(extra)) => Some(line_rtt_ms(s, a.response_ms, bps, extra)?),
                _ => None,
            },
        });
    }
    if json {
        return print_json(&rows);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Predicted RTT (ms), response time {} ms",
        a.response_ms
    );
    let _ = writeln!(
        out,
        "{:>8} {:>14} {:>14} {:>14}",
        "size", "eq.4 windowed", "eq.5 local", "eq.6 line"
    );
    let cell = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    for r in &rows {
        let _ = writeln!(
            out,
            "{:>8} {:>14} {:>14} {:>14}",
            r.size,
            cell(r.eq4_windowed_ms),
            cell(r.eq5_local_ms),
            cell(r.eq6_line_ms)
        );
    }
    print!("{out}");
    Ok(())
}

#[derive(Serialize)]
struct FitOut {
    fit: DelayFit,
    points: Vec<Prediction>,
}

fn fit_cmd(a: &FitArgs, json: bool) -> anyhow::Result<()> {
    let mut points = match (&a.points, &a.rtt_json) {
        (Some(p), _) => p.0.clone(),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("read {}", path.display()))?;
            points_from_rtt_json(&text, a.stat)
                .with_context(|| format!("{}: not `netblt rtt --json` output", path.display()))?
        }
        (None, None) => anyhow::bail!("give --points or --rtt-json"),
    };
    if let Some(max) = a.max_size {
        points.retain(|&(s, _)| s <= max.0 as f64);
    }
    let fit = fit_delay(&points, a.line_bps)?;
    let preds = fit.predictions(&points);
    if json {
        return print_json(&FitOut { fit, points: preds });
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "eq. 5 fit over {} points: RTT = {} ms + size x {} ms/byte (r² = {:.4})",
        fit.n,
        format_sig(fit.response_ms),
        format_sig(fit.ms_per_byte),
        fit.r_squared
    );
    if let (Some(bps), Some(extra)) = (fit.line_bps, fit.extra_ms_per_byte) {
        let _ = writeln!(
            out,
            "eq. 6: a {} b/s line accounts for {} ms/byte; extra {} ms/byte ({} per host)",
            format_sig(bps),
            format_sig(fit.ms_per_byte - extra),
            format_sig(extra),
            format_sig(extra / 2.0)
        );
    }
    let _ = writeln!(
        out,
        "{:>10} {:>12} {:>12} {:>8}",
        "size", "measured ms", "predicted ms", "error %"
    );
    for p in &preds {
        let _ = writeln!(
            out,
            "{:>10} {:>12} {:>12} {:>8.2}",
            p.size,
            format_sig(p.measured_ms),
            format_sig(p.predicted_ms),
            p.error_pct
        );
    }
    print!("{out}");
    Ok(())
}

/// Reads (size, RTT ms) points from `netblt rtt --json` output, skipping sizes with no
/// successful round trip.
pub(crate) fn points_from_rtt_json(text: &str, stat: RttStat) -> anyhow::Result<Vec<(f64, f64)>> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let sizes = v
        .get("sizes")
        .and_then(|s| s.as_array())
        .context("no `sizes` array")?;
    let key = match stat {
        RttStat::Min => "min",
        RttStat::Mean => "mean",
        RttStat::P50 => "p50",
    };
    let mut out = Vec::new();
    for s in sizes {
        let size = s
            .get("size")
            .and_then(|x| x.as_f64())
            .context("a size entry has no `size`")?;
        if let Some(us) = s
            .get("rtt_us")
            .and_then(|r| r.get(key))
            .and_then(|x| x.as_f64())
        {
            out.push((size, us / 1e3));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ByteSize;

    #[test]
    fn zero_large_prints_table_ii_row() {
        let a = ZeroLargeArgs {
            zero_secs: 4.0,
            large_secs: 166.0,
            size: ByteSize(334_848),
            window: 84.0,
            rtt_ms: 40.0,
        };
        let row = zero_large(&ZeroLargeInput::new(4.0, 166.0, 334_848.0, 84.0, 0.040)).unwrap();
        let text = zero_large_table(&a, &row);
        let last = text.lines().last().unwrap();
        let cells: Vec<&str> = last.split_whitespace().collect();
        assert_eq!(cells, ["84", "82.68", "2100.00", "2066.96", "0.64"]);
    }

    #[test]
    fn reads_rtt_json() {
        let text = r#"{"sizes":[{"size":1,"rtt_us":{"min":20.0,"mean":25.0,"p50":24.0}},
                               {"size":2,"rtt_us":null},
                               {"size":1024,"rtt_us":{"min":40.0,"mean":45.0,"p50":44.0}}]}"#;
        assert_eq!(
            points_from_rtt_json(text, RttStat::Min).unwrap(),
            vec![(1.0, 0.02), (1024.0, 0.04)]
        );
        assert_eq!(
            points_from_rtt_json(text, RttStat::Mean).unwrap(),
            vec![(1.0, 0.025), (1024.0, 0.045)]
        );
        assert!(points_from_rtt_json("{}", RttStat::Min).is_err());
        assert!(points_from_rtt_json("not json", RttStat::Min).is_err());
    }
}
