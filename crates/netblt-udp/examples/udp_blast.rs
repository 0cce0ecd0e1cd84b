//! Loopback blast benchmark (not a test): how much do GSO, GRO and mmsg buy on this host?
//!
//! For each send mode, one thread blasts 1400-byte datagrams at a receiver thread over loopback
//! for a few seconds, as fast as the socket lets it (no pacing: excess is dropped at the
//! receiver's buffer and shows up as loss). The receiver uses `recvmmsg` with 32 buffers of
//! 64 KiB and, unless `--no-gro`, `UDP_GRO`.
//!
//! ```text
//! cargo run --release -p netblt-udp --example udp_blast -- [--secs 3] [--size 1400] [--v6] [--no-gro]
//! ```
//!
//! Gb/s counts UDP payload bytes only. "syscalls/dgram" divides syscalls (failed ones included)
//! by datagrams on each side.

use std::{
    io::{ErrorKind, IoSliceMut},
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use netblt_udp::{
    IoStats, RecvMeta, SocketConfig, Transmit, UdpSocket, BATCH, MAX_DATAGRAM_BUFFER,
};

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// One `sendmsg` per datagram.
    Single,
    /// Trains of `n` datagrams on a socket with GSO off: `sendmmsg`, 32 per call.
    Mmsg(usize),
    /// One GSO `sendmsg` per train of `n` datagrams.
    Gso(usize),
    /// `k` GSO trains of `n` datagrams per `sendmmsg`.
    GsoBatch(usize, usize),
}

impl Mode {
    fn label(self) -> String {
        match self {
            Mode::Single => "sendto x1".into(),
            Mode::Mmsg(n) => format!("sendmmsg x{n} (no GSO)"),
            Mode::Gso(n) => format!("GSO x{n}"),
            Mode::GsoBatch(k, n) => format!("GSO x{} ({k}x{n} sendmmsg)", k * n),
        }
    }
}

struct Args {
    secs: f64,
    size: usize,
    v6: bool,
    gro: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        secs: 3.0,
        size: 1400,
        v6: false,
        gro: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--secs" => a.secs = it.next().and_then(|v| v.parse().ok()).ok_or("--secs N")?,
            "--size" => {
                a.size = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--size BYTES")?
            }
            "--v6" => a.v6 = true,
            "--no-gro" => a.gro = false,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.size == 0 || a.size > 65_000 {
        return Err("--size must be 1..=65000".into());
    }
    Ok(a)
}

struct Outcome {
    elapsed: Duration,
    tx: IoStats,
    rx: IoStats,
    max_gso: usize,
    gro: usize,
}

fn run(mode: Mode, args: &Args) -> std::io::Result<Outcome> {
    let local: SocketAddr = if args.v6 {
        "[::1]:0".parse().map_err(std::io::Error::other)?
    } else {
        "127.0.0.1:0".parse().map_err(std::io::Error::other)?
    };
    let rx_cfg = SocketConfig {
        gro: args.gro,
        ..SocketConfig::default()
    };
    let tx_cfg = SocketConfig {
        gso: !matches!(mode, Mode::Mmsg(_)),
        ..SocketConfig::default()
    };
    let rx = Arc::new(UdpSocket::bind(local, &rx_cfg)?);
    let tx = UdpSocket::bind(local, &tx_cfg)?;
    let dst = rx.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));

    let receiver = {
        let rx = Arc::clone(&rx);
        let stop = Arc::clone(&stop);
        thread::spawn(move || receive_until_stopped(&rx, &stop))
    };

    let per_train = match mode {
        Mode::Single => 1,
        Mode::Mmsg(n) | Mode::Gso(n) | Mode::GsoBatch(_, n) => n,
    };
    let payload: Vec<u8> = (0..args.size * per_train).map(|i| i as u8).collect();
    let train = Transmit {
        destination: dst,
        contents: &payload,
        segment_size: Some(args.size),
        src_ip: None,
    };
    let trains = [train; BATCH];
    let k = match mode {
        Mode::GsoBatch(k, _) => k.min(BATCH),
        _ => 1,
    };

    let start = Instant::now();
    let budget = Duration::from_secs_f64(args.secs);
    while start.elapsed() < budget {
        let r = match mode {
            Mode::GsoBatch(..) => {
                let mut sent = 0;
                let mut r = Ok(());
                while sent < k {
                    match tx.send_batch(&trains[sent..k]) {
                        Ok(n) => sent += n,
                        Err(e) => {
                            r = Err(e);
                            break;
                        }
                    }
                }
                r
            }
            _ => tx.send(&train),
        };
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                tx.wait(false, true, Some(Duration::from_millis(10)))?;
            }
            Err(e) => return Err(e),
        }
    }
    let elapsed = start.elapsed();
    // Let the receiver drain what is queued, then stop it.
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    receiver
        .join()
        .map_err(|_| std::io::Error::other("receiver panicked"))??;
    Ok(Outcome {
        elapsed,
        tx: tx.stats(),
        rx: rx.stats(),
        max_gso: tx.max_gso_segments(),
        gro: rx.gro_segments(),
    })
}

