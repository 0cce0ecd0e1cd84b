//! `netblt send FILE|DIR... HOST[:PORT]`: WRITE mode, one connection per
//! file, in turn.

use std::path::PathBuf;

use clap::Args;
use netblt_proto::Mode;

use crate::app::client;
use crate::app::meta::Request;
use crate::app::names::walk;
use crate::app::params::{config, resolve_host, CommonFlags, ParamFlags};
use crate::app::report::app_error_to_cli;
use crate::app::source::Input;
use crate::app::transfer::{Plan, Transfer};
use crate::app::{io_reason, DIGEST_LEN};
use crate::driver::active::ActiveOptions;
use crate::driver::socket::DEFAULT_PORT;
use crate::exit::{self, CliError};

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Files or directories to send, then the receiver as HOST[:PORT]
    /// (default port 9998). Directories are walked; their files keep their
    /// path below the directory's name.
    #[arg(required = true, num_args = 2.., value_name = "FILE|DIR... HOST[:PORT]")]
    pub args: Vec<String>,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

pub fn run(a: SendArgs) -> anyhow::Result<i32> {
    crate::app::client::default_sigpipe();
    let Some((host, paths)) = a.args.split_last() else {
        return Err(CliError::usage("give files and a HOST[:PORT]").into());
    };
    let remote = resolve_host(host, DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let files = walk(&paths).map_err(|e| {
        CliError::new(
            exit::LOCAL,
            format!("reading the files to send: {}", io_reason(&e)),
        )
    })?;
    let mut code = exit::OK;
    for (path, name) in files {
        let shown = path.display().to_string();
        let file = std::fs::File::open(&path)
            .map_err(|e| CliError::new(exit::LOCAL, format!("{shown}: {}", io_reason(&e))))?;
        let meta = file
            .metadata()
            .map_err(|e| CliError::new(exit::LOCAL, format!("{shown}: {}", io_reason(&e))))?;
        if !meta.is_file() {
            return Err(CliError::new(exit::LOCAL, format!("{shown}: not a regular file")).into());
        }
        let size = meta.len();
        let waker = client::new_waker().map_err(app_error_to_cli)?;
        let transfer = Transfer::new(
            name.clone(),
            Plan::Send {
                reader: Input::Read(Box::new(file)),
                size,
            },
            waker.clone(),
        );
        let opts = ActiveOptions {
            remote,
            remote_port: remote.port(),
            raw: a.common.raw_ip,
            config: config(params, a.common.death_timer, remote.is_ipv6()),
            mode: Mode::Write,
            transfer_size: Some(size + DIGEST_LEN as u64),
            client: Request::Put { name, size }.encode(),
        };
        let (report, _) =
            client::run(&opts, transfer, &waker, a.common.json).map_err(app_error_to_cli)?;
        if a.common.json {
            println!("{}", serde_json::to_string(&report)?);
        } else if report.error.is_none() {
            println!("{}", report.line());
        }
        if let Some(e) = &report.error {
            let line = format!("{}: {e}", report.name);
            if report.code == exit::NETWORK {
                // Nothing more will get through.
                return Err(CliError::new(report.code, line).into());
            }
            eprintln!("netblt: {line}");
            if code == exit::OK {
                code = report.code;
            }
        }
    }
    Ok(code)
}
