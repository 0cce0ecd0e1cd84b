//! `netblt send FILE|DIR... HOST[:PORT]`: WRITE mode, one connection per
//! file, in turn.

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, CliError};
use crate::flags::{resolve_host, CommonFlags, ParamFlags};
use crate::output::{line, why};
use crate::progress::{default_sigpipe, Bar};

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
    default_sigpipe();
    let Some((host, paths)) = a.args.split_last() else {
        return Err(CliError::usage("give files and a HOST[:PORT]").into());
    };
    let remote = resolve_host(host, netblt::DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let files = netblt::files_to_send(&paths).map_err(CliError::from)?;
    let mut opts = a.common.send_options(params);
    let bar = Bar::new(a.common.json);
    bar.attach(&mut opts);
    let mut code = exit::OK;
    for (path, name) in files {
        let result = netblt::send_file_as(&path, &name, remote, &opts);
        bar.finish();
        let report = match result {
            Ok(r) => r,
            Err(netblt::Error::Transfer(r)) => *r,
            Err(e) => return Err(CliError::from(e).into()),
        };
        if a.common.json {
            println!("{}", serde_json::to_string(&report)?);
        } else if report.error.is_none() {
            println!("{}", line(&report));
            if let Some(w) = why(&report) {
                println!("{w}");
            }
        }
        if let Some(e) = &report.error {
            let line = format!("{}: {e}", report.name);
            let rc = exit::of(e);
            if rc == exit::NETWORK {
                // Nothing more will get through.
                return Err(CliError::new(rc, line).into());
            }
            eprintln!("netblt: {line}");
            if code == exit::OK {
                code = rc;
            }
        }
    }
    Ok(code)
}
