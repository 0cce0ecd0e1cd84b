//! The active end: send files, directories and readers to a receiver, fetch
//! files from one, run the memory-to-memory test. Each call runs one
//! transfer (or one per file) to its end on the calling thread.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use netblt_proto::{Connection, Mode};

use crate::app::meta::Request;
use crate::app::names::{sanitize, walk};
use crate::app::params::config;
use crate::app::sink::{Target, TempFile};
use crate::app::source::{Input, Pattern};
use crate::app::transfer::{Plan, Transfer};
use crate::app::{io_reason, AppError, Kind, DIGEST_LEN};
use crate::driver::active::{run_active, ActiveOptions};
use crate::driver::Waker;
use crate::error::Error;
use crate::options::{death_secs, Progress, SendOptions};
use crate::report::{cpu_times, IoCounters, TransferReport};

/// A new waker for one loop.
pub(crate) fn new_waker() -> Result<Arc<Waker>, AppError> {
    Waker::new()
        .map(Arc::new)
        .map_err(|e| AppError::new(Kind::Local, format!("eventfd: {e}"), ""))
}

/// Sends one file to a receiver (`netblt recv`, or a
/// [`Receiver`](crate::Receiver)) under its file name.
///
/// Returns once the receiver has verified the data (BLAKE3) and stored it:
/// `Ok` means the file is in place at the other end. A transfer that starts
/// and fails is [`Error::Transfer`], with its report.
pub fn send_file(
    path: impl AsRef<Path>,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let path = path.as_ref();
    if path.is_dir() {
        return Err(Error::InvalidOptions(format!(
            "{}: is a directory (use send_dir)",
            path.display()
        )));
    }
    let (p, name) = walk(&[path.to_path_buf()])
        .map_err(|e| Error::Local(format!("{}: {}", path.display(), io_reason(&e))))?
        .pop()
        .ok_or_else(|| Error::Local(format!("{}: no such file", path.display())))?;
    send_file_as(p, &name, addr, opts)
}

/// Sends one file under the given name (a relative path with `/`
/// separators: the receiver stores it there below its directory).
pub fn send_file_as(
    path: impl AsRef<Path>,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Local(format!("{shown}: {}", io_reason(&e))))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::Local(format!("{shown}: {}", io_reason(&e))))?;
    if !meta.is_file() {
        return Err(Error::Local(format!("{shown}: not a regular file")));
    }
    send_reader(file, meta.len(), name, addr, opts)
}

