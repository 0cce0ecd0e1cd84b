//! One simulated host: a node, one CPU and one network interface.
//!
//! The CPU serves, in this order: a packet of its own waiting for an
//! interface buffer, packets waiting in the interface (charged
//! `recv_fixed + recv_per_byte * len`; the node sees the datagram when that
//! time has passed), then a due timer (free), then transmission
//! (`poll_transmit`, charged `send_fixed + send_per_byte * len`; the packet
//! reaches the interface when that time has passed). Right after a received
//! datagram has been handled, transmission comes before the next arrival
//! (see "Replies go out before the next arrival" below).
//!
//! # Interface buffers: held while the CPU copies
//!
//! The interface has `nic_buffers` hardware buffers shared by both
//! directions. RFC 1030 §4 describes each packet as two copies of its bytes
//! plus fixed work. Receiving: the PC/AT can "DMA a maximum-sized data packet
//! from the Proteon Token Ring into its network interface, copy it from the
//! interface into a packet buffer and finally copy the packet into the correct
//! NETBLT buffer in 8 milliseconds". Sending: it can "copy a maximum-sized
//! packet from NETBLT buffer to NETBLT data packet, format the packet header,
//! and transmit the packet onto the network" (the second copy is into the
//! interface). So a buffer is held:
//!
//! * by a received packet from its arrival until the CPU has **copied it out**
//!   of the interface: the first phase of the receive job, costing
//!   [`INTERFACE_COPY_SHARE`] of the per-byte receive cost. The fixed cost and
//!   the other copy come after, with the buffer free again;
//! * by a packet to send from the moment the CPU **starts copying it in** (the
//!   last phase of the send job, [`INTERFACE_COPY_SHARE`] of the per-byte send
//!   cost) until its last bit is on the wire. If no buffer is free when the
//!   copy-in should start, the CPU waits (or first copies out an arrival that
//!   holds the buffer, which only it can free).
//!
//! Total CPU costs are unchanged by the split; only buffer occupancy is. With
//! unlimited buffers or no per-byte costs it changes nothing.
//!
//! This is what makes RFC 1030 §6's 3COM 3C500 collapse with two outstanding
//! buffers: "the 3COM 3C500 network interface has only one hardware packet
//! buffer and cannot hold a transmitting and receiving packet at the same
//! time", and (§7) it "would not have time to re-enable input before another
//! packet would arrive". An earlier model freed a received packet's buffer
//! when the CPU started on it and took a buffer for sending only after the
//! whole send cost: the single buffer was then almost never busy and the
//! collapse did not appear.
//!
//! A half-duplex interface (the 3C500) is also deaf while it transmits: a
//! packet whose reception overlaps a transmission is lost.
//!
//! # Replies go out before the next arrival (run to completion)
//!
//! After the CPU has handed a received datagram to the node, it asks the
//! node for a packet to send before it serves the next arrival waiting in
//! the interface; only when the node has nothing to send does it go on
//! receiving. Otherwise the arrivals always come first. This is how a
//! single-threaded implementation answers a packet: the code that handles
//! the last DATA packet of a buffer sends the OK/GO it caused, it does not
//! wait for the data stream to pause. RFC 1030 §6 describes exactly that
//! with two outstanding buffers: "the sender of data can transmit
//! constantly; this means that when the receiver of data attempts to send a
//! packet, its interface's receive hardware goes deaf to the network and
//! any packets being transmitted at the time by the sender of data are
//! lost", and §5's lock-step has the receiver send "an OK, followed by a GO
//! for the next buffer" as soon as a buffer is in. With receives always
//! first, a receiver slower than its sender (the 3C500 PC/AT: 6.1 ms per
//! packet received against 6.0 ms sent, §4) could send nothing while data
//! kept arriving: its OK/GO waited for the sender to run out of buffers,
//! so two outstanding buffers behaved like one and the collapse could not
//! appear (issue 13, decision Q7).

use std::collections::VecDeque;
use std::time::Duration;

