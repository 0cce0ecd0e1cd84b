//! Drives a whole conversation through the engine with the fuzzer as the network: an active
//! `Connection` and a passive `Endpoint` exchange packets over an in-memory wire with explicit
//! time, and the input decides, step by step, what the wire does: deliver, drop, duplicate,
//! reorder, corrupt a packet in flight, inject bytes of its own from the peer's address or a
//! stranger's, move the peer to a new address, change either end's rate limits (a data
//! receiver's go to the sender in its OKs), or let time pass. With or without the tool's
//! additions (redundant first OPEN, the size hint, doubled tail resends). Either direction (WRITE or
//! READ), RFC 998's fixed rate or the adaptive controller with FEEDBACK. Nothing may panic;
//! time never runs backwards for the engine; a transfer that ends well has delivered exactly
//! the bytes sent, in order, when no packet was corrupted or injected.

#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use netblt_proto::{
    Config, Connection, ConnectionHandle, DatagramEvent, Duration, Endpoint, Event, Instant, Mode,
    Policy, RateConfig, RateLimits, TransferParams,
};

const PORT: u16 = 7000;
const CLIENT_PORT: u16 = 5000;
const LEN: usize = 40_000;

fn config(adaptive: bool, tool: bool) -> Config {
    Config {
        // The tool's additions to RFC 998's behaviour (R32-R34), or none.
        open_copies: if tool { 2 } else { 1 },
        size_hint: tool,
        double_tail: tool,
        params: TransferParams {
            packet_size: 1000,
            buffer_size: 4_000,
            burst_size: 4,
            burst_interval_ms: 1,
            max_buffers: 4,
            checksum_data: true,
        },
        death_timeout: Duration::from_secs(5),
        rate_feedback: adaptive,
        rate: RateConfig {
            policy: if adaptive {
                Policy::Fair
            } else {
                Policy::Fixed
            },
            ..RateConfig::default()
        },
        ..Config::default()
    }
}

/// The input, read a byte at a time (zeros once it runs out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a.to_vec()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The data sender's side: pushes `data` in buffers as the engine asks.
fn feed(conn: &mut Connection, data: &[u8], pushed: &mut usize) {
    while *pushed <= data.len() && conn.wants_buffer() {
        let end = (*pushed + 4_000).min(data.len());
        let last = end == data.len();
        if conn.push_buffer(data[*pushed..end].to_vec(), last).is_err() {
            return;
        }
        *pushed = if last { data.len() + 1 } else { end };
    }
}

