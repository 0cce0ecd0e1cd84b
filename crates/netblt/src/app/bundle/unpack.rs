//! The receiver's side of a bundle: the tar stream, fed in as it arrives
//! (on the writer thread, after hashing), unpacked below the receiver's
//! directory. See the parent module for what it guarantees; here is how.
//!
//! * Names: [`super::components`] refuses absolute paths, `..`, `.`, empty
//!   components, NUL and backslash. A component longer than the file
//!   system's `NAME_MAX` fails that entry ("name too long").
//! * Directories are opened one component at a time from the receiver's
//!   directory with `O_NOFOLLOW` ([`super::at`]), made when missing; the
//!   last one opened is kept, since the stream comes in tree order.
//! * A directory the stream needs that does not exist is made under a
//!   temporary name, `.<name>.<tag>.netblt-bundle`, in its parent (a
//!   *staged* tree; `tag` is random per transfer, so two transfers never
//!   share one); everything below it is made and written under its own
//!   name, and the whole tree lands with one rename at
//!   [`Unpacker::commit`] (decision M11).
//! * A file in a directory that already existed is written to a new
//!   `.<name>.<tag>.netblt-bundle` there, and renamed into place at the
//!   commit. Files are created with `O_CREAT | O_EXCL | O_NOFOLLOW` and get
//!   their mode and time when their bytes are complete. Whole blocks of
//!   zeros are left as holes ([`crate::app::holes`], decision M10).
//! * A file that is already there (without `--force`) is compared with the
//!   bytes as they arrive: the same size and the same bytes leave it as it
//!   is, but for its modification time, which takes the sender's at the
//!   commit, and count as unchanged, so sending a directory again succeeds
//!   (decision M13); any difference fails that entry ("file exists and
//!   differs").
//! * A failure of one entry (the name, permission denied, a file or a
//!   directory in the way) is recorded and that entry's bytes dropped; a
//!   full disk, a quota or a read-only file system fails the transfer.
//! * A client fetching a directory (`get`, decision M15) unpacks with the
//!   same rules into the destination's parent, the stream's top-level name
//!   taken as the destination's own ([`Unpacker::fetching`]): an entry
//!   under any other top-level name is refused, so a server writes nowhere
//!   but the destination. Only such a client takes in what the server says
//!   it left out ([`Unsent`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::at::{Dir, Found};
use super::format::{EntryMeta, Mtime, Parser, Refusal, Unsent, Visitor};
use super::{components, strip_dot, FileFailure, FilesReport};
use crate::app::holes::HoleWriter;
use crate::app::{hex, io_reason, AppError, Kind};

/// A file written and waiting for the commit.
struct Pending {
    parent: Vec<u8>,
    /// Its name now: a temporary name, or its own inside a staged tree.
    tmp: Vec<u8>,
    name: Vec<u8>,
    shown: String,
    size: u64,
    /// The staged tree it is in ([`Unpacker::staged`]).
    staged: Option<usize>,
}

/// A directory made by this bundle under a temporary name (decision M11).
struct Staged {
    /// Its parent's path and its own name (the final ones).
    parent: Vec<u8>,
    name: Vec<u8>,
    tmp: Vec<u8>,
    /// The directories made inside it (final paths), in the order made.
    made: Vec<Vec<u8>>,
}

/// What [`Unpacker::walk`] does with a directory that is missing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Make {
    No,
    /// Makes it (inside a staged tree, or when merging one).
    Plain,
    /// Makes it under a temporary name, unless inside a staged tree.
    Stage,
}

/// A file already there, compared with the entry's bytes as they arrive.
struct Compare {
    file: std::fs::File,
    shown: String,
    size: u64,
    /// Where it is, and the entry's modification time, given to it at the
    /// commit when the bytes are the same (so that the next check leaves
    /// it out, M14).
    parent: Vec<u8>,
    name: Vec<u8>,
    mtime: Mtime,
    /// No difference so far.
    same: bool,
    scratch: Vec<u8>,
}

impl Compare {
    /// The next `bytes` of the entry against the file's next bytes. A read
    /// error or a short file counts as a difference.
    fn compare(&mut self, bytes: &[u8]) {
        use std::io::Read;
        if !self.same {
            return;
        }
        self.scratch.resize(bytes.len(), 0);
        self.same = self.file.read_exact(&mut self.scratch).is_ok() && self.scratch == bytes;
    }
}

/// Why an existing file was not left as the entry's: its bytes differ. No
/// advice (F25): the failure's `io` kind, `AlreadyExists`, lets the tool
/// name its flag for the end it runs at.
const DIFFERS: &str = crate::error::WIRE_DIFFERS;

/// The file being written.
struct Current {
    file: HoleWriter,
    meta: EntryMeta,
    pending: Pending,
}

/// See the module docs.
pub(crate) struct Unpacker {
    root: Dir,
    root_shown: String,
    force: bool,
    tag: String,
    name_max: usize,
    parser: Parser,
    /// The directory last opened: its path (joined with '/') and handle.
    cache: Option<(Vec<u8>, Dir)>,
    current: Option<Current>,
    /// The entry being compared with a file already there.
    comparing: Option<Compare>,
    /// An entry whose data are being dropped (it failed).
    dropping: bool,
    pending: Vec<Pending>,
    /// Directories made under temporary names, and the ones of them not
    /// yet renamed into place by final path (what [`Unpacker::walk`] reads
    /// a path through).
    staged: Vec<Staged>,
    staged_at: HashMap<Vec<u8>, usize>,
    dirs: Vec<(Vec<u8>, u32, Mtime)>,
    /// Files found the same (M13): their new time, set at the commit.
    touch: Vec<(Vec<u8>, Vec<u8>, Mtime)>,
    report: FilesReport,
    fatal: Option<AppError>,
    settled: bool,
    /// A fetched directory (M15): the stream's top-level name, and the
    /// name it lands under.
    fetch: Option<(Vec<u8>, Vec<u8>)>,
}

