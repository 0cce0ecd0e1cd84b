//! The data receiver's half: receive buffers, data timers and control messages.
//!
//! RFC 998 §5.2.2 describes each receive buffer as a finite-state machine:
//! ACK-WAIT (a GO or RESEND for it is unacknowledged), ACKED (waiting for
//! data, loose data timer), RECEIVING (data arriving, tight data timer) and
//! RECEIVED (complete; disposed of once its OK is acknowledged).

use std::collections::VecDeque;

use netblt_wire::{ControlMessage, DataRepr, HEADER_LEN};

use super::feedback::FeedbackOut;
use super::fifo::ControlFifo;
use crate::bitset::BitSet;
use crate::config::{Config, DataTimerPolicy, TransferParams};
use crate::stats::Stats;
use crate::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecvState {
    AckWait,
    Acked,
    Receiving,
    Received,
}

#[derive(Debug)]
struct RecvBuffer {
    number: u32,
    state: RecvState,
    data: Vec<u8>,
    got: BitSet,
    /// Packets requested in a RESEND at least once (for the #LOSS count).
    requested: BitSet,
    /// Highest packet number received (FEEDBACK counts the holes below it).
    highest: Option<u32>,
    /// Packet count, known once LDATA arrived (or assumed full otherwise).
    count: Option<u32>,
    /// Packet count the OPEN's transfer size implies (R33): a hint for the
    /// data timer and the tail, never for judging packets (a file may grow
    /// or shrink while it is sent).
    hint: Option<u32>,
    /// Byte length, known once LDATA arrived.
    len: Option<usize>,
    /// Some packet carried the last-buffer flag.
    last: bool,
    /// Highest control-message sequence number about this buffer; the buffer
    /// leaves ACK-WAIT when it is acknowledged.
    awaiting: u64,
    timer: Option<Instant>,
    /// Consecutive data timeouts without progress: doubles the margin.
    backoff: u32,
    delivered: bool,
    ok_queued: bool,
    ok_acked: bool,
}

impl RecvBuffer {
    fn expected(&self, full: u32) -> u32 {
        self.count.or(self.hint).unwrap_or(full)
    }

    fn remaining(&self, full: u32) -> u32 {
        self.expected(full).saturating_sub(self.got.count() as u32)
    }

    fn is_complete(&self) -> bool {
        self.count
            .is_some_and(|c| self.got.count() as u32 >= c && c > 0)
    }
}

/// Average inter-packet arrival time, RFC 1030 §7: "The algorithm maintains
/// an average inter-packet arrival value, and uses that to determine the data
/// timer value. If the inter-packet arrival time increases, the data timer
/// value will lengthen."
#[derive(Debug, Default)]
struct GapEstimator {
    last: Option<Instant>,
    avg_ns: f64,
    dev_ns: f64,
    samples: u64,
}

impl GapEstimator {
    /// `cap`: longer gaps are idle periods (the sender waiting for a GO or a
    /// RESEND), not packet spacing; they count as `cap`.
    fn on_arrival(&mut self, now: Instant, cap: Duration) {
        if let Some(prev) = self.last {
            // Integer nanoseconds: this runs for every packet.
            let cap_ns = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
            let g = now.as_nanos().saturating_sub(prev.as_nanos()).min(cap_ns) as f64;
            if self.samples == 0 {
                self.avg_ns = g;
                self.dev_ns = g / 2.0;
            } else {
                self.dev_ns += ((g - self.avg_ns).abs() - self.dev_ns) / 8.0;
                self.avg_ns += (g - self.avg_ns) / 8.0;
            }
            self.samples += 1;
        }
        self.last = Some(now);
    }
}

