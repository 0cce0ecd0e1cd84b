//! Encrypted mode end to end on loopback (issue 11 §5): what an on-path
//! observer captures, what an on-path attacker's forgeries and replays do,
//! key errors, and a flood of spoofed OPENs.
//!
//! The attacker is a UDP proxy between the two ends: it forwards every
//! datagram, keeps a copy, and injects from its own socket, i.e. from the
//! very address and port each end takes for its peer.

mod common;

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{data, encrypted};
use netblt::crypto::{HandshakeMessage, KeyDir, SeededRandom};
use netblt::{Encryption, Receiver, ReceiverOptions, ReceiverSummary, Security, SendOptions};
use netblt_wire::{DataRepr, Packet, PacketType, Repr};

fn send_options(security: Security) -> SendOptions {
    let mut o = SendOptions::new().with_rate(200_000_000);
    o.params.buffer_size = 64 * 1024;
    o.death_timer = Duration::from_secs(3);
    o.security = security;
    o
}

/// A receiver keeping files in `dir` on a thread, stopped by the flag.
fn serve(
    dir: &Path,
    security: Security,
    tweak: impl FnOnce(&mut ReceiverOptions),
) -> (
    SocketAddr,
    Arc<AtomicBool>,
    JoinHandle<Result<ReceiverSummary, netblt::Error>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = ReceiverOptions::new();
    opts.stop = Some(Arc::clone(&stop));
    opts.security = security;
    opts.death_timer = Duration::from_secs(3);
    tweak(&mut opts);
    let rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), opts).unwrap();
    let addr = rx.local_addr();
    let dir = dir.to_path_buf();
    (addr, stop, std::thread::spawn(move || rx.serve_dir(dir)))
}

/// What the proxy does besides forwarding.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Attack {
    None,
    /// Forged and replayed packets both ways.
    ForgeAndReplay,
    /// Loses the receiver's first sealed RESPONSE (XX sends it after
    /// FINISH, decision K20).
    DropSealedResponse,
    /// Loses everything the receiver sends for [`BLACKOUT`] after the
    /// sender's first datagram.
    Blackout,
}

const BLACKOUT: Duration = Duration::from_millis(6500);

/// A Version 2 RESPONSE that is not a handshake envelope: the passive
/// end's engine RESPONSE, sealed.
fn sealed_response(d: &[u8]) -> bool {
    d.len() > 12
        && d[2] == 2
        && d[3] == PacketType::Response as u8
        && HandshakeMessage::parse(&d[12..]).is_err()
}

struct Proxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    captured: Arc<Mutex<Vec<Vec<u8>>>>,
    injected: Arc<Mutex<u64>>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    /// The proxy listens on 127.0.0.2 at the server's port: NETBLT
    /// headers carry ports (and are authenticated), so the port the sender
    /// aims at must be the receiver's.
    fn start(server: SocketAddr, attack: Attack) -> Proxy {
        let sock = UdpSocket::bind(SocketAddr::new([127, 0, 0, 2].into(), server.port())).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let captured = Arc::new(Mutex::new(Vec::new()));
        let injected = Arc::new(Mutex::new(0u64));
        let (s2, c2, i2) = (stop.clone(), captured.clone(), injected.clone());
        let thread = std::thread::spawn(move || {
            let mut client: Option<SocketAddr> = None;
            let mut buf = vec![0u8; 70_000];
            let mut n_seen = 0u64;
            let mut dropped_response = false;
            let mut first_seen: Option<std::time::Instant> = None;
            while !s2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let d = buf[..n].to_vec();
                let to = if from == server {
                    match client {
                        Some(c) => c,
                        None => continue,
                    }
                } else {
                    client = Some(from);
                    server
                };
                let since = *first_seen.get_or_insert_with(std::time::Instant::now);
                if attack == Attack::Blackout && from == server && since.elapsed() < BLACKOUT {
                    continue;
                }
                if attack == Attack::DropSealedResponse
                    && from == server
                    && !dropped_response
                    && sealed_response(&d)
                {
                    dropped_response = true;
                    c2.lock().unwrap().push(d);
                    continue;
                }
                let _ = sock.send_to(&d, to);
                n_seen += 1;
                if attack == Attack::ForgeAndReplay && n_seen % 7 == 0 && d.len() >= 12 {
                    let mut k = 0;
                    for f in forgeries(&d, &c2.lock().unwrap()) {
                        let _ = sock.send_to(&f, to);
                        k += 1;
                    }
                    *i2.lock().unwrap() += k;
                }
                c2.lock().unwrap().push(d);
            }
        });
        Proxy {
            addr,
            stop,
            captured,
            injected,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> (Vec<Vec<u8>>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let c = std::mem::take(&mut *self.captured.lock().unwrap());
        let i = *self.injected.lock().unwrap();
        (c, i)
    }
}

