//! Parsing of sizes and rates as users type them: `1990k`, `2M`, `1GiB`,
//! `10Mb/s`. Decimal suffixes are powers of 1000, binary ones (`KiB`, `MiB`,
//! `GiB`, `TiB`) powers of 1024, as iperf3 and most storage tools do.

/// A byte count: `1990000`, `1990k`, `2M`, `1.5G`, `64KiB`, `1GiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_scaled(s, &["b", "B", "bytes"]).map(|v| v.round() as u64)
}

/// A rate in bits per second: `1544000`, `1.544M`, `10Mb/s`, `1G`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    parse_scaled(s, &["bps", "b/s", "bit/s", "bits/s"]).map(|v| v.round() as u64)
}

fn parse_scaled(s: &str, units: &[&str]) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(split);
    let num: f64 = num.replace('_', "").parse().map_err(|_| {
        format!("'{s}' is not a number with an optional suffix (k, M, G, KiB, MiB, GiB)")
    })?;
    let mut rest = rest.trim();
    for u in units {
        if let Some(r) = rest.strip_suffix(u) {
            rest = r;
            break;
        }
    }
    let mult = match rest {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" | "m" => 1e6,
        "G" | "g" => 1e9,
        "T" | "t" => 1e12,
        "Ki" | "KiB" => 1024.0,
        "Mi" | "MiB" => 1024.0 * 1024.0,
        "Gi" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "Ti" | "TiB" => 1024f64.powi(4),
        other => {
            return Err(format!(
                "unknown suffix '{other}' in '{s}' (use k, M, G, KiB, MiB, GiB)"
            ))
        }
    };
    let v = num * mult;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(v)
}

/// Formats bits per second for people: `1.75 Mb/s`.
pub fn fmt_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gb/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mb/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kb/s", bps / 1e3)
    } else {
        format!("{bps:.0} b/s")
    }
}

/// Formats a byte count for people: `1.99 MB`.
pub fn fmt_bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.2} MB", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} kB", n / 1e3)
    } else {
        format!("{n:.0} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1990000"), Ok(1_990_000));
        assert_eq!(parse_size("1990k"), Ok(1_990_000));
        assert_eq!(parse_size("2M"), Ok(2_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("1.5G"), Ok(1_500_000_000));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert!(parse_size("12x").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-5").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1.544M"), Ok(1_544_000));
        assert_eq!(parse_rate("10Mb/s"), Ok(10_000_000));
        assert_eq!(parse_rate("1G"), Ok(1_000_000_000));
        assert_eq!(fmt_rate(1_750_000.0), "1.75 Mb/s");
    }
}
