//! `netblt send FILE|DIR|-... HOST[:PORT]`: WRITE mode. One file: one
//! connection. A directory or several files: one connection carrying a
//! bundle (a tar stream unpacked by the receiver; `--parallel N`: N such
//! connections) and then its large files one connection each, resumable
//! (`--resumable-min`, decision F19), or one connection per file with
//! `--per-file`. `-` sends standard input as a stream (`--tar`: a tar
//! stream to unpack).

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, CliError};
use crate::flags::{CommonFlags, ParamFlags};
use crate::output::{
    bundle_error, first_contact, line, partial_kept, print_failed, shown, why, with_hint,
};
use crate::progress::default_sigpipe;
use crate::remote::Remote;

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Files or directories to send, then the receiver as HOST[:PORT]
    /// (default port 9998). Directories are walked; their files keep their
    /// path below the directory's name, with their modification times and
    /// permission bits; links inside are never followed. A directory or
    /// several files travel in ONE connection as a bundle (a tar stream the
    /// receiver unpacks as it arrives; nothing appears there before the
    /// whole bundle is verified). `-` alone sends standard input (a stream
    /// of unknown length, e.g. `tar c dir | netblt send - HOST --name
    /// dir.tar`), named by --name.
    #[arg(required = true, num_args = 2.., value_name = "FILE|DIR|-... HOST[:PORT]")]
    pub args: Vec<String>,
    /// The name the receiver stores standard input under (with `-`).
    #[arg(long)]
    pub name: Option<String>,
    /// With `-`: standard input is a tar stream for the receiver to unpack
    /// into its directory, as a bundle (regular files and directories;
    /// links and devices are refused; nothing is written outside it):
    /// `tar c dir | netblt send - HOST --tar`.
    #[arg(long)]
    pub tar: bool,
    /// One connection per file (the receiver stores each file on its own),
    /// instead of one bundle: for receivers older than bundles, to see one
    /// line per file, or with --resume to continue each file where an
    /// interrupted --per-file send left it. Each file then costs a few
    /// round trips of its own (a second or more per file on a long path).
    #[arg(long)]
    pub per_file: bool,
    /// Continue an interrupted transfer: the receiver keeps a partial file
    /// and a journal of verified 1 MiB units; if the file's name, size and
    /// modification time match, and the prefix's hash matches this file,
    /// only the rest is sent (the whole file is still verified). Otherwise
    /// the file is sent whole. A file the receiver already has whole, with
    /// the same size and modification time, is not sent again. A directory
    /// or several files still go as one bundle, which leaves out the files
    /// the receiver has whole, as without --resume; an interrupted bundle
    /// leaves no partial copies, so its other files travel again whole.
    /// Files of --resumable-min and more travel on their own after the
    /// bundle and are continued as a single file is (with --per-file every
    /// file is).
    #[arg(long)]
    pub resume: bool,
    /// Send every file of a directory or several files, even those the
    /// receiver already has with the same name, size and modification time
    /// (by default it is asked first, and those are left out, as rsync
    /// does; rsync's --ignore-times). The receiver then compares them byte
    /// for byte as they arrive and leaves the same ones as they are.
    #[arg(long)]
    pub ignore_times: bool,
    /// Leave out the files the receiver has with the same name, size and
    /// CONTENTS (a BLAKE3 hash of each file), not the same modification
    /// time: a file changed without changing its size and time is then
    /// sent too (rsync's --checksum). It costs reading every file at both
    /// ends before the transfer. A receiver older than this answers with
    /// times, which match no contents: everything is sent. Not with
    /// --ignore-times.
    #[arg(short = 'c', long)]
    pub checksum: bool,
    /// Connections at once. A bundle is dealt into N bundles of about equal
    /// bytes, sent at the same time (then one more with the directories'
    /// modes and times); with --per-file, N files are in flight, one
    /// connection each. A failed file is reported and the others go on.
    /// (No progress bar above 1.)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
    /// In a directory or several files sent as a bundle: files of at least
    /// SIZE (`500M`, `1GiB`, `0`) leave the bundle and are sent after it,
    /// each on its own connection as a single file is, so that an
    /// interrupted one keeps its partial copy at the receiver and the same
    /// command with --resume sends only its rest (an interrupted bundle
    /// keeps nothing, and sends its files again whole). With --parallel N,
    /// N of them at once. `0` sends every file on its own (after the check
    /// of what the receiver has); `never` keeps every file in the bundle.
    /// Each such file costs 0.9 s more on a 300 ms path, 2 % of a 500 MB
    /// file's time at 100 Mb/s (and the directories' times are set again
    /// after them, once: 0.65 s there). Default 500M; `never` with
    /// --ignore-times (a file sent on its own that the receiver has is
    /// refused, where a bundle compares it and leaves it as it is) and with
    /// --code (good for one connection).
    #[arg(long, value_name = "SIZE", value_parser = parse_resumable_min, allow_negative_numbers = true)]
    pub resumable_min: Option<ResumableMin>,
    /// Not a sender's flag: overwriting is the receiver's choice (`recv
    /// --force`). Hidden; it is here to say so, where clap's own message
    /// told an scp user to "pass '--force' as a value" (F15 #16).
    #[arg(long, hide = true)]
    pub force: bool,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// `--resumable-min`: the size from which a file leaves the bundle, or
