//! Outgoing datagrams, batched into GSO trains.
//!
//! The engine writes one datagram per `poll_transmit`. We let it write
//! straight into the tail of the current *train*: a run of datagrams to one
//! destination, all of one size but the last (the rule of `UDP_SEGMENT`).
//! DATA packets of one buffer have one size, and the pacer releases them
//! `pacing_quantum` at a time, so a quantum usually leaves in one `sendmsg`;
//! [`TRAINS`] trains go out per `sendmmsg`. A datagram that cannot join the
//! open train (other size or destination) is moved to the start of a new one:
//! a copy of at most one control packet per train. Nothing is allocated after
//! construction.

use std::io;
use std::net::SocketAddr;

use netblt_udp::{DatagramSocket, Transmit, BATCH};

/// Trains held before a flush: one `sendmmsg`'s worth.
pub const TRAINS: usize = BATCH;
/// Bytes reserved per train: a UDP datagram's limit over IPv4 (65,507),
/// which bounds a GSO train.
const TRAIN_BYTES: usize = 65_507;

#[derive(Debug, Clone, Copy)]
struct Train {
    dest: SocketAddr,
    len: usize,
    seg: usize,
    count: usize,
    closed: bool,
}

/// Where [`TxQueue::slot`] pointed the engine.
#[derive(Debug, Clone, Copy)]
enum Slot {
    None,
    /// At the tail of open train `i`.
    Tail(usize),
    /// At the start of a new train.
    New,
}

/// Queue of outgoing trains; see the module docs.
pub struct TxQueue {
    /// `TRAINS + 1` regions of `TRAIN_BYTES`: the spare one receives a
    /// datagram that was written at the tail of the last train but cannot
    /// join it.
    buf: Vec<u8>,
    trains: Vec<Train>,
    /// First train not yet handed to the kernel.
    head: usize,
    slot: Slot,
    max_segments: usize,
    /// Largest datagram the engine may write (its `max_datagram_size`).
    max_datagram: usize,
    /// Datagrams queued and send syscalls made, for reports.
    pub datagrams: u64,
    pub syscalls: u64,
}

impl TxQueue {
    pub fn new(max_segments: usize, max_datagram: usize) -> TxQueue {
        TxQueue {
            buf: vec![0; (TRAINS + 1) * TRAIN_BYTES],
            trains: Vec::with_capacity(TRAINS + 1),
            head: 0,
            slot: Slot::None,
            max_segments: max_segments.clamp(1, netblt_udp::MAX_SEGMENTS),
            max_datagram: max_datagram.clamp(64, TRAIN_BYTES),
            datagrams: 0,
            syscalls: 0,
        }
    }

    pub fn set_max_datagram(&mut self, n: usize) {
        self.max_datagram = n.clamp(64, TRAIN_BYTES);
    }

    pub fn is_empty(&self) -> bool {
        self.head >= self.trains.len()
    }

    /// Where the engine may write the next datagram, or `None` when the
    /// queue is full (flush first). Follow with [`commit`](Self::commit) if
    /// something was written.
    pub fn slot(&mut self) -> Option<&mut [u8]> {
        let need = self.max_datagram;
        let n = self.trains.len();
        let (slot, off) = match self.trains.last() {
            Some(t)
                if n <= TRAINS
                    && !t.closed
                    && TRAIN_BYTES - t.len >= need
                    && t.count < self.max_segments =>
            {
                (Slot::Tail(n - 1), (n - 1) * TRAIN_BYTES + t.len)
            }
            _ if n < TRAINS => (Slot::New, n * TRAIN_BYTES),
            _ => return None,
        };
        self.slot = slot;
        let end = match slot {
            Slot::Tail(i) => (i + 1) * TRAIN_BYTES,
            _ => off + TRAIN_BYTES,
        };
        self.buf.get_mut(off..end)
    }

    /// Records the `n`-byte datagram just written into [`slot`](Self::slot).
    pub fn commit(&mut self, dest: SocketAddr, n: usize) {
        self.datagrams += 1;
        let fresh = Train {
            dest,
            len: n,
            seg: n,
            count: 1,
            closed: false,
        };
        match std::mem::replace(&mut self.slot, Slot::None) {
            Slot::None => {}
            Slot::New => self.trains.push(fresh),
            Slot::Tail(i) => {
                let Some(t) = self.trains.get_mut(i) else {
                    return;
                };
                if t.dest == dest && n <= t.seg {
                    t.len += n;
                    t.count += 1;
                    // A shorter datagram ends a GSO train.
                    t.closed = n < t.seg;
                    return;
                }
                // Cannot join: close the train and move the datagram to the
                // start of the next region (the spare one at worst).
                t.closed = true;
                let from = i * TRAIN_BYTES + t.len;
                let to = (i + 1) * TRAIN_BYTES;
                if to + n <= self.buf.len() {
                    self.buf.copy_within(from..from + n, to);
                    self.trains.push(fresh);
                }
            }
        }
    }

    /// Hands queued trains to the kernel. `Ok(true)` when everything went,
    /// `Ok(false)` when the socket is full (wait for writability and call
    /// again). Other errors (e.g. `ECONNREFUSED`) are returned as they are.
    pub fn flush(&mut self, sock: &dyn DatagramSocket) -> io::Result<bool> {
        while self.head < self.trains.len() {
            let pending = &self.trains[self.head..];
            let mut ts: [Transmit<'_>; TRAINS] = [Transmit {
                destination: pending[0].dest,
                contents: &[],
                segment_size: None,
            }; TRAINS];
            let n = pending.len().min(TRAINS);
            for (k, t) in pending.iter().take(n).enumerate() {
                let i = self.head + k;
                let off = i * TRAIN_BYTES;
                ts[k] = Transmit {
                    destination: t.dest,
                    contents: &self.buf[off..off + t.len],
                    segment_size: (t.count > 1).then_some(t.seg),
                };
            }
            self.syscalls += 1;
            match sock.send_batch(&ts[..n]) {
                Ok(k) => self.head += k.max(1).min(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => {
                    // Drop what failed: the engine recovers lost data, and
                    // the caller decides whether the error is fatal.
                    self.head += 1;
                    self.reset_if_done();
                    return Err(e);
                }
            }
        }
        self.reset_if_done();
        Ok(true)
    }

    fn reset_if_done(&mut self) {
        if self.head >= self.trains.len() {
            self.trains.clear();
            self.head = 0;
        }
    }
}
