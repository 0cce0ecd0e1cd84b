//! The active end: send files, directories and readers to a receiver, fetch
//! files from one, run the memory-to-memory test. Each call runs one
//! transfer (or one per file) to its end on the calling thread.

use std::collections::HashSet;

use blake3::hazmat::ChainingValue;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use netblt_proto::{Connection, Mode};

use crate::app::bundle::pack::Packer;
use crate::app::bundle::unpack::Unpacker;
use crate::app::bundle::{Bundle, FilesReport};
use crate::app::have::{Token, NOT_KEPT, TOKEN};
use crate::app::meta::{
    Have, Request, Response, ALREADY_THERE, MAX_SAME_NAMES, NOTHING_TO_COMPARE,
};
use crate::app::names::{sanitize, walk};
use crate::app::params::config;
use crate::app::partial::PartFile;
use crate::app::same::{digests_below, item_digest, Quick, DIGEST, MAX_REPLY};
use crate::app::sink::Target;
use crate::app::source::{Input, Pattern};
use crate::app::transfer::{MakeTarget, Plan, Transfer};
use crate::app::tree::{prefix_hash, UNIT};
use crate::app::{hex, AppError, Kind, DIGEST_LEN};
use crate::cpu_wait::{cgroup_throttled_s, thread_run_delay_s, throttled_between};
use crate::diagnosis::{diagnose, LimitInputs};
use crate::driver::active::{run_active, ActiveOptions};
use crate::driver::Waker;
use crate::error::local_io;
use crate::error::Error;
use crate::options::{death_secs, Progress, SendOptions};
use crate::report::{cpu_times, IoCounters, TransferReport};

/// A new waker for one loop.
pub(crate) fn new_waker() -> Result<Arc<Waker>, AppError> {
    Waker::new()
        .map(Arc::new)
        .map_err(|e| AppError::io("eventfd", &e))
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
        .map_err(|(at, e)| local_io(&at, &e))?
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
    let file = std::fs::File::open(path).map_err(|e| local_io(path, &e))?;
    send_open_file(file, path, name, addr, opts)
}

/// [`send_file_as`] for a file a walk of a directory found
/// ([`Bundle::split_resumable`]'s large files): opened without following a
/// link and without waiting on a FIFO, as a bundle opens its files, so that
/// a file replaced by a link since the walk is refused, never followed out
/// of the directory, and one replaced by a FIFO does not hang the sender.
/// A link given by the user is resolved by the walk first.
pub fn send_walked_file(
    path: impl AsRef<Path>,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let path = path.as_ref();
    let file = crate::app::bundle::pack::open_walked(path).map_err(|e| match e.raw_os_error() {
        // ELOOP here is the link `O_NOFOLLOW` refused, not a loop of
        // links: words of its own, no I/O kind (F28 lists it).
        Some(libc::ELOOP) => Error::Local(format!(
            "{}: not a regular file (a symbolic link)",
            path.display()
        )),
        _ => local_io(path, &e),
    })?;
    send_open_file(file, path, name, addr, opts)
}

/// Sends a file opened by [`send_file_as`] or [`send_walked_file`].
fn send_open_file(
    file: std::fs::File,
    path: &Path,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let meta = file.metadata().map_err(|e| local_io(path, &e))?;
    if !meta.is_file() {
        return Err(Error::Local(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    // The size at open is what is sent: a file that grows meanwhile is sent
    // as it was (its first `size` bytes); one that shrinks fails.
    let size = meta.len();
    let req = Request::Put {
        name: name.to_string(),
        size: Some(size),
        mtime: mtime_ns(&meta),
        mode: Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions())),
        resume: opts.resume,
    };
    let input = Input::File { file, offer: None };
    put(input, Some(size), opts.resume, name, req, addr, opts)
}

/// A file's modification time in nanoseconds since 1970 (the resume
/// journal's identity of a file; set on the received copy).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    meta.mtime()
        .checked_mul(1_000_000_000)?
        .checked_add(meta.mtime_nsec())
}