pub(crate) struct Receiver {
    params: TransferParams,
    /// The O flag negotiated: OKs carry our own offer (R31), not an echo.
    pub(crate) offers: bool,
    /// The burst agreed at OPEN: what an offer without a limit gives.
    agreed: (u16, u16),
    /// The application's limit on the sender, bits/s (R31).
    cap_bps: Option<u64>,
    full: u32,
    next_go: u32,
    bufs: VecDeque<RecvBuffer>,
    last_buffer: Option<u32>,
    pub(crate) fifo: ControlFifo,
    gap: GapEstimator,
    recycled: Vec<Vec<u8>>,
    /// [`Config::initial_gos`]: GOs at most until the sender is heard.
    initial_gos: Option<u16>,
    min_margin: Duration,
    /// Largest datagram we send ([`Config::max_datagram`]): RESEND lists and
    /// control packets are cut to fit it.
    pub(crate) max_datagram: usize,
    /// Copies still owed of the first control packet (R59: it goes as often
    /// as the first OPEN, `Config::open_copies`), and the copy itself.
    pub(crate) control_copies: u8,
    pub(crate) control_copy: Option<Vec<u8>>,
    receive_queue: usize,
    confirm_last: bool,
    /// The last buffer is complete and waits for the application's verdict.
    pub(crate) awaiting_confirm: bool,
    /// Completed buffers handed to the application but not yet taken.
    pub(crate) undelivered: usize,
    pub(crate) finished: bool,
    /// DONE went with the last OK (decision R26).
    pub(crate) early_done: bool,
    /// Control-timer expiries in a row since then with nothing heard from
    /// the sender, and when the last one was.
    pub(crate) final_ok_timeouts: u32,
    pub(crate) final_ok_expired_at: Option<Instant>,
    /// The control timer value reported in OK messages (ms), kept current by
    /// the connection.
    pub(crate) control_timer_ms: u16,
    /// Smoothed control round trip, kept current by the connection.
    pub(crate) srtt: Duration,
    max_data_timer: Duration,
    /// The transfer size, as a hint for the buffers' packet counts (R33).
    size_hint: Option<u64>,
    /// How data timers are set ([`Config::data_timer`]).
    policy: DataTimerPolicy,
    /// FEEDBACK reports, when the extension was negotiated.
    pub(crate) feedback: FeedbackOut,
}

/// Outcome of a DATA/LDATA packet for the connection's bookkeeping.
pub(crate) enum DataOutcome {
    Accepted,
    Duplicate,
    Invalid,
}

impl Receiver {
    pub(crate) fn new(params: TransferParams, config: &Config) -> Self {
        Receiver {
            params,
            offers: false,
            agreed: (params.burst_size, params.burst_interval_ms),
            cap_bps: None,
            full: params.packets_per_buffer(),
            next_go: 1,
            bufs: VecDeque::new(),
            last_buffer: None,
            fifo: ControlFifo::new(),
            gap: GapEstimator::default(),
            recycled: Vec::new(),
            initial_gos: config.initial_gos,
            min_margin: config.min_data_timer_margin,
            max_datagram: config.max_datagram.max(HEADER_LEN + 16),
            control_copies: config.open_copies.saturating_sub(1),
            control_copy: None,
            receive_queue: config.receive_queue.max(1),
            confirm_last: config.confirm_last_buffer,
            awaiting_confirm: false,
            undelivered: 0,
            finished: false,
            early_done: false,
            final_ok_timeouts: 0,
            final_ok_expired_at: None,
            // Until a round trip is measured: the initial control timer.
            control_timer_ms: u16::try_from(config.initial_control_timeout.as_millis())
                .unwrap_or(u16::MAX),
            srtt: Duration::ZERO,
            max_data_timer: (config.death_timeout / 4).max(config.min_data_timer_margin),
            size_hint: None,
            policy: config.data_timer,
            feedback: FeedbackOut::default(),
        }
    }

    /// Keeps a buffer's storage for a later GO. The pool holds as many as
    /// can be out at once (in transmission plus waiting for the
    /// application), so that storage coming back in a burst is not freed and
    /// allocated again: at megabyte sizes each new allocation is fresh pages,
    /// faulted in one by one. Storage smaller than a buffer (such as the
    /// empty vector left behind by a delivered buffer) is not worth keeping:
    /// it would take the place of real storage.
    pub(crate) fn recycle(&mut self, mut v: Vec<u8>) {
        if v.capacity() >= self.params.buffer_size as usize
            && self.recycled.len() < usize::from(self.params.max_buffers) + self.receive_queue
        {
            v.clear();
            self.recycled.push(v);
        }
    }

    /// The application's limit on the sender (R31): offered in later OKs.
    pub(crate) fn set_cap(&mut self, max_bps: Option<u64>) {
        self.cap_bps = max_bps;
    }

