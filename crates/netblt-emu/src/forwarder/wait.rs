//! Precise waiting: sleep in the kernel until shortly before a deadline or
//! until a packet arrives, then spin the last stretch.
//!
//! A forwarding thread has two reasons to wake: a packet to read, and a
//! packet due for delivery. `ppoll` waits for both at once and, unlike
//! `poll`, takes a nanosecond timeout, so it is `clock_nanosleep` with a file
//! descriptor attached. Kernel wake-ups still come late by the timer slack
//! (50 µs by default, set to 1 ns per thread here) plus scheduling latency, so
//! the thread sleeps only until `SPIN_WINDOW` before the deadline and polls
//! the rest of the way; the lateness histogram shows how well that works.
//!
//! Spinning is rationed by a [`SpinBudget`]. A real-time thread that keeps
//! a CPU busy all the time makes the kernel step in (its "fair server" gives
//! ordinary tasks 50 ms per second when they are starved), and the thread
//! then stalls for tens of milliseconds: far worse than waking a little late.
//! Seen here at 1 Gb/s with a 60 µs window and no budget.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

/// How long before a deadline the thread stops sleeping and starts spinning:
/// wake-ups from a halted virtual CPU take tens of microseconds here.
pub(crate) const SPIN_WINDOW: Duration = Duration::from_micros(50);

/// Longest stretch spun in one go before the thread checks for input again.
pub(crate) const SPIN_SLICE: Duration = Duration::from_micros(2);

/// Accounting period of the [`SpinBudget`].
const BUDGET_PERIOD: Duration = Duration::from_millis(10);

/// Spinning allowed per [`BUDGET_PERIOD`] (30 %).
const BUDGET_SPIN: Duration = Duration::from_millis(3);

/// No spinning in a period after one in which the thread was busy (working
/// or spinning) more than this fraction of the time: at high rates the work
/// itself fills the CPU, and a spinning thread would reach the point where
/// the kernel throttles it.
const MAX_BUSY: f64 = 0.7;

/// Rations busy-waiting: at most [`BUDGET_SPIN`] per period, and none while
/// the thread is busy anyway.
#[derive(Debug)]
pub(crate) struct SpinBudget {
    period_start: Duration,
    cpu_at_start: Option<Duration>,
    spent: Duration,
    busy: bool,
}

impl SpinBudget {
    pub(crate) fn new() -> Self {
        SpinBudget {
            period_start: Duration::ZERO,
            cpu_at_start: thread_cpu_time(),
            spent: Duration::ZERO,
            busy: false,
        }
    }

    /// Whether the thread may spin at `now`.
    pub(crate) fn allows(&mut self, now: Duration) -> bool {
        let elapsed = now.saturating_sub(self.period_start);
        if elapsed >= BUDGET_PERIOD {
            let cpu = thread_cpu_time();
            self.busy = match (self.cpu_at_start, cpu) {
                (Some(before), Some(after)) => {
                    after.saturating_sub(before).as_secs_f64() > MAX_BUSY * elapsed.as_secs_f64()
                }
                _ => false,
            };
            self.period_start = now;
            self.cpu_at_start = cpu;
            self.spent = Duration::ZERO;
        }
        !self.busy && self.spent < BUDGET_SPIN
    }

    /// Records time spent spinning.
    pub(crate) fn charge(&mut self, spun: Duration) {
        self.spent += spun;
    }
}

/// CPU time the calling thread has used.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| {
        Duration::new(
            u64::try_from(ts.tv_sec).unwrap_or(0),
            u32::try_from(ts.tv_nsec).unwrap_or(0),
        )
    })
}

/// Longest sleep with nothing scheduled, so a stop request is seen quickly.
pub(crate) const IDLE_WAIT: Duration = Duration::from_millis(20);

/// Asks the kernel to wake this thread's timers on time instead of batching
/// them within the default 50 µs slack.
pub(crate) fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Real-time priority of forwarding threads (SCHED_FIFO, 1..=99): above every
/// ordinary process, below the kernel's own real-time threads.
const RT_PRIORITY: libc::c_int = 10;

/// How the forwarding threads ended up being scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Priority {
    /// SCHED_FIFO at [`RT_PRIORITY`].
    Realtime,
    /// Ordinary scheduling at nice -20.
    Nice,
    /// Unchanged (not permitted).
    Normal,
}

/// Gives the calling thread the CPU as soon as it wakes.
///
/// The forwarder shares the CPUs with the programs it carries and with
/// whatever else runs on the machine. Measured here on a loaded 2-core host,
/// a 0.5 ms sleep overshot by p99 1.5-3 ms at nice 0 or -20 (the fair
/// scheduler lets the running task finish its slice), but by p99 20-40 µs
/// under SCHED_FIFO. So with `realtime` the thread asks for SCHED_FIFO; the
/// kernel's real-time throttling (95 % per second by default) still leaves
/// the machine usable if a thread ever ran away. Otherwise, or if refused,
/// it settles for nice -20.
pub(crate) fn raise_priority(realtime: bool) -> Priority {
    if realtime {
        let param = libc::sched_param {
            sched_priority: RT_PRIORITY,
        };
        // SAFETY: pid 0 means the calling thread; `param` is a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
            return Priority::Realtime;
        }
    }
    // SAFETY: gettid and setpriority take integers and touch no memory; on
    // Linux PRIO_PROCESS with a thread id applies to that thread alone.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, -20) };
    if rc == 0 {
        Priority::Nice
    } else {
        Priority::Normal
    }
}

/// Blocks until `fd` is readable or `timeout` has passed. Returns whether it
/// is readable (spurious wake-ups and signals just return `false`).
pub(crate) fn readable_within(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(err);
    }
    Ok(rc > 0 && pfd.revents & libc::POLLIN != 0)
}
