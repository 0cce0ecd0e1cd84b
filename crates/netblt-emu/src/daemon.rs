//! Long-lived named emulations: `netblt emu up NAME`, `down NAME`, `list`.
//!
//! `up` forks a forwarder process (double fork + `setsid`, so it is nobody's
//! zombie and survives the terminal), which starts the emulation, records
//! its pid in `/run/netblt/NAME.pid` and reports readiness or the start error
//! through a pipe before `up` returns. `down` sends it SIGTERM; it then stops
//! in order and leaves its final counters in `/run/netblt/NAME.json`. If the
//! forwarder died without cleaning up, `down` removes the namespaces itself.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config::{check_name, EmuConfig};
use crate::emulation::Emulation;
use crate::error::EmuError;
use crate::stats::EmuStats;
use crate::{netns, signals};

/// Where pid files and final counters live.
pub const RUN_DIR: &str = "/run/netblt";

/// How long `down` waits for the forwarder to finish its teardown.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

fn pid_file(name: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{name}.pid"))
}

fn stats_file(name: &str) -> PathBuf {
    PathBuf::from(RUN_DIR).join(format!("{name}.json"))
}

/// Pid of the forwarder of `name`, if its pid file names a live process.
fn running_pid(name: &str) -> Option<i32> {
    let pid: i32 = fs::read_to_string(pid_file(name))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (pid > 0 && netns::alive(pid)).then_some(pid)
}

/// Starts emulation `cfg` in a background process; returns once it forwards
/// (or with the error that stopped it).
///
/// Forks: call it from a process that has not started other threads.
pub fn up(cfg: EmuConfig) -> Result<(), EmuError> {
    cfg.validate()?;
    if let Some(pid) = running_pid(&cfg.name) {
        return Err(EmuError::Exists(format!(
            "{} (forwarder pid {pid})",
            cfg.name
        )));
    }
    for ns in [cfg.left_ns(), cfg.right_ns()] {
        if netns::exists(&ns) {
            return Err(EmuError::Exists(ns));
        }
    }
    fs::create_dir_all(RUN_DIR).map_err(|e| EmuError::io(format!("creating {RUN_DIR}"), e))?;
    let _ = fs::remove_file(stats_file(&cfg.name));
    let (rx, tx) = nix::unistd::pipe().map_err(|e| EmuError::io("pipe", e.into()))?;

    // SAFETY: the child only calls setsid, fork and _exit before the
    // grandchild takes over; see the function's documentation about threads.
    match unsafe { nix::unistd::fork() }.map_err(|e| EmuError::io("fork", e.into()))? {
        nix::unistd::ForkResult::Parent { child } => {
            drop(tx);
            let _ = nix::sys::wait::waitpid(child, None);
            let mut report = String::new();
            let _ = fs::File::from(rx).read_to_string(&mut report);
            match report.strip_prefix("ok") {
                Some(_) => Ok(()),
                None if report.is_empty() => Err(EmuError::Failed(
                    "the forwarder process exited before reporting".to_owned(),
                )),
                None => Err(EmuError::Failed(report.trim().to_owned())),
            }
        }
        nix::unistd::ForkResult::Child => {
            drop(rx);
            let _ = nix::unistd::setsid();
            // SAFETY: as above; the intermediate child exits at once.
            match unsafe { nix::unistd::fork() } {
                Ok(nix::unistd::ForkResult::Child) => {
                    let code = serve(cfg, tx);
                    std::process::exit(code);
                }
                // SAFETY: _exit skips the parent's atexit handlers and
                // destructors, which must not run twice.
                _ => unsafe { libc::_exit(0) },
            }
        }
    }
}

/// The background forwarder: start, report, wait for a signal, stop.
fn serve(cfg: EmuConfig, report: OwnedFd) -> i32 {
    let mut report = fs::File::from(report);
    let _graceful = signals::Graceful::new();
    if let Err(e) = signals::install_signal_cleanup() {
        let _ = write!(report, "{e}");
        return 1;
    }
    let name = cfg.name.clone();
    let emu = match Emulation::start(cfg) {
        Ok(emu) => emu,
        Err(e) => {
            let _ = write!(report, "{e}");
            return 1;
        }
    };
    if let Err(e) = fs::write(pid_file(&name), format!("{}\n", std::process::id())) {
        let _ = write!(report, "writing {}: {e}", pid_file(&name).display());
        return 1;
    }
    let _ = report.write_all(b"ok");
    drop(report);
    detach_stdio();
    while !signals::interrupted() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = emu.stop();
    if let Ok(json) = serde_json::to_string_pretty(&stats) {
        let _ = fs::write(stats_file(&name), json);
    }
    let _ = fs::remove_file(pid_file(&name));
    i32::from(stats.failed)
}

/// Points stdin, stdout and stderr at /dev/null so the daemon holds no terminal.
fn detach_stdio() {
    if let Ok(null) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..=2 {
            // SAFETY: dup2 onto the standard descriptors; `null` stays valid.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// Stops emulation `name` and removes its namespaces; returns its final
/// counters when the forwarder left them.
pub fn down(name: &str) -> Result<Option<EmuStats>, EmuError> {
    check_name(name)?;
    let cfg = EmuConfig::new(name);
    let namespaces = [cfg.left_ns(), cfg.right_ns()];
    let pid = running_pid(name);
    if pid.is_none() && !namespaces.iter().any(|ns| netns::exists(ns)) {
        let _ = fs::remove_file(pid_file(name));
        return Err(EmuError::NotFound(name.to_owned()));
    }
    if let Some(pid) = pid {
        // SAFETY: kill has no memory-safety preconditions; `pid` is the
        // forwarder this module started (read from its own pid file).
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while netns::alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if netns::alive(pid) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    let _ = fs::remove_file(pid_file(name));
    for ns in &namespaces {
        netns::delete(ns)?;
    }
    let stats = fs::read_to_string(stats_file(name))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let _ = fs::remove_file(stats_file(name));
    Ok(stats)
}

/// One named emulation as `list` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Emulation name.
    pub name: String,
    /// Forwarder pid, if running.
    pub pid: Option<i32>,
    /// Whether its left and right namespaces exist.
    pub namespaces: (bool, bool),
}

/// Emulations that exist on this machine: named `nb-*-l`/`nb-*-r`
/// namespaces and forwarder pid files.
pub fn list() -> Vec<Listed> {
    let mut names: Vec<String> = netns::list()
        .into_iter()
        .filter_map(|ns| {
            let inner = ns.strip_prefix("nb-")?;
            let name = inner
                .strip_suffix("-l")
                .or_else(|| inner.strip_suffix("-r"))?;
            Some(name.to_owned())
        })
        .collect();
    if let Ok(dir) = fs::read_dir(RUN_DIR) {
        for entry in dir.flatten() {
            if let Some(name) = entry
                .file_name()
                .to_str()
                .and_then(|f| f.strip_suffix(".pid"))
            {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let cfg = EmuConfig::new(name.as_str());
            Listed {
                pid: running_pid(&name),
                namespaces: (
                    netns::exists(&cfg.left_ns()),
                    netns::exists(&cfg.right_ns()),
                ),
                name,
            }
        })
        .collect()
}
