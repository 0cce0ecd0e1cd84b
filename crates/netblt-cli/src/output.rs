//! A transfer's report as the tool prints it: one line for people, or a row
//! of RFC 1030's appendix tables.

use netblt::{Direction, TransferReport};

use crate::units::{fmt_bytes, fmt_rate};

/// `text` with its control characters escaped (`\u{1b}`, `\n`): a line
/// that carries what a peer sent (a file name, a reason) must not move the
/// cursor, recolour or clear the terminal of whoever runs the receiver.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// [`shown`] for a message of several lines: each line escaped, the line
/// breaks kept (a bundle's failures come one per line).
pub fn shown_lines(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(|c| c.is_control() && c != '\n') {
        text.split('\n')
            .map(shown)
            .collect::<Vec<_>>()
            .join("\n")
            .into()
    } else {
        text.into()
    }
}

/// One line for people.
pub fn line(r: &TransferReport) -> String {
    let arrow = if r.direction == Direction::Send {
        "->"
    } else {
        "<-"
    };
    // A bundle: its files and directories, then the stream's length.
    let files = r.files.as_ref().map_or(String::new(), |f| {
        // Files already there: the receiver's found the same byte for byte
        // (M13), the sender's left out after asking (M14).
        let unchanged = if f.unchanged > 0 {
            format!(
                "; {} already there, unchanged ({})",
                f.unchanged,
                fmt_bytes(f.unchanged_bytes)
            )
        } else {
            String::new()
        };
        format!(
            "{} and {} ({}){unchanged}, as ",
            counted(f.files, "file", "files"),
            counted(f.dirs, "directory", "directories"),
            fmt_bytes(f.bytes)
        )
    });
    match &r.error {
        // `--resume` of a file the receiver already had whole.
        None if r.digest.is_none() && r.resumed_from == Some(r.bytes) => format!(
            "{} {arrow} {}: {} already there (same size and modification time): nothing sent",
            r.name,
            r.peer,
            fmt_bytes(r.bytes)
        ),
        None => format!(
            "{} {arrow} {}: {files}{} in {:.2} s, {}{}, {}{}",
            r.name,
            r.peer,
            fmt_bytes(r.bytes),
            r.wall_time_s,
            shown_rate(r, r.real_throughput_bps),
            // Only the data sender knows when the last new data left, so a
            // receiver never has a steady rate: no "(steady -)" on every
            // receiver's line (F18).
            match r.steady_throughput_bps {
                Some(b) if r.bytes > 0 => format!(" (steady {})", fmt_rate(b)),
                _ => String::new(),
            },
            // No digest: an encrypted memory-to-memory test, whose every
            // packet was authenticated instead (decision K16).
            r.digest.as_deref().map_or_else(
                || "authenticated per packet (no digest)".to_string(),
                |d| format!("verified, blake3 {}", d.get(..16).unwrap_or(d))
            ),
            if r.retransmitted > 0 || r.lost > 0 {
                format!(", {} lost, {} resent", r.lost, r.retransmitted)
            } else {
                String::new()
            } + &r.resumed_from.map_or(String::new(), |f| format!(
                ", resumed: {} were already there",
                fmt_bytes(f)
            ))
        ),
        Some(e) => format!("{} {arrow} {}: FAILED: {e}", r.name, r.peer),
    }
}

/// A throughput as the report lines show it: "-" when unknown, or when
/// no data moved (an empty file's "0 B in 0.01 s, 28.6 kb/s" was the
/// digest's and the handshake's bytes over the handshake's time).
pub fn shown_rate(r: &TransferReport, bps: Option<f64>) -> String {
    match bps {
        Some(b) if r.bytes > 0 => fmt_rate(b),
        _ => "-".into(),
    }
}

/// "why: ..." : what limited the transfer (the library's diagnosis), when
/// one was made, and the flags of the setting it names (the library names
/// its own, F25).
pub fn why(r: &TransferReport) -> Option<String> {
    r.limit
        .as_ref()
        .map(|d| format!("why: {}{}", d.message, flags(d.setting)))
}

