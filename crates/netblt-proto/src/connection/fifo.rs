//! The receiver's single long-lived control packet, used as a FIFO.
//!
//! RFC 998 §5.2.1: "NETBLT reduces lost control messages by using a single
//! long-lived control packet; the packet is treated like a FIFO queue, with new
//! control messages added on at the end and acknowledged control messages
//! removed from the front. The implementation places control messages in the
//! control packet and transmits the entire control packet, consisting of any
//! unacknowledged control messages plus new messages just added. The entire
//! control packet is also transmitted whenever the control timer expires."
//!
//! RFC 1030 §7 made this the rule after the Wideband tests ("Control messages
//! are now stored in a single long-lived packet..."), and combined OK(n) with
//! GO(n+1) in one packet: both are appended before the next transmission, so
//! they travel together.
//!
//! "Other implementations can provide for multiple control packets if a single
//! control packet may not be sufficient": when the FIFO outgrows one datagram
//! it is sent as consecutive datagrams, each holding whole messages.

use std::collections::VecDeque;

use netblt_wire::{ControlMessage, ControlWriter, HEADER_LEN};

use crate::seq;
use crate::time::Instant;

#[derive(Debug)]
pub(crate) struct ControlFifo {
    /// Unacknowledged messages with their 64-bit sequence numbers.
    msgs: VecDeque<(u64, ControlMessage)>,
    /// Sequence number of the next message (RFC 998: "starts at one").
    next_seq: u64,
    /// Highest high-acknowledged-sequence-number seen from the sender.
    acked: u64,
    /// Highest sequence number transmitted at least once.
    sent_upto: u64,
    /// New messages are waiting for their first transmission.
    dirty: bool,
    /// The control timer expired: send everything again.
    retransmit: bool,
    /// Index of the next message to place while a multi-datagram emission is
    /// under way.
    cursor: usize,
    /// The current emission is a retransmission (for Karn's rule).
    emitting_retransmission: bool,
    /// (sequence number, time) of a first transmission whose acknowledgment
    /// gives a clean round-trip sample.
    probe: Option<(u64, Instant)>,
}

/// What an emission did, for the connection's timers and counters.
pub(crate) struct Emitted {
    pub(crate) len: usize,
    /// The whole FIFO has now been sent; arm the control timer.
    pub(crate) complete: bool,
    pub(crate) retransmission: bool,
}

impl ControlFifo {
    pub(crate) fn new() -> Self {
        ControlFifo {
            msgs: VecDeque::new(),
            next_seq: 1,
            acked: 0,
            sent_upto: 0,
            dirty: false,
            retransmit: false,
            cursor: 0,
            emitting_retransmission: false,
            probe: None,
        }
    }

    /// Appends a message built for the next sequence number; returns it.
    pub(crate) fn push(&mut self, build: impl FnOnce(u16) -> ControlMessage) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        self.msgs.push_back((s, build(seq::truncate(s))));
        self.dirty = true;
        s
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Nothing but OKs, and GOs for buffers past `last`, is unacknowledged.
    pub(crate) fn only_oks_or_gos_after(&self, last: u32) -> bool {
        self.msgs.iter().all(|(_, m)| match m {
            ControlMessage::Ok { .. } => true,
            ControlMessage::Go { buffer, .. } => *buffer > last,
            ControlMessage::Resend { .. } => false,
        })
    }

    pub(crate) fn acked(&self) -> u64 {
        self.acked
    }

    /// Expands a wire high-ack value. `None` if it acknowledges messages we
    /// never sent (a corrupt or spoofed packet) or is older than what we know.
    pub(crate) fn expand_ack(&self, wire: u16) -> Option<u64> {
        let ack = seq::expand(wire, self.acked);
        (ack >= self.acked && ack < self.next_seq).then_some(ack)
    }

    /// Removes acknowledged messages from the front, calling `on_acked` for
    /// each. Returns `(all_sent_acked, rtt_sample_start)`.
    pub(crate) fn on_ack(
        &mut self,
        ack: u64,
        mut on_acked: impl FnMut(&ControlMessage),
    ) -> (bool, Option<Instant>) {
        if ack <= self.acked {
            return (ack >= self.sent_upto && self.sent_upto > 0, None);
        }
        self.acked = ack;
        while let Some((s, _)) = self.msgs.front() {
            if *s > ack {
                break;
            }
            if let Some((_, m)) = self.msgs.pop_front() {
                on_acked(&m);
            }
            self.cursor = self.cursor.saturating_sub(1);
        }
        let sample = match self.probe {
            Some((s, t)) if ack >= s => {
                self.probe = None;
                Some(t)
            }
            _ => None,
        };
        // RFC 998 §5.2.1: the receiver may clear its control timer on "a
        // high-acknowledged-sequence-number greater than or equal to the
        // highest sequence number in the control packet just sent".
        (ack >= self.sent_upto, sample)
    }

    pub(crate) fn on_timer(&mut self) {
        if !self.msgs.is_empty() {
            self.retransmit = true;
        }
    }

    pub(crate) fn wants_transmit(&self) -> bool {
        !self.msgs.is_empty() && (self.dirty || self.retransmit || self.cursor > 0)
    }

    /// Writes the next control datagram into `buf`.
    pub(crate) fn emit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        local_port: u16,
        foreign_port: u16,
    ) -> Option<Emitted> {
        if !self.wants_transmit() {
            self.dirty = false;
            return None;
        }
        if self.cursor == 0 {
            self.emitting_retransmission = self.retransmit && !self.dirty;
        }
        let mut w = ControlWriter::new(buf).ok()?;
        let mut placed = 0;
        for (_, m) in self.msgs.iter().skip(self.cursor) {
            if w.push(m).is_err() {
                break;
            }
            placed += 1;
        }
        if placed == 0 {
            // A single message larger than the datagram: cannot happen with
            // RESEND lists split to fit, but never spin on it.
            if let Some((_, m)) = self.msgs.get(self.cursor) {
                tracing::warn!(
                    len = m.buffer_len() + HEADER_LEN,
                    "control message too large"
                );
            }
            self.cursor = 0;
            self.dirty = false;
            self.retransmit = false;
            return None;
        }
        let len = w.finish(local_port, foreign_port);
        self.cursor += placed;
        let complete = self.cursor >= self.msgs.len();
        let retransmission = self.emitting_retransmission;
        if complete {
            let newest = self.msgs.back().map_or(0, |(s, _)| *s);
            if newest > self.sent_upto {
                // Karn's rule: only a first transmission of the newest
                // message gives an unambiguous round-trip sample.
                self.probe = (!retransmission).then_some((newest, now));
                self.sent_upto = newest;
            } else if retransmission {
                self.probe = None;
            }
            self.cursor = 0;
            self.dirty = false;
            self.retransmit = false;
        }
        Some(Emitted {
            len,
            complete,
            retransmission,
        })
    }
}
