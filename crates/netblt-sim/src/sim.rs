//! [`Simulation`]: two hosts, two links, one event queue, one virtual clock.

use std::time::Duration;

use netblt_link::{Link, LinkStats};
use netblt_proto::Instant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::ethernet::{Finished, Segment, SegmentStats};
use crate::event::{Event, EventQueue, Pool};
use crate::host::{Host, HostStats, World};
use crate::node::Node;
use crate::path::{PathConfig, Side, SimError};

/// Default cap on events per [`Simulation::run`] call.
pub const DEFAULT_EVENT_LIMIT: u64 = 1_000_000_000;
/// Default cap on consecutive events at one instant (livelock guard).
pub const DEFAULT_STALL_LIMIT: u64 = 1_000_000;

/// Why [`Simulation::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// Both nodes report `is_finished`.
    Finished,
    /// Nothing is scheduled: no packet in flight, no CPU work, no timer.
    Idle,
    /// The next event lies beyond the time limit.
    TimeLimit,
    /// The run processed its event limit.
    EventLimit,
    /// Too many events at one instant without the clock moving: livelock.
    Stalled,
}

/// Counters for the whole simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SimStats {
    /// Host A.
    pub host_a: HostStats,
    /// Host B.
    pub host_b: HostStats,
    /// The link A to B.
    pub forward: LinkStats,
    /// The link B to A.
    pub reverse: LinkStats,
    /// Events processed since creation.
    pub events: u64,
    /// The shared Ethernet segment, if the path has one.
    pub segment: Option<SegmentStats>,
}

/// SplitMix64 step: independent, stable seeds for each random stream.
fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic discrete-event simulation of two hosts joined by a path.
///
/// The clock jumps from event to event; nothing sleeps. Events at the same
/// instant run in the order they were scheduled, and every random choice
/// comes from streams derived from `seed`, so the same nodes, path and seed
/// always give the same run.
pub struct Simulation<A: Node, B: Node> {
    a: Host<A>,
    b: Host<B>,
    forward: Link,
    reverse: Link,
    world: World,
    path: PathConfig,
    now: Instant,
    events: u64,
    same_instant: u64,
    event_limit: u64,
    stall_limit: u64,
    /// Other stations' broadcasts: mean gap (ns) and their random stream.
    broadcasts: Option<(f64, ChaCha8Rng)>,
}

/// A broadcast frame's bytes on the wire: the Ethernet minimum (an ARP
/// request is 42 bytes, padded to 60 plus the FCS).
const BROADCAST_FRAME: usize = 64;

impl<A: Node, B: Node> Simulation<A, B> {
    /// Builds a simulation at time zero; both hosts get a first chance to
    /// send at [`Instant::ZERO`].
    pub fn new(a: A, b: B, path: PathConfig, seed: u64) -> Result<Self, SimError> {
        path.validate()?;
        let forward = Link::new(path.forward.clone(), derive_seed(seed, 1)).map_err(|source| {
            SimError::Link {
                sender: Side::A,
                source,
            }
        })?;
        let reverse = Link::new(path.reverse.clone(), derive_seed(seed, 2)).map_err(|source| {
            SimError::Link {
                sender: Side::B,
                source,
            }
        })?;
        let mut world = World {
            queue: EventQueue::default(),
            pool: Pool::default(),
            wire_overhead: path.wire_overhead,
            segment: path
                .segment
                .clone()
                .map(|cfg| Segment::new(cfg, derive_seed(seed, 5))),
            finished: Vec::new(),
        };
        world.queue.push(Instant::ZERO, Event::Kick(Side::A));
        world.queue.push(Instant::ZERO, Event::Kick(Side::B));
        let mut broadcasts = path
            .segment
            .as_ref()
            .map(|s| s.cross.broadcasts_per_s)
            .filter(|&r| r > 0.0)
            .map(|r| (1e9 / r, ChaCha8Rng::seed_from_u64(derive_seed(seed, 6))));
        if let Some((gap, rng)) = broadcasts.as_mut() {
            let first = exp_ns(rng, *gap);
            world.queue.push(
                Instant::ZERO + Duration::from_nanos(first),
                Event::Broadcast,
            );
        }
        Ok(Simulation {
            a: Host::new(a, Side::A, &path.host_a, derive_seed(seed, 3)),
            b: Host::new(b, Side::B, &path.host_b, derive_seed(seed, 4)),
            forward,
            reverse,
            world,
            path,
            now: Instant::ZERO,
            events: 0,
            same_instant: 0,
            event_limit: DEFAULT_EVENT_LIMIT,
            stall_limit: DEFAULT_STALL_LIMIT,
            broadcasts,
        })
    }

