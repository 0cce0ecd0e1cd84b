//! A one-line progress display on stderr, shown only when stderr is a terminal.
//!
//! Redirected output (files, pipes, CI logs) gets nothing, so JSON and tables stay clean.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::units::format_bytes;

/// Writes `\r`-updated status lines, throttled to ten per second.
#[derive(Debug)]
pub(crate) struct ProgressLine {
    enabled: bool,
    last: Option<Instant>,
}

impl ProgressLine {
    pub(crate) fn new() -> Self {
        ProgressLine {
            enabled: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    /// Shows `text` unless a line was shown less than 100 ms ago.
    pub(crate) fn show(&mut self, text: &str) {
        if !self.enabled
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[2K{text}");
        let _ = e.flush();
    }

    /// Erases the line.
    pub(crate) fn clear(&mut self) {
        if self.enabled && self.last.is_some() {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
            self.last = None;
        }
    }
}

/// A thread that shows a byte counter against a total until dropped. It runs beside the
/// measuring threads, so its own CPU time never enters a `RUSAGE_THREAD` figure.
pub(crate) struct ByteWatch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ByteWatch {
    /// Starts showing `label` and the counter; does nothing when stderr is not a terminal.
    pub(crate) fn start(
        label: Arc<std::sync::Mutex<String>>,
        counter: Arc<AtomicU64>,
        total: u64,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = std::io::stderr().is_terminal().then(|| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut line = ProgressLine::new();
                while !stop.load(Ordering::Relaxed) {
                    let done = counter.load(Ordering::Relaxed);
                    let text = label.lock().map(|l| l.clone()).unwrap_or_default();
                    line.show(&format!(
                        "{text}: {} of {}",
                        format_bytes(done),
                        format_bytes(total)
                    ));
                    thread::sleep(Duration::from_millis(200));
                }
                line.clear();
            })
        });
        ByteWatch { stop, handle }
    }
}

impl Drop for ByteWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
