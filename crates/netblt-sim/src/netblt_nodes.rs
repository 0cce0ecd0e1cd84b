//! The two ends of a memory-to-memory NETBLT transfer as simulator
//! [`Node`]s: the sender feeds a seeded pseudo-random stream, the receiver
//! checks every delivered byte against the same stream and hashes it. Used
//! by `transfer` (two hosts) and by the dumbbell.

use std::collections::VecDeque;

use netblt_proto::{Config, Connection, ConnectionError, Event, Instant, RateLimits};
use netblt_wire::{ControlMessage, ControlWriter};
use netblt_wire::{Packet, Repr};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Node;

/// Rate limits an application sets at given times: the sender's own (R27)
/// or the receiver's, which reach the sender in its OKs (R31).
#[derive(Debug, Default)]
pub(crate) struct LimitSchedule(VecDeque<(Instant, RateLimits)>);

impl LimitSchedule {
    pub(crate) fn new(steps: impl IntoIterator<Item = (Instant, RateLimits)>) -> Self {
        LimitSchedule(steps.into_iter().collect())
    }

    /// Sets on `conn` the limits whose time has come; whether there were any.
    pub(crate) fn apply_due(&mut self, now: Instant, conn: &mut Connection) -> bool {
        let mut limited = false;
        while let Some(&(_, l)) = self.0.front().filter(|(at, _)| *at <= now) {
            conn.set_rate_limits(l);
            self.0.pop_front();
            limited = true;
        }
        limited
    }

    /// When the next limit is due.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.0.front().map(|&(at, _)| at)
    }
}

/// The earlier of an engine's timer and a schedule's next step.
fn earliest(engine: Option<Instant>, schedule: Option<Instant>) -> Option<Instant> {
    match (engine, schedule) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Host A: the active end, sending a seeded pseudo-random stream.
pub(crate) struct SenderNode {
    pub(crate) conn: Connection,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) remaining: u64,
    pub(crate) hash: blake3::Hasher,
    pub(crate) spare: Vec<Vec<u8>>,
    pub(crate) error: Option<ConnectionError>,
    /// The application's rate limits to set, at their times (R27).
    pub(crate) limits: LimitSchedule,
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
            limits: LimitSchedule::default(),
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
        let limited = self.limits.apply_due(now, &mut self.conn);
        // A wake-up for a limit alone is not the engine's timer.
        if !limited || self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
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
        let next_limit = self.limits.next().filter(|_| !self.conn.is_closed());
        earliest(self.conn.poll_timeout(), next_limit)
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
    /// Send each control message in a CONTROL packet of its own (the 1987
    /// implementation before RFC 1030 §7's change; see [`split_control`]).
    pub(crate) one_message_per_packet: bool,
    /// Packets of one split CONTROL packet still to send.
    split: VecDeque<Vec<u8>>,
    /// Highest control sequence number sent so far.
    highest_seq: Option<u16>,
    /// The receiving application's rate limits, at their times (R31); set
    /// once the connection exists.
    pub(crate) limits: LimitSchedule,
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
            one_message_per_packet: false,
            split: VecDeque::new(),
            highest_seq: None,
            limits: LimitSchedule::default(),
        }
    }

    /// Splits the CONTROL packet the engine wrote into `buf` into one packet
    /// per message, as the implementation that ran RFC 1030's appendices II
    /// and III did: §7 tells how, during the Wideband tests, "packing as many
    /// control messages as possible into a single control packet (rather than
    /// placing only one message in a control packet) ... reduced the number of
    /// control packets transmitted to one per buffer transmission ... messages
    /// of the form OK(n) were combined with messages of the form GO(n + 1)",
    /// and that "control messages are now stored in a single long-lived
    /// packet ... Every time a new message needs to be transmitted, any
    /// unACKed old messages are transmitted as well". Before those changes a
    /// message went out once in a packet of its own and again only when the
    /// control timer expired. So: the messages new in this packet each get a
    /// packet; a packet with no new message is the control timer's
    /// retransmission, and each of its messages gets a packet. Leaves the
    /// first packet in `buf` and queues the rest; anything that is not a
    /// CONTROL packet is left alone.
    fn split_control(&mut self, buf: &mut Vec<u8>) {
        let (msgs, lp, fp): (Vec<ControlMessage>, u16, u16) = match Packet::parse(buf) {
            Ok(Packet {
                local_port,
                foreign_port,
                repr: Repr::Control(c),
                ..
            }) => (
                c.iter().map(|m| m.to_owned()).collect(),
                local_port,
                foreign_port,
            ),
            _ => return,
        };
        let newer =
            |seq: u16, than: Option<u16>| than.is_none_or(|h| (seq.wrapping_sub(h) as i16) > 0);
        let fresh: Vec<&ControlMessage> = msgs
            .iter()
            .filter(|m| newer(m.seq(), self.highest_seq))
            .collect();
        let send: Vec<&ControlMessage> = if fresh.is_empty() {
            msgs.iter().collect()
        } else {
            fresh
        };
        for m in &send {
            if newer(m.seq(), self.highest_seq) {
                self.highest_seq = Some(m.seq());
            }
        }
        let mut out = Vec::new();
        for m in send {
            let mut pkt = vec![0u8; 12 + m.buffer_len()];
            let Ok(mut w) = ControlWriter::new(&mut pkt) else {
                return;
            };
            if w.push(m).is_err() {
                return;
            }
            let n = w.finish(lp, fp);
            pkt.truncate(n);
            out.push(pkt);
        }
        let mut it = out.into_iter();
        if let Some(first) = it.next() {
            buf.clear();
            buf.extend_from_slice(&first);
            self.split.extend(it);
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
            let limited = self.limits.apply_due(now, c);
            if !limited || c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        self.drain();
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if let Some(p) = self.split.pop_front() {
            buf.clear();
            buf.extend_from_slice(&p);
            return true;
        }
        let Some(c) = self.conn.as_mut() else {
            return false;
        };
        buf.resize(c.max_datagram_size(), 0);
        match c.poll_transmit(now, buf) {
            Some(n) => {
                buf.truncate(n);
                if self.one_message_per_packet {
                    self.split_control(buf);
                }
                true
            }
            None => false,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        let c = self.conn.as_ref()?;
        let next_limit = self.limits.next().filter(|_| !c.is_closed());
        earliest(c.poll_timeout(), next_limit)
    }
    fn is_finished(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_closed())
    }
}
