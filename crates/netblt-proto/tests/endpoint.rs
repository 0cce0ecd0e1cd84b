//! One `Endpoint` serving two senders at once, with junk mixed in, over an
//! in-memory wire with explicit time (1 ms each way, nothing lost).

mod pair;

use std::net::SocketAddr;

use netblt_proto::{
    Config, Connection, ConnectionHandle, DatagramEvent, Duration, Endpoint, Event, Instant, Mode,
    TransferParams,
};
use pair::pattern;

const PORT: u16 = 7000;

fn config() -> Config {
    Config {
        params: TransferParams {
            packet_size: 1000,
            buffer_size: 10_000,
            burst_size: 5,
            burst_interval_ms: 1,
            max_buffers: 3,
            checksum_data: true,
        },
        death_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

struct Client {
    addr: SocketAddr,
    conn: Connection,
    data: Vec<u8>,
    pushed: usize,
}

impl Client {
    fn new(i: u16, len: usize) -> Client {
        let data = pattern(len, u64::from(i));
        let conn = Connection::connect(
            config(),
            Mode::Write,
            0x1000 + u32::from(i),
            5000 + i,
            PORT,
            Some(len as u64),
            vec![],
            Instant::ZERO,
        )
        .unwrap();
        Client {
            addr: format!("192.0.2.{i}:{}", 5000 + i).parse().unwrap(),
            conn,
            data,
            pushed: 0,
        }
    }

    fn feed(&mut self) {
        while self.pushed <= self.data.len() && self.conn.wants_buffer() {
            let end = (self.pushed + 10_000).min(self.data.len());
            let last = end == self.data.len();
            self.conn
                .push_buffer(self.data[self.pushed..end].to_vec(), last)
                .unwrap();
            self.pushed = if last { self.data.len() + 1 } else { end };
        }
        while self.conn.poll_event().is_some() {}
    }
}

#[test]
fn serves_two_senders_and_counts_junk() {
    let mut ep = Endpoint::new(config(), PORT);
    let mut clients = [Client::new(1, 123_457), Client::new(2, 64_000)];
    let mut received: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    let mut accepted: Vec<ConnectionHandle> = Vec::new();
    // (arrival, to the endpoint?, client index, bytes)
    let mut wire: Vec<(Instant, bool, usize, Vec<u8>)> = Vec::new();
    let delay = Duration::from_millis(1);
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 70_000];
    let junk_from: SocketAddr = "198.51.100.9:4000".parse().unwrap();
    for step in 0..200_000u64 {
        for (i, c) in clients.iter_mut().enumerate() {
            c.feed();
            while let Some(n) = c.conn.poll_transmit(now, &mut buf) {
                wire.push((now + delay, true, i, buf[..n].to_vec()));
            }
        }
        while let Some((to, n)) = ep.poll_transmit(now, &mut buf) {
            if let Some(i) = clients.iter().position(|c| c.addr == to) {
                wire.push((now + delay, false, i, buf[..n].to_vec()));
            }
        }
        for &h in &accepted {
            let remote = ep.remote(h);
            if let Some(c) = ep.connection_mut(h) {
                while let Some(e) = c.poll_event() {
                    if let (Event::BufferReceived { data, .. }, Some(r)) = (e, remote) {
                        match received.iter_mut().find(|(a, _)| *a == r) {
                            Some((_, v)) => v.extend_from_slice(&data),
                            None => received.push((r, data)),
                        }
                    }
                }
            }
        }
        // Junk every few steps: garbage, and a well-formed KEEPALIVE for a
        // port nobody listens on.
        if step % 7 == 0 {
            assert!(ep.handle(now, junk_from, &[0xff; 40]).is_none());
            let stray = netblt_wire::Packet {
                local_port: 4000,
                foreign_port: PORT + 1,
                repr: netblt_wire::Repr::Keepalive,
            };
            let n = stray.emit(&mut buf).unwrap();
            assert!(ep.handle(now, junk_from, &buf[..n]).is_none());
        }
        let all_closed = clients.iter().all(|c| c.conn.is_closed())
            && accepted
                .iter()
                .all(|&h| ep.connection(h).is_none_or(|c| c.is_closed()));
        if all_closed && wire.is_empty() && !accepted.is_empty() {
            break;
        }
        let next = wire
            .iter()
            .map(|w| w.0)
            .chain(clients.iter().filter_map(|c| c.conn.poll_timeout()))
            .chain(ep.poll_timeout())
            .min();
        let Some(next) = next else { break };
        now = now.max(next);
        let (due, later): (Vec<_>, Vec<_>) = wire.drain(..).partition(|w| w.0 <= now);
        wire = later;
        for (_, to_ep, i, bytes) in due {
            if !to_ep {
                clients[i].conn.handle_datagram(now, &bytes);
                continue;
            }
            if let Some(DatagramEvent::NewConnection(inc)) = ep.handle(now, clients[i].addr, &bytes)
            {
                accepted.push(ep.accept(inc, None, b"ok".to_vec(), now).unwrap());
            }
        }
        for c in clients.iter_mut() {
            if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                c.conn.handle_timeout(now);
            }
        }
        ep.handle_timeout(now);
    }
    assert_eq!(accepted.len(), 2);
    for c in &clients {
        assert_eq!(c.conn.result(), Some(&Ok(())), "client {}", c.addr);
        let got = received.iter().find(|(a, _)| *a == c.addr).map(|(_, v)| v);
        assert!(got == Some(&c.data), "client {}: data differs", c.addr);
    }
    for &h in &accepted {
        let s = ep.connection(h).unwrap().stats();
        // Every datagram routed to a connection is counted by it.
        assert!(s.datagrams_received > s.data_packets_received, "{s:?}");
        assert!(s.bytes_received > s.bytes_transferred, "{s:?}");
    }
    assert!(ep.stats().malformed > 0);
    assert!(ep.stats().stray > 0);
}

