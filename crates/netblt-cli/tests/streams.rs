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
    // No rate for no data (F15: "0 B in 0.01 s, 28.6 kb/s" was the
    // handshake's and the digest's).
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains("0 B in") && line.contains(", -, verified"),
        "{line}"
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

/// F14: `get -o /dev/null` (a speed test) and `-o FIFO` write the data in
/// order into the device, as `-o -` writes standard output; before, they
/// were refused ("file exists", then with --force "not a regular file").
#[test]
fn get_into_a_device_or_a_fifo() {
    let served = tempfile::tempdir().unwrap();
    let bytes = data(300_000, 9);
    write(&served.path().join("f.bin"), &bytes);
    let r = Recv::start(&["--serve", "--dir", served.path().to_str().unwrap()]);
    let (code, out, e) = run(&["get", &r.addr, "f.bin", "-o", "/dev/null"], T);
    assert_eq!(code, Some(0), "{e}");
    assert!(
        out.contains("verified") && out.contains("written to /dev/null"),
        "{out}"
    );
    let here = tempfile::tempdir().unwrap();
    let fifo = here.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let (code, _, e) = run(&["get", &r.addr, "f.bin", "-o", fifo.to_str().unwrap()], T);
    r.stop();
    assert_eq!(code, Some(0), "{e}");
    assert!(reader.join().unwrap() == bytes);
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::os::raw::c_char, mode: u32) -> i32;
}