/// Sends a [`Bundle`] (files and directories) in ONE transfer: a tar
/// stream made on the fly, unpacked on the fly by the receiver into its
/// directory, with modification times and permission bits kept
/// (`crate::app::bundle` has the rules; `netblt send DIR HOST`).
///
/// `Ok` means the receiver verified the whole stream (BLAKE3) and stored
/// every entry. The report's [`files`](TransferReport::files) counts what was
/// sent and lists what this end skipped (unreadable files); files the
/// receiver could not store make the transfer fail with the receiver's list
/// in the error ("N of M entries could not be stored at the receiver",
/// then one line each), the others being in place. A receiver older than
/// bundles refuses with "unknown operation 'bundle'": send the files one by
/// one ([`send_file_as`]) to it.
///
/// Every file of `bundle` goes in the stream, whatever
/// [`SendOptions::resumable_min`] says: an interrupted bundle keeps
/// nothing at the receiver, so to keep large files resumable take them out
/// first with [`Bundle::split_resumable`] and send them after it (what the
/// tool's `send DIR` does, decision F19).
pub fn send_bundle(
    bundle: &Bundle,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let report = Arc::new(Mutex::new(FilesReport::default()));
    let packer = Packer::new(bundle.clone(), Arc::clone(&report));
    let req = Request::Bundle {
        name: bundle.name().to_string(),
    };
    let waker = new_waker()?;
    let mut transfer = Transfer::new(
        bundle.name(),
        Plan::Send {
            reader: Input::Stream(Box::new(packer)),
            size: None,
            resume: false,
        },
        waker.clone(),
    );
    transfer.pack = Some(report);
    transfer.total_hint = Some(bundle.stream_len());
    let report = run(
        addr,
        Mode::Write,
        None,
        req.encode(),
        transfer,
        &waker,
        opts,
    )?;
    match report.files.as_ref().map(FilesReport::failures) {
        // Everything arrived that was sent, but not everything was sent.
        Some(n) if n > 0 && report.error.is_none() => {
            let mut r = report;
            r.error = Some(Error::Local(if n == 1 {
                "1 entry could not be read and was not sent".to_string()
            } else {
                format!("{n} entries could not be read and were not sent")
            }));
            Err(Error::Transfer(Box::new(r)))
        }
        _ => report.into_result(),
    }
}

/// Sends a tar stream read from `reader` as a bundle: the receiver unpacks
/// it with the rules of [`send_bundle`] (regular files and directories;
/// links and devices refused per entry; nothing outside its directory).
/// `tar c dir | netblt send - HOST --tar` uses this. `name` labels it in
/// reports.
pub fn send_tar(
    reader: impl Read + Send + 'static,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let req = Request::Bundle {
        name: name.to_string(),
    };
    let input = Input::Stream(Box::new(reader));
    put(input, None, false, name, req, addr, opts)
}

/// Runs a WRITE transfer.
fn put(
    input: Input,
    size: Option<u64>,
    resume: bool,
    name: &str,
    req: Request,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let waker = new_waker()?;
    let transfer = Transfer::new(
        name,
        Plan::Send {
            reader: input,
            size,
            resume,
        },
        waker.clone(),
    );
    // A resumed transfer's length is not known before the RESPONSE: "not
    // given" (RFC 998 §3: the transfer size is informational).
    let transfer_size = size.filter(|_| !resume).map(|s| s + DIGEST_LEN as u64);
    let mut report = run(
        addr,
        Mode::Write,
        transfer_size,
        req.encode(),
        transfer,
        &waker,
        opts,
    )?;
    // The receiver has the whole file already (M13): nothing to send.
    if let (true, Some(size)) = (resume, size) {
        already_there(&mut report, size);
    }
    report.into_result()
}

/// A resumed transfer the other end refused because it holds the whole
/// file already (same size and time, M13 and F12): done, nothing sent.
fn already_there(report: &mut TransferReport, size: u64) {
    if report
        .error
        .as_ref()
        .is_some_and(|e| declined(e, &[ALREADY_THERE]))
    {
        report.error = None;
        report.bytes = size;
        report.resumed_from = Some(size);
    }
}

/// The files [`send_dir`] sends for `paths` (files or directories), with
/// their names: a file by its file name, a directory's regular files as
/// `dirname/rel/path`, in name order. Symbolic links and special files
/// inside directories are skipped.
pub fn files_to_send(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, Error> {
    walk(paths).map_err(|(at, e)| local_io(&at, &e))
}

/// Sends every regular file below `dir`, one transfer each, in turn, named
/// `dirname/rel/path`. Stops at the first failure. (Many small files go
/// much faster in one transfer: [`send_bundle`].)
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
    let req = Request::Put {
        name: name.to_string(),
        size: Some(size),
        mtime: None,
        mode: None,
        resume: false,
    };
    let input = Input::Read(Box::new(reader));
    put(input, Some(size), false, name, req, addr, opts)
}

