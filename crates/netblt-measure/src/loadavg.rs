//! Host load-average monitoring during a run, as XUNET did.
//!
//! XUNET: "The load averages on both the source and destination hosts were recorded every
//! five seconds to ensure that the host loads did not change drastically during the
//! experiment. If a significant change in the load average ... was observed for a particular
//! test run ... it was omitted and the test repeated."
//!
//! We sample `/proc/loadavg` every 5 s (Linux recomputes it every 5 s, so faster sampling
//! would only repeat values) and also at the start and end of every packet size. We do not
//! repeat runs automatically; we flag a size whose run saw the 1-minute load move by more than
//! [`LOAD_CHANGE_THRESHOLD`] and leave the decision to the person reading the table.
//!
//! One caveat the paper did not have: on loopback the server runs on the measuring host, and a
//! ping-pong keeps about one task runnable, so a long run raises the 1-minute load by itself.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::Serialize;

/// A 1-minute load change larger than this flags a size's results (`load_changed: true`).
pub const LOAD_CHANGE_THRESHOLD: f64 = 0.5;

/// How often the monitor samples; XUNET's five seconds.
pub const LOAD_SAMPLE_INTERVAL: Duration = Duration::from_secs(5);

/// One reading of the load averages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LoadSample {
    /// Seconds since the start of the run.
    pub t: f64,
    /// 1-minute load average.
    pub load1: f64,
    /// 5-minute load average.
    pub load5: f64,
    /// 15-minute load average.
    pub load15: f64,
}

impl LoadSample {
    /// A sample taken `t` seconds into the run.
    pub fn new(t: f64, load1: f64, load5: f64, load15: f64) -> Self {
        LoadSample {
            t,
            load1,
            load5,
            load15,
        }
    }
}

/// Parses the first three fields of `/proc/loadavg` ("0.52 0.58 0.59 1/467 12345").
pub fn parse_loadavg(text: &str) -> Option<(f64, f64, f64)> {
    let mut it = text.split_whitespace().map(str::parse::<f64>);
    let (a, b, c) = (it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?);
    Some((a, b, c))
}

/// Reads the host's load averages; `None` where `/proc/loadavg` does not exist.
pub fn read_loadavg() -> Option<(f64, f64, f64)> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| parse_loadavg(&t))
}

/// Peak-to-peak change of the 1-minute load seen during `[start, end]` (seconds).
///
/// The samples inside the window count, and so does the last one before `start`, because that
/// value was still in force when the window opened. `None` if fewer than two samples apply.
pub fn load_change(samples: &[LoadSample], start: f64, end: f64) -> Option<f64> {
    let before = samples
        .iter()
        .filter(|s| s.t < start)
        .max_by(|a, b| a.t.total_cmp(&b.t));
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    let mut n = 0usize;
    for s in before
        .into_iter()
        .chain(samples.iter().filter(|s| s.t >= start && s.t <= end))
    {
        lo = lo.min(s.load1);
        hi = hi.max(s.load1);
        n += 1;
    }
    (n >= 2).then_some(hi - lo)
}

/// True when the 1-minute load moved by more than `threshold` during `[start, end]`.
pub fn load_changed(samples: &[LoadSample], start: f64, end: f64, threshold: f64) -> bool {
    load_change(samples, start, end).is_some_and(|c| c > threshold)
}

