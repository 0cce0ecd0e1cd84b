//! A NAT that rebinds its mapping in the middle of a transfer (users' ask
//! 7 in peers.md: NAT traversal): the client's packets reach the receiver
//! from a new address and port, and what the receiver sends to the old one
//! is lost. An encrypted transfer follows the client to its new address
//! (docs/security.md, "Address changes"); a plaintext one cannot, since
//! anyone could claim to be the client, and dies by its death timer.
//!
//! The NAT is a UDP relay on loopback: it listens at 127.0.0.2 on the
//! receiver's port and talks to the receiver from 127.0.0.3, from a fresh
//! port once it has forwarded `REBIND_AFTER` datagrams. (A port forward to
//! another port works too since decision Z25: the last test.)

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{data, encrypted};
use netblt::{JunkCounts, Receiver, ReceiverOptions, Security, SendOptions};

/// Datagrams from the client forwarded before the mapping changes.
const REBIND_AFTER: u64 = 150;

fn send_options(security: Security) -> SendOptions {
    let mut o = SendOptions::new().with_rate(100_000_000);
    o.params.buffer_size = 64 * 1024;
    o.death_timer = Duration::from_secs(2);
    o.security = security;
    o
}

struct Nat {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Datagrams the receiver sent to the old mapping, lost.
    lost_to_old: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Nat {
    fn start(server: SocketAddr) -> Nat {
        let front = Arc::new(
            UdpSocket::bind(SocketAddr::new([127, 0, 0, 2].into(), server.port())).unwrap(),
        );
        front
            .set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let back = || {
            let s = UdpSocket::bind("127.0.0.3:0").unwrap();
            s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
            Arc::new(s)
        };
        let mapping = Arc::new(Mutex::new(back()));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let lost_to_old = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        {
            // Client -> receiver, through the current mapping.
            let (front, mapping, client, stop) =
                (front.clone(), mapping.clone(), client.clone(), stop.clone());
            let lost = lost_to_old.clone();
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 70_000];
                let mut n_fwd = 0u64;
                // The old mapping, kept open but no longer forwarded: what
                // the receiver sends there is counted and dropped.
                let mut old: Option<Arc<UdpSocket>> = None;
                while !stop.load(Ordering::Relaxed) {
                    if let Some(o) = &old {
                        o.set_nonblocking(true).unwrap();
                        while o.recv_from(&mut buf).is_ok() {
                            lost.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let Ok((n, from)) = front.recv_from(&mut buf) else {
                        continue;
                    };
                    *client.lock().unwrap() = Some(from);
                    n_fwd += 1;
                    if n_fwd == REBIND_AFTER {
                        let mut m = mapping.lock().unwrap();
                        old = Some(std::mem::replace(&mut *m, back()));
                    }
                    let m = mapping.lock().unwrap().clone();
                    let _ = m.send_to(&buf[..n], server);
                }
            }));
        }
        {
            // Receiver -> client, from whatever the current mapping is.
            let (front, mapping, client, stop) =
                (front.clone(), mapping.clone(), client.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 70_000];
                while !stop.load(Ordering::Relaxed) {
                    let m = mapping.lock().unwrap().clone();
                    let Ok((n, _)) = m.recv_from(&mut buf) else {
                        continue;
                    };
                    if let Some(c) = *client.lock().unwrap() {
                        let _ = front.send_to(&buf[..n], c);
                    }
                }
            }));
        }
        Nat {
            addr: front.local_addr().unwrap(),
            stop,
            lost_to_old,
            threads,
        }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        self.lost_to_old.load(Ordering::Relaxed)
    }
}

/// A receiver serving files on a thread: where it listens, its stop flag,
/// the counters it reported with each transfer, and its thread.
struct Served {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<JunkCounts>>>,
    thread: JoinHandle<()>,
}

