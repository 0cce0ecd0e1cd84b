//! `--rate-file FILE`: the rate limits of a running transfer, read from a
//! file the user (or a script, or cron) rewrites while it runs (decision
//! R27). `echo 20M > limits` slows the transfer down within a quarter of a
//! second; `echo none > limits` gives it the path back.
//!
//! The file holds the maximum and, optionally, the minimum, in the units of
//! `--rate` (`20M`, `1.5G`, `800k`); `none` (or an empty file) is no
//! maximum. Lines starting with `#` are comments.

use std::path::{Path, PathBuf};
use std::time::Duration;

use netblt::{RateControl, RateLimits};

use crate::exit::CliError;
use crate::units::parse_rate;

/// How often the file is looked at.
const POLL: Duration = Duration::from_millis(250);

/// The limits a file's text gives.
pub fn parse(text: &str) -> Result<RateLimits, String> {
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .collect();
    let max_bps = match words.first() {
        None => None,
        Some(w) if w.eq_ignore_ascii_case("none") => None,
        Some(w) => match parse_rate(w)? {
            0 => return Err("a maximum of 0 would stop the transfer; give a rate or none".into()),
            r => Some(r),
        },
    };
    let min_bps = match words.get(1) {
        None => 0,
        Some(w) => parse_rate(w)?,
    };
    if words.len() > 2 {
        return Err(format!(
            "'{}': expected MAX [MIN], e.g. 20M or 100M 5M",
            words.join(" ")
        ));
    }
    Ok(RateLimits { min_bps, max_bps })
}

fn read(path: &Path) -> Result<RateLimits, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text)
}

/// Reads `path` now (a bad file is a usage error: one line, exit 2), then
/// follows it on a thread for as long as the process runs. A later bad
/// version is reported on standard error and the limits stay as they were.
pub fn watch(path: &Path) -> Result<RateControl, CliError> {
    let shown = path.display();
    let first = read(path).map_err(|e| CliError::usage(format!("--rate-file {shown}: {e}")))?;
    let control = RateControl::new();
    control.set(first);
    let (c, path) = (control.clone(), PathBuf::from(path));
    std::thread::Builder::new()
        .name("netblt-rate-file".into())
        .spawn(move || follow(&path, &c, first))
        .map_err(|e| {
            CliError::new(crate::exit::LOCAL, format!("thread: {e}"))
                .with_kind(Some(netblt::ErrorKind::Local { io: Some(e.kind()) }))
        })?;
    Ok(control)
}

fn follow(path: &Path, control: &RateControl, mut current: RateLimits) {
    // The last problem reported, so a file left broken is reported once.
    let mut reported: Option<String> = None;
    loop {
        std::thread::sleep(POLL);
        match read(path) {
            Ok(l) => {
                reported = None;
                if l != current {
                    current = l;
                    control.set(l);
                }
            }
            Err(e) if reported.as_deref() != Some(e.as_str()) => {
                eprintln!(
                    "netblt: --rate-file {}: {e}; the limits stay as they were",
                    path.display()
                );
                reported = Some(e);
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_gives_a_maximum_and_an_optional_minimum() {
        let l = |max: Option<u64>, min: u64| RateLimits {
            min_bps: min,
            max_bps: max,
        };
        assert_eq!(parse("20M\n"), Ok(l(Some(20_000_000), 0)));
        assert_eq!(
            parse("# night\n1.5G 100M"),
            Ok(l(Some(1_500_000_000), 100_000_000))
        );
        assert_eq!(parse("none 5M"), Ok(l(None, 5_000_000)));
        assert_eq!(parse(""), Ok(l(None, 0)));
        assert_eq!(parse("  \n# nothing\n"), Ok(l(None, 0)));
        assert!(parse("fast").is_err());
        assert!(parse("0").is_err());
        assert!(parse("10M 1M 2M").is_err());
    }
}
