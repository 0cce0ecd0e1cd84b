//! Parsing and printing of sizes, lists of sizes, host targets and rates.
//!
//! Byte suffixes follow the rule of the whole `netblt` tool (README, "Using it"): `k`, `M`,
//! `G`, `T` (optionally with `B`) are powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` (or `Ki`,
//! `Mi`, ...) powers of 1024, so `netblt load --size 1MB` and `netblt sim --size 1MB` mean the
//! same. Rates are printed with decimal (SI) prefixes, as network rates are.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::ops::RangeInclusive;
use std::str::FromStr;

use crate::protocol::DEFAULT_PORT;

/// Parses a byte count such as `1024`, `1k`, `64KiB`, `1MB`, `1.5M` or `2GiB`: decimal
/// suffixes are powers of 1000, `Ki`/`KiB`-style ones powers of 1024.
///
/// # Errors
/// A message naming the bad text when it is not a number with a known suffix, or overflows.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "`{text}`: expected a number of bytes, e.g. 1024 or 1MB"
        ));
    }
    let multiplier: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use k, M, G, T for powers of 1000, KiB, MiB, GiB, TiB for powers of 1024)"
            ))
        }
    };
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(multiplier)
            .ok_or_else(|| format!("`{text}`: too large"));
    }
    let f: f64 = num.parse().map_err(|_| format!("`{text}`: not a number"))?;
    let bytes = (f * multiplier as f64).round();
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("`{text}`: out of range"));
    }
    Ok(bytes as u64)
}

/// A byte count given on the command line (`1MB`, `256M`, `4096`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_bytes(s).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

/// A list of message sizes: `84,85` replaces the defaults, `+84,85` adds to them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeSpec {
    /// True when the list began with `+`: keep the defaults and add these.
    pub extend: bool,
    /// The sizes as written (binary suffixes allowed).
    pub sizes: Vec<usize>,
}

impl SizeSpec {
    /// The final list: defaults plus or replaced by ours, sorted ascending without repeats.
    pub fn resolve(&self, defaults: &[usize]) -> Vec<usize> {
        let mut out: Vec<usize> = if self.extend {
            defaults.iter().chain(&self.sizes).copied().collect()
        } else {
            self.sizes.clone()
        };
        out.sort_unstable();
        out.dedup();
        out
    }
}

impl FromStr for SizeSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (extend, list) = match s.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let mut sizes = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let n = parse_bytes(item)?;
            sizes.push(usize::try_from(n).map_err(|_| format!("`{item}`: too large"))?);
        }
        if sizes.is_empty() {
            return Err("expected a comma-separated list of sizes, e.g. 1,16,1K".into());
        }
        Ok(SizeSpec { extend, sizes })
    }
}

/// A range of process counts for `load --sweep`: `1..14` and `1..=14` are both inclusive
/// (the XUNET table ran 1 to 14 processes); a single number means just that count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcRange(pub RangeInclusive<usize>);

