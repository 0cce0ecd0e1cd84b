//! `netblt demo`: the README's main job on a built-in default. A sink
//! receiver and a sender in one process (two threads), on loopback, moving a
//! few hundred MB memory to memory; then what happened.
//!
//! [`run_demo`] takes the receiver's listening address and, separately, the
//! address the sender aims at, so that the emulator can put an emulated path
//! between the two.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::app::params::{CommonFlags, ParamFlags};
use crate::app::report::{app_error_to_cli, Report};
use crate::app::AppError;
use crate::commands::recv::Receiver;
use crate::driver::passive::{bind, run_passive, JunkCounts, PassiveOptions};
use crate::exit::{self, CliError};
use crate::units::{fmt_bytes, fmt_rate, parse_size};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Bytes to move.
    #[arg(long, value_parser = parse_size, default_value = "300MB")]
    pub size: u64,
    #[command(flatten)]
    pub params: ParamFlags,
    /// Print one JSON object (sender and receiver reports).
    #[arg(long)]
    pub json: bool,
}

/// Where the demo's two ends sit.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The receiver listens here (port 0: any free port).
    pub listen: SocketAddr,
    /// The sender aims here; `None`: the receiver's bound address.
    pub target: Option<SocketAddr>,
    pub size: u64,
    pub params: netblt_proto::TransferParams,
    pub death_timer: u16,
}

/// Both ends' results.
#[derive(Debug, serde::Serialize)]
pub struct DemoResult {
    pub sender: Report,
    pub receiver: Option<Report>,
    pub junk: Option<JunkCounts>,
}

/// Runs a receiver thread and a sender (this thread) for one transfer.
pub fn run_demo(o: &DemoOptions) -> Result<DemoResult, AppError> {
    let popts = PassiveOptions {
        listen: o.listen,
        raw: false,
        config: crate::app::params::config(
            crate::app::params::passive_limits(),
            o.death_timer,
            o.listen.is_ipv6(),
        ),
    };
    let sock = bind(&popts)?;
    let bound = sock
        .local_addr()
        .map_err(|e| AppError::new(exit::LOCAL, format!("socket: {e}"), ""))?;
    let target = o.target.unwrap_or_else(|| {
        let ip = if bound.ip().is_unspecified() {
            o.listen.ip()
        } else {
            bound.ip()
        };
        SocketAddr::new(ip, bound.port())
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let mut svc = Receiver {
        dir: PathBuf::from("."),
        sink: true,
        serve: false,
        force: false,
        once: true,
        json: false,
        death_timer: o.death_timer,
        v6: o.listen.is_ipv6(),
        code: exit::OK,
        collect: Some(tx),
    };
    let stop: &'static std::sync::atomic::AtomicBool = crate::app::client::stop_flag();
    let receiver = std::thread::Builder::new()
        .name("netblt-demo-recv".into())
        .spawn(move || run_passive(&popts, sock, &mut svc, stop))
        .map_err(|e| AppError::new(exit::LOCAL, format!("thread: {e}"), ""))?;
    let common = CommonFlags {
        death_timer: o.death_timer,
        raw_ip: false,
        json: true,
    };
    let sent = crate::commands::bench::bench(target, o.size, o.params, &common, true);
    if sent.is_err() {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let (sender, _) = sent?;
    // The receiver retires the connection once its last OK is acknowledged.
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(u64::from(o.death_timer) + 5))
        .ok();
    if got.is_none() {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let _ = receiver.join();
    let (receiver, junk) = match got {
        Some((r, j)) => (Some(r), Some(j)),
        None => (None, None),
    };
    Ok(DemoResult {
        sender,
        receiver,
        junk,
    })
}

pub fn run(a: DemoArgs) -> anyhow::Result<i32> {
    crate::app::client::default_sigpipe();
    let params = a.params.params(false)?;
    let o = DemoOptions {
        listen: "127.0.0.1:0"
            .parse()
            .map_err(|_| CliError::usage("bad address"))?,
        target: None,
        size: a.size,
        params,
        death_timer: 10,
    };
    if !a.json {
        println!(
            "netblt demo: {} memory to memory over UDP on loopback, receiver and sender in one process",
            fmt_bytes(a.size)
        );
    }
    let r = run_demo(&o).map_err(app_error_to_cli)?;
    let s = &r.sender;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "negotiated: packet {} B, buffer {} B, {} buffers, burst {} packets / {} ms ({}), data checksum {}",
            s.packet_size,
            s.buffer_size,
            s.buffers,
            s.burst_size,
            s.burst_interval_ms,
            fmt_rate(f64::from(s.burst_size) * f64::from(s.packet_size) * 8000.0 / f64::from(s.burst_interval_ms.max(1))),
            if params.checksum_data { "on" } else { "off" },
        );
        println!("{}", crate::commands::sim::TABLE_HEADER);
        let mut row = s.clone();
        if let Some(rr) = &r.receiver {
            row.lost = rr.lost;
            row.data_timeouts = rr.data_timeouts;
        }
        println!("{}", row.table_row());
        println!(
            "throughput: real {}, steady {}; {:.2} s wall; CPU {:.2} s user + {:.2} s sys (both ends)",
            s.real_throughput_bps.map_or("-".into(), fmt_rate),
            s.steady_throughput_bps.map_or("-".into(), fmt_rate),
            s.wall_time_s,
            s.cpu_user_s,
            s.cpu_sys_s,
        );
        let verified = s.error.is_none() && r.receiver.as_ref().is_some_and(|x| x.verified);
        println!(
            "{} (blake3 {})",
            if verified {
                "verified: both ends computed the same digest"
            } else {
                "NOT verified"
            },
            s.digest.as_deref().unwrap_or("-")
        );
        if let Some(e) = s
            .error
            .as_ref()
            .or(r.receiver.as_ref().and_then(|x| x.error.as_ref()))
        {
            println!("error: {e}");
        }
    }
    let ok = s.error.is_none() && r.receiver.as_ref().is_some_and(|x| x.error.is_none());
    Ok(if ok {
        exit::OK
    } else {
        s.code.max(exit::FAILED)
    })
}
