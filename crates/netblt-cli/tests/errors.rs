//! End-to-end failures on loopback: junk, a killed sender, a vanished
//! receiver, nothing listening, bad flags.

mod common;

use common::*;
use std::time::Duration;

#[test]
fn junk_during_a_transfer_is_counted_and_harmless() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("payload");
    write(&p, &data(3_000_000, 9));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--json", "--once"]);
    let target = r.addr.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let junk = std::thread::spawn(move || {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut x: u64 = 12345;
        let mut sent = 0u32;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) || sent < 200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 1500) as usize;
            let mut d = data(len, x);
            if sent % 3 == 0 && d.len() >= 12 {
                // Looks like NETBLT: version 1, a real type, our port.
                d[2] = 1;
                d[3] = (x % 11) as u8;
                d[10..12].copy_from_slice(&r_port(&target).to_be_bytes());
            }
            let _ = s.send_to(&d, &target);
            sent += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
        sent
    });
    let (code, out, e) = run(&["send", p.to_str().unwrap(), &r.addr, "--rate", "100M"], T);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = junk.join().unwrap();
    assert_eq!(code, Some(0), "{out}\n{e}");
    assert_eq!(
        std::fs::read(dst.path().join("payload")).unwrap(),
        data(3_000_000, 9)
    );
    let (rc, rout, rerr) = r.finish(T);
    assert_eq!(rc, Some(0), "{rout}\n{rerr}");
    let v: serde_json::Value =
        serde_json::from_str(rout.lines().next().unwrap_or("")).expect("json");
    let junk = &v["junk"];
    let counted = junk["malformed"].as_u64().unwrap_or(0) + junk["stray"].as_u64().unwrap_or(0);
    assert!(counted > 0 && sent > 0, "{rout}");
}

