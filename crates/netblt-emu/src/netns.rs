//! Named network namespaces, managed with iproute2.
//!
//! We use `ip netns` rather than raw `unshare` + bind mounts so that the
//! namespaces are ordinary named ones: `ip netns exec nb-x-l bash` works for
//! a person poking at a running emulation, and `ip netns list` shows what a
//! crashed run left behind. Every `ip` exit status is checked.
//!
//! Joining a namespace (`setns`) only changes the calling thread, so code that
//! must run inside one (creating the TUN device, opening sockets for
//! [`crate::Emulation::enter_left`]) runs on a short-lived thread that joins
//! it; the process itself never moves.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::EmuError;

/// Where iproute2 keeps the bind mounts that name namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Path of the bind mount naming namespace `ns`.
pub(crate) fn path(ns: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(ns)
}

/// Whether a namespace of that name exists.
pub(crate) fn exists(ns: &str) -> bool {
    path(ns).exists()
}

/// Runs `ip ARGS...`, failing with its stderr if the exit status is not 0.
pub(crate) fn ip(args: &[&str]) -> Result<String, EmuError> {
    run("ip", args)
}

/// Runs a program, failing with its stderr if the exit status is not 0.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, EmuError> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EmuError::io(format!("running `{command}`"), e))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(EmuError::Command {
            command,
            detail: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        })
    }
}

/// Creates namespace `ns`; [`EmuError::Exists`] if it is already there
/// (we never adopt, and so never delete, a namespace we did not create).
pub(crate) fn add(ns: &str) -> Result<(), EmuError> {
    if exists(ns) {
        return Err(EmuError::Exists(ns.to_owned()));
    }
    ip(&["netns", "add", ns]).map(drop)
}

/// Process ids of the processes inside namespace `ns`.
pub(crate) fn pids(ns: &str) -> Vec<i32> {
    match ip(&["netns", "pids", ns]) {
        Ok(text) => text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Ends every process left in namespace `ns`: SIGTERM, then SIGKILL for
/// those still there after a grace period. They can only be processes an
/// emulation started (the namespace is ours), and we signal them by id.
pub(crate) fn kill_all(ns: &str, grace: Duration) {
    let first = pids(ns);
    if first.is_empty() {
        return;
    }
    for &pid in &first {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if first.iter().all(|&pid| !alive(pid)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in pids(ns) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Whether process `pid` still exists (and is not a zombie we could reap).
pub(crate) fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Field 3 is the state; 'Z' is a zombie waiting for its parent.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Whether any live (not zombie) process is in process group `pgid`.
pub(crate) fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // After "(comm)": state, ppid, pgrp.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut f = rest.split_whitespace();
            let state = f.next();
            let pgrp = f.nth(1).and_then(|g| g.parse::<i32>().ok());
            state != Some("Z") && pgrp == Some(pgid)
        })
}

/// Ends the processes in `ns` and deletes it. Deleting removes the name; the
/// kernel frees the namespace when its last user (process, socket) is gone.
pub(crate) fn delete(ns: &str) -> Result<(), EmuError> {
    if !exists(ns) {
        return Ok(());
    }
    kill_all(ns, Duration::from_millis(500));
    ip(&["netns", "delete", ns]).map(drop)
}

/// Names of all named namespaces.
pub(crate) fn list() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// Opens the handle used to join namespace `ns`.
pub(crate) fn open(ns: &str) -> Result<File, EmuError> {
    File::open(path(ns)).map_err(|e| EmuError::io(format!("opening namespace {ns}"), e))
}

/// Joins the calling thread to the namespace behind `handle`.
pub(crate) fn join(handle: &File) -> std::io::Result<()> {
    nix::sched::setns(handle, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
}

/// Runs `f` on a fresh thread that has joined the namespace behind `handle`,
/// and returns what it returns. Panics in `f` propagate to the caller.
pub(crate) fn within<T: Send>(handle: &File, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            join(handle)?;
            Ok(f())
        });
        match worker.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Reads a file inside namespace `ns` as `ip netns exec` sees it (with that
/// namespace's own `/sys` mounted).
pub(crate) fn read_in(ns: &str, file: &str) -> Result<String, EmuError> {
    ip(&["netns", "exec", ns, "cat", file])
}
