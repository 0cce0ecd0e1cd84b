//! Resume (`--resume`): an interrupted transfer continues where the
//! receiver's journal of verified 1 MiB units ends; a changed file is sent
//! whole; the whole file is still verified end to end.

mod common;

use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const MIB: usize = 1 << 20;

/// Starts `send FILE ADDR` at 160 Mb/s and SIGKILLs it once the receiver
/// journaled `units` units. 1 MiB buffers: with the 8,192,000-byte ones
/// loopback gets by default (G3), an 8 MiB file is one buffer and a bit,
/// and the kill could come after the end.
fn send_and_kill(file: &Path, addr: &str, dst: &Path, name: &str, units: usize) {
    let mut s = spawn(
        &[
            "send",
            file.to_str().unwrap(),
            addr,
            "--policy",
            "fixed",
            "--rate",
            "160M",
            "--buffer-size",
            "1MiB",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::null(),
    );
    assert!(
        wait_for(T, || journal_units(dst, name) >= units),
        "the receiver never journaled {units} units"
    );
    signal(&s, SIGKILL);
    let _ = s.wait();
    assert!(!dst.join(name).exists(), "no file under the final name");
}

fn send_json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args, T);
    assert_eq!(code, Some(0), "{out}\n{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}"))
}

/// `get ADDR NAME -o OUT --resume --json`, which must succeed.
fn get_resumed(addr: &str, name: &str, out: &Path) -> serde_json::Value {
    let out = out.to_str().unwrap();
    send_json(&["get", addr, name, "-o", out, "--resume", "--json"])
}

/// The resumed share of the file: bytes sent / file size.
fn sent_fraction(v: &serde_json::Value) -> f64 {
    let size = v["bytes"].as_u64().unwrap() as f64;
    let skipped = v["resumed_from"].as_u64().unwrap_or(0) as f64;
    (size - skipped) / size
}

#[test]
fn killed_sender_resumes_with_the_rest_only() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("big");
    let content = data(32 * MIB, 11);
    write(&f, &content);
    let mtime = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--death-timer", "1"]);
    // Interrupted at 60 % (20 of 32 units journaled).
    send_and_kill(&f, &r.addr, dst.path(), "big", 20);
    assert!(
        dst.path().join(".big.netblt-part").exists(),
        "a resumable partial file is left"
    );
    wait_unlocked(dst.path(), "big");
    let v = send_json(&["send", f.to_str().unwrap(), &r.addr, "--resume", "--json"]);
    let frac = sent_fraction(&v);
    eprintln!(
        "resumed after 60 %: sent {:.1} % of the file ({} of {} bytes were there)",
        frac * 100.0,
        v["resumed_from"],
        v["bytes"]
    );
    assert!(frac <= 0.42, "sent {frac} of the file");
    assert_eq!(v["verified"], true);
    assert!(std::fs::read(dst.path().join("big")).unwrap() == content);
    assert!(
        temp_files(dst.path()).is_empty(),
        "{:?}",
        temp_files(dst.path())
    );
    // The sender's modification time and permission bits came along.
    let m = std::fs::metadata(dst.path().join("big")).unwrap();
    assert_eq!(m.modified().unwrap(), mtime);
    // Resumed again once complete: nothing is left to send (M13).
    let v = send_json(&["send", f.to_str().unwrap(), &r.addr, "--resume", "--json"]);
    assert_eq!(sent_fraction(&v), 0.0, "{v}");
    assert!(
        v["digest"].is_null(),
        "nothing was sent, nothing verified: {v}"
    );
    let (code, out, err) = run(&["send", f.to_str().unwrap(), &r.addr, "--resume"], T);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("already there (same size and modification time): nothing sent"));
    // Without --resume the file that is there is still not replaced.
    let (code, _, err) = run(&["send", f.to_str().unwrap(), &r.addr], T);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("file exists"), "{err}");
}

#[test]
fn a_changed_file_is_sent_whole() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("c");
    write(&f, &data(8 * MIB, 12));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--death-timer", "1"]);
    send_and_kill(&f, &r.addr, dst.path(), "c", 3);
    wait_unlocked(dst.path(), "c");
    // New content, same size; the modification time changes too: the
    // receiver's journal no longer matches and says so.
    let new = data(8 * MIB, 13);
    write(&f, &new);
    let (code, out, err) = run(
        &["send", f.to_str().unwrap(), &r.addr, "--resume", "--json"],
        T,
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v.get("resumed_from").is_none(), "{v}");
    assert!(err.contains("discarded"), "a message says why: {err}");
    assert!(std::fs::read(dst.path().join("c")).unwrap() == new);
}