    /// The burst values our OKs carry. RFC 998 §4: "The receiving end sends
    /// burst size and burst rate values in its OK messages"; the sender
    /// may only make them "more restrictive". With the O flag they are our
    /// offer: the burst agreed at OPEN, or the application's limit when it
    /// is lower. Without it, an echo of what the sender told us last (its
    /// NULL-ACK), as a receiver with nothing to say does.
    fn ok_burst(&self) -> (u16, u16) {
        if !self.offers {
            return (self.params.burst_size, self.params.burst_interval_ms);
        }
        let psz = self.params.packet_size;
        let rate = |burst| TransferParams::burst_rate_bps(burst, psz);
        match self.cap_bps {
            Some(cap) => {
                let capped = TransferParams::burst_for_rate(cap.max(1), psz);
                if rate(capped) < rate(self.agreed) {
                    capped
                } else {
                    self.agreed
                }
            }
            None => self.agreed,
        }
    }

    pub(crate) fn set_rate(&mut self, burst_size: u16, interval_ms: u16) {
        self.params.burst_size = burst_size.max(1);
        self.params.burst_interval_ms = interval_ms.max(1);
    }

    fn index(&self, number: u32) -> Option<usize> {
        let front = self.bufs.front()?.number;
        let i = number.checked_sub(front)? as usize;
        (i < self.bufs.len()).then_some(i)
    }

    fn in_flight(&self) -> usize {
        self.bufs
            .iter()
            .filter(|b| b.state != RecvState::Received)
            .count()
    }

    /// Issues GOs while flow control allows: at most `max_buffers` buffers in
    /// transmission (`initial_gos` until the sender is `heard` after OPEN,
    /// R11), and no more completed-but-untaken buffers than the
    /// application's receive queue.
    pub(crate) fn issue_gos(&mut self, heard: bool, stats: &mut Stats) {
        loop {
            if self.last_buffer.is_some_and(|l| self.next_go > l) || self.next_go == u32::MAX {
                return;
            }
            let waiting = self
                .bufs
                .iter()
                .filter(|b| b.state == RecvState::Received && !b.delivered)
                .count()
                + self.undelivered;
            let cap = self.initial_gos.filter(|_| !heard).unwrap_or(u16::MAX);
            let most = self.params.max_buffers.min(cap);
            if self.in_flight() >= usize::from(most) || waiting >= self.receive_queue {
                return;
            }
            let number = self.next_go;
            self.next_go += 1;
            tracing::debug!(buffer = number, "GO");
            let mut data = self.recycled.pop().unwrap_or_else(|| {
                stats.storage_allocations += 1;
                Vec::new()
            });
            data.clear();
            // One allocation per buffer, none per packet.
            data.reserve(self.params.buffer_size as usize);
            let seq = self.fifo.push(|seq| ControlMessage::Go {
                seq,
                buffer: number,
            });
            stats.control_messages += 1;
            let hint = self.hinted_count(number);
            self.bufs.push_back(RecvBuffer {
                number,
                hint,
                state: RecvState::AckWait,
                data,
                got: BitSet::new(self.full as usize),
                requested: BitSet::new(self.full as usize),
                highest: None,
                count: None,
                len: None,
                last: false,
                awaiting: seq,
                timer: None,
                backoff: 0,
                delivered: false,
                ok_queued: false,
                ok_acked: false,
            });
        }
    }

    /// The transfer size from OPEN/RESPONSE, when given (R33).
    pub(crate) fn set_size_hint(&mut self, bytes: u32) {
        self.size_hint = (bytes > 0).then_some(u64::from(bytes));
    }

    /// How many packets buffer `number` should hold by the transfer size:
    /// full ones, then the remainder in the last; `None` past the end or
    /// without a size. RFC 998 §3 calls the size informational, so this
    /// only shortens waits: it is what lets a receiver that lost the last
    /// buffer's LDATA ask for it after a packet's time rather than a full
    /// buffer's, and at the first expiry rather than the second (R33).
    fn hinted_count(&self, number: u32) -> Option<u32> {
        let size = self.size_hint?;
        let bsz = u64::from(self.params.buffer_size.max(1));
        let psz = u64::from(self.params.packet_size.max(1));
        let buffers = size.div_ceil(bsz).max(1);
        let n = u64::from(number);
        if n == 0 || n > buffers {
            return None;
        }
        if n < buffers {
            return Some(self.full);
        }
        let rest = size - (buffers - 1) * bsz;
        u32::try_from(rest.div_ceil(psz).max(1)).ok()
    }