fn receive_until_stopped(rx: &UdpSocket, stop: &AtomicBool) -> std::io::Result<()> {
    let mut storage = vec![0u8; BATCH * MAX_DATAGRAM_BUFFER];
    let mut meta = [RecvMeta::default(); BATCH];
    while !stop.load(Ordering::Relaxed) {
        let mut bufs: [IoSliceMut<'_>; BATCH] = {
            let mut chunks = storage.chunks_mut(MAX_DATAGRAM_BUFFER);
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()))
        };
        match rx.recv(&mut bufs, &mut meta) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                rx.wait(true, false, Some(Duration::from_millis(10)))?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 * 8.0 / d.as_secs_f64() / 1e9
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("udp_blast: {e}");
            std::process::exit(2);
        }
    };
    let max_in_one_send = if args.v6 { 65_527 } else { 65_507 } / args.size;
    let modes = [
        Mode::Single,
        Mode::Mmsg(32),
        Mode::Gso(32),
        Mode::Gso(64.min(max_in_one_send)),
        Mode::GsoBatch(2, 32),
    ];
    println!(
        "loopback {}, {}-byte datagrams, {:.1} s per mode, receiver recvmmsg x{BATCH} {}",
        if args.v6 { "IPv6" } else { "IPv4" },
        args.size,
        args.secs,
        if args.gro { "+ GRO" } else { "(GRO off)" },
    );
    println!(
        "{:<26} {:>9} {:>9} {:>7} {:>14} {:>14} {:>8}",
        "mode", "sent Gb/s", "recv Gb/s", "loss %", "tx sys/dgram", "rx sys/dgram", "tx EAGAIN"
    );
    for mode in modes {
        match run(mode, &args) {
            Ok(o) => {
                let loss = if o.tx.datagrams_sent == 0 {
                    0.0
                } else {
                    100.0 * (1.0 - o.rx.datagrams_received as f64 / o.tx.datagrams_sent as f64)
                };
                println!(
                    "{:<26} {:>9.2} {:>9.2} {:>7.1} {:>14.4} {:>14.4} {:>8}{}",
                    mode.label(),
                    gbps(o.tx.bytes_sent, o.elapsed),
                    gbps(o.rx.bytes_received, o.elapsed),
                    loss,
                    o.tx.send_syscalls_per_datagram(),
                    o.rx.recv_syscalls_per_datagram(),
                    o.tx.would_block,
                    if o.tx.gso_fallbacks > 0 || (o.max_gso == 1 && matches!(mode, Mode::Gso(_))) {
                        "  (GSO unavailable: sent without it)"
                    } else if args.gro && o.gro == 1 {
                        "  (GRO unavailable)"
                    } else {
                        ""
                    }
                );
            }
            Err(e) => println!("{:<26} failed: {e}", mode.label()),
        }
    }
    if 64 > max_in_one_send {
        println!(
            "note: one GSO send carries at most {} bytes over {}, so {} x {} B is the largest \
             single-sendmsg train; 64 datagrams per syscall need sendmmsg of two trains.",
            if args.v6 { "65,527" } else { "65,507" },
            if args.v6 { "IPv6" } else { "IPv4" },
            max_in_one_send,
            args.size
        );
    }
}
