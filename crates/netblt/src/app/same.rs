//! What is already there (decision M14): before a bundle, the sender asks
//! the receiver for a digest of every regular file it holds at or below the
//! bundle's top-level names, and leaves out the files it would send
//! unchanged: the same name, size and modification time (rsync's quick
//! check), or with `--checksum` the same name, size and contents (rsync's
//! `-c`, decision M18). The digests are keyed with a key the sender picks
//! for the request, so the reply tells the sender about the names it
//! already has and nothing it could read off another name without
//! guessing it.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
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

/// What the quick check compares besides a file's name and size: its
/// modification time (rsync's default), or its contents (rsync's `-c`,
/// decision M18), which costs reading every file at both ends. Both ends
/// must digest the same thing: the request says which (`"content":true`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Quick {
    #[default]
    Times,
    Content,
}

impl Quick {
    /// From a request's `content` flag (absent, as from an older peer:
    /// times).
    pub(crate) fn from_content(content: bool) -> Quick {
        if content {
            Quick::Content
        } else {
            Quick::Times
        }
    }
}

/// The keyed digest of one regular file, `name` in the bundle, of `size`
/// bytes: of its modification time `mtime`, or with [`Quick::Content`] of
/// the BLAKE3 hash of its bytes, read from `path`. `None`: the contents
/// could not be read; the file then matches nothing (it travels).
pub(crate) fn digest(
    key: &[u8; 32],
    quick: Quick,
    name: &[u8],
    size: u64,
    mtime: Mtime,
    path: &Path,
) -> Option<[u8; DIGEST]> {
    let mut h = blake3::Hasher::new_keyed(key);
    // Names have no NUL byte: it ends the name.
    h.update(name);
    h.update(&[0]);
    h.update(&size.to_le_bytes());
    match quick {
        // The input of M14's digest, unchanged: an older peer computes it.
        Quick::Times => {
            h.update(&mtime.secs.to_le_bytes());
            h.update(&mtime.nanos.to_le_bytes());
        }
        // 32 bytes after the size where times have 12: a content digest is
        // never the digest of a time, so a peer that answers with times
        // (older than M18) matches nothing, and everything travels.
        Quick::Content => {
            h.update(content_hash(path)?.as_bytes());
        }
    }
    let mut out = [0u8; DIGEST];
    out.copy_from_slice(&h.finalize().as_bytes()[..DIGEST]);
    Some(out)
}

/// BLAKE3 of the regular file at `path`, read in chunks (never whole in
/// memory), never through a link.
fn content_hash(path: &Path) -> Option<blake3::Hash> {
    let file = File::options()
        .read(true)
        // A FIFO put in the file's place must not block the open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut h = blake3::Hasher::new();
    h.update_reader(file).ok()?;
    Some(h.finalize())
}

/// The sender's digest of a file it would send (`None`: not a regular
/// file, or unreadable).
pub(crate) fn item_digest(key: &[u8; 32], quick: Quick, i: &Item) -> Option<[u8; DIGEST]> {
    if i.kind != EntryKind::File {
        return None;
    }
    digest(key, quick, &i.name, i.size, i.mtime, &i.path)
}

/// The receiver's reply: the digests of the regular files at or below
/// `names` in `dir` (names checked as any peer's name is; links never
/// followed; what cannot be read is left out).
pub(crate) fn listing(dir: &Path, names: &[String], key: &[u8; 32], quick: Quick) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        let Ok(path) = resolve(dir, name, false) else {
            continue;
        };
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if m.is_file() {
            let d = digest(key, quick, name.as_bytes(), m.len(), mtime_of(&m), &path);
            out.extend(d.into_iter().flatten());
        } else if m.is_dir() {
            digests_below(&path, name.as_bytes(), key, quick, &mut out);
        }
    }
    out
}

/// The reply as the passive end's data: made on the first read, on the
/// transfer's reader thread, not on the loop that serves every transfer
/// (with [`Quick::Content`] it reads every file listed).
pub(crate) struct Listing {
    dir: PathBuf,
    names: Vec<String>,
    key: [u8; 32],
    quick: Quick,
    made: Option<std::io::Cursor<Vec<u8>>>,
}

impl Listing {
    pub(crate) fn new(dir: &Path, names: Vec<String>, key: [u8; 32], quick: Quick) -> Listing {
        Listing {
            dir: dir.to_path_buf(),
            names,
            key,
            quick,
            made: None,
        }
    }
}

