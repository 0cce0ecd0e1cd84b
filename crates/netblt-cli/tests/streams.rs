//! Streams: `tar c dir | netblt send - HOST --name NAME`, `netblt recv
//! --stdout`, `netblt get HOST NAME -o -`.

mod common;

use common::*;
use std::io::Read;
use std::process::{Command, Stdio};

/// `tar c` of a small tree, as bytes and as a piped child.
fn tree() -> tempfile::TempDir {
    let src = tempfile::tempdir().unwrap();
    write(&src.path().join("d/a.bin"), &data(300_000, 1));
    write(&src.path().join("d/sub/b.txt"), b"hello");
    src
}

fn tar(src: &std::path::Path) -> std::process::Child {
    Command::new("tar")
        .args(["c", "-C", src.to_str().unwrap(), "d"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("tar")
}

fn tar_bytes(src: &std::path::Path) -> Vec<u8> {
    let out = tar(src).wait_with_output().unwrap();
    out.stdout
}

#[test]
fn tar_piped_into_send_dash_arrives_whole() {
    let src = tree();
    let dst = tempfile::tempdir().unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
    let mut t = tar(src.path());
    let stdin = Stdio::from(t.stdout.take().unwrap());
    let sender = spawn(
        &["send", "-", &r.addr, "--name", "d.tar", "--json"],
        stdin,
        Stdio::piped(),
        Stdio::piped(),
    );
    let out = sender.wait_with_output().unwrap();
    let _ = t.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let want = tar_bytes(src.path());
    assert_eq!(
        v["bytes"],
        want.len() as u64,
        "the stream's length is reported"
    );
    assert_eq!(v["verified"], true);
    let (code, _, err) = r.finish(T);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::read(dst.path().join("d.tar")).unwrap() == want);
    assert!(temp_files(dst.path()).is_empty());
}

#[test]
fn recv_stdout_writes_the_stream_in_order() {
    let src = tree();
    let mut r = Recv::start(&["--stdout"]);
    let mut rout = r.child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = rout.read_to_end(&mut v);
        v
    });
    let want = tar_bytes(src.path());
    // Several buffers, with a buffer size that is not a multiple of the
    // packet size.
    let mut sender = spawn(
        &[
            "send",
            "-",
            &r.addr,
            "--name",
            "d.tar",
            "--buffer-size",
            "100000",
        ],
        Stdio::piped(),
        Stdio::piped(),
        Stdio::piped(),
    );
    {
        use std::io::Write;
        let mut i = sender.stdin.take().unwrap();
        i.write_all(&want).unwrap();
    }
    let out = sender.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, _, err) = r.finish(T);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("verified"), "the report goes to stderr: {err}");
    let got = reader.join().unwrap();
    assert!(got == want, "{} bytes, want {}", got.len(), want.len());
}

#[test]
fn empty_stdin_is_an_empty_file() {
    let dst = tempfile::tempdir().unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
    let out = spawn(
        &["send", "-", &r.addr, "--name", "empty"],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    )
    .wait_with_output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, _, _) = r.finish(T);
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read(dst.path().join("empty")).unwrap().len(), 0);
}

#[test]
fn send_dash_needs_a_name_and_stands_alone() {
    let (code, _, err) = run(&["send", "-", "127.0.0.1:9"], T);
    assert_eq!(code, Some(2));
    assert!(err.contains("--name"), "{err}");
    let (code, _, err) = run(&["send", "-", "x", "127.0.0.1:9", "--name", "n"], T);
    assert_eq!(code, Some(2));
    assert!(err.contains("only source"), "{err}");
}

#[test]
fn get_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let want = data(2_500_000, 9);
    write(&dir.path().join("f.bin"), &want);
    let r = Recv::start(&["--dir", dir.path().to_str().unwrap(), "--serve"]);
    let out = Command::new(bin())
        .args(["get", &r.addr, "f.bin", "-o", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == want);
    assert!(String::from_utf8_lossy(&out.stderr).contains("verified"));
}
