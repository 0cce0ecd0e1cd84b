//! The passive secure layer driven directly: datagrams in with explicit
//! `Instant`s, replies out of its queues, no sockets.

use std::net::{Ipv4Addr, SocketAddrV4};

use netblt_crypto::{Identity, InitiatorConfig, PeerAuth, PublicKey, SeededRandom};

use super::*;
use crate::security::Encryption;

/// The receiver's NETBLT port.
pub(super) const RECV_PORT: u16 = 9998;

/// A receiver whose `authorized_keys` lists `authorized`, in a fresh key
/// directory (kept alive by the returned guard).
pub(super) fn receiver(
    authorized: &[PublicKey],
) -> (PassiveSecurity, PublicKey, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let enc = Encryption {
        key_dir: Some(tmp.path().to_path_buf()),
        ..Encryption::default()
    };
    let keys = Keys::load(&enc).unwrap();
    let public = keys.identity.public();
    let path = netblt_crypto::authorized::default_path(&keys.dir);
    let lines: String = authorized.iter().map(|k| format!("{k}\n")).collect();
    std::fs::write(path, lines).unwrap();
    (PassiveSecurity::new(keys, &enc).unwrap(), public, tmp)
}

/// An IK initiator (the sender pinned the receiver's key).
pub(super) fn initiator(me: &Identity, receiver: PublicKey, seed: u64) -> Handshake {
    Handshake::initiator(
        InitiatorConfig {
            identity: me.clone(),
            peer: PeerAuth::Pinned(receiver),
            suites: SuiteOffer::local(),
            timestamp: super::super::initiation_timestamp(),
        },
        &mut SeededRandom::from_u64(seed),
    )
    .unwrap()
}

/// A minimal OPEN body: the fixed fields and an empty client string.
const OPEN_BODY: [u8; 28] = [0; 28];

/// The initiation `hs` writes next, as a datagram from NETBLT port `port`.
pub(super) fn initiation(hs: &mut Handshake, port: u16) -> Vec<u8> {
    let mut env = [0u8; MAX_MESSAGE_LEN];
    let n = hs.write_message(&OPEN_BODY, &mut env).unwrap();
    handshake_datagram(OPEN, port, RECV_PORT, &env[..n])
}

/// Source number `i` of a spoofed flood: distinct addresses (10.0.0.0/8)
/// and ports.
fn spoofed(i: u32) -> SocketAddr {
    let ip = Ipv4Addr::from(0x0a00_0000 | (i & 0x00ff_ffff));
    SocketAddr::V4(SocketAddrV4::new(ip, 1024 + (i % 60_000) as u16))
}

/// Drains the reply queues; returns the replies to `to`.
pub(super) fn replies_to(sec: &mut PassiveSecurity, to: SocketAddr) -> Vec<Vec<u8>> {
    let mut mine = Vec::new();
    while let Some((a, r)) = sec.next_outgoing() {
        if a == to {
            mine.push(r);
        }
    }
    mine
}

/// `n` copies of `crafted` from spoofed sources `first..first + n`, evenly
/// from `from` over `span` (a tick every 100, as the driver's loop does).
/// Returns the time of the last one.
pub(super) fn flood(
    sec: &mut PassiveSecurity,
    crafted: &[u8],
    first: u32,
    n: u32,
    from: Instant,
    span: Duration,
) -> Instant {
    let mut now = from;
    for i in 0..n {
        now = from + span * i / n;
        if i % 100 == 0 {
            sec.on_tick(now);
        }
        let mut d = crafted.to_vec();
        let _ = sec.incoming(now, spoofed(first + i), &mut d);
        while sec.next_outgoing().is_some() {}
    }
    now
}

/// The most handshakes a cookie-less flood may get read in `span`.
fn budget_for(span: Duration) -> u64 {
    u64::from(HANDSHAKE_BURST) + (span.as_secs_f64() * f64::from(HANDSHAKES_PER_SEC)) as u64 + 1
}

