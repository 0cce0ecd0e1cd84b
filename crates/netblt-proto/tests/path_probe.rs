//! The path probe (decision R58): the first copy of an active sender's
//! first OPEN is padded to a whole DATA packet of a larger size than it
//! offers, and a passive end whose connection began with that copy answers
//! with the larger size; a path that drops the padded copy keeps the offer.

mod pair;

use netblt_proto::{Config, Connection, ConnectionError, Duration, Instant, Mode, TransferParams};
use netblt_wire::{Packet, Repr};
use pair::{pattern, Pair};

/// 1400-byte packets offered, 1424 probed (IPv4, 1500-byte MTU, sealed).
fn probing(probe: Option<u16>) -> Config {
    Config {
        params: TransferParams {
            packet_size: 1400,
            buffer_size: 64 * 1400,
            burst_size: 8,
            burst_interval_ms: 1,
            max_buffers: 4,
            checksum_data: false,
        },
        death_timeout: Duration::from_secs(5),
        open_copies: 2,
        path_probe: probe,
        ..Config::default()
    }
}

/// A passive end that takes any packet size up to 16,000.
fn open_minded() -> Config {
    let mut c = probing(None);
    c.params.packet_size = 16_000;
    c.params.buffer_size = 1 << 20;
    c.params.max_buffers = 8;
    c
}

fn connect(cfg: Config, mode: Mode) -> Connection {
    Connection::connect(
        cfg,
        mode,
        7,
        5000,
        7000,
        Some(1 << 20),
        b"x".to_vec(),
        Instant::ZERO,
    )
    .unwrap()
}

/// (datagram length, P flag, padded length) of each OPEN sent at time 0.
fn opens(mut c: Connection) -> Vec<(usize, bool, u16)> {
    let mut buf = vec![0u8; c.max_datagram_size()];
    let mut out = Vec::new();
    while let Some(n) = c.poll_transmit(Instant::ZERO, &mut buf) {
        let Repr::Open(o) = Packet::parse(&buf[..n]).unwrap().repr else {
            panic!("not an OPEN")
        };
        assert_eq!(o.data_packet_size, 1400 + 24, "the offer is unchanged");
        out.push((n, o.path_probe, o.padded_len));
    }
    out
}

#[test]
fn the_padded_copy_goes_first_then_the_plain_one() {
    let sent = opens(connect(probing(Some(1424)), Mode::Write));
    // A whole DATA packet of 1424 bytes is 24 + 1424; the plain copies
    // (R32's two, which a path that drops the padded one still gets) are
    // the 36 fixed bytes and the client string's area.
    assert_eq!(sent, vec![(1448, true, 1448), (40, true, 0), (40, true, 0)]);
    // The same for a READ (the data comes back the other way).
    assert_eq!(opens(connect(probing(Some(1424)), Mode::Read)), sent);
    // No probe with a single OPEN (a dropped probe would cost the 1 s
    // retry), or for no more than is offered.
    let single = Config {
        open_copies: 1,
        ..probing(Some(1424))
    };
    assert_eq!(opens(connect(single, Mode::Write)), vec![(40, false, 0)]);
    assert_eq!(
        opens(connect(probing(Some(1400)), Mode::Write)),
        vec![(40, false, 0); 2]
    );
}

fn transfer(probe: Option<u16>, narrow: bool) -> Pair {
    let mut p = Pair::write(probing(probe), open_minded(), pattern(300_000, 3), 3);
    p.latency = Duration::from_millis(20);
    if narrow {
        narrow_path(&mut p);
    }
    assert!(p.drive(1_000_000), "{:?} {:?}", p.events_a, p.events_b);
    assert!(p.received == p.sent_data);
    p
}

/// A path a little narrower than the active end's first hop (PPPoE's 1492
/// against 1500): the padded copy is lost, as is anything as long as it,
/// both ways.
fn narrow_path(p: &mut Pair) {
    p.drop_to_b = Some(Box::new(|d: &[u8]| d.len() > 1440));
    p.drop_to_a = Some(Box::new(|d: &[u8]| d.len() > 1440));
}

/// A READ: the passive end sends, with the size the active end's padded
/// copy proved (the reverse direction taken to carry the same).
#[test]
fn a_read_gets_the_larger_packets_from_the_passive_sender() {
    for narrow in [false, true] {
        let mut p = Pair::read(probing(Some(1424)), open_minded(), pattern(300_000, 4), 4);
        p.latency = Duration::from_millis(20);
        if narrow {
            narrow_path(&mut p);
        }
        assert!(p.drive(1_000_000), "{:?} {:?}", p.events_a, p.events_b);
        assert!(p.received == p.sent_data);
        let want = if narrow { 1400 } else { 1424 };
        let b = p.b.as_ref().unwrap().params();
        assert_eq!(b.packet_size, want);
        // The passive sender's burst keeps the agreed 89.6 Mb/s at most.
        assert!(b.rate_bps() <= TransferParams::burst_rate_bps((8, 1), 1400));
        assert_eq!(p.largest, 24 + usize::from(want), "narrow {narrow}");
    }
}

