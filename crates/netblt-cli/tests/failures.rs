//! Every failure end to end: a full disk and a forbidden directory at the
//! receiver, either end stopped (SIGSTOP) and continued within the death
//! timer, a file that grows or shrinks while it is sent, a name too long
//! for the receiver's file system. (Killed ends: tests/resume.rs and
//! tests/errors.rs.)

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a receiver inside `sh -c SCRIPT` where `$BIN` is netblt and
/// `$ADDR` its address, and sends `file` to it once it listens. Returns the
/// sender's exit code and stderr, and everything the script printed.
fn against(script: &str, file: &std::path::Path) -> ((Option<i32>, String), String) {
    use std::io::{BufRead, BufReader};
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut sh = Command::new("sh")
        .args(["-c", &format!("exec 2>&1; {script}")])
        .env("BIN", bin())
        .env("ADDR", &addr)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = sh.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut text = String::new();
    // Wait until it listens (or gave up).
    while let Ok(l) = rx.recv_timeout(T) {
        text += &l;
        text.push('\n');
        if l.contains("listening") {
            break;
        }
    }
    let (code, _, err) = run(&["send", file.to_str().unwrap(), &addr], T);
    // A receiver that refused the OPEN is still listening: stop it.
    let _ = wait(&mut sh, Duration::from_secs(2));
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(500)) {
        text += &l;
        text.push('\n');
    }
    ((code, err), text)
}

