//! RFC 415's table for our time: kernel TCP over loopback, message sizes like
//! the paper's 8-bit-byte rows, with CPU baud = bits per CPU-second.

use std::net::SocketAddr;

use netblt_measure::cpu::{measure_cpu, CpuConfig, CpuRow};
use netblt_measure::{EchoServer, EchoServerConfig, Transport};

use super::fmt::{num, table};

/// RFC 415, BIN/BOUT buffered mode, 8-bit bytes: bytes, real baud, CPU baud, CPU needed (%).
pub const PAPER: &[(usize, f64, f64, f64)] = &[
    (50, 22.0e3, 70e3, 31.0),
    (100, 26.7e3, 76e3, 35.0),
    (200, 29.0e3, 79e3, 36.0),
    (400, 30.0e3, 81e3, 37.0),
    (800, 31.9e3, 78e3, 40.0),
    (1600, 38.1e3, 64e3, 59.0),
    (3200, 41.8e3, 59e3, 70.0),
];

/// Runs `netblt cpu`'s measurement against an echo server of our own on
/// 127.0.0.1 (TCP), `bytes` per size.
pub fn run(bytes: u64) -> anyhow::Result<Vec<CpuRow>> {
    let mut cfg = EchoServerConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    cfg.udp = false;
    let server = EchoServer::start(cfg)?;
    let addr = server
        .tcp_addr()
        .ok_or_else(|| anyhow::anyhow!("echo server has no TCP address"))?;
    let mut c = CpuConfig::new(addr, Transport::Tcp);
    c.sizes = PAPER.iter().map(|p| p.0).collect();
    c.bytes = bytes;
    let report = measure_cpu(&c, None, &mut |_| {});
    server.shutdown();
    Ok(report?.rows)
}

/// RFC 415's table beside ours, as Markdown.
pub fn markdown(rows: &[CpuRow]) -> String {
    let body: Vec<Vec<String>> = PAPER
        .iter()
        .map(|&(size, real, cpu, needed)| {
            let ours = rows.iter().find(|r| r.size == size);
            let o = |f: fn(&CpuRow) -> f64, scale: f64, d: usize| {
                ours.map_or("-".into(), |r| num(f(r) / scale, d))
            };
            vec![
                format!("{size}/8"),
                num(real / 1e3, 1),
                o(|r| r.real_baud, 1e6, 0),
                num(cpu / 1e3, 0),
                o(|r| r.rfc415_cpu_baud, 1e6, 0),
                num(needed, 0),
                o(|r| r.client_cpu_pct + r.server_cpu_pct, 1.0, 0),
            ]
        })
        .collect();
    table(
        &[
            "bytes/size",
            "real baud paper (kb/s)",
            "ours (Mb/s)",
            "CPU baud paper (kb/s)",
            "ours (Mb/s)",
            "CPU needed paper (%)",
            "ours (%, both ends)",
        ],
        &body,
    )
}
