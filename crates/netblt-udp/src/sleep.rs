//! [`sleep_until`]: waiting with sub-millisecond precision for pacing.
//!
//! NETBLT paces DATA packets in bursts:
//!
//! ```text
//! //= RFC 998 §4 Flow Control
//! //# NETBLT's rate control therefore has
//! //# two parts, a burst size and a burst rate, [...]
//! //# The burst rate is in part determined by the granularity of the
//! //# sender's timing mechanism, [...]
//! ```
//!
//! In 1987 that granularity was tens of milliseconds; at gigabit rates the gap between bursts is
//! tens to hundreds of microseconds, so the timing mechanism must do better. A plain
//! sleep overshoots by the timer slack (50 µs by default for a normal thread) plus wake-up latency,
//! and a busy loop burns a core we do not have (the reference hosts have two). So we sleep in the
//! kernel until [`SPIN_MARGIN`] (plus the timer slack) before the deadline and then yield in a
//! loop for the last stretch. Measured figures are in [`sleep_until`].

use std::time::{Duration, Instant};

/// How long before the deadline (plus the thread's timer slack) [`sleep_until`] stops sleeping
/// in the kernel and starts yielding: enough to absorb a typical wake-up latency.
pub const SPIN_MARGIN: Duration = Duration::from_micros(50);

/// Returns at or after `deadline`, as close to it as the host allows, without busy-spinning
/// for long. A deadline in the past returns at once. Never returns early.
///
/// Sleeps with `clock_nanosleep(CLOCK_MONOTONIC)` (the clock behind [`Instant`] on Linux) until
/// `deadline - SPIN_MARGIN - timer slack`, then calls [`std::thread::yield_now`] until the
/// deadline. The kernel may end a sleep up to the thread's timer slack late (50 µs by default),
/// so the yield loop lasts at most [`SPIN_MARGIN`] + slack = 100 µs per call, less when the
/// wake-up is late; [`set_thread_timer_slack`] to 1 ns halves that. Yielding rather than a pure
/// spin lets our own receive thread run on a 2-core host.
///
/// # Measured lateness
///
/// `cargo run --release -p netblt-udp --example sleep_lateness`, 2 cores, Linux 6.18, load
/// average 7–10 from parallel builds, 1000 (250 for ≥ 1 ms) sleeps per interval from 20 µs to
/// 5 ms:
///
/// | | median late | p99 late | CPU while pacing |
/// |---|---|---|---|
/// | `sleep_until` | 0.2–0.4 µs | 2 µs – 4 ms | ~50 % of a core at 100 µs intervals, 5 % at 1 ms, 1 % at 5 ms |
/// | `std::thread::sleep` | 55–68 µs | 68 µs – 6.5 ms | 4 % at 100 µs, 1 % at 1 ms |
///
/// The millisecond tails are the load: with more runnable threads than cores any thread can wait
/// a scheduler slice. Under that load the p99 of `sleep_until` was often *worse* than a plain
/// sleep's, because a yielding thread hands its core to the others; a pure `spin_loop` tail,
/// which we also measured, had similar tails and never yields, so we kept the yield.
///
/// A pacer must therefore catch up from `now`, not assume it woke on time.
pub fn sleep_until(deadline: Instant) {
    // The kernel may end a sleep up to the thread's timer slack late, so we aim that much
    // earlier; otherwise the default 50 µs slack alone would eat the whole spin margin.
    let mut early = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let early = *early
            .get_or_insert_with(|| SPIN_MARGIN + crate::sys::timer_slack().unwrap_or_default());
        if left <= early {
            break;
        }
        crate::sys::sleep(left - early);
    }
    while Instant::now() < deadline {
        std::thread::yield_now();
    }
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`): how much later than asked
/// the kernel may end this thread's sleeps, to batch wake-ups. Linux's default is 50 µs. A pacing
/// thread can lower it (1 ns is the minimum) so that [`sleep_until`]'s kernel sleep ends closer to
/// `deadline - SPIN_MARGIN`, at the cost of more timer interrupts. A zero duration restores the
/// thread's default. Only the calling thread is affected.
///
/// Returns `Unsupported` off Linux.
pub fn set_thread_timer_slack(slack: Duration) -> std::io::Result<()> {
    crate::sys::set_timer_slack(slack)
}

/// The calling thread's current timer slack (`PR_GET_TIMERSLACK`); `None` off Linux.
pub fn thread_timer_slack() -> Option<Duration> {
    crate::sys::timer_slack()
}
