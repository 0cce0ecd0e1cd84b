//! Many files in one transfer: a *bundle*.
//!
//! `netblt send DIR HOST` (or several files) no longer opens one NETBLT
//! connection per file: the sender walks the tree ([`walk`]), and a reader
//! ([`pack::Packer`]) turns it on the fly into one tar stream ([`format`]),
//! which travels as a stream of unknown length, exactly as `send -` does
//! (the end-to-end BLAKE3 digest follows it and is checked before the last
//! OK). The receiver parses the stream as it arrives and writes each file
//! ([`unpack::Unpacker`]), safely: names are checked, every directory is
//! opened without following links ([`at`]), files go to temporary names.
//!
//! # What a bundle guarantees
//!
//! * Nothing is written outside the receiver's directory: absolute names,
//!   `..`, links and devices in the stream are refused (per entry), and a
//!   link already in the destination is never followed.
//! * No file appears under its final name before the whole stream's digest
//!   has been checked: a directory the stream makes is made as
//!   `.<name>.<tag>.netblt-bundle` and filled under its own names inside;
//!   a file going into a directory that already existed is written to
//!   `.<name>.<tag>.netblt-bundle` there. Then the file system is flushed
//!   once (`syncfs`), each new tree lands with one rename and each other
//!   file with its own (never over an existing file without `--force`),
//!   the directories get their modes and times, and a second flush
//!   follows. There is no `fsync` per file (decisions M3, M11).
//! * Each file keeps its modification time (with nanoseconds) and
//!   permission bits, like `rsync -t -p`; directories too.
//! * A file that cannot be stored (a name too long, permission denied, a
//!   file in the way) is reported and the others go on; the receiver then
//!   ends the connection with a QUIT whose reason lists the failures, so
//!   both ends exit non-zero with one line per failure. A full disk or a
//!   read-only file system ends the whole transfer.
//!
//! What a crash of the receiver leaves: temporary `.*.netblt-bundle` files
//! and directories (never a file under its final name with the wrong bytes)
//! and the directories made inside directories that existed. A failed
//! transfer removes both. A bundle cannot be resumed: the tool therefore
//! takes a directory's large files out of it
//! ([`Bundle::split_resumable`], decision F19) and sends each after it as
//! a single file, whose partial copy an interruption keeps.

pub(crate) mod at;
pub(crate) mod format;
pub(crate) mod pack;
pub(crate) mod serve;
pub(crate) mod tally;
pub(crate) mod unpack;
pub(crate) mod walk;

use serde::Serialize;

pub use walk::Bundle;

/// Longest name (and reason) a [`FileFailure`] keeps, in bytes.
const SHOWN_NAME: usize = 256;

/// An entry that could not be sent or stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FileFailure {
    /// The entry's name in the bundle (`dir/rel/path`).
    pub name: String,
    /// Why, in a few words ("permission denied", "name too long for the
    /// receiver's file system", "symbolic links are not accepted").
    pub reason: String,
    /// The I/O error's kind, when the failure was one at this end:
    /// `AlreadyExists` for a file that is there (and differs), which is
    /// replaced only with `overwrite`; `PermissionDenied`, `NotFound`, ...
    /// `None` for a refusal, and for what a peer said in words. In the
    /// JSON form as `io_kind`, its stable code
    /// ([`io_kind_code`](crate::io_kind_code): `"already_exists"`, ...),
    /// left out when `None` (F26).
    #[serde(
        rename = "io_kind",
        serialize_with = "crate::error_code::io_kind_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub io: Option<std::io::ErrorKind>,
}

impl FileFailure {
    /// The name and the reason are shortened to [`SHOWN_NAME`] bytes (a
    /// hostile stream may name entries with kilobytes each, a hostile
    /// server give kilobytes of reason for what it did not send (M15), and
    /// up to a thousand failures are kept and printed).
    pub(crate) fn new(name: impl Into<String>, reason: impl Into<String>) -> FileFailure {
        FileFailure {
            name: shortened(name.into()),
            reason: shortened(reason.into()),
            io: None,
        }
    }

    /// The same, for an I/O error `e` ([`io_reason`](crate::app::io_reason)
    /// says it).
    pub(crate) fn io(name: impl Into<String>, e: &std::io::Error) -> FileFailure {
        FileFailure {
            io: Some(e.kind()),
            ..FileFailure::new(name, crate::app::io_reason(e))
        }
    }

    /// An entry whose file is there already and is not replaced (it
    /// differs, or took the name meanwhile: `reason`).
    pub(crate) fn exists(name: impl Into<String>, reason: &str) -> FileFailure {
        FileFailure {
            io: Some(std::io::ErrorKind::AlreadyExists),
            ..FileFailure::new(name, reason)
        }
    }
}

/// `s` cut to [`SHOWN_NAME`] bytes on a character boundary, marked `…`.
fn shortened(mut s: String) -> String {
    if s.len() > SHOWN_NAME {
        let mut cut = SHOWN_NAME;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

impl std::fmt::Display for FileFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)
    }
}

/// What a bundle moved ([`TransferReport::files`](crate::TransferReport::files)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FilesReport {
    /// Regular files sent (sender) or stored (receiver).
    pub files: u64,
    /// Directories sent or made.
    pub dirs: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// Entries that failed: skipped by the sender (unreadable), or not
    /// stored by the receiver. At most [`FilesReport::MAX_LISTED`] are
    /// listed; `more_failed` counts the rest.
    pub failed: Vec<FileFailure>,
    /// Failures beyond those listed.
    pub more_failed: u64,
    /// Sender: symbolic links, devices, sockets and FIFOs inside the
    /// directories, which are never sent. A client fetching a directory
    /// ([`get`](crate::get)): those the server left out, as it said.
    pub not_regular: u64,
    /// Files already at the receiver, not counted in `files`. Receiver:
    /// those that were there with the same bytes, left as they were (M13).
    /// Sender: those [`skip_same`](crate::skip_same) left out, since the
    /// receiver had them with the same size and modification time (M14).
    pub unchanged: u64,
    /// Bytes of those files.
    pub unchanged_bytes: u64,
}