/// The files [`send_dir`] sends for `paths` (files or directories), with
/// their names: a file by its file name, a directory's regular files as
/// `dirname/rel/path`, in name order. Symbolic links and special files
/// inside directories are skipped.
pub fn files_to_send(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, Error> {
    walk(paths).map_err(|e| Error::Local(format!("reading the files to send: {}", io_reason(&e))))
}

/// Sends every regular file below `dir`, one transfer each, in turn, named
/// `dirname/rel/path`. Stops at the first failure.
pub fn send_dir(
    dir: impl AsRef<Path>,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<Vec<TransferReport>, Error> {
    let mut out = Vec::new();
    for (path, name) in files_to_send(&[dir.as_ref().to_path_buf()])? {
        out.push(send_file_as(&path, &name, addr, opts)?);
    }
    Ok(out)
}

/// Sends `size` bytes read from `reader` under `name`. The reader must
/// yield exactly `size` bytes (the size travels in the OPEN); it runs on its
/// own thread.
pub fn send_reader(
    reader: impl Read + Send + 'static,
    size: u64,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let waker = new_waker()?;
    let transfer = Transfer::new(
        name,
        Plan::Send {
            reader: Input::Read(Box::new(reader)),
            size,
        },
        waker.clone(),
    );
    let req = Request::Put {
        name: name.to_string(),
        size,
    };
    let report = run(
        addr,
        Mode::Write,
        Some(size + DIGEST_LEN as u64),
        req.encode(),
        transfer,
        &waker,
        opts,
    )?;
    report.into_result()
}

/// Fetches the file `name` (relative to its directory) from a receiver that
/// serves files (`netblt recv --serve`, or
/// [`ReceiverOptions::serve`](crate::ReceiverOptions::serve)), into `dest`:
/// a file path, or an existing directory to put it in under the name's last
/// component. An existing file is refused unless
/// [`SendOptions::overwrite`]. The file appears only once verified.
pub fn get(
    addr: SocketAddr,
    name: &str,
    dest: impl AsRef<Path>,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let parts = sanitize(name).map_err(|_| {
        Error::InvalidOptions(format!(
            "'{name}': not a valid name (relative path, no '..')"
        ))
    })?;
    let base = parts.last().copied().unwrap_or("file").to_string();
    let dest = dest.as_ref();
    let out = if dest.is_dir() {
        dest.join(&base)
    } else {
        dest.to_path_buf()
    };
    // Fail before talking to anyone if the file is in the way.
    if std::fs::symlink_metadata(&out).is_ok() && !opts.overwrite {
        return Err(Error::Local(format!(
            "{}: file exists (use --force to overwrite)",
            out.display()
        )));
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Local(format!(
            "{}: no such directory",
            parent.display()
        )));
    }
    let waker = new_waker()?;
    let force = opts.overwrite;
    let transfer = Transfer::new(
        name,
        Plan::Receive {
            size: None,
            target: None,
            make: Some(Box::new(move |_size| {
                TempFile::create(&out, force).map(Target::File)
            })),
        },
        waker.clone(),
    );
    let req = Request::Get {
        name: name.to_string(),
    };
    run(addr, Mode::Read, None, req.encode(), transfer, &waker, opts)?.into_result()
}

/// RFC 1030's memory-to-memory test: sends `size` bytes of a generated
/// pattern to a receiver, which discards them (`netblt recv --sink`, or any
/// receiver: such requests are always discarded). Both ends still hash the
/// data, as for a file. The report's [`io`](TransferReport::io) has the
/// socket's system-call counters.
pub fn bench(addr: SocketAddr, size: u64, opts: &SendOptions) -> Result<TransferReport, Error> {
    let waker = new_waker()?;
    let transfer = Transfer::new(
        "sink",
        Plan::Send {
            reader: Input::Pattern(Pattern::new(0x6e65_7462_6c74)),
            size,
        },
        waker.clone(),
    );
    let req = Request::Sink { size };
    run(
        addr,
        Mode::Write,
        Some(size + DIGEST_LEN as u64),
        req.encode(),
        transfer,
        &waker,
        opts,
    )?
    .into_result()
}

/// Runs `transfer` as the active end and builds its report.
fn run(
    remote: SocketAddr,
    mode: Mode,
    transfer_size: Option<u64>,
    client: Vec<u8>,
    mut transfer: Transfer,
    waker: &Arc<Waker>,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let aopts = ActiveOptions {
        remote,
        remote_port: remote.port(),
        raw: opts.raw_ip,
        config: config(
            opts.offer(),
            death_secs(opts.death_timer),
            remote.is_ipv6(),
            opts.rate_config(),
        ),
        mode,
        transfer_size,
        client,
        security: opts.security.clone(),
    };
    let never = AtomicBool::new(false);
    let stop = opts.stop.as_deref().unwrap_or(&never);
    let mut progress = |t: &Transfer, c: &Connection| {
        if let Some(f) = &opts.progress {
            f(&Progress {
                name: t.name.clone(),
                bytes: t.progress(),
                total: t.size,
                retransmitted: c.stats().data_packets_retransmitted,
                rate_bps: c.rate_state().map(|r| r.rate_bps as u64),
                rate_reason: c.rate_state().map(|r| r.reason.name()),
            });
        }
    };
    let cpu0 = cpu_times();
    let out = run_active(&aopts, &mut transfer, waker, stop, &mut progress)?;
    let cpu1 = cpu_times();
    let mut report = TransferReport::new(
        &transfer,
        &out.conn,
        remote.to_string(),
        out.wall,
        (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
    );
    report.io = Some(IoCounters {
        send_syscalls: out.send_syscalls,
        recv_syscalls: out.io.recv_syscalls,
        gso_fallbacks: out.io.gso_fallbacks,
    });
    report.security = out.security;
    Ok(report)
}