/// Well-shaped attacks on the flow `d` belongs to (same ports, any field
/// an observer sees): plain QUIT/ABORT/DONE/DATA/CONTROL(RESEND), the same
/// with Version 2 and a made-up trailer, `d` with one body bit flipped,
/// and a replay of `d` and of an earlier packet of the same direction.
fn forgeries(d: &[u8], earlier: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let (lp, fp) = (
        u16::from_be_bytes([d[6], d[7]]),
        u16::from_be_bytes([d[8], d[9]]),
    );
    let mut out = Vec::new();
    let mut emit = |repr: Repr<'_>| {
        let p = Packet {
            local_port: lp,
            foreign_port: fp,
            repr,
        };
        let mut b = vec![0u8; p.buffer_len()];
        if let Ok(n) = p.emit(&mut b) {
            b.truncate(n);
            out.push(b);
        }
    };
    emit(Repr::Quit { reason: b"forged" });
    emit(Repr::Abort { reason: b"forged" });
    emit(Repr::Done);
    let payload = [0x55u8; 1400];
    emit(Repr::Data(DataRepr {
        buffer: 1,
        high_ack: 0,
        packet: 0,
        last_buffer: true,
        data_checksum: 0,
        data: &payload,
    }));
    // CONTROL with a RESEND of buffer 1, packet 0 (RFC 998 §8 layout:
    // type 3, padding, sequence, buffer, ..., packet numbers).
    let mut ctl = vec![0u8; 12 + 16];
    ctl[12] = 3;
    ctl[15] = 1;
    ctl[19] = 1;
    ctl[23] = 1;
    let len = ctl.len() as u16;
    ctl[2] = 1;
    ctl[3] = 9;
    ctl[4..6].copy_from_slice(&len.to_be_bytes());
    ctl[6..8].copy_from_slice(&lp.to_be_bytes());
    ctl[8..10].copy_from_slice(&fp.to_be_bytes());
    let sum = netblt_wire::checksum(&ctl[2..]);
    ctl[..2].copy_from_slice(&sum.to_be_bytes());
    out.push(ctl);
    // The same, claiming to be protected.
    let v2: Vec<Vec<u8>> = out
        .iter()
        .map(|p| {
            let mut q = p.clone();
            q[2] = 2;
            q.extend_from_slice(&[0xa5; 24]);
            q
        })
        .collect();
    out.extend(v2);
    // Modified: one bit of the body (or of the tag) flipped.
    let mut m = d.to_vec();
    let i = (m.len() / 2).max(12).min(m.len() - 1);
    m[i] ^= 0x10;
    out.push(m);
    // Replays.
    out.push(d.to_vec());
    if let Some(e) = earlier
        .iter()
        .rev()
        .find(|e| e.len() >= 12 && e[6..10] == d[6..10])
    {
        out.push(e.clone());
    }
    out
}

/// Whether any 64-byte run of `file` occurs in the captured datagrams:
/// such a run holds a whole 16-byte block at a file offset that is a
/// multiple of 16, and we look for those blocks.
fn leaks(file: &[u8], captured: &[Vec<u8>]) -> usize {
    let blocks: HashSet<&[u8]> = file.chunks_exact(16).collect();
    captured
        .iter()
        .filter(|d| d.windows(16).any(|w| blocks.contains(w)))
        .count()
}

fn authorize(receiver_home: &Path, sender_home: &Path) {
    let (id, _) = KeyDir::at(sender_home)
        .load_or_create_identity(&mut SeededRandom::from_u64(1))
        .unwrap();
    std::fs::create_dir_all(receiver_home).unwrap();
    std::fs::write(
        receiver_home.join("authorized_keys"),
        format!("{} sender\n", id.public()),
    )
    .unwrap();
}

