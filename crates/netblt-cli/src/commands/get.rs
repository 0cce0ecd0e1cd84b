//! `netblt get HOST[:PORT] NAME [-o PATH]`: READ mode (the receiver must run
//! with `--serve`). A directory comes as a bundle, unpacked here, or its tar
//! stream with `-o -` (decision M15).

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, CliError};
use crate::flags::{CommonFlags, ParamFlags};
use crate::output::{bundle_error, line, partial_kept, print_failed, shown, why};
use crate::progress::default_sigpipe;
use crate::remote::Remote;

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The serving receiver, HOST[:PORT] (default port 9998).
    pub host: String,
    /// The file's or directory's name relative to the receiver's --dir. A
    /// directory comes whole in one connection (a bundle, as `send DIR`
    /// sends one): modification times and permission bits kept, links in
    /// it never followed nor fetched, nothing written outside the
    /// destination, nothing under its final name before the whole tree is
    /// verified. Fetched again into a directory that is here, only what
    /// changed travels: files here with the same name, size and
    /// modification time are not sent (see --ignore-times). Files already
    /// here with the same bytes are left as they are; one that differs is
    /// refused without --force. The receiver's directory itself (`.`)
    /// cannot be fetched.
    pub name: String,
    /// Where to put it, as `scp -r` does: in an existing directory under
    /// the name's last component, else at this path (a directory fetched is
    /// made there; the parent must exist). `-` writes a file to standard
    /// output (in order; the exit status says whether the digest verified),
    /// and a directory as a tar stream (`-o - | tar x`). Default: the
    /// name's last component, in the current directory.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing file (in a directory fetched: replace the
    /// files that differ).
    #[arg(long)]
    pub force: bool,
    /// Continue an interrupted `get`: the partial file and its journal left
    /// beside the destination are offered to the server, which sends only
    /// the rest if its file is the same (size, modification time, hash of
    /// the prefix); otherwise the file comes whole. A complete file already
    /// at the destination is kept if the server's has the same size and
    /// modification time (nothing sent), refused otherwise (--force
    /// replaces it). A directory is not
    /// resumed: what is not here with the same size and time comes (with a
    /// note), the files already here with the same bytes left as they are.
    #[arg(long)]
    pub resume: bool,
    /// Fetch every file of a directory fetched again, even those here with
    /// the same name, size and modification time (by default the server is
    /// told first which files are here, and those are not sent, as rsync
    /// does; rsync's --ignore-times). They are then compared byte for byte
    /// as they arrive, and the same ones left as they are.
    #[arg(long)]
    pub ignore_times: bool,
    /// Fetching a directory again, leave out the files here with the same
    /// name, size and CONTENTS (a BLAKE3 hash of each file), not the same
    /// modification time: a file changed at either end without changing
    /// its size and time then comes too (rsync's --checksum). It costs
    /// reading every file at both ends before the transfer. A server older
    /// than this compares times, which match no contents: everything is
    /// sent. Not with --ignore-times.
    #[arg(short = 'c', long)]
    pub checksum: bool,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

pub fn run(a: GetArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    if a.checksum && a.ignore_times {
        return Err(CliError::usage(super::send::CHECKSUM_AND_IGNORE_TIMES).into());
    }
    let remote = Remote::resolve(&a.host, netblt::DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    // The server sends: this end's sending flags do nothing here.
    if a.common.policy != "fair" || a.common.min_rate.is_some() {
        eprintln!(
            "netblt: --policy and --min-rate set how this end sends, and on get the server \
             sends: ignored (--rate and --rate-file limit the server)"
        );
    }
    if a.output.as_deref() == Some(std::path::Path::new("-")) {
        return to_stream(a, &remote, params, None);
    }
    // `-o /dev/null` (a speed test) or a named pipe: written in order as
    // `-o -` writes standard output, since a device cannot take a partial
    // file renamed onto it (F14).
    if let Some(dev) = a.output.clone().filter(|p| is_device_or_fifo(p)) {
        return to_stream(a, &remote, params, Some(dev));
    }
    // Where the library will put it, for the message: the name's last
    // component in the current directory, or in the directory given.
    let base = a
        .name
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("file")
        .to_string();
    let out = match &a.output {
        Some(p) if p.is_dir() => p.join(&base),
        Some(p) => p.clone(),
        None => PathBuf::from(&base),
    };
    // A tree fetched lands beside what a killed fetch left there (F13).
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    crate::leftovers::warn(parent.unwrap_or(std::path::Path::new(".")));
    if !a.resume {
        partial_note(&out, &a.name);
    }
    // The library decides what is in the way (a directory of the name is
    // one fetched again, or in the way of a file); it puts the name in
    // `dest` when `dest` is a directory.
    let dest = a.output.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut opts = a.common.send_options(params, " --serve");
    // As the data receiver, its maximum goes to the sender in each OK
    // (RFC 998 §4, R31).
    opts.rate_control = a.common.rate_control()?;
    opts.auto_size = a.params.auto_size();
    opts.overwrite = a.force;
    opts.resume = a.resume;
    opts.ignore_times = a.ignore_times;
    opts.checksum = a.checksum;
    let bar = a.common.live();
    bar.attach(&mut opts);
    let result = remote.run(|r| netblt::get(r, &a.name, &dest, &opts));
    bar.finish();
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        // `--force` is this end's (F25).
        Err(e) => {
            let said = crate::output::told_fetching(&e, Some(e.kind()));
            return Err(CliError::new(exit::of(&e), said)
                .with_kind(Some(e.kind()))
                .into());
        }
    };
    crate::output::first_contact(&report, a.common.machine());
    // The note and the report's text may carry the server's words.
    if let Some(n) = &report.note {
        eprintln!("netblt: {}", shown(&format!("{}: {n}", a.name)));
    }
    if !a.common.print_json(&serde_json::to_value(&report)?) && report.error.is_none() {
        println!(
            "{} (saved as {})",
            shown(&line(&report)),
            shown(&out.display().to_string())
        );
        if let Some(w) = why(&report) {
            println!("{w}");
        }
    }
    // The partial file stays beside the destination, but the same command
    // without --resume starts again from zero: say how not to (as `send`
    // says, F14), whichever end was interrupted or went away (F18: a server
    // stopped or gone left it unsaid).
    if let Some(e) = &report.error {
        if partial_kept(&report) && report.files.is_none() && netblt::partial_copy(&out).is_some() {
            eprintln!("netblt: {}: {e}", a.name);
            eprintln!(
                "netblt: {}: what arrived is kept here; the same command with --resume fetches \
                 only the rest",
                a.name
            );
            return Ok(exit::of(e));
        }
    }
    finish(&a.name, &report)
}

