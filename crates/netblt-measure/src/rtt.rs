//! The dkbench experiment: round-trip times per message size with one message outstanding.
//!
//! XUNET chose "1, 2, 16, 17, 112, 113, 1023, 1024 and 1025 bytes" to straddle the buffer
//! boundaries of Datakit and 4.3BSD, and 350 repetitions per size. Those are our defaults
//! ([`DEFAULT_SIZES`], [`DEFAULT_COUNT`]). The boundaries of a modern host are different (MSS,
//! page size, GSO segment), which is why the list can be extended (`--sizes +84,85`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::EchoClient;
use crate::error::MeasureError;
use crate::loadavg::{
    load_change, LoadMonitor, LoadSample, LOAD_CHANGE_THRESHOLD, LOAD_SAMPLE_INTERVAL,
};
use crate::stats::Summary;
use crate::transport::Transport;

/// XUNET's nine packet sizes (§2.2).
pub const DEFAULT_SIZES: [usize; 9] = [1, 2, 16, 17, 112, 113, 1023, 1024, 1025];
/// XUNET's repetition count (§2.3).
pub const DEFAULT_COUNT: usize = 350;

/// What to measure.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RttConfig {
    /// Echo server address.
    pub target: SocketAddr,
    /// Transport.
    pub transport: Transport,
    /// Message sizes in bytes of payload (our 4-byte TCP or 13-byte UDP header is extra).
    pub sizes: Vec<usize>,
    /// Measured messages per size.
    pub count: usize,
    /// Unmeasured messages sent first for each size (warms caches and the path). Default 1.
    pub warmup: usize,
    /// Per-message timeout; a UDP message not echoed in time is counted lost. Default 1 s.
    pub timeout: Duration,
    /// Load-average sampling interval. Default 5 s.
    pub load_interval: Duration,
}

impl RttConfig {
    /// XUNET's defaults for `target` over `transport`.
    pub fn new(target: SocketAddr, transport: Transport) -> Self {
        RttConfig {
            target,
            transport,
            sizes: DEFAULT_SIZES.to_vec(),
            count: DEFAULT_COUNT,
            warmup: 1,
            timeout: Duration::from_secs(1),
            load_interval: LOAD_SAMPLE_INTERVAL,
        }
    }
}

/// Results for one message size.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SizeRtt {
    /// Payload bytes per message.
    pub size: usize,
    /// Messages sent (excluding warm-up).
    pub sent: usize,
    /// Messages with no echo within the timeout (UDP only).
    pub lost: usize,
    /// Round-trip statistics in microseconds; `None` if every message was lost.
    pub rtt_us: Option<Summary>,
    /// Whether the 1-minute load changed by more than the threshold during this size's run.
    pub load_changed: bool,
    /// Peak-to-peak change of the 1-minute load during this size's run, if known.
    pub load_change: Option<f64>,
    /// Seconds from the run's start when this size began.
    pub start_s: f64,
    /// Seconds from the run's start when this size ended.
    pub end_s: f64,
}

/// A whole RTT run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RttReport {
    /// Echo server address.
    pub target: String,
    /// Transport.
    pub transport: Transport,
    /// Messages per size.
    pub count: usize,
    /// Per-message timeout, milliseconds.
    pub timeout_ms: f64,
    /// Per-size results, in the order measured.
    pub sizes: Vec<SizeRtt>,
    /// The flagging threshold for the 1-minute load change.
    pub load_change_threshold: f64,
    /// Every load-average sample taken.
    pub load_samples: Vec<LoadSample>,
}

/// Progress of a run, for a display.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RttProgress {
    /// Index of the current size.
    pub size_index: usize,
    /// Number of sizes.
    pub sizes: usize,
    /// The current size.
    pub size: usize,
    /// Messages done for it.
    pub done: usize,
    /// Messages to do for it.
    pub count: usize,
}

/// Runs the experiment. `on_progress` is called between messages (outside the timed
/// intervals); pass `&mut |_| {}` for none.
///
/// # Errors
/// [`MeasureError::SizeOutOfRange`] before anything is sent if a size is too big for the
/// transport, and connection, protocol and (TCP) timeout errors as they occur.
pub fn measure_rtt(
    config: &RttConfig,
    on_progress: &mut dyn FnMut(RttProgress),
) -> Result<RttReport, MeasureError> {
    if config.sizes.is_empty() {
        return Err(MeasureError::InvalidArgument("no message sizes".into()));
    }
    let mut client = EchoClient::connect(config.target, config.transport, config.timeout)?;
    if let Some(&too_big) = config.sizes.iter().find(|&&s| s > client.max_message()) {
        return Err(MeasureError::SizeOutOfRange {
            size: too_big,
            max: client.max_message(),
            transport: config.transport,
        });
    }
    let origin = Instant::now();
    let monitor = LoadMonitor::start(origin, config.load_interval);
    let mut results = Vec::with_capacity(config.sizes.len());
    for (size_index, &size) in config.sizes.iter().enumerate() {
        monitor.sample_now();
        let start_s = monitor.now();
        for _ in 0..config.warmup {
            client.round_trip(size)?;
        }
        let mut rtts_us = Vec::with_capacity(config.count);
        let mut lost = 0;
        for done in 0..config.count {
            if done % 16 == 0 {
                on_progress(RttProgress {
                    size_index,
                    sizes: config.sizes.len(),
                    size,
                    done,
                    count: config.count,
                });
            }
            match client.round_trip(size)? {
                Some(rtt) => rtts_us.push(rtt.as_secs_f64() * 1e6),
                None => lost += 1,
            }
        }
        let end_s = monitor.now();
        monitor.sample_now();
        let change = load_change(&monitor.snapshot(), start_s, monitor.now());
        results.push(SizeRtt {
            size,
            sent: config.count,
            lost,
            rtt_us: Summary::from_values(&rtts_us),
            load_changed: change.is_some_and(|c| c > LOAD_CHANGE_THRESHOLD),
            load_change: change,
            start_s,
            end_s,
        });
    }
    Ok(RttReport {
        target: config.target.to_string(),
        transport: config.transport,
        count: config.count,
        timeout_ms: config.timeout.as_secs_f64() * 1e3,
        sizes: results,
        load_change_threshold: LOAD_CHANGE_THRESHOLD,
        load_samples: monitor.finish(),
    })
}
