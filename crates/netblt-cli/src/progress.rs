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

/// The narrowest bar drawn: what the message leaves it is wider.
const MIN_BAR: usize = 6;
/// Columns around the bar: ` [` and `] `; a stream's spinner and space.
const BAR_EDGES: usize = 4;
const SPINNER: usize = 2;

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

/// The rate of the last few seconds, for the bar's rate and ETA. The
/// average since the start (indicatif's) counts the start-up and the first
/// round trips, when nothing is acknowledged yet: on a 600 ms path its ETA
/// was twice the time left, and started at "2m" for a 10 s transfer (F18).
/// A window of seconds, not of the last sample or two: bytes are
/// acknowledged a whole buffer at a time. scp, rsync and pv show a recent
/// rate too.
#[derive(Default)]
struct Recent {
    /// (seconds since the start, bytes) samples, oldest first; the first
    /// is at or before the window's start once the transfer is older.
    samples: std::collections::VecDeque<(f64, u64)>,
}

impl Recent {
    /// The window: 3 s, or 4 round trips on a longer path (a few buffers'
    /// acknowledgments), at most 10 s.
    fn window(srtt: Option<std::time::Duration>) -> f64 {
        srtt.map_or(3.0, |r| (4.0 * r.as_secs_f64()).clamp(3.0, 10.0))
    }

    /// Adds a sample; a clock that went back is the next transfer's.
    fn push(&mut self, t: f64, bytes: u64, window: f64) {
        if self
            .samples
            .back()
            .is_some_and(|&(t0, b0)| t < t0 || bytes < b0)
        {
            self.samples.clear();
        }
        self.samples.push_back((t, bytes));
        while self.samples.len() > 2 && self.samples[1].0 <= t - window {
            self.samples.pop_front();
        }
    }

    /// Bits per second over the window; `None` until it spans a second
    /// (the first acknowledgment alone is no rate).
    fn rate(&self) -> Option<f64> {
        let (&(t0, b0), &(t1, b1)) = (self.samples.front()?, self.samples.back()?);
        (t1 - t0 >= 1.0).then(|| (b1 - b0) as f64 * 8.0 / (t1 - t0))
    }

    /// Seconds left at the window's rate for `left` more bytes; `None`
    /// when no rate is known or nothing moves.
    fn eta(&self, left: u64) -> Option<f64> {
        self.rate()
            .filter(|&r| r > 0.0)
            .map(|r| left as f64 * 8.0 / r)
    }
}

/// What the bar shows right of it: bytes (of the total), the recent rate and
/// the ETA, as wide as they are (a worst-case width left the message no
/// room on 80 columns).
fn right_part(bytes: u64, total: Option<u64>, recent: &Recent) -> String {
    use crate::units::{fmt_bytes, fmt_rate};
    let rate = recent.rate().map_or_else(|| "-".to_string(), fmt_rate);
    match total {
        Some(n) => {
            let eta = recent
                .eta(n.saturating_sub(bytes))
                .filter(|_| bytes > 0)
                .map_or_else(
                    || "-".to_string(),
                    |s| {
                        let d = std::time::Duration::from_secs_f64(s.min(360_000.0));
                        format!("{:#}", indicatif::HumanDuration(d))
                    },
                );
            // "40.89/100.00 MB": the unit once when both have it.
            let (done, of) = (fmt_bytes(bytes), fmt_bytes(n));
            let done = match (done.split_once(' '), of.split_once(' ')) {
                (Some((d, u)), Some((_, v))) if u == v => d.to_string(),
                _ => done,
            };
            format!("{done}/{of} {rate} ETA {eta}")
        }
        None => format!("{} {rate}", fmt_bytes(bytes)),
    }
}

/// The bar's message: the name, then what fits of the rate controller's
/// pacing rate and the retransmissions beside the bar and `right`.
fn bar_message(p: &netblt::Progress, right: &str, width: usize) -> String {
    let rate = match (p.rate_bps, p.rate_reason) {
        // The rate the controller paces at now, and why: not a limit (it
        // read "limit 95.46 Mb/s (probing)" while probing above it).
        (Some(r), Some(why)) => Some(format!(
            "pacing {} ({why})",
            crate::units::fmt_rate(r as f64)
        )),
        _ => None,
    };
    let around = match p.total {
        Some(_) => BAR_EDGES + MIN_BAR,
        None => SPINNER,
    };
    fit_message(
        &p.name,
        p.retransmitted,
        rate.as_deref(),
        width.saturating_sub(around + right.chars().count() + 1),
    )
}