    /// Packets still expected in buffers up to and including index `i`
    /// (the sender sends them first).
    fn expected_through(&self, i: usize) -> u32 {
        self.bufs
            .iter()
            .take(i + 1)
            .filter(|b| b.state != RecvState::Received)
            .map(|b| b.remaining(self.full))
            .sum()
    }

    fn gap_estimate(&self) -> Duration {
        let nominal =
            self.params.burst_interval_ms as f64 * 1e6 / f64::from(self.params.burst_size);
        Duration::from_nanos(self.gap.avg_ns.max(nominal) as u64)
    }

    /// The data timer's variance term (RFC 998 §5.2.2 "plus a variance
    /// factor"): two burst intervals (a burst that starts late leaves a gap of
    /// up to one more interval) plus four mean deviations of the arrival gap,
    /// and at least an eighth of the control round trip (delay variation
    /// grows with the path; on a 580 ms path, real hosts' scheduling hiccups
    /// otherwise caused needless RESENDs); doubled for each consecutive
    /// timeout of this buffer.
    fn margin(&self, backoff: u32) -> Duration {
        let base = Duration::from_millis(2 * u64::from(self.params.burst_interval_ms))
            + Duration::from_nanos((4.0 * self.gap.dev_ns) as u64);
        base.max(self.srtt / 8).max(self.min_margin) * (1u32 << backoff.min(3))
    }

    /// A data timer: the time to receive `packets` more packets plus margin,
    /// never more than a quarter of the death timer, so that a lost packet is
    /// asked for again several times before the connection would die.
    fn data_timer(&self, now: Instant, packets: u32, extra: Duration, backoff: u32) -> Instant {
        let t = self.gap_estimate() * packets + extra + self.margin(backoff);
        now + t.min(self.max_data_timer)
    }

    /// [`DataTimerPolicy::Rfc998`]'s timer: RFC 998 §5.2.2, "the amount of
    /// time taken to transfer a buffer (as determined by the number of DATA
    /// packet bursts in the buffer times the burst rate) plus a variance
    /// factor". `packets` are those still to arrive, in whole bursts of the
    /// negotiated size, each taking the negotiated burst interval. Capped
    /// like the adaptive timer (a quarter of the death timer).
    fn rfc998_timer(&self, now: Instant, packets: u32, variance: Duration) -> Instant {
        let bursts = packets.div_ceil(u32::from(self.params.burst_size.max(1)));
        let t = Duration::from_millis(u64::from(self.params.burst_interval_ms)) * bursts + variance;
        now + t.min(self.max_data_timer)
    }

    /// A control message was acknowledged by the sender.
    pub(crate) fn on_acked(&mut self, now: Instant, msg: &ControlMessage, srtt: Duration) {
        let buffer = match *msg {
            ControlMessage::Go { buffer, .. } | ControlMessage::Resend { buffer, .. } => buffer,
            ControlMessage::Ok { buffer, .. } => return self.on_ok_acked(buffer),
        };
        let Some(i) = self.index(buffer) else { return };
        let (state, awaiting, backoff) = {
            let b = &self.bufs[i];
            (b.state, b.awaiting, b.backoff)
        };
        // A later RESEND for the same buffer may still be unacknowledged.
        if state != RecvState::AckWait || self.fifo.acked() < awaiting {
            return;
        }
        // Loose timer (RFC 998 §5.2.2): it must cover the packets of
        // lower-numbered buffers still expected, which the sender sends
        // first, as well as this buffer's own, and the trip across.
        let ahead = self.expected_through(i);
        if let DataTimerPolicy::Rfc998 { variance } = self.policy {
            // RFC 998 §5.2.2: "As soon as the control message has been
            // acknowledged, buffer A moves from the ACK-WAIT state into the
            // ACKED state (it is now waiting for DATA packets to arrive). At
            // this point, A's data timer is set", a loose value that "must
            // take into account the arrival of all of A - 1's DATA packets as
            // well as arrival of its own". After a RESEND the buffer goes
            // the same way ("The state progression would then move as in the
            // above example"), so its next arrival sets the tight timer.
            let t = self.rfc998_timer(now, ahead, variance);
            let b = &mut self.bufs[i];
            b.state = RecvState::Acked;
            b.timer = Some(t);
            return;
        }
        let t = self.data_timer(now, ahead, srtt, backoff);
        let b = &mut self.bufs[i];
        b.state = if b.got.count() > 0 {
            RecvState::Receiving
        } else {
            RecvState::Acked
        };
        b.timer = Some(t);
    }

