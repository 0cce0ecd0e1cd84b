//! A directory's large files leave its bundle and travel after it on their
//! own (decision F19): they arrive as a bundle's files do (name, bytes,
//! mode, time; the directories' times too), and an interrupted one keeps
//! its partial copy at the receiver, which `send DIR --resume` continues.
//! The threshold is set low (`--resumable-min 1M`) so that a few MB do.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

const MIB: usize = 1 << 20;

/// The JSON reports a `send --json` printed, one per line (one per
/// connection), which must have succeeded.
fn reports(args: &[&str]) -> Vec<serde_json::Value> {
    let (code, out, err) = run(args, T);
    assert_eq!(code, Some(0), "{out}\n{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect()
}

/// The report named `name`.
fn named<'a>(rs: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    rs.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no report of {name}: {rs:?}"))
}

/// Small files in `t/`, one large one in `t/sub/big` of `big` bytes, with
/// modes and times to keep.
fn tree(root: &Path, big: usize) -> Vec<u8> {
    let t = root.join("t");
    for i in 0..5 {
        write(&t.join(format!("s{i}")), &data(20_000, i));
    }
    let content = data(big, 77);
    let b = t.join("sub/big");
    write(&b, &content);
    std::fs::set_permissions(&b, PermissionsExt::from_mode(0o640)).unwrap();
    set_mtime(&b, 1_500_000_000_123_456_789);
    set_mtime(&t.join("sub"), 1_400_000_000_000_000_001);
    content
}

#[test]
fn a_large_file_leaves_the_bundle_and_arrives_on_its_own() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let content = tree(src.path(), 3 * MIB);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let t = src.path().join("t");
    let rs = reports(&[
        "send",
        t.to_str().unwrap(),
        &r.addr,
        "--resumable-min",
        "1M",
        "--json",
    ]);
    // The bundle carried the small files, the large one went alone (a
    // single file's report has no `files`), then the directories again.
    let bundle = named(&rs, "t");
    assert_eq!(bundle["files"]["files"], 5, "{bundle}");
    assert_eq!(bundle["files"]["bytes"], 100_000, "{bundle}");
    let big = named(&rs, "t/sub/big");
    assert!(big["files"].is_null(), "{big}");
    assert_eq!(big["bytes"], 3 * MIB, "{big}");
    assert_eq!(big["verified"], true, "{big}");
    assert_eq!(named(&rs, "t (directories)")["files"]["dirs"], 2);
    assert_eq!(rs.len(), 3, "{rs:?}");
    // Everything as it was at the sender, the directory's time after the
    // large file landed in it included.
    assert_eq!(listing(&t), listing(&dst.path().join("t")));
    assert_eq!(
        std::fs::read(dst.path().join("t/sub/big")).unwrap(),
        content
    );
    assert!(temp_files(dst.path()).is_empty());

    // --ignore-times keeps every file in the bundle, which compares the
    // large one with what is there, where on its own it is refused.
    let rs = reports(&[
        "send",
        t.to_str().unwrap(),
        &r.addr,
        "--ignore-times",
        "--json",
    ]);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["files"]["files"], 6, "{rs:?}");

    // The default keeps a 3 MiB file in the bundle; `never` keeps every
    // file there; a bad size is one line and exit 2.
    let again = src.path().join("u");
    std::fs::rename(&t, &again).unwrap();
    let rs = reports(&["send", again.to_str().unwrap(), &r.addr, "--json"]);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["files"]["files"], 6);
    let (code, _, err) = run(
        &[
            "send",
            again.to_str().unwrap(),
            &r.addr,
            "--resumable-min",
            "lots",
        ],
        T,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("'never'"), "{err}");
    // A one-time code opens one connection: not enough for files on their
    // own.
    let (code, _, err) = run(
        &[
            "send",
            again.to_str().unwrap(),
            &r.addr,
            "--code",
            "--resumable-min",
            "1M",
        ],
        T,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("good for one"), "{err}");
}

