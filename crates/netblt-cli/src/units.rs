//! Parsing of sizes and rates as users type them: `1990k`, `2M`, `1GiB`,
//! `10Mb/s`. Decimal suffixes are powers of 1000, binary ones (`KiB`, `MiB`,
//! `GiB`, `TiB`) powers of 1024, as iperf3 and most storage tools do.

/// A byte count: `1990000`, `1990k`, `2M`, `1.5G`, `64KiB`, `1GiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_scaled(s, &["b", "B", "bytes"], SIZE_SUFFIXES).and_then(|v| whole(s, v))
}

/// A rate in bits per second: `1544000`, `1.544M`, `10Mb/s`, `1G`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    parse_scaled(s, &["bps", "b/s", "bit/s", "bits/s"], RATE_SUFFIXES)
        .map_err(|e| bytes_per_second(s).unwrap_or(e))
        .and_then(|v| whole(s, v))
}

/// `v` rounded to a u64, or an error if it does not fit: `as` saturates,
/// and `--resumable-min 18446744073709551616` quietly meant `never` (F21).
fn whole(s: &str, v: f64) -> Result<u64, String> {
    let r = v.round();
    // 2^64 is the first f64 past u64::MAX.
    if r >= 18_446_744_073_709_551_616.0 {
        return Err(format!("'{s}' is too large (at most 2^64 - 1)"));
    }
    Ok(r as u64)
}

const SIZE_SUFFIXES: &str = "k, M, G, KiB, MiB, GiB";
const RATE_SUFFIXES: &str = "bits per second: k, M, G, e.g. 100M, 2.5G";

/// A rate typed in bytes per second (`10MB/s`, `1GB`): the error says so,
/// with the same rate in bits (`80M`); `None` if `s` is not one.
fn bytes_per_second(s: &str) -> Option<String> {
    let t = s.trim();
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_');
    let num = &t[..t.len() - unit.len()];
    let prefix = unit
        .strip_suffix("B/s")
        .or_else(|| unit.strip_suffix("Bps"))
        .or_else(|| unit.strip_suffix('B'))?;
    let bits = parse_scaled(&format!("{num}{prefix}"), &[], SIZE_SUFFIXES).ok()? * 8.0;
    Some(format!(
        "'{s}' is bytes per second; rates are bits per second: use {}",
        fmt_plain_rate(bits)
    ))
}

/// `80M`, `8G`, `1.5k`: a rate as --rate takes it.
fn fmt_plain_rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "G")
    } else if bps >= 1e6 {
        (bps / 1e6, "M")
    } else if bps >= 1e3 {
        (bps / 1e3, "k")
    } else {
        (bps, "")
    };
    let v = format!("{v:.3}");
    let v = v.trim_end_matches('0').trim_end_matches('.');
    format!("{v}{unit}")
}

fn parse_scaled(s: &str, units: &[&str], suffixes: &str) -> Result<f64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(split);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("'{s}' is not a number with an optional suffix ({suffixes})"))?;
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
                "unknown suffix '{other}' in '{s}' (use {suffixes})"
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
    fn too_large_is_an_error_not_the_largest() {
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("20000000000G").is_err());
        assert!(parse_rate("99999999999999999999G").is_err());
        assert_eq!(parse_size("1000000000G"), Ok(1_000_000_000_000_000_000));
    }

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

    #[test]
    fn rate_mistakes_are_named() {
        // A rate in bytes: said so, with the same rate in bits.
        for (typed, bits) in [("10MB/s", "80M"), ("1GB", "8G"), ("1.5MBps", "12M")] {
            let e = parse_rate(typed).unwrap_err();
            assert!(
                e.contains("bytes per second") && e.contains(bits),
                "{typed}: {e}"
            );
        }
        // Negative values, and suffixes for bits rather than bytes.
        assert_eq!(parse_rate("-1").unwrap_err(), "'-1' is negative");
        assert_eq!(parse_size("-5").unwrap_err(), "'-5' is negative");
        let e = parse_rate("10X").unwrap_err();
        assert!(e.contains("bits per second") && !e.contains("KiB"), "{e}");
        assert!(parse_size("10X").unwrap_err().contains("KiB"));
    }
}