fn r_port(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

#[test]
fn killed_sender_leaves_only_a_resumable_partial_file() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("big");
    write(&p, &data(20_000_000, 4));
    let r = Recv::start(&[
        "--dir",
        dst.path().to_str().unwrap(),
        "--once",
        "--death-timer",
        "1",
    ]);
    let mut sender = std::process::Command::new(bin())
        .args([
            "send",
            p.to_str().unwrap(),
            &r.addr,
            "--rate",
            "20M",
            "--death-timer",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    sender.kill().unwrap();
    let _ = sender.wait();
    let (code, out, err) = r.finish(Duration::from_secs(15));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.contains("peer silent for 1 s (death timer)"), "{out}");
    assert!(!dst.path().join("big").exists());
    // What is left is the partial file and its journal, for `--resume`
    // (tests/resume.rs), or nothing if no whole unit had arrived.
    let mut left: Vec<String> = temp_files(dst.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert!(
        left.is_empty() || left == [".big.netblt-journal", ".big.netblt-part"],
        "{left:?}"
    );
}

#[test]
fn vanished_receiver_is_reported() {
    let src = tempfile::tempdir().unwrap();
    let p = src.path().join("big");
    write(&p, &data(20_000_000, 4));
    let dst = tempfile::tempdir().unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let mut sender = std::process::Command::new(bin())
        .args([
            "send",
            p.to_str().unwrap(),
            &r.addr,
            "--rate",
            "20M",
            "--death-timer",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    drop(r); // SIGKILL
    let code = wait(&mut sender, Duration::from_secs(15));
    let out = sender.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(code, Some(1) | Some(4)), "{code:?} {err}");
    assert!(
        err.contains("went away") || err.contains("peer silent for 2 s"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn nothing_listening_is_refused() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    write(&p, b"x");
    let (code, _, e) = run(
        &["send", p.to_str().unwrap(), &format!("127.0.0.1:{port}")],
        T,
    );
    assert_eq!(code, Some(4), "{e}");
    assert!(e.contains("connection refused by 127.0.0.1"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let (code, out, e) = run(&["bench", &format!("127.0.0.1:{port}"), "--size", "1M"], T);
    assert_eq!(code, Some(4), "{e}");
    // F14: no table header and empty row before the error line.
    assert!(out.trim().is_empty(), "{out}");
}

#[test]
fn a_receiver_without_its_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    write(&file, b"x");
    let gone = dir.path().join("gone");
    for (d, says) in [(&gone, "no such directory"), (&file, "not a directory")] {
        let (code, _, e) = run(&["recv", "--dir", d.to_str().unwrap()], T);
        assert_eq!(code, Some(3), "{e}");
        assert!(e.contains(&format!("{}: {says}", d.display())), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
}

#[test]
fn a_missing_file_is_named() {
    // Among several paths, the line says which one is missing (it once
    // said only "reading the files to send: no such file").
    let dir = tempfile::tempdir().unwrap();
    let there = dir.path().join("there");
    write(&there, b"x");
    let gone = dir.path().join("gone.bin");
    for args in [
        vec![gone.to_str().unwrap(), "127.0.0.1:9"],
        vec![
            there.to_str().unwrap(),
            gone.to_str().unwrap(),
            "127.0.0.1:9",
        ],
        vec!["--per-file", gone.to_str().unwrap(), "127.0.0.1:9"],
    ] {
        let mut all = vec!["send"];
        all.extend(args);
        let (code, _, e) = run(&all, T);
        assert_eq!(code, Some(3), "{e}");
        assert!(e.contains("gone.bin: no such file"), "{all:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
}

#[test]
fn bad_flags_exit_2() {
    for args in [
        &["send"][..],
        &["send", "onlyonearg"],
        &["bench", "127.0.0.1", "--packet-size", "0"],
        &["bench", "127.0.0.1", "--packet-size", "70000"],
        &[
            "bench",
            "127.0.0.1",
            "--rate",
            "1G",
            "--burst-size",
            "5",
            "--burst-interval",
            "1",
        ],
        &["bench", "127.0.0.1", "--burst-size", "5"],
        &["bench", "127.0.0.1", "--buffers", "0"],
        &["recv", "--listen", "nonsense"],
        &["bench", "127.0.0.1", "--size", "12x"],
    ] {
        let o = output(args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Our own checks print exactly one line.
    let o = output(&["bench", "127.0.0.1", "--packet-size", "0"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

/// F15: bad values get a message about the value, not clap's tip to pass
/// `-1` after `--` (which would make it a file name), nor a range that
/// includes the refused 0, nor byte units offered for a bit rate.
#[test]
fn bad_values_are_named_for_what_they_are() {
    for (args, want) in [
        (
            &["bench", "127.0.0.1", "--rate", "-1"][..],
            "'-1' is negative",
        ),
        (
            &["bench", "127.0.0.1", "-i", "-1", "--json-stream"],
            "at least 0.1",
        ),
        (
            &["bench", "127.0.0.1", "--buffers", "0"],
            "not in 1..=65535",
        ),
        (
            &["bench", "127.0.0.1", "--buffer-size", "0"],
            "--buffer-size must be at least 1 byte",
        ),
        (
            &["bench", "127.0.0.1", "--rate", "10MB/s"],
            "rates are bits per second: use 80M",
        ),
        (&["bench", "127.0.0.1", "--rate", "10X"], "bits per second"),
        // -i sets --json-stream's interval, and does nothing without it.
        (&["bench", "127.0.0.1", "-i", "0.5"], "--json-stream"),
        (
            &["bench", "127.0.0.1", "--min-rate", "1G", "--rate", "1M"],
            "--min-rate 1.00 Gb/s is above --rate 1.00 Mb/s",
        ),
        (&["demo", "--loopback", "--loss", "5"], "0.01 is 1 %"),
        (
            &["demo", "--loopback", "--profile", "nope"],
            "unknown profile 'nope'",
        ),
        (
            &["sim", "--loss", "-0.1"],
            "--loss must be between 0 and 1, got -0.1",
        ),
        (&["sim", "--delay", "-5"], "--delay must be between 0"),
        (
            &["send", "a.bin", "127.0.0.1", "--force"],
            "--force is the receiver's: start it with `netblt recv --force`",
        ),
    ] {
        let o = output(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: wanted {want:?} in {e}");
        assert!(!e.contains("-- -1"), "{args:?}: {e}");
    }
}

/// F15: what the sender prints from its peer (a refusal's reason) is
/// escaped as the receiver escapes what it prints: no control character
/// of a receiver's reaches the sender's terminal.
#[test]
fn a_receivers_refusal_reason_is_escaped_at_the_sender() {
    struct Refuse;
    impl netblt::DataHandler for Refuse {
        fn accept(&mut self, _: &netblt::IncomingTransfer) -> Result<(), String> {
            Err("no\u{1b}[2J\u{1b}[31mred\rforged".into())
        }
        fn data(&mut self, _: &netblt::IncomingTransfer, _: u64, _: &[u8]) -> Result<(), String> {
            Ok(())
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut o = netblt::ReceiverOptions::default();
    o.stop = Some(stop.clone());
    let r = netblt::Receiver::bind("127.0.0.1:0".parse().unwrap(), o).unwrap();
    let addr = r.local_addr().to_string();
    let t = std::thread::spawn(move || r.handle_with(Refuse));
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("f.bin");
    write(&f, &data(10_000, 1));
    let f = f.to_str().unwrap();
    // A file, a stream, and a bench (whose error line the tool's last
    // resort prints).
    let runs: [&[&str]; 3] = [
        &["send", f, &addr, "--insecure"],
        &["send", "-", &addr, "--insecure", "--name", "s"],
        &["bench", &addr, "--insecure", "--size", "1M"],
    ];
    for args in runs {
        use std::process::Stdio;
        let out = spawn(args, Stdio::null(), Stdio::piped(), Stdio::piped())
            .wait_with_output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {e}");
        assert!(
            e.contains("no\\u{1b}[2J\\u{1b}[31mred\\rforged"),
            "{args:?}: {e:?}"
        );
        assert!(
            !e.contains('\u{1b}') && !e.contains('\r'),
            "{args:?}: {e:?}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = t.join();
}

#[test]
fn raw_ip_loopback_or_clear_error() {
    // As root this runs NETBLT over IP protocol 30 on loopback; otherwise it
    // must fail with one line and exit 3.
    let r = std::process::Command::new(bin())
        .args([
            "recv",
            "--raw-ip",
            "--sink",
            "--once",
            "--listen",
            "127.0.0.1:9998",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (code, out, e) = run(&["bench", "127.0.0.1:9998", "--raw-ip", "--size", "2MB"], T);
    let mut r = r;
    let rc = wait(&mut r, Duration::from_secs(10));
    if code == Some(3) {
        assert!(e.contains("root"), "{e}");
    } else {
        assert_eq!(code, Some(0), "{out}\n{e}");
        assert_eq!(rc, Some(0));
    }
}

#[test]
fn a_directory_in_the_way_at_the_receiver_is_named_so() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("x.bin");
    write(&p, b"payload");
    std::fs::create_dir(dst.path().join("x.bin")).unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let (code, _, e) = run(&["send", p.to_str().unwrap(), &r.addr], T);
    r.stop();
    assert_ne!(code, Some(0), "{e}");
    // Not "name not allowed", which sent users looking at the name.
    assert!(
        e.contains("exists at the receiver and is not a regular file"),
        "{e}"
    );
    assert!(dst.path().join("x.bin").is_dir());
}

/// F13: what a killed process left of a bundle is named, by a receiver
/// started in that directory and by a `get` landing beside it; nothing is
/// removed (another process may own it).
#[test]
fn leftovers_of_a_killed_bundle_are_named_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let left = dir.path().join(".tree.90a8b28c.netblt-bundle");
    std::fs::create_dir(&left).unwrap();
    write(&left.join("f"), b"partial");
    let r = Recv::start(&["--dir", dir.path().to_str().unwrap(), "--serve"]);
    let e = r.stderr_line(T).unwrap_or_default();
    r.stop();
    assert!(
        e.contains(".tree.90a8b28c.netblt-bundle: left by an interrupted bundle"),
        "{e}"
    );
    let served = tempfile::tempdir().unwrap();
    std::fs::create_dir(served.path().join("tree")).unwrap();
    write(&served.path().join("tree/a"), b"a");
    let r = Recv::start(&["--dir", served.path().to_str().unwrap(), "--serve"]);
    let out = dir.path().join("tree");
    let (code, _, e) = run(&["get", &r.addr, "tree", "-o", out.to_str().unwrap()], T);
    r.stop();
    assert_eq!(code, Some(0), "{e}");
    assert!(e.contains("left by an interrupted bundle"), "{e}");
    assert_eq!(std::fs::read(out.join("a")).unwrap(), b"a");
    assert!(left.join("f").exists(), "removed");
}

/// F14: a transfer the receiver refuses before it begins is a line at the
/// receiver too, and a `--once` receiver ends with it (exit 3); before, it
/// said nothing and went on waiting.
#[test]
fn a_refused_transfer_is_a_line_at_the_receiver_and_ends_once() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("x.bin");
    write(&p, b"payload");
    write(&dst.path().join("x.bin"), b"other");
    let r = Recv::start(&["--once", "--dir", dst.path().to_str().unwrap()]);
    let (code, _, e) = run(&["send", p.to_str().unwrap(), &r.addr], T);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("file exists"), "{e}");
    let (rcode, _, rerr) = r.finish(T);
    assert_eq!(rcode, Some(3), "{rerr}");
    assert!(rerr.contains("x.bin <- "), "{rerr}");
    assert!(
        rerr.contains(": refused: file exists (use --force on the receiver)"),
        "{rerr}"
    );
    assert_eq!(std::fs::read(dst.path().join("x.bin")).unwrap(), b"other");
}

/// F25: a one-time code given to a receiver that takes none, and none given
/// to one that waits for one: the library's reasons name no flag, the tool
/// says which to use.
#[test]
fn a_one_time_code_refusal_names_the_flag_to_use() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("c.bin");
    write(&p, b"payload");
    let dir = dst.path().to_str().unwrap();
    let r = Recv::start(&["--dir", dir]);
    let (code, _, e) = run(&["send", p.to_str().unwrap(), &r.addr, "--code"], T);
    assert_eq!(code, Some(1), "{e}");
    assert!(
        e.contains("takes no one-time code: start the receiver with --code"),
        "{e}"
    );
    drop(r);
    let words =
        netblt::crypto::OneTimeCode::generate(&mut netblt::crypto::SeededRandom::from_u64(25))
            .to_string();
    let r = Recv::start(&["--dir", dir, "--code", &words]);
    let (code, _, e) = run(&["send", p.to_str().unwrap(), &r.addr], T);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("waits for a one-time code: use --code"), "{e}");
    assert!(!dst.path().join("c.bin").exists());
}

/// F14: `get -o DIR/` with no such directory fails before anything is
/// fetched, and leaves nothing behind.
#[test]
fn get_into_a_missing_directory_fails_first() {
    let served = tempfile::tempdir().unwrap();
    write(&served.path().join("f.bin"), &data(100_000, 3));
    let here = tempfile::tempdir().unwrap();
    let r = Recv::start(&["--serve", "--dir", served.path().to_str().unwrap()]);
    let out = format!("{}/newdir/", here.path().display());
    let (code, _, e) = run(&["get", &r.addr, "f.bin", "-o", &out], T);
    r.stop();
    assert_eq!(code, Some(3), "{e}");
    assert!(e.contains("newdir/: no such directory"), "{e}");
    assert!(temp_files(here.path()).is_empty());
    assert_eq!(std::fs::read_dir(here.path()).unwrap().count(), 0);
}
