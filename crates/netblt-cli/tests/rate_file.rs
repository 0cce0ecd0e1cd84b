//! `--rate-file`: rate limits changed while a transfer runs (decision R27).

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::*;

/// The controller's rate and reason in one `--json-stream` interval.
fn rate_of(line: &str) -> Option<(f64, String)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let r = &v["data"]["rate"];
    Some((r["rate_bps"].as_f64()?, r["reason"].as_str()?.to_string()))
}

#[test]
fn a_rate_file_holds_a_bench_under_it_and_a_new_value_applies_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let limits = dir.path().join("limits");
    std::fs::write(&limits, "# start slow\n16M\n").unwrap();
    let r = Recv::start(&["--sink", "--once"]);
    let mut bench = spawn(
        &[
            "bench",
            &r.addr,
            "--size",
            "8M",
            "--rate-file",
            limits.to_str().unwrap(),
            "--json-stream",
            "-i",
            "0.2",
        ],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    );
    let mut lines = BufReader::new(bench.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Under the cap until we lift it (8 MB at 16 Mb/s would take 4 s; at
    // 64 Mb/s, about one).
    let mut lifted = false;
    let mut above = false;
    let mut end = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("\"event\":\"end\"") {
            end = Some(line);
            break;
        }
        let (bps, reason) = rate_of(&line).expect("an interval with the controller's rate");
        seen.push((bps, reason.clone()));
        if !lifted {
            assert!(bps <= 16e6 * 1.001, "{bps} b/s under a 16M cap: {seen:?}");
            if reason == "cap" {
                std::fs::write(&limits, "64M\n").unwrap();
                lifted = true;
            }
        } else if bps > 32e6 {
            assert!(bps <= 64e6 * 1.001, "{bps} b/s under a 64M cap: {seen:?}");
            above = true;
        }
    }
    let code = wait(&mut bench, T);
    assert_eq!(code, Some(0), "{seen:?}");
    assert!(lifted, "never held at the cap: {seen:?}");
    assert!(above, "the lifted cap never showed: {seen:?}");
    let end: serde_json::Value = serde_json::from_str(&end.expect("end object")).unwrap();
    assert_eq!(end["data"]["verified"], true);
    assert_eq!(end["data"]["rate"]["limit_max_bps"], 64_000_000, "{end}");
    r.finish(T);
}

#[test]
fn a_bad_rate_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let limits = dir.path().join("limits");
    std::fs::write(&limits, "fast\n").unwrap();
    let f = limits.to_str().unwrap();
    let (code, out, err) = run(&["bench", "127.0.0.1:9", "--rate-file", f], T);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--rate-file") && err.contains("fast"), "{err}");
    let missing = dir.path().join("none-such");
    let (code, _, err) = run(
        &[
            "send",
            f,
            "127.0.0.1:9",
            "--rate-file",
            missing.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// The receiving end's file (R31): `recv --rate-file` holds a sender under
/// it through the burst values of its OKs, and so does `get --rate-file`
/// for the server it fetches from. 3 MB at 16 Mb/s is 1.5 s; the first
/// buffers (256 KiB each) may go faster, before the first OK.
/// Runs `args` with 256 KiB buffers (so that OKs come while 3 MB move),
/// at most two of them outstanding, and `--json`; its wall time. (With
/// the default 32 queued, all 12 buffers could leave before the first OK
/// did on a busy machine: 3 MB in 0.78 s once in a full test run.)
fn wall_time(args: &[&str]) -> f64 {
    let mut all = args.to_vec();
    all.extend(["--buffer-size", "256k", "--buffers", "2", "--json"]);
    let (code, out, err) = run(&all, T);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    v["wall_time_s"].as_f64().unwrap()
}

#[test]
fn a_receiving_end_limits_its_sender_through_its_oks() {
    let dir = tempfile::tempdir().unwrap();
    let limits = dir.path().join("limits");
    std::fs::write(&limits, "16M\n").unwrap();
    let f = limits.to_str().unwrap();
    let r = Recv::start(&["--sink", "--once", "--rate-file", f]);
    let wall = wall_time(&["bench", &r.addr, "--size", "3M"]);
    assert!(wall > 1.0, "3 MB in {wall} s under the receiver's 16 Mb/s");
    r.finish(T);

    let served = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(served.path().join("g.bin"), &data).unwrap();
    let s = Recv::start(&["--serve", "--dir", served.path().to_str().unwrap()]);
    let dest = tempfile::tempdir().unwrap();
    let out = dest.path().to_str().unwrap();
    let wall = wall_time(&["get", &s.addr, "g.bin", "-o", out, "--rate-file", f]);
    assert!(wall > 1.0, "3 MB in {wall} s under get's 16 Mb/s");
    assert!(std::fs::read(dest.path().join("g.bin")).unwrap() == data);
    s.stop();
}
