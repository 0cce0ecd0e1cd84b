//! Helpers for the end-to-end tests: run the `netblt` binary on loopback.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    test_keys();
    env!("CARGO_BIN_EXE_netblt")
}

/// Encrypted mode is the default: every `netblt` these tests start shares
/// one throw-away key directory (`NETBLT_HOME`, inherited) whose
/// `authorized_keys` holds its own key, so senders are accepted without
/// touching the user's `~/.config/netblt`.
pub fn test_keys() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Under cargo's scratch directory for tests, not /tmp, and those of
        // test processes that have ended are removed: one directory per test
        // binary and run had piled up in /tmp by the hundred.
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        sweep_test_keys(root);
        let dir = root.join(format!("netblt-test-keys-{}", std::process::id()));
        let kd = netblt_crypto::KeyDir::at(&dir);
        let (id, _) = kd
            .load_or_create_identity(&mut netblt_crypto::OsRandom)
            .expect("test key pair");
        netblt_crypto::AuthorizedKeys::append(
            &netblt_crypto::authorized::default_path(&kd),
            &id.public(),
            "tests",
        )
        .expect("authorized_keys");
        std::env::set_var("NETBLT_HOME", &dir);
    });
}

/// Removes the key directories of test processes that are gone.
fn sweep_test_keys(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("netblt-test-keys-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A UDP port free right now on 127.0.0.1.
pub fn free_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.local_addr().expect("addr").port()
}

/// A running `netblt recv`.
pub struct Recv {
    pub child: Child,
    pub port: u16,
    pub addr: String,
    stderr_lines: std::sync::mpsc::Receiver<String>,
}

impl Recv {
    /// Starts `netblt recv --listen 127.0.0.1:PORT ARGS` and waits until it
    /// listens.
    pub fn start(args: &[&str]) -> Recv {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(bin())
            .arg("recv")
            .arg("--listen")
            .arg(&addr)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn recv");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let r = Recv {
            child,
            port,
            addr,
            stderr_lines: rx,
        };
        if !args.contains(&"--json") {
            let line = r
                .stderr_lines
                .recv_timeout(Duration::from_secs(10))
                .expect("recv did not start");
            assert!(line.contains("listening"), "unexpected: {line}");
        } else {
            std::thread::sleep(Duration::from_millis(300));
        }
        r
    }

    /// Waits for the receiver to exit (it must have been started with
    /// --once) and returns its exit code and stdout.
    /// The next line the receiver writes on stderr, if one comes within
    /// `limit`.
    pub fn stderr_line(&self, limit: Duration) -> Option<String> {
        self.stderr_lines.recv_timeout(limit).ok()
    }

    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let code = wait(&mut self.child, limit);
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        let err: Vec<String> = self.stderr_lines.try_iter().collect();
        (code, out, err.join("\n"))
    }

    /// Stops the receiver (SIGINT) and returns its stdout.
    pub fn stop(mut self) -> String {
        // SAFETY: signals our own child.
        unsafe {
            libc_kill(self.child.id() as i32, 2);
        }
        let _ = wait(&mut self.child, Duration::from_secs(5));
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        out
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Waits up to `limit` for `child`; kills it after that (None).
pub fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return st.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `netblt ARGS` to completion (at most `limit`).
pub fn run(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    run_in(None, args, limit)
}

/// [`run`] with its own key directory (`NETBLT_HOME`) when `home` is given.
pub fn run_in(
    home: Option<&Path>,
    args: &[&str],
    limit: Duration,
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(bin());
    if let Some(h) = home {
        cmd.env("NETBLT_HOME", h);
    }
    let mut child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t = std::thread::spawn(move || {
        let mut a = String::new();
        let mut b = String::new();
        let _ = so.read_to_string(&mut a);
        let _ = se.read_to_string(&mut b);
        (a, b)
    });
    let code = wait(&mut child, limit);
    let (out, err) = t.join().unwrap_or_default();
    (code, out, err)
}

pub fn output(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run")
}

/// Deterministic content of `n` bytes.
pub fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn write(path: &Path, bytes: &[u8]) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}

/// Files and directories under `dir` whose names contain "netblt-"
/// (left-over partial files, journals and staged bundle directories).
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let temp = p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains("netblt-"));
            if temp {
                // A staged directory (decision M11) is temporary too.
                out.push(p.clone());
            }
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

pub const T: Duration = Duration::from_secs(30);

/// Starts `netblt ARGS` with stdin, stdout and stderr as given.
pub fn spawn(args: &[&str], stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(bin())
        .args(args)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn")
}

/// Sends a signal to our own child.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: signals a process we started.
    unsafe {
        libc_kill(child.id() as i32, sig);
    }
}

pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;

/// Lines in the resume journal for `name` under `dir` (units received).
pub fn journal_units(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join(format!(".{name}.netblt-journal")))
        .map_or(0, |s| s.lines().count().saturating_sub(1))
}

/// Waits (up to `limit`) until `cond` holds.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Sets `p`'s modification time, in nanoseconds since 1970.
pub fn set_mtime(p: &Path, ns: u64) {
    let t = std::time::UNIX_EPOCH + Duration::from_nanos(ns);
    let f = std::fs::File::open(p).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(t))
        .unwrap();
}

/// Writes `bytes` over the file `p` (of the same length, in the tests of
/// `--checksum`) and gives it its old modification time back: a change
/// rsync's quick check cannot see (decision M18).
pub fn rewrite_behind_its_time(p: &Path, bytes: &[u8]) {
    let old = std::fs::metadata(p).unwrap().modified().unwrap();
    write(p, bytes);
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(old).unwrap();
}

/// `p`'s permission bits (a link's own).
pub fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// One entry of a tree: relative name, is a directory, mode, mtime, bytes.
pub type Entry = (Vec<u8>, bool, u32, std::time::SystemTime, Vec<u8>);

/// Every entry below `root`, in name order, links excluded.
pub fn listing(root: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let bytes = if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.push((rel, m.is_dir(), mode(&p), m.modified().unwrap(), bytes));
        }
    }
    out.sort();
    out
}

/// Waits until no transfer holds the partial file of `name` in `dir` (the
/// receiver gave the interrupted or dead connection up).
pub fn wait_unlocked(dir: &Path, name: &str) {
    use std::os::fd::AsRawFd;
    let part = dir.join(format!(".{name}.netblt-part"));
    let free = wait_for(Duration::from_secs(10), || {
        let Ok(f) = std::fs::File::open(&part) else {
            return true;
        };
        // SAFETY: flock on a descriptor we own; released when `f` closes.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    });
    assert!(free, "the receiver kept the partial file locked");
}
