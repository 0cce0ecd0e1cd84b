//! What is already there (decision M14): before a bundle, the sender asks
//! the receiver for a digest of every regular file it holds at or below the
//! bundle's top-level names, and leaves out the files it would send
//! unchanged: the same name, size and modification time (rsync's quick
//! check). The digests are keyed with a key the sender picks for the
//! request, so the reply tells the sender about the names it already has
//! and nothing it could read off another name without guessing it.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::bundle::format::{EntryKind, Mtime};
use super::bundle::walk::{mtime_of, Item};
use super::names::resolve;

/// Bytes of one digest in the reply.
pub(crate) const DIGEST: usize = 16;
/// The most files one reply lists (64 MB of digests); beyond, the rest
/// are simply sent.
const MAX_LISTED: usize = 4_000_000;
/// The longest reply a sender takes in: what a receiver of ours sends at
/// most. A longer one (a hostile receiver's) is cut there, not kept whole
/// in memory.
pub(crate) const MAX_REPLY: usize = MAX_LISTED * DIGEST;

/// The keyed digest of one file: its name in the bundle, size and
/// modification time.
pub(crate) fn digest(key: &[u8; 32], name: &[u8], size: u64, mtime: Mtime) -> [u8; DIGEST] {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(name);
    h.update(&[0]);
    h.update(&size.to_le_bytes());
    h.update(&mtime.secs.to_le_bytes());
    h.update(&mtime.nanos.to_le_bytes());
    let mut out = [0u8; DIGEST];
    out.copy_from_slice(&h.finalize().as_bytes()[..DIGEST]);
    out
}

/// The sender's digest of a file it would send.
pub(crate) fn item_digest(key: &[u8; 32], i: &Item) -> Option<[u8; DIGEST]> {
    (i.kind == EntryKind::File).then(|| digest(key, &i.name, i.size, i.mtime))
}

/// The receiver's reply: the digests of the regular files at or below
/// `names` in `dir` (names checked as any peer's name is; links never
/// followed; what cannot be read is left out).
pub(crate) fn listing(dir: &Path, names: &[String], key: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        let Ok(path) = resolve(dir, name, false) else {
            continue;
        };
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if m.is_file() {
            out.extend_from_slice(&digest(key, name.as_bytes(), m.len(), mtime_of(&m)));
        } else if m.is_dir() {
            digests_below(&path, name.as_bytes(), key, &mut out);
        }
    }
    out
}

/// The reply as the passive end's data: made on the first read, on the
/// transfer's reader thread, not on the loop that serves every transfer.
pub(crate) struct Listing {
    dir: PathBuf,
    names: Vec<String>,
    key: [u8; 32],
    made: Option<std::io::Cursor<Vec<u8>>>,
}

impl Listing {
    pub(crate) fn new(dir: &Path, names: Vec<String>, key: [u8; 32]) -> Listing {
        Listing {
            dir: dir.to_path_buf(),
            names,
            key,
            made: None,
        }
    }
}

impl std::io::Read for Listing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (dir, names, key) = (&self.dir, &self.names, &self.key);
        self.made
            .get_or_insert_with(|| std::io::Cursor::new(listing(dir, names, key)))
            .read(buf)
    }
}

/// Appends to `out` the digest of every regular file below `dir`, named
/// `prefix/rel/path` as a bundle names it (links never followed; what
/// cannot be read is left out; at most [`MAX_REPLY`] bytes in all). The
/// receiver's reply here; a `get` client's list of what it has (M17).
pub(crate) fn digests_below(dir: &Path, prefix: &[u8], key: &[u8; 32], out: &mut Vec<u8>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if out.len() >= MAX_REPLY {
            return;
        }
        // The entry's own type and metadata: a link is a link here.
        let (Ok(t), Ok(m)) = (e.file_type(), e.metadata()) else {
            continue;
        };
        let mut name = prefix.to_vec();
        name.push(b'/');
        name.extend_from_slice(e.file_name().as_bytes());
        if t.is_file() {
            out.extend_from_slice(&digest(key, &name, m.len(), mtime_of(&m)));
        } else if t.is_dir() {
            digests_below(&e.path(), &name, key, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_has_the_files_below_the_names_and_no_link() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("dst");
        std::fs::create_dir_all(d.join("top/sub")).unwrap();
        std::fs::write(d.join("top/a"), b"aa").unwrap();
        std::fs::write(d.join("top/sub/b"), b"bbb").unwrap();
        std::fs::write(d.join("alone"), b"x").unwrap();
        std::fs::write(d.join("other"), b"not asked").unwrap();
        std::fs::write(t.path().join("outside"), b"o").unwrap();
        std::os::unix::fs::symlink(t.path().join("outside"), d.join("top/link")).unwrap();
        std::os::unix::fs::symlink(t.path(), d.join("up")).unwrap();
        let key = [7u8; 32];
        let names = ["top", "alone", "missing", "up", "../dst/other"].map(String::from);
        let got: std::collections::HashSet<_> = listing(&d, &names, &key)
            .chunks(DIGEST)
            .map(<[u8]>::to_vec)
            .collect();
        let want = |n: &str| {
            let m = std::fs::symlink_metadata(d.join(n)).unwrap();
            digest(&key, n.as_bytes(), m.len(), mtime_of(&m)).to_vec()
        };
        let expected: std::collections::HashSet<_> = ["top/a", "top/sub/b", "alone"]
            .map(want)
            .into_iter()
            .collect();
        assert_eq!(got, expected);
        // Another key, other digests: nothing to compare across requests.
        let other = listing(&d, &names, &[8u8; 32]);
        assert!(other.chunks(DIGEST).all(|c| !got.contains(c)));
    }
}
