//! A CPU quota for child processes: a cgroup made for one test (cgroup v2
//! `cpu.max`, else the v1 `cpu` controller's `cpu.cfs_quota_us`), removed
//! when dropped.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// One cgroup limited to `quota_us` of CPU time per `period_us`.
pub(crate) struct CpuQuota {
    dir: PathBuf,
    /// `cgroup.procs`, opened here so that a child can join the group
    /// between fork and exec with one write (no allocation there).
    procs: File,
}

impl CpuQuota {
    /// A new group, or why this machine cannot make one (not root, no cpu
    /// controller), for the test to skip with.
    pub(crate) fn new(quota_us: u32, period_us: u32) -> Result<CpuQuota, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root (cgroups)".into());
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "netblt-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_cpu = std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let (dir, limits): (PathBuf, Vec<(&str, String)>) = if v2_cpu {
            // Children of the root get the cpu controller only if the root
            // hands it down; harmless if it already does.
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+cpu");
            (
                v2.join(&name),
                vec![("cpu.max", format!("{quota_us} {period_us}"))],
            )
        } else if v1.join("cpu.cfs_quota_us").exists() {
            (
                v1.join(&name),
                vec![
                    ("cpu.cfs_period_us", period_us.to_string()),
                    ("cpu.cfs_quota_us", quota_us.to_string()),
                ],
            )
        } else {
            return Err("no cgroup cpu controller (cgroup v2 cpu.max or v1 cpu)".into());
        };
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let made = (|| {
            for (file, value) in &limits {
                std::fs::write(dir.join(file), value)
                    .map_err(|e| format!("{}/{file}: {e}", dir.display()))?;
            }
            OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| format!("{}/cgroup.procs: {e}", dir.display()))
        })();
        match made {
            Ok(procs) => Ok(CpuQuota { dir, procs }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    /// Makes `cmd`'s process join the group before it execs, so that all
    /// of its threads run under the quota from the start.
    pub(crate) fn confine<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        let fd = self.procs.as_raw_fd();
        // SAFETY: the closure only calls write(2) on a descriptor that
        // outlives the spawn (async-signal-safe, no allocation). Writing
        // "0" moves the writing process itself (cgroup_procs_write_start).
        unsafe {
            cmd.pre_exec(move || {
                if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            })
        }
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Empty once its processes have been reaped; the kernel may take a
        // moment after the last exit.
        let t0 = Instant::now();
        while std::fs::remove_dir(&self.dir).is_err() && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