fuzz_target!(|raw: &[u8]| {
    let mut input = Input(raw);
    let flags = input.byte();
    let mode = if flags & 1 == 0 {
        Mode::Write
    } else {
        Mode::Read
    };
    let adaptive = flags & 2 != 0;
    let tool = flags & 4 != 0;
    // Z25: the endpoint the UDP driver makes answers any port, and the
    // client then calls it on another one (a port forward).
    let any_port = flags & 8 != 0;
    let data: Vec<u8> = (0..LEN).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut now = Instant::ZERO;
    let mut client = match Connection::connect(
        config(adaptive, tool),
        mode,
        0xfeed,
        CLIENT_PORT,
        if any_port { PORT + 1 } else { PORT },
        Some(LEN as u64),
        vec![],
        now,
    ) {
        Ok(c) => c,
        Err(_) => return,
    };
    let mut ep = Endpoint::new(config(adaptive, tool), PORT);
    if any_port {
        ep = ep.answer_any_port();
    }
    let mut client_addr: SocketAddr = "192.0.2.1:5000".parse().unwrap();
    let stranger: SocketAddr = "198.51.100.2:5000".parse().unwrap();
    let mut handle: Option<ConnectionHandle> = None;
    // Packets in flight: (to the endpoint?, bytes).
    let mut wire: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut received = Vec::new();
    let (mut client_pushed, mut server_pushed) = (0usize, 0usize);
    let mut tampered = false;
    let mut buf = vec![0u8; 70_000];
    for _ in 0..4_000 {
        if input.is_empty() && wire.is_empty() {
            break;
        }
        // Each side sends what it has.
        if mode == Mode::Write {
            feed(&mut client, &data, &mut client_pushed);
        }
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            wire.push((true, buf[..n].to_vec()));
        }
        if let Some(h) = handle {
            if let Some(c) = ep.connection_mut(h) {
                if mode == Mode::Read {
                    feed(c, &data, &mut server_pushed);
                }
                while let Some(e) = c.poll_event() {
                    if let Event::BufferReceived { data: d, .. } = e {
                        received.extend_from_slice(&d);
                    }
                }
            }
        }
        while let Some((to, n)) = ep.poll_transmit(now, &mut buf) {
            if to == client_addr {
                wire.push((false, buf[..n].to_vec()));
            }
        }
        while let Some(e) = client.poll_event() {
            if let Event::BufferReceived { data: d, .. } = e {
                received.extend_from_slice(&d);
            }
        }
        if wire.len() > 512 {
            wire.drain(..wire.len() - 512);
        }
        // The network's move.
        let op = input.byte();
        let pick = usize::from(input.byte());
        let mut deliver = |to_ep: bool, bytes: &[u8], from: SocketAddr, now: Instant| {
            if to_ep {
                if let Some(DatagramEvent::NewConnection(inc)) = ep.handle(now, from, bytes) {
                    if let Ok(h) = ep.accept(inc, None, b"ok".to_vec(), now) {
                        handle = Some(h);
                    }
                }
            } else {
                client.handle_datagram(now, bytes);
            }
        };
        match op % 8 {
            // Deliver the oldest packets in order (most of the time).
            0..=2 => {
                for (to_ep, bytes) in wire.drain(..wire.len().min(1 + pick % 16)) {
                    deliver(to_ep, &bytes, client_addr, now);
                }
            }
            // Deliver one out of order, or duplicate it.
            3 if !wire.is_empty() => {
                let i = pick % wire.len();
                let (to_ep, bytes) = if op & 8 == 0 {
                    wire.remove(i)
                } else {
                    wire[i].clone()
                };
                deliver(to_ep, &bytes, client_addr, now);
            }
            // Drop one.
            4 if !wire.is_empty() => {
                let i = pick % wire.len();
                wire.remove(i);
            }
            // Corrupt one in flight: a few bytes at input-chosen places.
            5 if !wire.is_empty() => {
                let i = pick % wire.len();
                let p = &mut wire[i].1;
                for _ in 0..1 + input.byte() % 4 {
                    if p.is_empty() {
                        break;
                    }
                    let at = usize::from(input.byte()) * 7 % p.len();
                    p[at] ^= input.byte() | 1;
                }
                tampered = true;
            }
            // Inject bytes of the input's own, from the peer or a stranger.
            6 => {
                let n = usize::from(input.byte()) * 8;
                let junk = input.bytes(n);
                let to_ep = op & 8 == 0;
                let from = if op & 16 == 0 { client_addr } else { stranger };
                deliver(to_ep, &junk, from, now);
                tampered = true;
            }
            // Time passes; now and then the peer's address changes, or either
            // end's application changes its rate limits.
            _ => {
                now = now + Duration::from_micros(pick as u64 * 997 + 1);
                if op & 32 != 0 {
                    let max = match input.byte() {
                        0 => None,
                        b => Some(u64::from(b) * 100_000),
                    };
                    let limits = RateLimits {
                        min_bps: u64::from(input.byte()) * 10_000,
                        max_bps: max,
                    };
                    if op & 128 == 0 {
                        client.set_rate_limits(limits);
                    } else if let Some(c) = handle.and_then(|h| ep.connection_mut(h)) {
                        c.set_rate_limits(limits);
                    }
                }
                if op & 64 != 0 {
                    let moved: SocketAddr =
                        format!("203.0.113.{}:{}", pick % 250 + 1, 40_000 + pick)
                            .parse()
                            .unwrap();
                    if ep.migrate(client_addr, CLIENT_PORT, moved).is_some() {
                        client_addr = moved;
                    }
                }
            }
        }
        // Timers that are due.
        if client.poll_timeout().is_some_and(|t| t <= now) {
            client.handle_timeout(now);
        }
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        if input.is_empty() {
            // Out of input: let the transfer run to its end with a clean wire.
            now = [client.poll_timeout(), ep.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .map_or(now, |t| t.max(now));
        }
    }
    if client.result() == Some(&Ok(())) && !tampered {
        assert!(received.len() <= data.len());
        assert_eq!(received, data[..received.len()], "delivered bytes differ");
    }
});