impl FromStr for ProcRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}`: expected a range of process counts like 1..14");
        let s = s.trim();
        let (lo, hi) = match s.split_once("..") {
            Some((lo, hi)) => (lo, hi.strip_prefix('=').unwrap_or(hi)),
            None => (s, s),
        };
        let lo: usize = lo.trim().parse().map_err(|_| bad())?;
        let hi: usize = hi.trim().parse().map_err(|_| bad())?;
        if lo > hi {
            return Err(format!("`{s}`: the range is empty ({lo} > {hi})"));
        }
        if hi > MAX_PROCS {
            return Err(format!("`{s}`: at most {MAX_PROCS} processes"));
        }
        Ok(ProcRange(lo..=hi))
    }
}

/// Upper bound on concurrent transfers, to keep a typo from spawning a million threads.
pub const MAX_PROCS: usize = 1024;

/// A measurement target `HOST[:PORT]`, resolved once; the port defaults to 7007.
///
/// When a name resolves to both IPv4 and IPv6 we take IPv4 first, because `netblt echo`
/// listens on 127.0.0.1 by default and `localhost` often resolves to `::1` first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target(pub SocketAddr);

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        resolve_target(s).map(Target)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Resolves `HOST[:PORT]` (also `[v6]:port` and a bare IPv6 address) to one socket address.
///
/// # Errors
/// A one-line message when the text is empty, the port is bad or the name does not resolve.
pub fn resolve_target(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty target: expected HOST[:PORT]".into());
    }
    if let Ok(sa) = t.parse::<SocketAddr>() {
        return Ok(sa);
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    let lookup = match t.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("`{t}`: bad port `{port}`"))?;
            (
                host.trim_matches(|c| c == '[' || c == ']').to_string(),
                port,
            )
        }
        _ => (t.to_string(), DEFAULT_PORT),
    };
    let addrs: Vec<SocketAddr> = lookup
        .to_socket_addrs()
        .map_err(|e| format!("`{t}`: cannot resolve: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("`{t}`: name has no addresses"))
}

/// `1536` -> `1.5 KiB`, `1048576` -> `1 MiB`, `100` -> `100 B`.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    let u = UNITS.get(unit).copied().unwrap_or("B");
    if unit == 0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0} {u}")
    } else {
        format!("{v:.1} {u}")
    }
}

/// A value with an SI prefix and three significant digits: `48800.0` -> `48.8 K`.
///
/// RFC 415 prints rates exactly this way ("48.8K" baud); we add the space and the unit.
pub fn format_si(value: f64) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    const PREFIXES: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")];
    let (scaled, prefix) = PREFIXES
        .iter()
        .find(|(scale, _)| value.abs() >= *scale)
        .map(|(scale, p)| (value / scale, *p))
        .unwrap_or((value, ""));
    let digits = if scaled.abs() >= 100.0 {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$} {prefix}")
}

/// `v` with about four significant digits, switching to exponent form for very small or
/// very large magnitudes: `54.8374` -> `54.84`, `0.00002026` -> `2.026e-5`.
pub fn format_sig(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor();
    if !(-3.0..6.0).contains(&mag) {
        return format!("{v:.3e}");
    }
    let decimals = (3.0 - mag).max(0.0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_with_decimal_and_binary_suffixes() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("1K"), Ok(1000));
        assert_eq!(parse_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_bytes("64Ki"), Ok(65536));
        assert_eq!(parse_bytes("1MB"), Ok(1_000_000));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1.5M"), Ok(1_500_000));
        assert_eq!(parse_bytes("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_bytes(" 2 G "), Ok(2_000_000_000));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("MB").is_err());
        assert!(parse_bytes("12Q").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("99999999999999999999T").is_err());
    }

    #[test]
    fn size_spec_adds_or_replaces() {
        let defaults = [1, 2, 16];
        let add: SizeSpec = "+84,85,2".parse().unwrap();
        assert!(add.extend);
        assert_eq!(add.resolve(&defaults), vec![1, 2, 16, 84, 85]);
        let replace: SizeSpec = "85,84".parse().unwrap();
        assert_eq!(replace.resolve(&defaults), vec![84, 85]);
        let units: SizeSpec = "64,256,1KiB,4KiB,16KiB,64KiB".parse().unwrap();
        assert_eq!(units.sizes, vec![64, 256, 1024, 4096, 16384, 65536]);
        assert!("".parse::<SizeSpec>().is_err());
        assert!("+".parse::<SizeSpec>().is_err());
        assert!("1,x".parse::<SizeSpec>().is_err());
    }

    #[test]
    fn proc_ranges_are_inclusive() {
        assert_eq!("1..14".parse::<ProcRange>(), Ok(ProcRange(1..=14)));
        assert_eq!("0..=3".parse::<ProcRange>(), Ok(ProcRange(0..=3)));
        assert_eq!("5".parse::<ProcRange>(), Ok(ProcRange(5..=5)));
        assert!("3..1".parse::<ProcRange>().is_err());
        assert!("a..b".parse::<ProcRange>().is_err());
        assert!("1..100000".parse::<ProcRange>().is_err());
    }

    #[test]
    fn targets_default_to_port_7007() {
        assert_eq!(
            resolve_target("127.0.0.1"),
            Ok("127.0.0.1:7007".parse().unwrap())
        );
        assert_eq!(
            resolve_target("127.0.0.1:9"),
            Ok("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(resolve_target("::1"), Ok("[::1]:7007".parse().unwrap()));
        assert_eq!(resolve_target("[::1]:8"), Ok("[::1]:8".parse().unwrap()));
        assert_eq!(resolve_target("localhost:7008").map(|a| a.port()), Ok(7008));
        assert!(resolve_target("").is_err());
        assert!(resolve_target("localhost:notaport").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_bytes(1 << 20), "1 MiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_si(48_800.0), "48.8 K");
        assert_eq!(format_si(2066.9), "2.07 K");
        assert_eq!(format_si(22.4e9), "22.4 G");
        assert_eq!(format_si(5.0), "5.00 ");
        assert_eq!(format_si(f64::NAN), "-");
        assert_eq!(format_sig(54.8374), "54.84");
        assert_eq!(format_sig(0.020257), "0.02026");
        assert_eq!(format_sig(0.00002026), "2.026e-5");
        assert_eq!(format_sig(-1.5), "-1.500");
        assert_eq!(format_sig(0.0), "0");
    }
}