use netblt_link::profiles::HostModel;
use netblt_link::Link;
use netblt_proto::Instant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::ethernet::{Finished, Segment};
use crate::event::{Event, EventQueue, Pool};
use crate::node::Node;
use crate::path::Side;

/// What happened at one host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostStats {
    /// Total CPU time charged (receive and send costs).
    pub cpu_busy: Duration,
    /// Datagrams whose transmission ended and which were offered to the link.
    pub packets_sent: u64,
    /// Bytes of those datagrams (without wire overhead).
    pub bytes_sent: u64,
    /// Datagrams handed to the node's `handle_datagram`.
    pub packets_received: u64,
    /// Bytes of those datagrams.
    pub bytes_received: u64,
    /// Arrivals lost because the half-duplex interface was transmitting.
    pub nic_deaf_drops: u64,
    /// Arrivals lost because every interface buffer was busy.
    pub nic_full_drops: u64,
    /// Arrivals lost to the host's input drop rate (`HostModel::nic_loss`).
    pub nic_loss_drops: u64,
    /// Arrivals whose flipped bit fell in the headers (IP/UDP/link), which
    /// their checksums would catch: dropped.
    pub header_corrupt_drops: u64,
    /// Datagrams delivered to the node with one payload bit flipped.
    pub corrupted_received: u64,
    /// Datagrams the shared Ethernet segment discarded after 16 collisions.
    pub nic_tx_aborts: u64,
}

/// Share of a packet's per-byte CPU cost spent copying it between the
/// interface and memory: RFC 1030 §4 describes two copies of each packet per
/// direction (interface <-> packet buffer <-> NETBLT buffer), which we take to
/// cost the same per byte. An ASSUMPTION from the text, not fitted to a result.
pub(crate) const INTERFACE_COPY_SHARE: f64 = 0.5;

enum Job {
    Idle,
    /// Copying an arrival out of the interface; it holds a buffer.
    CopyOut(Vec<u8>),
    /// The rest of the receive work; the buffer is free again.
    Process(Vec<u8>),
    /// Building a packet to send (fixed cost and the first copy).
    Prepare(Vec<u8>),
    /// Copying a packet into the interface; it holds a buffer.
    Load(Vec<u8>),
    /// A prepared packet (in `pending_tx`) waits for a free buffer.
    WaitBuffer,
}

/// Shared parts of the simulation a host acts on.
pub(crate) struct World {
    pub(crate) queue: EventQueue,
    pub(crate) pool: Pool,
    pub(crate) wire_overhead: usize,
    /// The shared medium, when the path is one Ethernet segment.
    pub(crate) segment: Option<Segment>,
    /// Frames the segment finished, for the simulation to hand to their
    /// hosts (in order).
    pub(crate) finished: Vec<Finished>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

pub(crate) struct Host<N> {
    pub(crate) node: N,
    side: Side,
    send_fixed: u64,
    send_per_byte: f64,
    recv_fixed: u64,
    recv_per_byte: f64,
    nic_rate: Option<u64>,
    nic_buffers: usize,
    half_duplex: bool,
    nic_loss: f64,
    /// `HostModel::nic_reenable`.
    reenable: Duration,
    /// Input is off until then: the re-enable time after the last
    /// transmission or copy-out.
    deaf_until: Option<Instant>,
    rng: ChaCha8Rng,
    job: Job,
    /// A prepared packet waiting to be copied into the interface.
    pending_tx: Option<Vec<u8>>,
    /// Received packets in interface buffers, waiting for the CPU.
    rx: VecDeque<Vec<u8>>,
    /// Packets in interface buffers to send; the front one is on the wire
    /// when `nic_busy`.
    tx: VecDeque<Vec<u8>>,
    nic_busy: bool,
    /// The CPU just handed a datagram to the node: what it made the node
    /// want to send goes out before the next arrival is served.
    reply_first: bool,
    last_tx_end: Option<Instant>,
    /// Deadline of the live timer event, if any.
    armed: Option<Instant>,
    generation: u64,
    pub(crate) stats: HostStats,
}

impl<N: Node> Host<N> {
    pub(crate) fn new(node: N, side: Side, model: &HostModel, seed: u64) -> Self {
        Host {
            node,
            side,
            send_fixed: nanos(model.send_fixed),
            send_per_byte: model.send_per_byte_ns,
            recv_fixed: nanos(model.recv_fixed),
            recv_per_byte: model.recv_per_byte_ns,
            nic_rate: model.nic_rate_bps,
            nic_buffers: model.nic_buffers.unwrap_or(usize::MAX),
            half_duplex: model.half_duplex,
            nic_loss: model.nic_loss,
            reenable: model.nic_reenable,
            deaf_until: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
            job: Job::Idle,
            pending_tx: None,
            rx: VecDeque::new(),
            tx: VecDeque::new(),
            nic_busy: false,
            reply_first: false,
            last_tx_end: None,
            armed: None,
            generation: 0,
            stats: HostStats::default(),
        }
    }

