//! "Why was it slow?" for the limits of the hosts themselves, from real
//! runs on loopback: a sender or a receiver held to a sliver of a CPU by a
//! cgroup quota, and a receiver whose socket buffer is too small for what
//! its sender has in flight. The constructed limits are severe (2 % of a
//! core; a buffer of a few datagrams) so that other work on a loaded
//! machine cannot change the verdict. Root only (cgroups, pidfd_getfd):
//! skipped with a message otherwise, as the emulator tests are.

mod common;
#[path = "host_limits/cpu_quota.rs"]
mod cpu_quota;
#[path = "host_limits/socket_buffer.rs"]
mod socket_buffer;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use cpu_quota::CpuQuota;
use socket_buffer::ForeignSocket;

/// 1 ms of CPU per 50 ms period: 2 % of a core. A 2 MB transfer needs a few
/// tens of milliseconds of CPU in a debug build, so it runs throttled for
/// most of a second or two.
const QUOTA_US: u32 = 1_000;
const PERIOD_US: u32 = 50_000;

fn quota() -> Option<CpuQuota> {
    match CpuQuota::new(QUOTA_US, PERIOD_US) {
        Ok(q) => Some(q),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn json(out: &str) -> serde_json::Value {
    // `bench --json` pretty-prints one object; `get --json` prints a line.
    let (Some(a), Some(b)) = (out.find('{'), out.rfind('}')) else {
        panic!("no JSON: {out}");
    };
    serde_json::from_str(&out[a..=b]).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `netblt ARGS` to its end (inside `quota` if given): its report.
fn report(args: &[&str], quota: Option<&CpuQuota>) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("RUST_LOG", "netblt=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(q) = quota {
        q.confine(&mut cmd);
    }
    let child = cmd.spawn().expect("spawn netblt");
    finish(child)
}

/// A finished run: its JSON report, and the diagnosis's inputs (logged at
/// debug level, `RUST_LOG=netblt=debug`) to show when a verdict is wrong.
struct Run {
    v: serde_json::Value,
    inputs: String,
}

fn finish(mut child: std::process::Child) -> Run {
    let (mut out, mut err) = (String::new(), String::new());
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let errs = std::thread::spawn(move || {
        let _ = se.read_to_string(&mut err);
        err
    });
    let code = wait(&mut child, Duration::from_secs(30));
    let _ = so.read_to_string(&mut out);
    let err = errs.join().unwrap_or_default();
    assert_eq!(code, Some(0), "{err}\n{out}");
    let inputs = err
        .lines()
        .filter(|l| l.contains("limit inputs"))
        .collect::<Vec<_>>()
        .join("\n");
    Run {
        v: json(&out),
        inputs,
    }
}

impl Run {
    /// Asserts the verdict, and shows its sentence.
    fn expect(&self, want: &str) {
        let l = &self.v["limit"];
        eprintln!("why: {}", l["message"].as_str().unwrap_or("-"));
        if std::env::var_os("SHOW_INPUTS").is_some() {
            eprintln!("{}", self.inputs);
        }
        assert_eq!(l["limit"], want, "{l}\n{}", self.inputs);
    }
}

#[test]
fn a_sender_held_to_two_percent_of_a_cpu_is_named_as_its_cpu() {
    // 8 MB, not 2, as for the receiver below: with 2 MB on a loaded machine
    // the quota held the sender back in too small a share of the run, and
    // the verdict was sometimes something else (seen on this 2-core host
    // while benchmarks ran).
    let Some(q) = quota() else { return };
    let r = Recv::start(&["--sink", "--insecure"]);
    let v = report(
        &["bench", &r.addr, "--size", "8M", "--insecure", "--json"],
        Some(&q),
    );
    v.expect("sender-cpu");
}

#[test]
fn a_fixed_rate_far_short_with_little_loss_is_the_senders_cpu_not_the_path() {
    // Issue 10: a fixed rate not reached, with no loss to speak of, was
    // named "path". Here the sender can send 1 Gb/s on loopback only when
    // it runs, which is 2 % of the time: 8 MB need more CPU time (loop,
    // pattern, digest) than the quota gives in the 64 ms the rate allows.
    let Some(q) = quota() else { return };
    let r = Recv::start(&["--sink", "--insecure"]);
    let fixed = ["--policy", "fixed", "--rate", "1G"];
    let args = [
        &["bench", &r.addr, "--size", "8M", "--insecure", "--json"][..],
        &fixed[..],
    ]
    .concat();
    let v = report(&args, Some(&q));
    v.expect("sender-cpu");
}

#[test]
fn a_receiver_held_to_two_percent_of_a_cpu_is_named_as_its_cpu() {
    // 8 MB, not 2: a 2 MB get needed so little CPU that on one CI machine
    // the quota held it back only 11 % of the run (the sender's start-up
    // took the rest) and the verdict was "path". With 8 MB it is held back
    // 90-100 % of every run here, in about the same wall time.
    let Some(q) = quota() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write(&dir.path().join("f.bin"), &data(8_000_000, 5));
    let r = Recv::start(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--serve",
        "--insecure",
    ]);
    let dest = out.path().join("f.bin");
    let v = report(
        &[
            "get",
            &r.addr,
            "f.bin",
            "-o",
            dest.to_str().unwrap(),
            "--insecure",
            "--json",
        ],
        Some(&q),
    );
    v.expect("receiver-cpu");
}

#[test]
fn a_receiver_whose_socket_buffer_is_too_small_is_named_as_socket_drops() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: needs root (pidfd_getfd)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // 32 MB: with 8 MB, on a machine busy with a build, the whole transfer
    // (123 ms at 518 Mb/s, debug build) was over before the test had found
    // the receiver's socket and shrunk its buffer (CI, 2026-11-25).
    write(&dir.path().join("f.bin"), &data(32_000_000, 6));
    let r = Recv::start(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--serve",
        "--insecure",
    ]);
    let dest = out.path().join("f.bin");
    let mut cmd = Command::new(bin());
    cmd.env("RUST_LOG", "netblt=debug")
        .args(["get", &r.addr, "f.bin", "-o", dest.to_str().unwrap()])
        .args(["--insecure", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // All the CPU it asks for (nice -20), so that on a loaded machine its
    // loop is not kept waiting for a core: only its buffer is too small.
    // SAFETY: setpriority(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, -20);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn get");
    let sock = match ForeignSocket::find(child.id(), Duration::from_secs(10)) {
        Ok(s) => s,
        Err(e) => {
            // An older kernel (pidfd_getfd is Linux 5.6+).
            eprintln!("skipping: {e}");
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
    };
    // Long enough to dominate the transfer (which takes a tenth of that
    // with the buffer it asked for), short enough that the sender's
    // collapse under heavy loss cannot stretch the test: then the buffer
    // the driver chose (the whole window, 32 x 1 MiB) is given back.
    sock.hold_recv_buffer(SMALL, Duration::from_millis(600), 32 << 20);
    let v = finish(child);
    v.expect("receiver-drops");
}

/// 4 kB: the kernel doubles it to 8 kB, room for a few 1400-byte datagrams
/// (each is charged its whole buffer, more than its payload).
const SMALL: usize = 4_000;