/// Interrupted while the large file is on its way (the bundle done): the
/// receiver keeps its partial copy, the hint says how to continue, and
/// `send DIR --resume` sends only the rest of it.
#[test]
fn an_interrupted_large_file_resumes_with_the_rest_only() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let content = tree(src.path(), 16 * MIB);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--death-timer", "1"]);
    let t = src.path().join("t");
    // 1 MiB buffers at 160 Mb/s: 16 MiB take 0.8 s, and the journal says
    // how far it got (loopback's default 8 MB buffers are two).
    let send = spawn(
        &[
            "send",
            t.to_str().unwrap(),
            &r.addr,
            "--resumable-min",
            "1M",
            "--policy",
            "fixed",
            "--rate",
            "160M",
            "--buffer-size",
            "1MiB",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    let sub = dst.path().join("t/sub");
    assert!(
        wait_for(T, || journal_units(&sub, "big") >= 6),
        "the receiver never journaled 6 units"
    );
    // SIGTERM is handled as Ctrl-C.
    signal(&send, SIGTERM);
    let o = send.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("t/sub/big: interrupted"), "{err}");
    assert!(
        err.contains("t/sub/big: the receiver keeps what arrived; the same command with --resume sends only the rest"),
        "{err}"
    );
    assert!(sub.join(".big.netblt-part").exists(), "{err}");
    assert!(!sub.join("big").exists());
    // The small files had arrived with the bundle.
    assert_eq!(
        std::fs::read(dst.path().join("t/s4")).unwrap(),
        data(20_000, 4)
    );
    wait_unlocked(&sub, "big");
    let rs = reports(&[
        "send",
        t.to_str().unwrap(),
        &r.addr,
        "--resumable-min",
        "1M",
        "--resume",
        "--json",
    ]);
    let big = named(&rs, "t/sub/big");
    let from = big["resumed_from"].as_u64().unwrap_or(0);
    eprintln!("resumed: {from} of {} bytes were there", 16 * MIB);
    assert!(from >= 6 * MIB as u64, "{big}");
    assert_eq!(big["verified"], true, "{big}");
    // The small files, there whole, were left out (M14); the directories
    // went last, in the bundle that says so.
    let last = named(&rs, "t");
    assert_eq!(last["files"]["files"], 0, "{last}");
    assert_eq!(last["files"]["unchanged"], 5, "{last}");
    assert_eq!(rs.len(), 2, "{rs:?}");
    assert_eq!(
        std::fs::read(dst.path().join("t/sub/big")).unwrap(),
        content
    );
    assert_eq!(listing(&t), listing(&dst.path().join("t")));
    assert!(temp_files(dst.path()).is_empty());
}

/// Interrupted in the bundle, before the large file: the hint says what
/// the receiver keeps and what it does not.
#[test]
fn an_interrupted_bundle_says_its_large_files_keep_what_arrives() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    tree(src.path(), 2 * MIB);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let t = src.path().join("t");
    // 100 kB at 400 kb/s: two seconds to be interrupted in, once the
    // directory's temporary name says the bundle has begun.
    let send = slow_send(&t, &r.addr, dst.path());
    signal(&send, SIGTERM);
    let o = send.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("t: the receiver keeps no part of an interrupted bundle; the same command sends again what it does not have whole; its files of 1.00 MB and more travel on their own after it, and the receiver keeps what arrives of them for the same command with --resume"),
        "{err}"
    );
    // The large file was not begun.
    assert!(!err.contains("t/sub/big"), "{err}");
}

/// A large file replaced by a link (or a FIFO) after the walk, while the
/// bundle is on its way, is refused when its turn comes, as the bundle
/// refuses its own files: never followed out of the directory, and the
/// FIFO does not hang the sender. A link given on the command line is
/// still followed, in the bundle and on its own.
#[test]
fn a_large_file_replaced_by_a_link_is_not_followed() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    tree(src.path(), 2 * MIB);
    let t = src.path().join("t");
    write(&t.join("zfifo"), &data(2 * MIB, 5));
    let outside = src.path().join("outside");
    write(&outside, &data(2 * MIB, 9));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    // 100 kB at 400 kb/s: two seconds in which to swap the files, once the
    // bundle has begun (the walk is done).
    let send = slow_send(&t, &r.addr, dst.path());
    let big = t.join("sub/big");
    std::fs::remove_file(&big).unwrap();
    std::os::unix::fs::symlink(&outside, &big).unwrap();
    let fifo = t.join("zfifo");
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = send.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("t/sub/big: ") && err.contains("not a regular file (a symbolic link)"),
        "{err}"
    );
    assert!(err.contains("t/zfifo: "), "{err}");
    assert!(!dst.path().join("t/sub/big").exists(), "{err}");
    assert!(!dst.path().join("t/zfifo").exists(), "{err}");
    // The bundle's files arrived.
    assert_eq!(
        std::fs::read(dst.path().join("t/s4")).unwrap(),
        data(20_000, 4)
    );

    // Links given on the command line are followed, with another path (a
    // bundle) and as a large file on its own.
    let small = src.path().join("small");
    write(&small, &data(1000, 3));
    let link = src.path().join("ln");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    for (min, n) in [("never", 1), ("1M", 2)] {
        let out = tempfile::tempdir().unwrap();
        let r = Recv::start(&["--dir", out.path().to_str().unwrap()]);
        let rs = reports(&[
            "send",
            link.to_str().unwrap(),
            small.to_str().unwrap(),
            &r.addr,
            "--resumable-min",
            min,
            "--json",
        ]);
        assert_eq!(rs.len(), n, "{rs:?}");
        assert_eq!(
            std::fs::read(out.path().join("ln")).unwrap(),
            data(2 * MIB, 9)
        );
        assert_eq!(
            std::fs::read(out.path().join("small")).unwrap(),
            data(1000, 3)
        );
    }
}

