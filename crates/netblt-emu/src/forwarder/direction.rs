//! One direction of the forwarder: read, decide, wait, write.

use std::io::ErrorKind;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use netblt_link::Link;

use super::queue::DeliveryQueue;
use super::wait::{
    raise_priority, readable_within, tighten_timer_slack, Priority, SpinBudget, IDLE_WAIT,
    SPIN_SLICE, SPIN_WINDOW,
};
use crate::nat::Nat;
use crate::stats::DirStats;
use crate::tun::Tun;

/// Which edge of the NAT a direction crosses: left to right packets are
/// translated as they are read (the NAT is before the link), right to left
/// ones as they are delivered (after it).
pub(super) enum NatSide {
    Outbound(Arc<Nat>),
    Inbound(Arc<Nat>),
}

/// Packets read in a row before checking for due writes, so a flood on the
/// input cannot starve deliveries.
const READ_BATCH: usize = 32;

/// Packets written in a row before reading again, so that after a stall the
/// backlog of deliveries cannot keep the input unread (and overflowing).
const WRITE_BATCH: usize = 64;

/// How often the thread copies its counters where [`super::Forwarder::snapshot`] sees them.
const PUBLISH_EVERY: Duration = Duration::from_millis(50);

/// Large enough for any IP packet a TUN device can hand us.
const MAX_PACKET: usize = 65_536;

pub(super) struct Direction {
    src: Arc<Tun>,
    dst: Arc<Tun>,
    link: Link,
    start: Instant,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<DirStats>>,
    stats: DirStats,
    queue: DeliveryQueue,
    realtime: bool,
    budget: SpinBudget,
    nat: Option<NatSide>,
}

impl Direction {
    pub(super) fn new(
        src: Arc<Tun>,
        dst: Arc<Tun>,
        link: Link,
        start: Instant,
        stop: Arc<AtomicBool>,
        shared: Arc<Mutex<DirStats>>,
        realtime: bool,
    ) -> Self {
        Direction {
            src,
            dst,
            link,
            start,
            stop,
            shared,
            stats: DirStats::default(),
            queue: DeliveryQueue::default(),
            realtime,
            budget: SpinBudget::new(),
            nat: None,
        }
    }

    /// With the NAT's translation at this direction's edge.
    pub(super) fn with_nat(mut self, nat: Option<NatSide>) -> Self {
        self.nat = nat;
        self
    }

    pub(super) fn run(mut self) {
        tighten_timer_slack();
        self.stats.scheduling = match raise_priority(self.realtime) {
            Priority::Realtime => "SCHED_FIFO",
            Priority::Nice => "nice -20",
            Priority::Normal => "normal",
        }
        .to_owned();
        let mut scratch = vec![0u8; MAX_PACKET];
        let mut last_publish = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            let read_any = self.read_batch(&mut scratch);
            self.write_due();
            if last_publish.elapsed() >= PUBLISH_EVERY {
                self.publish();
                last_publish = Instant::now();
            }
            if read_any {
                // More may be waiting: read again before sleeping.
                continue;
            }
            self.wait();
        }
        self.publish();
    }

    /// Reads up to [`READ_BATCH`] packets and hands each to the link model.
    fn read_batch(&mut self, scratch: &mut [u8]) -> bool {
        let mut read_any = false;
        for _ in 0..READ_BATCH {
            match self.src.recv(scratch) {
                Ok(n) => {
                    read_any = true;
                    let now = self.start.elapsed();
                    if let Some(packet) = scratch.get_mut(..n) {
                        if let Some(NatSide::Outbound(nat)) = &self.nat {
                            nat.outbound(now, packet);
                        }
                        self.offer(now, packet);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.stats.read_errors += 1;
                    tracing::warn!("TUN read failed: {e}");
                    // Do not spin on a persistent error.
                    std::thread::sleep(Duration::from_millis(1));
                    break;
                }
            }
        }
        read_any
    }

    /// Applies the link model to one packet: this is the only place packets
    /// meet `Link::offer`, so the emulator and the simulator share one model.
    fn offer(&mut self, now: Duration, packet: &[u8]) {
        let fate = self.link.offer(now, packet.len());
        for delivery in fate.iter() {
            self.queue.push(delivery.at, packet, delivery.flip_bit);
        }
    }

    /// Writes the packets whose delivery time has come, up to [`WRITE_BATCH`].
    fn write_due(&mut self) {
        for _ in 0..WRITE_BATCH {
            let now = self.start.elapsed();
            let Some(due) = self.queue.pop_due(now) else {
                break;
            };
            let late = now.saturating_sub(due.at);
            let mut due = due;
            if let Some(NatSide::Inbound(nat)) = &self.nat {
                if !nat.inbound(now, &mut due.packet) {
                    self.queue.recycle(due.packet);
                    continue;
                }
            }
            match self.dst.send(&due.packet) {
                Ok(_) => self.stats.record_write(now, due.packet.len()),
                // A flipped bit in the IP version nibble makes the TUN driver
                // refuse the packet (EINVAL): the corruption did its job.
                Err(_) if due.corrupted => self.stats.corrupt_refused += 1,
                Err(e) => {
                    self.stats.write_errors += 1;
                    tracing::warn!("TUN write failed: {e}");
                }
            }
            self.stats
                .lateness
                .record(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
            self.queue.recycle(due.packet);
        }
    }

    /// Sleeps until a packet arrives or shortly before the next delivery; in
    /// the last [`SPIN_WINDOW`], spins a short slice and returns so the loop
    /// can check for input, as long as the [`SpinBudget`] lasts.
    fn wait(&mut self) {
        let now = self.start.elapsed();
        let Some(at) = self.queue.next_at() else {
            self.sleep(IDLE_WAIT);
            return;
        };
        let left = at.saturating_sub(now);
        if self.budget.allows(now) {
            if left <= SPIN_WINDOW {
                let spin_start = Instant::now();
                while spin_start.elapsed() < SPIN_SLICE && self.start.elapsed() < at {
                    std::hint::spin_loop();
                }
                self.budget.charge(spin_start.elapsed());
            } else {
                self.sleep((left - SPIN_WINDOW).min(IDLE_WAIT));
            }
        } else if !left.is_zero() {
            self.sleep(left.min(IDLE_WAIT));
        }
    }

    fn sleep(&self, timeout: Duration) {
        if let Err(e) = readable_within(self.src.as_fd(), timeout) {
            tracing::warn!("ppoll failed: {e}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn publish(&mut self) {
        self.stats.link = *self.link.stats();
        self.stats.pending = self.queue.len() as u64;
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.clone_from(&self.stats);
    }
}
