//! Decision K29: a sender's copies of its first initiation (R32) straddle
//! the moment the passive end's handshake budget (K27, K28) refills, so
//! that one copy draws a cookie reply and the other a response. Both ends
//! are driven directly: the passive one with explicit `Instant`s, the
//! active one as its driver calls it; no sockets.

use netblt_crypto::{Identity, OneTimeCode, PublicKey, SeededRandom};
use netblt_wire::{Packet, Repr};

use super::super::active::ActiveSecurity;
use super::tests::{flood, initiation, initiator, receiver, replies_to, RECV_PORT};
use super::*;

/// The sender's address as the receiver sees it, and its NETBLT port.
const SENDER: &str = "192.0.2.7:40000";
const SENDER_PORT: u16 = 6000;

/// How the sender authenticates the receiver.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// IK: the receiver's key is pinned in `known_hosts`.
    Pinned,
    /// XX: first contact.
    FirstContact,
    /// XXpsk2: a one-time code.
    Code,
}

/// A sender's keys in a fresh key directory, with `code` if given.
fn sender_keys(code: Option<&str>) -> (Keys, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let enc = Encryption {
        key_dir: Some(tmp.path().to_path_buf()),
        code: code.map(str::to_owned),
        ..Encryption::default()
    };
    (Keys::load(&enc).unwrap(), tmp)
}

/// A receiver waiting for `code`.
fn code_receiver(code: &str) -> (PassiveSecurity, PublicKey, tempfile::TempDir) {
    let (keys, tmp) = sender_keys(Some(code));
    let public = keys.identity.public();
    let enc = Encryption {
        key_dir: Some(tmp.path().to_path_buf()),
        code: Some(code.to_owned()),
        ..Encryption::default()
    };
    (PassiveSecurity::new(keys, &enc).unwrap(), public, tmp)
}

