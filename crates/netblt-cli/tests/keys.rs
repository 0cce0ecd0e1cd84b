//! `authorized_keys` followed by a running receiver (decision K26): each
//! end has its own key directory, as two hosts would (so not `bin()`, which
//! sets up the shared one the other tests use).

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const NETBLT: &str = env!("CARGO_BIN_EXE_netblt");

/// `netblt ARGS` with its own key directory, to completion (at most `T`).
fn netblt(home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    run_in(Some(home), args, T)
}

/// A receiver killed when the test ends, however it ends.
struct Receiver {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Receiver {
    fn start(home: &Path, addr: &str, dir: &Path) -> Receiver {
        let mut child = Command::new(NETBLT)
            .env("NETBLT_HOME", home)
            .args(["recv", "--listen", addr, "--dir", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn recv");
        let err = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let r = Receiver { child, lines };
        let first = r
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("recv did not start");
        assert!(first.contains("listening"), "unexpected: {first}");
        r
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_key_added_to_authorized_keys_counts_without_restarting_the_receiver() {
    let (rhome, shome) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (one, two) = (src.path().join("one"), src.path().join("two"));
    write(&one, &data(200_000, 1));
    write(&two, &data(100_000, 2));
    // The sender's `netblt id` line (its key pair made on first use).
    let (code, id_line, err) = netblt(shome.path(), &["id"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(id_line.starts_with("netblt:"), "{id_line}");
    // The receiver starts with no authorized_keys: nobody is accepted.
    let addr = format!("127.0.0.1:{}", free_port());
    let mut recv = Receiver::start(rhome.path(), &addr, dst.path());
    let send = |file: &Path| netblt(shome.path(), &["send", file.to_str().unwrap(), &addr]);
    let (code, _, err) = send(&one);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is not authorized"), "{err}");
    assert!(!dst.path().join("one").exists());
    // The hint's advice, followed while the receiver runs: the next
    // transfer gets in.
    let ak = rhome.path().join("authorized_keys");
    let mut f = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&ak)
        .unwrap();
    f.write_all(id_line.as_bytes()).unwrap();
    drop(f);
    let (code, _, err) = send(&one);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read(dst.path().join("one")).unwrap(),
        data(200_000, 1)
    );
    // The key removed: refused from the next handshake on.
    std::fs::write(&ak, "# nobody\n").unwrap();
    let (code, _, err) = send(&two);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is not authorized"), "{err}");
    assert!(!dst.path().join("two").exists());
    assert!(recv.running(), "the same receiver all along");
    let lines: Vec<String> = recv.lines.try_iter().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("is not in authorized_keys")),
        "{lines:?}"
    );
}