    fn cost(fixed: u64, per_byte: f64, len: usize) -> Duration {
        // Validated: per_byte is finite and at most 1e9 ns, so this fits.
        let bytes = (per_byte * len as f64).round();
        let var = if bytes >= u64::MAX as f64 {
            u64::MAX
        } else {
            bytes as u64
        };
        Duration::from_nanos(fixed.saturating_add(var))
    }

    /// Time to serialize `wire_len` bytes at the interface rate (rounded up).
    fn serialization(&self, wire_len: usize) -> Duration {
        match self.nic_rate {
            None => Duration::ZERO,
            Some(rate) => {
                let bits_ns = (wire_len as u128) * 8 * 1_000_000_000;
                let ns = bits_ns.div_ceil(u128::from(rate.max(1)));
                Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
            }
        }
    }

    /// The interface-copy part of a per-byte cost (see [`INTERFACE_COPY_SHARE`]).
    fn copy_cost(per_byte: f64, len: usize) -> Duration {
        Self::cost(0, per_byte * INTERFACE_COPY_SHARE, len)
    }

    fn buffers_used(&self) -> usize {
        let in_copy = usize::from(matches!(self.job, Job::CopyOut(_) | Job::Load(_)));
        self.rx.len() + self.tx.len() + in_copy
    }

    /// Gives the CPU its next job if it is free (or waiting for a buffer).
    fn run_cpu(&mut self, now: Instant, w: &mut World) {
        if !matches!(self.job, Job::Idle | Job::WaitBuffer) {
            return;
        }
        self.job = Job::Idle;
        if let Some(pkt) = self.pending_tx.take() {
            if self.buffers_used() < self.nic_buffers {
                self.start_load(now, pkt, w);
            } else if let Some(arrival) = self.rx.pop_front() {
                // Only this CPU can free a buffer an arrival holds: copy it
                // out first, then load our packet.
                self.pending_tx = Some(pkt);
                self.start_receive(now, arrival, w);
            } else {
                self.pending_tx = Some(pkt);
                self.job = Job::WaitBuffer;
            }
            return;
        }
        // Run to completion: a datagram just handled may have made the node
        // want to reply (an OK/GO when it completed a buffer, a NULL-ACK);
        // that reply goes out before the next arrival is served. See the
        // module notes.
        let reply_first = std::mem::take(&mut self.reply_first);
        if !reply_first {
            if let Some(pkt) = self.rx.pop_front() {
                self.start_receive(now, pkt, w);
                return;
            }
        }
        if self.node.poll_timeout().is_some_and(|t| t <= now) {
            self.node.handle_timeout(now);
        }
        let mut buf = w.pool.get();
        if self.node.poll_transmit(now, &mut buf) {
            let total = Self::cost(self.send_fixed, self.send_per_byte, buf.len());
            let copy = Self::copy_cost(self.send_per_byte, buf.len()).min(total);
            self.start_job(now, total - copy, Job::Prepare(buf), w);
        } else {
            w.pool.put(buf);
            // Nothing to send: serve the arrivals skipped above.
            if let Some(pkt) = self.rx.pop_front() {
                self.start_receive(now, pkt, w);
            }
        }
    }