/// K27: one crafted IK initiation from a key not in `authorized_keys`,
/// resent from 10,000 spoofed sources over 2 s. Each one read costs the
/// receiver two Diffie-Hellmans (and is refused, giving its slot back at
/// once, so the slots never reach the cookie threshold). Before K27 all
/// 10,000 were read (1.2 s of CPU here) and no cookie was ever asked for;
/// now the budget caps them at 64 + 100 a second, the rest get cookie
/// replies.
#[test]
fn a_flood_of_refused_initiations_is_capped_by_the_handshake_budget() {
    let (mut sec, public, _tmp) = receiver(&[]);
    let attacker = Identity::generate(&mut SeededRandom::from_u64(666));
    let crafted = initiation(&mut initiator(&attacker, public, 1), 4000);
    let t0 = Instant::now();
    let span = Duration::from_secs(2);
    let n = 10_000;
    let cpu = Instant::now();
    let _ = flood(&mut sec, &crafted, 0, n, t0, span);
    let took = cpu.elapsed();
    let f = sec.flood;
    eprintln!(
        "{n} unknown-key initiations over {span:?}: {} read (2 DH each), {} refused, {} cookie replies, {} replies dropped; {took:?} of CPU",
        f.handshakes_processed, f.handshakes_failed, f.cookies_sent, f.replies_dropped
    );
    // Every one read was refused (2 X25519 each): at most the budget.
    assert_eq!(f.handshakes_failed, f.handshakes_processed, "{f:?}");
    assert!(f.handshakes_processed <= budget_for(span), "{f:?}");
    // A steady flood gets the budget's rate, no less: it is a rate, not a
    // blackout.
    assert!(f.handshakes_processed >= budget_for(span) - 3, "{f:?}");
    // The rest were asked for a cookie, and none came back (spoofed).
    assert_eq!(
        f.cookies_sent + f.replies_dropped + f.handshakes_processed,
        u64::from(n),
        "{f:?}"
    );
    assert_eq!((f.bad_cookies, sec.limiter.total()), (0, 0), "no slot kept");
    // A second flood 10 s later (the budget refilled, to its burst only).
    let _ = flood(&mut sec, &crafted, n, n, t0 + Duration::from_secs(12), span);
    assert!(sec.flood.handshakes_processed <= 2 * budget_for(span));
}

/// K27: a sender with an authorized key connects at once (no cookie) when
/// there is no flood, so do 50 starting at the same instant; during a
/// flood that spent the budget it gets a cookie reply, and its initiation
/// with the cookie is read and answered however spent the budget is.
#[test]
fn a_legitimate_sender_gets_through_a_flood_with_one_cookie_round_trip() {
    let me = Identity::generate(&mut SeededRandom::from_u64(7));
    let (mut sec, public, _tmp) = receiver(&[me.public()]);
    let t0 = Instant::now();
    let real: SocketAddr = "192.0.2.7:40000".parse().unwrap();

    // No flood: 50 connections at once, none asked for a cookie; nor 600
    // more within two seconds (K28: `send --per-file` of 200 files with 8
    // at once read 300 good initiations a second, and counting them turned
    // cookies on).
    for k in 0..650u16 {
        let mut hs = initiator(&me, public, u64::from(k));
        let mut d = initiation(&mut hs, 5000 + k);
        let from = SocketAddr::new(real.ip(), 40000 + k);
        let at = t0 + Duration::from_millis(u64::from(k.saturating_sub(50)) * 3);
        assert!(matches!(sec.incoming(at, from, &mut d), Rx::Owned(_)));
        assert!(replies_to(&mut sec, from).is_empty());
        sec.forget(from, 5000 + k);
    }
    assert_eq!(sec.flood.cookies_sent, 0);

    // A flood of refused initiations spends the budget.
    let attacker = Identity::generate(&mut SeededRandom::from_u64(666));
    let crafted = initiation(&mut initiator(&attacker, public, 1), 4000);
    let t1 = t0 + Duration::from_secs(10);
    let now = flood(&mut sec, &crafted, 0, 3000, t1, Duration::from_millis(500));
    assert!(sec.budget.spent(now));
    let before = sec.flood;

    // The legitimate sender: a cookie reply, no Diffie-Hellman.
    let mut hs = initiator(&me, public, 99);
    let mut d = initiation(&mut hs, 6000);
    assert!(matches!(sec.incoming(now, real, &mut d), Rx::Drop));
    let replies = replies_to(&mut sec, real);
    assert_eq!(replies.len(), 1);
    assert_eq!(sec.flood.handshakes_processed, before.handshakes_processed);
    assert_eq!(sec.flood.cookies_sent, before.cookies_sent + 1);
    let mut pl = [0u8; MAX_MESSAGE_LEN];
    assert_eq!(
        hs.read_message(&replies[0][netblt_wire::HEADER_LEN..], &mut pl),
        Ok(Progress::RetryWithCookie)
    );
    // The flood goes on; the retry carries the cookie and is read.
    let now = flood(
        &mut sec,
        &crafted,
        3000,
        100,
        now + Duration::from_millis(30),
        Duration::from_millis(1),
    );
    assert!(sec.budget.spent(now));
    let mut d = initiation(&mut hs, 6000);
    let open = match sec.incoming(now, real, &mut d) {
        Rx::Owned(open) => open,
        other => panic!("{other:?}; {:?}", sec.flood),
    };
    assert_eq!(ports(&open), (6000, RECV_PORT));
    // The engine's RESPONSE goes out as the handshake response, and the
    // sender reads it: both ends have their keys.
    let mut buf = vec![0u8; 2048];
    let plain = plain_open(RESPONSE, RECV_PORT, 6000, &[0u8; 28]);
    buf[..plain.len()].copy_from_slice(&plain);
    let n = sec.outgoing(real, &mut buf, plain.len()).expect("sent");
    assert!(matches!(
        hs.read_message(&buf[netblt_wire::HEADER_LEN..n], &mut pl),
        Ok(Progress::Payload(_))
    ));
    assert!(hs.is_finished());
    assert_eq!(sec.flood.bad_cookies, 0);
}