/// The tool's flags for a setting a diagnosis names.
fn flags(setting: Option<netblt::LimitSetting>) -> &'static str {
    use netblt::LimitSetting as S;
    match setting {
        Some(S::FixedRate) => " (--policy fixed, --rate)",
        Some(S::Rate) => " (--rate)",
        Some(S::LiveRate) => " (--rate-file)",
        Some(S::BufferSize) => " (--buffer-size)",
        Some(S::Buffers) => " (--buffers, --buffer-size)",
        _ => "",
    }
}

/// On a terminal, after a transfer that met its receiver for the first time
/// (trust on first use): its key is now in known_hosts, as ssh says
/// "Permanently added". Only for a person watching: scripts have the JSON's
/// `security.pinned`, and a line on every first contact would change the
/// standard error that scripts read.
pub fn first_contact(r: &TransferReport, json: bool) {
    use std::io::IsTerminal;
    let Some(s) = r.security.as_ref().filter(|s| s.pinned) else {
        return;
    };
    if json || !std::io::stderr().is_terminal() {
        return;
    }
    eprintln!(
        "netblt: first contact with {}: its key {} is now in known_hosts; another key from there will be refused",
        shown(&r.peer),
        s.peer.as_deref().unwrap_or("-")
    );
}

/// The RFC 1030 appendix row (`commands::sim::TABLE_HEADER`'s columns).
pub fn table_row(r: &TransferReport) -> String {
    let speed = r
        .steady_throughput_bps
        .map_or_else(|| "-".to_string(), |b| format!("{:.3}", b / 1e6));
    format!(
        "{:<8} {:<6} {:<8} {:<6} {:<6} {:<6} {:<6} {:<6} {}",
        format!("{}/{}", r.burst_size, r.burst_interval_ms),
        r.packet_size,
        r.buffer_size,
        r.bytes / 1000,
        r.buffers,
        r.lost,
        r.retransmitted,
        r.data_timeouts,
        speed
    )
}

/// A bundle's entries that failed, one line each on stderr ("netblt:
/// NAME: {label}REASON"), then how many more were not listed ("... and N
/// more {more}"). An entry this end did not replace (its kind
/// `AlreadyExists`) gets `force`, the advice for this end (F25).
/// Names and reasons are escaped: they may come from the peer (a served
/// tree's entries, a receiver's reasons).
pub fn print_failed(f: &netblt::FilesReport, label: &str, more: &str, force: Option<&str>) {
    for x in &f.failed {
        let advice = match (x.io, force) {
            (Some(std::io::ErrorKind::AlreadyExists), Some(a)) => a,
            _ => "",
        };
        eprintln!(
            "netblt: {}: {label}{}{advice}",
            shown(&x.name),
            shown(&x.reason)
        );
    }
    if f.more_failed > 0 {
        eprintln!("netblt: ... and {} more {more}", f.more_failed);
    }
}

/// A bundle that failed: the error's first line after `name` (`said`: the
/// error as [`told`] says it), and the peer's lines (one per entry it could
/// not store) indented below it, on stderr, then `hint` on a line of its
/// own; returns the exit code. A network error is returned as an error
/// instead (nothing more will get through), the hint as its second line.
/// The peer's lines are escaped.
pub fn bundle_error(
    name: &str,
    e: &netblt::Error,
    said: &str,
    hint: Option<&str>,
) -> anyhow::Result<i32> {
    let mut lines = said.lines().map(shown);
    let first = format!("{}: {}", shown(name), lines.next().unwrap_or_default());
    let rc = crate::exit::of(e);
    if rc == crate::exit::NETWORK {
        // Its report was printed (F26: no `--json` error object after it).
        return Err(crate::exit::CliError::new(rc, with_hint(first, hint))
            .reported()
            .into());
    }
    eprintln!("netblt: {first}");
    for l in lines {
        eprintln!("netblt:   {l}");
    }
    if let Some(h) = hint {
        eprintln!("netblt: {h}");
    }
    Ok(rc)
}

/// `line`, then `hint` as a second `netblt:` line (the tool prints an
/// error's lines each with the prefix).
pub fn with_hint(line: String, hint: Option<&str>) -> String {
    match hint {
        Some(h) => format!("{line}\nnetblt: {h}"),
        None => line,
    }
}

