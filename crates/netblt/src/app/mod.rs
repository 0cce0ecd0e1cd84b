//! The file-transfer application on top of NETBLT.
//!
//! # What travels
//!
//! A transfer of a file of `size` bytes carries `size + 32` bytes: the file,
//! then its BLAKE3 digest. The data sender hashes as it reads ([`source`]) and
//! appends the digest; the data receiver hashes as it writes ([`sink`]) and,
//! when the last buffer arrives, compares. The engine runs in
//! `confirm_last_buffer` mode, so the OK for the last buffer leaves only once
//! the receiver has checked the digest, flushed the file to disk and renamed
//! it into place: the sender's success means the receiver verified. A
//! mismatch ABORTs the connection.
//!
//! # Where data goes
//!
//! Received files are written to `.<name>.netblt-<random>.part` next to their
//! final place, `fsync`ed, and renamed only once verified (without `--force`,
//! with `RENAME_NOREPLACE`, so an existing file is never overwritten). On any
//! failure the temporary file is removed.
//!
//! # Threads
//!
//! The network loop never touches the disk. Reading ([`source`]) and writing
//! ([`sink`]) run on their own threads, joined to the loop by bounded
//! channels of whole NETBLT buffers; when the disk is slower than the
//! network the loop stops taking buffers from the engine, which stops
//! issuing GOs: NETBLT's client-level flow control (RFC 998 §4).
//!
//! Metadata (name, size, operation) rides in the OPEN/RESPONSE client strings
//! ([`meta`]); names from the network are sanitized ([`names`]).

pub mod bulk;
pub mod client;
pub mod meta;
pub mod names;
pub mod params;
pub mod report;
pub mod sink;
pub mod source;
pub mod transfer;

use crate::exit;

/// Bytes of the digest that follows the data.
pub const DIGEST_LEN: usize = 32;

/// An application-level failure: a local exit code, a line for the user, and
/// a short reason for the peer (ABORT/REFUSED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    pub code: i32,
    pub message: String,
    pub peer_reason: String,
}

impl AppError {
    pub fn new(code: i32, message: impl Into<String>, peer_reason: impl Into<String>) -> Self {
        AppError {
            code,
            message: message.into(),
            peer_reason: peer_reason.into(),
        }
    }

    /// A local I/O error on `what` (a path or an action).
    pub fn io(what: &str, e: &std::io::Error) -> Self {
        let reason = io_reason(e);
        AppError::new(exit::LOCAL, format!("{what}: {reason}"), reason)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A short human reason for an I/O error, naming the usual suspects.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "disk full (ENOSPC)".into(),
        Some(libc::EDQUOT) => "disk quota exceeded (EDQUOT)".into(),
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied".into(),
        Some(libc::ENOENT) => "no such file".into(),
        Some(libc::EEXIST) => "file exists (use --force on the receiver)".into(),
        Some(libc::EROFS) => "read-only file system".into(),
        Some(libc::EISDIR) => "is a directory".into(),
        _ => e.to_string(),
    }
}

/// Lower-case hex of a digest.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
