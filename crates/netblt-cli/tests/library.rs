//! The library's public API against the tool: `netblt::send_file` to a
//! `netblt recv` process (the `send_file` example's job), bytes checked.

mod common;

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