    /// Handles one DATA or LDATA packet whose acknowledgment field has been
    /// processed already.
    pub(crate) fn on_data(
        &mut self,
        now: Instant,
        ldata: bool,
        d: &DataRepr<'_>,
        stats: &mut Stats,
    ) -> DataOutcome {
        let psz = usize::from(self.params.packet_size);
        let bsz = self.params.buffer_size as usize;
        let Some(i) = self.index(d.buffer) else {
            stats.duplicate_data += 1;
            return if d.buffer < self.next_go {
                DataOutcome::Duplicate
            } else {
                DataOutcome::Invalid
            };
        };
        if self.last_buffer.is_some_and(|l| d.buffer > l) {
            return DataOutcome::Invalid;
        }
        // Shape checks: every DATA packet carries exactly PSZ bytes and is
        // followed by more; LDATA ends its buffer, at the full size unless the
        // buffer is the last one.
        let p = usize::from(d.packet);
        let offset = p * psz;
        let end = offset + d.data.len();
        let shape_ok = if ldata {
            end <= bsz
                && d.data.len() <= psz
                && (d.last_buffer || end == bsz)
                && (!d.data.is_empty() || (p == 0 && d.last_buffer))
        } else {
            d.data.len() == psz && end < bsz
        };
        if !shape_ok || p >= self.full as usize {
            return DataOutcome::Invalid;
        }
        {
            let b = &self.bufs[i];
            if b.state == RecvState::Received || b.got.get(p) {
                stats.duplicate_data += 1;
                return DataOutcome::Duplicate;
            }
            if let Some(c) = b.count {
                if p as u32 >= c || (ldata && p as u32 + 1 != c) {
                    return DataOutcome::Invalid;
                }
            }
            if b.last != d.last_buffer && b.got.count() > 0 {
                return DataOutcome::Invalid;
            }
        }
        let interval = Duration::from_millis(u64::from(self.params.burst_interval_ms));
        self.gap.on_arrival(now, (interval * 2).max(self.srtt));
        let full = self.full;
        let b = &mut self.bufs[i];
        if b.data.len() == offset {
            // In order (the usual case): append, without zero-filling first.
            b.data.extend_from_slice(d.data);
        } else {
            if b.data.len() < end {
                b.data.resize(end, 0);
            }
            b.data[offset..end].copy_from_slice(d.data);
        }
        b.got.insert(p);
        if b.highest.is_none_or(|h| p as u32 > h) {
            // Packets skipped over are missing (or reordered): FEEDBACK
            // reports them at once rather than at the data timer.
            let from = b.highest.map_or(0, |h| h + 1);
            self.feedback.on_lost(p as u32 - from);
            b.highest = Some(p as u32);
        } else if !b.requested.get(p) {
            // A hole FEEDBACK reported, filled before any RESEND asked for
            // it: the packet was overtaken, not lost (R53). Counted as lost
            // for good, 2 % of packets held back 10 ms at 50 ms read as 2 %
            // of noise, and the delivery-rate estimate, which adds counted
            // losses back, ran 2 % over the path: 3.6 % less goodput and
            // three times the queue (simulator).
            self.feedback.on_found(d.buffer, p as u16);
        }
        b.last |= d.last_buffer;
        b.backoff = 0;
        if ldata {
            b.count = Some(p as u32 + 1);
            b.len = Some(end);
        } else if !b.last && b.count.is_none() {
            // Not the last buffer (so far as we know): full size.
            b.len = Some(bsz);
        }
        stats.data_packets_received += 1;
        if d.last_buffer {
            self.note_last(d.buffer);
        }
        let b = &mut self.bufs[i];
        let first = b.state == RecvState::Acked;
        if first {
            b.state = RecvState::Receiving;
        }
        if let DataTimerPolicy::Rfc998 { variance } = self.policy {
            self.rfc998_on_data(now, i, first, variance);
            return DataOutcome::Accepted;
        }
        let b = &mut self.bufs[i];
        if b.is_complete() {
            b.state = RecvState::Received;
            b.timer = None;
            if let Some(len) = b.len {
                b.data.truncate(len);
            }
        } else if b.state == RecvState::Receiving {
            // Tight timer, refreshed on every arrival: it fires only when this
            // buffer's packets stop arriving for longer than expected.
            let rem = b.remaining(full);
            let backoff = b.backoff;
            let t = self.data_timer(now, rem, Duration::ZERO, backoff);
            self.bufs[i].timer = Some(t);
        }
        // RFC 998 §5.2.2: "The receiving NETBLT also sets the tight data
        // timers of any buffers numbered lower than A that are also in the
        // ACKED state", and (RFC 1030 §7) instead of an immediate RESEND for a
        // lower buffer still missing packets, "a data timer was set with an
        // updated (and presumably more accurate) value".
        let tight = now + self.margin(0);
        for b in self.bufs.iter_mut().take(i) {
            if matches!(b.state, RecvState::Acked | RecvState::Receiving) {
                b.timer = Some(b.timer.map_or(tight, |old| old.min(tight)));
            }
        }
        DataOutcome::Accepted
    }