/// none (`never`).
#[derive(Debug, Clone, Copy)]
pub struct ResumableMin(pub Option<u64>);

fn parse_resumable_min(s: &str) -> Result<ResumableMin, String> {
    if s.trim() == "never" {
        return Ok(ResumableMin(None));
    }
    crate::units::parse_size(s)
        .map(|v| ResumableMin(Some(v)))
        .map_err(|_| format!("'{s}' is neither a size (500M, 1GiB, 0) nor 'never'"))
}

/// `send --force`: the receiver decides whether a file may be replaced.
pub const SEND_FORCE: &str =
    "--force is the receiver's: start it with `netblt recv --force` to let files be replaced";

/// `--resumable-min SIZE` with `--code`: files on their own need
/// connections of their own, and the code opens one (F19).
pub const RESUMABLE_AND_CODE: &str =
    "--resumable-min needs a connection per large file, and a one-time code (--code) is good for one: use keys, or --resumable-min never";

/// `--checksum` with `--ignore-times`: the check compared by contents,
/// and no check (M18). Shared with `get`.
pub const CHECKSUM_AND_IGNORE_TIMES: &str =
    "--checksum and --ignore-times cannot be used together: --checksum changes the check that --ignore-times skips";

pub fn run(a: SendArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    if a.checksum && a.ignore_times {
        return Err(CliError::usage(CHECKSUM_AND_IGNORE_TIMES).into());
    }
    if a.force {
        return Err(CliError::usage(SEND_FORCE).into());
    }
    if a.common.security.code && a.resumable_min.is_some_and(|m| m.0.is_some()) {
        return Err(CliError::usage(RESUMABLE_AND_CODE).into());
    }
    let Some((host, paths)) = a.args.split_last() else {
        return Err(CliError::usage("give files and a HOST[:PORT]").into());
    };
    let remote = Remote::resolve(host, netblt::DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    a.common.check_min_rate(&a.params)?;
    let mut opts = a.common.send_options(params, "");
    opts.auto_size = a.params.auto_size();
    opts.resume = a.resume;
    opts.checksum = a.checksum;
    opts.rate_control = a.common.rate_control()?;
    let bar = a.common.live();
    bar.attach(&mut opts);
    let stdin = paths.iter().any(|p| p == "-");
    if stdin {
        if paths.len() != 1 {
            return Err(CliError::usage("'-' (standard input) must be the only source").into());
        }
        if a.tar {
            let name = a.name.as_deref().unwrap_or("standard input");
            let result = netblt::send_tar(std::io::stdin(), name, remote.first(), &opts);
            bar.finish();
            return finish_bundle(result, &a.common, Split::NONE).map(|(rc, _)| rc);
        }
        let Some(name) = a.name.as_deref() else {
            return Err(CliError::usage("sending standard input needs --name NAME").into());
        };
        let result = netblt::send_stream(std::io::stdin(), name, remote.first(), &opts);
        bar.finish();
        return finish_one(result, &a.common, name, true, None);
    }
    if a.name.is_some() || a.tar {
        return Err(CliError::usage("--name and --tar are for standard input ('-')").into());
    }
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let one_file = paths.len() == 1 && !paths[0].is_dir();
    // --resume keeps the bundle (F18): it implied one connection per file,
    // 75x slower than the bundle at 600 ms, for nothing an interrupted
    // bundle had left (it keeps no partial copies, decision M3); the bundle
    // leaves out what the receiver has whole (M14), as --resume promises.
    if !(one_file || a.per_file) {
        let mut bundle = netblt::Bundle::walk(&paths).map_err(CliError::from)?;
        if !a.ignore_times {
            // M14: what the receiver has already (same name, size and
            // modification time) is left out.
            bundle = remote
                .run(|r| netblt::skip_same(&bundle, r, &opts))
                .map_err(CliError::from)?;
        }
        // F19: the large files leave the bundle, to go after it on their
        // own, where an interruption keeps their partial copies. But
        // --ignore-times sends what the receiver has, which a bundle
        // compares and leaves as it is (M13) and a single file's transfer
        // refuses ("file exists"), and a one-time code is good for one
        // connection, the bundle's: then everything stays in it.
        opts.resumable_min = match a.resumable_min {
            Some(m) => m.0,
            None if a.ignore_times || a.common.security.code => None,
            None => Some(netblt::DEFAULT_RESUMABLE_MIN),
        };
        let (bundle, large) = bundle.split_resumable(opts.resumable_min);
        let split = Split {
            min: opts.resumable_min,
            large: !large.is_empty(),
        };
        // A bundle of directories alone goes after the large files (it
        // sets the directories' times, which their arrival changes).
        let ahead = bundle.files() > 0 || large.is_empty();
        let n = usize::from(a.parallel);
        let outcome = if !ahead {
            Ok((exit::OK, false))
        } else if n > 1 && bundle.files() > 1 {
            let mut o = opts.clone();
            o.progress = None;
            parallel_bundles(&bundle, &remote, &o, &a.common, n, split)
        } else {
            let result = remote.run(|r| netblt::send_bundle(&bundle, r, &opts));
            bar.finish();
            finish_bundle(result, &a.common, split)
        };
        let (code, old_receiver) = outcome?;
        if !old_receiver {
            if large.is_empty() || interrupted(&opts) {
                return Ok(code);
            }
            let rc = after_bundle(large, &bundle, &remote, &mut opts, &a.common, &bar, n)?;
            return Ok(if code == exit::OK { rc } else { code });
        }
        // A receiver without bundles said so in its refusal: the old way.
        eprintln!(
            "netblt: the receiver does not take bundles (an older netblt): sending one file per connection"
        );
        opts.progress = None;
    }
    let files = netblt::files_to_send(&paths).map_err(CliError::from)?;
    if a.parallel > 1 && files.len() > 1 {
        opts.progress = None;
        let n = usize::from(a.parallel);
        return parallel(files, &remote, &opts, &a.common, n, ANY);
    }
    one_by_one(files, &remote, &opts, &a.common, &bar, ANY).map(|(rc, _)| rc)
}

/// How each file of a list is sent: a path the user gave (a link followed)
/// or one of `--per-file`'s walk, by `send_file_as`; a directory's large
/// file (F19) by `send_walked_file`, which, as the bundle does, never
/// follows a link (nor waits on a FIFO) put in its place since the walk.
type SendOne = fn(
    &std::path::Path,
    &str,
    std::net::SocketAddr,
    &netblt::SendOptions,
) -> Result<netblt::TransferReport, netblt::Error>;

const ANY: SendOne = |p, n, a, o| netblt::send_file_as(p, n, a, o);
const WALKED: SendOne = |p, n, a, o| netblt::send_walked_file(p, n, a, o);

/// Files sent one connection each, in turn; the exit code is the first
/// failure's.
fn one_by_one(
    files: Vec<(PathBuf, String)>,
    remote: &Remote,
    opts: &netblt::SendOptions,
    common: &CommonFlags,
    bar: &crate::progress::Bar,
    send: SendOne,
) -> anyhow::Result<(i32, bool)> {
    let mut code = exit::OK;
    // The "why" line is for one transfer; with many files it would double
    // the output.
    let single = files.len() == 1;
    let total = files.len();
    for (i, (path, name)) in files.into_iter().enumerate() {
        let result = remote.run(|r| send(&path, &name, r, opts));
        bar.finish();
        let interrupted = stopped(&result);
        let gone = receiver_gone(&result);
        let rc = finish_one(result, common, &name, single, Some(&path))?;
        if code == exit::OK {
            code = rc;
        }
        // Ctrl-C ends the command, not one file: every later file would
        // have said "interrupted" too (236 lines, F18). A receiver that
        // stopped answering would make each later file wait out its OPEN
        // timer, 27 s each (F23).
        if interrupted {
            break;
        }
        if gone {
            let left = total - i - 1;
            if left > 0 {
                eprintln!("netblt: the receiver does not answer: {left} more file(s) not tried");
            }
            return Ok((code, true));
        }
    }
    Ok((code, false))
}

/// The transfer failed because the receiver is gone or silent (its death
/// timer, no answer to OPEN, nothing listening, the network): a next
/// connection would only wait to fail too.
fn receiver_gone(result: &Result<netblt::TransferReport, netblt::Error>) -> bool {
    use netblt::ErrorKind as K;
    let kind = match result {
        Ok(_) => return false,
        Err(e) => e.kind(),
    };
    matches!(
        kind,
        K::PeerSilent | K::ConnectTimeout | K::NothingListening | K::Network
    )
}

/// How a directory send was split (F19): the size from which files go on
/// their own, and whether any did.
#[derive(Debug, Clone, Copy)]
struct Split {
    min: Option<u64>,
    large: bool,
}

impl Split {
    /// A tar stream from standard input: one bundle, nothing taken out.
    const NONE: Split = Split {
        min: None,
        large: false,
    };
}

/// Ctrl-C (or SIGTERM) was pressed: nothing more is started.
fn interrupted(opts: &netblt::SendOptions) -> bool {
    opts.stop
        .as_ref()
        .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
}

/// F19: a directory's large files after its bundle, each as a single file
/// is sent (reported, failing and resumed as `--per-file` does; `--parallel
/// N`: N at once), then the directories again, whose modification times
/// the files' arrival changed (the bundle itself, if it had no files and
/// so was not sent first). The exit code is the first failure's.
fn after_bundle(
    large: Vec<(PathBuf, String)>,
    bundle: &netblt::Bundle,
    remote: &Remote,
    opts: &mut netblt::SendOptions,
    common: &CommonFlags,
    bar: &crate::progress::Bar,
    n: usize,
) -> anyhow::Result<i32> {
    let (rc, gone) = if n > 1 && large.len() > 1 {
        opts.progress = None;
        (parallel(large, remote, opts, common, n, WALKED)?, false)
    } else {
        one_by_one(large, remote, opts, common, bar, WALKED)?
    };
    // Nor the directories' pass for a receiver gone silent (F23).
    if interrupted(opts) || gone {
        return Ok(rc);
    }
    let last = if bundle.files() > 0 {
        bundle.directories()
    } else {
        bundle.clone()
    };
    let (left, _) = last.left_out();
    if last.dirs() == 0 && last.skipped().is_empty() && left == 0 {
        return Ok(rc);
    }
    let result = remote.run(|r| netblt::send_bundle(&last, r, opts));
    bar.finish();
    // A receiver older than bundles took the files one by one and keeps
    // the directories as it made them.
    let (dirs_rc, _) = finish_bundle(result, common, Split::NONE)?;
    Ok(if rc == exit::OK { dirs_rc } else { rc })
}

/// The transfer was stopped by this end's Ctrl-C.
fn stopped(result: &Result<netblt::TransferReport, netblt::Error>) -> bool {
    let e = match result {
        Ok(r) => r.error.as_ref(),
        Err(e) => Some(e),
    };
    e.is_some_and(|e| matches!(e.cause(), netblt::Error::Failed(m) if m == "interrupted"))
}

/// Prints one transfer's outcome; returns its exit code. An error before
/// the transfer started, or a network error (nothing more will get
/// through), is returned as an error.
fn finish_one(
    result: Result<netblt::TransferReport, netblt::Error>,
    common: &CommonFlags,
    name: &str,
    explain: bool,
    path: Option<&std::path::Path>,
) -> anyhow::Result<i32> {
    let resumable = path.is_some();
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        // A file that cannot be read: say so and go on with the others.
        Err(e @ netblt::Error::Local(_)) => {
            eprintln!("netblt: {}", shown(&format!("{name}: {e}")));
            // `--json`: an object for it, where its report would be (F26).
            if let Some(sink) = common.json_sink() {
                crate::json_error::emit(sink, &crate::json_error::file_object(name, &e));
            }
            return Ok(exit::of(&e));
        }
        Err(e) => return Err(CliError::from(e).into()),
    };
    first_contact(&report, common.machine());
    // The note, the error and the receiver's reasons in them come from the
    // peer: escaped as the receiver escapes what it prints (F15).
    if let Some(n) = &report.note {
        eprintln!("netblt: {}", shown(&format!("{}: {n}", report.name)));
    }
    if !common.print_json(&serde_json::to_value(&report)?) && report.error.is_none() {
        println!("{}", shown(&line(&report)));
        if let Some(w) = why(&report).filter(|_| explain) {
            println!("{w}");
        }
    }
    if let Some(p) = path.filter(|_| report.error.is_none()) {
        grown(p, &report);
    }
    match &report.error {
        None => Ok(exit::OK),
        Some(e) => {
            let said = crate::output::told(e, report.error_kind());
            let line = shown(&format!("{}: {said}", report.name)).into_owned();
            let rc = exit::of(e);
            // The receiver keeps an interrupted file's partial copy (at
            // either end, or a peer gone or silent), but a plain `send`
            // starts again from zero: say how not to. (Not when no buffer
            // was acknowledged: nothing was kept.)
            let hint = (resumable && report.bytes_done > 0 && partial_kept(&report)).then(|| {
                format!(
                    "{}: the receiver keeps what arrived; the same command with --resume \
                     sends only the rest",
                    shown(&report.name)
                )
            });
            if rc == exit::NETWORK {
                return Err(CliError::new(rc, with_hint(line, hint.as_deref()))
                    .with_kind(report.error_kind())
                    .reported()
                    .into());
            }
            eprintln!("netblt: {line}");
            if let Some(h) = hint {
                eprintln!("netblt: {h}");
            }
            Ok(rc)
        }
    }
}