#[test]
fn an_encrypted_capture_holds_no_plaintext_and_an_insecure_one_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let src = tmp.path().join("f.bin");
    let bytes = data(400_000, 3);
    std::fs::write(&src, &bytes).unwrap();
    for secure in [true, false] {
        let out = tempfile::tempdir().unwrap();
        let sec = |h: &Path| {
            if secure {
                encrypted(h, false)
            } else {
                Security::Insecure
            }
        };
        let (addr, stop, h) = serve(out.path(), sec(&rh), |_| {});
        let proxy = Proxy::start(addr, Attack::None);
        let r = netblt::send_file(&src, proxy.addr, &send_options(sec(&sh))).unwrap();
        assert!(r.verified);
        assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), bytes);
        let (captured, _) = proxy.finish();
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap().unwrap();
        let total: usize = captured.iter().map(Vec::len).sum();
        assert!(total > bytes.len(), "captured {total} bytes");
        let leaked = leaks(&bytes, &captured);
        if secure {
            assert_eq!(leaked, 0, "datagrams with plaintext");
            assert!(captured.iter().all(|d| d[2] == 2), "all Version 2");
            let s = r.security.unwrap();
            assert_eq!(s.pattern, "XX"); // first contact
        } else {
            assert!(leaked > 100, "the check must see plaintext: {leaked}");
        }
    }
}

#[test]
fn forged_and_replayed_packets_are_counted_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let src = tmp.path().join("f.bin");
    let bytes = data(600_000, 5);
    std::fs::write(&src, &bytes).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let proxy = Proxy::start(addr, Attack::ForgeAndReplay);
    let r = netblt::send_file(&src, proxy.addr, &send_options(encrypted(&sh, false))).unwrap();
    let (_, injected) = proxy.finish();
    stop.store(true, Ordering::Relaxed);
    let summary = h.join().unwrap().unwrap();
    assert!(r.verified && r.succeeded(), "{r:?}");
    assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), bytes);
    assert!(injected > 100, "injected {injected}");
    let s = r.security.unwrap();
    let j = summary.junk;
    eprintln!("injected {injected}; sender {s:?}; receiver {j:?}");
    // Each side saw forgeries, replays and plain packets, and counted them.
    assert!(s.forged + j.forged > 0, "{s:?} {j:?}");
    assert!(s.replayed + j.replayed > 0, "{s:?} {j:?}");
    assert!(s.plaintext > 0 && j.plaintext > 0, "{s:?} {j:?}");
    assert_eq!(summary.failed, 0);
}

#[test]
fn an_unknown_key_is_refused_in_one_line_and_a_changed_host_key_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(10_000, 1)).unwrap();
    let out = tempfile::tempdir().unwrap();
    // No authorized_keys at the receiver.
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let e = netblt::send_file(&src, addr, &send_options(encrypted(&sh, false))).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("is not authorized") && !msg.contains('\n'),
        "{msg}"
    );
    // Again, now pinned (IK): refused at the first message.
    let e = netblt::send_file(&src, addr, &send_options(encrypted(&sh, false))).unwrap_err();
    assert!(e.to_string().contains("is not authorized"), "{e}");
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();

    // Another receiver (new key) on the same address and port.
    let rh2 = tmp.path().join("r2");
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = ReceiverOptions::new();
    opts.stop = Some(Arc::clone(&stop));
    opts.security = encrypted(&rh2, true);
    let rx = Receiver::bind(addr, opts).unwrap();
    let out2 = out.path().to_path_buf();
    let h = std::thread::spawn(move || rx.serve_dir(out2));
    let e = netblt::send_file(&src, addr, &send_options(encrypted(&sh, false))).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("has changed") && msg.contains("known_hosts"),
        "{msg}"
    );
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}

