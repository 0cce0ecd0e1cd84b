//! How long the calling thread waited for a CPU: runnable, but not running.
//!
//! "Why was it slow?" (`crate::diagnosis`) must tell a loop that could not
//! keep its pace because it was denied a core (a CPU quota such as a
//! container's `cpu.max`, or other processes on the machine) from one that
//! slept because nothing was allowed out. The loop's own meter
//! (`driver::meter`) sees the first only indirectly: a throttled loop is
//! charged as *busy* when the quota runs out while it works, and as a late
//! wake-up (or as the sleep's cause) when it runs out while it sleeps;
//! measured with a 2 % quota, a third to a half of the frozen time went to
//! the sleep's cause. The scheduler counts it exactly: the second field of
//! `/proc/thread-self/schedstat` is the thread's `run_delay`, nanoseconds
//! spent runnable on a run queue, which includes the time its group was
//! throttled by CFS bandwidth control (Documentation/scheduler/sched-stats).

/// Seconds the calling thread has waited for a CPU since it started, or
/// `None` when the kernel does not say (no `CONFIG_SCHED_INFO`, no /proc).
pub(crate) fn thread_run_delay_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_run_delay(&text)
}

/// The `run_delay` field of a schedstat line ("runtime run_delay pcount").
fn parse_run_delay(text: &str) -> Option<f64> {
    let ns: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_field_is_the_run_delay() {
        assert_eq!(
            parse_run_delay("50748309 1062029147 21\n"),
            Some(1.062029147)
        );
        assert_eq!(parse_run_delay("50748309\n"), None);
        assert_eq!(parse_run_delay("a b c"), None);
    }
}
