//! A file being received: `.<name>.netblt-part` beside its final place,
//! with a journal `.<name>.netblt-journal` of the 1 MiB units written so far
//! (their BLAKE3 chaining values, [`super::tree`]), renamed into place only
//! once verified.
//!
//! The journal is what makes a transfer resumable (`--resume`): its first
//! line names the sender's file (size and modification time), then one line
//! per whole unit written, in order. A resume re-reads the partial file's
//! units and checks them against the journal before trusting them (a crash
//! may have lost data the journal mentions), and the end-to-end digest still
//! covers the whole file. Both files have fixed names, so a later transfer
//! of the same name finds them; an advisory lock (`flock`) keeps two
//! transfers of one name apart.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use blake3::hazmat::ChainingValue;

use super::tree::{unit_cv, UNIT};
use super::{hex, AppError, Kind};

/// What a journal says is already here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Journal {
    /// The sender's file: size and modification time (ns since 1970).
    pub(crate) size: u64,
    pub(crate) mtime: i64,
    /// Chaining values of the whole units written, in order (only those the
    /// partial file is long enough to hold).
    pub(crate) cvs: Vec<ChainingValue>,
}

impl Journal {
    /// Units worth resuming from: all whole units, but never the whole file
    /// (at least the last byte travels, so the transfer has a last buffer).
    pub(crate) fn usable(&self) -> usize {
        self.cvs
            .len()
            .min((self.size.saturating_sub(1) / UNIT) as usize)
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    v: u32,
    size: u64,
    mtime: i64,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct PartFile {
    pub(crate) final_path: PathBuf,
    pub(crate) part_path: PathBuf,
    journal_path: PathBuf,
    file: File,
    journal: Option<File>,
    force: bool,
    /// The sender's file (size, mtime), when both are known: then a
    /// journal is kept.
    pub(crate) ident: Option<(u64, i64)>,
    /// Permission bits to give the file.
    pub(crate) mode: Option<u32>,
    /// A resume agreed with the sender: the offset and the units' CVs.
    pub(crate) offer: Option<(u64, Vec<ChainingValue>)>,
    /// Committed or abandoned (else dropping it abandons it).
    settled: bool,
    /// Where the next data byte goes, once `start` or `resume` has cut the
    /// file there: from then on it is written only forward, zero blocks
    /// left as holes (`app/holes.rs`, decision M10).
    pos: Option<u64>,
}

/// `.<base><suffix>` beside `final_path`, or a hashed name when that would
/// not fit in a file name (255 bytes on Linux file systems).
fn side_path(final_path: &Path, suffix: &str) -> PathBuf {
    let dir = final_path.parent().unwrap_or(Path::new("."));
    let base = final_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let name = format!(".{base}{suffix}");
    if name.len() <= 255 {
        dir.join(name)
    } else {
        let h = blake3::hash(base.as_bytes());
        dir.join(format!(".{}{suffix}", hex(&h.as_bytes()[..16])))
    }
}

/// What an interrupted transfer left beside `final_path` to resume from:
/// its partial file (`.<name>.netblt-part`, or the hashed name of a long
/// one) and that file's length, when its journal is there too. For a tool
/// to say that `--resume` would continue it (F15).
pub fn partial_copy(final_path: &Path) -> Option<(PathBuf, u64)> {
    let part = side_path(final_path, ".netblt-part");
    let len = std::fs::metadata(&part).ok()?.len();
    side_path(final_path, ".netblt-journal")
        .exists()
        .then_some((part, len))
}

impl PartFile {
    /// Opens (without truncating) and locks the partial file for
    /// `final_path`. Refuses at once if the final file exists and `force` is
    /// off, or if it exists and is not a regular file.
    pub(crate) fn open(final_path: &Path, force: bool) -> Result<PartFile, AppError> {
        let shown = final_path.display().to_string();
        match std::fs::symlink_metadata(final_path) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(AppError::new(
                    Kind::Local,
                    format!("{shown}: exists and is not a regular file"),
                    "exists at the receiver and is not a regular file",
                ))
            }
            Ok(_) if !force => {
                return Err(AppError::new(
                    Kind::Local,
                    format!("{shown}: {}", crate::error::WIRE_FILE_EXISTS),
                    crate::error::WIRE_FILE_EXISTS,
                )
                .because(crate::ErrorKind::Local {
                    io: Some(std::io::ErrorKind::AlreadyExists),
                }))
            }
            // Found out now, not when renaming after the whole transfer.
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                return Err(AppError::io(&shown, &e));
            }
            _ => {}
        }
        let part_path = side_path(final_path, ".netblt-part");
        let journal_path = side_path(final_path, ".netblt-journal");
        // Never through a link someone put under the partial file's name.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&part_path)
            .map_err(|e| AppError::io(&shown, &e))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(AppError::new(
                Kind::Local,
                format!("{shown}: another transfer of this name is in progress"),
                // A sender killed a moment ago still holds its name here
                // until the death timer gives it up: say so, or the user
                // hunts for a transfer that is not there.
                "busy: another transfer of this name is in progress (one whose sender stopped is \
                 given up after the receiver's death timer, 10 s by default: try again then)",
            )
            .because(crate::ErrorKind::Local {
                io: Some(std::io::ErrorKind::ResourceBusy),
            }));
        }
        Ok(PartFile {
            final_path: final_path.to_path_buf(),
            part_path,
            journal_path,
            file,
            journal: None,
            force,
            ident: None,
            mode: None,
            offer: None,
            settled: false,
            pos: None,
        })
    }

    /// The journal left by an earlier transfer, if readable.
    pub(crate) fn journal(&self) -> Option<Journal> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.journal_path)
            .ok()?;
        let mut lines = BufReader::new(f).lines();
        let h: Header = serde_json::from_str(&lines.next()?.ok()?).ok()?;
        if h.v != 1 {
            return None;
        }
        let have = self.file.metadata().ok()?.len() / UNIT;
        let mut cvs = Vec::new();
        for line in lines {
            // A line cut short by a crash ends the journal.
            let Some(cv) = line.ok().as_deref().and_then(parse_cv) else {
                break;
            };
            if cvs.len() as u64 >= have {
                break;
            }
            cvs.push(cv);
        }
        Some(Journal {
            size: h.size,
            mtime: h.mtime,
            cvs,
        })
    }

    fn new_journal(&mut self, cvs: &[ChainingValue]) -> std::io::Result<()> {
        self.journal = None;
        let Some((size, mtime)) = self.ident else {
            let _ = std::fs::remove_file(&self.journal_path);
            return Ok(());
        };
        let mut j = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.journal_path)?;
        let h = serde_json::to_string(&Header { v: 1, size, mtime }).unwrap_or_default();
        writeln!(j, "{h}")?;
        self.journal = Some(j);
        self.record(cvs);
        Ok(())
    }

    /// Starts from nothing: empties the partial file, begins a journal.
    pub(crate) fn start(&mut self) -> Result<(), AppError> {
        let shown = self.final_path.display().to_string();
        self.file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)).map(drop))
            .and_then(|()| self.new_journal(&[]))
            .map_err(|e| AppError::io(&shown, &e))?;
        self.pos = Some(0);
        Ok(())
    }

    /// Continues at `from` (the sender agreed): re-reads the partial file's
    /// first `from` bytes and checks them against the journal's units.
    /// Returns those units' CVs.
    pub(crate) fn resume(&mut self, from: u64) -> Result<Vec<ChainingValue>, AppError> {
        let shown = self.final_path.display().to_string();
        let want = self
            .offer
            .as_ref()
            .filter(|(f, _)| *f == from)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| {
                AppError::new(
                    Kind::Failed,
                    format!("{shown}: the sender resumed at an offset never offered"),
                    "bad resume offset",
                )
            })?;
        let io = |e: std::io::Error| AppError::io(&shown, &e);
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut unit = vec![0u8; UNIT as usize];
        for (i, cv) in want.iter().enumerate() {
            let ok = self.file.read_exact(&mut unit).is_ok() && unit_cv(i as u64, &unit) == *cv;
            if !ok {
                self.discard_files();
                return Err(AppError::new(
                    Kind::Failed,
                    format!(
                        "{shown}: the partial copy changed on disk since it was journaled; discarded (send again)"
                    ),
                    "receiver's partial copy was damaged; send again",
                ));
            }
        }
        self.file.set_len(from).map_err(io)?;
        self.file.seek(SeekFrom::Start(from)).map_err(io)?;
        self.new_journal(&want).map_err(io)?;
        self.pos = Some(from);
        Ok(want)
    }

    /// The next data bytes. Zero blocks become holes once the file was
    /// cut where they go (`start`, `resume`); a journal's units count only
    /// the file's length (`journal`), so a hole not yet given its length by
    /// `commit` is never taken for data a resume can keep.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.pos {
            Some(pos) => crate::app::holes::write_forward(&self.file, pos, bytes),
            None => self.file.write_all(bytes),
        }
    }

    /// Appends units to the journal, after their data were written. A
    /// journal that cannot be written is given up (the transfer goes on; it
    /// just cannot resume).
    pub(crate) fn record(&mut self, cvs: &[ChainingValue]) {
        let Some(j) = &mut self.journal else {
            return;
        };
        let mut text = String::with_capacity(cvs.len() * 65);
        for cv in cvs {
            text.push_str(&hex(cv));
            text.push('\n');
        }
        if j.write_all(text.as_bytes()).is_err() {
            self.journal = None;
            let _ = std::fs::remove_file(&self.journal_path);
        }
    }

    /// Verified: sets the sender's modification time and permission bits,
    /// fsyncs, moves into place (never over an existing file without
    /// `force`), fsyncs the directory, drops the journal.
    pub(crate) fn commit(mut self) -> Result<(), AppError> {
        self.settled = true;
        let shown = self.final_path.display().to_string();
        let io = |e: std::io::Error| AppError::io(&shown, &e);
        // The length first: lengthening the file changes its mtime.
        if let Some(pos) = self.pos {
            crate::app::holes::set_length(&self.file, pos).map_err(io)?;
        }
        if let Some(mode) = self.mode {
            use std::os::unix::fs::PermissionsExt;
            let p = std::fs::Permissions::from_mode(stored_mode(mode));
            self.file.set_permissions(p).map_err(io)?;
        }
        if let Some((_, mtime)) = self.ident {
            let t = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_nanos(
                u64::try_from(mtime).unwrap_or(0),
            ));
            if let Some(t) = t.filter(|_| mtime >= 0) {
                let _ = self
                    .file
                    .set_times(std::fs::FileTimes::new().set_modified(t));
            }
        }
        self.file.sync_all().map_err(io)?;
        if self.force {
            std::fs::rename(&self.part_path, &self.final_path).map_err(io)?;
        } else {
            rename_noreplace(&self.part_path, &self.final_path).map_err(io)?;
        }
        let _ = std::fs::remove_file(&self.journal_path);
        if let Some(dir) = self.final_path.parent() {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    fn discard_files(&mut self) {
        self.journal = None;
        let _ = std::fs::remove_file(&self.part_path);
        let _ = std::fs::remove_file(&self.journal_path);
    }

    /// The transfer failed: keep what a resume can use (a journal with at
    /// least one unit), remove the rest.
    pub(crate) fn abandon(mut self, keep: bool) {
        self.abandon_files(keep);
    }

    fn abandon_files(&mut self, keep: bool) {
        self.settled = true;
        // Never started (`start`, `resume`: refused, or the peer never
        // answered): the files are an earlier transfer's, untouched, and a
        // resume can still use them. A `get` without --resume to a wrong
        // port removed them before anything was fetched (F15).
        let untouched = self.pos.is_none();
        let useful = keep
            && (self.journal.is_some() || untouched)
            && self.journal().is_some_and(|j| j.usable() > 0);
        if !useful {
            self.discard_files();
        }
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        // Never started (refused, or the connection never opened): leave
        // only what a resume can use.
        if !self.settled {
            self.abandon_files(true);
        }
    }
}