/// A library user authorizes a sender with the library alone (F17: it took
/// `netblt::crypto`'s `KeyDir` and `AuthorizedKeys` and the file's name).
#[test]
fn a_sender_authorized_through_the_library_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(10_000, 2)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let with_dir = |d: &Path| {
        let mut e = Encryption::default();
        e.key_dir = Some(d.to_path_buf());
        e
    };
    let (sender, receiver) = (
        with_dir(&tmp.path().join("s")),
        with_dir(&tmp.path().join("r")),
    );
    let key = sender.public_key().unwrap();
    // The same key twice: made once, then read back.
    assert_eq!(sender.public_key().unwrap(), key);
    receiver.authorize(&key, "the test's sender").unwrap();
    let (addr, stop, h) = serve(out.path(), Security::Encrypted(receiver), |_| {});
    let r = netblt::send_file(&src, addr, &send_options(Security::Encrypted(sender))).unwrap();
    assert!(r.verified);
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
    // A one-time code is a secret: not in Debug output.
    let mut coded = Encryption::default();
    coded.code = Some("winter-tag-fuel".into());
    let shown = format!("{:?}", Security::Encrypted(coded));
    assert!(!shown.contains("winter"), "{shown}");
}

#[test]
fn one_side_insecure_gets_a_clear_refusal_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, data(10_000, 1)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&tmp.path().join("r"), true), |_| {});
    let e = netblt::send_file(&src, addr, &send_options(Security::Insecure)).unwrap_err();
    assert!(e.to_string().contains("requires encryption"), "{e}");
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();

    let (addr, stop, h) = serve(out.path(), Security::Insecure, |_| {});
    let e = netblt::send_file(
        &src,
        addr,
        &send_options(encrypted(&tmp.path().join("s"), false)),
    )
    .unwrap_err();
    // The library's words name no flag of the tool (F20); the kind says it.
    assert!(e.to_string().contains("is not encrypted"), "{e}");
    assert_eq!(
        e.kind(),
        netblt::ErrorKind::RefusedByPeer(netblt::PeerReason::PeerInsecure)
    );
    stop.store(true, Ordering::Relaxed);
    let _ = h.join().unwrap();
}

#[test]
fn one_time_codes_between_fresh_key_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("f.bin");
    let bytes = data(100_000, 9);
    std::fs::write(&src, &bytes).unwrap();
    let words =
        |seed| netblt::crypto::OneTimeCode::generate(&mut SeededRandom::from_u64(seed)).to_string();
    let (right, wrong) = (words(1), words(2));
    let code = |c: &str, home: &str, accept: bool| {
        let mut e = Encryption::default();
        e.key_dir = Some(tmp.path().join(home));
        e.code = Some(c.to_string());
        e.accept_any = accept;
        Security::Encrypted(e)
    };
    let out = tempfile::tempdir().unwrap();
    let (addr, _stop, h) = serve(out.path(), code(&right, "r", false), |o| {
        o.max_transfers = Some(1)
    });
    let r = netblt::send_file(
        &src,
        addr,
        &send_options(code(&right.replace('-', " "), "s", false)),
    )
    .unwrap();
    assert!(r.verified);
    assert_eq!(r.security.unwrap().pattern, "XXpsk2");
    assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), bytes);
    assert_eq!(h.join().unwrap().unwrap().transfers, 1);

    // A wrong code fails on both ends, and burns the receiver's.
    let out = tempfile::tempdir().unwrap();
    let (addr, _stop, h) = serve(out.path(), code(&right, "r2", false), |o| {
        o.max_transfers = Some(1)
    });
    let e = netblt::send_file(&src, addr, &send_options(code(&wrong, "s2", false))).unwrap_err();
    assert!(e.to_string().contains("code does not match"), "{e}");
    let e = h.join().unwrap().unwrap_err();
    assert!(e.to_string().contains("code"), "{e}");
}

#[test]
fn an_encrypted_get_first_contact_then_pinned() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    let served = tempfile::tempdir().unwrap();
    let bytes = data(300_000, 11);
    std::fs::write(served.path().join("g.bin"), &bytes).unwrap();
    let (addr, stop, h) = serve(served.path(), encrypted(&rh, true), |o| o.serve = true);
    for (i, pattern) in ["XX", "IK"].into_iter().enumerate() {
        let dest = tmp.path().join(format!("copy{i}.bin"));
        let r = netblt::get(addr, "g.bin", &dest, &send_options(encrypted(&sh, false))).unwrap();
        assert!(r.verified);
        assert_eq!(r.security.unwrap().pattern, pattern);
        assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}

