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

/// Columns the bar's template takes besides its message, at most:
/// ` [` + 20 + `] ` + `999.99 MB/999.99 MB` + ` 999.99 Mb/s` + ` ETA 59m`.
const BAR_FIXED: usize = 2 + 20 + 2 + 19 + 12 + 8;
/// ... and a stream's: spinner, bytes, rate.
const STREAM_FIXED: usize = 2 + 9 + 12;

/// The terminal's width on stderr (80 when it does not say).
fn term_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a zeroed winsize we own.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: fd 2 and a valid pointer.
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

/// The bar's message: the name, then what fits of the retransmissions
/// and the rate controller's limit in the terminal's width.
fn bar_message(p: &netblt::Progress, fixed: usize) -> String {
    let rate = match (p.rate_bps, p.rate_reason) {
        (Some(r), Some(why)) => Some(format!(
            "limit {} ({why})",
            crate::units::fmt_rate(r as f64)
        )),
        _ => None,
    };
    fit_message(
        &p.name,
        p.retransmitted,
        rate.as_deref(),
        term_width().saturating_sub(fixed + 1),
    )
}

/// `NAME rxm N limit R (why)` in at most `room` columns: the limit goes
/// first, then the retransmissions, then the name is cut with `…` (never a
/// number cut in the middle: "limit 9" read as 9 Mb/s).
fn fit_message(name: &str, rxm: u64, rate: Option<&str>, room: usize) -> String {
    let width = |s: &str| s.chars().count();
    let rxm = format!("rxm {rxm}");
    let mut parts: Vec<&str> = vec![&rxm];
    parts.extend(rate);
    while !parts.is_empty() {
        let extra: usize = parts.iter().map(|p| width(p) + 1).sum();
        if width(name) + extra <= room {
            return std::iter::once(name)
                .chain(parts.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
        }
        parts.pop();
    }
    if width(name) <= room.max(1) {
        return name.to_string();
    }
    let keep = room.saturating_sub(1).max(1);
    name.chars().take(keep).collect::<String>() + "…"
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
            let msg = bar_message(p, p.total.map_or(STREAM_FIXED, |_| BAR_FIXED));
            let pb = g.get_or_insert_with(|| {
                // A stream of unknown length has no bar and no ETA. The
                // message is set before the first frame (which showed no
                // name), and fits what the terminal leaves (F15): a line
                // wider than the terminal took two rows of 80 columns.
                let (pb, template) = match p.total {
                    Some(n) => (
                        ProgressBar::new(n).with_message(msg.clone()),
                        "{wide_msg} [{bar:20}] {decimal_bytes}/{decimal_total_bytes} {bitrate} ETA {left}",
                    ),
                    None => (
                        ProgressBar::no_length().with_message(msg.clone()),
                        "{wide_msg} {spinner} {decimal_bytes} {bitrate}",
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
            pb.set_message(msg);
            pb.set_position(p.bytes);
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

#[cfg(test)]
mod tests {
    use super::fit_message;

    #[test]
    fn the_bar_message_fits_the_terminal() {
        let limit = Some("limit 97.90 Mb/s (cap)");
        assert_eq!(
            fit_message("big.bin", 3, limit, 80),
            "big.bin rxm 3 limit 97.90 Mb/s (cap)"
        );
        // The limit goes first, whole, then the retransmissions.
        assert_eq!(fit_message("big.bin", 3, limit, 30), "big.bin rxm 3");
        assert_eq!(fit_message("big.bin", 3, limit, 10), "big.bin");
        // Then the name is cut, and said to be.
        assert_eq!(fit_message("a-long-name.iso", 0, None, 8), "a-long-…");
        assert_eq!(fit_message("x", 0, None, 0), "x");
        // What a default 80-column terminal leaves beside the bar holds a
        // short name and its limit.
        let room = 80 - super::BAR_FIXED - 1;
        assert!(
            fit_message("big.bin", 0, None, room).contains("rxm"),
            "{room}"
        );
    }
}