fn parse_cv(s: &str) -> Option<ChainingValue> {
    super::parse_hex(s)
}

/// Parses a hex digest (a RESPONSE's `prefix`).
pub(crate) fn parse_digest(s: &str) -> Option<[u8; 32]> {
    parse_cv(s)
}

fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let cstr =
        |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (cstr(from)?, cstr(to)?);
    // SAFETY: two valid NUL-terminated paths; AT_FDCWD-relative.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // A file system without RENAME_NOREPLACE: link (fails if the target
        // exists), then unlink.
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(e),
    }
}

/// The permission bits a receiver gives a file or directory from the
/// peer's `mode`: read, write and execute for owner, group and others, as
/// `rsync -p` without root's extras. Set-user-ID, set-group-ID and sticky
/// bits are dropped: a peer must not be able to plant a set-user-ID
/// program in a receiver that runs as root (decision M9 in
/// docs/decisions.md).
pub(crate) fn stored_mode(mode: u32) -> u32 {
    mode & 0o777
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trip_and_resume_checks_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let fin = dir.path().join("f");
        let data: Vec<u8> = (0..(3 * UNIT + 10) as u32)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut p = PartFile::open(&fin, false).unwrap();
        // A second transfer of the same name is refused while this one runs;
        // as a direct `Error` (a `get` before asking anyone) it keeps its
        // I/O kind (F28).
        let busy = crate::Error::from(PartFile::open(&fin, false).err().unwrap());
        assert_eq!(
            busy.kind(),
            crate::ErrorKind::Local {
                io: Some(std::io::ErrorKind::ResourceBusy)
            },
            "{busy}"
        );
        p.ident = Some((data.len() as u64, 42));
        p.start().unwrap();
        let cvs: Vec<_> = (0..2u64)
            .map(|i| unit_cv(i, &data[(i * UNIT) as usize..((i + 1) * UNIT) as usize]))
            .collect();
        p.write(&data[..(2 * UNIT + 5) as usize]).unwrap();
        p.record(&cvs);
        p.abandon(true);
        let mut p = PartFile::open(&fin, false).unwrap();
        let j = p.journal().unwrap();
        assert_eq!((j.size, j.mtime, j.usable()), (data.len() as u64, 42, 2));
        p.ident = Some((j.size, j.mtime));
        p.offer = Some((2 * UNIT, j.cvs.clone()));
        assert_eq!(p.resume(2 * UNIT).unwrap(), cvs);
        p.write(&data[(2 * UNIT) as usize..]).unwrap();
        p.commit().unwrap();
        assert_eq!(std::fs::read(&fin).unwrap(), data);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Damaged on disk: refused and discarded.
        let fin2 = dir.path().join("g");
        let mut p = PartFile::open(&fin2, false).unwrap();
        p.ident = Some((data.len() as u64, 1));
        p.start().unwrap();
        p.write(&vec![0u8; UNIT as usize + 1]).unwrap();
        p.record(&cvs[..1]);
        p.offer = Some((UNIT, cvs[..1].to_vec()));
        assert!(p.resume(UNIT).is_err());
        assert!(!p.part_path.exists());
    }

    /// Zero blocks are left as holes, and a resume across them keeps the
    /// bytes and the length (decision M10): a unit of zeros in the middle,
    /// zeros at the end.
    #[test]
    fn zeros_become_holes_and_survive_a_resume() {
        let dir = tempfile::tempdir().unwrap();
        let fin = dir.path().join("h");
        let mut data: Vec<u8> = (0..(3 * UNIT) as u32)
            .map(|i| (i % 251) as u8 | 1)
            .collect();
        data[UNIT as usize..(2 * UNIT) as usize].fill(0);
        data.resize((4 * UNIT) as usize + 10, 0);
        let cvs: Vec<_> = (0..2u64)
            .map(|i| unit_cv(i, &data[(i * UNIT) as usize..((i + 1) * UNIT) as usize]))
            .collect();
        let mut p = PartFile::open(&fin, false).unwrap();
        p.ident = Some((data.len() as u64, 7));
        p.start().unwrap();
        p.write(&data[..(2 * UNIT + 5) as usize]).unwrap();
        p.record(&cvs);
        p.abandon(true);
        let mut p = PartFile::open(&fin, false).unwrap();
        let j = p.journal().unwrap();
        assert_eq!(j.usable(), 2);
        p.ident = Some((j.size, j.mtime));
        p.offer = Some((2 * UNIT, j.cvs.clone()));
        assert_eq!(p.resume(2 * UNIT).unwrap(), cvs);
        for piece in data[(2 * UNIT) as usize..].chunks(70_000) {
            p.write(piece).unwrap();
        }
        p.commit().unwrap();
        assert_eq!(std::fs::read(&fin).unwrap(), data);
        // The sender's mtime, though the length was set after the writes.
        let mtime = std::fs::metadata(&fin).unwrap().modified().unwrap();
        assert_eq!(
            mtime,
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(7)
        );
        use std::os::unix::fs::MetadataExt;
        let probe = File::create(dir.path().join("probe")).unwrap();
        probe.set_len(UNIT).unwrap();
        if probe.metadata().unwrap().blocks() == 0 {
            // Two units of zeros (one in the middle, one at the end) not
            // on disk: at most the two data units and a block around each.
            let on_disk = std::fs::metadata(&fin).unwrap().blocks() * 512;
            assert!(on_disk <= 2 * UNIT + 4 * 4096, "{on_disk} bytes allocated");
        }
    }

    /// F15: a transfer that never started (refused, no answer) leaves an
    /// earlier transfer's partial copy as it was; one that starts from
    /// zero replaces it.
    #[test]
    fn a_transfer_that_never_started_keeps_the_partial_copy() {
        let dir = tempfile::tempdir().unwrap();
        let fin = dir.path().join("k");
        let data = vec![7u8; (2 * UNIT + 3) as usize];
        let cv = unit_cv(0, &data[..UNIT as usize]);
        let mut p = PartFile::open(&fin, false).unwrap();
        p.ident = Some((data.len() as u64, 5));
        p.start().unwrap();
        p.write(&data[..(UNIT + 1) as usize]).unwrap();
        p.record(&[cv]);
        p.abandon(true);
        // What a tool finds to resume from.
        assert!(partial_copy(&fin).is_some_and(|(p, len)| p.ends_with(".k.netblt-part") && len > 0));
        // Opened again and dropped unstarted: kept.
        drop(PartFile::open(&fin, false).unwrap());
        let p = PartFile::open(&fin, false).unwrap();
        assert_eq!(p.journal().map(|j| j.usable()), Some(1));
        drop(p);
        // Started from zero, then given up before a unit: gone.
        let mut p = PartFile::open(&fin, false).unwrap();
        p.ident = Some((data.len() as u64, 5));
        p.start().unwrap();
        p.abandon(true);
        assert!(!dir.path().join(".k.netblt-part").exists());
        assert!(partial_copy(&fin).is_none());
        // Nothing there before, nothing started: no empty file left.
        drop(PartFile::open(&dir.path().join("n"), false).unwrap());
        assert!(!dir.path().join(".n.netblt-part").exists());
    }

    #[test]
    fn long_names_get_short_side_files() {
        let long = "x".repeat(250);
        let p = side_path(Path::new(&format!("/d/{long}")), ".netblt-part");
        assert!(p.file_name().unwrap().len() <= 255);
    }
}