impl Served {
    fn start(dir: &Path, security: Security) -> Served {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut opts = ReceiverOptions::new();
        opts.serve = true;
        opts.stop = Some(Arc::clone(&stop));
        opts.security = security;
        opts.death_timer = Duration::from_secs(2);
        let s2 = seen.clone();
        opts.on_transfer = Some(Arc::new(move |_r, j| s2.lock().unwrap().push(*j)));
        let rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), opts).unwrap();
        let addr = rx.local_addr();
        let dir: PathBuf = dir.to_path_buf();
        let thread = std::thread::spawn(move || {
            let _ = rx.serve_dir(dir);
        });
        Served {
            addr,
            stop,
            seen,
            thread,
        }
    }

    /// Stops it; the counters of each transfer it reported.
    fn finish(self) -> Vec<JunkCounts> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        let v = self.seen.lock().unwrap().clone();
        v
    }
}

/// Key directories of the two ends (keys are made on first use).
fn keys(root: &Path) -> (PathBuf, PathBuf) {
    (root.join("r"), root.join("s"))
}

#[test]
fn an_encrypted_send_follows_the_client_to_its_new_address() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = keys(tmp.path());
    let bytes = data(3_000_000, 11);
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, &bytes).unwrap();
    let out = tempfile::tempdir().unwrap();
    let rx = Served::start(out.path(), encrypted(&rh, true));
    let nat = Nat::start(rx.addr);
    let r = netblt::send_file(&src, nat.addr, &send_options(encrypted(&sh, true)));
    let lost = nat.finish();
    let seen = rx.finish();
    let r = r.unwrap();
    assert!(r.succeeded() && r.verified, "{r:?}");
    assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), bytes);
    assert_eq!(
        seen[0].migrated, 1,
        "{seen:?}; lost to the old mapping: {lost}"
    );
}

#[test]
fn an_encrypted_get_follows_the_client_to_its_new_address() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = keys(tmp.path());
    let bytes = data(3_000_000, 12);
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("g.bin"), &bytes).unwrap();
    let rx = Served::start(served.path(), encrypted(&rh, true));
    let nat = Nat::start(rx.addr);
    let dest = tempfile::tempdir().unwrap();
    let opts = send_options(encrypted(&sh, true));
    let r = netblt::get(nat.addr, "g.bin", dest.path(), &opts);
    nat.finish();
    let seen = rx.finish();
    let r = r.unwrap();
    assert!(r.succeeded() && r.verified, "{r:?}");
    assert_eq!(std::fs::read(dest.path().join("g.bin")).unwrap(), bytes);
    assert_eq!(seen[0].migrated, 1, "{seen:?}");
}

#[test]
fn a_plaintext_transfer_does_not_follow_a_new_address() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = data(3_000_000, 13);
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, &bytes).unwrap();
    let out = tempfile::tempdir().unwrap();
    let rx = Served::start(out.path(), Security::Insecure);
    let nat = Nat::start(rx.addr);
    let r = netblt::send_file(&src, nat.addr, &send_options(Security::Insecure));
    let lost = nat.finish();
    let seen = rx.finish();
    assert!(r.is_err(), "{r:?}");
    assert!(lost > 0, "the receiver kept sending to the old mapping");
    assert!(seen.iter().all(|j| j.migrated == 0), "{seen:?}");
    assert!(
        !out.path().join("f.bin").exists(),
        "no file under its final name"
    );
}

/// Z25: a receiver behind a port forward (the client dials the relay's
/// port, not the receiver's): NETBLT headers name the port the client
/// called, and the receiver answers as that port. Before, every packet was
/// a stray and the client gave up after 8 OPENs, in both modes.
#[test]
fn a_receiver_behind_a_port_forward_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (rk, sk) = keys(tmp.path());
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(300_000, 11)).unwrap();
    for (recv, send) in [
        (Security::Insecure, Security::Insecure),
        (encrypted(&rk, true), encrypted(&sk, false)),
    ] {
        let out = tempfile::tempdir().unwrap();
        let served = Served::start(out.path(), recv);
        let relay = common::relay(served.addr, usize::MAX);
        assert_ne!(relay.port(), served.addr.port());
        let r = netblt::send_file(&src, relay, &send_options(send)).unwrap();
        assert!(r.verified);
        served.finish();
        assert_eq!(
            std::fs::read(out.path().join("f.bin")).unwrap(),
            data(300_000, 11)
        );
    }
}
