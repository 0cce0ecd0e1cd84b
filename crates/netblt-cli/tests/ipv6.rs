//! The tool over IPv6 (loopback ::1): a memory-to-memory transfer verified
//! end to end. Skipped, with a notice, where the host has no IPv6 loopback.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, run};

#[test]
fn bench_over_ipv6_loopback() {
    let Ok(probe) = std::net::UdpSocket::bind("[::1]:0") else {
        eprintln!("skipping: no IPv6 loopback");
        return;
    };
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let addr = format!("[::1]:{port}");
    let mut recv = Command::new(bin())
        .args(["recv", "--sink", "--once", "--listen", &addr])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(recv.stderr.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
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
