//! The two ends of a memory-to-memory NETBLT transfer as simulator
//! [`Node`]s: the sender feeds a seeded pseudo-random stream, the receiver
//! checks every delivered byte against the same stream and hashes it. Used
//! by `transfer` (two hosts) and by the dumbbell.

use netblt_proto::{Config, Connection, ConnectionError, Event, Instant};
use netblt_wire::{Packet, Repr};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Node;

/// Host A: the active end, sending a seeded pseudo-random stream.
pub(crate) struct SenderNode {
    pub(crate) conn: Connection,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) remaining: u64,
    pub(crate) hash: blake3::Hasher,
    pub(crate) spare: Vec<Vec<u8>>,
    pub(crate) error: Option<ConnectionError>,
}

impl SenderNode {
    /// A sender of `size` bytes of the stream seeded with `stream_seed`.
    pub(crate) fn new(conn: Connection, stream_seed: u64, size: u64) -> Self {
        SenderNode {
            conn,
            rng: ChaCha8Rng::seed_from_u64(stream_seed),
            remaining: size,
            hash: blake3::Hasher::new(),
            spare: Vec::new(),
            error: None,
        }
    }

    fn feed(&mut self) {
        while let Some(e) = self.conn.poll_event() {
            match e {
                Event::BufferAcked { storage, .. } => self.spare.push(storage),
                Event::Closed(err) => self.error = Some(err),
                _ => {}
            }
        }
        // The engine stops wanting buffers once the last one is given, so a
        // zero-byte transfer still pushes its one empty last buffer.
        while self.conn.wants_buffer() {
            let bsz = u64::from(self.conn.params().buffer_size);
            let n = self.remaining.min(bsz) as usize;
            let mut buf = self.spare.pop().unwrap_or_default();
            buf.resize(n, 0);
            self.rng.fill_bytes(&mut buf);
            self.hash.update(&buf);
            let last = n as u64 == self.remaining;
            if self.conn.push_buffer(buf, last).is_err() {
                break;
            }
            self.remaining -= n as u64;
            if last {
                break;
            }
        }
    }
}

impl Node for SenderNode {
    fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        self.conn.handle_datagram(now, data);
        self.feed();
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
        self.feed();
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        buf.resize(self.conn.max_datagram_size(), 0);
        match self.conn.poll_transmit(now, buf) {
            Some(n) => {
                buf.truncate(n);
                true
            }
            None => false,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }
    fn is_finished(&self) -> bool {
        self.conn.is_closed()
    }
}

/// Host B: the passive end, hashing what arrives and checking every byte
/// against the sender's stream as it is delivered.
pub(crate) struct ReceiverNode {
    pub(crate) config: Config,
    pub(crate) port: u16,
    pub(crate) conn: Option<Connection>,
    pub(crate) hash: blake3::Hasher,
    pub(crate) received: u64,
    pub(crate) error: Option<ConnectionError>,
    /// The same stream the sender generates, to compare deliveries with.
    pub(crate) expected: ChaCha8Rng,
    pub(crate) scratch: Vec<u8>,
    pub(crate) wrong_delivery: bool,
}

impl ReceiverNode {
    /// A passive end on `port` expecting the stream seeded with `stream_seed`.
    pub(crate) fn new(config: Config, port: u16, stream_seed: u64) -> Self {
        ReceiverNode {
            config,
            port,
            conn: None,
            hash: blake3::Hasher::new(),
            received: 0,
            error: None,
            expected: ChaCha8Rng::seed_from_u64(stream_seed),
            scratch: Vec::new(),
            wrong_delivery: false,
        }
    }

    fn drain(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        while let Some(e) = conn.poll_event() {
            match e {
                Event::BufferReceived { data, .. } => {
                    self.scratch.resize(data.len(), 0);
                    self.expected.fill_bytes(&mut self.scratch);
                    self.wrong_delivery |= self.scratch != data;
                    self.hash.update(&data);
                    self.received += data.len() as u64;
                    conn.recycle(data);
                }
                Event::Closed(err) => self.error = Some(err),
                _ => {}
            }
        }
    }
}

impl Node for ReceiverNode {
    fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        match self.conn.as_mut() {
            Some(c) => c.handle_datagram(now, data),
            None => {
                // Only an OPEN creates the connection (RFC 998 §5.1).
                if let Ok(Packet {
                    local_port,
                    repr: Repr::Open(o),
                    ..
                }) = Packet::parse(data)
                {
                    if let Ok(c) = Connection::accept(
                        self.config.clone(),
                        &o,
                        self.port,
                        local_port,
                        Vec::new(),
                        now,
                    ) {
                        self.conn = Some(c);
                    }
                }
            }
        }
        self.drain();
    }
    fn handle_timeout(&mut self, now: Instant) {
        if let Some(c) = self.conn.as_mut() {
            c.handle_timeout(now);
        }
        self.drain();
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        let Some(c) = self.conn.as_mut() else {
            return false;
        };
        buf.resize(c.max_datagram_size(), 0);
        match c.poll_transmit(now, buf) {
            Some(n) => {
                buf.truncate(n);
                true
            }
            None => false,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.as_ref().and_then(|c| c.poll_timeout())
    }
    fn is_finished(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_closed())
    }
}