/// A receiver and a sender for `mode`, the sender not yet started.
struct Pair {
    sec: PassiveSecurity,
    receiver_key: PublicKey,
    active: ActiveSecurity,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn pair(mode: Mode) -> Pair {
    let code = OneTimeCode::generate(&mut SeededRandom::from_u64(29)).to_string();
    let (keys, sdir) = sender_keys((mode == Mode::Code).then_some(code.as_str()));
    let (sec, receiver_key, rdir) = match mode {
        Mode::Code => code_receiver(&code),
        _ => receiver(&[keys.identity.public()]),
    };
    let to: SocketAddr = SocketAddr::new("192.0.2.1".parse().unwrap(), RECV_PORT);
    if mode == Mode::Pinned {
        let host = netblt_crypto::KnownHosts::host_id(&to.ip().to_string(), to.port());
        keys.known_hosts()
            .unwrap()
            .pin(&host, &receiver_key)
            .unwrap();
    }
    let active = ActiveSecurity::new(&keys, to).unwrap();
    Pair {
        sec,
        receiver_key,
        active,
        _dirs: (sdir, rdir),
    }
}

/// The engine's plain packet `repr` from `local` to `foreign`, as the
/// engine writes it.
fn engine_packet(repr: Repr<'_>, local: u16, foreign: u16) -> Vec<u8> {
    let p = Packet {
        local_port: local,
        foreign_port: foreign,
        repr,
    };
    let mut out = vec![0u8; p.buffer_len()];
    let n = p.emit(&mut out).unwrap();
    out.truncate(n);
    out
}

/// What the active end puts on the wire for the engine's plain `d`.
fn active_out(a: &mut ActiveSecurity, d: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    buf[..d.len()].copy_from_slice(d);
    let n = a.outgoing(&mut buf, d.len()).expect("sent");
    buf.truncate(n);
    buf
}

/// Hands `d` from the sender to the passive end at `now`; returns what
/// goes back to the sender: its handshake replies and, when the engine
/// got the OPEN, the handshake response made of the engine's RESPONSE
/// (the engine answers an OPEN, and a repeated one, with a RESPONSE).
fn to_receiver(sec: &mut PassiveSecurity, now: Instant, d: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let from: SocketAddr = SENDER.parse().unwrap();
    let mut d = d.to_vec();
    let engine = matches!(sec.incoming(now, from, &mut d), Rx::Owned(_));
    let mut back = replies_to(sec, from);
    if engine {
        let plain = plain_open(RESPONSE, RECV_PORT, SENDER_PORT, &[0u8; 28]);
        let mut buf = vec![0u8; 4096];
        buf[..plain.len()].copy_from_slice(&plain);
        if let Some(n) = sec.outgoing(from, &mut buf, plain.len()) {
            back.push(buf[..n].to_vec());
        }
        back.extend(replies_to(sec, from));
    }
    (back, engine)
}

/// Hands `d` from the passive end to the sender; fails the test if the
/// sender gave up.
fn to_sender(a: &mut ActiveSecurity, d: &[u8]) -> Rx {
    let mut d = d.to_vec();
    let rx = a.incoming(&mut d);
    if let Some(e) = a.take_failure() {
        panic!("the sender gave up: {e}");
    }
    rx
}

/// The race of K28's "Found and left": the budget is spent by a flood of
/// refused initiations; the sender's first copy draws a cookie reply, the
/// budget refills (one token, 10 ms), and its second copy is read and
/// answered. The sender restarts with the cookie and then reads the
/// response to its first initiation. Before K29 that response failed
/// authentication against the restarted state and ended the handshake
/// ("handshake message failed authentication", `many_files.rs` 1 run in 6
/// with K27's budget), and the passive end dropped the initiation with the
/// cookie as different bytes. Now both ends settle on one handshake, and a
/// sealed packet opens each way.
fn the_copies_straddle_the_budget_edge(mode: Mode) {
    let Pair {
        mut sec,
        receiver_key,
        mut active,
        _dirs,
    } = pair(mode);
    // A flood of refused initiations spends the budget.
    let attacker = Identity::generate(&mut SeededRandom::from_u64(666));
    let crafted = initiation(&mut initiator(&attacker, receiver_key, 1), 4000);
    let t0 = Instant::now();
    let mut now = flood(&mut sec, &crafted, 0, 3000, t0, Duration::from_millis(500));
    assert!(sec.budget.spent(now));

    // The engine's first OPEN, and the copies R32 sends of it.
    let open = plain_open(OPEN, SENDER_PORT, RECV_PORT, &[0u8; 28]);
    let first = active_out(&mut active, &open);
    let copy = active_out(&mut active, &open);
    assert_eq!(first, copy, "R32's copies are the same bytes");

    // Copy 1: the budget is spent, a cookie reply.
    let (back, engine) = to_receiver(&mut sec, now, &first);
    assert!(!engine && back.len() == 1, "a cookie reply");
    let cookie_reply = &back[0];
    // The budget refills by one token.
    let spent_at = now;
    while sec.budget.spent(now) {
        now += Duration::from_millis(1);
    }
    assert!(now - spent_at <= Duration::from_millis(10));
    // Copy 2: read, and answered.
    let (answers_to_first, _) = to_receiver(&mut sec, now, &copy);
    assert_eq!(answers_to_first.len(), 1, "a response");

    // The sender gets the cookie reply and restarts with the cookie...
    assert!(matches!(to_sender(&mut active, cookie_reply), Rx::Drop));
    let with_cookie = active
        .next_outgoing()
        .expect("the initiation with the cookie");
    assert_ne!(with_cookie, first);
    // ... then the response to its first initiation: not the end.
    let rx = to_sender(&mut active, &answers_to_first[0]);

    // The initiation with the cookie reaches the receiver.
    now += Duration::from_millis(1);
    let (answers, _) = to_receiver(&mut sec, now, &with_cookie);
    let mut plain_response = matches!(rx, Rx::Owned(_));
    for r in &answers {
        if matches!(to_sender(&mut active, r), Rx::Owned(_)) {
            plain_response = true;
        }
    }
    // XX and code mode: the FINISH goes, and authorizes the sender.
    while let Some(f) = active.next_outgoing() {
        let _ = to_receiver(&mut sec, now, &f);
    }
    if mode == Mode::Pinned {
        assert!(plain_response, "IK: the engine got its RESPONSE");
    }

    // Both ends hold the same keys: a sealed packet opens each way.
    let keepalive = engine_packet(Repr::Keepalive, SENDER_PORT, RECV_PORT);
    let mut sealed = active_out(&mut active, &keepalive);
    let from: SocketAddr = SENDER.parse().unwrap();
    match sec.incoming(now, from, &mut sealed) {
        Rx::Pass(n) => assert_eq!(&sealed[..n], &keepalive[..]),
        other => panic!("the sender's packet did not open: {other:?}"),
    }
    let back = engine_packet(Repr::Keepalive, RECV_PORT, SENDER_PORT);
    let mut buf = vec![0u8; 4096];
    buf[..back.len()].copy_from_slice(&back);
    let n = sec.outgoing(from, &mut buf, back.len()).expect("sealed");
    match active.incoming(&mut buf[..n]) {
        Rx::Pass(k) => assert_eq!(&buf[..k], &back[..]),
        other => panic!("the receiver's packet did not open: {other:?}"),
    }
    assert!(sec.fatal().is_none());
    assert_eq!(sec.flood.half_open_expired, 0);
}

#[test]
fn ik_copies_that_straddle_the_budget_edge_end_in_one_handshake() {
    the_copies_straddle_the_budget_edge(Mode::Pinned);
}

#[test]
fn xx_copies_that_straddle_the_budget_edge_end_in_one_handshake() {
    the_copies_straddle_the_budget_edge(Mode::FirstContact);
}

#[test]
fn code_mode_copies_that_straddle_the_budget_edge_end_in_one_handshake() {
    the_copies_straddle_the_budget_edge(Mode::Code);
}

/// The initiation `hs` (which wrote one already) writes after a cookie
/// reply carrying `cookie`, as its driver writes it: a fresh timestamp.
fn with_cookie(hs: &mut Handshake, cookie: &[u8], port: u16) -> Vec<u8> {
    let mut env = [0u8; 64];
    let n = write_cookie_reply(cookie, &mut env).unwrap();
    let mut pl = [0u8; MAX_MESSAGE_LEN];
    assert_eq!(
        hs.read_message(&env[..n], &mut pl),
        Ok(Progress::RetryWithCookie)
    );
    hs.set_timestamp(super::super::initiation_timestamp())
        .unwrap();
    initiation(hs, port)
}

/// The engine's RESPONSE to `to`, as the passive end sends it.
fn engine_response(sec: &mut PassiveSecurity, to: SocketAddr, port: u16) -> Option<Vec<u8>> {
    let plain = plain_open(RESPONSE, RECV_PORT, port, &[0u8; 28]);
    let mut buf = vec![0u8; 4096];
    buf[..plain.len()].copy_from_slice(&plain);
    let n = sec.outgoing(to, &mut buf, plain.len())?;
    Some(buf[..n].to_vec())
}

/// K29's rule at the passive end: a different initiation replaces a
/// pending handshake from the same address and port only with a cookie
/// that verifies for that address and port; without one, or with one
/// issued to another port, it is dropped and the pending handshake stays
/// (a repeat of its initiation still gets its response). The replaced
/// handshake gives its slot back.
#[test]
fn only_an_initiation_with_a_valid_cookie_replaces_a_pending_handshake() {
    let me = Identity::generate(&mut SeededRandom::from_u64(7));
    let (mut sec, public, _tmp) = receiver(&[me.public()]);
    let real: SocketAddr = SENDER.parse().unwrap();
    let now = Instant::now();
    let mut hs = initiator(&me, public, 1);
    let first = initiation(&mut hs, SENDER_PORT);
    assert!(matches!(
        sec.incoming(now, real, &mut first.clone()),
        Rx::Owned(_)
    ));
    let answer = engine_response(&mut sec, real, SENDER_PORT).expect("a response");
    let t = secs(sec.epoch, now);

    // Another initiation without a cookie: dropped.
    let mut other = initiator(&me, public, 2);
    let mut d = initiation(&mut other, SENDER_PORT);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Drop));
    // With a cookie issued to another port of the same address: dropped.
    let elsewhere = SocketAddr::new(real.ip(), real.port() + 1);
    let cookie = sec.cookies.issue(t, elsewhere, &mut OsRandom);
    let mut d = with_cookie(&mut other, &cookie, SENDER_PORT);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Drop));
    assert_eq!(sec.flood.bad_cookies, 1);
    // The pending handshake is untouched: a repeat gets its response.
    assert!(matches!(
        sec.incoming(now, real, &mut first.clone()),
        Rx::Drop
    ));
    assert_eq!(replies_to(&mut sec, real), vec![answer]);

    // With a cookie for this address and port: read, and the engine's
    // (repeated) RESPONSE answers it.
    let cookie = sec.cookies.issue(t, real, &mut OsRandom);
    let mut d = with_cookie(&mut hs, &cookie, SENDER_PORT);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Owned(_)));
    let r = engine_response(&mut sec, real, SENDER_PORT).expect("a response");
    let mut pl = [0u8; MAX_MESSAGE_LEN];
    assert!(matches!(
        hs.read_message(&r[netblt_wire::HEADER_LEN..], &mut pl),
        Ok(Progress::Payload(_))
    ));
    assert!(hs.is_finished());
    assert_eq!(
        sec.limiter.total(),
        1,
        "the replaced handshake's slot is free"
    );
    assert_eq!(sec.flood.handshakes_failed, 0);
}

