//! What the tool adds around a library call: a progress bar on a terminal,
//! Ctrl-C, and a quiet death on a closed stdout.

use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

use indicatif::{ProgressBar, ProgressStyle};

/// Set by Ctrl-C (the handler is installed once per process).
pub fn stop_flag() -> Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || f.store(true, std::sync::atomic::Ordering::Relaxed));
        flag
    })
    .clone()
}

/// Dies quietly on a closed stdout (`netblt ... | head`) like other Unix
/// tools, instead of panicking in `println!`.
pub fn default_sigpipe() {
    // SAFETY: restores the default disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Per-interval JSON objects on stdout (`--json-stream`, like iperf3's):
/// `{"event":"interval","data":{...}}` every `interval` seconds of the
/// transfer; the command prints the final `{"event":"end","data":REPORT}`.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    pub interval: f64,
}

/// The previous interval's end, per transfer.
#[derive(Default)]
struct StreamState {
    name: String,
    at: f64,
    bytes: u64,
}

/// One interval's object.
fn interval_object(p: &netblt::Progress, prev: &StreamState) -> serde_json::Value {
    let t = p.elapsed.as_secs_f64();
    let dt = (t - prev.at).max(1e-9);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    serde_json::json!({
        "event": "interval",
        "data": {
            "name": p.name,
            "start_s": prev.at,
            "elapsed_s": t,
            "bytes": p.bytes,
            "total": p.total,
            "interval_bps": (p.bytes.saturating_sub(prev.bytes)) as f64 * 8.0 / dt,
            "total_bps": p.bytes.saturating_sub(p.resumed_from.unwrap_or(0)) as f64 * 8.0 / t.max(1e-9),
            "retransmitted": p.retransmitted,
            "lost": p.lost,
            "srtt_ms": p.srtt.map(ms),
            "resumed_from": p.resumed_from,
            "rate": p.rate_bps.map(|r| serde_json::json!({
                "rate_bps": r,
                "reason": p.rate_reason,
                "bottleneck_bps": p.bottleneck_bps,
                "min_rtt_ms": p.min_rtt.map(ms),
            })),
        }
    })
}

/// The final object of a `--json-stream` run.
pub fn end_object(report: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "event": "end", "data": report })
}

/// A progress bar on stderr, drawn from the library's progress callback
/// (only on a terminal and when not `quiet`), and/or a JSON stream on
/// stdout. The bar shows bytes, rate, ETA, retransmissions and the rate
/// controller's current limit; it is cleared by [`Bar::finish`].
#[derive(Clone, Default)]
pub struct Bar {
    bar: Option<Arc<Mutex<Option<ProgressBar>>>>,
    stream: Option<(Stream, Arc<Mutex<StreamState>>)>,
}

impl Bar {
    /// A bar if stderr is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> Bar {
        Bar {
            bar: (!quiet && std::io::stderr().is_terminal()).then(Default::default),
            stream: None,
        }
    }

    /// As [`Bar::new`], plus a JSON stream if asked (then no bar).
    pub fn with_stream(quiet: bool, stream: Option<Stream>) -> Bar {
        let mut b = Bar::new(quiet || stream.is_some());
        b.stream = stream.map(|s| (s, Arc::default()));
        b
    }

    /// Puts the bar (and the stream) into `opts`' progress callback.
    pub fn attach(&self, opts: &mut netblt::SendOptions) {
        if self.bar.is_none() && self.stream.is_none() {
            return;
        }
        let slot = self.bar.clone();
        let stream = self.stream.clone();
        opts.progress = Some(Arc::new(move |p: &netblt::Progress| {
            if let Some((s, st)) = &stream {
                if let Ok(mut st) = st.lock() {
                    let t = p.elapsed.as_secs_f64();
                    if st.name != p.name || t < st.at {
                        // The next file of a `send`.
                        *st = StreamState {
                            name: p.name.clone(),
                            at: 0.0,
                            bytes: p.resumed_from.unwrap_or(0),
                        };
                    }
                    if t - st.at >= s.interval {
                        println!("{}", interval_object(p, &st));
                        st.at = t;
                        st.bytes = p.bytes;
                    }
                }
            }
            let Some(slot) = &slot else {
                return;
            };
            let Ok(mut g) = slot.lock() else {
                return;
            };
            let pb = g.get_or_insert_with(|| {
                // A stream of unknown length has no bar and no ETA.
                let (pb, template) = match p.total {
                    Some(n) => (
                        ProgressBar::new(n),
                        "{msg} [{bar:30}] {decimal_bytes}/{decimal_total_bytes} {bitrate} ETA {left}",
                    ),
                    None => (
                        ProgressBar::no_length(),
                        "{msg} {spinner} {decimal_bytes} {bitrate}",
                    ),
                };
                // The reports' units: decimal bytes (MB) and bits per second
                // (Mb/s), not indicatif's MiB and MiB/s beside our Mb/s.
                pb.set_style(
                    ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .with_key(
                            "bitrate",
                            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                let _ = write!(w, "{}", crate::units::fmt_rate(s.per_sec() * 8.0));
                            },
                        )
                        // No estimate before anything has moved (it read
                        // "ETA 0s" while a sender waited for an answer).
                        .with_key(
                            "left",
                            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                let _ = if s.pos() == 0 {
                                    write!(w, "-")
                                } else {
                                    write!(w, "{:#}", indicatif::HumanDuration(s.eta()))
                                };
                            },
                        )
                        .progress_chars("=> "),
                );
                pb
            });
            if let Some(s) = p.total {
                pb.set_length(s);
            }
            pb.set_position(p.bytes);
            let rate = match (p.rate_bps, p.rate_reason) {
                (Some(r), Some(why)) => format!(" limit {:.1} Mb/s ({why})", r as f64 / 1e6),
                _ => String::new(),
            };
            pb.set_message(format!("{} rxm {}{rate}", p.name, p.retransmitted));
        }));
    }

    /// Clears the bar (the transfer ended).
    pub fn finish(&self) {
        if let Some(slot) = &self.bar {
            if let Ok(mut g) = slot.lock() {
                if let Some(pb) = g.take() {
                    pb.finish_and_clear();
                }
            }
        }
    }
}