/// Without --resume, what an interrupted `get` left where this one goes is
/// started again from zero and replaced: say so before anything moves.
fn partial_note(out: &std::path::Path, name: &str) {
    if let Some((part, len)) = netblt::partial_copy(out) {
        eprintln!(
            "netblt: {name}: {} of an interrupted get are here ({}): this one starts from zero; \
             --resume fetches only the rest",
            crate::units::fmt_bytes(len),
            part.display()
        );
    }
}

/// A character device or a FIFO (followed through links: `/dev/stdout`).
fn is_device_or_fifo(p: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| {
        let t = m.file_type();
        t.is_char_device() || t.is_fifo()
    })
}

/// `get -o -`: the file (or a directory's tar stream) to standard output,
/// the report to stderr; with `device`, to that device or FIFO instead,
/// the report on standard output as for a file.
fn to_stream(
    a: GetArgs,
    remote: &Remote,
    params: netblt_proto::TransferParams,
    device: Option<std::path::PathBuf>,
) -> anyhow::Result<i32> {
    let target = device
        .as_ref()
        .map_or("-o -".to_string(), |d| format!("-o {}", d.display()));
    if a.resume {
        return Err(
            CliError::usage(format!("--resume needs a file to resume (not {target})")).into(),
        );
    }
    if a.common.json_stream && device.is_none() {
        return Err(CliError::usage("--json-stream writes standard output: not with -o -").into());
    }
    let mut opts = a.common.send_options(params, " --serve");
    opts.rate_control = a.common.rate_control()?;
    opts.auto_size = a.params.auto_size();
    let bar = a.common.live();
    bar.attach(&mut opts);
    // Nothing is written before the OPEN is answered: a refused address
    // can be tried again with a fresh handle.
    let result = remote.run(|r| match &device {
        None => netblt::get_to_writer(r, &a.name, std::io::stdout(), &opts),
        Some(d) => {
            let w = std::fs::OpenOptions::new()
                .write(true)
                .open(d)
                .map_err(|e| netblt::Error::Local(format!("{}: {e}", d.display())))?;
            netblt::get_to_writer(r, &a.name, w, &opts)
        }
    });
    bar.finish();
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        // `--force` is this end's (F25).
        Err(e) => {
            let said = crate::output::told_fetching(&e, Some(e.kind()));
            return Err(CliError::new(exit::of(&e), said)
                .with_kind(Some(e.kind()))
                .into());
        }
    };
    if let Some(d) = &device {
        if !a.common.print_json(&serde_json::to_value(&report)?) && report.error.is_none() {
            println!("{} (written to {})", shown(&line(&report)), d.display());
        }
        return finish(&a.name, &report);
    }
    if a.common.json {
        eprintln!("{}", serde_json::to_string(&report)?);
    } else if report.error.is_none() {
        eprintln!("netblt: {}", shown(&line(&report)));
        if report.files.is_some() {
            eprintln!(
                "netblt: {}: a directory, written as a tar stream (pipe it to `tar x`)",
                a.name
            );
        }
    }
    finish(&a.name, &report)
}

/// The end of a fetch, on stderr: for a directory, what the server left
/// out and the entries that could not be stored (one line each), then the
/// error; returns the exit code.
fn finish(name: &str, report: &netblt::TransferReport) -> anyhow::Result<i32> {
    if let Some(f) = &report.files {
        if f.not_regular > 0 {
            eprintln!(
                "netblt: {name}: {} not sent by the server: symbolic links or special files (links are never followed)",
                f.not_regular
            );
        }
        // This end's own --force replaces what differs here.
        print_failed(f, "", "entries failed", Some(" (use --force)"));
    }
    match &report.error {
        None => Ok(exit::OK),
        Some(e) if report.files.is_some() => {
            let said = crate::output::told_fetching(e, report.error_kind());
            bundle_error(name, e, &said, None)
        }
        Some(e) => {
            let said = crate::output::told_fetching(e, report.error_kind());
            Err(CliError::new(exit::of(e), format!("{name}: {said}"))
                .with_kind(report.error_kind())
                .reported()
                .into())
        }
    }
}
