//! `netblt get HOST[:PORT] NAME [-o PATH]`: READ mode (the receiver must run
//! with `--serve`).

use std::path::{Path, PathBuf};

use clap::Args;
use netblt_proto::Mode;

use crate::app::client;
use crate::app::meta::Request;
use crate::app::names::sanitize;
use crate::app::params::{config, resolve_host, CommonFlags, ParamFlags};
use crate::app::report::app_error_to_cli;
use crate::app::sink::{Target, TempFile};
use crate::app::transfer::{Plan, Transfer};
use crate::driver::active::ActiveOptions;
use crate::driver::socket::DEFAULT_PORT;
use crate::exit::{self, CliError};

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The serving receiver, HOST[:PORT] (default port 9998).
    pub host: String,
    /// The file's name relative to the receiver's --dir.
    pub name: String,
    /// Where to write it: a file, or an existing directory to put it in.
    /// Default: the name's last component, in the current directory.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

pub fn run(a: GetArgs) -> anyhow::Result<i32> {
    crate::app::client::default_sigpipe();
    let remote = resolve_host(&a.host, DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    let parts = sanitize(&a.name).map_err(|_| {
        CliError::usage(format!(
            "'{}': not a valid name (relative path, no '..')",
            a.name
        ))
    })?;
    let base = parts.last().copied().unwrap_or("file").to_string();
    let out = match &a.output {
        Some(p) if p.is_dir() => p.join(&base),
        Some(p) => p.clone(),
        None => PathBuf::from(&base),
    };
    // Fail before talking to anyone if the file is in the way.
    if std::fs::symlink_metadata(&out).is_ok() && !a.force {
        return Err(CliError::new(
            exit::LOCAL,
            format!("{}: file exists (use --force to overwrite)", out.display()),
        )
        .into());
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(CliError::new(
            exit::LOCAL,
            format!("{}: no such directory", parent.display()),
        )
        .into());
    }
    let waker = client::new_waker().map_err(app_error_to_cli)?;
    let force = a.force;
    let out2 = out.clone();
    let transfer = Transfer::new(
        a.name.clone(),
        Plan::Receive {
            size: None,
            target: None,
            make: Some(Box::new(move |_size| {
                TempFile::create(&out2, force).map(Target::File)
            })),
        },
        waker.clone(),
    );
    let opts = ActiveOptions {
        remote,
        remote_port: remote.port(),
        raw: a.common.raw_ip,
        config: config(params, a.common.death_timer, remote.is_ipv6()),
        mode: Mode::Read,
        transfer_size: None,
        client: Request::Get {
            name: a.name.clone(),
        }
        .encode(),
    };
    let (report, _) =
        client::run(&opts, transfer, &waker, a.common.json).map_err(app_error_to_cli)?;
    if a.common.json {
        println!("{}", serde_json::to_string(&report)?);
    } else if report.error.is_none() {
        println!("{} (saved as {})", report.line(), out.display());
    }
    match report.error {
        None => Ok(exit::OK),
        Some(e) => Err(CliError::new(report.code, format!("{}: {e}", a.name)).into()),
    }
}
