//! RFC 415 for our time: what a byte stream costs the hosts' CPUs, per message size.
//!
//! RFC 415 (Murray, 1972) sent strings through the ARPANET and back, "with samples of a
//! million bits", and tabulated for each string size the REAL BAUD, the CPU BAUD (bits per
//! CPU-second) and the CPU NEEDED (their ratio, i.e. the share of the CPU the transfer used).
//! We do the same for one one-way transfer per message size:
//!
//! - real baud = payload bits delivered / wall-clock seconds (first write to the sink's report);
//! - CPU seconds = user + system time of the sending thread (client) and of the serving
//!   thread (server, which reports its own `getrusage` in the sink report);
//! - CPU share = CPU seconds / wall seconds, for each end;
//! - CPU baud = payload bits / CPU seconds, for each end.
//!
//! RFC 415 ran both halves on one host and "calculated using 2 million bits since the
//! strings went out and in"; its CPU baud therefore matches our `rfc415_cpu_baud`, which is
//! 2 x bits / (client CPU + server CPU). Over UDP the server's CPU figure includes anything
//! else its single UDP thread did during the transfer (e.g. echoing a concurrent probe).

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::client::SinkConnection;
use crate::error::MeasureError;
use crate::protocol::MAX_UDP_PAYLOAD;
use crate::transport::Transport;

/// The default message sizes: 64 B to 64 KiB in factors of four.
pub const DEFAULT_CPU_SIZES: [usize; 6] = [64, 256, 1024, 4096, 16384, 65536];
/// The default bytes per size: 256 MiB.
pub const DEFAULT_CPU_BYTES: u64 = 256 << 20;

/// What to measure.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CpuConfig {
    /// Server address.
    pub target: SocketAddr,
    /// Transport.
    pub transport: Transport,
    /// Message (write) sizes.
    pub sizes: Vec<usize>,
    /// Bytes to send per size.
    pub bytes: u64,
    /// Bound on any blocking step.
    pub timeout: Duration,
}

impl CpuConfig {
    /// Defaults: [`DEFAULT_CPU_SIZES`], [`DEFAULT_CPU_BYTES`], 60 s timeout.
    pub fn new(target: SocketAddr, transport: Transport) -> Self {
        CpuConfig {
            target,
            transport,
            sizes: DEFAULT_CPU_SIZES.to_vec(),
            bytes: DEFAULT_CPU_BYTES,
            timeout: Duration::from_secs(60),
        }
    }
}

/// One row of the RFC 415-style table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CpuRow {
    /// Message size asked for.
    pub size: usize,
    /// Message size used (smaller than `size` only when UDP cannot carry `size`).
    pub write_size: usize,
    /// Payload bytes written.
    pub bytes_sent: u64,
    /// Payload bytes the server counted.
    pub bytes_received: u64,
    /// Wall-clock seconds, first write to report.
    pub elapsed_s: f64,
    /// Real baud: delivered payload bits per second.
    pub real_baud: f64,
    /// Client CPU seconds (user + system) of the sending thread.
    pub client_cpu_s: f64,
    /// Server CPU seconds (user + system), as the server reported.
    pub server_cpu_s: f64,
    /// Client CPU share, percent of one CPU.
    pub client_cpu_pct: f64,
    /// Server CPU share, percent of one CPU.
    pub server_cpu_pct: f64,
    /// Client CPU baud: bits sent per client CPU-second.
    pub client_cpu_baud: f64,
    /// Server CPU baud: bits received per server CPU-second.
    pub server_cpu_baud: f64,
    /// RFC 415's figure: 2 x bits / (client + server CPU seconds).
    pub rfc415_cpu_baud: f64,
}

/// A whole CPU-cost run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CpuReport {
    /// Server address.
    pub target: String,
    /// Transport.
    pub transport: Transport,
    /// Bytes per size.
    pub bytes: u64,
    /// The rows, one per size.
    pub rows: Vec<CpuRow>,
}

/// Bits per second of `seconds`, or 0 when no time was measured.
fn per_second(bits: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bits / seconds
    } else {
        0.0
    }
}