/// Errors that no other file would escape: the transfer stops.
fn is_fatal(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EROFS) | Some(libc::EIO)
    )
}

fn system_time(m: Mtime) -> Option<SystemTime> {
    if m.secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(m.secs as u64, m.nanos))
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(m.secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(u64::from(m.nanos)))
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Splits a checked name into its parent (joined) and last component.
/// A path's parent and last component.
fn split_path(p: &[u8]) -> (&[u8], &[u8]) {
    match p.iter().rposition(|&b| b == b'/') {
        Some(i) => (&p[..i], &p[i + 1..]),
        None => (&[], p),
    }
}

fn split_last(parts: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
    let (last, dirs) = parts
        .split_last()
        .map_or((&b""[..], &[][..]), |(l, d)| (*l, d));
    (dirs.join(&b'/'), last.to_vec())
}

impl Unpacker {
    /// Unpacks below `dir`; `force` lets files replace existing ones.
    pub(crate) fn new(dir: &Path, force: bool) -> Result<Unpacker, AppError> {
        let shown = dir.display().to_string();
        let root = Dir::open(dir).map_err(|e| AppError::io(&shown, &e))?;
        let mut tag = [0u8; 4];
        let _ = getrandom::fill(&mut tag);
        Ok(Unpacker {
            name_max: root.name_max(),
            root,
            root_shown: shown,
            force,
            tag: hex(&tag),
            parser: Parser::new(),
            cache: None,
            current: None,
            comparing: None,
            touch: Vec::new(),
            dropping: false,
            pending: Vec::new(),
            staged: Vec::new(),
            staged_at: HashMap::new(),
            dirs: Vec::new(),
            report: FilesReport::default(),
            fatal: None,
            settled: false,
            fetch: None,
        })
    }

    /// Unpacks a directory fetched from a server (M15): entries below the
    /// stream's top-level name `from` land below `to` (one component, in
    /// the directory given to [`Unpacker::new`]); any other entry is
    /// refused. `to` is the user's choice (scp's rule: the name asked for,
    /// or `-o DEST`), `from` the last component of the name asked for,
    /// which a server of ours names its tree by.
    pub(crate) fn fetching(mut self, from: &[u8], to: &[u8]) -> Unpacker {
        self.fetch = Some((from.to_vec(), to.to_vec()));
        self
    }

    /// Where the files go, for messages.
    pub(crate) fn root_path(&self) -> PathBuf {
        PathBuf::from(&self.root_shown)
    }