/// A file sent whole that is larger now than when it was opened (a log
/// being written): what was sent is the size at open (README, F5), which
/// the success line alone did not say; tar says "file changed as we read
/// it". Not for a resumed transfer that sent nothing.
fn grown(path: &std::path::Path, report: &netblt::TransferReport) {
    let Ok(now) = std::fs::metadata(path).map(|m| m.len()) else {
        return;
    };
    if now > report.bytes && report.digest.is_some() {
        eprintln!(
            "netblt: {}: grew while it was sent (now {}): the {} it had when opened were sent",
            shown(&report.name),
            crate::units::fmt_bytes(now),
            crate::units::fmt_bytes(report.bytes)
        );
    }
}

/// Prints a bundle's outcome: a line (or JSON), then one line per entry
/// that failed. Returns its exit code, and whether the receiver refused
/// because it does not know bundles (then nothing was sent).
fn finish_bundle(
    result: Result<netblt::TransferReport, netblt::Error>,
    common: &CommonFlags,
    split: Split,
) -> anyhow::Result<(i32, bool)> {
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        Err(e) => return Err(CliError::from(e).into()),
    };
    let old = matches!(
        report.error_kind(),
        Some(netblt::ErrorKind::RefusedByPeer(netblt::PeerReason::UnknownOperation(op))) if op == "bundle"
    );
    if old {
        return Ok((exit::OK, true));
    }
    first_contact(&report, common.machine());
    if !common.print_json(&serde_json::to_value(&report)?) && report.error.is_none() {
        println!("{}", shown(&line(&report)));
        if let Some(w) = why(&report) {
            println!("{w}");
        }
    }
    if let Some(f) = &report.files {
        print_failed(f, "not sent: ", "not sent", None);
    }
    // An interrupted bundle keeps nothing at the receiver (M3), unlike a
    // file: say what the same command will do, instead of nothing (F18),
    // and that the large files, sent on their own, keep theirs (F19).
    let own = match split.min {
        Some(min) if split.large => format!(
            "; its files of {} and more travel on their own after it, and the receiver \
             keeps what arrives of them for the same command with --resume",
            crate::units::fmt_bytes(min)
        ),
        _ => String::new(),
    };
    let hint = format!(
        "{}: the receiver keeps no part of an interrupted bundle; the same command sends \
         again what it does not have whole{own}",
        shown(&report.name)
    );
    match &report.error {
        None => Ok((exit::OK, false)),
        // The receiver's list of failures comes one per line, then how to
        // replace those that exist there (F25).
        Some(e) => {
            let kind = report.error_kind();
            let exists = crate::output::not_stored_hint(&report.name, kind.as_ref());
            let hint = exists
                .as_deref()
                .or(partial_kept(&report).then_some(hint.as_str()));
            let said = crate::output::told(e, kind);
            bundle_error(&report.name, e, &said, hint).map(|rc| (rc, false))
        }
    }
}

