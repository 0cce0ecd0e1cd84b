//! The data receiver's writer thread: buffers into a temporary file (or
//! nowhere, for `--sink`), hashed on the way; the trailing 32 bytes are the
//! sender's digest, compared when the last buffer arrives.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{AppError, Kind, DIGEST_LEN};
use crate::driver::Waker;
use crate::handler::{IncomingTransfer, SharedHandler};

/// Buffers queued for the disk before the network loop holds back.
const DEPTH: usize = 4;

/// A file being received: written under a temporary name next to its final
/// place, renamed only once verified.
#[derive(Debug)]
pub(crate) struct TempFile {
    pub(crate) final_path: PathBuf,
    pub(crate) temp_path: PathBuf,
    file: File,
    force: bool,
}

impl TempFile {
    /// Creates `.<name>.netblt-<random>.part` beside `final_path`. Refuses at
    /// once if the final file exists and `force` is off, or if it exists and
    /// is not a regular file.
    pub(crate) fn create(final_path: &Path, force: bool) -> Result<TempFile, AppError> {
        let shown = final_path.display().to_string();
        match std::fs::symlink_metadata(final_path) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(AppError::new(
                    Kind::Local,
                    format!("{shown}: exists and is not a regular file"),
                    "name not allowed",
                ))
            }
            Ok(_) if !force => {
                return Err(AppError::new(
                    Kind::Local,
                    format!("{shown}: file exists (use --force to overwrite)"),
                    "file exists (use --force on the receiver)",
                ))
            }
            _ => {}
        }
        let dir = final_path.parent().unwrap_or(Path::new("."));
        let base = final_path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let temp_path = dir.join(format!(
            ".{base}.netblt-{:08x}.part",
            crate::driver::random_u32()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| AppError::io(&dir.display().to_string(), &e))?;
        Ok(TempFile {
            final_path: final_path.to_path_buf(),
            temp_path,
            file,
            force,
        })
    }

    /// fsync, then move into place (never over an existing file without
    /// `force`), then fsync the directory.
    fn commit(self) -> Result<(), AppError> {
        let shown = self.final_path.display().to_string();
        self.file.sync_all().map_err(|e| AppError::io(&shown, &e))?;
        drop(self.file);
        if self.force {
            std::fs::rename(&self.temp_path, &self.final_path)
                .map_err(|e| AppError::io(&shown, &e))?;
        } else {
            rename_noreplace(&self.temp_path, &self.final_path)
                .map_err(|e| AppError::io(&shown, &e))?;
        }
        if let Some(dir) = self.final_path.parent() {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
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

/// Where received bytes go.
pub(crate) enum Target {
    /// Hashed and dropped (`--sink`).
    Discard,
    File(TempFile),
    /// Handed to the user's handler as they come.
    Handler(SharedHandler, IncomingTransfer),
}

impl Target {
    /// Tells a handler how its transfer ended.
    fn end(&self, verified: bool) {
        if let Target::Handler(h, t) = self {
            if let Ok(mut h) = h.lock() {
                h.end(t, verified);
            }
        }
    }
}

/// What the writer thread tells the network loop.
pub(crate) enum Output {
    /// A buffer's storage, for `Connection::recycle`.
    Storage(Vec<u8>),
    /// The last buffer was checked (and the file committed): the digest, or
    /// why not.
    Verdict(Result<[u8; DIGEST_LEN], AppError>),
}

/// Handle on a running writer thread.
pub(crate) struct Sink {
    input: Option<SyncSender<(Vec<u8>, bool)>>,
    output: Receiver<Output>,
    handle: Option<JoinHandle<()>>,
}

impl Sink {
    pub(crate) fn spawn(size: u64, target: Target, waker: Arc<Waker>) -> Sink {
        let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, bool)>(DEPTH);
        let (otx, orx) = mpsc::channel::<Output>();
        let handle = std::thread::Builder::new()
            .name("netblt-write".into())
            .spawn(move || write_loop(size, target, &rx, &otx, &waker))
            .ok();
        Sink {
            input: Some(tx),
            output: orx,
            handle,
        }
    }

    /// Hands over a received buffer; gives it back if the writer is behind.
    pub(crate) fn offer(&self, data: Vec<u8>, last: bool) -> Result<(), (Vec<u8>, bool)> {
        let Some(tx) = &self.input else {
            return Ok(()); // finished: drop it
        };
        match tx.try_send((data, last)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(v)) => Err(v),
            Err(TrySendError::Disconnected(_)) => Ok(()),
        }
    }

    pub(crate) fn poll(&self) -> Option<Output> {
        self.output.try_recv().ok()
    }

    /// Ends the thread: without a verdict given, the temporary file is
    /// removed. Waits for it.
    pub(crate) fn stop(&mut self) {
        self.input = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_loop(
    size: u64,
    mut target: Target,
    input: &Receiver<(Vec<u8>, bool)>,
    output: &mpsc::Sender<Output>,
    waker: &Waker,
) {
    let expected = size + DIGEST_LEN as u64;
    let mut hasher = blake3::Hasher::new();
    let mut tail = [0u8; DIGEST_LEN];
    let mut total = 0u64;
    let shown = match &target {
        Target::File(t) => t.final_path.display().to_string(),
        Target::Discard => "sink".into(),
        Target::Handler(_, t) => t.name.clone(),
    };
    let send = |o: Output| {
        let _ = output.send(o);
        waker.wake();
    };
    let fail = |target: Target, e: AppError| {
        target.end(false);
        if let Target::File(t) = target {
            let _ = std::fs::remove_file(&t.temp_path);
        }
        send(Output::Verdict(Err(e)));
    };
    while let Ok((buf, last)) = input.recv() {
        let start = total;
        total += buf.len() as u64;
        if total > expected {
            send(Output::Storage(buf));
            return fail(
                target,
                AppError::new(
                    Kind::Failed,
                    format!("{shown}: peer sent more data than announced"),
                    "size mismatch",
                ),
            );
        }
        let payload = size.saturating_sub(start).min(buf.len() as u64) as usize;
        hasher.update(&buf[..payload]);
        match &mut target {
            Target::File(t) => {
                if let Err(e) = t.file.write_all(&buf[..payload]) {
                    send(Output::Storage(buf));
                    return fail(target, AppError::io(&shown, &e));
                }
            }
            Target::Handler(h, t) if payload > 0 => {
                let r = match h.lock() {
                    Ok(mut h) => h.data(t, start, &buf[..payload]),
                    Err(_) => Err("handler panicked".to_string()),
                };
                if let Err(reason) = r {
                    send(Output::Storage(buf));
                    return fail(
                        target,
                        AppError::new(Kind::Failed, format!("{shown}: {reason}"), reason),
                    );
                }
            }
            _ => {}
        }
        for (k, b) in buf[payload..].iter().enumerate() {
            let at = (start + (payload + k) as u64 - size) as usize;
            if let Some(slot) = tail.get_mut(at) {
                *slot = *b;
            }
        }
        send(Output::Storage(buf));
        if last {
            if total != expected {
                return fail(
                    target,
                    AppError::new(
                        Kind::Failed,
                        format!("{shown}: transfer shorter than announced"),
                        "size mismatch",
                    ),
                );
            }
            let digest: [u8; DIGEST_LEN] = hasher.finalize().into();
            if digest != tail {
                return fail(
                    target,
                    AppError::new(
                        Kind::Failed,
                        format!("{shown}: digest mismatch, data corrupted"),
                        "digest mismatch",
                    ),
                );
            }
            match target {
                Target::File(t) => {
                    let temp = t.temp_path.clone();
                    if let Err(e) = t.commit() {
                        let _ = std::fs::remove_file(&temp);
                        send(Output::Verdict(Err(e)));
                        return;
                    }
                }
                other => other.end(true),
            }
            send(Output::Verdict(Ok(digest)));
            return;
        }
    }
    // The connection ended before the last buffer.
    target.end(false);
    if let Target::File(t) = target {
        let _ = std::fs::remove_file(&t.temp_path);
    }
}