    /// Starts receiving an arrival: the copy out of the interface first (the
    /// buffer stays held), unless that costs nothing.
    fn start_receive(&mut self, now: Instant, pkt: Vec<u8>, w: &mut World) {
        let copy = Self::copy_cost(self.recv_per_byte, pkt.len());
        if copy.is_zero() {
            self.start_process(now, pkt, w);
        } else {
            self.start_job(now, copy, Job::CopyOut(pkt), w);
        }
    }

    fn start_process(&mut self, now: Instant, pkt: Vec<u8>, w: &mut World) {
        let total = Self::cost(self.recv_fixed, self.recv_per_byte, pkt.len());
        let copy = Self::copy_cost(self.recv_per_byte, pkt.len()).min(total);
        self.start_job(now, total - copy, Job::Process(pkt), w);
    }

    /// Copies a prepared packet into a free interface buffer (the caller
    /// checked there is one).
    fn start_load(&mut self, now: Instant, pkt: Vec<u8>, w: &mut World) {
        let copy = Self::copy_cost(self.send_per_byte, pkt.len());
        if copy.is_zero() {
            self.queue_tx(now, pkt, w);
            // The CPU is free again at once.
            self.run_cpu(now, w);
        } else {
            self.start_job(now, copy, Job::Load(pkt), w);
        }
    }

    fn start_job(&mut self, now: Instant, cost: Duration, job: Job, w: &mut World) {
        self.job = job;
        self.stats.cpu_busy = self.stats.cpu_busy.saturating_add(cost);
        w.queue.push(now + cost, Event::CpuDone(self.side));
    }

    /// Re-arms the timer event if the node's deadline changed.
    ///
    /// A deadline that is already due while the CPU is busy is not armed:
    /// the CPU looks at due timers as soon as it is free, and arming one
    /// "now" would spin on the same instant.
    fn refresh_timer(&mut self, now: Instant, w: &mut World) {
        let mut want = self.node.poll_timeout();
        if want.is_some_and(|t| t <= now) && !matches!(self.job, Job::Idle) {
            want = None;
        }
        if want != self.armed {
            self.armed = want;
            self.generation += 1;
            if let Some(t) = want {
                w.queue.push(
                    t.max(now),
                    Event::Timer {
                        side: self.side,
                        generation: self.generation,
                    },
                );
            }
        }
    }

    pub(crate) fn on_kick(&mut self, now: Instant, w: &mut World) {
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }

    pub(crate) fn on_timer(&mut self, now: Instant, generation: u64, w: &mut World) {
        if generation != self.generation {
            return; // superseded
        }
        self.armed = None;
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }

    pub(crate) fn on_cpu_done(&mut self, now: Instant, w: &mut World) {
        match std::mem::replace(&mut self.job, Job::Idle) {
            // The buffer is free again (input is re-enabled after the
            // interface's re-enable time); the rest of the receive follows
            // at once.
            Job::CopyOut(pkt) => {
                self.start_reenable(now);
                self.start_process(now, pkt, w);
            }
            Job::Process(pkt) => {
                self.stats.packets_received += 1;
                self.stats.bytes_received += pkt.len() as u64;
                self.node.handle_datagram(now, &pkt);
                w.pool.put(pkt);
                self.reply_first = true;
            }
            Job::Prepare(pkt) => self.pending_tx = Some(pkt),
            // The buffer passes from the copy to the transmit queue.
            Job::Load(pkt) => self.queue_tx(now, pkt, w),
            job @ (Job::Idle | Job::WaitBuffer) => self.job = job,
        }
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }

    /// The interface has just finished a transmission or a copy-out: input
    /// stays off for the re-enable time (`HostModel::nic_reenable`).
    fn start_reenable(&mut self, now: Instant) {
        if !self.reenable.is_zero() {
            self.deaf_until = Some(now + self.reenable);
        }
    }

    /// Queues a loaded packet for transmission (it already holds a buffer).
    fn queue_tx(&mut self, now: Instant, pkt: Vec<u8>, w: &mut World) {
        self.tx.push_back(pkt);
        if !self.nic_busy {
            self.start_tx(now, w);
        }
    }

