//! `netblt cpu`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::progress::ByteWatch;
use super::{pick_bulk_transport, print_json, CpuArgs};
use crate::cpu::{measure_cpu, CpuConfig, CpuReport, DEFAULT_CPU_SIZES};
use crate::plot::{self, Series};
use crate::protocol::MAX_UDP_PAYLOAD;
use crate::transport::Transport;
use crate::units::{format_bytes, format_si};

/// Measures CPU cost per message size and prints an RFC 415-style table or one JSON object.
///
/// # Errors
/// Connection and transfer errors, a zero size or byte count.
pub fn run_cpu(args: CpuArgs) -> anyhow::Result<()> {
    let transport = pick_bulk_transport(args.tcp, args.udp, args.netblt, Transport::Tcp);
    let mut config = CpuConfig::new(args.target.0, transport);
    if let Some(spec) = &args.sizes {
        config.sizes = spec.resolve(&DEFAULT_CPU_SIZES);
    }
    config.bytes = args.bytes.0;
    config.timeout = Duration::from_secs(args.timeout_secs);
    anyhow::ensure!(config.bytes > 0, "--bytes must be at least 1");
    anyhow::ensure!(
        !config.sizes.contains(&0),
        "message sizes must be at least 1 byte"
    );
    if transport == Transport::Netblt && config.sizes.len() > 1 {
        // NETBLT packetizes by itself; the write size does not apply.
        eprintln!("note: NETBLT chooses its own packet size; one row");
        config.sizes.truncate(1);
    }
    if transport == Transport::Udp {
        for s in config.sizes.iter().filter(|&&s| s > MAX_UDP_PAYLOAD) {
            eprintln!("note: {s} B does not fit one UDP datagram; sending {MAX_UDP_PAYLOAD} B messages for that row");
        }
    }

    let counter = Arc::new(AtomicU64::new(0));
    let label = Arc::new(Mutex::new(String::new()));
    let report = {
        let _watch = ByteWatch::start(Arc::clone(&label), Arc::clone(&counter), config.bytes);
        let mut rows_done = 0usize;
        let sizes = config.sizes.clone();
        if let (Ok(mut l), Some(first)) = (label.lock(), sizes.first()) {
            *l = format!("cpu {transport} size {first} B (1/{})", sizes.len());
        }
        measure_cpu(&config, Some(&counter), &mut |_row| {
            rows_done += 1;
            counter.store(0, Ordering::Relaxed);
            if let (Ok(mut l), Some(next)) = (label.lock(), sizes.get(rows_done)) {
                *l = format!(
                    "cpu {transport} size {next} B ({}/{})",
                    rows_done + 1,
                    sizes.len()
                );
            }
        })?
    };

    if let Some(stem) = &args.plot {
        let col = |f: fn(&crate::cpu::CpuRow) -> f64| -> Vec<(f64, f64)> {
            report
                .rows
                .iter()
                .map(|r| (r.write_size as f64, f(r)))
                .collect()
        };
        plot::lines(
            stem,
            &format!("CPU cost per message size ({transport}, after RFC 415)"),
            "message size (bytes)",
            "bits per second",
            &[
                Series::new("real baud", col(|r| r.real_baud)),
                Series::new("client CPU baud", col(|r| r.client_cpu_baud)),
                Series::new("server CPU baud", col(|r| r.server_cpu_baud)),
            ],
            true,
            true,
        )?;
    }
    if args.json {
        print_json(&report)
    } else {
        print!("{}", table(&report));
        Ok(())
    }
}

fn table(r: &CpuReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "netblt cpu: {} to {}, {} per size (after RFC 415; baud = bits/s, CPU baud = bits per CPU-second)",
        r.transport,
        r.target,
        format_bytes(r.bytes)
    );
    let _ = writeln!(
        out,
        "{:>8} {:>11} {:>11} {:>11} {:>9} {:>11} {:>9} {:>11}",
        "size", "real baud", "lost", "client CPU", "needed", "server CPU", "needed", "RFC415 CPU"
    );
    for row in &r.rows {
        let lost = row.bytes_sent.saturating_sub(row.bytes_received);
        let _ = writeln!(
            out,
            "{:>8} {:>11} {:>11} {:>11} {:>8.1}% {:>11} {:>8.1}% {:>11}",
            row.write_size,
            format_si(row.real_baud),
            format_bytes(lost),
            format_si(row.client_cpu_baud),
            row.client_cpu_pct,
            format_si(row.server_cpu_baud),
            row.server_cpu_pct,
            format_si(row.rfc415_cpu_baud),
        );
    }
    out
}
