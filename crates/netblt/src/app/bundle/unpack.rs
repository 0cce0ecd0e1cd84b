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
//! * A file is written to a new `.<name>.<tag>.netblt-bundle` in its
//!   directory (`O_CREAT | O_EXCL | O_NOFOLLOW`; `tag` is random per
//!   transfer, so two transfers never share one), gets its mode and time
//!   when its bytes are complete, and waits for [`Unpacker::commit`]. Whole
//!   blocks of zeros are left as holes ([`crate::app::holes`], decision M10).
//! * A failure of one entry (the name, permission denied, a file or a
//!   directory in the way) is recorded and that entry's bytes dropped; a
//!   full disk, a quota or a read-only file system fails the transfer.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::at::{Dir, Found};
use super::format::{EntryMeta, Mtime, Parser, Refusal, Visitor};
use super::{components, strip_dot, FileFailure, FilesReport};
use crate::app::holes::HoleWriter;
use crate::app::{hex, io_reason, AppError, Kind};

/// A file written and waiting for the commit.
struct Pending {
    parent: Vec<u8>,
    tmp: Vec<u8>,
    name: Vec<u8>,
    shown: String,
    size: u64,
}

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
    /// An entry whose data are being dropped (it failed).
    dropping: bool,
    pending: Vec<Pending>,
    dirs: Vec<(Vec<u8>, u32, Mtime)>,
    report: FilesReport,
    fatal: Option<AppError>,
    settled: bool,
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
            dropping: false,
            pending: Vec::new(),
            dirs: Vec::new(),
            report: FilesReport::default(),
            fatal: None,
            settled: false,
        })
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
        let f = FileFailure::new(name, reason);
        tracing::warn!("{f}");
        self.report.fail(f);
    }

    fn fail_io(&mut self, name: String, e: &std::io::Error) {
        if is_fatal(e) {
            let shown = format!("{}/{name}", self.root_shown);
            self.fatal.get_or_insert(AppError::io(&shown, e));
        } else {
            self.fail(name, io_reason(e));
        }
    }

    /// Opens (making it with `create`) the directory `path` below the root.
    fn open_dir(&mut self, path: &[u8], create: bool) -> std::io::Result<&Dir> {
        let hit = matches!(&self.cache, Some((p, _)) if p == path);
        if !hit {
            self.cache = None;
            let mut d = self.root.child(b".")?;
            if !path.is_empty() {
                for comp in path.split(|&b| b == b'/') {
                    d = match d.child(comp) {
                        Ok(c) => c,
                        Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                            match d.mkdir(comp) {
                                Ok(()) => {}
                                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                                Err(e) => return Err(e),
                            }
                            d.child(comp)?
                        }
                        Err(e) => return Err(in_the_way(&d, comp, e)),
                    };
                }
            }
            self.cache = Some((path.to_vec(), d));
        }
        match &self.cache {
            Some((_, d)) => Ok(d),
            None => Err(std::io::Error::other("no directory")),
        }
    }

    /// A name's components, each checked against `NAME_MAX`.
    fn check_name<'a>(&self, name: &'a [u8]) -> Result<Vec<&'a [u8]>, &'static str> {
        let parts = components(name)?;
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
        let pending = std::mem::take(&mut self.pending);
        let force = self.force;
        for p in &pending {
            let r = self.open_dir(&p.parent, false).and_then(|d| {
                d.rename(&p.tmp, &p.name, force).inspect_err(|_| {
                    let _ = d.unlink(&p.tmp);
                })
            });
            if let Err(e) = r {
                let reason = match e.raw_os_error() {
                    Some(libc::EEXIST) => "file exists (use --force on the receiver)".into(),
                    Some(libc::EISDIR) | Some(libc::ENOTEMPTY) => {
                        "a directory is in the way".into()
                    }
                    _ => io_reason(&e),
                };
                self.report.files = self.report.files.saturating_sub(1);
                self.report.bytes = self.report.bytes.saturating_sub(p.size);
                self.fail(p.shown.clone(), reason);
            }
        }
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
                self.fail(lossy(&path), io_reason(&e));
            }
        }
        self.cache = None;
        let _ = self.root.sync_fs();
        Ok(std::mem::take(&mut self.report))
    }

    /// The transfer failed: remove every temporary file (directories made
    /// stay).
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
        self.dropping = true;
        let shown = lossy(&meta.name);
        let (parent, name) = match self.check_name(strip_dot(&meta.name)) {
            Ok(parts) => split_last(&parts),
            Err(why) => return self.fail(shown, why),
        };
        let tmp = self.tmp_name(&name);
        let force = self.force;
        let opened = self.open_dir(&parent, true).and_then(|d| {
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
            },
        });
    }

    fn data(&mut self, bytes: &[u8]) -> Result<(), String> {
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
}

#[cfg(test)]
mod tests {
    use super::super::format::{padding, write_header, EntryKind, END};
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
        write_header(&m, out);
        out.extend_from_slice(data);
        out.resize(out.len() + padding(data.len() as u64), 0);
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
            [
                "file exists (use --force on the receiver)",
                "name too long for the receiver's file system"
            ]
        );
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
