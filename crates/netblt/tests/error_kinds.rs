//! `Error::kind` for real failures on loopback (F20): the reason a program
//! matches on is set where the failure is found, at either end, never read
//! back from the message. Short timers keep each case near a second.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{data, encrypted};
use netblt::{
    ErrorKind, PeerReason, Receiver, ReceiverOptions, ReceiverSummary, Security, SendOptions,
};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn send_options(security: Security) -> SendOptions {
    let mut o = SendOptions::new().with_rate(20_000_000);
    o.params.buffer_size = 64 * 1024;
    o.death_timer = Duration::from_secs(1);
    o.security = security;
    o
}

/// The kinds of the transfers a receiver finished.
type Seen = Arc<Mutex<Vec<Option<ErrorKind>>>>;

/// A receiver keeping files in `dir` on a thread, stopped by the flag; the
/// kinds of its finished transfers go to the returned list.
fn serve(
    dir: &Path,
    security: Security,
) -> (
    SocketAddr,
    Arc<AtomicBool>,
    Seen,
    JoinHandle<Result<ReceiverSummary, netblt::Error>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    let mut opts = ReceiverOptions::new();
    opts.stop = Some(Arc::clone(&stop));
    opts.security = security;
    opts.death_timer = Duration::from_secs(1);
    let s2 = Arc::clone(&seen);
    opts.on_transfer = Some(Arc::new(move |r: &netblt::TransferReport, _: &_| {
        s2.lock().unwrap().push(r.error_kind());
    }));
    let rx = Receiver::bind(loopback(), opts).unwrap();
    let addr = rx.local_addr();
    let dir = dir.to_path_buf();
    (
        addr,
        stop,
        seen,
        std::thread::spawn(move || rx.serve_dir(dir)),
    )
}

#[test]
fn a_file_that_exists_at_the_receiver_is_refused_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(20_000, 1)).unwrap();
    std::fs::write(out.path().join("f.bin"), b"already here").unwrap();
    let (addr, stop, _, h) = serve(out.path(), Security::Insecure);
    let e = netblt::send_file(&src, addr, &send_options(Security::Insecure)).unwrap_err();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::RefusedByPeer(PeerReason::FileExists),
        "{e:?}"
    );
    assert!(
        !e.is_timeout() && !e.is_cancelled() && !e.partial_kept(),
        "{e:?}"
    );
    // The library's message names no flag of the tool.
    assert!(!e.to_string().contains("--"), "{e}");
    // Both ways of asking agree.
    assert_eq!(e.report().and_then(|r| r.error_kind()), Some(e.kind()));
}

#[test]
fn an_unknown_key_and_a_plain_sender_are_refused_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(10_000, 2)).unwrap();
    let out = tempfile::tempdir().unwrap();
    // No authorized_keys at the receiver, and no accept-any.
    let (addr, stop, _, h) = serve(out.path(), encrypted(&rh, false));
    let e = netblt::send_file(&src, addr, &send_options(encrypted(&sh, false))).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::RefusedByPeer(PeerReason::NotAuthorized),
        "{e:?}"
    );
    let e = netblt::send_file(&src, addr, &send_options(Security::Insecure)).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::RefusedByPeer(PeerReason::EncryptionRequired),
        "{e:?}"
    );
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}

/// F25: a one-time code given to a receiver that authenticates by keys,
/// and none given to one that waits for one: each its own kind, so that a
/// tool can say which end to change; the words name no flag of the tool.
#[test]
fn a_one_time_code_refusal_says_which_end_lacks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(10_000, 5)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let words =
        netblt::crypto::OneTimeCode::generate(&mut netblt::crypto::SeededRandom::from_u64(25))
            .to_string();
    let coded = |home: &str| {
        let mut e = netblt::Encryption::default();
        e.key_dir = Some(tmp.path().join(home));
        e.code = Some(words.clone());
        Security::Encrypted(e)
    };
    let (addr, stop, _, h) = serve(out.path(), encrypted(&tmp.path().join("r"), true));
    let e = netblt::send_file(&src, addr, &send_options(coded("s"))).unwrap_err();
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::RefusedByPeer(PeerReason::CodeNotExpected),
        "{e:?}"
    );
    assert!(!e.to_string().contains("--"), "{e}");
    let (addr, stop, _, h) = serve(out.path(), coded("r2"));
    let e = netblt::send_file(
        &src,
        addr,
        &send_options(encrypted(&tmp.path().join("s2"), false)),
    )
    .unwrap_err();
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::RefusedByPeer(PeerReason::CodeRequired),
        "{e:?}"
    );
    assert!(!e.to_string().contains("--"), "{e}");
    assert!(!out.path().join("f.bin").exists());
}