    /// The next bytes of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), AppError> {
        let mut parser = std::mem::take(&mut self.parser);
        let r = parser.push(bytes, self);
        self.parser = parser;
        if let Err(e) = r {
            return Err(AppError::new(Kind::Failed, e.0.clone(), e.0));
        }
        match &self.fatal {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn fail(&mut self, name: String, reason: impl Into<String>) {
        self.failed(FileFailure::new(name, reason));
    }

    fn failed(&mut self, f: FileFailure) {
        // Debug, not warn: the report lists every failure, and the tool
        // prints that list (a warning too printed each line twice).
        tracing::debug!("{f}");
        self.report.fail(f);
    }

    fn fail_io(&mut self, name: String, e: &std::io::Error) {
        if is_fatal(e) {
            let shown = format!("{}/{name}", self.root_shown);
            self.fatal.get_or_insert(AppError::io(&shown, e));
        } else {
            self.failed(FileFailure::io(name, e));
        }
    }

    /// Opens (making it with `create`, staged when new) the directory
    /// `path` below the root.
    fn open_dir(&mut self, path: &[u8], create: bool) -> std::io::Result<&Dir> {
        let hit = matches!(&self.cache, Some((p, _)) if p == path);
        if !hit {
            self.cache = None;
            let make = if create { Make::Stage } else { Make::No };
            let d = self.walk(path, make, true)?;
            self.cache = Some((path.to_vec(), d));
        }
        match &self.cache {
            Some((_, d)) => Ok(d),
            None => Err(std::io::Error::other("no directory")),
        }
    }

    /// Opens the directory `path` (final names) one component at a time;
    /// with `staged`, a staged tree's root is opened by its temporary name.
    fn walk(&mut self, path: &[u8], make: Make, staged: bool) -> std::io::Result<Dir> {
        let mut d = self.root.child(b".")?;
        if path.is_empty() {
            return Ok(d);
        }
        let mut inside = None;
        let mut end = 0;
        for comp in path.split(|&b| b == b'/') {
            let start = end + usize::from(end > 0);
            end = start + comp.len();
            let prefix = &path[..end];
            if let Some(&i) = self.staged_at.get(prefix).filter(|_| staged) {
                d = d.child(&self.staged[i].tmp)?;
                inside = Some(i);
                continue;
            }
            d = match d.child(comp) {
                Ok(c) => c,
                Err(e) if make != Make::No && e.raw_os_error() == Some(libc::ENOENT) => {
                    if make == Make::Stage && inside.is_none() {
                        let tmp = self.tmp_name(comp);
                        d.mkdir(&tmp)?;
                        let i = self.staged.len();
                        self.staged.push(Staged {
                            parent: path[..start.saturating_sub(1)].to_vec(),
                            name: comp.to_vec(),
                            tmp: tmp.clone(),
                            made: Vec::new(),
                        });
                        self.staged_at.insert(prefix.to_vec(), i);
                        inside = Some(i);
                        d.child(&tmp)?
                    } else {
                        match d.mkdir(comp) {
                            Ok(()) => {
                                if let Some(i) = inside {
                                    self.staged[i].made.push(prefix.to_vec());
                                }
                            }
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                            Err(e) => return Err(e),
                        }
                        d.child(comp)?
                    }
                }
                Err(e) => return Err(in_the_way(&d, comp, e)),
            };
        }
        Ok(d)
    }

    /// The staged tree (not yet renamed into place) `path` is in.
    fn staged_root(&self, path: &[u8]) -> Option<usize> {
        if self.staged_at.is_empty() {
            return None;
        }
        let mut end = 0;
        for comp in path.split(|&b| b == b'/') {
            end += usize::from(end > 0) + comp.len();
            if let Some(&i) = self.staged_at.get(&path[..end]) {
                return Some(i);
            }
        }
        None
    }

    /// Removes what is left of staged tree `i` (its directories, emptied
    /// of files before), deepest first.
    fn remove_staged(&mut self, i: usize) {
        self.cache = None;
        let made = std::mem::take(&mut self.staged[i].made);
        for m in made.iter().rev() {
            let (parent, last) = split_path(m);
            if let Ok(d) = self.walk(parent, Make::No, true) {
                let _ = d.rmdir(last);
            }
        }
        let (parent, tmp) = (self.staged[i].parent.clone(), self.staged[i].tmp.clone());
        if let Ok(d) = self.walk(&parent, Make::No, true) {
            let _ = d.rmdir(&tmp);
        }
        self.unstage(i);
    }

    /// Paths through staged tree `i` no longer go by its temporary name.
    fn unstage(&mut self, i: usize) {
        let key = self.staged_path(i);
        self.staged_at.remove(&key);
    }

    /// Staged tree `i`'s final path.
    fn staged_path(&self, i: usize) -> Vec<u8> {
        let st = &self.staged[i];
        let mut p = st.parent.clone();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(&st.name);
        p
    }

    /// A regular file of the entry's name is already there: compare it
    /// with the entry's bytes instead of writing them (`Ok(true)`), or say
    /// at once that it differs (its size). `Ok(false)`: nothing of that
    /// name, or something `file_start` refuses by its own rules.
    fn compare_start(
        &mut self,
        parent: &[u8],
        name: &[u8],
        meta: &EntryMeta,
        shown: &str,
    ) -> std::io::Result<bool> {
        let d = self.open_dir(parent, false)?;
        if d.find(name)? != Found::File {
            return Ok(false);
        }
        let file = d.open_read(name)?;
        let size = file.metadata()?.len();
        if size != meta.size {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                DIFFERS,
            ));
        }
        self.dropping = true;
        self.comparing = Some(Compare {
            file,
            shown: shown.to_string(),
            size,
            parent: parent.to_vec(),
            name: name.to_vec(),
            mtime: meta.mtime,
            same: true,
            scratch: Vec::new(),
        });
        Ok(true)
    }

    /// A name's components, each checked against `NAME_MAX`; for a fetched
    /// directory, with its top-level name replaced by the destination's.
    fn check_name<'a>(&'a self, name: &'a [u8]) -> Result<Vec<&'a [u8]>, &'static str> {
        let mut parts = components(name)?;
        if let Some((from, to)) = &self.fetch {
            match parts.first_mut() {
                Some(top) if *top == from.as_slice() => *top = to.as_slice(),
                _ => return Err("not inside the directory asked for"),
            }
        }
        if parts.iter().any(|p| p.len() > self.name_max) {
            return Err("name too long for the receiver's file system");
        }
        Ok(parts)
    }

    fn tmp_name(&self, name: &[u8]) -> Vec<u8> {
        let suffix = format!(".{}.netblt-bundle", self.tag);
        let mut t = Vec::with_capacity(name.len() + suffix.len() + 1);
        if 1 + name.len() + suffix.len() <= self.name_max {
            t.push(b'.');
            t.extend_from_slice(name);
        } else {
            t.extend_from_slice(b".");
            t.extend_from_slice(hex(&blake3::hash(name).as_bytes()[..16]).as_bytes());
        }
        t.extend_from_slice(suffix.as_bytes());
        t
    }

    /// All bytes arrived and the digest matched: flush, move every file
    /// into place, set the directories' modes and times, flush again.
    /// Returns what was stored and what failed.
    pub(crate) fn commit(mut self) -> Result<FilesReport, AppError> {
        self.settled = true;
        let shown = self.root_shown.clone();
        if let Err(e) = self.parser.finish() {
            self.abandon_files();
            return Err(AppError::new(Kind::Failed, e.0.clone(), e.0));
        }
        if let Some(e) = self.fatal.take() {
            self.abandon_files();
            return Err(e);
        }
        // Data before names: after a crash, no final name holds a file
        // whose bytes did not reach the disk.
        if let Err(e) = self.root.sync_fs() {
            self.abandon_files();
            return Err(AppError::io(&shown, &e));
        }
        // A staged tree lands whole, with one rename (M11). One that cannot
        // (the name was taken meanwhile: another transfer, `--parallel`'s
        // other bundles) is merged into what is there file by file below.
        let mut landed = vec![false; self.staged.len()];
        for (i, l) in landed.iter_mut().enumerate() {
            let (parent, tmp, name) = {
                let st = &self.staged[i];
                (st.parent.clone(), st.tmp.clone(), st.name.clone())
            };
            self.cache = None;
            *l = self
                .walk(&parent, Make::No, true)
                .and_then(|d| d.rename(&tmp, &name, false))
                .is_ok();
            if *l {
                self.unstage(i);
            }
        }
        self.cache = None;
        // A tree merged file by file: its directories first, so that the
        // empty ones arrive too (their modes and times are set below).
        for (i, _) in landed.iter().enumerate().filter(|(_, &l)| !l) {
            let root = self.staged_path(i);
            let made = self.staged[i].made.clone();
            for path in std::iter::once(&root).chain(&made) {
                if let Err(e) = self.walk(path, Make::Plain, false) {
                    self.failed(FileFailure::io(lossy(path), &e));
                }
            }
        }
        let pending = std::mem::take(&mut self.pending);
        let force = self.force;
        for p in &pending {
            let r = match p.staged {
                Some(i) if landed[i] => Ok(()),
                Some(_) => self.walk(&p.parent, Make::No, true).and_then(|from| {
                    // Whatever fails here, the staged copy goes (so that
                    // the staged tree can be removed).
                    self.walk(&p.parent, Make::Plain, false)
                        .and_then(|to| from.rename_into(&p.tmp, &to, &p.name, force))
                        .inspect_err(|_| {
                            let _ = from.unlink(&p.tmp);
                        })
                }),
                None => self.open_dir(&p.parent, false).and_then(|d| {
                    d.rename(&p.tmp, &p.name, force).inspect_err(|_| {
                        let _ = d.unlink(&p.tmp);
                    })
                }),
            };
            if let Err(e) = r {
                let f = match e.raw_os_error() {
                    Some(libc::EISDIR) | Some(libc::ENOTEMPTY) => {
                        FileFailure::new(p.shown.clone(), "a directory is in the way")
                    }
                    // EEXIST: "file exists", AlreadyExists.
                    _ => FileFailure::io(p.shown.clone(), &e),
                };
                self.report.files = self.report.files.saturating_sub(1);
                self.report.bytes = self.report.bytes.saturating_sub(p.size);
                self.failed(f);
            }
        }
        for (i, _) in landed.iter().enumerate().filter(|(_, &l)| !l) {
            self.remove_staged(i);
        }
        self.cache = None;
        // Files found the same take the sender's time, as `rsync -t` sets
        // it; else the next send's check would send them again, and again.
        // (Their mode is left: that would change what the file is.)
        for (parent, name, mtime) in std::mem::take(&mut self.touch) {
            let t = system_time(mtime).unwrap_or(UNIX_EPOCH);
            let r = self
                .open_dir(&parent, false)
                .and_then(|d| d.open_read(&name))
                .and_then(|f| f.set_times(std::fs::FileTimes::new().set_modified(t)));
            if let Err(e) = r {
                tracing::debug!("{}: time not set: {e}", lossy(&name));
            }
        }
        self.cache = None;
        // Deepest first: a parent's time is set after its children changed
        // it, and a read-only directory gets its mode after its contents.
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by_key(|(p, _, _)| std::cmp::Reverse(p.iter().filter(|&&b| b == b'/').count()));
        for (path, mode, mtime) in dirs {
            let t = system_time(mtime).unwrap_or(UNIX_EPOCH);
            self.cache = None;
            let r = self
                .open_dir(&path, false)
                .and_then(|d| d.set_mode_and_mtime(mode, t));
            if let Err(e) = r {
                self.failed(FileFailure::io(lossy(&path), &e));
            }
        }
        self.cache = None;
        let _ = self.root.sync_fs();
        Ok(std::mem::take(&mut self.report))
    }

    /// The transfer failed: remove every temporary file and staged tree
    /// (directories made inside directories that existed stay).
    pub(crate) fn abandon(mut self) {
        self.abandon_files();
    }

    fn abandon_files(&mut self) {
        self.settled = true;
        let mut all = std::mem::take(&mut self.pending);
        if let Some(c) = self.current.take() {
            all.push(c.pending);
        }
        for p in all {
            if let Ok(d) = self.open_dir(&p.parent, false) {
                let _ = d.unlink(&p.tmp);
            }
        }
        // Then the staged trees, emptied of their files (M11): a failed
        // bundle leaves no directory it made under a temporary name.
        for i in 0..self.staged.len() {
            self.remove_staged(i);
        }
    }
}