/// `NAME pacing R (why) rxm N` in at most `room` columns: the
/// retransmissions go first, then the pacing rate, then the name is cut
/// with `…` (never a number cut in the middle: "pacing 9" read as 9 Mb/s).
fn fit_message(name: &str, rxm: u64, rate: Option<&str>, room: usize) -> String {
    let width = |s: &str| s.chars().count();
    let rxm = format!("rxm {rxm}");
    let mut parts: Vec<&str> = Vec::new();
    parts.extend(rate);
    parts.push(&rxm);
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

/// A bar being drawn, and the samples of its recent rate.
type Drawn = (ProgressBar, Recent);

/// A progress bar on stderr, drawn from the library's progress callback
/// (only on a terminal and when not `quiet`), and/or a JSON stream on
/// stdout. The bar shows bytes, the recent rate, an ETA from it, the rate
/// controller's pacing rate and why, and retransmissions (what fits, in
/// that order); it is cleared by [`Bar::finish`].
#[derive(Clone, Default)]
pub struct Bar {
    bar: Option<Arc<Mutex<Option<Drawn>>>>,
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
            // What travelled: a resumed file's first part, there before,
            // is no rate (counted, it read as a burst at the RESPONSE).
            let moved = p.bytes.saturating_sub(p.resumed_from.unwrap_or(0));
            let (drawn, mut recent) = g.take().map_or_else(
                || {
                    let mut r = Recent::default();
                    r.push(0.0, 0, 3.0);
                    (None, r)
                },
                |(pb, r)| (Some(pb), r),
            );
            recent.push(p.elapsed.as_secs_f64(), moved, Recent::window(p.srtt));
            let right = right_part(p.bytes, p.total, &recent);
            let msg = bar_message(p, &right, term_width());
            let pb = drawn.unwrap_or_else(|| {
                // A stream of unknown length has no bar and no ETA. The
                // message is set before the first frame (which showed no
                // name). The bar takes what the message and the figures
                // leave (F15: a line wider than the terminal took two rows
                // of 80 columns; F18: a fixed 20-column bar left no room
                // for the pacing rate there). The figures are ours (the
                // prefix): decimal bytes and bits per second, as the
                // reports, and a recent rate.
                let (pb, template) = match p.total {
                    Some(n) => (ProgressBar::new(n), "{msg} [{wide_bar}] {prefix}"),
                    None => (ProgressBar::no_length(), "{wide_msg} {spinner} {prefix}"),
                };
                let pb = pb.with_message(msg.clone()).with_prefix(right.clone());
                pb.set_style(
                    ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                pb
            });
            if let Some(s) = p.total {
                pb.set_length(s);
            }
            pb.set_prefix(right);
            pb.set_message(msg);
            pb.set_position(p.bytes);
            *g = Some((pb, recent));
        }));
    }

    /// Clears the bar (the transfer ended).
    pub fn finish(&self) {
        if let Some(slot) = &self.bar {
            if let Ok(mut g) = slot.lock() {
                if let Some((pb, _)) = g.take() {
                    pb.finish_and_clear();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fit_message, right_part, Recent, BAR_EDGES, MIN_BAR};

    #[test]
    fn the_bar_message_fits_the_terminal() {
        let pacing = Some("pacing 97.90 Mb/s (cap)");
        assert_eq!(
            fit_message("big.bin", 3, pacing, 80),
            "big.bin pacing 97.90 Mb/s (cap) rxm 3"
        );
        // The retransmissions go first, then the pacing rate, whole.
        assert_eq!(
            fit_message("big.bin", 3, pacing, 32),
            "big.bin pacing 97.90 Mb/s (cap)"
        );
        assert_eq!(fit_message("big.bin", 3, pacing, 20), "big.bin");
        // Then the name is cut, and said to be.
        assert_eq!(fit_message("a-long-name.iso", 0, None, 8), "a-long-…");
        assert_eq!(fit_message("x", 0, None, 0), "x");
    }

    /// F18: on 80 columns the pacing rate and its reason never showed
    /// (the figures were given their widest, and the bar 20 columns).
    #[test]
    fn the_pacing_rate_shows_on_80_columns() {
        let mut r = Recent::default();
        r.push(0.0, 0, 3.0);
        r.push(2.0, 40_890_000, 3.0);
        let right = right_part(40_890_000, Some(100_000_000), &r);
        assert_eq!(right, "40.89/100.00 MB 163.56 Mb/s ETA 3s");
        let room = 80 - BAR_EDGES - MIN_BAR - right.chars().count() - 1;
        for why in ["cap", "probing", "startup", "steady"] {
            let pacing = format!("pacing 95.46 Mb/s ({why})");
            let msg = fit_message("a.bin", 431, Some(&pacing), room);
            assert!(msg.contains(&pacing), "{msg:?} in {room} columns");
        }
    }

    /// F18: the ETA comes from the last seconds, not from the average since
    /// the start: after 3 s of start-up at 20 Mb/s then 95 Mb/s, 59 MB are
    /// 5 s away, which the average (47 Mb/s) made 10 s.
    #[test]
    fn the_eta_follows_the_recent_rate() {
        let mut r = Recent::default();
        let w = Recent::window(Some(std::time::Duration::from_millis(600)));
        assert_eq!(w, 3.0);
        let mut bytes = 0u64;
        for i in 1..=70 {
            let t = f64::from(i) * 0.1;
            bytes += if t <= 3.0 { 250_000 } else { 1_187_500 };
            r.push(t, bytes, w);
        }
        let rate = r.rate().unwrap();
        assert!((rate - 95e6).abs() < 1e6, "{rate}");
        let eta = r.eta(59_000_000).unwrap();
        assert!((4.5..5.5).contains(&eta), "{eta}");
        // Nothing known before a second has passed; a stall is no ETA.
        let mut fresh = Recent::default();
        fresh.push(0.0, 0, w);
        fresh.push(0.5, 1_000_000, w);
        assert_eq!(fresh.rate(), None);
        let mut stalled = Recent::default();
        stalled.push(0.0, 5, w);
        stalled.push(4.0, 5, w);
        assert_eq!(stalled.eta(10), None);
        // A sample from before (the next file) starts the window again.
        r.push(0.1, 0, w);
        assert_eq!(r.samples.len(), 1);
    }
}
