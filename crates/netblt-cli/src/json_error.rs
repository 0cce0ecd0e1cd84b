//! `--json` when a command fails with no transfer report to print (a file
//! that cannot be read, no receiver listening, a bad option found after
//! parsing): one JSON object with the error and its stable codes, where
//! the report would have gone (decision F26). Without it a script reading
//! `send --json` got an empty standard output and had only the exit code
//! and an English line on stderr.

use crate::exit::{self, CliError};

/// Where a command with `--json` (or `--json-stream`) prints its reports,
/// and so its error object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// `--json`: one object on standard output.
    Stdout,
    /// `--json-stream`: `{"event":"error","data":OBJECT}` on standard
    /// output, as iperf3's stream ends a failed run.
    Stream,
    /// Standard output carries data (`get -o -`, `recv --stdout`): the
    /// object on stderr, after `prefix` as that command's reports are.
    Stderr {
        /// What the command's reports on stderr start with.
        prefix: &'static str,
    },
}

/// The error object of `e`: `error` (the line the tool prints on stderr,
/// without `netblt: `), `error_kind`, and `peer_reason`, `peer_detail` and
/// `io_kind` when they apply, as a transfer report carries them. An error
/// not from the library has the kind its exit code says: 2
/// `invalid_options`, 3 `local` (with the `io_kind` its message says, as
/// the library reads an `Error::Local`), 4 `network`, else `other`.
pub fn object(e: &anyhow::Error) -> serde_json::Value {
    let kind = e
        .downcast_ref::<CliError>()
        .and_then(|c| c.kind.clone())
        .or_else(|| e.downcast_ref::<netblt::Error>().map(netblt::Error::kind));
    let line = format!("{e:#}");
    let mut o = serde_json::Map::new();
    o.insert("error".into(), line.clone().into());
    let rc = exit::code_of(e);
    // F28: a local error of the tool's own (a thread, a key file) says its
    // I/O kind as the library's `Error::Local` does: by an OS error's
    // "(os error N)" at its end, or the library's words.
    let kind = kind.or_else(|| (rc == exit::LOCAL).then(|| netblt::Error::Local(line).kind()));
    codes(&mut o, kind.as_ref(), rc);
    o.into()
}

/// The object of one file of several that failed before its transfer (it
/// could not be read) while the command goes on with the others: `name`,
/// then as [`object`].
pub fn file_object(name: &str, e: &netblt::Error) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    o.insert("name".into(), name.into());
    o.insert("error".into(), e.to_string().into());
    codes(&mut o, Some(&e.kind()), exit::of(e));
    o.into()
}

/// `error_kind`, `peer_reason`, `peer_detail`, `io_kind` of `kind`, else
/// the kind of the exit code `rc`.
fn codes(
    o: &mut serde_json::Map<String, serde_json::Value>,
    kind: Option<&netblt::ErrorKind>,
    rc: i32,
) {
    let Some(k) = kind else {
        let code = match rc {
            exit::USAGE => "invalid_options",
            exit::LOCAL => "local",
            exit::NETWORK => "network",
            _ => "other",
        };
        o.insert("error_kind".into(), code.into());
        return;
    };
    o.insert("error_kind".into(), k.code().into());
    if let Some(r) = k.peer_reason() {
        o.insert("peer_reason".into(), r.code().into());
        // F28: what the reason carries (`{"exists": ..}`,
        // `{"operation": ..}`), as a report's `peer_detail`.
        if let Some(d) = r.detail().and_then(|d| serde_json::to_value(d).ok()) {
            o.insert("peer_detail".into(), d);
        }
    }
    if let Some(io) = k.io_code() {
        o.insert("io_kind".into(), io.into());
    }
}

/// Prints `e`'s object to `sink`, unless its transfer's report (which
/// carries the same codes) was printed already.
pub fn print(sink: Sink, e: &anyhow::Error) {
    if e.downcast_ref::<CliError>().is_some_and(|c| c.reported) {
        return;
    }
    emit(sink, &object(e));
}

/// Prints an error object `v` to `sink`.
pub fn emit(sink: Sink, v: &serde_json::Value) {
    match sink {
        Sink::Stdout => println!("{v}"),
        Sink::Stream => println!("{}", serde_json::json!({ "event": "error", "data": v })),
        Sink::Stderr { prefix } => eprintln!("{prefix}{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_error_gives_its_codes() {
        let e: anyhow::Error =
            CliError::from(netblt::Error::Local("x.bin: file exists".into())).into();
        let v = object(&e);
        assert_eq!(v["error_kind"], "local");
        assert_eq!(v["io_kind"], "already_exists");
        assert!(v.get("peer_reason").is_none());
        assert_eq!(v["error"], "x.bin: file exists");
    }

    #[test]
    fn a_tool_error_gives_its_exit_codes_kind() {
        let usage: anyhow::Error = CliError::usage("give files and a HOST[:PORT]").into();
        assert_eq!(object(&usage)["error_kind"], "invalid_options");
        let net: anyhow::Error = CliError::new(exit::NETWORK, "cannot resolve 'x'").into();
        assert_eq!(object(&net)["error_kind"], "network");
        let other = anyhow::anyhow!("something else");
        assert_eq!(object(&other)["error_kind"], "other");
        // A refusal's reason is a code too.
        let refused = CliError::new(exit::FAILED, "refused").with_kind(Some(
            netblt::ErrorKind::RefusedByPeer(netblt::PeerReason::FileExists),
        ));
        let v = object(&refused.into());
        assert_eq!(v["error_kind"], "refused_by_peer");
        assert_eq!(v["peer_reason"], "file_exists");
        assert!(v.get("peer_detail").is_none(), "{v}");
        // F28: a local error of the tool's own with an OS error in hand.
        let io = std::io::Error::from_raw_os_error(libc::EAGAIN);
        let thread: anyhow::Error = CliError::new(exit::LOCAL, format!("thread: {io}")).into();
        let v = object(&thread);
        assert_eq!(v["error_kind"], "local", "{v}");
        assert_eq!(v["io_kind"], "other", "{v}");
        let words: anyhow::Error = CliError::new(exit::LOCAL, "key files: x").into();
        assert!(object(&words).get("io_kind").is_none());
    }

    /// F28: a peer's reason's data in `peer_detail`, as in a report: the
    /// operation an older peer does not know (the tool handles `bundle`
    /// itself, so no run of it ends so: this is the object's only test),
    /// and whether some of a bundle's entries exist there.
    #[test]
    fn a_peer_reasons_data_is_its_detail() {
        use netblt::{ErrorKind, PeerReason};
        let op = CliError::new(exit::FAILED, "unknown operation 'same'").with_kind(Some(
            ErrorKind::RefusedByPeer(PeerReason::UnknownOperation("same".into())),
        ));
        let v = object(&op.into());
        assert_eq!(v["peer_reason"], "unknown_operation", "{v}");
        assert_eq!(v["peer_detail"], serde_json::json!({ "operation": "same" }));
        let stored =
            CliError::new(exit::FAILED, "1 of 2 entries could not be stored").with_kind(Some(
                ErrorKind::AbortedByPeer(PeerReason::EntriesNotStored { exists: false }),
            ));
        let v = object(&stored.into());
        assert_eq!(
            v["peer_detail"],
            serde_json::json!({ "exists": false }),
            "{v}"
        );
    }
}
