//! What a bundle holds: the sender's walk of the files and directories
//! given, in name order, without following links inside them.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::format::{entry_len, EntryKind, EntryMeta, Mtime, END};
use super::FileFailure;
use crate::app::io_reason;
use crate::error::local_io;
use crate::error::Error;

/// One entry to send.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub(crate) path: PathBuf,
    /// The name in the bundle (`dirname/rel/path`), raw bytes.
    pub(crate) name: Vec<u8>,
    pub(crate) kind: EntryKind,
    /// At the walk: size, permission bits, modification time (a file's are
    /// read again when it is sent).
    pub(crate) size: u64,
    pub(crate) mode: u32,
    pub(crate) mtime: Mtime,
}

impl Item {
    pub(crate) fn meta(&self) -> EntryMeta {
        EntryMeta {
            name: self.name.clone(),
            kind: self.kind,
            size: self.size,
            mode: self.mode,
            mtime: self.mtime,
        }
    }
}

/// Files and directories to send in one transfer ([`send_bundle`](crate::send_bundle)).
///
/// [`Bundle::walk`] takes files and directories: a file is sent under its
/// file name, a directory as itself and everything below it
/// (`dirname/rel/path`), in name order. Symbolic links given on the
/// command line are followed; inside directories, links, devices, sockets
/// and FIFOs are never sent (nor followed), and a subdirectory that cannot
/// be read is listed in [`skipped`](Bundle::skipped).
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    pub(crate) items: Vec<Item>,
    name: String,
    pub(crate) skipped: Vec<FileFailure>,
    pub(crate) not_regular: u64,
    /// Files left out because the receiver has them (M14): count, bytes.
    pub(crate) left_out: (u64, u64),
    /// How many more transfers the receiver said it takes, when it has a
    /// limit (`recv --once`: 1), as its answer to M14's check told
    /// ([`skip_same`](crate::skip_same); F24).
    pub(crate) receiver_takes: Option<u64>,
}

pub(crate) fn mtime_of(m: &std::fs::Metadata) -> Mtime {
    Mtime {
        secs: m.mtime(),
        nanos: u32::try_from(m.mtime_nsec()).unwrap_or(0),
    }
}

/// The name a path given by the user is sent under: its last normal
/// component (`.` and `..` resolved first).
fn base_name(p: &Path) -> Vec<u8> {
    let last = |p: &Path| {
        p.components().next_back().and_then(|c| match c {
            Component::Normal(n) => Some(n.as_bytes().to_vec()),
            _ => None,
        })
    };
    last(p)
        .or_else(|| p.canonicalize().ok().as_deref().and_then(last))
        .unwrap_or_else(|| b"root".to_vec())
}

impl Bundle {
    /// Walks `paths` (files or directories). Fails if one of them does not
    /// exist or cannot be read at all.
    pub fn walk(paths: &[PathBuf]) -> Result<Bundle, Error> {
        let mut b = Bundle::default();
        // Top-level names given so far, with the file they name: two paths
        // that arrive under one name (`a/x.bin b/x.bin`) are refused before
        // anything is sent, where the receiver stored the first and refused
        // the second after it had crossed the network; one file given twice
        // is sent once.
        let mut given: std::collections::HashMap<Vec<u8>, (&Path, (u64, u64))> =
            std::collections::HashMap::new();
        for p in paths {
            let meta = std::fs::metadata(p).map_err(|e| local_io(p, &e))?;
            let name = base_name(p);
            let id = (meta.dev(), meta.ino());
            match given.get(&name) {
                Some((_, first)) if *first == id => continue,
                Some((first, _)) => {
                    return Err(Error::Local(format!(
                        "{} and {} would both arrive as '{}' (send them separately, or \
                         from a directory that holds both)",
                        first.display(),
                        p.display(),
                        String::from_utf8_lossy(&name)
                    )))
                }
                None => {
                    given.insert(name.clone(), (p, id));
                }
            }
            if meta.is_dir() {
                std::fs::read_dir(p).map_err(|e| local_io(p, &e))?;
                b.push(p, name.clone(), EntryKind::Dir, &meta);
                b.walk_dir(p, &name);
            } else if meta.is_file() {
                // A link given by the user is followed here, once: the file
                // is opened later without following links (pack.rs,
                // `send_walked_file`), which refused it ("too many levels of
                // symbolic links") in a bundle of several paths.
                let linked = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
                let at = if linked {
                    std::fs::canonicalize(p).map_err(|e| local_io(p, &e))?
                } else {
                    p.clone()
                };
                b.push(&at, name, EntryKind::File, &meta);
            } else {
                return Err(Error::Local(format!("{}: not a regular file", p.display())));
            }
        }
        b.name = match paths {
            [one, ..] if given.len() == 1 => String::from_utf8_lossy(&base_name(one)).into_owned(),
            _ => format!("{} paths", given.len()),
        };
        Ok(b)
    }

