//! Live reports: `--json-stream` objects per interval, and the progress bar
//! only on a terminal.

mod common;

use common::*;

#[test]
fn json_stream_gives_intervals_then_the_report() {
    let r = Recv::start(&["--sink"]);
    // 8 MB at most 64 Mb/s: a second or more, so several 0.2 s intervals
    // (the adaptive controller's state is in each).
    let (code, out, err) = run(
        &[
            "bench",
            &r.addr,
            "--size",
            "8M",
            "--rate",
            "64M",
            "--json-stream",
            "-i",
            "0.2",
        ],
        T,
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let objs: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let (end, intervals) = objs.split_last().unwrap();
    assert_eq!(end["event"], "end");
    assert_eq!(end["data"]["verified"], true);
    assert_eq!(end["data"]["bytes"], 8_000_000);
    // F14: what got across, and the sender's own round trip (it was null).
    assert_eq!(end["data"]["bytes_done"], 8_000_000);
    assert!(
        end["data"]["srtt_ms"].as_f64().is_some_and(|r| r >= 0.0),
        "{end}"
    );
    assert!(intervals.len() >= 3, "{out}");
    let mut last = 0.0;
    for i in intervals {
        assert_eq!(i["event"], "interval");
        let d = &i["data"];
        for k in [
            "elapsed_s",
            "bytes",
            "interval_bps",
            "total_bps",
            "retransmitted",
            "lost",
            "srtt_ms",
        ] {
            assert!(d.get(k).is_some(), "{k} missing: {d}");
        }
        let t = d["elapsed_s"].as_f64().unwrap();
        assert!(t > last, "intervals in order");
        last = t;
        assert!(d["rate"]["rate_bps"].as_f64().unwrap() > 0.0, "{d}");
        assert!(d["rate"]["reason"].is_string(), "{d}");
    }
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

#[test]
fn json_stream_on_send_and_get() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("f");
    write(&f, &data(3_000_000, 3));
    let r = Recv::start(&["--dir", dir.path().to_str().unwrap(), "--serve"]);
    let (code, out, err) = run(
        &[
            "send",
            f.to_str().unwrap(),
            &r.addr,
            "--json-stream",
            "-i",
            "0.1",
            "--rate",
            "48M",
            "--policy",
            "fixed",
        ],
        T,
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "end");
    assert!(out.lines().count() >= 2, "{out}");
    let o = src.path().join("back");
    let (code, out, err) = run(
        &[
            "get",
            &r.addr,
            "f",
            "-o",
            o.to_str().unwrap(),
            "--json-stream",
            "-i",
            "0.1",
            "--rate",
            "48M",
        ],
        T,
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["data"]["direction"], "receive");
    assert!(out.lines().count() >= 2, "{out}");
}

#[test]
fn no_bar_when_stderr_is_not_a_terminal() {
    let r = Recv::start(&["--sink"]);
    let (code, out, err) = run(
        &[
            "bench", &r.addr, "--size", "2M", "--policy", "fixed", "--rate", "40M",
        ],
        T,
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(err.is_empty(), "stderr not a terminal: no bar: {err:?}");
}

/// On a pseudo-terminal (`script`), the bar shows bytes, rate, ETA,
/// retransmissions and the rate the controller paces at.
#[test]
fn bar_on_a_terminal() {
    if !has_script() {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("f");
    write(&f, &data(4_000_000, 5));
    let r = Recv::start(&["--sink"]);
    // `script`'s terminal has no size of its own: `stty` gives it one.
    let bar = |cols: u32| {
        let cmd = format!(
            "stty cols {cols} rows 40; {} send {} {} --rate 40M",
            bin(),
            f.display(),
            r.addr
        );
        on_terminal(&cmd)
    };
    let text = bar(160);
    for want in ["ETA", "rxm", "pacing", "Mb/s"] {
        assert!(text.contains(want), "{want} missing from the bar: {text:?}");
    }
    // F15: on 80 columns every frame fits one row (the bar took two and
    // redrew both), and each starts with the file's name (the first frames
    // had none).
    let text = bar(80);
    let frames: Vec<String> = text
        .split(['\r', '\n'])
        .map(strip_escapes)
        .filter(|f| f.contains("ETA"))
        .collect();
    assert!(!frames.is_empty(), "{text:?}");
    for f in &frames {
        assert!(
            f.chars().count() <= 80,
            "{} columns: {f:?}",
            f.chars().count()
        );
        assert!(f.starts_with("f "), "{f:?}");
    }
    // F18: ... and the pacing rate and why, once known, fit there too
    // (they never showed on 80 columns).
    assert!(
        frames
            .iter()
            .any(|f| f.contains("pacing ") && f.contains("(cap)")),
        "{frames:?}"
    );
}

/// First contact with a receiver records its key in known_hosts, and a
/// person at a terminal is told so once, as ssh says "Permanently added";
/// the JSON says `security.pinned`, and without a terminal nothing is
/// printed (scripts read standard error).
#[test]
fn first_contact_is_said_once_on_a_terminal() {
    if !has_script() {
        return;
    }
    let r = Recv::start(&["--sink"]);
    let on_tty = || {
        let cmd = format!("{} bench {} --size 1M", bin(), r.addr);
        on_terminal(&cmd)
    };
    let first = on_tty();
    assert!(
        first.contains(&format!("first contact with {}: its key", r.addr))
            && first.contains("is now in known_hosts"),
        "{first}"
    );
    let again = on_tty();
    assert!(!again.contains("first contact"), "{again}");
    // Pinned already: the JSON says it was not this transfer's doing.
    let (code, out, err) = run(&["bench", &r.addr, "--size", "1M", "--json"], T);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["security"]["pinned"], false, "{v}");
    // A new receiver, without a terminal: pinned, and nothing printed.
    let r2 = Recv::start(&["--sink"]);
    let (code, out, err) = run(&["bench", &r2.addr, "--size", "1M", "--json"], T);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["security"]["pinned"], true, "{v}");
    assert!(!err.contains("first contact"), "{err}");
}

/// Whether `script(1)` is here to give a command a pseudo-terminal.
fn has_script() -> bool {
    let here = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok();
    if !here {
        eprintln!("skipped: no script(1)");
    }
    here
}

/// Runs the shell command `cmd` on a pseudo-terminal (`script`), asserts
/// that it succeeded, and returns what the terminal showed.
fn on_terminal(cmd: &str) -> String {
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    text
}

/// `s` without its terminal escape sequences (`ESC [ ... letter`).
fn strip_escapes(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
