//! `netblt bench HOST[:PORT] --size N`: RFC 1030's memory-to-memory test
//! against a `netblt recv --sink` (or any receiver: sink requests are always
//! discarded), printed as a row of RFC 1030's appendix tables.
//!
//! The data are a pseudo-random pattern copied into each buffer (what an
//! application handing data to NETBLT costs), hashed with BLAKE3 at both
//! ends like any transfer. #LOSS is, from the sender's side, the packets the
//! receiver asked for again.

use clap::Args;
use netblt_proto::Mode;

use crate::app::client;
use crate::app::meta::Request;
use crate::app::params::{config, resolve_host, CommonFlags, ParamFlags};
use crate::app::report::{app_error_to_cli, Report};
use crate::app::source::{Input, Pattern};
use crate::app::transfer::{Plan, Transfer};
use crate::app::DIGEST_LEN;
use crate::commands::sim::TABLE_HEADER;
use crate::driver::active::ActiveOptions;
use crate::driver::socket::DEFAULT_PORT;
use crate::exit::{self, CliError};
use crate::units::{fmt_bytes, fmt_rate, parse_size};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The receiver, HOST[:PORT] (default port 9998), e.g. a `netblt recv --sink`.
    pub host: String,
    /// Bytes to move (XFSZ), e.g. 1G, 300MB, 4GiB.
    #[arg(long, value_parser = parse_size, default_value = "1G")]
    pub size: u64,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Runs the memory-to-memory transfer (shared with `netblt demo`).
pub fn bench(
    remote: std::net::SocketAddr,
    size: u64,
    params: netblt_proto::TransferParams,
    common: &CommonFlags,
    quiet: bool,
) -> Result<(Report, crate::driver::active::ActiveOutcome), crate::app::AppError> {
    let waker = client::new_waker()?;
    let transfer = Transfer::new(
        "sink",
        Plan::Send {
            reader: Input::Pattern(Pattern::new(0x6e65_7462_6c74)),
            size,
        },
        waker.clone(),
    );
    let opts = ActiveOptions {
        remote,
        remote_port: remote.port(),
        raw: common.raw_ip,
        config: config(params, common.death_timer, remote.is_ipv6()),
        mode: Mode::Write,
        transfer_size: Some(size + DIGEST_LEN as u64),
        client: Request::Sink { size }.encode(),
    };
    client::run(&opts, transfer, &waker, quiet)
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    crate::app::client::default_sigpipe();
    let remote = resolve_host(&a.host, DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    let (report, out) =
        bench(remote, a.size, params, &a.common, a.common.json).map_err(app_error_to_cli)?;
    if a.common.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(o) = v.as_object_mut() {
            let io = out.io;
            o.insert("send_syscalls".into(), out.send_syscalls.into());
            o.insert("recv_syscalls".into(), io.recv_syscalls.into());
            o.insert("gso_fallbacks".into(), io.gso_fallbacks.into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{TABLE_HEADER}");
        println!("{}", report.table_row());
        if report.error.is_none() {
            println!(
                "{} in {:.2} s: real {}, steady {}; CPU {:.2} s user + {:.2} s sys; verified (blake3 {})",
                fmt_bytes(report.bytes),
                report.wall_time_s,
                report.real_throughput_bps.map_or("-".into(), fmt_rate),
                report.steady_throughput_bps.map_or("-".into(), fmt_rate),
                report.cpu_user_s,
                report.cpu_sys_s,
                report.digest.as_deref().and_then(|d| d.get(..16)).unwrap_or("-"),
            );
        }
    }
    match report.error {
        None => Ok(exit::OK),
        Some(e) => Err(CliError::new(report.code, format!("bench: {e}")).into()),
    }
}
