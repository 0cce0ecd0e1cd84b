//! Packets waiting for their delivery time, earliest first.
//!
//! The link model keeps FIFO order except for reordering, delay spikes and
//! duplicates, so a plain FIFO would be wrong: a binary heap keyed by
//! (delivery time, arrival sequence) gives the model's order exactly, with
//! ties broken first-come first-served. Packet buffers are recycled through a
//! free list so a steady flow allocates nothing.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Capacity new buffers start with: one Ethernet-MTU packet and some slack.
const INITIAL_BUFFER: usize = 2048;

/// Most buffers kept for reuse; beyond that they are freed.
const POOL_LIMIT: usize = 16_384;

struct Pending {
    at: Duration,
    seq: u64,
    corrupted: bool,
    packet: Vec<u8>,
}

/// A packet whose delivery time has come.
pub(crate) struct Due {
    /// When the model delivers it.
    pub(crate) at: Duration,
    /// Whether a bit was flipped in it.
    pub(crate) corrupted: bool,
    /// Its bytes (give them back with [`DeliveryQueue::recycle`]).
    pub(crate) packet: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    // Reversed, because BinaryHeap is a max-heap and we want the earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Time-ordered queue of packets to write.
#[derive(Default)]
pub(crate) struct DeliveryQueue {
    heap: BinaryHeap<Pending>,
    pool: Vec<Vec<u8>>,
    seq: u64,
}

impl DeliveryQueue {
    /// Schedules a copy of `packet` for `at`, flipping bit `flip_bit`
    /// (index `8 * byte + bit`, bit 0 least significant) if given.
    pub(crate) fn push(&mut self, at: Duration, packet: &[u8], flip_bit: Option<usize>) {
        let mut buf = self
            .pool
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(INITIAL_BUFFER));
        buf.clear();
        buf.extend_from_slice(packet);
        if let Some(bit) = flip_bit {
            // The model draws the bit below 8 * len; `get_mut` keeps a bad
            // index from ever panicking.
            if let Some(byte) = buf.get_mut(bit / 8) {
                *byte ^= 1 << (bit % 8);
            }
        }
        self.seq += 1;
        self.heap.push(Pending {
            at,
            seq: self.seq,
            corrupted: flip_bit.is_some(),
            packet: buf,
        });
    }

    /// Delivery time of the earliest packet.
    pub(crate) fn next_at(&self) -> Option<Duration> {
        self.heap.peek().map(|p| p.at)
    }

    /// Removes the earliest packet if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Duration) -> Option<Due> {
        if self.heap.peek()?.at > now {
            return None;
        }
        self.heap.pop().map(|p| Due {
            at: p.at,
            corrupted: p.corrupted,
            packet: p.packet,
        })
    }

    /// Returns a buffer to the free list.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        if self.pool.len() < POOL_LIMIT {
            self.pool.push(buf);
        }
    }

    /// Packets waiting.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_arrival_order() {
        let mut q = DeliveryQueue::default();
        q.push(Duration::from_millis(5), b"b", None);
        q.push(Duration::from_millis(1), b"a", None);
        q.push(Duration::from_millis(5), b"c", None);
        assert_eq!(q.next_at(), Some(Duration::from_millis(1)));
        assert!(q.pop_due(Duration::ZERO).is_none());
        let now = Duration::from_millis(10);
        let order: Vec<Vec<u8>> = std::iter::from_fn(|| q.pop_due(now).map(|d| d.packet)).collect();
        assert_eq!(order, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn flips_the_requested_bit_and_ignores_bad_indices() {
        let mut q = DeliveryQueue::default();
        q.push(Duration::ZERO, &[0, 0], Some(9));
        q.push(Duration::ZERO, &[0, 0], Some(1_000));
        let first = q.pop_due(Duration::ZERO).unwrap();
        let second = q.pop_due(Duration::ZERO).unwrap();
        assert_eq!(first.packet, vec![0, 2]);
        assert!(first.corrupted);
        assert_eq!(second.packet, vec![0, 0]);
    }
}
