//! File operations relative to an open directory (`openat(2)` and
//! friends), so that unpacking never follows a symbolic link: every path
//! component below the receiver's directory is opened with `O_NOFOLLOW`,
//! files are created with `O_EXCL | O_NOFOLLOW`, and renames name both
//! ends inside the directory we hold. A link planted in the destination
//! (`dst/tree -> /etc`) makes the open fail (`ELOOP`/`ENOTDIR`) instead of
//! leading outside. std has no `*at` calls, so these are thin libc wrappers.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

fn cstr(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// What a name in a directory is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    Missing,
    File,
    Dir,
    /// A symbolic link, device, socket or FIFO.
    Other,
}

/// An open directory.
#[derive(Debug)]
pub(crate) struct Dir(OwnedFd);

impl Dir {
    /// Opens the receiver's own directory (the user chose it: a link here
    /// is followed).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        use std::os::unix::ffi::OsStrExt;
        let p = cstr(path.as_os_str().as_bytes())?;
        // SAFETY: a valid NUL-terminated path; the fd is owned below.
        let fd = check(unsafe {
            libc::open(
                p.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: a fresh descriptor we own.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Opens the subdirectory `name` (one component), never through a link.
    pub(crate) fn child(&self, name: &[u8]) -> io::Result<Dir> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name; the fd is owned below.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                n.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: a fresh descriptor we own.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the subdirectory `name` (the umask applies, as for `mkdir -p`).
    pub(crate) fn mkdir(&self, name: &[u8]) -> io::Result<()> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name.
        check(unsafe { libc::mkdirat(self.0.as_raw_fd(), n.as_ptr(), 0o777) }).map(drop)
    }

    /// Creates the new file `name` for writing; fails if anything (a link
    /// included) has that name.
    pub(crate) fn create_new(&self, name: &[u8]) -> io::Result<File> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name; the fd is owned below.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                n.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        })?;
        // SAFETY: a fresh descriptor we own.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Opens the regular file `name` for reading, never through a link
    /// (`O_NOFOLLOW`: a link fails with `ELOOP`).
    pub(crate) fn open_read(&self, name: &[u8]) -> io::Result<File> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name; the fd is owned below.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                n.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: a fresh descriptor we own.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// What `name` is (`fstatat` with `AT_SYMLINK_NOFOLLOW`).
    pub(crate) fn find(&self, name: &[u8]) -> io::Result<Found> {
        let n = cstr(name)?;
        // SAFETY: zeroed stat filled by the call.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our directory fd, a valid name and a stat we own.
        let r = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                n.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(Found::Missing),
                _ => Err(e),
            };
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Found::File,
            libc::S_IFDIR => Found::Dir,
            _ => Found::Other,
        })
    }

    /// Renames `from` to `to`, both in this directory. With `replace`
    /// off, an existing `to` is never replaced (`RENAME_NOREPLACE`, or
    /// link + unlink where the file system lacks it).
    pub(crate) fn rename(&self, from: &[u8], to: &[u8], replace: bool) -> io::Result<()> {
        self.rename_into(from, self, to, replace)
    }

    /// Renames `from` in this directory to `to` in `dir` (the same file
    /// system), with [`Dir::rename`]'s rule for an existing `to`.
    pub(crate) fn rename_into(
        &self,
        from: &[u8],
        dir: &Dir,
        to: &[u8],
        replace: bool,
    ) -> io::Result<()> {
        let (a, b) = (cstr(from)?, cstr(to)?);
        let (fa, fb) = (self.0.as_raw_fd(), dir.0.as_raw_fd());
        let flags = if replace { 0 } else { libc::RENAME_NOREPLACE };
        // SAFETY: our directory fds and two valid names.
        let r = unsafe { libc::renameat2(fa, a.as_ptr(), fb, b.as_ptr(), flags) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if replace || !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(e);
        }
        // SAFETY: as above; linkat fails if `to` exists.
        check(unsafe { libc::linkat(fa, a.as_ptr(), fb, b.as_ptr(), 0) })?;
        self.unlink(from)
    }

    /// Removes the empty subdirectory `name`.
    pub(crate) fn rmdir(&self, name: &[u8]) -> io::Result<()> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), n.as_ptr(), libc::AT_REMOVEDIR) })
            .map(drop)
    }

    /// Removes the file `name`.
    pub(crate) fn unlink(&self, name: &[u8]) -> io::Result<()> {
        let n = cstr(name)?;
        // SAFETY: our directory fd and a valid name.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), n.as_ptr(), 0) }).map(drop)
    }

    /// Sets this directory's permission bits and modification time.
    pub(crate) fn set_mode_and_mtime(
        &self,
        mode: u32,
        mtime: std::time::SystemTime,
    ) -> io::Result<()> {
        // Borrow the fd as a File for std's fchmod/futimens, without
        // closing it.
        // SAFETY: the fd stays owned by self; ManuallyDrop never closes it.
        let f = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(self.0.as_raw_fd()) });
        f.set_times(std::fs::FileTimes::new().set_modified(mtime))?;
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(
            crate::app::partial::stored_mode(mode),
        ))
    }

    /// Flushes the whole file system this directory is on (`syncfs`): one
    /// call for every file written, instead of an `fsync` each.
    pub(crate) fn sync_fs(&self) -> io::Result<()> {
        // SAFETY: our fd.
        check(unsafe { libc::syncfs(self.0.as_raw_fd()) }).map(drop)
    }

    /// The longest file name this file system takes (`NAME_MAX`).
    pub(crate) fn name_max(&self) -> usize {
        // SAFETY: our fd.
        let n = unsafe { libc::fpathconf(self.0.as_raw_fd(), libc::_PC_NAME_MAX) };
        usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(255)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(out.path(), t.path().join("ln")).unwrap();
        std::os::unix::fs::symlink(out.path().join("f"), t.path().join("lf")).unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert!(d.child(b"ln").is_err());
        assert!(d.create_new(b"lf").is_err());
        assert_eq!(d.find(b"ln").unwrap(), Found::Other);
        assert_eq!(d.find(b"nothing").unwrap(), Found::Missing);
        assert!(!out.path().join("f").exists());
        d.mkdir(b"sub").unwrap();
        let s = d.child(b"sub").unwrap();
        s.create_new(b"a").unwrap();
        assert!(s.create_new(b"a").is_err());
        s.create_new(b"b").unwrap();
        assert!(s.rename(b"a", b"b", false).is_err());
        s.rename(b"a", b"c", false).unwrap();
        assert_eq!(s.find(b"c").unwrap(), Found::File);
        // Into another directory, never over an existing name.
        d.create_new(b"b").unwrap();
        assert!(s.rename_into(b"b", &d, b"b", false).is_err());
        s.rename_into(b"c", &d, b"c", false).unwrap();
        assert_eq!(d.find(b"c").unwrap(), Found::File);
        d.unlink(b"c").unwrap();
        s.unlink(b"b").unwrap();
        d.unlink(b"b").unwrap();
        assert!(d.rmdir(b"sub").is_ok());
        assert_eq!(d.find(b"sub").unwrap(), Found::Missing);
        assert!(d.name_max() >= 14);
    }
}