/// `send T ADDR --resumable-min 1M` at 400 kb/s (the bundle's 100 kB take
/// two seconds), returned once the receiver's bundle directory in `dst`
/// says the bundle has begun (the walk is done).
fn slow_send(t: &std::path::Path, addr: &str, dst: &std::path::Path) -> std::process::Child {
    let send = spawn(
        &[
            "send",
            t.to_str().unwrap(),
            addr,
            "--resumable-min",
            "1M",
            "--policy",
            "fixed",
            "--rate",
            "400k",
            "--buffer-size",
            "16KiB",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    let begun = || {
        std::fs::read_dir(dst)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".netblt-bundle"))
    };
    assert!(wait_for(T, begun), "the bundle never began");
    send
}

/// F23: a receiver that stops answering while a large file goes (SIGSTOP):
/// the file fails on the sender's death timer, and the command stops there
/// (one line for the files not tried), instead of waiting out the OPEN
/// timer (27 s) for each further large file and for the directories' pass.
#[test]
fn a_receiver_gone_silent_ends_the_command() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    tree(src.path(), 2 * MIB);
    let t = src.path().join("t");
    write(&t.join("zbig"), &data(2 * MIB, 6));
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let send = spawn(
        &[
            "send",
            t.to_str().unwrap(),
            &r.addr,
            "--resumable-min",
            "1M",
            "--policy",
            "fixed",
            "--rate",
            "2M",
            "--buffer-size",
            "64KiB",
            "--death-timer",
            "2",
        ],
        Stdio::null(),
        Stdio::null(),
        Stdio::piped(),
    );
    let part = dst.path().join("t/sub/.big.netblt-part");
    // Data written, so the handshake is over: stopped before it, the
    // receiver would be "no answer" (exit 4), not silent (exit 1).
    let flowing = || std::fs::metadata(&part).is_ok_and(|m| m.len() > 0);
    assert!(wait_for(T, flowing), "the large file's data never came");
    signal(&r.child, SIGSTOP);
    let o = send.wait_with_output().unwrap();
    signal(&r.child, SIGCONT);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the receiver does not answer: 1 more file(s) not tried"),
        "{err}"
    );
    // Neither the next file nor the directories' pass was opened.
    assert!(!err.contains("OPEN") && !err.contains("zbig"), "{err}");
    let _ = r.stop();
}

/// F24: a receiver started with `--once` takes one transfer, and says so
/// in its answer to the check of what it has: the sender keeps the large
/// files in the bundle, which arrives whole. Before, the large file found
/// nobody listening after the bundle (exit 4; the sparse 4 GiB file in
/// bundle.rs, in CI).
#[test]
fn a_receiver_taking_one_transfer_gets_one_bundle() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let content = tree(src.path(), 2 * MIB);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
    let t = src.path().join("t");
    let rs = reports(&[
        "send",
        t.to_str().unwrap(),
        &r.addr,
        "--resumable-min",
        "1M",
        "--json",
    ]);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["files"]["files"], 6, "{rs:?}");
    let (code, _, err) = r.finish(T);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read(dst.path().join("t/sub/big")).unwrap(),
        content
    );
}
