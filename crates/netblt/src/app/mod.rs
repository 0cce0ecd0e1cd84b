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
//! Received files are written to `.<name>.netblt-part` next to their final
//! place, `fsync`ed, and renamed only once verified (without `--force`, with
//! `RENAME_NOREPLACE`, so an existing file is never overwritten). A journal
//! of the 1 MiB units written lets an interrupted transfer resume
//! ([`partial`], [`tree`]); what a failure leaves is described there.
//!
//! A stream of unknown length (`netblt send -`) travels the same way: the
//! last buffer ends it and the digest still follows the data.
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

pub(crate) mod bundle;
pub(crate) mod have;
pub(crate) mod holes;
pub(crate) mod meta;
pub(crate) mod names;
pub(crate) mod params;
pub(crate) mod partial;
pub(crate) mod same;
pub(crate) mod sink;
pub(crate) mod source;
pub(crate) mod transfer;
pub(crate) mod tree;

pub(crate) use crate::error::{io_reason, AppError, Kind};

/// Bytes of the digest that follows the data.
pub(crate) const DIGEST_LEN: usize = 32;

/// Lower-case hex of a digest.
pub(crate) fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from exactly `2 * N` hex digits ([`hex`]'s inverse); `None`
/// for anything else (a peer's string).
pub(crate) fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}
