//! `netblt sim --scenario FILE`: a dumbbell run from the command line, and
//! a clear error for a bad file.

use std::process::Command;

fn netblt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_netblt"))
}

#[test]
fn a_scenario_runs_and_reports_every_flow() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(
        &path,
        r#"{
  "name": "tiny", "seed": 3, "duration_s": 4,
  "bottleneck": { "rate_bps": 5000000, "delay_ms": 5, "queue_bytes": 40000 },
  "flows": [
    { "name": "cubic", "kind": { "tcp": { "cc": "cubic" } }, "rtt_ms": 30 },
    { "name": "nb", "kind": { "netblt": { "policy": "fair", "buffer_size": 140000 } }, "rtt_ms": 30, "start_s": 1 }
  ]
}"#,
    )
    .unwrap();
    let out = netblt()
        .args(["sim", "--json", "--scenario"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for f in flows {
        assert!(f["goodput_bps"].as_f64().unwrap() > 100_000.0, "{f}");
    }
}

#[test]
fn a_bad_scenario_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, "{ \"name\": 3 }").unwrap();
    let out = netblt()
        .args(["sim", "--scenario"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