/// Whether a transfer that failed as `report` says leaves the receiving end its
/// partial copy (decision F4): an interruption at either end (Ctrl-C, "aborted
/// by peer: receiver interrupted"), the death timer (the peer went silent)
/// and a network error (the peer went away) keep it; an integrity failure,
/// a full disk or a write error remove it, and a refusal made none. Only
/// then does "--resume sends only the rest" hold (F18: every interruption
/// but the sender's own Ctrl-C left a partial copy and no word of it).
/// The library's kind of the failure says it (F20), not its words.
pub fn partial_kept(report: &netblt::TransferReport) -> bool {
    report
        .error_kind()
        .is_some_and(|k| netblt::ErrorKind::partial_kept(&k))
}

/// `e` as the tool says it: the library's words, then the tool's advice
/// for its `kind` (the flag to use), which a library's message does not
/// give (F20, F25). For a command that sends (`send`, `bench`, and any
/// error before a transfer): see [`told_fetching`] for `get`.
pub fn told(e: &netblt::Error, kind: Option<netblt::ErrorKind>) -> String {
    format!("{e}{}", advice(kind, false))
}

/// [`told`] for `get`, the receiving end: `--force` is its own.
pub fn told_fetching(e: &netblt::Error, kind: Option<netblt::ErrorKind>) -> String {
    format!("{e}{}", advice(kind, true))
}

/// The tool's advice for a failure of `kind`, at a receiving end
/// (`fetching`: `get`) or not.
fn advice(kind: Option<netblt::ErrorKind>, fetching: bool) -> &'static str {
    use netblt::{ErrorKind as K, PeerReason as P};
    match kind {
        // A `get --resume` whose complete copy is not the server's file.
        Some(K::RefusedByPeer(P::FileExists)) if fetching => ": use --force to replace it",
        Some(K::RefusedByPeer(P::FileExists)) => " (use --force on the receiver)",
        // `get` to a file that is there.
        Some(K::Local {
            io: Some(std::io::ErrorKind::AlreadyExists),
        }) if fetching => " (use --force to overwrite)",
        Some(K::RefusedByPeer(P::CodeRequired)) => ": use --code",
        Some(K::RefusedByPeer(P::CodeNotExpected)) => ": start the receiver with --code",
        Some(K::PacketTooLarge) => ": use a smaller --packet-size",
        Some(K::RefusedByPeer(P::ReadingNotEnabled)) => " (start the receiver with --serve)",
        Some(K::RefusedByPeer(P::NotAuthorized)) => {
            " (add the sender's `netblt id` line to the receiver's authorized_keys, or run recv \
             --accept-any)"
        }
        Some(K::RefusedByPeer(P::EncryptionRequired)) => ": run the sender without --insecure",
        Some(K::RefusedByPeer(P::PeerInsecure)) => {
            ": add --insecure on the sender, or drop it on the receiver"
        }
        _ => "",
    }
}

/// After a bundle's entries a receiver did not store: how to replace those
/// that exist there (F25: its lines no longer say it).
pub fn not_stored_hint(name: &str, kind: Option<&netblt::ErrorKind>) -> Option<String> {
    use netblt::{ErrorKind as K, PeerReason as P};
    matches!(
        kind,
        Some(K::AbortedByPeer(P::EntriesNotStored { exists: true }))
    )
    .then(|| {
        format!(
            "{}: the receiver keeps the files it has that differ (use --force on the receiver \
             to replace them)",
            shown(name)
        )
    })
}