/// Background sampler of the load average; also takes samples on demand.
#[derive(Debug)]
pub struct LoadMonitor {
    origin: Instant,
    samples: Arc<Mutex<Vec<LoadSample>>>,
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl LoadMonitor {
    /// Starts sampling every `interval`, with times measured from `origin`. Takes one sample
    /// at once. On hosts without `/proc/loadavg` the monitor simply records nothing.
    pub fn start(origin: Instant, interval: Duration) -> LoadMonitor {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<()>();
        let shared = Arc::clone(&samples);
        let handle = thread::Builder::new()
            .name("loadavg".into())
            .spawn(move || loop {
                record(origin, &shared);
                match rx.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            })
            .ok();
        LoadMonitor {
            origin,
            samples,
            stop: Some(tx),
            handle,
        }
    }

    /// Seconds since the run's origin.
    pub fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    /// Takes a sample now (used at the start and end of each size) and returns it.
    pub fn sample_now(&self) -> Option<LoadSample> {
        record(self.origin, &self.samples)
    }

    /// A copy of the samples so far, in time order.
    pub fn snapshot(&self) -> Vec<LoadSample> {
        let mut v = lock(&self.samples).clone();
        v.sort_by(|a, b| a.t.total_cmp(&b.t));
        v
    }

    /// Stops the sampler, takes a last sample, and returns all samples in time order.
    pub fn finish(mut self) -> Vec<LoadSample> {
        self.stop_thread();
        self.sample_now();
        self.snapshot()
    }

    fn stop_thread(&mut self) {
        // Dropping the sender wakes the sampler's recv_timeout at once.
        self.stop.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for LoadMonitor {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn lock(m: &Mutex<Vec<LoadSample>>) -> std::sync::MutexGuard<'_, Vec<LoadSample>> {
    // A poisoned lock only means another thread panicked mid-push; the Vec is still valid.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn record(origin: Instant, samples: &Mutex<Vec<LoadSample>>) -> Option<LoadSample> {
    let (a, b, c) = read_loadavg()?;
    let s = LoadSample::new(origin.elapsed().as_secs_f64(), a, b, c);
    lock(samples).push(s);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, load1: f64) -> LoadSample {
        LoadSample::new(t, load1, 0.0, 0.0)
    }

    #[test]
    fn parses_proc_loadavg() {
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 1/467 12345\n"),
            Some((0.52, 0.58, 0.59))
        );
        assert_eq!(parse_loadavg("0.52 x 0.59"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn flags_only_changes_above_threshold() {
        // Steady load: 0.50 .. 0.90 is a change of 0.40, not flagged.
        let steady = [s(0.0, 0.5), s(5.0, 0.7), s(10.0, 0.9)];
        assert!(!load_changed(&steady, 0.0, 10.0, LOAD_CHANGE_THRESHOLD));
        // A jump to 1.2 inside the window: change 0.7, flagged.
        let jump = [s(0.0, 0.5), s(5.0, 1.2), s(10.0, 0.9)];
        assert!(load_changed(&jump, 0.0, 10.0, LOAD_CHANGE_THRESHOLD));
        // Exactly 0.5 is not "more than 0.5".
        let edge = [s(0.0, 1.0), s(5.0, 1.5)];
        assert!(!load_changed(&edge, 0.0, 5.0, 0.5));
    }

    #[test]
    fn window_includes_value_in_force_at_start() {
        // The jump happened before the window opened, but the value before it (t=4, 3.0) was
        // in force at t=6 when the size started, and the load then fell to 1.0.
        let v = [s(0.0, 0.2), s(4.0, 3.0), s(8.0, 1.0), s(20.0, 5.0)];
        assert_eq!(load_change(&v, 6.0, 9.0), Some(2.0));
        assert!(load_changed(&v, 6.0, 9.0, 0.5));
        // Samples after the window are ignored; older ones before the last are too.
        assert_eq!(load_change(&v, 8.0, 9.0), Some(2.0));
        assert_eq!(load_change(&v, 8.5, 9.0), None);
    }

    #[test]
    fn too_few_samples_never_flag() {
        assert_eq!(load_change(&[], 0.0, 1.0), None);
        assert!(!load_changed(&[s(0.5, 9.0)], 0.0, 1.0, 0.5));
    }

    #[test]
    fn monitor_records_start_and_finish() {
        let m = LoadMonitor::start(Instant::now(), Duration::from_secs(3600));
        m.sample_now();
        let v = m.finish();
        if read_loadavg().is_some() {
            assert!(v.len() >= 3, "{v:?}");
            assert!(v.windows(2).all(|w| w[0].t <= w[1].t));
        } else {
            assert!(v.is_empty());
        }
    }
}