/// `ELOOP`/`ENOTDIR` (`O_NOFOLLOW | O_DIRECTORY` met a link or a file)
/// said plainly.
fn in_the_way(d: &Dir, comp: &[u8], e: std::io::Error) -> std::io::Error {
    if !matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
        return e;
    }
    match d.find(comp) {
        Ok(Found::File) => std::io::Error::other("a file is in the way of a directory"),
        Ok(Found::Other) => {
            std::io::Error::other("a symbolic link or special file is in the way (never followed)")
        }
        _ => e,
    }
}

impl Drop for Unpacker {
    fn drop(&mut self) {
        if !self.settled {
            self.abandon_files();
        }
    }
}

impl Visitor for Unpacker {
    fn dir(&mut self, meta: &EntryMeta) {
        let shown = lossy(&meta.name);
        let name = strip_dot(&meta.name);
        if name.is_empty() {
            // `./`: the receiver's own directory, left as it is.
            return;
        }
        let path = match self.check_name(name) {
            Ok(parts) => parts.join(&b'/'),
            Err(why) => return self.fail(shown, why),
        };
        if let Err(e) = self.open_dir(&path, true) {
            return self.fail_io(shown, &e);
        }
        self.report.dirs += 1;
        self.dirs.push((path, meta.mode, meta.mtime));
    }