    /// Walks one directory a server was asked for (`get`, decision M15),
    /// as [`walk`](Bundle::walk) walks a directory for `send`, but the
    /// directory itself is not taken through a link either (it was checked
    /// so when opened, `O_NOFOLLOW`; this says so again if it was swapped
    /// for one since). The error is a reason for the peer, naming no path
    /// of the server's.
    pub(crate) fn walk_served(dir: &Path) -> Result<Bundle, String> {
        let meta = std::fs::symlink_metadata(dir).map_err(|e| io_reason(&e))?;
        if meta.file_type().is_symlink() {
            return Err("not a regular file (a symbolic link)".into());
        }
        if !meta.is_dir() {
            return Err("no longer a directory".into());
        }
        std::fs::read_dir(dir).map_err(|e| io_reason(&e))?;
        let name = base_name(dir);
        let mut b = Bundle {
            name: String::from_utf8_lossy(&name).into_owned(),
            ..Bundle::default()
        };
        b.push(dir, name.clone(), EntryKind::Dir, &meta);
        b.walk_dir(dir, &name);
        Ok(b)
    }

    fn push(&mut self, path: &Path, name: Vec<u8>, kind: EntryKind, m: &std::fs::Metadata) {
        self.items.push(Item {
            path: path.to_path_buf(),
            name,
            kind,
            size: if kind == EntryKind::File { m.len() } else { 0 },
            mode: m.mode() & 0o7777,
            mtime: mtime_of(m),
        });
    }

