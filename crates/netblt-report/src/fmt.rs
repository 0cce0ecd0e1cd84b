//! Formatting helpers for the reproduction report: relative errors and
//! Markdown tables.

/// Relative error of `ours` against `paper`, in percent; `None` when either
/// is not a finite number or the paper's value is zero.
pub fn error_pct(paper: f64, ours: f64) -> Option<f64> {
    (paper.is_finite() && ours.is_finite() && paper != 0.0)
        .then(|| (ours - paper) / paper.abs() * 100.0)
}

/// `+4.1 %`, `-12 %` or `-` (two significant-ish digits are enough for a
/// comparison with 1987 measurements).
pub fn fmt_error(e: Option<f64>) -> String {
    match e {
        None => "-".into(),
        Some(v) if v.abs() >= 10.0 => format!("{v:+.0} %"),
        Some(v) => format!("{v:+.1} %"),
    }
}

/// A number with `digits` decimals, or `-` if it is not finite.
pub fn num(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// Mean of the values, `NaN` when there are none.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A Markdown table from a header and rows of cells. Pipes in cells are
/// escaped so a cell can never break the table.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    out.push_str("| ");
    out.push_str(
        &header
            .iter()
            .map(|h| esc(h))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    out.push_str(" |\n|");
    for _ in header {
        out.push_str("---|");
    }
    out.push('\n');
    for r in rows {
        out.push_str("| ");
        out.push_str(&r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
        out.push_str(" |\n");
    }
    out
}

/// The median of the finite values (NaN when there are none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_relative_to_the_paper() {
        assert_eq!(error_pct(2.0, 2.2).map(|e| (e * 10.0).round()), Some(100.0));
        assert_eq!(error_pct(0.0, 1.0), None);
        assert_eq!(error_pct(1.0, f64::NAN), None);
        assert_eq!(fmt_error(Some(4.06)), "+4.1 %");
        assert_eq!(fmt_error(Some(-12.4)), "-12 %");
        assert_eq!(fmt_error(None), "-");
    }

    #[test]
    fn numbers_and_means() {
        assert_eq!(num(1.23456, 2), "1.23");
        assert_eq!(num(f64::INFINITY, 2), "-");
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
        assert!(mean(&[]).is_nan());
    }

    #[test]
    fn markdown_table_shape() {
        let t = table(&["a", "b"], &[vec!["1".into(), "x|y".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | x\\|y |\n");
    }
}