    /// Caps the events one [`run`](Self::run) call may process.
    pub fn set_event_limit(&mut self, limit: u64) -> &mut Self {
        self.event_limit = limit;
        self
    }

    /// Caps consecutive events at a single instant before
    /// [`Outcome::Stalled`] (a node that keeps asking to be woken "now").
    pub fn set_stall_limit(&mut self, limit: u64) -> &mut Self {
        self.stall_limit = limit.max(1);
        self
    }

    /// Processes the next event. Returns `false` if nothing is scheduled.
    pub fn step(&mut self) -> bool {
        let Some((at, event)) = self.world.queue.pop() else {
            return false;
        };
        if at > self.now {
            self.now = at;
            self.same_instant = 0;
        }
        self.same_instant += 1;
        self.events += 1;
        let now = self.now;
        let w = &mut self.world;
        match event {
            Event::Kick(Side::A) => self.a.on_kick(now, w),
            Event::Kick(Side::B) => self.b.on_kick(now, w),
            Event::CpuDone(Side::A) => self.a.on_cpu_done(now, w),
            Event::CpuDone(Side::B) => self.b.on_cpu_done(now, w),
            Event::NicTxDone(Side::A) => self.a.on_nic_done(now, &mut self.forward, w),
            Event::NicTxDone(Side::B) => self.b.on_nic_done(now, &mut self.reverse, w),
            Event::Arrival {
                to: Side::A,
                data,
                flip_bit,
            } => self.a.on_arrival(now, data, flip_bit, w),
            Event::Arrival {
                to: Side::B,
                data,
                flip_bit,
            } => self.b.on_arrival(now, data, flip_bit, w),
            Event::Timer {
                side: Side::A,
                generation,
            } => self.a.on_timer(now, generation, w),
            Event::Timer {
                side: Side::B,
                generation,
            } => self.b.on_timer(now, generation, w),
            Event::SegmentWake => {
                if let Some(seg) = w.segment.as_mut() {
                    seg.on_wake(now, &mut w.queue, &mut w.finished);
                }
            }
            Event::Broadcast => self.on_broadcast(now),
        }
        self.hand_over_finished(now);
        true
    }

    /// Another station's broadcast reaches both hosts' interfaces, which
    /// take it in like any frame (it needs a free buffer, it is lost to a
    /// deaf interface) and whose CPUs must read it out and discard it (the
    /// node sees bytes that are not a NETBLT packet). The next one is drawn
    /// only while something else was scheduled or a node waits on a timer
    /// (looked at before this broadcast adds work), so an idle simulation
    /// stays idle.
    fn on_broadcast(&mut self, now: Instant) {
        let active = self.world.queue.peek_time().is_some()
            || self.a.node.poll_timeout().is_some()
            || self.b.node.poll_timeout().is_some();
        let len = BROADCAST_FRAME
            .saturating_sub(self.world.wire_overhead)
            .max(1);
        for side in [Side::A, Side::B] {
            let mut data = self.world.pool.get();
            data.resize(len, 0);
            let w = &mut self.world;
            match side {
                Side::A => self.a.on_arrival(now, data, None, w),
                Side::B => self.b.on_arrival(now, data, None, w),
            }
        }
        let finished = self.a.node.is_finished() && self.b.node.is_finished();
        if let Some((gap, rng)) = self.broadcasts.as_mut() {
            if !finished && active {
                let next = now + Duration::from_nanos(exp_ns(rng, *gap).max(1));
                self.world.queue.push(next, Event::Broadcast);
            }
        }
    }