/// K27: under load, a source that can answer cookies (a real address, not
/// a spoofed one) gets no more handshakes read than its per-source limit
/// of slots (16) per 5 s: each refused one keeps its slot that long. Here
/// it resends 40 initiations, each with its port's valid cookie, 1,000
/// times a second for 6 s, while a spoofed flood keeps the budget spent.
#[test]
fn a_cookie_holder_gets_its_per_source_limit_per_five_seconds() {
    let (mut sec, public, _tmp) = receiver(&[]);
    let attacker = Identity::generate(&mut SeededRandom::from_u64(666));
    let crafted = initiation(&mut initiator(&attacker, public, 1), 4000);
    let t0 = Instant::now();
    let now = flood(&mut sec, &crafted, 0, 200, t0, Duration::from_millis(1));
    assert!(sec.budget.spent(now));
    // Cookies for 40 ports of one real address.
    let ip: IpAddr = "198.51.100.9".parse().unwrap();
    let mut with_cookie = Vec::new();
    for k in 0..40u16 {
        let from = SocketAddr::new(ip, 30000 + k);
        let mut hs = initiator(&attacker, public, 100 + u64::from(k));
        let mut d = initiation(&mut hs, 4000);
        let _ = sec.incoming(now, from, &mut d);
        let r = replies_to(&mut sec, from);
        let mut pl = [0u8; MAX_MESSAGE_LEN];
        assert_eq!(
            hs.read_message(&r[0][netblt_wire::HEADER_LEN..], &mut pl),
            Ok(Progress::RetryWithCookie)
        );
        with_cookie.push((from, initiation(&mut hs, 4000)));
    }
    let before = sec.flood.handshakes_processed;
    let span = Duration::from_secs(6);
    let mut spoof = 200;
    for ms in 0..6000u32 {
        let now = now + Duration::from_millis(u64::from(ms));
        sec.on_tick(now);
        // 5 spoofed initiations a millisecond keep the budget spent...
        let _ = flood(&mut sec, &crafted, spoof, 5, now, Duration::ZERO);
        spoof += 5;
        // ... and the cookie holder sends one of its 40.
        let (from, d) = &with_cookie[ms as usize % 40];
        let _ = sec.incoming(now, *from, &mut d.clone());
        while sec.next_outgoing().is_some() {}
    }
    let f = sec.flood;
    let read = f.handshakes_processed - before;
    eprintln!(
        "a cookie holder's 6,000 initiations and 30,000 spoofed over {span:?}: {read} read, {} limited, {} refused in all",
        f.limited, f.handshakes_failed
    );
    // 16 slots per 5 s for the holder (at 0 s, 5 s: 32), plus what the
    // budget lets through from the spoofed flood (100 a second).
    let holder_max = 16 * 2;
    assert!(
        read <= holder_max + budget_for(span) - u64::from(HANDSHAKE_BURST),
        "{f:?}"
    );
    assert!(f.limited >= 6000 - holder_max, "{f:?}");
    // When it stops, its slots come back after 5 s.
    sec.on_tick(now + span + HALF_OPEN_TIMEOUT);
    assert_eq!(sec.limiter.total(), 0);
}
