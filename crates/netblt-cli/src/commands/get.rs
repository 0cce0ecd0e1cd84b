//! `netblt get HOST[:PORT] NAME [-o PATH]`: READ mode (the receiver must run
//! with `--serve`).

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, CliError};
use crate::flags::{CommonFlags, ParamFlags};
use crate::output::{line, why};
use crate::progress::default_sigpipe;
use crate::remote::Remote;

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The serving receiver, HOST[:PORT] (default port 9998).
    pub host: String,
    /// The file's name relative to the receiver's --dir.
    pub name: String,
    /// Where to write it: a file, an existing directory to put it in, or
    /// `-` for standard output (in order; the exit status says whether the
    /// digest verified). Default: the name's last component, in the current
    /// directory.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
    /// Continue an interrupted `get`: the partial file and its journal left
    /// beside the destination are offered to the server, which sends only
    /// the rest if its file is the same (size, modification time, hash of
    /// the prefix); otherwise the file comes whole.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

pub fn run(a: GetArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    let remote = Remote::resolve(&a.host, netblt::DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    if a.output.as_deref() == Some(std::path::Path::new("-")) {
        return to_stdout(a, &remote, params);
    }
    // Where the library will put it, for the message: the name's last
    // component in the current directory, or in the directory given.
    let base = a.name.rsplit('/').next().unwrap_or("file").to_string();
    let out = match &a.output {
        Some(p) if p.is_dir() => p.join(&base),
        Some(p) => p.clone(),
        None => PathBuf::from(&base),
    };
    // An existing directory named like the file is in the way too (the
    // library would put the file inside it).
    if std::fs::symlink_metadata(&out).is_ok() && !a.force && a.output.is_none() {
        return Err(CliError::new(
            exit::LOCAL,
            format!("{}: file exists (use --force to overwrite)", out.display()),
        )
        .into());
    }
    let mut opts = a.common.send_options(params);
    // As the data receiver, its maximum goes to the sender in each OK
    // (RFC 998 §4, R31).
    opts.rate_control = a.common.rate_control()?;
    opts.auto_size = a.params.auto_size();
    opts.overwrite = a.force;
    opts.resume = a.resume;
    let bar = a.common.live();
    bar.attach(&mut opts);
    let result = remote.run(|r| netblt::get(r, &a.name, &out, &opts));
    bar.finish();
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        Err(e) => return Err(CliError::from(e).into()),
    };
    if let Some(n) = &report.note {
        eprintln!("netblt: {}: {n}", a.name);
    }
    if !a.common.print_json(&serde_json::to_value(&report)?) && report.error.is_none() {
        println!("{} (saved as {})", line(&report), out.display());
        if let Some(w) = why(&report) {
            println!("{w}");
        }
    }
    match &report.error {
        None => Ok(exit::OK),
        Some(e) => Err(CliError::new(exit::of(e), format!("{}: {e}", a.name)).into()),
    }
}

/// `get -o -`: the file to standard output; reports go to stderr.
fn to_stdout(
    a: GetArgs,
    remote: &Remote,
    params: netblt_proto::TransferParams,
) -> anyhow::Result<i32> {
    if a.resume {
        return Err(CliError::usage("--resume needs a file to resume (not -o -)").into());
    }
    if a.common.json_stream {
        return Err(CliError::usage("--json-stream writes standard output: not with -o -").into());
    }
    let mut opts = a.common.send_options(params);
    opts.rate_control = a.common.rate_control()?;
    opts.auto_size = a.params.auto_size();
    let bar = a.common.live();
    bar.attach(&mut opts);
    // Nothing is written before the OPEN is answered: a refused address
    // can be tried again with a fresh handle.
    let result = remote.run(|r| netblt::get_to_writer(r, &a.name, std::io::stdout(), &opts));
    bar.finish();
    let report = match result {
        Ok(r) => r,
        Err(netblt::Error::Transfer(r)) => *r,
        Err(e) => return Err(CliError::from(e).into()),
    };
    if a.common.json {
        eprintln!("{}", serde_json::to_string(&report)?);
    } else if report.error.is_none() {
        eprintln!("netblt: {}", line(&report));
    }
    match &report.error {
        None => Ok(exit::OK),
        Some(e) => Err(CliError::new(exit::of(e), format!("{}: {e}", a.name)).into()),
    }
}