/// Sends everything `reader` yields, to its end, under `name`: a stream of
/// unknown length (`netblt send - HOST --name NAME` reads standard input).
/// The OPEN gives no size; the last buffer ends the stream, and the BLAKE3
/// digest still follows the data and is checked by the receiver. The
/// report's `bytes` is the length sent.
pub fn send_stream(
    reader: impl Read + Send + 'static,
    name: &str,
    addr: SocketAddr,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let req = Request::Put {
        name: name.to_string(),
        size: None,
        mtime: None,
        mode: None,
        resume: false,
    };
    let input = Input::Stream(Box::new(reader));
    put(input, None, false, name, req, addr, opts)
}

/// Fetches the file or directory `name` (relative to its directory) from a
/// receiver that serves files (`netblt recv --serve`, or
/// [`ReceiverOptions::serve`](crate::ReceiverOptions::serve)) into `dest`,
/// as `scp -r` puts it: inside `dest` under the name's last component when
/// `dest` is an existing directory, else as `dest` itself, whose parent
/// must exist. A file appears only once verified; an existing file is
/// refused unless [`SendOptions::overwrite`].
///
/// A directory comes in one transfer as a bundle (decision M15) and is
/// unpacked with the rules of a receiver of [`send_bundle`]: modification
/// times and permission bits kept, nothing written outside the destination,
/// nothing under its final name before the whole stream is verified, a file
/// already there with the same bytes left as it is (counted `unchanged`), a
/// differing one refused unless [`SendOptions::overwrite`]. The report's
/// [`files`](TransferReport::files) says what arrived; entries that could
/// not be stored, or that the server could not read, make it fail with "N
/// of M entries could not be stored" and are listed there, the others being
/// in place. A directory cannot be resumed: with [`SendOptions::resume`] it
/// is fetched whole, and the report's `note` says so. The served directory
/// itself (`""`, `"."`) cannot be fetched: name one inside it.
///
/// A directory fetched again (the destination exists as a directory) moves
/// only what changed (decision M17): the client first tells the server, in
/// one more connection before the fetch, a keyed digest of the name, size
/// and modification time of each regular file it has there, and the
/// server leaves out those it would send unchanged (rsync's quick check);
/// they count in [`FilesReport::unchanged`]. A server older than that, or
/// one that cannot keep the list, sends everything, as before; so does
/// [`SendOptions::ignore_times`], and a one-time code (good for one
/// connection). With [`SendOptions::checksum`] the digests are of each
/// file's contents instead of its time (decision M18; every file read at
/// both ends).
pub fn get(
    addr: SocketAddr,
    name: &str,
    dest: impl AsRef<Path>,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let (name, parts) = checked_name(name)?;
    let base = parts.last().copied().unwrap_or("file").to_string();
    let out = destination(dest.as_ref(), &base)?;
    // A directory already there can only take a directory: fetched again
    // into it, file by file (M13's comparison). Anything else in the way
    // fails here, before talking to anyone.
    let there = std::fs::symlink_metadata(&out).ok();
    let is_dir = there.as_ref().is_some_and(std::fs::Metadata::is_dir);
    // F12: `--resume` of a file that arrived whole before asks the server
    // whether it is still its file (size and modification time).
    let complete = there
        .as_ref()
        .filter(|m| m.is_file() && opts.resume && !opts.overwrite)
        .and_then(|m| Some(Have::complete(m.len(), mtime_ns(m)?)));
    if there.is_some() && !is_dir && !opts.overwrite && complete.is_none() {
        // "PATH: file exists": Error::kind reads it as AlreadyExists (F25).
        return Err(Error::Local(format!(
            "{}: {}",
            out.display(),
            crate::error::WIRE_FILE_EXISTS
        )));
    }
    // M17: a directory fetched again: the server first learns which files
    // are here (the same name, size and time) and leaves them out.
    let skip = if is_dir && !opts.ignore_times && !one_time_code(opts) {
        tell_what_is_here(addr, &out, &base, opts)?
    } else {
        None
    };
    let part = if is_dir || complete.is_some() {
        None
    } else {
        Some(PartFile::open(&out, opts.overwrite).map_err(Error::from)?)
    };
    let offer = part.as_ref().filter(|_| opts.resume).and_then(resume_offer);
    let have = complete
        .clone()
        .or_else(|| offer.as_ref().map(|(h, _)| h.clone()));
    let force = opts.overwrite;
    let make: MakeTarget = Box::new(move |resp: &Response| {
        if resp.bundle {
            // Given up unused: the empty partial file goes (and with it an
            // older partial copy of a file of that name, a directory now;
            // a drop keeps an unstarted one, F15).
            if let Some(p) = part {
                p.abandon(false);
            }
            return tree_target(&out, &base, force);
        }
        file_target(part, &out, resp, offer)
    });
    let req = Request::Get {
        name: name.to_string(),
        have,
        bundle: true,
        skip,
    };
    let resume = opts.resume;
    fetched(read(addr, name, req, make, opts), |r| {
        if resume && r.files.is_some() {
            r.note.get_or_insert_with(|| NOT_RESUMED.into());
        }
        // The server has this very file (F12): nothing to fetch.
        if let Some(h) = &complete {
            already_there(r, h.size);
        }
    })
}