    fn file_start(&mut self, meta: &EntryMeta) {
        self.current = None;
        self.comparing = None;
        self.dropping = true;
        let shown = lossy(&meta.name);
        let (parent, name) = match self.check_name(strip_dot(&meta.name)) {
            Ok(parts) => split_last(&parts),
            Err(why) => return self.fail(shown, why),
        };
        if let Err(e) = self.open_dir(&parent, true) {
            return self.fail_io(shown, &e);
        }
        // In a staged tree nothing else is there: the file is written
        // under its own name, and lands with the tree (M11).
        let staged = self.staged_root(&parent);
        let tmp = match staged {
            Some(_) => name.clone(),
            None => self.tmp_name(&name),
        };
        let force = self.force;
        if staged.is_none() && !force {
            match self.compare_start(&parent, &name, meta, &shown) {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => return self.fail_io(shown, &e),
            }
        }
        let opened = self.open_dir(&parent, false).and_then(|d| {
            if staged.is_some() {
                // Only the stream itself can have put something there.
                return d.create_new(&tmp).map_err(|e| match d.find(&name) {
                    Ok(Found::Dir) => std::io::Error::other("a directory is in the way"),
                    Ok(Found::File) => std::io::Error::other("named twice in the stream"),
                    _ => e,
                });
            }
            // Refuse early what the rename would refuse: no bytes are
            // written for a file that cannot land.
            match d.find(&name)? {
                Found::Missing => {}
                Found::Dir => return Err(std::io::Error::other("a directory is in the way")),
                Found::File | Found::Other if !force => {
                    return Err(std::io::Error::from_raw_os_error(libc::EEXIST))
                }
                _ => {}
            }
            d.create_new(&tmp)
        });
        let file = match opened {
            Ok(f) => f,
            Err(e) => return self.fail_io(shown, &e),
        };
        self.dropping = false;
        self.current = Some(Current {
            file: HoleWriter::new(file),
            meta: meta.clone(),
            pending: Pending {
                parent,
                tmp,
                name,
                shown,
                size: meta.size,
                staged,
            },
        });
    }

    fn data(&mut self, bytes: &[u8]) -> Result<(), String> {
        if let Some(c) = self.comparing.as_mut() {
            c.compare(bytes);
            return Ok(());
        }
        if self.dropping {
            return Ok(());
        }
        let Some(c) = &mut self.current else {
            return Ok(());
        };
        if let Err(e) = c.file.write(bytes) {
            let c = self.current.take();
            self.dropping = true;
            if let Some(c) = c {
                if let Ok(d) = self.open_dir(&c.pending.parent, false) {
                    let _ = d.unlink(&c.pending.tmp);
                }
                self.fail_io(c.pending.shown, &e);
            }
            return Err(io_reason(&e));
        }
        Ok(())
    }

    fn file_end(&mut self) {
        if let Some(c) = self.comparing.take() {
            return if c.same {
                self.touch.push((c.parent, c.name, c.mtime));
                self.report.unchanged += 1;
                self.report.unchanged_bytes += c.size;
            } else {
                self.failed(FileFailure::exists(c.shown, DIFFERS));
            };
        }
        let Some(c) = self.current.take() else {
            return;
        };
        use std::os::unix::fs::PermissionsExt;
        let t = system_time(c.meta.mtime).unwrap_or(UNIX_EPOCH);
        let file = match c.file.finish() {
            Ok(f) => f,
            Err(e) => {
                if let Ok(d) = self.open_dir(&c.pending.parent, false) {
                    let _ = d.unlink(&c.pending.tmp);
                }
                return self.fail_io(c.pending.shown, &e);
            }
        };
        let r = file
            .set_permissions(std::fs::Permissions::from_mode(
                crate::app::partial::stored_mode(c.meta.mode),
            ))
            .and_then(|()| file.set_times(std::fs::FileTimes::new().set_modified(t)));
        drop(file);
        if let Err(e) = r {
            if let Ok(d) = self.open_dir(&c.pending.parent, false) {
                let _ = d.unlink(&c.pending.tmp);
            }
            return self.fail_io(c.pending.shown, &e);
        }
        self.report.files += 1;
        self.report.bytes += c.meta.size;
        self.pending.push(c.pending);
    }

    fn refused(&mut self, r: Refusal) {
        self.fail(r.name, r.reason);
    }