#[test]
fn same_size_and_mtime_but_other_bytes_fail_the_prefix_check() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("p");
    write(&f, &data(8 * MIB, 14));
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    let set = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap()
    };
    set(&f);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--death-timer", "1"]);
    send_and_kill(&f, &r.addr, dst.path(), "p", 3);
    wait_unlocked(dst.path(), "p");
    // Change the first byte and put the old mtime back: only the prefix's
    // hash can tell.
    let mut new = std::fs::read(&f).unwrap();
    new[0] ^= 0xff;
    std::fs::write(&f, &new).unwrap();
    set(&f);
    let v = send_json(&["send", f.to_str().unwrap(), &r.addr, "--resume", "--json"]);
    assert!(v.get("resumed_from").is_none(), "sent whole: {v}");
    assert!(std::fs::read(dst.path().join("p")).unwrap() == new);
}

#[test]
fn killed_receiver_resumes_with_a_new_receiver() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("k");
    let content = data(16 * MIB, 15);
    write(&f, &content);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let mut s = spawn(
        &[
            "send",
            f.to_str().unwrap(),
            &r.addr,
            "--policy",
            "fixed",
            "--rate",
            "160M",
            "--death-timer",
            "2",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    assert!(wait_for(T, || journal_units(dst.path(), "k") >= 8));
    drop(r); // SIGKILL
    let code = wait(&mut s, T);
    assert!(matches!(code, Some(1) | Some(4)), "{code:?}");
    assert!(!dst.path().join("k").exists());
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let v = send_json(&["send", f.to_str().unwrap(), &r.addr, "--resume", "--json"]);
    assert!(v["resumed_from"].as_u64().unwrap() >= 8 * MIB as u64, "{v}");
    assert!(std::fs::read(dst.path().join("k")).unwrap() == content);
}

#[test]
fn get_resumes_too() {
    let srv = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let content = data(16 * MIB, 16);
    write(&srv.path().join("g"), &content);
    let r = Recv::start(&[
        "--dir",
        srv.path().to_str().unwrap(),
        "--serve",
        "--death-timer",
        "1",
    ]);
    let out = here.path().join("g");
    let mut g = spawn(
        &[
            "get",
            &r.addr,
            "g",
            "-o",
            out.to_str().unwrap(),
            "--rate",
            "160M",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::null(),
    );
    assert!(wait_for(T, || journal_units(here.path(), "g") >= 10));
    signal(&g, SIGKILL);
    let _ = g.wait();
    assert!(!out.exists());
    // F15: a `get` without --resume names the partial file it is about to
    // start again from zero (a server stopped at once: nothing fetched).
    let (code, _, err) = run(
        &[
            "get",
            "127.0.0.1:9",
            "g",
            "-o",
            out.to_str().unwrap(),
            "--death-timer",
            "1",
        ],
        T,
    );
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("g: ")
            && err.contains("of an interrupted get are here")
            && err.contains("--resume fetches only the rest"),
        "{err}"
    );
    let v = get_resumed(&r.addr, "g", &out);
    assert!(
        v["resumed_from"].as_u64().unwrap() >= 10 * MIB as u64,
        "{v}"
    );
    assert!(std::fs::read(&out).unwrap() == content);
    assert!(temp_files(here.path()).is_empty());
}

/// `get NAME -o OUT` at 80 Mb/s with 1 MiB buffers (slow enough to be
/// stopped midway), its stderr piped.
fn slow_get(addr: &str, name: &str, out: &std::path::Path) -> std::process::Child {
    spawn(
        &[
            "get",
            addr,
            name,
            "-o",
            out.to_str().unwrap(),
            "--rate",
            "80M",
            "--buffer-size",
            "1MiB",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    )
}

/// F15: a `get` stopped with Ctrl-C (SIGTERM here, handled the same way)
/// says that what arrived is kept and how to fetch only the rest, as
/// `send` says (F14).
#[test]
fn an_interrupted_get_says_how_to_resume() {
    let srv = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    write(&srv.path().join("g"), &data(16 * MIB, 17));
    let r = Recv::start(&["--dir", srv.path().to_str().unwrap(), "--serve"]);
    let out = here.path().join("g");
    let g = slow_get(&r.addr, "g", &out);
    assert!(wait_for(T, || journal_units(here.path(), "g") >= 2));
    signal(&g, SIGTERM);
    let o = g.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("netblt: g: interrupted"), "{err}");
    assert!(
        err.contains(
            "g: what arrived is kept here; the same command with --resume fetches only the rest"
        ),
        "{err}"
    );
    assert!(here.path().join(".g.netblt-part").exists());
}

/// F12: `get --resume` of a file that arrived whole before is done (the
/// server's file has the same size and modification time); one the server
/// changed since is refused without --force, never silently replaced.
#[test]
fn get_resume_of_a_complete_file_sends_nothing() {
    let srv = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let content = data(3 * MIB, 17);
    write(&srv.path().join("g"), &content);
    let r = Recv::start(&["--dir", srv.path().to_str().unwrap(), "--serve"]);
    let out = here.path().join("g");
    let get = |extra: &[&str]| {
        let mut args = vec!["get", &r.addr, "g", "-o", out.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        run(&args, T)
    };
    let (code, _, e) = get(&[]);
    assert_eq!(code, Some(0), "{e}");
    // Without --resume the file is in the way, as before.
    let (code, _, e) = get(&[]);
    assert_ne!(code, Some(0));
    assert!(e.contains("file exists"), "{e}");
    let v = get_resumed(&r.addr, "g", &out);
    assert_eq!(
        v["resumed_from"].as_u64(),
        Some(content.len() as u64),
        "{v}"
    );
    assert_eq!(sent_fraction(&v), 0.0, "{v}");
    assert_eq!(v["datagrams_received"].as_u64(), Some(0), "{v}");
    // The server's file changes (a new time): refused, the copy kept.
    let f = std::fs::File::options()
        .write(true)
        .open(srv.path().join("g"))
        .unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    let (code, _, e) = get(&["--resume"]);
    assert_ne!(code, Some(0), "{e}");
    assert!(e.contains("use --force to replace it"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), content);
    let (code, _, e) = get(&["--resume", "--force"]);
    assert_eq!(code, Some(0), "{e}");
    assert!(temp_files(here.path()).is_empty());
}

/// "12.34 Mb/s" (or kb/s, Gb/s) as bits per second.
fn rate_of(s: &str) -> f64 {
    let (n, unit) = s.split_once(' ').unwrap_or_else(|| panic!("{s}"));
    let scale = match unit {
        "Gb/s" => 1e9,
        "Mb/s" => 1e6,
        "kb/s" => 1e3,
        _ => 1.0,
    };
    n.parse::<f64>().unwrap_or_else(|_| panic!("{s}")) * scale
}

/// F18: the receiver's rate after a resume is of the bytes that travelled,
/// as the sender's (it counted the whole file, 124 Mb/s on a 100 Mb/s
/// link), and its line has no "(steady -)": a receiver never knows one.
#[test]
fn a_resumed_receivers_rate_counts_what_travelled() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("big");
    write(&f, &data(32 * MIB, 21));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--death-timer", "1"]);
    send_and_kill(&f, &r.addr, dst.path(), "big", 20);
    wait_unlocked(dst.path(), "big");
    // Paced, so that the data phase is most of the receiver's wall time.
    let v = send_json(&[
        "send",
        f.to_str().unwrap(),
        &r.addr,
        "--resume",
        "--json",
        "--policy",
        "fixed",
        "--rate",
        "80M",
    ]);
    let resumed = v["resumed_from"].as_u64().unwrap();
    assert!(resumed >= 20 * MIB as u64, "{v}");
    let rout = r.stop();
    let line = rout
        .lines()
        .find(|l| l.starts_with("big <- ") && l.contains("resumed:"))
        .unwrap_or_else(|| panic!("{rout}"));
    assert!(!line.contains("steady"), "{line}");
    // "big <- PEER: 33.55 MB in 0.52 s, 198.12 Mb/s, verified, ..."
    let (_, after) = line.split_once(" in ").unwrap();
    let (secs, rest) = after.split_once(" s, ").unwrap();
    let rate = rate_of(rest.split(',').next().unwrap());
    let secs: f64 = secs.parse().unwrap();
    // The whole file over the data's time (at most the wall time) would
    // make rate x wall at least the file's size; the bytes that travelled
    // (12 of 32 MiB) make it about that much.
    let bytes = (32 * MIB) as f64;
    assert!(
        rate * secs / 8.0 < 0.7 * bytes,
        "{line}: {rate} b/s over {secs} s is the whole file's rate"
    );
}

/// F18: a sender whose receiver was interrupted (and a `get` whose server
/// went away) is told that the partial copy is kept and how to continue,
/// as after its own Ctrl-C.
#[test]
fn other_interruptions_say_how_to_resume() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("h");
    write(&f, &data(16 * MIB, 22));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let s = spawn(
        &[
            "send",
            f.to_str().unwrap(),
            &r.addr,
            "--policy",
            "fixed",
            "--rate",
            "80M",
            "--buffer-size",
            "1MiB",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    assert!(wait_for(T, || journal_units(dst.path(), "h") >= 2));
    let _ = r.stop(); // SIGINT: "receiver interrupted"
    let o = s.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("receiver interrupted"), "{err}");
    assert!(
        err.contains("h: the receiver keeps what arrived; the same command with --resume sends only the rest"),
        "{err}"
    );
    assert!(dst.path().join(".h.netblt-part").exists());

    // A `get` whose server is killed: port unreachable, exit 4.
    let here = tempfile::tempdir().unwrap();
    let srv = Recv::start(&["--dir", src.path().to_str().unwrap(), "--serve"]);
    let out = here.path().join("h");
    let g = slow_get(&srv.addr, "h", &out);
    assert!(wait_for(T, || journal_units(here.path(), "h") >= 2));
    drop(srv); // SIGKILL
    let o = g.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(1) | Some(4)), "{err}");
    assert!(
        err.contains(
            "h: what arrived is kept here; the same command with --resume fetches only the rest"
        ),
        "{err}"
    );
}
