//! The event queue: a min-heap ordered by (time, insertion sequence), so
//! events at the same instant run in the order they were scheduled and every
//! run with the same seed is identical.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use netblt_proto::Instant;

use crate::path::Side;

/// Something that happens at an instant.
#[derive(Debug)]
pub(crate) enum Event {
    /// Offer the host's CPU work (start of run).
    Kick(Side),
    /// The host's CPU finished its current job.
    CpuDone(Side),
    /// The host's interface finished serializing its head packet.
    NicTxDone(Side),
    /// A packet's last bit reaches host `to`.
    Arrival {
        to: Side,
        data: Vec<u8>,
        /// Bit to flip, counting the `wire_overhead` header bytes first.
        flip_bit: Option<usize>,
    },
    /// A node timeout; stale unless `generation` is the host's current one.
    Timer { side: Side, generation: u64 },
}

struct Scheduled {
    at: Instant,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    seq: u64,
}

impl EventQueue {
    pub(crate) fn push(&mut self, at: Instant, event: Event) {
        self.seq += 1;
        self.heap.push(Scheduled {
            at,
            seq: self.seq,
            event,
        });
    }

    pub(crate) fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|s| s.at)
    }

    pub(crate) fn pop(&mut self) -> Option<(Instant, Event)> {
        self.heap.pop().map(|s| (s.at, s.event))
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Free list of packet buffers, so steady state allocates nothing.
#[derive(Default)]
pub(crate) struct Pool {
    free: Vec<Vec<u8>>,
}

impl Pool {
    pub(crate) fn get(&mut self) -> Vec<u8> {
        let mut v = self.free.pop().unwrap_or_default();
        v.clear();
        v
    }

    pub(crate) fn put(&mut self, v: Vec<u8>) {
        // Bound the free list so one burst does not pin memory forever.
        if self.free.len() < 4096 {
            self.free.push(v);
        }
    }
}