/// `d` with its NETBLT checksum recomputed (after a change to the header or
/// the envelope, which an attacker can make: neither is encrypted).
fn rechecksum(mut d: Vec<u8>) -> Vec<u8> {
    d[0..2].fill(0);
    let sum = netblt_wire::checksum(&d[2..]);
    d[0..2].copy_from_slice(&sum.to_be_bytes());
    d
}

/// Sends `d` to `to` from a fresh socket on `ip` and returns what comes
/// back within `wait`.
fn probe(d: &[u8], ip: [u8; 4], to: SocketAddr, wait: Duration) -> Vec<Vec<u8>> {
    let s = UdpSocket::bind(SocketAddr::new(ip.into(), 0)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    s.send_to(d, to).unwrap();
    let until = std::time::Instant::now() + wait;
    let (mut got, mut buf) = (Vec::new(), [0u8; 2000]);
    while std::time::Instant::now() < until {
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            got.push(buf[..n].to_vec());
        }
    }
    got
}

#[test]
fn a_replayed_ik_initiation_gets_no_answer_and_is_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let proxy = Proxy::start(addr, Attack::None);
    let mut n = 0;
    let mut send = || {
        n += 1;
        let src = tmp.path().join(format!("f{n}.bin"));
        std::fs::write(&src, data(50_000, n)).unwrap();
        netblt::send_file(&src, proxy.addr, &send_options(encrypted(&sh, false)))
    };
    // First contact pins the receiver; the second transfer is IK.
    assert_eq!(send().unwrap().security.unwrap().pattern, "XX");
    assert_eq!(send().unwrap().security.unwrap().pattern, "IK");
    let init = proxy
        .captured
        .lock()
        .unwrap()
        .iter()
        .find(|d| {
            d.len() > 14 && d[2] == 2 && d[3] == PacketType::Open as u8 && d[13] == 1 && d[14] == 1
        })
        .cloned()
        .expect("an IK initiation");

    // Replayed as captured, from another address and port; then with
    // another NETBLT port in its clear header. Neither gets any answer.
    let wait = Duration::from_millis(400);
    assert_eq!(
        probe(&init, [127, 0, 0, 3], addr, wait),
        Vec::<Vec<u8>>::new()
    );
    let mut moved = init.clone();
    let port = u16::from_be_bytes([moved[6], moved[7]]).wrapping_add(1);
    moved[6..8].copy_from_slice(&port.to_be_bytes());
    assert_eq!(
        probe(&rechecksum(moved), [127, 0, 0, 4], addr, wait),
        Vec::<Vec<u8>>::new()
    );
    // The same initiation in the older envelope format (1) gets one line.
    let mut old = init.clone();
    old[12] = 1;
    let got = probe(&rechecksum(old), [127, 0, 0, 5], addr, wait);
    assert_eq!(got.len(), 1, "{got:?}");
    let reason = match Packet::parse(&got[0]).unwrap().repr {
        Repr::Refused { reason } => String::from_utf8_lossy(reason).into_owned(),
        other => panic!("{other:?}"),
    };
    assert!(reason.contains("upgrade netblt on the sender"), "{reason}");
    // The real sender goes on with newer timestamps.
    assert_eq!(send().unwrap().security.unwrap().pattern, "IK");
    proxy.finish();
    stop.store(true, Ordering::Relaxed);
    let summary = h.join().unwrap().unwrap();
    let f = summary.junk.flood;
    eprintln!("{f:?}; transfers {}", summary.transfers);
    assert_eq!(f.replayed_initiations, 2, "{f:?}");
    assert_eq!(f.old_format, 1, "{f:?}");
    assert_eq!(f.stale_initiations, 0, "{f:?}");
    assert_eq!((summary.transfers, summary.failed), (3, 0));
}

#[test]
fn first_contact_survives_a_lost_sealed_response() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = data(200_000, 17);
    let src = tmp.path().join("f.bin");
    std::fs::write(&src, &bytes).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&tmp.path().join("r"), true), |_| {});
    let proxy = Proxy::start(addr, Attack::DropSealedResponse);
    let r = netblt::send_file(
        &src,
        proxy.addr,
        &send_options(encrypted(&tmp.path().join("s"), false)),
    )
    .unwrap();
    let (captured, _) = proxy.finish();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    assert!(r.verified);
    assert_eq!(r.security.unwrap().pattern, "XX");
    assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), bytes);
    // The lost one and its repetition.
    assert!(captured.iter().filter(|d| sealed_response(d)).count() >= 2);
}