impl std::io::Read for Listing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (dir, names, key, quick) = (&self.dir, &self.names, &self.key, self.quick);
        self.made
            .get_or_insert_with(|| std::io::Cursor::new(listing(dir, names, key, quick)))
            .read(buf)
    }
}

/// Appends to `out` the digest of every regular file below `dir`, named
/// `prefix/rel/path` as a bundle names it (links never followed; what
/// cannot be read is left out; at most [`MAX_REPLY`] bytes in all). The
/// receiver's reply here; a `get` client's list of what it has (M17).
pub(crate) fn digests_below(
    dir: &Path,
    prefix: &[u8],
    key: &[u8; 32],
    quick: Quick,
    out: &mut Vec<u8>,
) {
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
            let d = digest(key, quick, &name, m.len(), mtime_of(&m), &e.path());
            out.extend(d.into_iter().flatten());
        } else if t.is_dir() {
            digests_below(&e.path(), &name, key, quick, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

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
        for quick in [Quick::Times, Quick::Content] {
            let got: HashSet<_> = listing(&d, &names, &key, quick)
                .chunks(DIGEST)
                .map(<[u8]>::to_vec)
                .collect();
            let want = |n: &str| {
                let p = d.join(n);
                let m = std::fs::symlink_metadata(&p).unwrap();
                digest(&key, quick, n.as_bytes(), m.len(), mtime_of(&m), &p)
                    .unwrap()
                    .to_vec()
            };
            let expected: HashSet<_> = ["top/a", "top/sub/b", "alone"]
                .map(want)
                .into_iter()
                .collect();
            assert_eq!(got, expected, "{quick:?}");
            // Another key, other digests: nothing to compare across requests.
            let other = listing(&d, &names, &[8u8; 32], quick);
            assert!(other.chunks(DIGEST).all(|c| !got.contains(c)));
        }
    }

    /// M18: times digests see the time and not the bytes, content digests
    /// the bytes and not the time; a file that cannot be read has no
    /// content digest (it travels).
    #[test]
    fn content_digests_see_the_bytes_and_time_digests_the_time() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::write(&a, b"same bytes").unwrap();
        std::fs::write(&b, b"same bytes").unwrap();
        let key = [3u8; 32];
        let (early, late) = (Mtime { secs: 1, nanos: 0 }, Mtime { secs: 2, nanos: 0 });
        let d = |q, m, p: &Path| digest(&key, q, b"t/f", 10, m, p);
        // Same bytes, another time.
        assert_eq!(d(Quick::Content, early, &a), d(Quick::Content, late, &b));
        assert_ne!(d(Quick::Times, early, &a), d(Quick::Times, late, &b));
        // Other bytes of the same length, the same time.
        std::fs::write(&b, b"SAME BYTES").unwrap();
        assert_ne!(d(Quick::Content, early, &a), d(Quick::Content, early, &b));
        assert_eq!(d(Quick::Times, early, &a), d(Quick::Times, early, &b));
        // A variant never equals the other, and a link or a missing file
        // has no content digest (times never read the file).
        assert_ne!(d(Quick::Content, early, &a), d(Quick::Times, early, &a));
        std::os::unix::fs::symlink(&a, t.path().join("link")).unwrap();
        for p in [t.path().join("link"), t.path().join("gone")] {
            assert_eq!(d(Quick::Content, early, &p), None);
            assert!(d(Quick::Times, early, &p).is_some());
        }
    }

    /// M18's claim about an older receiver: it ignores `"content"` and
    /// lists times; the sender's content digests then match none of them,
    /// so every file is sent, none left out wrongly.
    #[test]
    fn a_listing_of_times_matches_no_content_digest() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("top/sub")).unwrap();
        for (n, bytes) in [("top/a", &b"aa"[..]), ("top/sub/b", b"bbb")] {
            std::fs::write(t.path().join(n), bytes).unwrap();
        }
        let key = [9u8; 32];
        let names = ["top".to_string()];
        let times: HashSet<Vec<u8>> = listing(t.path(), &names, &key, Quick::Times)
            .chunks(DIGEST)
            .map(<[u8]>::to_vec)
            .collect();
        let contents = listing(t.path(), &names, &key, Quick::Content);
        assert_eq!((times.len(), contents.len()), (2, 2 * DIGEST));
        assert!(contents.chunks(DIGEST).all(|c| !times.contains(c)));
    }
}
