//! `netblt demo`: the README's main job on a built-in default. A sink
//! receiver and a sender in one process (two threads), on loopback, moving a
//! few hundred MB memory to memory; then what happened.
//!
//! [`run_demo`] takes the receiver's listening address and, separately, the
//! address the sender aims at, so that the emulator can put an emulated path
//! between the two.

use std::net::SocketAddr;
use std::sync::mpsc;

use clap::Args;
use netblt::{JunkCounts, Receiver, ReceiverOptions, TransferReport};

use crate::exit::{self, CliError};
use crate::flags::{CommonFlags, ParamFlags};
use crate::output::table_row;
use crate::progress::{default_sigpipe, stop_flag};
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
    /// Run on plain loopback even when an emulated path is possible.
    #[arg(long)]
    pub loopback: bool,
    /// Emulated path (see `netblt profiles`), used when running as root with
    /// /dev/net/tun.
    #[arg(long, default_value = "continental")]
    pub profile: String,
    /// Random loss on the emulated path, both directions, as a fraction
    /// (0.01 is 1 %).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub loss: f64,
    /// Bytes to move over the emulated path (the loopback run uses --size).
    #[arg(long, value_parser = parse_size, default_value = "60MB")]
    pub emulated_size: u64,
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
    pub sender: TransferReport,
    pub receiver: Option<TransferReport>,
    pub junk: Option<JunkCounts>,
}

/// The demo's sink receiver, bound, with the channel its report comes on.
pub struct DemoReceiver {
    receiver: Receiver,
    reports: mpsc::Receiver<(TransferReport, JunkCounts)>,
}

/// Binds the sink receiver for one transfer (separately, so that it can be
/// bound inside the emulator's right-hand namespace).
pub fn bind_receiver(o: &DemoOptions) -> Result<DemoReceiver, netblt::Error> {
    let (tx, reports) = mpsc::channel();
    let mut opts = ReceiverOptions::default();
    opts.death_timer = std::time::Duration::from_secs(u64::from(o.death_timer));
    opts.max_transfers = Some(1);
    opts.stop = Some(stop_flag());
    opts.on_transfer = Some(std::sync::Arc::new(
        move |r: &TransferReport, j: &JunkCounts| {
            let _ = tx.send((r.clone(), *j));
        },
    ));
    Ok(DemoReceiver {
        receiver: Receiver::bind(o.listen, opts)?,
        reports,
    })
}

/// Runs a receiver thread and a sender (this thread) for one transfer.
pub fn run_demo(o: &DemoOptions) -> Result<DemoResult, netblt::Error> {
    run_demo_on(o, bind_receiver(o)?)
}

