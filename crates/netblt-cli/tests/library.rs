//! The library's public API against the tool: `netblt::send_file` to a
//! `netblt recv` process, and the `send_file` example itself doing it,
//! bytes checked.

mod common;

/// The library's `send_file` example, compiled into this test as it is.
#[allow(dead_code)] // its `main`
#[path = "../../netblt/examples/send_file.rs"]
mod send_file_example;

use common::{data, write, Recv, T};

#[test]
fn library_sends_a_file_to_netblt_recv() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let bytes = data(250_000, 5);
    let file = src.path().join("lib.bin");
    write(&file, &bytes);
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
    let mut opts = netblt::SendOptions::new().with_rate(200_000_000);
    opts.params.buffer_size = 64 * 1024;
    // The tool encrypts by default; the library asks for it (K14). Keys
    // from the tests' NETBLT_HOME, which the receiver authorizes.
    opts.security = netblt::Security::encrypted();
    let report = netblt::send_file(&file, r.addr.parse().unwrap(), &opts).unwrap();
    assert!(report.verified, "{report:?}");
    let (code, out, err) = r.finish(T);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("lib.bin <-") && out.contains("verified"),
        "{out}"
    );
    assert!(std::fs::read(dst.path().join("lib.bin")).unwrap() == bytes);
}

#[test]
fn the_send_file_example_sends_a_file_to_netblt_recv() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let bytes = data(300_000, 8);
    let file = src.path().join("example.bin");
    write(&file, &bytes);
    // The library is insecure by default (K14): so is this receiver.
    let r = Recv::start(&[
        "--dir",
        dst.path().to_str().unwrap(),
        "--once",
        "--insecure",
    ]);
    let args = [
        file.to_str().unwrap().to_string(),
        r.addr.clone(),
        "200M".into(),
    ];
    let code = send_file_example::run(&args);
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let (code, out, err) = r.finish(T);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("example.bin <-") && out.contains("verified"),
        "{out}"
    );
    assert!(std::fs::read(dst.path().join("example.bin")).unwrap() == bytes);
}