#[test]
fn a_path_that_carries_the_probe_gets_the_larger_packets() {
    let p = transfer(Some(1424), false);
    assert_eq!(p.b.as_ref().unwrap().params().packet_size, 1424);
    assert_eq!(p.a.params().packet_size, 1424);
    assert_eq!(p.largest, 1448, "DATA packets of 1424 bytes");
    // The passive end refitted the burst to the larger packets, and the
    // active end took it as it came: at most the offered 89.6 Mb/s, each
    // field no less restrictive (7 per 1 ms of 1424 bytes).
    let agreed = TransferParams::burst_rate_bps((8, 1), 1400);
    for q in [p.a.params(), p.b.as_ref().unwrap().params()] {
        assert_eq!((q.burst_size, q.burst_interval_ms), (7, 1));
        assert!(q.rate_bps() <= agreed, "{} vs {agreed}", q.rate_bps());
    }
    let plain = transfer(None, false);
    assert_eq!(plain.a.params().packet_size, 1400);
    assert_eq!(plain.largest, 1424);
}

#[test]
fn a_path_that_drops_the_probe_keeps_the_offer_and_loses_no_time() {
    let p = transfer(Some(1424), true);
    assert_eq!(p.a.params().packet_size, 1400);
    assert_eq!(p.a.stats().data_packets_retransmitted, 0);
    let plain = transfer(None, true);
    // The plain copy opened the connection at once: no OPEN retry (1 s).
    assert_eq!(p.finished_at, plain.finished_at);
    assert!(p.finished_at.unwrap() < Instant::ZERO + Duration::from_millis(500));
    // The padded copy is one more than R32's two: losing a plain one as
    // well still costs no retry.
    let mut q = Pair::write(probing(Some(1424)), open_minded(), pattern(300_000, 3), 3);
    q.latency = Duration::from_millis(20);
    let mut opens = 0;
    q.drop_to_b = Some(Box::new(move |d: &[u8]| {
        let open = d.get(3) == Some(&0);
        opens += usize::from(open);
        d.len() > 1440 || (open && opens == 2)
    }));
    assert!(q.drive(1_000_000));
    assert!(q.received == q.sent_data);
    assert_eq!(q.finished_at, plain.finished_at);
}

/// The passive end decides on the copy that opened its connection: a plain
/// copy that comes first fixes the offer, and a later padded one changes
/// nothing (its RESPONSE repeats the first).
#[test]
fn the_first_copy_to_arrive_decides() {
    let mut a = connect(probing(Some(1424)), Mode::Write);
    let mut buf = vec![0u8; a.max_datagram_size()];
    let mut sent = Vec::new();
    while let Some(n) = a.poll_transmit(Instant::ZERO, &mut buf) {
        sent.push(buf[..n].to_vec());
    }
    let answer = |first: &[u8]| {
        let Repr::Open(o) = Packet::parse(first).unwrap().repr else {
            panic!()
        };
        let b = Connection::accept(open_minded(), &o, 7000, 5000, vec![], Instant::ZERO).unwrap();
        b.params().packet_size
    };
    assert_eq!(answer(&sent[0]), 1424);
    assert_eq!(answer(&sent[1]), 1400);
    // Never beyond the passive end's own limit.
    let Repr::Open(o) = Packet::parse(&sent[0]).unwrap().repr else {
        panic!()
    };
    let mut limited = open_minded();
    limited.params.packet_size = 1412;
    let b = Connection::accept(limited, &o, 7000, 5000, vec![], Instant::ZERO).unwrap();
    assert_eq!(b.params().packet_size, 1412);
}

/// The active end takes a RESPONSE with more than it offered only up to
/// what its padded copy offered (RFC 998 §4's rule otherwise).
#[test]
fn an_answer_beyond_the_probe_is_refused() {
    for (answered, ok) in [(1424u16, true), (1412, true), (1428, false)] {
        let mut a = connect(probing(Some(1424)), Mode::Write);
        let mut buf = vec![0u8; a.max_datagram_size()];
        let mut first = None;
        while let Some(n) = a.poll_transmit(Instant::ZERO, &mut buf) {
            first.get_or_insert_with(|| buf[..n].to_vec());
        }
        let first = first.unwrap();
        let Repr::Open(mut o) = Packet::parse(&first).unwrap().repr else {
            panic!()
        };
        o.data_packet_size = answered + 24;
        o.padded_len = 0;
        o.path_probe = false;
        let r = Packet {
            local_port: 7000,
            foreign_port: 5000,
            repr: Repr::Response(o),
        };
        let mut b = vec![0u8; r.buffer_len()];
        let n = r.emit(&mut b).unwrap();
        let now = Instant::ZERO + Duration::from_millis(40);
        a.handle_datagram(now, &b[..n]);
        if ok {
            assert_eq!(a.params().packet_size, answered);
            assert!(a.result().is_none());
            // The burst is the answer's: a passive end that raised the
            // packet size has refitted it already.
            let p = a.params();
            assert_eq!((p.burst_size, p.burst_interval_ms), (8, 1));
        } else {
            assert!(
                matches!(a.result(), Some(Err(ConnectionError::Negotiation { .. }))),
                "{:?}",
                a.result()
            );
        }
    }
}
