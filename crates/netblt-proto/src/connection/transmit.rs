//! The transmit path: which datagram goes out next.
//!
//! Order: ABORT, OPEN/RESPONSE, QUIT/QUITACK, then the data part (the
//! receiver's control packet; the sender's NULL-ACK, then paced DATA), then
//! DONE and KEEPALIVE. One-shot packets are never paced: RFC 998's rate
//! control governs DATA packets.

use netblt_wire::{NullAckRepr, OpenRepr, Packet, Repr};

use super::gather::{Gathered, Payload};
use super::{wire_packet_size, Connection, DataPart, State};
use crate::time::Instant;

fn write(buf: &mut [u8], ports: (u16, u16), repr: Repr<'_>) -> Option<usize> {
    let p = Packet {
        local_port: ports.0,
        foreign_port: ports.1,
        repr,
    };
    match p.emit(buf) {
        Ok(n) => Some(n),
        Err(e) => {
            tracing::warn!(error = %e, need = p.buffer_len(), have = buf.len(), "transmit buffer too small");
            None
        }
    }
}

impl Connection {
    /// Writes the next datagram to send into `buf` and returns its length.
    /// `buf` must be at least [`max_datagram_size`](Connection::max_datagram_size)
    /// long. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let g = self.poll_next(now, buf, false)?;
        Some(g.head)
    }

    /// Like [`poll_transmit`](Self::poll_transmit), but a DATA or LDATA
    /// packet comes as its 24-byte header in `buf` plus the place of its
    /// payload in the data sender's buffer ([`Gathered::payload`], to be
    /// resolved with [`payload`](Self::payload) and sent after the header,
    /// followed by [`Gathered::pad`] zero bytes): the driver lets the kernel
    /// gather the parts, and the data is never copied into a datagram.
    pub fn poll_transmit_gather(&mut self, now: Instant, buf: &mut [u8]) -> Option<Gathered> {
        self.poll_next(now, buf, true)
    }

    /// The bytes of a payload from [`poll_transmit_gather`](Self::poll_transmit_gather),
    /// or `None` once its buffer was acknowledged (the packet need not go
    /// out any more).
    pub fn payload(&self, p: &Payload) -> Option<&[u8]> {
        match &self.data {
            DataPart::Sender(s) => s.payload(p),
            _ => None,
        }
    }

    fn poll_next(&mut self, now: Instant, buf: &mut [u8], gather: bool) -> Option<Gathered> {
        let g = self.next_datagram(now, buf, gather)?;
        self.last_tx = now;
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += g.len() as u64;
        Some(g)
    }

    /// A NULL-ACK with the sender's acknowledgment state and burst values.
    fn null_ack(&mut self, buf: &mut [u8], ports: (u16, u16)) -> Option<Gathered> {
        let DataPart::Sender(s) = &self.data else {
            return None;
        };
        self.stats.null_acks_sent += 1;
        tracing::trace!(high_ack = s.high_ack_wire(), "NULL-ACK sent");
        let repr = NullAckRepr {
            high_ack: s.high_ack_wire(),
            burst_size: s.params.burst_size,
            burst_interval_ms: s.params.burst_interval_ms,
        };
        write(buf, ports, Repr::NullAck(repr)).map(Gathered::whole)
    }

    fn open_repr(&self) -> OpenRepr<'_> {
        OpenRepr {
            uid: self.uid,
            buffer_size: self.params.buffer_size,
            transfer_size: self.transfer_size,
            data_packet_size: wire_packet_size(self.params.packet_size),
            burst_size: self.params.burst_size,
            burst_interval_ms: self.params.burst_interval_ms,
            death_timer_s: self.config.death_timer_secs(),
            checksum_data: self.params.checksum_data,
            mode: self.mode,
            rate_feedback: self.feedback,
            receiver_offers: self.offers,
            path_probe: self.probe.is_some(),
            padded_len: 0,
            max_outstanding: self.params.max_buffers,
            client: &self.client,
        }
    }

    fn next_datagram(&mut self, now: Instant, buf: &mut [u8], gather: bool) -> Option<Gathered> {
        let ports = (self.local_port, self.remote_port);
        if let Some(reason) = self.pending.abort.take() {
            return write(buf, ports, Repr::Abort { reason: &reason }).map(Gathered::whole);
        }
        if self.state == State::Closed {
            if std::mem::take(&mut self.pending.done) {
                return write(buf, ports, Repr::Done).map(Gathered::whole);
            }
            // A sender closed by a DONE (R26) still acknowledges the last
            // OK, so that the receiver stops sending it.
            if let DataPart::Sender(s) = &mut self.data {
                if std::mem::take(&mut s.null_ack_pending) {
                    return self.null_ack(buf, ports);
                }
            }
            return None;
        }
        if std::mem::take(&mut self.pending.open) {
            if self.open_copies_left > 0 {
                // A redundant copy of the first OPEN (R32): not an attempt
                // of its own, and no timer of its own.
                self.open_copies_left -= 1;
                self.pending.open = true;
                let padded = std::mem::take(&mut self.probe_pending);
                let mut repr = self.open_repr();
                if padded {
                    // R58: this copy goes first, padded to a whole DATA
                    // packet of the probed size; the next ones go plain.
                    let probe = self.probe.unwrap_or(0);
                    repr.padded_len = wire_packet_size(probe);
                    if let Some(g) = write(buf, ports, Repr::Open(repr)) {
                        return Some(Gathered::whole(g));
                    }
                    repr.padded_len = 0;
                }
                return write(buf, ports, Repr::Open(repr)).map(Gathered::whole);
            }
            // RFC 998 §5.1: "The active end sets a timer when it sends an OPEN
            // packet. When the timer expires, another OPEN packet is sent,
            // until some predetermined maximum number of OPEN packets have
            // been sent." The interval doubles, up to four times the first.
            self.open_attempts += 1;
            self.timers.open = Some(now + self.open_interval);
            self.open_interval = (self.open_interval * 2).min(self.config.open_retry * 4);
            return write(buf, ports, Repr::Open(self.open_repr())).map(Gathered::whole);
        }
        if std::mem::take(&mut self.pending.response) {
            if self.extra_responses > 0 {
                self.extra_responses -= 1;
                self.pending.response = true;
            }
            return write(buf, ports, Repr::Response(self.open_repr())).map(Gathered::whole);
        }
        if std::mem::take(&mut self.pending.quit) {
            return write(
                buf,
                ports,
                Repr::Quit {
                    reason: &self.quit_reason,
                },
            )
            .map(Gathered::whole);
        }
        if std::mem::take(&mut self.pending.quitack) {
            return write(buf, ports, Repr::QuitAck).map(Gathered::whole);
        }
        let open = self.state == State::Open;
        match &mut self.data {
            DataPart::Receiver(r) => {
                if open {
                    r.issue_gos(self.peer_confirmed, &mut self.stats);
                }
                // The driver may offer a much larger slot (64 KB for a GSO
                // train); the control packet must still fit one datagram of
                // the path. RFC 998 §5.2.1: "Other implementations can
                // provide for multiple control packets if a single control
                // packet may not be sufficient". A larger one is cut into IP
                // fragments, and on a lossy path the incomplete ones filled
                // the peer's reassembly memory until the kernel refused every
                // fragment and a live receiver was declared dead (issue 9).
                let cap = r.max_datagram.min(buf.len());
                if let Some(copy) = r.control_copy.take() {
                    // R59: the first control packet again, back to back.
                    if let Some(out) = buf.get_mut(..copy.len()) {
                        out.copy_from_slice(&copy);
                        self.stats.control_packets_sent += 1;
                        tracing::trace!(%now, len = copy.len(), "CONTROL copy sent");
                        return Some(Gathered::whole(copy.len()));
                    }
                }
                if let Some(e) = r.fifo.emit(now, &mut buf[..cap], ports.0, ports.1) {
                    self.stats.control_packets_sent += 1;
                    tracing::trace!(%now, len = e.len, retransmission = e.retransmission, complete = e.complete, "CONTROL sent");
                    if e.retransmission {
                        self.stats.control_retransmissions += 1;
                    } else if r.control_copies > 0 {
                        // R59: the first control packet (the first GOs) goes
                        // as often as the first OPEN: lost alone, it held the
                        // sender for the receiver's first control timeout
                        // (1 s), one start in twenty at 5 % loss.
                        r.control_copies = 0;
                        r.control_copy = buf.get(..e.len).map(<[u8]>::to_vec);
                    }
                    if e.complete {
                        // RFC 998 §5.2.1: "Whenever the receiver sends a
                        // control packet, it sets a control timer."
                        self.timers.control = Some(now + self.control_timeout());
                    }
                    return Some(Gathered::whole(e.len));
                }
                // The early DONE (R26), after the last OK just emitted.
                if open && std::mem::take(&mut self.pending.done) {
                    return write(buf, ports, Repr::Done).map(Gathered::whole);
                }
                if open {
                    let srtt = r.srtt;
                    if let Some(n) = r.feedback.emit(now, srtt, buf, ports) {
                        self.stats.feedback_sent += 1;
                        return Some(Gathered::whole(n));
                    }
                }
            }
            DataPart::Sender(s) => {
                if std::mem::take(&mut s.null_ack_pending) {
                    if s.null_ack_copies > 0 {
                        s.null_ack_copies -= 1;
                        s.null_ack_pending = true;
                    }
                    return self.null_ack(buf, ports);
                }
                if open {
                    if let Some(g) = s.emit_data(now, buf, ports, &mut self.stats, gather) {
                        return Some(g);
                    }
                }
            }
            DataPart::None => {}
        }
        if std::mem::take(&mut self.pending.keepalive)
            && now >= self.last_tx + self.keepalive_interval()
        {
            // RFC 998 §5.2.3: "sent repeatedly at fixed intervals when a
            // NETBLT cannot send other packets".
            self.stats.keepalives_sent += 1;
            tracing::trace!(%now, side = ?self.side, "KEEPALIVE sent");
            return write(buf, ports, Repr::Keepalive).map(Gathered::whole);
        }
        None
    }
}
