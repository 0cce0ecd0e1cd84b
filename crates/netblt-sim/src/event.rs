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
    /// The shared Ethernet segment has something to do (see `ethernet`).
    SegmentWake,
    /// A broadcast frame from another station reaches both hosts (see
    /// `CrossTraffic::broadcasts_per_s`).
    Broadcast,
}

struct Scheduled<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The simulator's queue; the dumbbell uses it with its own event type.
pub(crate) struct EventQueue<E = Event> {
    heap: BinaryHeap<Scheduled<E>>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub(crate) fn push(&mut self, at: Instant, event: E) {
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

    pub(crate) fn pop(&mut self) -> Option<(Instant, E)> {
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
