//! Counters a [`crate::Link`] keeps about what it did to the packets offered.

use serde::{Deserialize, Serialize};

use crate::link::DropReason;

/// Packets dropped, per reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DropCounts {
    /// Larger than the MTU.
    pub mtu: u64,
    /// Refused by the full drop-tail queue.
    pub queue: u64,
    /// Dropped by the AQM (CoDel).
    #[serde(default)]
    pub aqm: u64,
    /// Lost by the loss model.
    pub loss: u64,
    /// Hit by a bit error (discarded by the link CRC).
    pub bit_error: u64,
}

impl DropCounts {
    /// Sum over all reasons.
    pub fn total(&self) -> u64 {
        self.mtu + self.queue + self.aqm + self.loss + self.bit_error
    }

    /// Count for one reason.
    pub fn get(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::Mtu => self.mtu,
            DropReason::Queue => self.queue,
            DropReason::Aqm => self.aqm,
            DropReason::Loss => self.loss,
            DropReason::BitError => self.bit_error,
        }
    }

    pub(crate) fn count(&mut self, reason: DropReason) {
        let slot = match reason {
            DropReason::Mtu => &mut self.mtu,
            DropReason::Queue => &mut self.queue,
            DropReason::Aqm => &mut self.aqm,
            DropReason::Loss => &mut self.loss,
            DropReason::BitError => &mut self.bit_error,
        };
        *slot += 1;
    }
}

/// Everything a link has counted since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LinkStats {
    /// Packets offered.
    pub offered: u64,
    /// Bytes offered.
    pub offered_bytes: u64,
    /// Packets delivered at least once (a duplicate does not count twice).
    pub delivered: u64,
    /// Bytes of the packets counted in `delivered`.
    pub delivered_bytes: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Extra copies delivered.
    pub duplicates: u64,
    /// Packets delivered with a flipped bit.
    pub corrupted: u64,
    /// Packets held back by the reorder step.
    pub reordered: u64,
    /// Packets given a delay spike.
    pub spiked: u64,
    /// Packets split into IP fragments ([`crate::Fragmentation`]).
    pub fragmented: u64,
}