/// As [`run_demo`] with the receiver already bound (for instance inside
/// the emulator's right-hand namespace while this thread sits in the
/// left-hand one).
pub fn run_demo_on(o: &DemoOptions, r: DemoReceiver) -> Result<DemoResult, netblt::Error> {
    let bound = r.receiver.local_addr();
    let target = o.target.unwrap_or_else(|| {
        let ip = if bound.ip().is_unspecified() {
            o.listen.ip()
        } else {
            bound.ip()
        };
        SocketAddr::new(ip, bound.port())
    });
    let stop = stop_flag();
    let receiver = r.receiver;
    let thread = std::thread::Builder::new()
        .name("netblt-demo-recv".into())
        .spawn(move || receiver.sink())
        .map_err(|e| netblt::Error::Local(format!("thread: {e}")))?;
    // No hand-set rate: the adaptive controller finds the path's.
    let common = CommonFlags {
        death_timer: o.death_timer,
        raw_ip: false,
        json: true,
        policy: "fair".into(),
        min_rate: None,
        rate_file: None,
        json_stream: false,
        interval: 1.0,
        security: crate::security_flags::SecurityFlags::plain(),
    };
    let sent = crate::commands::bench::bench(
        &crate::remote::Remote::one(target),
        o.size,
        o.params,
        &common,
        true,
        false,
        netblt::AutoSize::default(),
    );
    if sent.is_err() {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let sender = sent?;
    // The receiver retires the connection once its last OK is acknowledged.
    let got = r
        .reports
        .recv_timeout(std::time::Duration::from_secs(u64::from(o.death_timer) + 5))
        .ok();
    if got.is_none() {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let _ = thread.join();
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

/// The README's main job: over an emulated long, lossy path when this
/// process may build one (root and /dev/net/tun), with kernel TCP measured
/// on the same path for contrast; otherwise on loopback, with a notice.
pub fn run(a: DemoArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    emulated_profile(&a)?;
    let emulate = !a.loopback
        && match netblt_emu::check_environment() {
            Ok(()) => true,
            Err(e) => {
                eprintln!(
                    "netblt demo: no emulated path here ({e}); running on plain loopback instead"
                );
                false
            }
        };
    let (header, r, params, tcp) = if emulate {
        run_emulated(&a)?
    } else {
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
        let header = format!(
            "netblt demo: {} memory to memory over UDP on loopback, receiver and sender in one process",
            fmt_bytes(a.size)
        );
        (
            header,
            run_demo(&o).map_err(CliError::from)?,
            params,
            Vec::new(),
        )
    };
    if !a.json {
        println!("{header}");
    }
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
        println!("{}", table_row(&row));
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
        if let Some(rr) = &s.rate {
            println!(
                // The path's figures first: the pacing when the transfer
                // ended is the tail's (its last repairs), not the rate it ran at.
                "rate control (fair): path estimate {}, base RTT {}, noise loss {:.2} %, {} congestion cuts; pacing {} ({}) when the transfer ended",
                rr.bottleneck_bps.map_or("-".into(), fmt_rate),
                rr.min_rtt_ms.map_or("-".into(), |m| format!("{m:.1} ms")),
                rr.noise_loss * 100.0,
                rr.congestion_events,
                fmt_rate(rr.rate_bps),
                rr.reason,
            );
        }
        for (cc, bps, secs) in tcp {
            println!(
                "kernel TCP ({cc}) on the same path, for comparison: {} over {secs:.0} s (NETBLT's steady rate is {:.2}x that)",
                fmt_rate(bps),
                s.steady_throughput_bps.map_or(0.0, |n| n / bps.max(1.0))
            );
        }
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
        s.error
            .as_ref()
            .map_or(exit::FAILED, exit::of)
            .max(exit::FAILED)
    })
}

/// What a demo prints from: the header line, both ends' results, the
/// parameters offered, and kernel TCP's (bits per second, seconds) when it
/// was measured.
type DemoRun = (
    String,
    DemoResult,
    netblt_proto::TransferParams,
    Vec<(&'static str, f64, f64)>,
);

/// `--profile` and `--loss`, checked whichever path runs: a typo was
/// accepted without a word where the demo fell back to loopback (F15).
fn emulated_profile(a: &DemoArgs) -> Result<netblt_link::profiles::Profile, CliError> {
    if !(0.0..1.0).contains(&a.loss) {
        return Err(CliError::usage(format!(
            "--loss must be in [0, 1) (a fraction: 0.01 is 1 %), got {}",
            a.loss
        )));
    }
    netblt_link::profiles::profile(&a.profile).ok_or_else(|| {
        CliError::usage(format!(
            "unknown profile '{}' (known: {})",
            a.profile,
            netblt_link::profiles::names().join(", ")
        ))
    })
}

/// Emulated path: the profile's links with `--loss` added, NETBLT offered
/// 90 % of the link rate (it does no congestion control), then 5 s of kernel
/// TCP on the same path.
fn run_emulated(a: &DemoArgs) -> anyhow::Result<DemoRun> {
    use netblt_link::LossModel;
    let profile = emulated_profile(a)?;
    let mut cfg = netblt_emu::EmuConfig::from_profile(
        format!("demo{}", std::process::id() % 100_000),
        &profile,
    );
    for link in [&mut cfg.forward, &mut cfg.reverse] {
        if a.loss > 0.0 {
            link.loss = LossModel::Bernoulli { p: a.loss };
        }
    }
    // No hand-set rate: the adaptive controller finds the path's
    // (docs/decisions.md, R1). `--rate` is only the ceiling.
    let params = a.params.params(false)?;
    let emu = netblt_emu::Emulation::start(cfg).map_err(|e| {
        CliError::new(
            exit::EMULATOR,
            format!("could not build the emulated path: {e}"),
        )
    })?;
    let right = emu.right_addr();
    let listen = SocketAddr::new(right, netblt::DEFAULT_PORT);
    let o = DemoOptions {
        listen,
        target: Some(listen),
        size: a.emulated_size,
        params,
        death_timer: 10,
    };
    let receiver = emu
        .enter_right(|| bind_receiver(&o))
        .map_err(CliError::from)?;
    let result = emu.enter_left(|| run_demo_on(&o, receiver));
    let tcp = if result.is_ok() {
        ["cubic", "bbr"]
            .into_iter()
            .filter_map(|cc| tcp_on_path(&emu, right, 5.0, cc).map(|(bps, secs)| (cc, bps, secs)))
            .collect()
    } else {
        Vec::new()
    };
    let stats = emu.stop();
    if stats.failed {
        eprintln!("netblt demo: warning: the emulator reported dropped packets outside the model");
    }
    let r = result.map_err(CliError::from)?;
    let header = format!(
        "netblt demo: {} memory to memory over an emulated path ({}: {}; {:.1} % loss each way), receiver and sender in one process",
        fmt_bytes(a.emulated_size),
        profile.name,
        profile.summary,
        a.loss * 100.0
    );
    Ok((header, r, params, tcp))
}

/// Picks the socket's TCP congestion control (Linux `TCP_CONGESTION`; the
/// kernel's default stays if the algorithm is not available).
fn set_congestion_control(s: &std::net::TcpStream, name: &str) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket descriptor and a buffer of the given length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        eprintln!("netblt demo: TCP {name} not available here; the kernel's default was used");
    }
}

/// Kernel TCP over the emulated path for `secs` seconds: (bits per second
/// received, seconds).
fn tcp_on_path(
    emu: &netblt_emu::Emulation,
    right: std::net::IpAddr,
    secs: f64,
    congestion_control: &str,
) -> Option<(f64, f64)> {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let addr = SocketAddr::new(right, netblt::DEFAULT_PORT + 1);
    let listener = emu.enter_right(|| std::net::TcpListener::bind(addr)).ok()?;
    let window = Duration::from_secs_f64(secs);
    let receiver = std::thread::spawn(move || -> Option<u64> {
        let (mut s, _) = listener.accept().ok()?;
        s.set_read_timeout(Some(Duration::from_millis(100))).ok()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut first: Option<Instant> = None;
        let mut n = 0u64;
        loop {
            if first.is_some_and(|t| t.elapsed() >= window) {
                return Some(n);
            }
            match s.read(&mut buf) {
                Ok(0) => return Some(n),
                Ok(k) => {
                    first.get_or_insert_with(Instant::now);
                    n += k as u64;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return None,
            }
        }
    });
    emu.enter_left(|| {
        let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)) else {
            return;
        };
        set_congestion_control(&s, congestion_control);
        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
        let block = vec![0x42u8; 1 << 16];
        let t0 = Instant::now();
        // Write until the receiver has had its window (it then closes).
        while t0.elapsed() < window + Duration::from_secs(2) {
            match s.write(&block) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
    });
    let n = receiver.join().ok()??;
    Some((n as f64 * 8.0 / secs, secs))
}