/// A handshake whose keys a packet proved is never replaced, nor is an IK
/// handshake by one of another key (the engine's connection was opened by
/// the first key's OPEN), whatever their cookies.
#[test]
fn a_proven_handshake_or_another_key_replaces_nothing() {
    let me = Identity::generate(&mut SeededRandom::from_u64(7));
    let other_key = Identity::generate(&mut SeededRandom::from_u64(8));
    let (mut sec, public, _tmp) = receiver(&[me.public(), other_key.public()]);
    let real: SocketAddr = SENDER.parse().unwrap();
    let now = Instant::now();
    let t = secs(sec.epoch, now);
    let cookie = sec.cookies.issue(t, real, &mut OsRandom);

    // Another authorized key, with a valid cookie, from the same address
    // and port: refused after its Diffie-Hellman; the first stays.
    let mut hs = initiator(&me, public, 1);
    let first = initiation(&mut hs, SENDER_PORT);
    assert!(matches!(
        sec.incoming(now, real, &mut first.clone()),
        Rx::Owned(_)
    ));
    let answer = engine_response(&mut sec, real, SENDER_PORT).expect("a response");
    let mut intruder = initiator(&other_key, public, 3);
    let _ = initiation(&mut intruder, SENDER_PORT);
    let mut d = with_cookie(&mut intruder, &cookie, SENDER_PORT);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Drop));
    assert_eq!(sec.flood.handshakes_failed, 1);
    assert!(matches!(
        sec.incoming(now, real, &mut first.clone()),
        Rx::Drop
    ));
    assert_eq!(replies_to(&mut sec, real), vec![answer.clone()]);

    // The sender reads the response and a packet of it opens: proven.
    let mut pl = [0u8; MAX_MESSAGE_LEN];
    assert!(hs
        .read_message(&answer[netblt_wire::HEADER_LEN..], &mut pl)
        .is_ok());
    let mut prot = hs.into_transport().unwrap();
    let mut p = engine_packet(Repr::Keepalive, SENDER_PORT, RECV_PORT);
    p[2] = PROTECTED;
    let len = p.len();
    p.resize(len + netblt_crypto::OVERHEAD, 0);
    let n = prot.seal_in_place(&mut p, len).unwrap();
    assert!(matches!(sec.incoming(now, real, &mut p[..n]), Rx::Pass(_)));
    // The same key, a valid cookie: the proven session stays.
    let mut again = initiator(&me, public, 4);
    let _ = initiation(&mut again, SENDER_PORT);
    let mut d = with_cookie(&mut again, &cookie, SENDER_PORT);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Drop));
    assert_eq!(sec.flood.handshakes_processed, 2, "no Diffie-Hellman");
}