    /// A sender's word on what it left out counts only for a directory
    /// this end asked for (M15): a sender of `send DIR` reports its own.
    fn unsent(&mut self, u: Unsent) {
        if self.fetch.is_some() {
            self.report.left_out_by_sender(u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{append_entry, EntryKind, END};
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entry(out: &mut Vec<u8>, name: &[u8], kind: EntryKind, data: &[u8], mode: u32) {
        let m = EntryMeta {
            name: name.to_vec(),
            kind,
            size: data.len() as u64,
            mode,
            mtime: Mtime {
                secs: 1_000_000_000,
                nanos: 123_456_789,
            },
        };
        append_entry(out, &m, data);
    }

    /// Set-user-ID, set-group-ID and sticky bits from the peer are not
    /// stored (the receiver may run as root).
    #[test]
    fn special_mode_bits_are_dropped() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Vec::new();
        entry(&mut s, b"d", EntryKind::Dir, b"", 0o1777);
        entry(&mut s, b"d/suid", EntryKind::File, b"x", 0o6755);
        s.extend_from_slice(&END);
        let mut u = Unpacker::new(t.path(), false).unwrap();
        u.push(&s).unwrap();
        u.commit().unwrap();
        let mode = |p: &str| {
            std::fs::metadata(t.path().join(p))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(mode("d/suid") & 0o7777, 0o755);
        assert_eq!(mode("d") & 0o7777, 0o777);
    }

    #[test]
    fn nothing_lands_before_commit_and_failures_are_listed() {
        let t = tempfile::tempdir().unwrap();
        let dst = t.path().join("dst");
        std::fs::create_dir(&dst).unwrap();
        std::fs::write(dst.join("exists"), b"old").unwrap();
        let mut s = Vec::new();
        entry(&mut s, b"d", EntryKind::Dir, b"", 0o750);
        entry(&mut s, b"d/a", EntryKind::File, b"alpha", 0o604);
        entry(&mut s, b"exists", EntryKind::File, b"new", 0o644);
        entry(&mut s, &[b'n'; 300], EntryKind::File, b"long", 0o644);
        entry(&mut s, b"d/empty", EntryKind::File, b"", 0o600);
        s.extend_from_slice(&END);
        let mut u = Unpacker::new(&dst, false).unwrap();
        // In two pieces, cut inside a header.
        u.push(&s[..700]).unwrap();
        u.push(&s[700..]).unwrap();
        assert!(!dst.join("d/a").exists(), "only after commit");
        let r = u.commit().unwrap();
        assert_eq!(std::fs::read(dst.join("d/a")).unwrap(), b"alpha");
        assert_eq!(std::fs::read(dst.join("exists")).unwrap(), b"old");
        let m = std::fs::metadata(dst.join("d/a")).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o604);
        let want = UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
        assert_eq!(m.modified().unwrap(), want);
        let dm = std::fs::metadata(dst.join("d")).unwrap();
        assert_eq!(
            (dm.permissions().mode() & 0o7777, dm.modified().unwrap()),
            (0o750, want)
        );
        assert_eq!((r.files, r.dirs, r.bytes), (2, 1, 5));
        let reasons: Vec<_> = r.failed.iter().map(|f| f.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [DIFFERS, "name too long for the receiver's file system"]
        );
        // The tool names its flag for the first from its kind (F25).
        assert_eq!(r.failed[0].io, Some(std::io::ErrorKind::AlreadyExists));
        assert_ne!(r.failed[1].io, Some(std::io::ErrorKind::AlreadyExists));
        // No temporary file is left.
        let left: Vec<_> = std::fs::read_dir(&dst)
            .unwrap()
            .chain(std::fs::read_dir(dst.join("d")).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("netblt"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_file_already_there_with_the_same_bytes_is_unchanged() {
        // Sending a directory again succeeds for what is already there
        // (M13); a difference in size or bytes fails that file only, and a
        // link in the way is never read through.
        let t = tempfile::tempdir().unwrap();
        let dst = t.path().join("dst");
        std::fs::create_dir(&dst).unwrap();
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dst.join("same"), &big).unwrap();
        std::fs::write(dst.join("late"), &big).unwrap();
        std::fs::write(dst.join("short"), b"abc").unwrap();
        std::fs::write(t.path().join("secret"), b"xyz").unwrap();
        std::os::unix::fs::symlink(t.path().join("secret"), dst.join("link")).unwrap();
        let mut late = big.clone();
        late[299_999] ^= 1;
        let mut s = Vec::new();
        entry(&mut s, b"same", EntryKind::File, &big, 0o644);
        entry(&mut s, b"late", EntryKind::File, &late, 0o644);
        entry(&mut s, b"short", EntryKind::File, b"abcd", 0o644);
        entry(&mut s, b"link", EntryKind::File, b"xyz", 0o644);
        entry(&mut s, b"new", EntryKind::File, b"fresh", 0o644);
        s.extend_from_slice(&END);
        let mut u = Unpacker::new(&dst, false).unwrap();
        // In pieces that cut the compared files anywhere.
        for piece in s.chunks(7_777) {
            u.push(piece).unwrap();
        }
        let r = u.commit().unwrap();
        assert_eq!((r.unchanged, r.unchanged_bytes), (1, 300_000));
        assert_eq!((r.files, r.bytes), (1, 5));
        let failed: Vec<_> = r
            .failed
            .iter()
            .map(|f| (f.name.as_str(), f.reason.as_str()))
            .collect();
        assert_eq!(
            failed,
            [
                ("late", DIFFERS),
                ("short", DIFFERS),
                ("link", "file exists")
            ]
        );
        assert!(
            r.failed
                .iter()
                .all(|f| f.io == Some(std::io::ErrorKind::AlreadyExists)),
            "{:?}",
            r.failed
        );
        assert_eq!(std::fs::read(dst.join("same")).unwrap(), big);
        // It took the sender's time, so the next check leaves it out.
        let m = std::fs::metadata(dst.join("same")).unwrap();
        let want = UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
        assert_eq!(m.modified().unwrap(), want);
        let m = std::fs::metadata(dst.join("late")).unwrap();
        assert_ne!(
            m.modified().unwrap(),
            want,
            "a file that differs keeps its time"
        );
        assert_eq!(std::fs::read(dst.join("late")).unwrap(), big);
        assert_eq!(std::fs::read(dst.join("short")).unwrap(), b"abc");
        assert_eq!(std::fs::read(dst.join("new")).unwrap(), b"fresh");
        assert_eq!(std::fs::read(t.path().join("secret")).unwrap(), b"xyz");
        // With --force every one is replaced, as before.
        let mut u = Unpacker::new(&dst, true).unwrap();
        u.push(&s).unwrap();
        let r = u.commit().unwrap();
        assert_eq!((r.unchanged, r.files, r.failures()), (0, 5, 0));
        assert_eq!(std::fs::read(dst.join("late")).unwrap(), late);
    }

    #[test]
    fn hostile_names_and_planted_links_write_nothing_outside() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        let dst = t.path().join("dst");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&dst).unwrap();
        std::os::unix::fs::symlink(&outside, dst.join("planted")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), dst.join("planted_file")).unwrap();
        let mut s = Vec::new();
        for name in [&b"planted/x"[..], b"planted_file", b"ok"] {
            entry(&mut s, name, EntryKind::File, b"data", 0o644);
        }
        // Names tar would write only by force.
        for name in [&b"../escape"[..], b"/abs", b"a/../../b"] {
            let mut h = tar::Header::new_ustar();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_size(1);
            h.set_mode(0o644);
            h.set_cksum();
            s.extend_from_slice(h.as_bytes());
            s.extend_from_slice(&[b'!'; 512]);
        }
        s.extend_from_slice(&END);
        let mut u = Unpacker::new(&dst, true).unwrap();
        u.push(&s).unwrap();
        let r = u.commit().unwrap();
        assert_eq!(r.files, 2, "{:?}", r.failed);
        assert_eq!(r.failures(), 4, "{:?}", r.failed);
        assert!(
            r.failed[0].reason.contains("symbolic link"),
            "{:?}",
            r.failed
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        assert!(!t.path().join("escape").exists() && !t.path().join("b").exists());
        // With --force, the planted link itself was replaced by the file.
        assert_eq!(std::fs::read(dst.join("planted_file")).unwrap(), b"data");
        assert!(!outside.join("f").exists());
    }

    /// A header of a name our writer would never write (`..`, absolute),
    /// with one byte of data.
    fn raw_entry(out: &mut Vec<u8>, name: &[u8]) {
        let mut h = tar::Header::new_ustar();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_size(1);
        h.set_mode(0o644);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&[b'!'; 512]);
    }

    /// M15: a fetched directory lands under the destination's name, and a
    /// hostile server's entries outside the tree asked for (another
    /// top-level name, `..`, absolute names) are refused: nothing is
    /// written beside the destination, let alone outside its parent. What
    /// the server says it left out is counted.
    #[test]
    fn a_fetched_tree_lands_under_its_destination_and_nowhere_else() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().join("parent");
        std::fs::create_dir(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut s = Vec::new();
        entry(&mut s, b".", EntryKind::Dir, b"", 0o700);
        entry(&mut s, b"tree", EntryKind::Dir, b"", 0o750);
        entry(&mut s, b"tree/a", EntryKind::File, b"alpha", 0o640);
        entry(&mut s, b"./tree/sub/b", EntryKind::File, b"beta", 0o600);
        entry(&mut s, b"other/x", EntryKind::File, b"x", 0o644);
        entry(&mut s, b"treex", EntryKind::File, b"x", 0o644);
        entry(&mut s, b"dest", EntryKind::Dir, b"", 0o777);
        for name in [
            &b"../escape"[..],
            b"/abs",
            b"tree/../../b",
            b"tree/../other",
        ] {
            raw_entry(&mut s, name);
        }
        let mut left = FilesReport {
            not_regular: 3,
            ..FilesReport::default()
        };
        left.fail(FileFailure::new("tree/secret", "permission denied"));
        super::super::format::write_unsent(&left, &mut s);
        s.extend_from_slice(&END);
        let stream = s;
        let mut u = Unpacker::new(&parent, false)
            .unwrap()
            .fetching(b"tree", b"dest");
        u.push(&stream).unwrap();
        let r = u.commit().unwrap();
        assert_eq!(
            tree(t.path()),
            [
                "parent/",
                "parent/dest/",
                "parent/dest/a",
                "parent/dest/sub/",
                "parent/dest/sub/b"
            ]
        );
        assert_eq!(std::fs::read(parent.join("dest/sub/b")).unwrap(), b"beta");
        let m = std::fs::metadata(parent.join("dest")).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o750);
        // The destination's parent is left as it is ("." is not the tree).
        let pm = std::fs::metadata(&parent).unwrap();
        assert_eq!(pm.permissions().mode() & 0o7777, 0o755);
        assert_eq!((r.files, r.dirs, r.bytes, r.not_regular), (2, 1, 9, 3));
        let failed: Vec<_> = r
            .failed
            .iter()
            .map(|f| (f.name.as_str(), f.reason.as_str()))
            .collect();
        let outside = "not inside the directory asked for";
        let bad = "name not allowed ('..', '.' or an empty component)";
        assert_eq!(
            failed,
            [
                ("other/x", outside),
                ("treex", outside),
                ("dest", outside),
                ("../escape", bad),
                ("/abs", "name not allowed (absolute or empty)"),
                ("tree/../../b", bad),
                ("tree/../other", bad),
                ("tree/secret", "not sent by the server: permission denied"),
            ]
        );
        // A receiver of `send DIR` takes no sender's word for failures.
        let plain = t.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        let mut u = Unpacker::new(&plain, false).unwrap();
        u.push(&stream).unwrap();
        let r = u.commit().unwrap();
        assert_eq!(r.not_regular, 0);
        assert!(r.failed.iter().all(|f| f.name != "tree/secret"), "{r:?}");
    }