/// A one-time code is good for one connection: no check before the
/// transfer (M14, M17).
fn one_time_code(opts: &SendOptions) -> bool {
    matches!(&opts.security, crate::Security::Encrypted(e) if e.code.is_some())
}

/// What a check before a transfer compares (M18).
fn quick(opts: &SendOptions) -> Quick {
    Quick::from_content(opts.checksum)
}

/// The options of a check before a transfer: no progress of its own.
fn quiet(opts: &SendOptions) -> SendOptions {
    let mut quiet = opts.clone();
    quiet.progress = None;
    quiet
}

/// Whether a check was refused for one of `reasons` (a peer older than
/// the check, or one that cannot answer it): the transfer then goes as
/// without the check.
fn declined(e: &Error, reasons: &[&str]) -> bool {
    let why = e.to_string();
    reasons.iter().any(|r| why.contains(r))
}

/// Tells the server which regular files are below `out`, the destination
/// of the directory `top` fetched again (decision M17): one WRITE transfer
/// of the keyed digests of their names in the server's bundle
/// (`top/rel/path`), sizes and modification times, kept by the server a
/// minute under a token for the `get` that names it. Returns the token, or
/// `None` when there is nothing to tell or the server declines (older than
/// this, not serving, short of room): the `get` then brings every file, as
/// before. Other failures (the network, a refused key) are returned: the
/// `get` would meet them too.
fn tell_what_is_here(
    addr: SocketAddr,
    out: &Path,
    top: &str,
    opts: &SendOptions,
) -> Result<Option<Token>, Error> {
    let (mut key, mut token) = ([0u8; 32], [0u8; TOKEN]);
    if getrandom::fill(&mut key).is_err() || getrandom::fill(&mut token).is_err() {
        return Ok(None);
    }
    let quick = quick(opts);
    let mut digests = Vec::new();
    digests_below(out, top.as_bytes(), &key, quick, &mut digests);
    if digests.is_empty() {
        return Ok(None);
    }
    let size = digests.len() as u64;
    let input = Input::Read(Box::new(std::io::Cursor::new(digests)));
    let req = Request::Have { token, key, quick };
    let name = "(list of what is here)";
    match put(input, Some(size), false, name, req, addr, &quiet(opts)) {
        Ok(_) => Ok(Some(token)),
        Err(e) if declined(&e, &["unknown operation 'have'", NOT_KEPT]) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Where `get` puts what `base` (the last component of the name asked for)
/// names, as `scp -r` does: inside `dest` when it is a directory, else at
/// `dest`, whose parent must exist (decision M15).
fn destination(dest: &Path, base: &str) -> Result<PathBuf, Error> {
    // `-o newdir/` names a directory, as for scp and cp: one that is not
    // there is an error now, not after the whole file came and could not
    // be renamed onto "newdir/" (found by a first-time user: 100 MB moved,
    // then "Not a directory", the partial file left behind).
    use std::os::unix::ffi::OsStrExt;
    if dest.as_os_str().as_bytes().ends_with(b"/") && !dest.is_dir() {
        // The name without its slash (components drop it): with one, a
        // file reads as missing.
        let bare: PathBuf = dest.components().collect();
        let what = if bare.symlink_metadata().is_ok() {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(Error::Local(format!("{}: {what}", dest.display())));
    }
    let out = if dest.is_dir() {
        dest.join(base)
    } else {
        dest.to_path_buf()
    };
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
    Ok(out)
}

/// With --resume, what an earlier try left to offer: its journal names the
/// server's file by size and mtime (the server checks both, then the
/// prefix's hash).
fn resume_offer(part: &PartFile) -> Option<(Have, Vec<ChainingValue>)> {
    let j = part.journal().filter(|j| j.usable() > 0)?;
    let cvs = j.cvs[..j.usable()].to_vec();
    let have = Have {
        size: j.size,
        mtime: j.mtime,
        from: cvs.len() as u64 * UNIT,
        prefix: hex(&prefix_hash(&cvs)),
    };
    Some((have, cvs))
}

/// Where a fetched file goes: the partial file beside `out` (`None`: `out`
/// is a directory, which a file cannot replace), resumed from `offer` if
/// the server took it.
fn file_target(
    part: Option<PartFile>,
    out: &Path,
    resp: &Response,
    offer: Option<(Have, Vec<ChainingValue>)>,
) -> Result<Target, AppError> {
    let Some(mut part) = part else {
        if !out.is_dir() {
            // A complete copy offered (F12) to a server older than that,
            // which sends the file whole instead of comparing.
            return Err(AppError::new(
                Kind::Local,
                format!("{}: {}", out.display(), crate::error::WIRE_FILE_EXISTS),
                "the client has a complete copy (a server older than F12)",
            )
            .because(crate::ErrorKind::Local {
                io: Some(std::io::ErrorKind::AlreadyExists),
            }));
        }
        return Err(AppError::new(
            Kind::Local,
            format!(
                "{}: is a directory (the server sends a file)",
                out.display()
            ),
            "the client has a directory of that name",
        )
        .because(crate::ErrorKind::Local {
            io: Some(std::io::ErrorKind::IsADirectory),
        }));
    };
    part.ident = resp.size.zip(resp.mtime);
    part.mode = resp.mode;
    if let Some((h, cvs)) = offer {
        if resp.from == Some(h.from) && part.ident == Some((h.size, h.mtime)) {
            part.offer = Some((h.from, cvs));
        }
    }
    Ok(Target::File(part))
}

/// The note of a `get --resume` that brought a directory.
const NOT_RESUMED: &str = "a directory is not resumed (a bundle cannot be): its files that \
     are not here with the same size and time were fetched, and those with the same bytes left \
     as they were";

/// A name `get` may ask for, without the trailing `/` a shell completes a
/// directory with, and its components: the rules of the server's
/// (relative, no `..`), and not the served directory itself, which has no
/// name of its own to land under (M15).
fn checked_name(name: &str) -> Result<(&str, Vec<&str>), Error> {
    let trimmed = name.trim_end_matches('/');
    if matches!(trimmed, "" | ".") {
        return Err(Error::InvalidOptions(format!(
            "'{name}': the served directory itself cannot be fetched (name a file or directory in it)"
        )));
    }
    let parts = sanitize(trimmed).map_err(|_| {
        Error::InvalidOptions(format!(
            "'{name}': not a valid name (relative path, no '..')"
        ))
    })?;
    Ok((trimmed, parts))
}

/// Where a fetched directory is unpacked (M15): `out` is made, or filled
/// if it is a directory already, from the stream whose top-level name is
/// `top` (the last component of the name asked for).
fn tree_target(out: &Path, top: &str, force: bool) -> Result<Target, AppError> {
    let shown = out.display().to_string();
    // Checked again: a file may have taken the name since.
    if std::fs::symlink_metadata(out).is_ok_and(|m| !m.is_dir()) {
        return Err(AppError::new(
            Kind::Local,
            format!("{shown}: exists and is not a directory (the server sends one)"),
            "the client has a file of that name",
        ));
    }
    let to = out.file_name().ok_or_else(|| {
        AppError::new(
            Kind::InvalidOptions,
            format!("{shown}: not a name a directory can take"),
            "refused by the client",
        )
    })?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let u = Unpacker::new(parent, force)?;
    Ok(Target::Bundle(Box::new(u.fetching(
        top.as_bytes(),
        std::os::unix::ffi::OsStrExt::as_bytes(to),
    ))))
}

/// A fetch's report, whether it succeeded or not, with `adjust` applied;
/// a directory's failures said in this end's words: "N of M entries could
/// not be stored", where the QUIT to the server adds "at the receiver".
fn fetched(
    result: Result<TransferReport, Error>,
    adjust: impl FnOnce(&mut TransferReport),
) -> Result<TransferReport, Error> {
    let mut report = match result {
        Ok(r) => r,
        Err(Error::Transfer(r)) => *r,
        Err(e) => return Err(e),
    };
    adjust(&mut report);
    if let Some(f) = report.files.as_ref().filter(|f| f.failures() > 0) {
        let quit = f.quit_reason();
        let ours = quit.lines().next().unwrap_or_default();
        if matches!(&report.error, Some(Error::Failed(m)) if m == ours) {
            report.error = Some(Error::Failed(f.not_stored()));
        }
    }
    report.into_result()
}

/// Fetches the file `name` from a serving receiver into `writer` (in
/// order: `netblt get HOST NAME -o -` writes standard output). The bytes
/// reach `writer` before the digest is checked; `Ok` says they were the
/// server's file, verified.
///
/// A directory comes as its bundle's tar stream, written as it arrives
/// (`netblt get HOST DIR -o - | tar x`; decision M15): the report's
/// [`files`](TransferReport::files) is then set (it is `None` for a file)
/// and counts what the stream held; what the server could not read fails
/// the transfer, listed there, once the stream has been written.
pub fn get_to_writer(
    addr: SocketAddr,
    name: &str,
    writer: impl std::io::Write + Send + 'static,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let (name, _) = checked_name(name)?;
    let make: MakeTarget = Box::new(move |resp: &Response| {
        Ok(if resp.bundle {
            Target::Tar(Box::new(writer), Box::default())
        } else {
            Target::Writer(Box::new(writer))
        })
    });
    let req = Request::Get {
        name: name.to_string(),
        have: None,
        bundle: true,
        skip: None,
    };
    fetched(read(addr, name, req, make, opts), |_| {})
}

/// Runs a READ transfer.
fn read(
    addr: SocketAddr,
    name: &str,
    req: Request,
    make: MakeTarget,
    opts: &SendOptions,
) -> Result<TransferReport, Error> {
    let waker = new_waker()?;
    let transfer = Transfer::new(
        name,
        Plan::Receive {
            size: None,
            target: None,
            make: Some(make),
            digest: true,
        },
        waker.clone(),
    );
    run(addr, Mode::Read, None, req.encode(), transfer, &waker, opts)?.into_result()
}

/// Asks the receiver which of `bundle`'s files it already has, with the
/// same name, size and modification time (rsync's quick check), and
/// returns the bundle without them ([`Bundle::left_out`] counts them). One
/// READ transfer before the bundle's own: the receiver answers with a
/// keyed digest per file it holds below the bundle's top-level names
/// (decision M14), so it tells nothing of files this end does not name.
/// With [`SendOptions::checksum`] the same contents count instead of the
/// same time (rsync's `--checksum`, decision M18): both ends read every
/// file first; a receiver older than that answers with times, which match
/// no contents, and the bundle goes whole.
///
/// A receiver that cannot answer (older than this, or one that stores no
/// files) leaves the bundle whole; so does a bundle of more than 64
/// top-level names, and a one-time code (good for one connection, the
/// bundle's). Other failures (the network, a refused key) are
/// returned: the bundle itself would meet them too.
pub fn skip_same(bundle: &Bundle, addr: SocketAddr, opts: &SendOptions) -> Result<Bundle, Error> {
    let mut names: Vec<String> = Vec::new();
    for i in &bundle.items {
        let top = i.name.split(|&b| b == b'/').next().unwrap_or_default();
        let Ok(top) = std::str::from_utf8(top) else {
            return Ok(bundle.clone());
        };
        if !names.iter().any(|n| n == top) {
            if names.len() == MAX_SAME_NAMES {
                return Ok(bundle.clone());
            }
            names.push(top.to_string());
        }
    }
    let mut key = [0u8; 32];
    // A one-time code is good for one connection: the bundle's.
    if bundle.files() == 0 || one_time_code(opts) || getrandom::fill(&mut key).is_err() {
        return Ok(bundle.clone());
    }
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = SharedBytes(Arc::clone(&got));
    let takes = Arc::new(Mutex::new(None));
    let t2 = Arc::clone(&takes);
    let make: MakeTarget = Box::new(move |r: &Response| {
        if let Ok(mut t) = t2.lock() {
            *t = r.takes;
        }
        Ok(Target::Writer(Box::new(sink)))
    });
    let quick = quick(opts);
    let req = Request::Same { names, key, quick };
    match read(addr, "(check of what is there)", req, make, &quiet(opts)) {
        Ok(_) => {}
        Err(e) if declined(&e, &["unknown operation 'same'", NOTHING_TO_COMPARE]) => {
            return Ok(bundle.clone());
        }
        Err(e) => return Err(e),
    }
    let have: HashSet<[u8; DIGEST]> = got
        .lock()
        .map(|g| {
            g.chunks_exact(DIGEST)
                .filter_map(|c| c.try_into().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut b = bundle.without(|i| item_digest(&key, quick, i).is_some_and(|d| have.contains(&d)));
    b.receiver_takes = takes.lock().ok().and_then(|t| *t);
    Ok(b)
}

/// Bytes written into a shared vector (the `same` reply), up to
/// [`MAX_REPLY`]: the rest of a longer reply is dropped, not kept.
struct SharedBytes(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedBytes {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut v = self
            .0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let room = MAX_REPLY.saturating_sub(v.len());
        v.extend_from_slice(&buf[..buf.len().min(room)]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// RFC 1030's memory-to-memory test: sends `size` bytes of a generated
/// pattern to a receiver, which discards them (`netblt recv --sink`, or a
/// receiver serving a directory; a [`Receiver::handle_with`](crate::Receiver::handle_with)
/// handler is given them, named `sink`). In a plain session both
/// ends hash the data, as for a file; in an encrypted one they do not
/// unless [`SendOptions::verify`] asks (every packet is authenticated;
/// decision K16). The report's [`io`](TransferReport::io) has the socket's
/// system-call counters.
pub fn bench(addr: SocketAddr, size: u64, opts: &SendOptions) -> Result<TransferReport, Error> {
    let waker = new_waker()?;
    let digest = opts.verify || !opts.security.is_encrypted() || size == 0;
    let pattern = Pattern::new(0x6e65_7462_6c74);
    let transfer = Transfer::new(
        "sink",
        Plan::Send {
            reader: Input::Pattern(if digest {
                pattern
            } else {
                pattern.without_digest()
            }),
            size: Some(size),
            resume: false,
        },
        waker.clone(),
    );
    let req = Request::Sink { size, digest };
    let trailer = if digest { DIGEST_LEN as u64 } else { 0 };
    run(
        addr,
        Mode::Write,
        Some(size + trailer),
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
    opts.check()?;
    let mut config = config(
        opts.offer(),
        death_secs(opts.death_timer),
        remote.is_ipv6(),
        opts.rate_config(),
    );
    config.open_attempts =
        crate::app::params::open_attempts_within(opts.connect_timeout, config.open_retry);
    let aopts = ActiveOptions {
        remote,
        remote_port: remote.port(),
        raw: opts.raw_ip,
        config,
        mode,
        transfer_size,
        client,
        security: opts.security.clone(),
        auto_size: opts.auto_size,
        rate_control: opts.rate_control.clone(),
    };
    let never = AtomicBool::new(false);
    let stop = opts.stop.as_deref().unwrap_or(&never);
    let started = std::time::Instant::now();
    let mut progress = |t: &Transfer, c: &Connection| {
        if let Some(f) = &opts.progress {
            let st = c.stats();
            let rate = c.rate_state();
            f(&Progress {
                name: t.name.clone(),
                bytes: t.progress(),
                total: t.size.or(t.total_hint),
                retransmitted: st.data_packets_retransmitted,
                rate_bps: rate.as_ref().map(|r| r.rate_bps as u64),
                rate_reason: rate.as_ref().map(|r| r.reason.name()),
                elapsed: started.elapsed(),
                lost: if t.sender {
                    st.data_packets_retransmitted
                } else {
                    st.data_packets_lost
                },
                srtt: st.srtt,
                bottleneck_bps: rate
                    .as_ref()
                    .and_then(|r| r.bottleneck_bps)
                    .map(|b| b as u64),
                min_rtt: rate.as_ref().and_then(|r| r.min_rtt),
                resumed_from: t.resumed_from,
            });
        }
    };
    let cpu0 = cpu_times();
    // The loop runs on this thread: its wait for a CPU, for the diagnosis.
    let delay0 = thread_run_delay_s();
    let throttled0 = cgroup_throttled_s();
    let out = run_active(&aopts, &mut transfer, waker, stop, &mut progress)?;
    let cpu_wait = delay0
        .zip(thread_run_delay_s())
        .map(|(a, b)| (b - a).max(0.0));
    let throttled = throttled0
        .zip(cgroup_throttled_s())
        .map(|(a, b)| throttled_between(&a, &b));
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
    if report.succeeded() {
        let inputs = LimitInputs::gather(
            &report,
            &out.conn,
            out.times,
            out.socket_drops,
            cpu_wait,
            out.wall.as_secs_f64(),
            throttled,
        );
        tracing::debug!(?inputs, "limit inputs");
        report.limit = diagnose(&inputs);
    }
    report.security = out.security;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// `-o dir/` names a directory: one that is missing, or a file, is an
    /// error before anything is fetched.
    #[test]
    fn a_destination_with_a_slash_must_be_a_directory() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("newdir/");
        let e = destination(&missing, "a.bin").unwrap_err().to_string();
        assert!(e.ends_with("newdir/: no such directory"), "{e}");
        std::fs::write(t.path().join("afile"), b"x").unwrap();
        let e = destination(&t.path().join("afile/"), "a.bin")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("afile/: not a directory"), "{e}");
        std::fs::create_dir(t.path().join("d")).unwrap();
        let ok = destination(&t.path().join("d/"), "a.bin").unwrap();
        assert_eq!(ok, t.path().join("d/a.bin"));
        // Without the slash, a new name is the file's.
        let named = destination(&t.path().join("new.bin"), "a.bin").unwrap();
        assert_eq!(named, t.path().join("new.bin"));
    }

    /// F28: a receiver that does not know the operation asked for
    /// refuses it as "unknown operation 'OP'"; the sender's report gives
    /// the operation in its JSON's `peer_detail`. No version of the tool
    /// asks this receiver for an operation it does not know, so the
    /// request is written by hand (a newer client's), the rest is a real
    /// transfer on loopback.
    #[test]
    fn an_unknown_operation_is_in_the_reports_peer_detail() {
        use crate::{Receiver, ReceiverOptions, Security};
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut ropts = ReceiverOptions::new();
        ropts.security = Security::Insecure;
        ropts.stop = Some(Arc::clone(&stop));
        let rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), ropts).unwrap();
        let addr = rx.local_addr();
        let path = dir.path().to_path_buf();
        let h = std::thread::spawn(move || rx.serve_dir(path));
        let mut opts = SendOptions::new();
        opts.security = Security::Insecure;
        opts.connect_timeout = std::time::Duration::from_secs(5);
        let waker = new_waker().unwrap();
        let transfer = Transfer::new(
            "x",
            Plan::Send {
                reader: Input::Stream(Box::new(std::io::empty())),
                size: None,
                resume: false,
            },
            waker.clone(),
        );
        let asked = br#"{"v":1,"op":"frobnicate","name":"x"}"#.to_vec();
        let report = run(addr, Mode::Write, None, asked, transfer, &waker, &opts);
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap().unwrap();
        let report = report.unwrap();
        assert_eq!(
            report.error_kind(),
            Some(crate::ErrorKind::RefusedByPeer(
                crate::PeerReason::UnknownOperation("frobnicate".into())
            )),
            "{:?}",
            report.error
        );
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["error_kind"], "refused_by_peer", "{v}");
        assert_eq!(v["peer_reason"], "unknown_operation", "{v}");
        assert_eq!(
            v["peer_detail"],
            serde_json::json!({ "operation": "frobnicate" }),
            "{v}"
        );
        assert!(v.get("io_kind").is_none(), "{v}");
    }

    #[test]
    fn a_reply_longer_than_any_receiver_sends_is_cut() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut w = SharedBytes(Arc::clone(&got));
        let big = vec![7u8; MAX_REPLY - 10];
        assert_eq!(w.write(&big).unwrap(), big.len());
        // Taken as written (the transfer goes on), kept only up to the cap.
        assert_eq!(w.write(&[1u8; 100]).unwrap(), 100);
        assert_eq!(w.write(&[2u8; 100]).unwrap(), 100);
        let g = got.lock().unwrap();
        assert_eq!(g.len(), MAX_REPLY);
        assert_eq!(&g[MAX_REPLY - 10..], &[1u8; 10]);
    }
}
