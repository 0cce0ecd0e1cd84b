//! Where the active end's loop spent its time, for "why was it slow?"
//! (`crate::diagnosis`).
//!
//! The engine's counters say what happened; they do not say what the data
//! sender was *waiting for*. The loop knows: each time it goes to sleep it
//! looks at why nothing more can go out now (the pacer, the receiver's
//! window, a GO that has not come, the application's reader), and charges
//! the sleep to that cause. The time between sleeps is the loop's own work
//! (busy). A sleep that ends later than the pacer's deadline is pacing
//! lateness. Nothing here costs more than a few comparisons per loop turn.

use std::time::Duration;

use netblt_proto::{Connection, Instant, Role, State};

/// What the application tells the meter about its side of the data flow
/// (the driver knows the application only through
/// [`Application::gauge`](super::Application::gauge)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AppGauge {
    /// Data sender: DATA packets in the buffers handed to the engine so far
    /// (each buffer `ceil(len / packet_size)`, as the engine counts them).
    pub(crate) pushed_packets: u64,
    /// Data sender: DATA packets in the buffers acknowledged (OK) so far.
    pub(crate) acked_packets: u64,
    /// Data sender: the engine had room for a buffer and the reader had none
    /// ready.
    pub(crate) starved: bool,
    /// Data sender: the last buffer was handed over.
    pub(crate) last_pushed: bool,
    /// Data receiver: a received buffer waits for the writer (its queue is
    /// full): the disk or the application is behind.
    pub(crate) writer_behind: bool,
}

/// Why the loop slept (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Not in the data phase (opening, the last buffers' OKs, closing).
    Outside,
    /// Data ready and allowed: the pacer or the rate controller's in-flight
    /// cap holds it back.
    Paced,
    /// Every buffer allowed is sent; waiting for OKs (the window).
    Window,
    /// Data pushed but nothing in flight: the receiver has not granted
    /// (GO) a buffer.
    NoGo,
    /// Room for a buffer, none ready from the application.
    Starved,
    /// Data receiver: the writer is behind.
    WriterBehind,
    /// Data receiver: waiting for the sender's packets.
    Receiving,
}

/// The loop's time, split by cause, in seconds (data phase only, except
/// `cpu_s`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LoopTimes {
    /// Asleep, data held back by the pacer or the in-flight cap.
    pub(crate) paced: f64,
    /// Asleep, waiting for OKs with every buffer allowed sent.
    pub(crate) window: f64,
    /// Asleep, data pushed but no buffer granted by the receiver.
    pub(crate) no_go: f64,
    /// Asleep, waiting for the application's next buffer.
    pub(crate) starved: f64,
    /// Asleep with a received buffer waiting for the writer.
    pub(crate) writer_behind: f64,
    /// Asleep, waiting for the sender's packets (data receiver).
    pub(crate) receiving: f64,
    /// Awake: the loop's own work (and the time it was descheduled).
    pub(crate) busy: f64,
    /// Sum of how late the loop woke after the pacer's deadlines.
    pub(crate) lateness: f64,
    /// Time-weighted rate controller reasons (data sender, rate control on).
    pub(crate) reasons: Vec<(&'static str, f64)>,
    /// Integral of the pacing rate over the data phase (bit), for its mean.
    pub(crate) paced_bits: f64,
    /// CPU seconds of the loop's thread (user + system), whole run.
    pub(crate) cpu_s: f64,
}

impl LoopTimes {
    /// Seconds of data phase measured.
    pub(crate) fn active(&self) -> f64 {
        self.paced
            + self.window
            + self.no_go
            + self.starved
            + self.writer_behind
            + self.receiving
            + self.busy
    }
}

impl LoopTimes {
    /// Charges `s` seconds to the rate controller's reason and rate now.
    fn rate(&mut self, conn: &Connection, s: f64) {
        if let Some(r) = conn.rate_state() {
            add(&mut self.reasons, r.reason.name(), s);
            self.paced_bits += r.rate_bps * s;
        } else if conn.role() == Role::DataSender {
            add(&mut self.reasons, "fixed", s);
            self.paced_bits += burst_rate(conn) * s;
        }
    }
}

/// Accumulates [`LoopTimes`] from the loop's turns.
#[derive(Debug)]
pub(crate) struct Meter {
    times: LoopTimes,
    /// The last wake-up (end of a sleep, or the start).
    awake_since: Instant,
    /// The current sleep: its start, cause, and the pacer's deadline.
    sleeping: Option<(Instant, Wait, Option<Instant>)>,
    /// The previous turn was in the data phase.
    in_data: bool,
    cpu0: f64,
}

impl Meter {
    pub(crate) fn new(now: Instant) -> Meter {
        Meter {
            times: LoopTimes::default(),
            awake_since: now,
            sleeping: None,
            in_data: false,
            cpu0: thread_cpu_s(),
        }
    }

