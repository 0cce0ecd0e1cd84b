//! The trafgen experiment: N concurrent one-way transfers, with RTT probed under the load.
//!
//! XUNET §3: each trafgen "writes 1 MB to the destination as fast as it can"; the RTT
//! client (dkbench) runs meanwhile, and Table III reports overall throughput and throughput
//! per process for 1 to 14 processes; Figures 5-8 plot minimum and mean RTT against the
//! number of processes. We reproduce that with threads instead of processes:
//!
//! 1. every transfer connects first (call set-up is not timed), plus one echo connection;
//! 2. all of them wait on one barrier, so the transfers start together;
//! 3. each transfer times itself from its first write to the server's report;
//! 4. the RTT probe sends one message at a time for as long as any transfer is still running
//!    (at most `rtt_count`); probes that would fall after the load are not taken.
//!
//! Table III's "overall throughput" is the per-process throughputs summed (its rows are
//! exactly N times the per-process column), which we report as `overall`; we also report
//! `aggregate`, total bytes over the wall-clock span from first start to last end, which is
//! smaller when the transfers do not overlap perfectly.

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::{EchoClient, SinkConnection, SinkReport};
use crate::error::MeasureError;
use crate::stats::Summary;
use crate::transport::Transport;

/// What to run.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoadConfig {
    /// Server address (sink and echo).
    pub target: SocketAddr,
    /// Transport of the transfers and of the RTT probe.
    pub transport: Transport,
    /// Concurrent transfers; 0 runs the RTT probe alone (the unloaded baseline).
    pub procs: usize,
    /// Bytes per transfer. Default 1 MiB (XUNET's 1 MB).
    pub bytes_per_proc: u64,
    /// Bytes per write. Default 1024, trafgen's packet size.
    pub write_size: usize,
    /// RTT probe message size; 0 disables the probe. Default 756, XUNET's full window.
    pub rtt_size: usize,
    /// Most RTT probes. Default 100, XUNET's count under load.
    pub rtt_count: usize,
    /// Wait this long after the start before probing (XUNET slept about 5 s). Default 0.
    pub rtt_delay: Duration,
    /// Timeout of one probe. Default 1 s.
    pub rtt_timeout: Duration,
    /// Bound on any blocking step of a transfer. Default 60 s.
    pub timeout: Duration,
}

impl LoadConfig {
    /// XUNET's defaults: one 1 MiB transfer in 1 KiB writes, 100 probes of 756 bytes.
    pub fn new(target: SocketAddr, transport: Transport) -> Self {
        LoadConfig {
            target,
            transport,
            procs: 1,
            bytes_per_proc: 1 << 20,
            write_size: 1024,
            rtt_size: 756,
            rtt_count: 100,
            rtt_delay: Duration::ZERO,
            rtt_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(60),
        }
    }
}

/// One transfer of a load run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Transfer {
    /// 0-based index.
    pub id: usize,
    /// Bytes per second delivered (server-counted bytes over first write to report).
    pub throughput: f64,
    /// Everything the transfer measured.
    #[serde(flatten)]
    pub report: SinkReport,
}

/// One load run: one row of Table III plus one point of Figures 5-8.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LoadRun {
    /// Transport.
    pub transport: Transport,
    /// Number of concurrent transfers.
    pub procs: usize,
    /// Bytes per transfer asked for.
    pub bytes_per_proc: u64,
    /// Bytes written by all transfers.
    pub bytes_sent: u64,
    /// Bytes the server counted for all transfers.
    pub bytes_received: u64,
    /// Table III "overall throughput": sum of per-transfer throughputs, bytes/s.
    pub overall: f64,
    /// Table III "throughput per process": their mean, bytes/s.
    pub per_process: f64,
    /// Total received bytes over the span from first start to last end, bytes/s.
    pub aggregate: f64,
    /// RTT probe message size (0 = no probe).
    pub rtt_size: usize,
    /// Probes sent while the load ran.
    pub rtt_sent: usize,
    /// Probes lost (UDP).
    pub rtt_lost: usize,
    /// RTT under load, microseconds.
    pub rtt_us: Option<Summary>,
    /// The transfers.
    pub transfers: Vec<Transfer>,
}

