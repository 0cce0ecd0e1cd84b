//! Scripted transfers over the in-memory pair, with explicit time.

mod pair;

use netblt_proto::{Config, Connection, ConnectionError, Duration, Instant, TransferParams};
use pair::{pattern, Impair, Pair};

fn config(psz: u16, bsz: u32, buffers: u16) -> Config {
    Config {
        params: TransferParams {
            packet_size: psz,
            buffer_size: bsz,
            burst_size: 5,
            burst_interval_ms: 2,
            max_buffers: buffers,
            checksum_data: true,
        },
        death_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

fn run_write(len: usize, psz: u16, bsz: u32, buffers: u16, seed: u64, imp: Impair) -> Pair {
    let mut p = Pair::write(
        config(psz, bsz, buffers),
        config(psz, bsz, buffers),
        pattern(len, seed),
        seed,
    );
    p.impair_ab = imp;
    p.impair_ba = imp;
    assert!(
        p.drive(2_000_000),
        "transfer did not finish: {:?} {:?}",
        p.events_a,
        p.events_b
    );
    p
}

#[test]
fn lossless_single_buffer_lock_step() {
    let p = run_write(19_900, 1990, 19_900, 1, 1, Impair::default());
    assert!(p.received == p.sent_data);
    assert_eq!(p.a.result(), Some(&Ok(())));
    assert_eq!(p.b.as_ref().unwrap().result(), Some(&Ok(())));
    let s = p.a.stats();
    assert_eq!(s.data_packets_sent, 10);
    assert_eq!(s.data_packets_retransmitted, 0);
    assert_eq!(p.events_b[0], "\"Connected(psz=1990, bsz=19900)\"");
}

#[test]
fn lossless_many_buffers_in_order() {
    let p = run_write(1_000_003, 1000, 10_000, 4, 2, Impair::default());
    assert_eq!(p.received.len(), p.sent_data.len());
    assert!(p.received == p.sent_data);
    let rs = p.b.as_ref().unwrap().stats();
    assert_eq!(rs.buffers, 101);
    assert_eq!(rs.data_timeouts, 0);
    assert_eq!(p.a.stats().data_packets_retransmitted, 0);
}

#[test]
fn boundary_sizes() {
    for len in [0usize, 1, 999, 1000, 1001, 9_999, 10_000, 10_001, 30_001] {
        let p = run_write(len, 1000, 10_000, 2, len as u64, Impair::default());
        assert!(p.received == p.sent_data, "len {len}");
        assert_eq!(p.a.result(), Some(&Ok(())), "len {len}");
    }
}

#[test]
fn read_mode_passive_end_sends() {
    let data = pattern(55_555, 9);
    let mut p = Pair::read(
        config(1000, 10_000, 3),
        config(1000, 10_000, 3),
        data.clone(),
        9,
    );
    assert!(p.drive(2_000_000));
    assert!(p.received == data);
}

#[test]
fn passive_end_restricts_parameters() {
    let mut b = config(500, 4_000, 2);
    b.params.burst_interval_ms = 7;
    let data = pattern(20_000, 3);
    let mut p = Pair::write(config(1000, 10_000, 4), b, data.clone(), 3);
    assert!(p.drive(2_000_000));
    assert!(p.received == data);
    let params = *p.a.params();
    assert_eq!(
        (
            params.packet_size,
            params.buffer_size,
            params.max_buffers,
            params.burst_interval_ms
        ),
        (500, 4_000, 2, 7)
    );
}

#[test]
fn recovers_from_loss_both_ways() {
    for seed in 0..40 {
        let imp = Impair {
            loss: 0.2,
            duplicate: 0.05,
            corrupt: 0.05,
            reorder: 0.1,
        };
        let p = run_write(50_000, 1000, 10_000, 3, seed, imp);
        assert_eq!(
            p.a.result(),
            Some(&Ok(())),
            "seed {seed}: {:?} / {:?}",
            p.events_a,
            p.events_b
        );
        assert!(p.received == p.sent_data, "seed {seed}");
    }
}

#[test]
fn death_timer_when_receiver_vanishes() {
    let data = pattern(100_000, 4);
    let mut p = Pair::write(config(1000, 10_000, 2), config(1000, 10_000, 2), data, 4);
    p.impair_ba = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.drive(2_000_000);
    match p.a.result() {
        Some(Err(ConnectionError::OpenTimeout { .. })) => {}
        other => panic!("{other:?}"),
    }
    // Now a receiver that dies after the connection opened.
    let mut p = Pair::write(
        config(1000, 10_000, 2),
        config(1000, 10_000, 2),
        pattern(1_000_000, 5),
        5,
    );
    assert!(!p.drive(40), "should not finish in 40 steps");
    assert!(!p.received.is_empty() && p.received.len() < 1_000_000);
    p.impair_ba = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.impair_ab = Impair {
        loss: 1.0,
        ..Impair::default()
    };
    p.drive(2_000_000);
    assert!(
        matches!(
            p.a.result(),
            Some(Err(ConnectionError::DeathTimeout { .. }))
        ),
        "{:?}",
        p.a.result()
    );
    let b = p.b.as_ref().unwrap();
    assert!(
        matches!(b.result(), Some(Err(ConnectionError::DeathTimeout { .. }))),
        "{:?} after {} bytes",
        b.result(),
        p.received.len()
    );
    assert!(p.events_a.iter().any(|e| e.contains("DeathTimeout")));
    assert!(!p.events_b.iter().any(|e| e.contains("Finished")));
}

/// Storage given back with `recycle` carries the next buffers: no new
/// allocation per buffer once the pipeline is full, even with losses (whose
/// RESENDs keep more buffers in the engine at once).
#[test]
fn recycled_storage_is_reused() {
    for (seed, loss) in [(3u64, 0.0), (4, 0.05)] {
        let imp = Impair {
            loss,
            ..Impair::default()
        };
        let mut p = Pair::write(
            config(1000, 10_000, 4),
            config(1000, 10_000, 4),
            pattern(1_000_003, seed),
            seed,
        );
        p.impair_ab = imp;
        p.impair_ba = imp;
        p.recycle = true;
        assert!(p.drive(2_000_000));
        assert!(p.received == p.sent_data);
        let rs = p.b.as_ref().unwrap().stats();
        assert_eq!(rs.buffers, 101);
        // At most what can be out at once: 4 in transmission plus the
        // default receive queue of 8.
        assert!(
            rs.storage_allocations <= 12,
            "loss {loss}: {} allocations for 101 buffers",
            rs.storage_allocations
        );
    }
    // Without recycling, every buffer is an allocation (and so is every
    // buffer GO'd past the last one before its end was known: decision Z15).
    let p = run_write(1_000_003, 1000, 10_000, 4, 5, Impair::default());
    assert!(p.b.as_ref().unwrap().stats().storage_allocations >= 101);
}

/// Gathered transmission (header + payload in place + padding) puts the
/// same bytes on the wire as whole datagrams: the same seeded lossy run,
/// both ways, with odd sizes that need padding, in WRITE and READ modes.
#[test]
fn gathered_datagrams_equal_whole_ones() {
    let imp = Impair {
        loss: 0.05,
        duplicate: 0.02,
        reorder: 0.05,
        ..Impair::default()
    };
    let run = |gather: bool, read: bool| {
        let data = pattern(123_457, 9);
        let mut p = if read {
            Pair::read(config(997, 9_970, 3), config(997, 9_970, 3), data, 9)
        } else {
            Pair::write(config(997, 9_970, 3), config(997, 9_970, 3), data, 9)
        };
        p.impair_ab = imp;
        p.impair_ba = imp;
        p.gather = gather;
        assert!(p.drive(2_000_000));
        assert!(p.received == p.sent_data);
        p
    };
    for read in [false, true] {
        let (whole, gathered) = (run(false, read), run(true, read));
        assert!(gathered.gathered > 124, "DATA went out gathered");
        assert_eq!(whole.gathered, 0);
        assert_eq!(whole.events_a, gathered.events_a);
        assert_eq!(whole.events_b, gathered.events_b);
        assert_eq!(whole.a.stats(), gathered.a.stats());
        assert_eq!(whole.now, gathered.now);
    }
}

/// A receiver that closed after its last OK was acknowledged leaves the
/// sender dallying when both its DONEs were lost (the one with the last OK,
/// R26, and the one after the NULL-ACK); an ICMP "port unreachable" then
/// means the same as a DONE: the transfer succeeded. Earlier it means a
/// lost peer.
#[test]
fn port_unreachable_ends_the_dally_but_not_the_transfer() {
    let mut p = small_write(9);
    p.drop_to_a = Some(Box::new(|bytes| {
        matches!(
            netblt_wire::Packet::parse(bytes),
            Ok(netblt_wire::Packet {
                repr: netblt_wire::Repr::Done,
                ..
            })
        )
    }));
    let mut checked_open = false;
    while p.a.state() != netblt_proto::State::Dallying {
        assert!(!p.drive(p.steps + 1), "closed without dallying");
        if p.a.state() == netblt_proto::State::Open && !checked_open {
            // Mid-transfer: not the peer's normal exit; nothing changes.
            assert!(!p.a.peer_unreachable(p.now));
            assert_eq!(p.a.state(), netblt_proto::State::Open);
            checked_open = true;
        }
        assert!(p.steps < 1_000_000);
    }
    assert!(checked_open);
    assert!(p.a.peer_unreachable(p.now));
    assert!(p.a.is_closed());
    assert_eq!(p.a.result(), Some(&Ok(())));
}

/// 100 KB in buffers of ten 1000-byte packets, four outstanding.
fn small_write(seed: u64) -> Pair {
    Pair::write(
        config(1000, 10_000, 4),
        config(1000, 10_000, 4),
        pattern(100_000, seed),
        seed,
    )
}

/// Drives `p` until A (the data sender) closes: the time it closed.
fn until_sender_closes(p: &mut Pair) -> netblt_proto::Instant {
    while !p.a.is_closed() {
        assert!(p.steps < 1_000_000, "the sender never closed");
        p.drive(p.steps + 1);
    }
    p.now
}

/// Decision R26: the receiver sends DONE with its last OK, so the sender
/// closes when that OK arrives instead of dallying a round trip for the
/// DONE that followed the NULL-ACK; its NULL-ACK still goes, and the
/// receiver closes on it (not on its death timer).
#[test]
fn the_done_that_comes_with_the_last_ok_ends_the_transfer_at_once() {
    let mut p = small_write(11);
    let closed = until_sender_closes(&mut p);
    assert_eq!(p.a.result(), Some(&Ok(())));
    assert_eq!(
        p.a.stats().completed_at,
        Some(closed),
        "closed after the OK"
    );
    assert!(p.drive(1_000_000));
    let b = p.b.as_ref().unwrap();
    assert_eq!(b.result(), Some(&Ok(())));
    assert!(p.received == p.sent_data);
    // The receiver closed one round trip later, on the NULL-ACK.
    assert!(p.now <= closed + p.latency * 2, "{} vs {closed}", p.now);
    assert_eq!(p.a.stats().unexpected, 0);
}

/// The same DONE when the last OK is lost: the sender keeps it, and the
/// retransmitted OK (the receiver's control timer) ends the transfer at
/// once.
#[test]
fn a_done_before_the_last_ok_ends_the_transfer_with_that_ok() {
    use netblt_wire::{ControlMessageRef, Packet, Repr};
    let mut p = small_write(12);
    let dropped = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let d = dropped.clone();
    p.drop_to_a = Some(Box::new(move |bytes| {
        let Ok(Packet {
            repr: Repr::Control(c),
            ..
        }) = Packet::parse(bytes)
        else {
            return false;
        };
        // The first control packet with the OK of buffer 10, the last.
        let last_ok = c
            .iter()
            .any(|m| matches!(m, ControlMessageRef::Ok { buffer: 10, .. }));
        if last_ok && d.get() == 0 {
            d.set(1);
            return true;
        }
        false
    }));
    let closed = until_sender_closes(&mut p);
    assert_eq!(dropped.get(), 1, "the last OK was dropped once");
    assert_eq!(p.a.result(), Some(&Ok(())));
    assert_eq!(p.a.stats().completed_at, Some(closed), "closed with the OK");
    assert!(p.drive(1_000_000));
    assert_eq!(p.b.as_ref().unwrap().result(), Some(&Ok(())));
    assert!(p.received == p.sent_data);
}

/// A pair whose sender closed on the DONE that came with the last OK (R26)
/// and whose NULL-ACKs never reach the receiver: B has every byte and waits
/// only for the acknowledgment of its last OK.
fn receiver_left_waiting(seed: u64) -> Pair {
    let mut p = small_write(seed);
    p.drop_to_b = Some(Box::new(|bytes| {
        matches!(
            netblt_wire::Packet::parse(bytes),
            Ok(netblt_wire::Packet {
                repr: netblt_wire::Repr::NullAck(_),
                ..
            })
        )
    }));
    until_sender_closes(&mut p);
    assert_eq!(p.a.result(), Some(&Ok(())));
    assert!(p.received == p.sent_data);
    let b = p.b.as_ref().unwrap();
    assert_eq!(b.state(), netblt_proto::State::Open);
    p
}

/// Such a receiver's peer port answering "unreachable", or its own
/// application stopping, ends the transfer as the success it is; the stop
/// tells a sender that may still dally with a DONE, not an ABORT.
#[test]
fn a_receiver_with_every_byte_ends_as_a_success_when_the_sender_is_gone() {
    let mut p = receiver_left_waiting(13);
    let now = p.now;
    let b = p.b.as_mut().unwrap();
    assert!(b.peer_unreachable(now));
    assert_eq!(b.result(), Some(&Ok(())));

    let mut p = receiver_left_waiting(14);
    let now = p.now;
    let b = p.b.as_mut().unwrap();
    b.stop(now, "bye");
    assert_eq!(b.result(), Some(&Ok(())));
    let mut buf = vec![0u8; 2048];
    let n = b.poll_transmit(now, &mut buf).expect("a DONE");
    let sent = netblt_wire::Packet::parse(&buf[..n]).unwrap();
    assert!(matches!(sent.repr, netblt_wire::Repr::Done), "{sent:?}");
}

/// Stopping a receiver that still misses data aborts, as before.
#[test]
fn a_receiver_stopped_mid_transfer_aborts() {
    let mut p = small_write(15);
    while p.received.len() < 30_000 {
        assert!(!p.drive(p.steps + 1));
    }
    let now = p.now;
    let b = p.b.as_mut().unwrap();
    assert!(!b.peer_unreachable(now));
    b.stop(now, "bye");
    assert!(
        matches!(b.result(), Some(Err(ConnectionError::LocalAbort { .. }))),
        "{:?}",
        b.result()
    );
}

/// A sender that closed on the DONE without acknowledging the last OK
/// (netblt before R26 did when the OK and the DONE came in one read)
/// answers none of its retransmissions; the receiver then ends as a
/// success after `FINAL_OK_TIMEOUTS` silent control timeouts, well before
/// its death timer (5 s here).
#[test]
fn a_last_ok_unanswered_after_done_ends_the_receiver_soon() {
    let mut p = receiver_left_waiting(16);
    let closed = p.now;
    assert!(p.drive(1_000_000));
    let b = p.b.as_ref().unwrap();
    assert_eq!(b.result(), Some(&Ok(())));
    let waited = p.now.saturating_duration_since(closed);
    // Six expiries, doubling, from a 10 ms round trip: 1.6 s.
    assert!(waited < Duration::from_millis(2500), "waited {waited:?}");
}

/// An active WRITE end from port 5000 to 7000 offering 10,000 bytes.
fn active(cfg: Config, uid: u32) -> Connection {
    Connection::connect(
        cfg,
        netblt_proto::Mode::Write,
        uid,
        5000,
        7000,
        Some(10_000),
        vec![],
        Instant::ZERO,
    )
    .unwrap()
}

/// `open_copies` (R32): the first OPEN goes twice at once, later ones once
/// per timer; the copy is no attempt of its own, so the give-up time and
/// the attempt count are RFC 998's as before.
#[test]
fn the_first_open_goes_twice_and_the_copy_is_not_an_attempt() {
    let cfg = Config {
        open_copies: 2,
        ..config(1000, 10_000, 2)
    };
    let mut a = active(cfg.clone(), 7);
    let mut buf = vec![0u8; 2048];
    let mut opens_at = Vec::new();
    let mut now = Instant::ZERO;
    while a.result().is_none() {
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            let p = netblt_wire::Packet::parse(&buf[..n]).unwrap();
            assert!(matches!(p.repr, netblt_wire::Repr::Open(_)));
            opens_at.push(now);
        }
        now = a.poll_timeout().expect("a timer while opening");
        a.handle_timeout(now);
    }
    assert_eq!(opens_at[0], opens_at[1], "two at once");
    assert!(opens_at[2] > opens_at[1], "then one per timer");
    assert_eq!(opens_at.len(), cfg.open_attempts as usize + 1);
    match a.result() {
        Some(Err(ConnectionError::OpenTimeout { attempts })) => {
            assert_eq!(*attempts, cfg.open_attempts)
        }
        other => panic!("{other:?}"),
    }
    // Sent once by default.
    let mut b = active(config(1000, 10_000, 2), 8);
    let mut n_open = 0;
    while b.poll_transmit(Instant::ZERO, &mut buf).is_some() {
        n_open += 1;
    }
    assert_eq!(n_open, 1);
}

/// The passive end owes a RESPONSE per OPEN (R32): two copies that come
/// before its RESPONSE goes out draw two, so a redundant OPEN makes the
/// whole handshake redundant; a later repeat draws one more, as RFC 998
/// §5.1 has it.
#[test]
fn each_copy_of_an_open_draws_a_response() {
    let cfg = Config {
        open_copies: 2,
        ..config(1000, 10_000, 2)
    };
    let mut a = active(cfg.clone(), 9);
    let mut buf = vec![0u8; 2048];
    let mut opens = Vec::new();
    while let Some(n) = a.poll_transmit(Instant::ZERO, &mut buf) {
        opens.push(buf[..n].to_vec());
    }
    assert_eq!(opens.len(), 2);
    let mut ep = netblt_proto::Endpoint::new(config(1000, 10_000, 2), 7000);
    let from: std::net::SocketAddr = "192.0.2.9:5000".parse().unwrap();
    let now = Instant::ZERO + Duration::from_millis(10);
    let Some(netblt_proto::DatagramEvent::NewConnection(inc)) = ep.handle(now, from, &opens[0])
    else {
        panic!("no new connection")
    };
    let h = ep.accept(inc, None, vec![], now).unwrap();
    assert!(
        ep.handle(now, from, &opens[1]).is_some(),
        "the copy reaches it"
    );
    let responses = |ep: &mut netblt_proto::Endpoint, buf: &mut [u8]| {
        let mut k = 0;
        while let Some((_, n)) = ep.poll_transmit(now, buf) {
            if let Ok(p) = netblt_wire::Packet::parse(&buf[..n]) {
                k += usize::from(matches!(p.repr, netblt_wire::Repr::Response(_)));
            }
        }
        k
    };
    assert_eq!(responses(&mut ep, &mut buf), 2);
    ep.handle(now, from, &opens[0]);
    assert_eq!(responses(&mut ep, &mut buf), 1);
    assert!(ep.connection(h).is_some());
}

/// The data receiver's first control packet (its first GOs) goes twice
/// with the first OPEN's copies (R59): lost alone, it held the sender for
/// the receiver's first control timeout, 1 s. With one copy it does; with
/// two, losing the first costs nothing.
#[test]
fn the_first_control_packet_goes_twice() {
    let run = |copies: u8, lose_first: bool| {
        let cfg = Config {
            open_copies: copies,
            ..config(1000, 10_000, 4)
        };
        let mut p = Pair::write(cfg.clone(), cfg, pattern(200_000, 5), 5);
        p.latency = Duration::from_millis(50);
        let mut controls = 0;
        p.drop_to_a = Some(Box::new(move |d: &[u8]| {
            let control = d.get(3) == Some(&9);
            controls += usize::from(control);
            lose_first && control && controls == 1
        }));
        assert!(p.drive(2_000_000), "{:?} {:?}", p.events_a, p.events_b);
        assert!(p.received == p.sent_data);
        let done = p
            .finished_at
            .unwrap()
            .saturating_duration_since(Instant::ZERO);
        (done, p.b.as_ref().unwrap().stats().control_packets_sent)
    };
    let (clean, sent_clean) = run(2, false);
    let (lost, _) = run(2, true);
    assert_eq!(lost, clean, "the copy stood in for it");
    let (single_clean, sent_single) = run(1, false);
    assert_eq!(sent_clean, sent_single + 1, "one copy, once");
    let (single_lost, _) = run(1, true);
    assert!(
        single_lost >= single_clean + Duration::from_millis(900),
        "{single_lost:?} vs {single_clean:?}"
    );
}