impl FilesReport {
    /// Failures listed one by one; beyond, only counted.
    pub const MAX_LISTED: usize = 1000;

    /// All failures, listed or not.
    pub fn failures(&self) -> u64 {
        self.failed.len() as u64 + self.more_failed
    }

    pub(crate) fn fail(&mut self, f: FileFailure) {
        if self.failed.len() < Self::MAX_LISTED {
            self.failed.push(f);
        } else {
            self.more_failed += 1;
        }
    }

    /// "N of M entries could not be stored": the first line of the
    /// receiver's QUIT reason, and a fetching client's error (M15).
    pub(crate) fn not_stored(&self) -> String {
        format!(
            "{} of {} entries could not be stored",
            self.failures(),
            self.failures() + self.files + self.dirs + self.unchanged
        )
    }

    /// What the sender of a fetched tree said it left out (M15): an entry
    /// it could not read is one this end does not have, a failure; a file
    /// this end has already (M17) is unchanged.
    pub(crate) fn left_out_by_sender(&mut self, u: format::Unsent) {
        match u {
            format::Unsent::NotRegular(n) => self.not_regular = self.not_regular.saturating_add(n),
            format::Unsent::Failed(f) => {
                let reason = format!("not sent by the server: {}", f.reason);
                self.fail(FileFailure::new(f.name, reason));
            }
            format::Unsent::More(n) => self.more_failed = self.more_failed.saturating_add(n),
            // Left out because this end has them (M17): as M13's files
            // found here with the same bytes.
            format::Unsent::Unchanged(n, bytes) => {
                self.unchanged = self.unchanged.saturating_add(n);
                self.unchanged_bytes = self.unchanged_bytes.saturating_add(bytes);
            }
        }
    }

    /// The receiver's QUIT reason when entries failed: a first line, then
    /// one line per failure, cut to fit a control packet.
    pub(crate) fn quit_reason(&self) -> String {
        const ROOM: usize = 900;
        let mut s = format!("{} at the receiver", self.not_stored());
        let mut shown = 0u64;
        for f in &self.failed {
            let line = format!("\n{f}");
            if s.len() + line.len() > ROOM {
                break;
            }
            s.push_str(&line);
            shown += 1;
        }
        if shown < self.failures() {
            s.push_str(&format!("\n(and {} more)", self.failures() - shown));
        }
        s
    }
}

/// A name without leading `./` (as `tar c -C dir .` writes them); `.`
/// alone becomes empty (the archive's root: the receiver's directory).
pub(crate) fn strip_dot(mut name: &[u8]) -> &[u8] {
    while let Some(rest) = name.strip_prefix(b"./") {
        name = rest;
    }
    if name == b"." {
        &[]
    } else {
        name
    }
}

/// A name from the stream as path components: relative, `/`-separated,
/// without empty, `.` or `..` components, NUL bytes or backslashes (the
/// same rule as single-file names, [`super::names::sanitize`]).
pub(crate) fn components(name: &[u8]) -> Result<Vec<&[u8]>, &'static str> {
    if name.is_empty() || name.starts_with(b"/") {
        return Err("name not allowed (absolute or empty)");
    }
    if name.len() > super::meta::MAX_NAME {
        return Err("name not allowed (too long)");
    }
    let parts: Vec<&[u8]> = name.split(|&b| b == b'/').collect();
    for p in &parts {
        if p.is_empty() || *p == b"." || *p == b".." {
            return Err("name not allowed ('..', '.' or an empty component)");
        }
        if p.contains(&0) || p.contains(&b'\\') {
            return Err("name not allowed (NUL or backslash)");
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile stream's kilobyte names are cut in the failure list, on a
    /// character boundary.
    #[test]
    fn failure_names_are_cut() {
        let f = FileFailure::new("é".repeat(5_000), "too long");
        assert!(
            f.name.len() <= SHOWN_NAME + '…'.len_utf8(),
            "{}",
            f.name.len()
        );
        assert!(f.name.ends_with('…'));
        assert_eq!(FileFailure::new("a/b", "x").name, "a/b");
    }

    #[test]
    fn names_that_escape_are_refused() {
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"../x",
            b"a/../../b",
            b"a//b",
            b"./a",
            b"a/.",
            b"a\\b",
        ] {
            assert!(components(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            components(b"a/b c/..d").unwrap(),
            [&b"a"[..], b"b c", b"..d"]
        );
        assert_eq!(strip_dot(b"././a/b"), b"a/b");
        assert_eq!(strip_dot(b"."), b"");
        assert_eq!(strip_dot(b"./../x"), b"../x");
    }

    #[test]
    fn quit_reason_fits_a_packet() {
        let mut r = FilesReport {
            files: 10,
            ..FilesReport::default()
        };
        for i in 0..200 {
            r.fail(FileFailure::new(
                format!("dir/file{i}"),
                "permission denied",
            ));
        }
        let q = r.quit_reason();
        assert!(q.len() < 1000, "{}", q.len());
        assert!(q.starts_with("200 of 210 entries"));
        assert!(q.contains("dir/file0: permission denied") && q.ends_with("more)"));
    }
}