/// `--parallel N` with a bundle: N shards at once, then the directories.
fn parallel_bundles(
    bundle: &netblt::Bundle,
    remote: &Remote,
    opts: &netblt::SendOptions,
    common: &CommonFlags,
    n: usize,
    split: Split,
) -> anyhow::Result<(i32, bool)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let shards = bundle.shards(n);
    // The first connection goes alone until it is open: a receiver seen for
    // the first time has its key pinned in known_hosts then, and
    // connections opening together would each append it at once.
    let open = Arc::new(AtomicBool::new(false));
    let mut first = opts.clone();
    let flag = Arc::clone(&open);
    first.progress = Some(Arc::new(move |p: &netblt::Progress| {
        if p.srtt.is_some() || p.bytes > 0 {
            flag.store(true, Ordering::Relaxed);
        }
    }));
    let results: Vec<_> = std::thread::scope(|sc| {
        let mut hs = Vec::new();
        for (i, b) in shards.iter().enumerate() {
            if i == 0 {
                let (f, o) = (&first, &open);
                hs.push(sc.spawn(move || {
                    let r = remote.run(|a| netblt::send_bundle(b, a, f));
                    o.store(true, Ordering::Relaxed);
                    r
                }));
                while !open.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            } else {
                hs.push(sc.spawn(move || remote.run(|a| netblt::send_bundle(b, a, opts))));
            }
        }
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(netblt::Error::Local("sender thread failed".into())))
            })
            .collect()
    });
    let mut code = exit::OK;
    let mut first_err = None;
    for r in results {
        match finish_bundle(r, common, split) {
            Ok((_, true)) => return Ok((exit::OK, true)),
            Ok((rc, false)) => {
                if code == exit::OK {
                    code = rc;
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    // With large files to follow, the directories go after them (F19).
    let dirs = bundle.directories();
    if dirs.dirs() > 0 && !split.large {
        let (rc, _) = finish_bundle(
            remote.run(|a| netblt::send_bundle(&dirs, a, opts)),
            common,
            split,
        )?;
        if code == exit::OK {
            code = rc;
        }
    }
    Ok((code, false))
}

/// `--per-file --parallel N`: N threads take files from one queue, each file its own
/// connection. The exit code is the first failure's; a network error stops
/// the queue.
fn parallel(
    files: Vec<(PathBuf, String)>,
    remote: &Remote,
    opts: &netblt::SendOptions,
    common: &CommonFlags,
    n: usize,
    send: SendOne,
) -> anyhow::Result<i32> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    let queue = Mutex::new(files.into_iter());
    let code = Mutex::new(exit::OK);
    let fatal: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for _ in 0..n {
            sc.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some((path, name)) = next else {
                        break;
                    };
                    let result = remote.run(|a| send(&path, &name, a, opts));
                    // Ctrl-C empties the queue: only the files in flight say
                    // they were interrupted.
                    if stopped(&result) {
                        stop.store(true, Ordering::Relaxed);
                    }
                    match finish_one(result, common, &name, false, Some(&path)) {
                        Ok(rc) => {
                            if let Ok(mut c) = code.lock() {
                                if *c == exit::OK {
                                    *c = rc;
                                }
                            }
                        }
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            if let Ok(mut f) = fatal.lock() {
                                f.get_or_insert(e);
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = fatal.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(code.into_inner().unwrap_or(exit::FAILED))
}