    /// [`DataTimerPolicy::Rfc998`] after a packet of buffer `i` arrived
    /// (`first`: it moved the buffer from ACKED to RECEIVING).
    fn rfc998_on_data(&mut self, now: Instant, i: usize, first: bool, variance: Duration) {
        let full = self.full;
        if self.bufs[i].is_complete() {
            // "When all packets have been received, the timer is cleared."
            let b = &mut self.bufs[i];
            b.state = RecvState::Received;
            b.timer = None;
            if let Some(len) = b.len {
                b.data.truncate(len);
            }
            return;
        }
        if !first {
            // The tight timer is set once, on the first arrival; later
            // arrivals leave it alone.
            return;
        }
        // "When the first DATA packet for A arrives, A moves from the ACKED
        // state to the RECEIVING state and its data timer is set to a new
        // 'tight' value ... calculated in the same manner as the loose timer
        // ... leaving fewer packets to arrive between the setting of the data
        // timer and the arrival of the last DATA packet in A."
        let rem = self.bufs[i].remaining(full);
        self.bufs[i].timer = Some(self.rfc998_timer(now, rem, variance));
        // "The receiving NETBLT also sets the tight data timers of any
        // buffers numbered lower than A that are also in the ACKED state ...
        // allowing the missing packets to be detected earlier. An immediate
        // RESEND is not sent".
        for j in 0..i {
            if self.bufs[j].state != RecvState::Acked {
                continue;
            }
            let t = self.rfc998_timer(now, self.bufs[j].remaining(full), variance);
            let b = &mut self.bufs[j];
            b.timer = Some(b.timer.map_or(t, |old| old.min(t)));
        }
    }

    fn note_last(&mut self, number: u32) {
        if self.last_buffer.is_some() {
            return;
        }
        self.last_buffer = Some(number);
        // Decision Z15: buffers GO'd past the last one will never be filled.
        while self.bufs.back().is_some_and(|b| b.number > number) {
            if let Some(b) = self.bufs.pop_back() {
                self.recycle(b.data);
            }
        }
        // Their GOs stay in the control FIFO: removing an unacknowledged
        // message would leave a hole in the sequence numbers that the
        // sender's high-acknowledged-sequence-number could never pass. The
        // sender ignores GOs past the last buffer.
        self.next_go = self.next_go.min(number.saturating_add(1));
    }