/// "1 file", "2 files".
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_file_is_not_files() {
        assert_eq!(super::counted(1, "file", "files"), "1 file");
        assert_eq!(super::counted(0, "file", "files"), "0 files");
        assert_eq!(
            super::counted(2, "directory", "directories"),
            "2 directories"
        );
    }

    #[test]
    fn only_interruptions_keep_a_partial_copy() {
        use netblt::{ErrorKind, PeerReason};
        let wire = |r: &str| ErrorKind::AbortedByPeer(PeerReason::from_wire(r));
        for kept in [
            ErrorKind::Cancelled,
            wire("receiver interrupted"),
            wire("interrupted by the user"),
            ErrorKind::PeerSilent,
            ErrorKind::Network,
        ] {
            assert!(kept.partial_kept(), "{kept:?}");
        }
        for gone in [
            wire("disk full (ENOSPC)"),
            ErrorKind::Integrity,
            ErrorKind::RefusedByPeer(PeerReason::from_wire(
                "file exists (use --force on the receiver)",
            )),
            ErrorKind::Local {
                io: Some(std::io::ErrorKind::PermissionDenied),
            },
        ] {
            assert!(!gone.partial_kept(), "{gone:?}");
        }
    }

    /// F25: the library's words name no flag; the tool adds the one to use
    /// from the kind, for the end it runs at.
    #[test]
    fn the_advice_names_the_flag_for_this_end() {
        use super::advice;
        use netblt::{ErrorKind as K, PeerReason as P};
        let refused = |r: &str| Some(K::RefusedByPeer(P::from_wire(r)));
        let exists = Some(K::Local {
            io: Some(std::io::ErrorKind::AlreadyExists),
        });
        assert_eq!(advice(exists.clone(), true), " (use --force to overwrite)");
        assert_eq!(advice(exists, false), "");
        assert_eq!(
            advice(refused("file exists"), false),
            " (use --force on the receiver)"
        );
        // A `get --resume` whose copy differs: this end's --force.
        let differs = "the complete copy at the client differs from the server's file (size or \
             modification time)";
        assert_eq!(
            advice(refused(differs), true),
            ": use --force to replace it"
        );
        for (wire, said) in [
            ("this receiver waits for a one-time code", ": use --code"),
            (
                "this receiver waits for a one-time code: use send --code",
                ": use --code",
            ),
            (
                "this receiver takes no one-time code",
                ": start the receiver with --code",
            ),
            (
                "this receiver takes no one-time code: run recv --code",
                ": start the receiver with --code",
            ),
        ] {
            assert_eq!(advice(refused(wire), false), said, "{wire}");
        }
        assert_eq!(
            advice(Some(K::PacketTooLarge), false),
            ": use a smaller --packet-size"
        );
        assert_eq!(advice(Some(K::Network), false), "");
        // The error as told: the library's words, then the advice.
        let e = netblt::Error::Local("/tmp/x: file exists".into());
        assert_eq!(
            super::told_fetching(&e, Some(e.kind())),
            "/tmp/x: file exists (use --force to overwrite)"
        );
        // A bundle's receiver that kept files of the names: one hint.
        let list =
            "1 of 3 entries could not be stored at the receiver\nt/b: file exists and differs";
        let kind = K::AbortedByPeer(P::from_wire(list));
        assert!(super::not_stored_hint("t", Some(&kind)).is_some());
        let other = K::AbortedByPeer(P::from_wire(
            "1 of 3 entries could not be stored at the receiver\nt/b: permission denied",
        ));
        assert_eq!(super::not_stored_hint("t", Some(&other)), None);
    }

    #[test]
    fn a_diagnosis_setting_is_said_as_the_tools_flags() {
        use netblt::LimitSetting as S;
        assert_eq!(super::flags(Some(S::Rate)), " (--rate)");
        assert_eq!(
            super::flags(Some(S::FixedRate)),
            " (--policy fixed, --rate)"
        );
        assert_eq!(super::flags(Some(S::LiveRate)), " (--rate-file)");
        assert_eq!(super::flags(Some(S::BufferSize)), " (--buffer-size)");
        assert_eq!(
            super::flags(Some(S::Buffers)),
            " (--buffers, --buffer-size)"
        );
        assert_eq!(super::flags(None), "");
    }

    #[test]
    fn a_peers_control_characters_are_escaped() {
        use super::shown;
        assert_eq!(shown("f.bin"), "f.bin");
        assert_eq!(shown("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
        assert_eq!(shown("résumé.txt"), "résumé.txt");
        use super::shown_lines;
        assert_eq!(shown_lines("a\nb"), "a\nb");
        assert_eq!(shown_lines("a: x\u{1b}[31m\nb\r"), "a: x\\u{1b}[31m\nb\\r");
    }
}