    /// M15: fetching into a tree that is there: the same files are
    /// unchanged, a differing one refused (its kind `AlreadyExists`, from
    /// which the tool names the client's own --force, F25), and replaced
    /// with `force`.
    #[test]
    fn a_fetch_into_an_existing_tree_compares_and_refuses_what_differs() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("dest")).unwrap();
        std::fs::write(t.path().join("dest/same"), b"same").unwrap();
        std::fs::write(t.path().join("dest/diff"), b"mine").unwrap();
        let mut s = Vec::new();
        entry(&mut s, b"tree", EntryKind::Dir, b"", 0o755);
        entry(&mut s, b"tree/same", EntryKind::File, b"same", 0o644);
        entry(&mut s, b"tree/diff", EntryKind::File, b"them", 0o644);
        s.extend_from_slice(&END);
        for force in [false, true] {
            let mut u = Unpacker::new(t.path(), force)
                .unwrap()
                .fetching(b"tree", b"dest");
            u.push(&s).unwrap();
            let r = u.commit().unwrap();
            if force {
                assert_eq!((r.files, r.failures()), (2, 0));
                assert_eq!(std::fs::read(t.path().join("dest/diff")).unwrap(), b"them");
            } else {
                assert_eq!((r.files, r.unchanged), (0, 1));
                assert_eq!(
                    r.failed,
                    [FileFailure::exists("tree/diff", "file exists and differs")]
                );
                assert_eq!(std::fs::read(t.path().join("dest/diff")).unwrap(), b"mine");
            }
        }
    }

    /// Names in `dir` and below, sorted (directories end with '/').
    fn tree(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![(dir.to_path_buf(), String::new())];
        while let Some((d, prefix)) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                let name = format!("{prefix}{}", e.file_name().to_string_lossy());
                if e.file_type().unwrap().is_dir() {
                    out.push(format!("{name}/"));
                    stack.push((e.path(), format!("{name}/")));
                } else {
                    out.push(name);
                }
            }
        }
        out.sort();
        out
    }

    /// An unpacker below `dir` fed a whole stream of `entries` (name,
    /// kind, data, mode).
    fn fed(dir: &Path, entries: &[(&[u8], EntryKind, &[u8], u32)]) -> Unpacker {
        let mut s = Vec::new();
        for (name, kind, data, mode) in entries {
            entry(&mut s, name, *kind, data, *mode);
        }
        s.extend_from_slice(&END);
        let mut u = Unpacker::new(dir, false).unwrap();
        u.push(&s).unwrap();
        u
    }

    /// M11: a directory the stream makes is built under one temporary name,
    /// its files under their own names inside it, and lands whole.
    #[test]
    fn a_new_tree_is_built_under_one_temporary_name_and_lands_whole() {
        let t = tempfile::tempdir().unwrap();
        let u = fed(
            t.path(),
            &[
                (b"top", EntryKind::Dir, b"", 0o750),
                (b"top/a", EntryKind::File, b"alpha", 0o640),
                (b"top/sub/deep/b", EntryKind::File, b"beta", 0o600),
                (b"top/a", EntryKind::File, b"again", 0o600),
                (b"loose", EntryKind::File, b"root file", 0o644),
            ],
        );
        let before = tree(t.path());
        assert_eq!(before.len(), 6, "{before:?}");
        assert!(before.iter().all(|n| n.starts_with('.')), "{before:?}");
        assert!(before
            .iter()
            .any(|n| n.ends_with("netblt-bundle/sub/deep/b")));
        let r = u.commit().unwrap();
        assert_eq!(
            tree(t.path()),
            [
                "loose",
                "top/",
                "top/a",
                "top/sub/",
                "top/sub/deep/",
                "top/sub/deep/b"
            ]
        );
        assert_eq!(std::fs::read(t.path().join("top/a")).unwrap(), b"alpha");
        assert_eq!(
            std::fs::read(t.path().join("top/sub/deep/b")).unwrap(),
            b"beta"
        );
        let m = std::fs::metadata(t.path().join("top")).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o750);
        let want = UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
        assert_eq!(m.modified().unwrap(), want);
        assert_eq!((r.files, r.dirs, r.bytes), (3, 1, 18));
        let reasons: Vec<_> = r.failed.iter().map(|f| f.reason.as_str()).collect();
        assert_eq!(reasons, ["named twice in the stream"]);
    }

    /// M11: a tree whose name was taken while it arrived is merged into
    /// what is there, file by file, by the rules of a directory that
    /// existed; nothing temporary is left.
    #[test]
    fn a_tree_whose_name_was_taken_meanwhile_is_merged_file_by_file() {
        let t = tempfile::tempdir().unwrap();
        let u = fed(
            t.path(),
            &[
                (b"top/a", EntryKind::File, b"alpha", 0o644),
                (b"top/sub/b", EntryKind::File, b"beta", 0o644),
                (b"top/empty", EntryKind::Dir, b"", 0o700),
            ],
        );
        // Someone else makes top/ with an `a` of its own.
        std::fs::create_dir(t.path().join("top")).unwrap();
        std::fs::write(t.path().join("top/a"), b"theirs").unwrap();
        let r = u.commit().unwrap();
        assert_eq!(
            tree(t.path()),
            ["top/", "top/a", "top/empty/", "top/sub/", "top/sub/b"]
        );
        let m = std::fs::metadata(t.path().join("top/empty")).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o700);
        assert_eq!(std::fs::read(t.path().join("top/a")).unwrap(), b"theirs");
        assert_eq!(std::fs::read(t.path().join("top/sub/b")).unwrap(), b"beta");
        assert_eq!((r.files, r.bytes), (1, 4));
        let reasons: Vec<_> = r.failed.iter().map(|f| f.reason.as_str()).collect();
        assert_eq!(reasons, ["file exists"]);
        assert_eq!(r.failed[0].io, Some(std::io::ErrorKind::AlreadyExists));
    }

    /// M11: a file put where a staged tree was to land: the tree's files
    /// are refused, and nothing temporary is left.
    #[test]
    fn a_file_in_the_way_of_a_staged_tree_refuses_its_files() {
        let t = tempfile::tempdir().unwrap();
        let u = fed(t.path(), &[(b"top/sub/b", EntryKind::File, b"beta", 0o644)]);
        std::fs::write(t.path().join("top"), b"a file").unwrap();
        let r = u.commit().unwrap();
        assert_eq!(tree(t.path()), ["top"]);
        assert_eq!(r.files, 0);
        // The file itself is listed, and every failure says why.
        assert!(
            r.failed.iter().any(|f| f.name == "top/sub/b")
                && r.failed.iter().all(|f| f.reason.contains("in the way")),
            "{:?}",
            r.failed
        );
    }

    /// M11: a failed bundle removes the trees it staged, files and all.
    #[test]
    fn an_abandoned_bundle_removes_the_trees_it_staged() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("kept")).unwrap();
        let mut s = Vec::new();
        entry(&mut s, b"kept/new/x", EntryKind::File, b"x", 0o644);
        entry(&mut s, b"top/sub/y", EntryKind::File, &[7; 3000], 0o644);
        let mut u = Unpacker::new(t.path(), false).unwrap();
        // Cut inside the second file.
        u.push(&s[..s.len() - 1000]).unwrap();
        assert_eq!(tree(t.path()).len(), 6, "{:?}", tree(t.path()));
        u.abandon();
        assert_eq!(tree(t.path()), ["kept/"]);
    }

    #[test]
    fn abandoned_bundle_leaves_no_temporary_file() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Vec::new();
        entry(&mut s, b"a", EntryKind::File, &[1; 2000], 0o644);
        let mut u = Unpacker::new(t.path(), false).unwrap();
        u.push(&s[..1500]).unwrap();
        u.abandon();
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
        // Cut short, then committed: refused, nothing left either.
        let mut u = Unpacker::new(t.path(), false).unwrap();
        u.push(&s[..1500]).unwrap();
        assert!(u.commit().is_err());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }
}
