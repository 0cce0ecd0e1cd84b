//! `netblt bench HOST[:PORT] --size N`: RFC 1030's memory-to-memory test
//! against a `netblt recv --sink` (or any receiver: sink requests are always
//! discarded), printed as a row of RFC 1030's appendix tables.
//!
//! The data are a pseudo-random pattern copied into each buffer (what an
//! application handing data to NETBLT costs), hashed with BLAKE3 at both
//! ends like any transfer. #LOSS is, from the sender's side, the packets the
//! receiver asked for again.

use clap::Args;

use crate::commands::sim::TABLE_HEADER;
use crate::exit::{self, CliError};
use crate::flags::{CommonFlags, ParamFlags};
use crate::output::{table_row, why};
use crate::progress::{default_sigpipe, Bar};
use crate::remote::Remote;
use crate::units::{fmt_bytes, fmt_rate, parse_size};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The receiver, HOST[:PORT] (default port 9998), e.g. a `netblt recv --sink`.
    pub host: String,
    /// Bytes to move (XFSZ), e.g. 1G, 300MB, 4GiB.
    #[arg(long, value_parser = parse_size, default_value = "1G")]
    pub size: u64,
    /// Hash the test data end to end (BLAKE3) even when encrypted. Without
    /// it an encrypted test relies on every packet's authentication (AEAD
    /// over each byte and its buffer and packet numbers); plain
    /// (--insecure) tests and file transfers always carry the digest.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub params: ParamFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Runs the memory-to-memory transfer (shared with `netblt demo`): the
/// report, successful or not, or an error before the transfer started.
pub fn bench(
    remote: &Remote,
    size: u64,
    params: netblt_proto::TransferParams,
    common: &CommonFlags,
    quiet: bool,
    verify: bool,
    auto_size: netblt::AutoSize,
) -> Result<netblt::TransferReport, netblt::Error> {
    let mut opts = common.send_options(params, " --sink");
    opts.rate_control = common
        .rate_control()
        .map_err(|e| netblt::Error::InvalidOptions(e.message))?;
    opts.verify = verify;
    opts.auto_size = auto_size;
    let bar = if quiet && !common.json_stream {
        Bar::new(true)
    } else {
        common.live()
    };
    bar.attach(&mut opts);
    let result = remote.run(|r| netblt::bench(r, size, &opts));
    bar.finish();
    match result {
        Err(netblt::Error::Transfer(r)) => Ok(*r),
        other => other,
    }
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    let remote = Remote::resolve(&a.host, netblt::DEFAULT_PORT)?;
    let params = a.params.params(a.common.raw_ip)?;
    a.common.check_min_rate(&a.params)?;
    let report = bench(
        &remote,
        a.size,
        params,
        &a.common,
        a.common.machine(),
        a.verify,
        a.params.auto_size(),
    )
    .map_err(CliError::from)?;
    crate::output::first_contact(&report, a.common.machine());
    if a.common.machine() {
        let mut v = serde_json::to_value(&report)?;
        if let (Some(o), Some(io)) = (v.as_object_mut(), report.io) {
            o.insert("send_syscalls".into(), io.send_syscalls.into());
            o.insert("recv_syscalls".into(), io.recv_syscalls.into());
            o.insert("gso_fallbacks".into(), io.gso_fallbacks.into());
        }
        if a.common.json_stream {
            a.common.print_json(&v);
        } else {
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
    } else if report.error.is_none() || report.bytes_done > 0 {
        // A run that moved nothing (refused, no answer) has no row worth a
        // table: its error line says it all (F14).
        println!("{TABLE_HEADER}");
        println!("{}", table_row(&report));
        if report.error.is_none() {
            println!(
                "{} in {:.2} s: real {}, steady {}; CPU {:.2} s user + {:.2} s sys; {}",
                fmt_bytes(report.bytes),
                report.wall_time_s,
                report.real_throughput_bps.map_or("-".into(), fmt_rate),
                report.steady_throughput_bps.map_or("-".into(), fmt_rate),
                report.cpu_user_s,
                report.cpu_sys_s,
                report.digest.as_deref().map_or_else(
                    || "authenticated per packet (no digest)".to_string(),
                    |d| format!("verified (blake3 {})", d.get(..16).unwrap_or(d))
                ),
            );
            if let Some(w) = why(&report) {
                println!("{w}");
            }
        }
    }
    match &report.error {
        None => Ok(exit::OK),
        Some(e) => {
            let said = crate::output::told(e, report.error_kind());
            Err(CliError::new(exit::of(e), format!("bench: {said}"))
                .with_kind(report.error_kind())
                .reported()
                .into())
        }
    }
}