/// Runs one load experiment. `progress`, if given, receives the running total of bytes
/// written by all transfers.
///
/// # Errors
/// Connection and transfer errors from any transfer or from the probe.
pub fn run_load(
    config: &LoadConfig,
    progress: Option<&AtomicU64>,
) -> Result<LoadRun, MeasureError> {
    if config.write_size == 0 {
        return Err(MeasureError::InvalidArgument(
            "write size must be at least 1".into(),
        ));
    }
    // Set-up, untimed: every transfer's connection and the probe's.
    let conns = (0..config.procs)
        .map(|_| SinkConnection::connect(config.target, config.transport, config.timeout))
        .collect::<Result<Vec<_>, _>>()?;
    let probe = if config.rtt_size > 0 && config.rtt_count > 0 {
        // NETBLT moves data one way only; its RTT probe is a UDP echo.
        let probe = match config.transport {
            Transport::Netblt => Transport::Udp,
            t => t,
        };
        let c = EchoClient::connect(config.target, probe, config.rtt_timeout)?;
        if config.rtt_size > c.max_message() {
            return Err(MeasureError::SizeOutOfRange {
                size: config.rtt_size,
                max: c.max_message(),
                transport: config.transport,
            });
        }
        Some(c)
    } else {
        None
    };

    let barrier = Arc::new(Barrier::new(config.procs + 2));
    let active = Arc::new(AtomicUsize::new(config.procs));
    let counters: Arc<Vec<AtomicU64>> =
        Arc::new((0..config.procs).map(|_| AtomicU64::new(0)).collect());
    let origin = Instant::now();

    let outcome = thread::scope(|scope| {
        let mut workers = Vec::with_capacity(config.procs);
        for (i, conn) in conns.into_iter().enumerate() {
            let barrier = Arc::clone(&barrier);
            let active = Arc::clone(&active);
            let counters = Arc::clone(&counters);
            let (bytes, write_size) = (config.bytes_per_proc, config.write_size);
            workers.push(scope.spawn(move || {
                barrier.wait();
                let r = conn.run(bytes, write_size, origin, counters.get(i));
                active.fetch_sub(1, Ordering::AcqRel);
                r
            }));
        }
        let probe_handle = {
            let barrier = Arc::clone(&barrier);
            let active = Arc::clone(&active);
            let (size, count, delay, baseline) = (
                config.rtt_size,
                config.rtt_count,
                config.rtt_delay,
                config.procs == 0,
            );
            scope.spawn(move || -> Result<(Vec<f64>, usize, usize), MeasureError> {
                barrier.wait();
                let Some(mut client) = probe else {
                    return Ok((Vec::new(), 0, 0));
                };
                thread::sleep(delay);
                let (mut rtts, mut sent, mut lost) = (Vec::new(), 0, 0);
                while sent < count && (baseline || active.load(Ordering::Acquire) > 0) {
                    sent += 1;
                    match client.round_trip(size)? {
                        Some(d) => rtts.push(d.as_secs_f64() * 1e6),
                        None => lost += 1,
                    }
                }
                Ok((rtts, sent, lost))
            })
        };
        // Progress: a display thread reads one total; we sum the per-transfer counters here
        // rather than contend on one shared atomic in the writers' hot loops.
        barrier.wait();
        while workers.iter().any(|w| !w.is_finished()) {
            if let Some(p) = progress {
                p.store(
                    counters.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
                    Ordering::Relaxed,
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
        let reports: Vec<Result<SinkReport, MeasureError>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(panicked())))
            .collect();
        let probe = probe_handle.join().unwrap_or_else(|_| Err(panicked()));
        (reports, probe)
    });

    let (reports, probe) = outcome;
    let mut transfers = Vec::with_capacity(reports.len());
    for (id, r) in reports.into_iter().enumerate() {
        let report = r?;
        transfers.push(Transfer {
            id,
            throughput: report.throughput(),
            report,
        });
    }
    let (rtts, rtt_sent, rtt_lost) = probe?;
    Ok(summarise(config, transfers, &rtts, rtt_sent, rtt_lost))
}

/// Runs [`run_load`] once per process count in `procs` (Table III: 1..=14).
/// `on_run` sees each run as it finishes.
///
/// # Errors
/// The first run's error stops the sweep.
pub fn run_sweep(
    config: &LoadConfig,
    procs: RangeInclusive<usize>,
    on_run: &mut dyn FnMut(&LoadRun),
) -> Result<Vec<LoadRun>, MeasureError> {
    let mut runs = Vec::new();
    for n in procs {
        let mut c = config.clone();
        c.procs = n;
        let run = run_load(&c, None)?;
        on_run(&run);
        runs.push(run);
    }
    Ok(runs)
}

fn panicked() -> MeasureError {
    MeasureError::InvalidArgument("a measurement thread panicked".into())
}

fn summarise(
    config: &LoadConfig,
    transfers: Vec<Transfer>,
    rtts: &[f64],
    rtt_sent: usize,
    rtt_lost: usize,
) -> LoadRun {
    // fold from +0.0: an empty f64 `sum()` is -0.0, which would print as "-0.00".
    let overall: f64 = transfers
        .iter()
        .map(|t| t.throughput)
        .fold(0.0, |a, b| a + b);
    let per_process = if transfers.is_empty() {
        0.0
    } else {
        overall / transfers.len() as f64
    };
    let bytes_received: u64 = transfers.iter().map(|t| t.report.bytes_received).sum();
    let first = transfers
        .iter()
        .map(|t| t.report.start_s)
        .fold(f64::INFINITY, f64::min);
    let last = transfers
        .iter()
        .map(|t| t.report.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let aggregate = if last > first {
        bytes_received as f64 / (last - first)
    } else {
        0.0
    };
    LoadRun {
        transport: config.transport,
        procs: config.procs,
        bytes_per_proc: config.bytes_per_proc,
        bytes_sent: transfers.iter().map(|t| t.report.bytes_sent).sum(),
        bytes_received,
        overall,
        per_process,
        aggregate,
        rtt_size: config.rtt_size,
        rtt_sent,
        rtt_lost,
        rtt_us: Summary::from_values(rtts),
        transfers,
    }
}