/// A sender whose address changes mid-transfer (a NAT rebinding its
/// mapping): its packets from the new address are strays until the caller
/// moves the connection there, then the transfer completes, every reply
/// going to the new address; nothing reaches the old one afterwards.
#[test]
fn a_connection_moved_to_a_new_address_completes_there() {
    let mut ep = Endpoint::new(config(), PORT);
    let mut c = Client::new(3, 200_000);
    let old = c.addr;
    let new: SocketAddr = "203.0.113.7:61000".parse().unwrap();
    let mut handle = None;
    let mut received = Vec::new();
    // (arrival, to the endpoint?, bytes)
    let mut wire: Vec<(Instant, bool, Vec<u8>)> = Vec::new();
    let delay = Duration::from_millis(1);
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 70_000];
    let (mut to_ep, mut strays_seen, mut after_move_to_old) = (0u64, 0u64, 0u64);
    let mut moved = false;
    for _ in 0..200_000u64 {
        c.feed();
        while let Some(n) = c.conn.poll_transmit(now, &mut buf) {
            wire.push((now + delay, true, buf[..n].to_vec()));
        }
        while let Some((to, n)) = ep.poll_transmit(now, &mut buf) {
            if moved && to == old {
                after_move_to_old += 1;
            }
            if to == c.addr {
                wire.push((now + delay, false, buf[..n].to_vec()));
            }
        }
        if let Some(h) = handle {
            if let Some(conn) = ep.connection_mut(h) {
                while let Some(e) = conn.poll_event() {
                    if let Event::BufferReceived { data, .. } = e {
                        received.extend_from_slice(&data);
                    }
                }
            }
        }
        let server_closed = handle.is_some_and(|h| ep.connection(h).is_none_or(|x| x.is_closed()));
        if c.conn.is_closed() && server_closed && wire.is_empty() {
            break;
        }
        let next = wire
            .iter()
            .map(|w| w.0)
            .chain(c.conn.poll_timeout())
            .chain(ep.poll_timeout())
            .min();
        let Some(next) = next else { break };
        now = now.max(next);
        let (due, later): (Vec<_>, Vec<_>) = wire.drain(..).partition(|w| w.0 <= now);
        wire = later;
        for (_, for_ep, bytes) in due {
            if !for_ep {
                c.conn.handle_datagram(now, &bytes);
                continue;
            }
            to_ep += 1;
            if to_ep == 40 {
                // The mapping changes: from now on the sender's packets
                // come from `new`, and what goes to `old` is lost.
                c.addr = new;
            }
            if c.addr == new && !moved {
                let before = ep.stats().stray;
                assert!(ep.handle(now, new, &bytes).is_none());
                assert_eq!(ep.stats().stray, before + 1, "unknown address: a stray");
                strays_seen += 1;
                if strays_seen == 3 {
                    // What the secure layer does once a packet from `new`
                    // opens with this connection's keys.
                    assert_eq!(ep.migrate(old, 5003, new), handle);
                    assert_eq!(ep.migrate(old, 5003, new), None, "already moved");
                    assert_eq!(handle.and_then(|h| ep.remote(h)), Some(new));
                    moved = true;
                }
                continue;
            }
            if let Some(DatagramEvent::NewConnection(inc)) = ep.handle(now, c.addr, &bytes) {
                handle = Some(ep.accept(inc, None, b"ok".to_vec(), now).unwrap());
            }
        }
        if c.conn.poll_timeout().is_some_and(|t| t <= now) {
            c.conn.handle_timeout(now);
        }
        ep.handle_timeout(now);
    }
    assert!(moved);
    assert_eq!(c.conn.result(), Some(&Ok(())));
    assert!(received == c.data, "data differs");
    assert_eq!(after_move_to_old, 0);
    assert_eq!(ep.stats().migrated, 1);
}