    /// Gives the hosts the frames the shared segment finished (sent or
    /// discarded), in order; a host may load its next frame in turn.
    fn hand_over_finished(&mut self, now: Instant) {
        while !self.world.finished.is_empty() {
            let done = std::mem::take(&mut self.world.finished);
            for f in done {
                let w = &mut self.world;
                match f {
                    Finished::Sent(Side::A) => self.a.on_nic_done(now, &mut self.forward, w),
                    Finished::Sent(Side::B) => self.b.on_nic_done(now, &mut self.reverse, w),
                    Finished::Aborted(Side::A) => self.a.on_nic_abort(now, w),
                    Finished::Aborted(Side::B) => self.b.on_nic_abort(now, w),
                }
            }
        }
    }

    /// Runs until both nodes are finished, nothing is scheduled, the next
    /// event is later than `limit`, or a guard trips. Never loops forever.
    pub fn run(&mut self, limit: Instant) -> Outcome {
        let mut budget = self.event_limit;
        loop {
            if self.a.node.is_finished() && self.b.node.is_finished() {
                return Outcome::Finished;
            }
            let Some(next) = self.world.queue.peek_time() else {
                return Outcome::Idle;
            };
            if next > limit {
                self.now = self.now.max(limit);
                return Outcome::TimeLimit;
            }
            if budget == 0 {
                return Outcome::EventLimit;
            }
            if next == self.now && self.same_instant >= self.stall_limit {
                return Outcome::Stalled;
            }
            budget -= 1;
            self.step();
        }
    }

    /// The virtual clock.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Time of the next scheduled event.
    pub fn next_event(&self) -> Option<Instant> {
        self.world.queue.peek_time()
    }

    /// Events waiting in the queue (including superseded timers).
    pub fn pending_events(&self) -> usize {
        self.world.queue.len()
    }

    /// The path this simulation runs.
    pub fn path(&self) -> &PathConfig {
        &self.path
    }

    /// Host A's node.
    pub fn node_a(&self) -> &A {
        &self.a.node
    }

    /// Host A's node, mutably. Host A's CPU is offered work again at the
    /// current time, so whatever the caller changes (new data to send, a
    /// new timer) is noticed.
    pub fn node_a_mut(&mut self) -> &mut A {
        self.world.queue.push(self.now, Event::Kick(Side::A));
        &mut self.a.node
    }

    /// Host B's node.
    pub fn node_b(&self) -> &B {
        &self.b.node
    }

    /// Host B's node, mutably (see [`node_a_mut`](Self::node_a_mut)).
    pub fn node_b_mut(&mut self) -> &mut B {
        self.world.queue.push(self.now, Event::Kick(Side::B));
        &mut self.b.node
    }

    /// Counters so far.
    pub fn stats(&self) -> SimStats {
        SimStats {
            host_a: self.a.stats,
            host_b: self.b.stats,
            forward: *self.forward.stats(),
            reverse: *self.reverse.stats(),
            events: self.events,
            segment: self.world.segment.as_ref().map(|s| s.stats),
        }
    }
}

/// An exponential draw with mean `mean_ns` (Poisson arrivals), in ns.
fn exp_ns(rng: &mut ChaCha8Rng, mean_ns: f64) -> u64 {
    let u: f64 = rng.random::<f64>();
    let v = -mean_ns * (1.0 - u).ln();
    if v.is_finite() && v < 1e18 {
        v as u64
    } else {
        u64::MAX / 4
    }
}