    /// Queues OKs for complete buffers, returns buffers ready for the
    /// application in order, and drops buffers whose OK was acknowledged.
    pub(crate) fn progress(
        &mut self,
        stats: &mut Stats,
        mut deliver: impl FnMut(u32, Vec<u8>, bool),
    ) {
        let (burst_size, interval) = self.ok_burst();
        // Deliver in order.
        for b in self.bufs.iter_mut() {
            if b.delivered {
                continue;
            }
            if b.state != RecvState::Received {
                break;
            }
            b.delivered = true;
            let data = std::mem::take(&mut b.data);
            stats.bytes_transferred += data.len() as u64;
            stats.buffers += 1;
            let last = self.last_buffer == Some(b.number);
            if last && self.confirm_last {
                self.awaiting_confirm = true;
            }
            deliver(b.number, data, last);
        }
        // Queue OKs for complete buffers (the last one only once confirmed).
        let mut oks = Vec::new();
        for b in self.bufs.iter_mut() {
            if b.state == RecvState::Received && !b.ok_queued {
                let last = self.last_buffer == Some(b.number);
                if last && self.confirm_last && (!b.delivered || self.awaiting_confirm) {
                    continue;
                }
                b.ok_queued = true;
                tracing::debug!(buffer = b.number, "OK");
                oks.push(b.number);
            }
        }
        for number in oks {
            self.push_ok(number, burst_size, interval, stats);
        }
    }

    fn push_ok(&mut self, buffer: u32, burst_size: u16, interval: u16, stats: &mut Stats) {
        let timer_ms = self.control_timer_ms;
        self.fifo.push(|seq| ControlMessage::Ok {
            seq,
            buffer,
            burst_size,
            burst_interval_ms: interval,
            control_timer_ms: timer_ms,
        });
        stats.control_messages += 1;
    }