    fn walk_dir(&mut self, dir: &Path, prefix: &[u8]) {
        let shown = || String::from_utf8_lossy(prefix).into_owned();
        let entries = match std::fs::read_dir(dir) {
            Ok(rd) => rd.collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(e),
        };
        let mut entries = match entries {
            Ok(e) => e,
            Err(e) => {
                self.skipped.push(FileFailure::io(shown(), &e));
                return;
            }
        };
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let mut name = prefix.to_vec();
            name.push(b'/');
            name.extend_from_slice(e.file_name().as_bytes());
            let path = e.path();
            // lstat: a link is reported as a link, never followed.
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    let n = String::from_utf8_lossy(&name).into_owned();
                    self.skipped.push(FileFailure::io(n, &e));
                    continue;
                }
            };
            let ft = meta.file_type();
            if ft.is_dir() {
                self.push(&path, name.clone(), EntryKind::Dir, &meta);
                self.walk_dir(&path, &name);
            } else if ft.is_file() {
                self.push(&path, name, EntryKind::File, &meta);
            } else {
                self.not_regular += 1;
            }
        }
    }

    /// What the bundle is called in reports: the path's name, or "N paths".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Regular files in the bundle.
    pub fn files(&self) -> u64 {
        self.count(EntryKind::File)
    }

    /// Directories in the bundle.
    pub fn dirs(&self) -> u64 {
        self.count(EntryKind::Dir)
    }

    fn count(&self, k: EntryKind) -> u64 {
        self.items.iter().filter(|i| i.kind == k).count() as u64
    }

    /// The files' bytes, as the walk saw them.
    pub fn bytes(&self) -> u64 {
        self.items.iter().map(|i| i.size).sum()
    }

    /// Entries the walk could not read (they are not sent).
    pub fn skipped(&self) -> &[FileFailure] {
        &self.skipped
    }

    /// Files left out by [`skip_same`](crate::skip_same) because the
    /// receiver has them (same name, size and modification time): how many,
    /// and their bytes.
    pub fn left_out(&self) -> (u64, u64) {
        self.left_out
    }

    /// Without the files `drop` picks, counted in [`left_out`](Bundle::left_out).
    pub(crate) fn without(&self, mut drop: impl FnMut(&Item) -> bool) -> Bundle {
        let mut b = self.clone();
        b.items.retain(|i| {
            let out = i.kind == EntryKind::File && drop(i);
            if out {
                b.left_out.0 += 1;
                b.left_out.1 += i.size;
            }
            !out
        });
        b
    }

    /// The bundle without its regular files of at least `min` bytes, and
    /// those files with their names (`dirname/rel/path`, as
    /// [`files_to_send`](crate::files_to_send) names them), in name order,
    /// to send one by one with [`send_walked_file`](crate::send_walked_file)
    /// after the bundle (decision F19): an interrupted bundle keeps nothing at
    /// the receiver (M3), a file sent on its own keeps its partial copy for
    /// [`SendOptions::resume`](crate::SendOptions::resume). `None` keeps
    /// every file in the bundle; `Some(0)` takes them all out. A name that
    /// is not UTF-8 stays in the bundle (a single file's request carries
    /// its name as text). What the walk skipped and left out stays with the
    /// bundle, which keeps its directories: send it, then the files, then
    /// its [`directories`](Bundle::directories) again, whose modification
    /// times the files' arrival changed.
    ///
    /// Nothing leaves the bundle for a receiver that said (to
    /// [`skip_same`](crate::skip_same)) it takes fewer transfers than the
    /// split needs (the bundle, a transfer per large file and the
    /// directories' pass): `recv --once` takes one, and the files sent
    /// after the bundle found nobody listening (F24).
    pub fn split_resumable(&self, min: Option<u64>) -> (Bundle, Vec<(PathBuf, String)>) {
        let Some(min) = min else {
            return (self.clone(), Vec::new());
        };
        let mut large = Vec::new();
        let mut b = self.clone();
        b.items.retain(|i| {
            if i.kind != EntryKind::File || i.size < min {
                return true;
            }
            match std::str::from_utf8(&i.name) {
                Ok(name) => {
                    large.push((i.path.clone(), name.to_string()));
                    false
                }
                Err(_) => true,
            }
        });
        let needed = large.len() as u64 + 2;
        if !large.is_empty() && self.receiver_takes.is_some_and(|t| t < needed) {
            return (self.clone(), Vec::new());
        }
        (b, large)
    }

    /// The stream's length if no file changes before it is sent (the
    /// progress bar's total).
    pub(crate) fn stream_len(&self) -> u64 {
        self.items.iter().map(|i| entry_len(&i.meta())).sum::<u64>() + END.len() as u64
    }

    /// The files dealt into `n` bundles of about equal bytes (each in name
    /// order), for `n` transfers at once. The directories are in none of
    /// them (a file's parent directories are made as needed): send
    /// [`directories`](Bundle::directories) after the shards, so that each
    /// directory's mode and time are set once its files are in place.
    pub fn shards(&self, n: usize) -> Vec<Bundle> {
        let n = n.max(1);
        let mut out: Vec<Bundle> = (0..n)
            .map(|i| Bundle {
                name: format!("{} ({}/{n})", self.name, i + 1),
                ..Bundle::default()
            })
            .collect();
        let mut load = vec![0u64; n];
        for it in self.items.iter().filter(|i| i.kind == EntryKind::File) {
            // Greedy: the lightest shard takes the next file (a file costs
            // its bytes plus a header's worth).
            let k = (0..n).min_by_key(|&k| load[k]).unwrap_or(0);
            load[k] += it.size + 512;
            out[k].items.push(it.clone());
        }
        out.retain(|b| !b.items.is_empty());
        if let Some(first) = out.first_mut() {
            first.skipped = self.skipped.clone();
            first.not_regular = self.not_regular;
            first.left_out = self.left_out;
        }
        out
    }

    /// The directories alone (see [`shards`](Bundle::shards)).
    pub fn directories(&self) -> Bundle {
        Bundle {
            items: self
                .items
                .iter()
                .filter(|i| i.kind == EntryKind::Dir)
                .cloned()
                .collect(),
            name: format!("{} (directories)", self.name),
            ..Bundle::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// M15: a served directory is walked as `send DIR` walks one, but the
    /// directory itself is never taken through a link, and the reason
    /// given to the peer names no path of the server's.
    #[test]
    fn a_served_directory_is_not_taken_through_a_link() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink(&root, t.path().join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("sub/etc")).unwrap();
        let b = Bundle::walk_served(&root).unwrap();
        assert_eq!((b.name(), b.files(), b.dirs()), ("tree", 1, 2));
        assert_eq!(b.not_regular, 1);
        let why = Bundle::walk_served(&t.path().join("link")).unwrap_err();
        assert!(why.contains("symbolic link"), "{why}");
        let why = Bundle::walk_served(&root.join("sub/f")).unwrap_err();
        let gone = Bundle::walk_served(&root.join("gone")).unwrap_err();
        assert_eq!(
            (why.as_str(), gone.as_str()),
            ("no longer a directory", "no such file")
        );
        // `send` still follows a link given on its command line.
        assert_eq!(Bundle::walk(&[t.path().join("link")]).unwrap().files(), 1);
    }

    #[test]
    fn walk_keeps_order_skips_links_and_shards_by_bytes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("b/empty")).unwrap();
        std::fs::write(root.join("a"), vec![1; 5000]).unwrap();
        std::fs::write(root.join("b/c"), vec![2; 10]).unwrap();
        std::fs::write(root.join("b/d"), vec![3; 4000]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("b/link")).unwrap();
        let b = Bundle::walk(std::slice::from_ref(&root)).unwrap();
        let names: Vec<_> = b
            .items
            .iter()
            .map(|i| String::from_utf8_lossy(&i.name).into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "tree",
                "tree/a",
                "tree/b",
                "tree/b/c",
                "tree/b/d",
                "tree/b/empty"
            ]
        );
        assert_eq!(
            (b.files(), b.dirs(), b.bytes(), b.not_regular),
            (3, 3, 9010, 1)
        );
        assert_eq!(b.name(), "tree");
        let s = b.shards(2);
        assert_eq!(s.len(), 2);
        assert_eq!(s.iter().map(Bundle::files).sum::<u64>(), 3);
        assert!(s.iter().all(|x| x.dirs() == 0));
        assert_eq!(b.directories().dirs(), 3);
        assert!(Bundle::walk(&[t.path().join("missing")]).is_err());
    }

    /// F19: files at or above the threshold leave the bundle, in name
    /// order, named as `files_to_send` names them; the directories and
    /// the smaller files stay.
    #[test]
    fn large_files_leave_the_bundle_at_the_threshold() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("small"), vec![1; 99]).unwrap();
        std::fs::write(root.join("sub/at"), vec![2; 100]).unwrap();
        std::fs::write(root.join("z-over"), vec![3; 101]).unwrap();
        let b = Bundle::walk(std::slice::from_ref(&root)).unwrap();
        let (small, large) = b.split_resumable(Some(100));
        assert_eq!((small.files(), small.dirs(), small.bytes()), (1, 2, 99));
        let names: Vec<_> = large.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["tree/sub/at", "tree/z-over"]);
        assert_eq!(large[0].0, root.join("sub/at"));
        assert_eq!(small.name(), "tree");
        let (all, none) = b.split_resumable(None);
        assert_eq!((all.files(), none.len()), (3, 0));
        let (dirs, every) = b.split_resumable(Some(0));
        assert_eq!((dirs.files(), dirs.dirs(), every.len()), (0, 2, 3));
    }

    #[test]
    fn two_paths_under_one_name_are_refused_and_one_given_twice_is_sent_once() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
            std::fs::write(t.path().join(d).join("x.bin"), d).unwrap();
        }
        let (a, b) = (t.path().join("a/x.bin"), t.path().join("b/x.bin"));
        let e = Bundle::walk(&[a.clone(), b.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("would both arrive as 'x.bin'"), "{e}");
        assert!(e.contains(&b.display().to_string()), "{e}");
        // The same file twice, once through another spelling of its path.
        let again = t.path().join("b/../a/x.bin");
        let one = Bundle::walk(&[a.clone(), again]).unwrap();
        assert_eq!((one.files(), one.name()), (1, "x.bin"));
        // Different names are two entries.
        let two = Bundle::walk(&[a, t.path().join("b")]).unwrap();
        assert_eq!((two.files(), two.dirs(), two.name()), (2, 1, "2 paths"));
    }
}
