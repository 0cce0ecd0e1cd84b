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
    // The example encrypts, as the tool does (keys from the tests'
    // NETBLT_HOME, which the receiver authorizes).
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once"]);
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

/// `netblt::get` of a directory from `netblt recv --serve` (decision M15):
/// unpacked into the destination, the report counting what arrived; and
/// `get_to_writer` of it, a tar stream with the report saying it was one.
#[test]
fn library_fetches_a_directory_from_netblt_recv() {
    let served = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    write(&served.path().join("tree/a"), &data(1000, 1));
    write(&served.path().join("tree/sub/b"), &data(200_000, 2));
    let r = Recv::start(&["--dir", served.path().to_str().unwrap(), "--serve"]);
    let mut opts = netblt::SendOptions::new();
    opts.security = netblt::Security::encrypted();
    let addr = r.addr.parse().unwrap();
    let report = netblt::get(addr, "tree", dst.path(), &opts).unwrap();
    let files = report.files.expect("a directory's report counts its files");
    assert_eq!((files.files, files.dirs, files.bytes), (2, 2, 201_000));
    assert!(std::fs::read(dst.path().join("tree/sub/b")).unwrap() == data(200_000, 2));
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Shared(std::sync::Arc::clone(&got));
    let report = netblt::get_to_writer(addr, "tree", sink, &opts).unwrap();
    assert_eq!(report.files.map(|f| f.files), Some(2));
    let tar = got.lock().unwrap();
    assert_eq!(tar.len() % 512, 0);
    assert!(tar.windows(10).any(|w| w == b"tree/sub/b"));
    // A file's bytes, as before, and no files report.
    let report = netblt::get_to_writer(addr, "tree/a", Shared(Default::default()), &opts).unwrap();
    assert!(report.files.is_none());
}

/// A writer into shared memory.
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