    fn start_tx(&mut self, now: Instant, w: &mut World) {
        if let Some(front) = self.tx.front() {
            let wire_len = front.len() + w.wire_overhead;
            self.nic_busy = true;
            match w.segment.as_mut() {
                // On a shared segment the frame waits for the medium (carrier
                // sense, collisions, backoff); the segment says when it is out.
                Some(seg) => seg.request(now, self.side, wire_len, &mut w.queue, &mut w.finished),
                None => {
                    let dur = self.serialization(wire_len);
                    w.queue.push(now + dur, Event::NicTxDone(self.side));
                }
            }
        }
    }

    /// The segment discarded the head packet after too many collisions: it
    /// never reaches the link.
    pub(crate) fn on_nic_abort(&mut self, now: Instant, w: &mut World) {
        self.nic_busy = false;
        self.last_tx_end = Some(now);
        self.start_reenable(now);
        if let Some(pkt) = self.tx.pop_front() {
            self.stats.nic_tx_aborts += 1;
            w.pool.put(pkt);
        }
        self.start_tx(now, w);
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }

    /// The head packet is out: hand it to the path link, schedule its
    /// arrivals, and start the next one.
    pub(crate) fn on_nic_done(&mut self, now: Instant, link: &mut Link, w: &mut World) {
        self.nic_busy = false;
        self.last_tx_end = Some(now);
        self.start_reenable(now);
        if let Some(pkt) = self.tx.pop_front() {
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += pkt.len() as u64;
            let fate = link.offer(now.since_zero(), pkt.len() + w.wire_overhead);
            let to = self.side.peer();
            let mut pkt = Some(pkt);
            let count = fate.iter().count();
            for (i, d) in fate.iter().enumerate() {
                let data = if i + 1 == count {
                    pkt.take().unwrap_or_default()
                } else {
                    let mut copy = w.pool.get();
                    copy.extend_from_slice(pkt.as_deref().unwrap_or(&[]));
                    copy
                };
                let arrival = Event::Arrival {
                    to,
                    data,
                    flip_bit: d.flip_bit,
                };
                w.queue.push(Instant::ZERO + d.at, arrival);
            }
            if let Some(unused) = pkt {
                w.pool.put(unused);
            }
        }
        self.start_tx(now, w);
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }

    /// A packet's last bit reached this host's interface.
    pub(crate) fn on_arrival(
        &mut self,
        now: Instant,
        mut data: Vec<u8>,
        flip_bit: Option<usize>,
        w: &mut World,
    ) {
        let header_bits = w.wire_overhead.saturating_mul(8);
        // Input still off after the last transmission or copy-out: a packet
        // whose reception began before it was re-enabled is lost.
        if let Some(until) = self.deaf_until {
            let start = now - self.serialization(data.len() + w.wire_overhead);
            if start < until {
                self.stats.nic_deaf_drops += 1;
                w.pool.put(data);
                return;
            }
        }
        if self.half_duplex {
            // Reception occupied [now - serialization, now]; any overlap with
            // our own transmission loses it.
            let start = now - self.serialization(data.len() + w.wire_overhead);
            if self.nic_busy || self.last_tx_end.is_some_and(|end| end > start) {
                self.stats.nic_deaf_drops += 1;
                w.pool.put(data);
                return;
            }
        }
        if self.buffers_used() >= self.nic_buffers {
            self.stats.nic_full_drops += 1;
            w.pool.put(data);
            return;
        }
        if self.nic_loss > 0.0 && self.rng.random::<f64>() < self.nic_loss {
            self.stats.nic_loss_drops += 1;
            w.pool.put(data);
            return;
        }
        if let Some(bit) = flip_bit {
            if bit < header_bits {
                self.stats.header_corrupt_drops += 1;
                w.pool.put(data);
                return;
            }
            let bit = bit - header_bits;
            if let Some(byte) = data.get_mut(bit / 8) {
                *byte ^= 1 << (bit % 8);
                self.stats.corrupted_received += 1;
            }
        }
        self.rx.push_back(data);
        self.run_cpu(now, w);
        self.refresh_timer(now, w);
    }
}