#[test]
fn an_initiation_outside_the_clock_window_gets_one_line_naming_the_difference() {
    use netblt::crypto::{Handshake, InitiatorConfig, PeerAuth, SuiteOffer, Tai64n};
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let (me, _) = KeyDir::at(&sh)
        .load_or_create_identity(&mut SeededRandom::from_u64(1))
        .unwrap();
    let (receiver, _) = KeyDir::at(&rh)
        .load_or_create_identity(&mut SeededRandom::from_u64(2))
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (i, (t, says)) in [(now - 3600, "behind"), (now + 3600, "ahead")]
        .into_iter()
        .enumerate()
    {
        // An IK initiation of an authorized key, its clock an hour off.
        let mut hs = Handshake::initiator(
            InitiatorConfig {
                identity: me.clone(),
                peer: PeerAuth::Pinned(receiver.public()),
                suites: SuiteOffer::local(),
                timestamp: Tai64n::from_unix(t, 0),
            },
            &mut SeededRandom::from_u64(3 + i as u64),
        )
        .unwrap();
        let mut env = [0u8; 1200];
        let k = hs.write_message(&[0; 28], &mut env).unwrap();
        let mut d = vec![0u8; 12 + k];
        d[2] = 2;
        d[3] = PacketType::Open as u8;
        d[4..6].copy_from_slice(&((12 + k) as u16).to_be_bytes());
        d[6..8].copy_from_slice(&7000u16.to_be_bytes());
        d[8..10].copy_from_slice(&addr.port().to_be_bytes());
        d[12..].copy_from_slice(&env[..k]);
        let got = probe(
            &rechecksum(d),
            [127, 0, 0, 6],
            addr,
            Duration::from_millis(400),
        );
        assert_eq!(got.len(), 1, "{got:?}");
        let reason = match Packet::parse(&got[0]).unwrap().repr {
            Repr::Refused { reason } => String::from_utf8_lossy(reason).into_owned(),
            other => panic!("{other:?}"),
        };
        eprintln!("refused: {reason}");
        assert!(
            reason.contains(says) && reason.contains("clocks") && reason.len() < 200,
            "{reason}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let summary = h.join().unwrap().unwrap();
    let f = summary.junk.flood;
    assert_eq!(
        (f.stale_initiations, f.replayed_initiations),
        (2, 0),
        "{f:?}"
    );
    assert_eq!(summary.transfers, 0);
}

/// Slow (27 s: the engine's eight OPENs): `cargo test -p netblt --test
/// secure -- --ignored`. The unit test `silence_names_an_older_receiver...`
/// covers the message in the default run.
#[test]
#[ignore]
fn a_silent_receiver_gets_a_line_that_names_an_older_version_among_the_causes() {
    // A socket that reads nothing and answers nothing, as a receiver of an
    // older handshake version does to this sender's initiation.
    let tmp = tempfile::tempdir().unwrap();
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut o = send_options(encrypted(&tmp.path().join("s"), false));
    o.death_timer = Duration::from_secs(1);
    let started = std::time::Instant::now();
    let e = netblt::bench(silent.local_addr().unwrap(), 1000, &o).unwrap_err();
    let msg = e.to_string();
    eprintln!("{msg} ({:.1} s)", started.elapsed().as_secs_f64());
    assert!(
        msg.contains("no answer") && msg.contains("handshake version 3") && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn one_sender_key_opens_several_ik_connections_at_once() {
    // Their timestamps are taken in one order and may arrive in another:
    // the receiver keeps the newest 8 per key, so all get in (K19).
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let file = |i: u32| {
        let src = tmp.path().join(format!("p{i}.bin"));
        std::fs::write(&src, data(100_000, 20 + i)).unwrap();
        src
    };
    let first = netblt::send_file(file(0), addr, &send_options(encrypted(&sh, false))).unwrap();
    assert_eq!(first.security.unwrap().pattern, "XX");
    let senders: Vec<_> = (1..=6)
        .map(|i| {
            let (src, sh) = (file(i), sh.clone());
            std::thread::spawn(move || {
                netblt::send_file(&src, addr, &send_options(encrypted(&sh, false)))
            })
        })
        .collect();
    for s in senders {
        let r = s.join().unwrap().unwrap();
        assert!(r.verified);
        assert_eq!(r.security.unwrap().pattern, "IK");
    }
    stop.store(true, Ordering::Relaxed);
    let summary = h.join().unwrap().unwrap();
    assert_eq!((summary.transfers, summary.failed), (7, 0));
    assert_eq!(summary.junk.flood.replayed_initiations, 0);
}

#[test]
fn an_ik_initiation_unanswered_past_the_half_open_timeout_is_written_anew() {
    // The receiver answers, but nothing it sends arrives for 6.5 s: it drops
    // the connection (death timer 3 s, or half-open after 5 s) and takes
    // the same initiation repeated for a replay. The sender writes a new
    // one (fresh ephemeral key and timestamp) after 6 s, which gets through.
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    authorize(&rh, &sh);
    let out = tempfile::tempdir().unwrap();
    let (addr, stop, h) = serve(out.path(), encrypted(&rh, false), |_| {});
    let send = |n: u32, attack| {
        let proxy = Proxy::start(addr, attack);
        let src = tmp.path().join(format!("b{n}.bin"));
        std::fs::write(&src, data(50_000, 30 + n)).unwrap();
        let mut o = send_options(encrypted(&sh, false));
        o.death_timer = Duration::from_secs(20);
        let r = netblt::send_file(&src, proxy.addr, &o);
        proxy.finish();
        r
    };
    assert_eq!(
        send(0, Attack::None).unwrap().security.unwrap().pattern,
        "XX"
    );
    let started = std::time::Instant::now();
    let r = send(1, Attack::Blackout).unwrap();
    eprintln!("through after {:.1} s", started.elapsed().as_secs_f64());
    assert!(r.verified);
    assert_eq!(r.security.unwrap().pattern, "IK");
    stop.store(true, Ordering::Relaxed);
    let summary = h.join().unwrap().unwrap();
    // Whether the repeat at 3 s came before or after the receiver forgot
    // the connection (its death timer, 3 s here) is a race: counted as a
    // replay, or answered and lost. Either way only the rewrite gets in
    // (without it this fails after the eight OPENs, 27 s).
    eprintln!("{:?}; {} transfers", summary.junk.flood, summary.transfers);
}

/// DATA payloads are sealed straight from the sender's buffer when the
/// packet size is a multiple of 4, and written whole first when it needs
/// padding (decision G2); either way every byte arrives and opens, in both
/// directions (`send_file` from the active end, `get` from the passive end).
#[test]
fn sealed_payloads_arrive_whole_padded_or_not_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let (rh, sh) = (tmp.path().join("r"), tmp.path().join("s"));
    let served = tempfile::tempdir().unwrap();
    let bytes = data(250_003, 17);
    let src = tmp.path().join("p.bin");
    std::fs::write(&src, &bytes).unwrap();
    std::fs::write(served.path().join("p.bin"), &bytes).unwrap();
    let (addr, stop, h) = serve(served.path(), encrypted(&rh, true), |o| {
        o.serve = true;
        o.overwrite = true;
    });
    for psz in [1001u16, 1400, 4000] {
        let mut o = send_options(encrypted(&sh, false));
        o.params.packet_size = psz;
        o.params.buffer_size = 20 * u32::from(psz);
        let r = netblt::send_file(&src, addr, &o).unwrap();
        assert!(r.verified && r.packet_size == psz, "{r:?}");
        assert_eq!(std::fs::read(served.path().join("p.bin")).unwrap(), bytes);
        let dest = tmp.path().join(format!("got{psz}.bin"));
        let r = netblt::get(addr, "p.bin", &dest, &o).unwrap();
        assert!(r.verified && r.packet_size == psz, "{r:?}");
        assert_eq!(std::fs::read(&dest).unwrap(), bytes);
        let s = r.security.unwrap();
        assert_eq!((s.forged, s.dropped), (0, 0));
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
}
