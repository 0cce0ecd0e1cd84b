//! Toy nodes shared by the simulator tests.
#![allow(dead_code)]

use netblt_sim::{Duration, Instant, Node};

/// Sends `count` datagrams of `size` bytes, one every `gap` (back to back if
/// zero), numbered in their first 4 bytes; counts what it receives.
pub(crate) struct Blaster {
    pub(crate) count: u32,
    pub(crate) size: usize,
    pub(crate) gap: Duration,
    pub(crate) sent: u32,
    pub(crate) next: Instant,
    pub(crate) sent_at: Vec<Instant>,
}

impl Blaster {
    pub(crate) fn new(count: u32, size: usize, gap: Duration) -> Self {
        Blaster {
            count,
            size,
            gap,
            sent: 0,
            next: Instant::ZERO,
            sent_at: Vec::new(),
        }
    }
}

impl Node for Blaster {
    fn handle_datagram(&mut self, _now: Instant, _data: &[u8]) {}
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.sent >= self.count || now < self.next {
            return false;
        }
        buf.extend_from_slice(&self.sent.to_be_bytes());
        buf.resize(self.size.max(4), 0xAB);
        self.sent += 1;
        self.next = now + self.gap;
        self.sent_at.push(now);
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (self.sent < self.count && !self.gap.is_zero()).then_some(self.next)
    }
    fn is_finished(&self) -> bool {
        self.sent >= self.count
    }
}

/// Records every datagram it receives; finished after `expect` of them.
#[derive(Default)]
pub(crate) struct Sink {
    pub(crate) expect: usize,
    pub(crate) got: Vec<(Instant, Vec<u8>)>,
}

impl Sink {
    pub(crate) fn new(expect: usize) -> Self {
        Sink {
            expect,
            got: Vec::new(),
        }
    }
}

impl Node for Sink {
    fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        self.got.push((now, data.to_vec()));
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, _buf: &mut Vec<u8>) -> bool {
        false
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn is_finished(&self) -> bool {
        self.got.len() >= self.expect
    }
}

/// Ping-pong: the pinger sends a ping, waits for the echo (or a timeout),
/// and sends the next; the echoer echoes everything.
pub(crate) struct Pinger {
    pub(crate) rounds: u32,
    pub(crate) size: usize,
    pub(crate) timeout: Duration,
    pub(crate) outstanding: Option<Instant>,
    pub(crate) want_send: bool,
    pub(crate) rtts: Vec<Duration>,
    pub(crate) timeouts: u32,
}

impl Pinger {
    pub(crate) fn new(rounds: u32, size: usize, timeout: Duration) -> Self {
        Pinger {
            rounds,
            size,
            timeout,
            outstanding: None,
            want_send: true,
            rtts: Vec::new(),
            timeouts: 0,
        }
    }
    fn done(&self) -> u32 {
        self.rtts.len() as u32 + self.timeouts
    }
}

impl Node for Pinger {
    fn handle_datagram(&mut self, now: Instant, _data: &[u8]) {
        if let Some(sent) = self.outstanding.take() {
            self.rtts.push(now - sent);
            self.want_send = self.done() < self.rounds;
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.outstanding.is_some_and(|s| now >= s + self.timeout) {
            self.outstanding = None;
            self.timeouts += 1;
            self.want_send = self.done() < self.rounds;
        }
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if !self.want_send {
            return false;
        }
        self.want_send = false;
        self.outstanding = Some(now);
        buf.resize(self.size, 1);
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.outstanding.map(|s| s + self.timeout)
    }
    fn is_finished(&self) -> bool {
        self.done() >= self.rounds
    }
}

/// Echoes every datagram back.
#[derive(Default)]
pub(crate) struct Echo {
    pub(crate) queue: std::collections::VecDeque<Vec<u8>>,
    pub(crate) echoed: u32,
}

impl Node for Echo {
    fn handle_datagram(&mut self, _now: Instant, data: &[u8]) {
        self.queue.push_back(data.to_vec());
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, buf: &mut Vec<u8>) -> bool {
        match self.queue.pop_front() {
            Some(d) => {
                buf.extend_from_slice(&d);
                self.echoed += 1;
                true
            }
            None => false,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn is_finished(&self) -> bool {
        true
    }
}

/// A broken node whose timer is always due: must trip the livelock guard.
pub(crate) struct Spinner;

impl Node for Spinner {
    fn handle_datagram(&mut self, _now: Instant, _data: &[u8]) {}
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, _buf: &mut Vec<u8>) -> bool {
        false
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Some(Instant::ZERO)
    }
    fn is_finished(&self) -> bool {
        false
    }
}
