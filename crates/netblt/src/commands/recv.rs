//! `netblt recv`: the passive end. Serves many senders at once; stores
//! files under `--dir`, discards with `--sink`, lets peers fetch files with
//! `--serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use netblt_proto::{Incoming, Mode};

use crate::app::client::stop_flag;
use crate::app::io_reason;
use crate::app::meta::{encode_response, Request};
use crate::app::names::resolve;
use crate::app::params::{config, passive_limits};
use crate::app::report::{app_error_to_cli, Report};
use crate::app::sink::{Target, TempFile};
use crate::app::source::Input;
use crate::app::transfer::{Plan, Transfer};
use crate::driver::passive::{bind, run_passive, Accept, JunkCounts, PassiveOptions, Service};
use crate::driver::Waker;
use crate::exit;

#[derive(Debug, Args)]
pub struct RecvArgs {
    /// Address and port to listen on (UDP; with --raw-ip the port is the
    /// NETBLT port).
    #[arg(long, default_value = "0.0.0.0:9998")]
    pub listen: SocketAddr,
    /// Directory received files go to (and --serve reads from).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Discard all received data (memory-to-memory tests; `netblt bench`).
    #[arg(long)]
    pub sink: bool,
    /// Exit after one transfer, with its result as exit code.
    #[arg(long)]
    pub once: bool,
    /// Let peers fetch files under --dir (`netblt get`, READ mode).
    #[arg(long)]
    pub serve: bool,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
    /// Seconds of silence after which a sender is declared dead.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub death_timer: u16,
    /// Print one JSON object per transfer instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Run over IP protocol 30 instead of UDP (root or CAP_NET_RAW).
    #[arg(long)]
    pub raw_ip: bool,
}

/// The receiver's policy (shared with `netblt demo`).
pub struct Receiver {
    pub dir: PathBuf,
    pub sink: bool,
    pub serve: bool,
    pub force: bool,
    pub once: bool,
    pub json: bool,
    pub death_timer: u16,
    pub v6: bool,
    /// Exit code of the last failed transfer.
    pub code: i32,
    /// Reports, when collected instead of printed.
    pub collect: Option<std::sync::mpsc::Sender<(Report, JunkCounts)>>,
}

impl Receiver {
    fn plan(
        &self,
        inc: &Incoming,
        req: Request,
        waker: &Arc<Waker>,
    ) -> Result<(Plan, String, Option<u64>), String> {
        match (inc.mode, req) {
            (Mode::Write, Request::Sink { size }) => Ok((
                Plan::Receive {
                    size: Some(size),
                    target: Some(Target::Discard),
                    make: None,
                },
                "sink".into(),
                None,
            )),
            (Mode::Write, Request::Put { name, size }) => {
                let target = if self.sink {
                    Target::Discard
                } else {
                    let path = resolve(&self.dir, &name, true)?;
                    Target::File(TempFile::create(&path, self.force).map_err(|e| e.peer_reason)?)
                };
                Ok((
                    Plan::Receive {
                        size: Some(size),
                        target: Some(target),
                        make: None,
                    },
                    name,
                    None,
                ))
            }
            (Mode::Read, Request::Get { name }) => {
                if !self.serve {
                    return Err("reading not enabled (start the receiver with --serve)".into());
                }
                let path = resolve(&self.dir, &name, false)?;
                let file = std::fs::File::open(&path).map_err(|e| io_reason(&e))?;
                let meta = file.metadata().map_err(|e| io_reason(&e))?;
                if !meta.is_file() {
                    return Err("not a regular file".into());
                }
                let _ = waker;
                Ok((
                    Plan::Send {
                        reader: Input::Read(Box::new(file)),
                        size: meta.len(),
                    },
                    name,
                    Some(meta.len()),
                ))
            }
            _ => Err("operation does not match the NETBLT mode".into()),
        }
    }
}

impl Service for Receiver {
    fn incoming(&mut self, inc: &Incoming, waker: &Arc<Waker>) -> Result<Accept, String> {
        let req = Request::decode(&inc.client)?;
        let (plan, name, size) = self.plan(inc, req, waker)?;
        let mut cfg = config(passive_limits(), self.death_timer, self.v6);
        cfg.params = passive_limits();
        Ok(Accept {
            config: Some(cfg),
            response: encode_response(size),
            transfer: Transfer::new(name, plan, Arc::clone(waker)),
        })
    }

    fn finished(&mut self, report: Report, junk: JunkCounts) -> bool {
        if report.error.is_some() {
            self.code = report.code;
        }
        if let Some(tx) = &self.collect {
            let _ = tx.send((report, junk));
        } else if self.json {
            let mut v = serde_json::to_value(&report).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert(
                    "junk".into(),
                    serde_json::to_value(junk).unwrap_or_default(),
                );
            }
            println!("{v}");
        } else {
            println!("{}", report.line());
        }
        !self.once
    }
}

pub fn run(a: RecvArgs) -> anyhow::Result<i32> {
    crate::app::client::default_sigpipe();
    if !a.sink && !a.dir.is_dir() {
        return Err(crate::exit::CliError::new(
            exit::LOCAL,
            format!("{}: not a directory", a.dir.display()),
        )
        .into());
    }
    let opts = PassiveOptions {
        listen: a.listen,
        raw: a.raw_ip,
        config: config(passive_limits(), a.death_timer, a.listen.is_ipv6()),
    };
    let sock = bind(&opts).map_err(app_error_to_cli)?;
    if !a.json {
        let at = sock
            .local_addr()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| a.listen.to_string());
        eprintln!(
            "netblt: listening on {at}{} ({})",
            if a.raw_ip {
                " (IP protocol 30)"
            } else {
                " (UDP)"
            },
            if a.sink {
                "discarding data".to_string()
            } else {
                format!("files in {}", a.dir.display())
            }
        );
    }
    let mut svc = Receiver {
        dir: a.dir,
        sink: a.sink,
        serve: a.serve,
        force: a.force,
        once: a.once,
        json: a.json,
        death_timer: a.death_timer,
        v6: a.listen.is_ipv6(),
        code: exit::OK,
        collect: None,
    };
    let junk = run_passive(&opts, sock, &mut svc, stop_flag()).map_err(app_error_to_cli)?;
    if !a.json && (junk.malformed + junk.stray + junk.rejected_uid) > 0 {
        eprintln!(
            "netblt: ignored {} malformed and {} stray datagrams, rejected {} duplicate OPENs",
            junk.malformed, junk.stray, junk.rejected_uid
        );
    }
    Ok(if a.once { svc.code } else { exit::OK })
}