/// F25: `get` to a file that is here fails before asking anyone, as a
/// direct `Error::Local` whose kind is `AlreadyExists` (no field could
/// carry it), in words that name no flag.
#[test]
fn a_get_to_a_file_that_is_here_is_already_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("g.bin");
    std::fs::write(&dest, b"mine").unwrap();
    // Nothing listens there: nothing is asked.
    let nobody: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let e = netblt::get(nobody, "g.bin", &dest, &send_options(Security::Insecure)).unwrap_err();
    assert!(matches!(e, netblt::Error::Local(_)), "{e:?}");
    assert_eq!(
        e.kind(),
        ErrorKind::Local {
            io: Some(std::io::ErrorKind::AlreadyExists)
        },
        "{e:?}"
    );
    assert!(!e.to_string().contains("--"), "{e}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"mine");
}

/// F25: a bundle whose receiver keeps a file of the same name that differs:
/// the receiver's QUIT list reads as `EntriesNotStored { exists: true }`,
/// its lines without the tool's advice.
#[test]
fn a_bundle_entry_that_exists_is_entries_not_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("a"), b"a").unwrap();
    std::fs::write(t.join("b"), b"b").unwrap();
    std::fs::create_dir(out.path().join("t")).unwrap();
    std::fs::write(out.path().join("t/b"), b"old").unwrap();
    let (addr, stop, _, h) = serve(out.path(), Security::Insecure);
    let bundle = netblt::Bundle::walk(&[t]).unwrap();
    let e = netblt::send_bundle(&bundle, addr, &send_options(Security::Insecure)).unwrap_err();
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::AbortedByPeer(PeerReason::EntriesNotStored { exists: true }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.lines().any(|l| l == "t/b: file exists and differs"),
        "{msg}"
    );
    assert!(!msg.contains("--"), "{msg}");
    assert!(!e.partial_kept(), "{e:?}");
    assert_eq!(std::fs::read(out.path().join("t/a")).unwrap(), b"a");
    assert_eq!(std::fs::read(out.path().join("t/b")).unwrap(), b"old");
}

#[test]
fn the_stop_flag_cancels_and_the_receiver_hears_why() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let src = tmp.path().join("big.bin");
    // 4 MB at 20 Mb/s: well over a second, stopped at the first progress.
    std::fs::write(&src, data(4_000_000, 3)).unwrap();
    let (addr, stop, seen, h) = serve(out.path(), Security::Insecure);
    let cancel = Arc::new(AtomicBool::new(false));
    let mut o = send_options(Security::Insecure);
    o.stop = Some(Arc::clone(&cancel));
    let c2 = Arc::clone(&cancel);
    o.progress = Some(Arc::new(move |p: &netblt::Progress| {
        if p.bytes > 0 {
            c2.store(true, Ordering::Relaxed);
        }
    }));
    let e = netblt::send_file(&src, addr, &o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e:?}");
    assert!(
        e.is_cancelled() && e.partial_kept() && !e.is_timeout(),
        "{e:?}"
    );
    // The receiver's report: aborted by its peer, which was cancelled.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [Some(ErrorKind::AbortedByPeer(PeerReason::Cancelled))]
    );
}

#[test]
fn no_answer_to_the_open_is_a_connect_timeout() {
    // A socket that reads nothing: no "port unreachable", no answer.
    let mute = UdpSocket::bind(loopback()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(1_000, 4)).unwrap();
    let mut o = send_options(Security::Insecure);
    o.connect_timeout = Duration::from_millis(500);
    let e = netblt::send_file(&src, mute.local_addr().unwrap(), &o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e:?}");
    assert!(e.is_timeout() && !e.partial_kept(), "{e:?}");
}

/// A path that goes dark once data flows (a relay between the ends that
/// forwards nothing after the client's 200th datagram): the sender's
/// transfer ends as `PeerSilent`, a timeout, after which the receiver keeps
/// its partial copy (F4). (A receiver whose handler is slow does not go
/// silent: the handler runs off the network loop, which keeps the
/// connection alive.)
#[test]
fn a_path_that_goes_dark_is_a_timeout() {
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, _, h) = serve(out.path(), Security::Insecure);
    let relay = common::relay(addr, 200);
    let e = netblt::send_reader(
        std::io::Cursor::new(data(4_000_000, 5)),
        4_000_000,
        "dark",
        relay,
        &send_options(Security::Insecure),
    )
    .unwrap_err();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert_eq!(e.kind(), ErrorKind::PeerSilent, "{e:?}");
    assert!(e.is_timeout() && e.partial_kept(), "{e:?}");
}