/// Computes a row from a finished transfer's numbers; pure, so it is tested directly.
pub fn cpu_row(
    size: usize,
    write_size: usize,
    bytes_sent: u64,
    bytes_received: u64,
    elapsed_s: f64,
    client_cpu_s: f64,
    server_cpu_s: f64,
) -> CpuRow {
    let sent_bits = bytes_sent as f64 * 8.0;
    let recv_bits = bytes_received as f64 * 8.0;
    let pct = |cpu: f64| {
        if elapsed_s > 0.0 {
            100.0 * cpu / elapsed_s
        } else {
            0.0
        }
    };
    CpuRow {
        size,
        write_size,
        bytes_sent,
        bytes_received,
        elapsed_s,
        real_baud: per_second(recv_bits, elapsed_s),
        client_cpu_s,
        server_cpu_s,
        client_cpu_pct: pct(client_cpu_s),
        server_cpu_pct: pct(server_cpu_s),
        client_cpu_baud: per_second(sent_bits, client_cpu_s),
        server_cpu_baud: per_second(recv_bits, server_cpu_s),
        rfc415_cpu_baud: per_second(sent_bits + recv_bits, client_cpu_s + server_cpu_s),
    }
}

/// Runs one transfer of `config.bytes` per size. `on_row` sees each row as it is done;
/// `progress`, if given, receives the running byte count of the current size.
///
/// # Errors
/// Connection and transfer errors; [`MeasureError::InvalidArgument`] for a zero size.
pub fn measure_cpu(
    config: &CpuConfig,
    progress: Option<&AtomicU64>,
    on_row: &mut dyn FnMut(&CpuRow),
) -> Result<CpuReport, MeasureError> {
    if let Some(0) = config.sizes.iter().copied().min() {
        return Err(MeasureError::InvalidArgument(
            "message sizes must be at least 1".into(),
        ));
    }
    let mut rows = Vec::with_capacity(config.sizes.len());
    for &size in &config.sizes {
        let write_size = match config.transport {
            Transport::Udp => size.min(MAX_UDP_PAYLOAD),
            _ => size,
        };
        let conn = SinkConnection::connect(config.target, config.transport, config.timeout)?;
        let r = conn.run(config.bytes, write_size, Instant::now(), progress)?;
        let row = cpu_row(
            size,
            write_size,
            r.bytes_sent,
            r.bytes_received,
            r.elapsed_s(),
            r.client_cpu.total(),
            r.server_cpu.total(),
        );
        on_row(&row);
        rows.push(row);
    }
    Ok(CpuReport {
        target: config.target.to_string(),
        transport: config.transport,
        bytes: config.bytes,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_arithmetic_matches_rfc415_definitions() {
        // RFC 415's first row: 48.8K real baud, 291K CPU baud -> 16.8 % "CPU NEEDED".
        // Build the same ratios: 1e6 bits in 1e6/48.8e3 s, with 1e6/291e3 CPU-seconds.
        let bits = 1e6;
        let wall = bits / 48.8e3;
        let cpu = bits / 291e3;
        let r = cpu_row(50, 50, 125_000, 125_000, wall, cpu, 0.0);
        assert!((r.real_baud - 48.8e3).abs() < 1e-6);
        assert!((r.client_cpu_baud - 291e3).abs() < 1e-6);
        assert!((r.client_cpu_pct - 100.0 * 48.8 / 291.0).abs() < 1e-9);
        assert_eq!(r.server_cpu_baud, 0.0);
        // Both ends on one host, out and in: 2 x bits over both CPU times.
        let both = cpu_row(50, 50, 125_000, 125_000, wall, cpu, cpu);
        assert!((both.rfc415_cpu_baud - 291e3).abs() < 1e-6);
    }

    #[test]
    fn zero_times_do_not_divide_by_zero() {
        let r = cpu_row(1, 1, 0, 0, 0.0, 0.0, 0.0);
        assert_eq!(
            (r.real_baud, r.client_cpu_pct, r.rfc415_cpu_baud),
            (0.0, 0.0, 0.0)
        );
    }
}