#[test]
fn disk_full_at_the_receiver() {
    if !root() {
        eprintln!("skipped: needs root for a private tmpfs");
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("big");
    write(&f, &data(3_000_000, 1));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // A 1 MiB tmpfs in a mount namespace of its own; what is left on it is
    // listed before it vanishes.
    let script = format!(
        "unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs {d} && \"$BIN\" recv --listen \"$ADDR\" --dir {d} --once; echo rc=$?; echo left: $(ls -A {d})'"
    );
    let ((code, err), text) = against(&script, &f);
    if !text.contains("listening") {
        eprintln!("skipped: no mount namespace here: {text}");
        return;
    }
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("disk full"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(text.contains("disk full (ENOSPC)"), "{text}");
    assert!(text.contains("rc=3"), "local error: {text}");
    // Nothing left: neither the file nor a partial one.
    assert!(text.contains("left:\n"), "{text}");
}

#[test]
fn permission_denied_at_the_receiver() {
    if !root() || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run the receiver as nobody");
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("f");
    write(&f, &data(10_000, 2));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // nobody may look into the directory but not write to it.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // nobody cannot read the tests' key directory: it gets one of its own
    // and accepts any sender (encryption stays on).
    let keys = tempfile::tempdir().unwrap();
    let k = keys.path().display();
    let script = format!(
        "chown 65534 {k} && NETBLT_HOME={k} exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$BIN\" recv --listen \"$ADDR\" --dir {d} --once --accept-any"
    );
    let ((code, err), text) = against(&script, &f);
    assert!(text.contains("listening"), "{text}");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(temp_files(dir.path()).is_empty());
}

/// SIGSTOP one end for a second (the death timer is 4 s), then SIGCONT:
/// the transfer completes.
fn stopped_and_continued(stop_receiver: bool) {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("s");
    let content = data(6_000_000, 3);
    write(&f, &content);
    let r = Recv::start(&[
        "--dir",
        dst.path().to_str().unwrap(),
        "--once",
        "--death-timer",
        "4",
    ]);
    let mut s = spawn(
        &[
            "send",
            f.to_str().unwrap(),
            &r.addr,
            "--rate",
            "40M",
            "--death-timer",
            "4",
        ],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let victim = if stop_receiver { &r.child } else { &s };
    signal(victim, SIGSTOP);
    std::thread::sleep(Duration::from_millis(1000));
    signal(victim, SIGCONT);
    let code = wait(&mut s, T);
    let out = s.wait_with_output().unwrap();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (rc, rout, _) = r.finish(T);
    assert_eq!(rc, Some(0), "{rout}");
    assert!(std::fs::read(dst.path().join("s")).unwrap() == content);
}

#[test]
fn sender_stopped_and_continued_completes() {
    stopped_and_continued(false);
}

#[test]
fn receiver_stopped_and_continued_completes() {
    stopped_and_continued(true);
}

/// Sends `f` slowly (small buffers, 8 Mb/s: the reader is at most a few
/// buffers ahead) and lets `change` act on the file meanwhile.
fn send_while(
    f: &std::path::Path,
    dst: &std::path::Path,
    change: impl FnOnce(),
) -> (Option<i32>, String, String) {
    let r = Recv::start(&["--dir", dst.to_str().unwrap(), "--once"]);
    let mut s = spawn(
        &[
            "send",
            f.to_str().unwrap(),
            &r.addr,
            "--policy",
            "fixed",
            "--rate",
            "8M",
            "--buffer-size",
            "64k",
            "--buffers",
            "2",
        ],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    );
    std::thread::sleep(Duration::from_millis(300));
    change();
    let code = wait(&mut s, T);
    let out = s.wait_with_output().unwrap();
    let (_, rout, _) = r.finish(T);
    (
        code,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        rout,
    )
}

#[test]
fn a_file_that_shrinks_while_sent_fails_clearly() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("shrinks");
    write(&f, &data(1_500_000, 4));
    let (code, err, rout) = send_while(&f, dst.path(), || {
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_len(100_000)
            .unwrap();
    });
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("file shrank while being sent"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(rout.contains("FAILED"), "{rout}");
    assert!(!dst.path().join("shrinks").exists());
}

#[test]
fn a_file_that_grows_while_sent_arrives_as_it_was_at_open() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("grows");
    let content = data(1_500_000, 5);
    write(&f, &content);
    let (code, err, rout) = send_while(&f, dst.path(), || {
        use std::io::Write;
        let mut h = std::fs::File::options().append(true).open(&f).unwrap();
        h.write_all(&data(500_000, 6)).unwrap();
    });
    assert_eq!(code, Some(0), "{err}");
    assert!(rout.contains("verified"), "{rout}");
    assert!(std::fs::read(dst.path().join("grows")).unwrap() == content);
    // ... and the sender says so (F15), as tar says "file changed as we
    // read it": the success line alone did not.
    assert!(
        err.contains(
            "grows: grew while it was sent (now 2.00 MB): the 1.50 MB it had when opened were sent"
        ),
        "{err}"
    );
}

#[test]
fn a_name_too_long_for_the_receiver_is_one_clear_line() {
    let dst = tempfile::tempdir().unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
    let name = "n".repeat(300);
    let out = spawn(
        &["send", "-", &r.addr, "--name", &name],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    )
    .wait_with_output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("name too long for the receiver's file system"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(temp_files(dst.path()).is_empty());
}

/// SIGTERM (a service manager; `netblt emu` at the end of its run) stops a
/// receiver as Ctrl-C does: its report on stdout says why and the exit is
/// non-zero, where it used to die without a word.
#[test]
fn sigterm_stops_a_receiver_with_its_report() {
    use std::io::{BufRead, BufReader};
    let mut r = Recv::start(&["--sink", "--once", "--insecure", "--json"]);
    let mut s = spawn(
        &[
            "bench",
            &r.addr,
            "--size",
            "1G",
            "--rate",
            "20M",
            "--insecure",
            "--json-stream",
            "--interval",
            "0.1",
        ],
        Stdio::null(),
        Stdio::piped(),
        Stdio::null(),
    );
    // Only once the transfer is open (the sender's first interval report):
    // an idle `recv --once` has nothing to report.
    let lines = BufReader::new(s.stdout.take().expect("stdout")).lines();
    let open = lines
        .map_while(Result::ok)
        .any(|l| l.contains("\"event\":\"interval\""));
    assert!(open, "the sender never reported its transfer under way");
    signal(&r.child, SIGTERM);
    let code = wait(&mut r.child, Duration::from_secs(10));
    let _ = s.kill();
    let _ = s.wait();
    let (_, out, err) = r.finish(Duration::from_secs(1));
    assert!(matches!(code, Some(c) if c != 0), "{code:?} {err}");
    assert!(out.contains("receiver interrupted"), "{out}\n{err}");
}