    /// The loop is about to sleep until `deadline` (the engine's
    /// `poll_timeout`) or an arrival.
    pub(crate) fn sleep(
        &mut self,
        now: Instant,
        conn: &Connection,
        gauge: AppGauge,
        deadline: Option<Instant>,
    ) {
        let awake = secs(now.saturating_duration_since(self.awake_since));
        if self.in_data {
            self.times.busy += awake;
            self.times.rate(conn, awake);
        }
        let wait = classify(conn, gauge);
        self.in_data = wait != Wait::Outside;
        self.sleeping = Some((now, wait, deadline.filter(|_| wait == Wait::Paced)));
    }

    /// The loop woke up.
    pub(crate) fn woke(&mut self, now: Instant, conn: &Connection) {
        self.awake_since = now;
        let Some((from, wait, deadline)) = self.sleeping.take() else {
            return;
        };
        let slept = secs(now.saturating_duration_since(from));
        let t = &mut self.times;
        let slot = match wait {
            Wait::Outside => return,
            Wait::Paced => &mut t.paced,
            Wait::Window => &mut t.window,
            Wait::NoGo => &mut t.no_go,
            Wait::Starved => &mut t.starved,
            Wait::WriterBehind => &mut t.writer_behind,
            Wait::Receiving => &mut t.receiving,
        };
        *slot += slept;
        t.rate(conn, slept);
        if let Some(d) = deadline {
            // Late by more than a timer's usual slack: the loop could not
            // keep the pacer's schedule.
            let late = now.saturating_duration_since(d);
            if late > netblt_proto::Duration::from_micros(50) {
                t.lateness += secs(late);
            }
        }
    }

    /// The measurements, with the thread's CPU time since [`Meter::new`].
    pub(crate) fn finish(mut self) -> LoopTimes {
        self.times.cpu_s = (thread_cpu_s() - self.cpu0).max(0.0);
        self.times
    }
}

fn add(v: &mut Vec<(&'static str, f64)>, name: &'static str, s: f64) {
    match v.iter_mut().find(|(n, _)| *n == name) {
        Some((_, t)) => *t += s,
        None => v.push((name, s)),
    }
}

fn secs(d: netblt_proto::Duration) -> f64 {
    d.as_secs_f64()
}

/// The negotiated burst rate in force, bits/s of payload.
fn burst_rate(conn: &Connection) -> f64 {
    let (size, ms) = conn.current_rate();
    f64::from(size) * f64::from(conn.params().packet_size) * 8.0 / (f64::from(ms.max(1)) / 1e3)
}

/// Why nothing more goes out now, from the engine's counters and the
/// application's gauge.
fn classify(conn: &Connection, g: AppGauge) -> Wait {
    if conn.state() != State::Open {
        return Wait::Outside;
    }
    match conn.role() {
        Role::DataSender => {
            let sent = conn.stats().data_packets_sent;
            let unsent = g.pushed_packets.saturating_sub(sent);
            let unacked = sent.saturating_sub(g.acked_packets);
            if unsent > 0 {
                // Data waits in the engine. With packets in flight the pacer
                // or the in-flight cap holds it; with none, only a missing
                // GO can (RFC 998 §5.2.2: a buffer is sent once GO'd).
                if unacked > 0 {
                    Wait::Paced
                } else {
                    Wait::NoGo
                }
            } else if g.last_pushed {
                Wait::Outside
            } else if conn.wants_buffer() {
                Wait::Starved
            } else {
                Wait::Window
            }
        }
        Role::DataReceiver => {
            if g.writer_behind {
                Wait::WriterBehind
            } else if conn.stats().completed_at.is_some() {
                Wait::Outside
            } else {
                Wait::Receiving
            }
        }
    }
}

/// CPU seconds (user + system) of the calling thread.
fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills a zeroed rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0.0;
    }
    let s = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (s(ru.ru_utime) + s(ru.ru_stime)).as_secs_f64()
}

/// Datagrams the kernel dropped at this socket because its receive buffer
/// was full (`SO_MEMINFO`'s `SK_MEMINFO_DROPS`; Linux 3.17+). `None` when
/// the kernel does not say.
pub(crate) fn socket_drops(fd: std::os::fd::RawFd) -> Option<u64> {
    // From linux/sock_diag.h: SK_MEMINFO_VARS = 9, SK_MEMINFO_DROPS = 8;
    // asm-generic/socket.h: SO_MEMINFO = 55.
    const SO_MEMINFO: libc::c_int = 55;
    const VARS: usize = 9;
    const DROPS: usize = 8;
    let mut v = [0u32; VARS];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: v is a live array of `len` bytes; fd is the caller's socket.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MEMINFO,
            v.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (r == 0 && len as usize >= (DROPS + 1) * 4).then(|| u64::from(v[DROPS]))
}