    /// A buffer's OK was acknowledged: it is disposed of once it and every
    /// buffer before it are done (the deque stays contiguous, so numbers map
    /// to indices directly).
    fn on_ok_acked(&mut self, buffer: u32) {
        if let Some(i) = self.index(buffer) {
            self.bufs[i].ok_acked = true;
        }
        while self.bufs.front().is_some_and(|b| b.ok_acked && b.delivered) {
            if let Some(b) = self.bufs.pop_front() {
                self.recycle(b.data);
            }
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.last_buffer.is_some()
            && self.bufs.is_empty()
            && self.fifo.is_empty()
            && !self.awaiting_confirm
            && self.undelivered == 0
    }

    /// The transfer is complete at this end and only OK messages wait for
    /// their acknowledgment.
    pub(crate) fn only_final_oks_unacknowledged(&self) -> bool {
        self.last_buffer.is_some()
            && !self.awaiting_confirm
            && self.undelivered == 0
            && self
                .bufs
                .iter()
                .all(|b| b.state == RecvState::Received && b.delivered && b.ok_queued)
            && self
                .fifo
                .only_oks_or_gos_after(self.last_buffer.unwrap_or(u32::MAX))
    }

    pub(crate) fn next_timer(&self) -> Option<Instant> {
        self.bufs.iter().filter_map(|b| b.timer).min()
    }

    /// The next data timer or FEEDBACK, whichever is first.
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        let fb = self.feedback.due(self.srtt);
        match (self.next_timer(), fb) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Expired data timers: RESEND the missing packets (RFC 998 §5.2.2: the
    /// receiver "assumes a lost LDATA packet and sends a RESEND message
    /// requesting all missing DATA packets in the buffer").
    pub(crate) fn on_timeout(&mut self, now: Instant, stats: &mut Stats) {
        // RESEND lists are split so that each message fits one datagram.
        let per_msg = ((self.max_datagram - HEADER_LEN - 12) / 2).clamp(1, usize::from(u16::MAX));
        let full = self.full;
        let mut resends: Vec<(usize, Vec<u16>)> = Vec::new();
        let mut rearm: Vec<usize> = Vec::new();
        let mut not_yet: Vec<usize> = Vec::new();
        // The sender sends buffers in order: data in a later buffer means it
        // is done with the earlier ones.
        let newest_with_data = self
            .bufs
            .iter()
            .rposition(|b| b.state == RecvState::Received || b.got.count() > 0);
        // The oldest buffer not yet complete: the sender resends there first.
        let first_open = self
            .bufs
            .iter()
            .position(|b| b.state != RecvState::Received);
        let adaptive = self.policy == DataTimerPolicy::Adaptive;
        for (i, b) in self.bufs.iter_mut().enumerate() {
            if b.timer.is_none_or(|t| t > now) {
                continue;
            }
            b.timer = None;
            if !matches!(b.state, RecvState::Acked | RecvState::Receiving) {
                continue;
            }
            // Decision R13: nothing of this buffer has come, no later one
            // has data, and an earlier one still waits for packets. The
            // sender sends in order: it has not reached this buffer (it
            // resends the earlier ones first, or it keeps fewer buffers
            // than were GO'd, R11). Asking for all of it would only put
            // packets still on their way in the queue again; wait more.
            let not_reached = b.got.count() == 0
                && newest_with_data.is_none_or(|j| j < i)
                && first_open.is_some_and(|f| f < i);
            if adaptive && not_reached {
                not_yet.push(i);
                continue;
            }
            stats.data_timeouts += 1;
            tracing::debug!(%now, buffer = b.number, state = ?b.state, got = b.got.count(), "data timer expired");
            // Decision Z14: without LDATA the count is unknown; ask for every
            // missing number up to a full buffer, and the sender answers
            // numbers past its real end by resending its LDATA.
            let limit = b.expected(full) as usize;
            let highest = (0..limit).rev().find(|&p| b.got.get(p));
            // Decision E9: packets past the highest one received (the tail)
            // may be lost, or not sent yet by a sender that paused (a busy or
            // descheduled host; it then sends them on waking, and again when
            // our RESEND arrives). The tail is asked for once the buffer's
            // size is known (LDATA), once the sender has moved on to a later
            // buffer, or at the second expiry in a row without an arrival;
            // holes below the highest packet are asked for at once.
            // RFC 998 (the Rfc998 policy): the receiver "sends a RESEND
            // message requesting all missing DATA packets in the buffer".
            let ask_tail = matches!(self.policy, DataTimerPolicy::Rfc998 { .. })
                || b.count.is_some()
                || b.hint.is_some_and(|h| h < full)
                || newest_with_data.is_some_and(|j| j > i)
                || b.backoff > 0;
            let upto = if ask_tail {
                limit
            } else {
                highest.map_or(0, |h| h + 1)
            };
            let missing: Vec<u16> = b.got.clear_below(upto).map(|p| p as u16).collect();
            // #LOSS counts packets known to be missing: holes below the highest
            // packet received, or anything once LDATA gave the buffer's size.
            // A tail past the highest packet may simply not be sent yet (a
            // sender slower than negotiated); it is asked for, not counted.
            for &p in &missing {
                // FEEDBACK counts only holes below the highest packet, on
                // arrival: a timer's RESEND can name packets still on their
                // way (tails, whole buffers after a pause), and counting
                // those as loss made noise of nothing.
                let known = b.count.is_some() || highest.is_some_and(|h| usize::from(p) < h);
                if known && b.requested.insert(usize::from(p)) {
                    stats.data_packets_lost += 1;
                }
            }
            b.backoff = b.backoff.saturating_add(1);
            if !missing.is_empty() {
                resends.push((i, missing));
            } else {
                rearm.push(i);
            }
        }
        for i in not_yet {
            // The loose timer again (as when its GO was acknowledged): the
            // packets of every earlier buffer still expected, then its own.
            let t = self.data_timer(now, self.expected_through(i), self.srtt, 0);
            self.bufs[i].timer = Some(t);
        }
        for i in rearm {
            let (remaining, backoff) = (self.bufs[i].remaining(full), self.bufs[i].backoff);
            let t = match self.policy {
                DataTimerPolicy::Rfc998 { variance } => self.rfc998_timer(now, remaining, variance),
                DataTimerPolicy::Adaptive => {
                    self.data_timer(now, remaining, Duration::ZERO, backoff)
                }
            };
            self.bufs[i].timer = Some(t);
        }
        for (i, missing) in resends {
            let number = self.bufs[i].number;
            let mut last_seq = 0;
            for chunk in missing.chunks(per_msg) {
                last_seq = self.fifo.push(|seq| ControlMessage::Resend {
                    seq,
                    buffer: number,
                    packets: chunk.to_vec(),
                });
                stats.control_messages += 1;
            }
            let b = &mut self.bufs[i];
            tracing::debug!(buffer = number, seq = last_seq, "RESEND");
            b.state = RecvState::AckWait;
            b.awaiting = last_seq;
        }
    }

    pub(crate) fn confirm_last(&mut self) {
        self.awaiting_confirm = false;
    }
}
