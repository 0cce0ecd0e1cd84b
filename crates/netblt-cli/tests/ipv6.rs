//! The tool over IPv6 (loopback ::1): a memory-to-memory transfer verified
//! end to end. Skipped, with a notice, where the host has no IPv6 loopback.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, run};

/// A free UDP port on `ip` (bound and let go), or `None` without IPv6.
fn free_port(ip: &str) -> Option<u16> {
    let probe = std::net::UdpSocket::bind(format!("[{ip}]:0")).ok()?;
    Some(probe.local_addr().ok()?.port())
}

/// `netblt recv --sink` with `args`, once it has said its first line.
fn start_recv(args: &[&str], stdout: Stdio) -> (std::process::Child, String) {
    let mut recv = Command::new(bin())
        .args(["recv", "--sink"])
        .args(args)
        .stderr(Stdio::piped())
        .stdout(stdout)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(recv.stderr.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    (recv, first)
}

#[test]
fn bench_over_ipv6_loopback() {
    let Some(port) = free_port("::1") else {
        eprintln!("skipping: no IPv6 loopback");
        return;
    };
    let addr = format!("[::1]:{port}");
    let (mut recv, first) = start_recv(&["--once", "--listen", &addr], Stdio::null());
    assert!(first.contains("listening"), "recv did not start: {first}");
    let (code, out, err) = run(
        &["bench", &addr, "--size", "5MB", "--json"],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(v["verified"], serde_json::Value::Bool(true), "{out}");
    assert_eq!(v["bytes"], serde_json::json!(5_000_000u64), "{out}");
    let _ = recv.wait();
}

#[test]
fn the_default_listener_takes_ipv4_and_ipv6() {
    // `[::]` (recv's default address) is dual-stack: an IPv4 sender and an
    // IPv6 one both reach it, and the IPv4 peer is shown as such, not as
    // `::ffff:127.0.0.1`.
    let Some(port) = free_port("::") else {
        eprintln!("skipping: no IPv6");
        return;
    };
    let listen = format!("[::]:{port}");
    let (mut recv, first) = start_recv(&["--listen", &listen], Stdio::piped());
    assert!(
        first.contains("IPv6 and IPv4"),
        "recv did not start: {first}"
    );
    for to in [format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
        let (code, out, err) = run(
            &["bench", &to, "--size", "2MB", "--json"],
            Duration::from_secs(60),
        );
        assert_eq!(code, Some(0), "{to}: stdout: {out}\nstderr: {err}");
    }
    let _ = recv.kill();
    let out = recv.wait_with_output().unwrap();
    let reports = String::from_utf8_lossy(&out.stdout);
    assert!(reports.contains("<- 127.0.0.1:"), "{reports}");
    assert!(reports.contains("<- [::1]:"), "{reports}");
    assert!(!reports.contains("ffff"), "{reports}");
}
