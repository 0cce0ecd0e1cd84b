//! How long the calling thread waited for a CPU (runnable, but not
//! running), and how long a CPU quota held the process back.
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

/// Seconds the CPU quota of each cgroup the process is in held it back so
/// far (CFS bandwidth control: cgroup v2 `cpu.max`, v1
/// `cpu.cfs_quota_us`), one figure per level from the process's own group
/// up to the root; `None` when the kernel does not say. A quota throttles
/// the whole process, so this sees a starved reader or writer thread that
/// the loop's own `run_delay` does not.
pub(crate) fn cgroup_throttled_s() -> Option<Vec<f64>> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        // v2: "0::/path", the throttled time in microseconds; v1: the line
        // of the cpu controller, in nanoseconds.
        let (roots, key, scale): (&[&str], &str, f64) = if controllers.is_empty() {
            (
                &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"],
                "throttled_usec",
                1e-6,
            )
        } else if controllers.split(',').any(|c| c == "cpu") {
            (
                &["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"],
                "throttled_time",
                1e-9,
            )
        } else {
            continue;
        };
        for root in roots {
            let root = std::path::Path::new(root);
            let mut dir = root.join(path.trim_start_matches('/'));
            if !dir.join("cpu.stat").is_file() {
                continue;
            }
            loop {
                if let Some(v) = stat_field(&dir.join("cpu.stat"), key) {
                    out.push(v * scale);
                }
                if dir == root || !dir.pop() {
                    break;
                }
            }
            break;
        }
    }
    Some(out)
}

/// The largest growth of any level's throttled time between two readings
/// of [`cgroup_throttled_s`] (the levels are the same unless the process
/// moved).
pub(crate) fn throttled_between(before: &[f64], after: &[f64]) -> f64 {
    before
        .iter()
        .zip(after)
        .map(|(a, b)| (b - a).max(0.0))
        .fold(0.0, f64::max)
}

/// One "name value" line of a `cpu.stat` file.
fn stat_field(path: &std::path::Path, key: &str) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse::<f64>().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_is_the_largest_growth_of_any_level() {
        assert_eq!(throttled_between(&[1.0, 5.0], &[1.5, 7.0]), 2.0);
        assert_eq!(throttled_between(&[1.0], &[0.5]), 0.0);
        assert_eq!(throttled_between(&[], &[]), 0.0);
    }

    #[test]
    fn a_cpu_stat_field_is_read_by_name() {
        let dir = std::env::temp_dir().join(format!("netblt-cpustat-{}", std::process::id()));
        std::fs::write(
            &dir,
            "nr_periods 7\nnr_throttled 6\nthrottled_time 205585480\n",
        )
        .unwrap();
        assert_eq!(stat_field(&dir, "throttled_time"), Some(205585480.0));
        assert_eq!(stat_field(&dir, "throttled_usec"), None);
        let _ = std::fs::remove_file(&dir);
    }

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