/// Z25: a sender that names another port than ours (it dialled a port
/// forward: 9000 outside, the endpoint's 7000 inside). An endpoint
/// answering any port serves it as the port it called, every packet it
/// sends naming 9000 as its own; one that does not drops it all as stray.
#[test]
fn an_endpoint_answering_any_port_answers_as_the_port_called() {
    const CALLED: u16 = 9000;
    for any in [true, false] {
        let mut ep = Endpoint::new(config(), PORT);
        if any {
            ep = ep.answer_any_port();
        }
        let data = pattern(50_000, 9);
        let conn = Connection::connect(
            config(),
            Mode::Write,
            0x2000,
            5009,
            CALLED,
            Some(data.len() as u64),
            vec![],
            Instant::ZERO,
        )
        .unwrap();
        let mut c = Client {
            addr: "192.0.2.9:5009".parse().unwrap(),
            conn,
            data,
            pushed: 0,
        };
        let mut handle = None;
        let mut received = Vec::new();
        let mut wire: Vec<(Instant, bool, Vec<u8>)> = Vec::new();
        let mut now = Instant::ZERO;
        let mut buf = vec![0u8; 70_000];
        for _ in 0..100_000u64 {
            c.feed();
            while let Some(n) = c.conn.poll_transmit(now, &mut buf) {
                wire.push((now + Duration::from_millis(1), true, buf[..n].to_vec()));
            }
            while let Some((_, n)) = ep.poll_transmit(now, &mut buf) {
                let p = netblt_wire::Packet::parse(&buf[..n]).unwrap();
                assert_eq!(p.local_port, CALLED, "answers as the port called");
                wire.push((now + Duration::from_millis(1), false, buf[..n].to_vec()));
            }
            if let Some(h) = handle {
                while let Some(e) = ep.connection_mut(h).and_then(|x| x.poll_event()) {
                    if let Event::BufferReceived { data, .. } = e {
                        received.extend_from_slice(&data);
                    }
                }
            }
            if c.conn.is_closed() && wire.is_empty() {
                break;
            }
            let next = wire
                .iter()
                .map(|w| w.0)
                .chain(c.conn.poll_timeout())
                .chain(ep.poll_timeout())
                .min();
            let Some(next) = next else { break };
            now = now.max(next);
            let (due, later): (Vec<_>, Vec<_>) = wire.drain(..).partition(|w| w.0 <= now);
            wire = later;
            for (_, for_ep, bytes) in due {
                if !for_ep {
                    c.conn.handle_datagram(now, &bytes);
                } else if let Some(DatagramEvent::NewConnection(inc)) =
                    ep.handle(now, c.addr, &bytes)
                {
                    handle = Some(ep.accept(inc, None, b"ok".to_vec(), now).unwrap());
                }
            }
            if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                c.conn.handle_timeout(now);
            }
            ep.handle_timeout(now);
        }
        if any {
            assert_eq!(c.conn.result(), Some(&Ok(())));
            assert!(received == c.data, "data differs");
            assert_eq!(ep.stats().stray, 0);
        } else {
            assert!(handle.is_none(), "a port not ours was served");
            assert!(c.conn.result().is_some_and(|r| r.is_err()));
            assert!(ep.stats().stray > 0);
        }
    }
}
