//! Entry points for the fuzz targets under `fuzz/` (feature `fuzzing`):
//! internals that take untrusted bytes, reachable without a network. Not an
//! API: no stability, no documentation beyond this.

use std::path::Path;

use crate::app::bundle::unpack::Unpacker;

/// Unpacks `stream` (a bundle's tar stream, as a sender would send it) into
/// `dir` in pieces of `piece` bytes, then commits (`commit`) or abandons it,
/// as the receiver does when the digest matched or the transfer failed.
/// Returns the files stored and the failures, or the error that stopped it.
pub fn unpack(
    dir: &Path,
    stream: &[u8],
    piece: usize,
    force: bool,
    commit: bool,
) -> Result<(u64, u64, u64), String> {
    let u = Unpacker::new(dir, force).map_err(|e| e.message)?;
    feed(u, stream, piece, commit)
}

/// As [`unpack`], but as a client fetching a directory unpacks it (`get`,
/// decision M15): entries below the top-level name `from` land below `to`
/// in `dir`, any other entry is refused, and what the server says it left
/// out is taken in.
pub fn unpack_fetched(
    dir: &Path,
    stream: &[u8],
    piece: usize,
    force: bool,
    commit: bool,
    (from, to): (&[u8], &[u8]),
) -> Result<(u64, u64, u64), String> {
    let u = Unpacker::new(dir, force).map_err(|e| e.message)?;
    feed(u.fetching(from, to), stream, piece, commit)
}

/// Feeds `stream` in pieces, then commits or abandons.
fn feed(
    mut u: Unpacker,
    stream: &[u8],
    piece: usize,
    commit: bool,
) -> Result<(u64, u64, u64), String> {
    for p in stream.chunks(piece.max(1)) {
        if let Err(e) = u.push(p) {
            u.abandon();
            return Err(e.message);
        }
    }
    if !commit {
        u.abandon();
        return Ok((0, 0, 0));
    }
    let r = u.commit().map_err(|e| e.message)?;
    Ok((r.files, r.unchanged, r.failures()))
}

/// Appends one tar entry as our sender writes it: a directory (`dir`) or a
/// regular file of `data`, with `size` in its header (which may lie about
/// `data`'s length: the stream is then out of step, as a hostile one is).
pub fn tar_entry(out: &mut Vec<u8>, name: &[u8], dir: bool, data: &[u8], size: u64, mode: u32) {
    use crate::app::bundle::format::{append_entry, EntryKind, EntryMeta, Mtime};
    let m = EntryMeta {
        name: name.to_vec(),
        kind: if dir { EntryKind::Dir } else { EntryKind::File },
        size,
        mode,
        mtime: Mtime {
            secs: 1_000_000_000,
            nanos: 0,
        },
    };
    append_entry(out, &m, data);
}

/// The two zero blocks that end a tar stream.
pub fn tar_end(out: &mut Vec<u8>) {
    out.extend_from_slice(&crate::app::bundle::format::END);
}
