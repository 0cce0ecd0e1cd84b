//! CPU time used, from `getrusage(2)`.
//!
//! RFC 415 asked what fraction of the host a transfer costs ("CPU NEEDED") and how many bits
//! one CPU-second moves ("CPU BAUD"). We answer with user + system time. On Linux we read
//! `RUSAGE_THREAD`, the calling thread alone, because both ends here are multi-threaded: the
//! echo server serves other clients on other threads, and the client runs a progress printer
//! and a load-average sampler beside the measuring thread. Elsewhere we fall back to the whole
//! process (`RUSAGE_SELF`), which over-counts by whatever the other threads did.

use std::io;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeValLike;
use serde::Serialize;

/// User and system CPU time, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CpuTimes {
    /// Time spent in user mode.
    pub user_s: f64,
    /// Time spent in the kernel on our behalf.
    pub sys_s: f64,
}

impl CpuTimes {
    /// Builds a value from seconds.
    pub fn new(user_s: f64, sys_s: f64) -> Self {
        CpuTimes { user_s, sys_s }
    }

    /// Builds a value from whole microseconds (the unit our wire summary uses).
    pub fn from_micros(user_us: u64, sys_us: u64) -> Self {
        CpuTimes::new(user_us as f64 * 1e-6, sys_us as f64 * 1e-6)
    }

    /// `(user, sys)` in whole microseconds, saturating.
    pub fn to_micros(self) -> (u64, u64) {
        let us = |s: f64| (s.max(0.0) * 1e6).round().min(u64::MAX as f64) as u64;
        (us(self.user_s), us(self.sys_s))
    }

    /// User + system.
    pub fn total(self) -> f64 {
        self.user_s + self.sys_s
    }

    /// The time used since `earlier`; never negative.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes::new(
            (self.user_s - earlier.user_s).max(0.0),
            (self.sys_s - earlier.sys_s).max(0.0),
        )
    }
}

/// CPU time of the calling thread (Linux), else of the whole process.
///
/// # Errors
/// Only if the kernel refuses `getrusage`, which it does not for these arguments.
pub fn thread_cpu() -> io::Result<CpuTimes> {
    #[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd"))]
    let who = UsageWho::RUSAGE_THREAD;
    #[cfg(not(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd")))]
    let who = UsageWho::RUSAGE_SELF;
    usage(who)
}

/// CPU time of the whole process, all threads.
///
/// # Errors
/// As for [`thread_cpu`].
pub fn process_cpu() -> io::Result<CpuTimes> {
    usage(UsageWho::RUSAGE_SELF)
}

fn usage(who: UsageWho) -> io::Result<CpuTimes> {
    let u = getrusage(who).map_err(io::Error::from)?;
    let secs = |tv: nix::sys::time::TimeVal| tv.num_microseconds() as f64 * 1e-6;
    Ok(CpuTimes::new(secs(u.user_time()), secs(u.system_time())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burning_cpu_shows_up_in_thread_time() {
        let before = thread_cpu().unwrap();
        // Spin until the clock says we used some CPU; bounded so a broken clock cannot hang.
        let mut x = 0u64;
        for i in 0..200_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            if i % 1_000_000 == 0 && thread_cpu().unwrap().since(before).total() > 0.005 {
                break;
            }
        }
        std::hint::black_box(x);
        let used = thread_cpu().unwrap().since(before);
        assert!(used.total() > 0.0);
        assert!(process_cpu().unwrap().total() >= used.total());
    }

    #[test]
    fn micros_round_trip_and_since_never_negative() {
        let t = CpuTimes::from_micros(1_500_000, 250);
        assert_eq!(t.to_micros(), (1_500_000, 250));
        assert_eq!(
            CpuTimes::new(1.0, 1.0)
                .since(CpuTimes::new(2.0, 0.5))
                .user_s,
            0.0
        );
    }
}
