//! A shared CSMA/CD Ethernet segment: both hosts' interfaces and the other
//! stations' traffic contend for one 10 Mb/s medium.
//!
//! RFC 1030 §6 ran its Ethernet tests on "MIT's infamous Subnet 26", "a 10
//! megabit per second Ethernet supporting about 150 hosts", "known for being
//! somewhat noisy", and adds that "when the same test was conducted on a
//! special Ethernet LAN with the only two hosts attached being the two NETBLT
//! machines, no packets were dropped once the burst interval rose above 40
//! milliseconds/5 packet burst. The improved performance was doubtless due
//! to the absence of extra network traffic." This module is that medium,
//! with the access rules of the Ethernet specification (the constants are in
//! `netblt_link::profiles::ethernet`, each with its clause):
//!
//! * **Carrier sense, 1-persistent.** A station with a frame waits while the
//!   medium carries a signal and for one inter-frame gap after it, then
//!   transmits at once.
//! * **Collision detection.** Stations that start less than one end-to-end
//!   propagation time apart do not hear each other: they collide. Every
//!   station waiting for the same idle medium starts at the same instant, so
//!   deferring stations always collide. The medium then carries signal until
//!   the last colliding station has heard the others and sent its 32-bit jam.
//! * **Truncated binary exponential backoff.** After its n-th collision a
//!   frame waits `k` slot times (51.2 us), `k` uniform in `0 .. 2^min(n, 10)`,
//!   and is discarded after 16 attempts.
//!
//! The other stations' frames arrive as a Poisson process of the configured
//! load; each is its own contender with its own backoff. They are addressed
//! to neither of our hosts (the 3C500 filters on its station address), so
//! they cost our hosts nothing but time on the medium, collisions and
//! deferrals.
//!
//! What this adds to the 3C500's story (see `host.rs`): a host whose frame
//! waits for the medium already holds it in the interface's one buffer, so
//! it is deaf for the whole wait. That is how the board works by its Linux
//! driver's notes (drivers/net/3c501.c, D. Becker and A. Cox, 1992-2000):
//! "a single buffer which can be used to receive or transmit a packet. ...
//! If it's transmitting it's not receiving and vice versa"; to send, the
//! card is switched from receive mode "to command mode. A packet is loaded
//! and transmit mode triggered", and after a collision the host itself must
//! rewind the buffer pointer and trigger the next attempt, so the buffer
//! stays a transmit buffer through every backoff. With two outstanding buffers, the receiver
//! of data's control packet waits behind the sender's data frame that is on
//! the wire, and that data frame then arrives at an interface whose buffer is
//! taken: lost (§6: "when the receiver of data attempts to send a packet, its
//! interface's receive hardware goes deaf to the network and any packets
//! being transmitted at the time by the sender of data are lost").

use netblt_link::profiles::EthernetSegment;
use netblt_proto::Instant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventQueue};
use crate::path::Side;

/// What happened on the shared segment during a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SegmentStats {
    /// Frames of our two hosts sent without collision on their last attempt.
    pub host_frames_sent: u64,
    /// Our hosts' frames discarded after the attempt limit.
    pub host_frames_aborted: u64,
    /// Collisions one of our hosts' frames took part in (one per frame per
    /// collision).
    pub host_collisions: u64,
    /// Total time our hosts' sent frames waited between being loaded and
    /// starting their successful transmission, in nanoseconds.
    pub host_access_wait_ns: u64,
    /// Frames the other stations offered.
    pub cross_frames_offered: u64,
    /// Frames of the other stations sent.
    pub cross_frames_sent: u64,
    /// Frames of the other stations discarded after the attempt limit.
    pub cross_frames_aborted: u64,
    /// Collision events on the medium (any stations).
    pub collisions: u64,
    /// Time the medium carried a signal (frames, preambles, collisions and
    /// jams), in nanoseconds.
    pub busy_ns: u64,
}

/// A frame finished (for one of our hosts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Its last bit is on the medium.
    Sent(Side),
    /// Discarded after the attempt limit ("excessive collisions").
    Aborted(Side),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Station {
    Host(Side),
    Cross,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    station: Station,
    /// When the station next wants the medium (nanoseconds since zero).
    ready_at: u64,
    /// When it was first loaded (for the access-wait statistic).
    loaded_at: u64,
    attempts: u32,
    /// Bits on the medium, preamble included.
    bits: u64,
}

struct OnWire {
    start: u64,
    last_start: u64,
    end: u64,
    frames: Vec<Frame>,
}

impl OnWire {
    fn collided(&self) -> bool {
        self.frames.len() > 1
    }
}

fn ns(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The medium and every frame contending for it.
pub(crate) struct Segment {
    cfg: EthernetSegment,
    rng: ChaCha8Rng,
    waiting: Vec<Frame>,
    wire: Option<OnWire>,
    /// Earliest instant a deferring station may start (end of signal plus
    /// the inter-frame gap).
    idle_from: u64,
    next_cross: Option<u64>,
    /// Mean nanoseconds between the other stations' frames.
    cross_gap_ns: f64,
    /// The earliest wake-up already in the event queue.
    wake_at: Option<u64>,
    pub(crate) stats: SegmentStats,
}

impl Segment {
    pub(crate) fn new(cfg: EthernetSegment, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let bits = (cfg.cross.mean_frame() + cfg.preamble_bytes as f64) * 8.0;
        let cross_gap_ns = if cfg.cross.load > 0.0 && bits > 0.0 {
            bits * 1e9 / (cfg.cross.load * cfg.rate_bps as f64)
        } else {
            f64::INFINITY
        };
        let next_cross = cross_gap_ns
            .is_finite()
            .then(|| exp_draw(&mut rng, cross_gap_ns));
        Segment {
            cfg,
            rng,
            waiting: Vec::new(),
            wire: None,
            idle_from: 0,
            next_cross,
            cross_gap_ns,
            wake_at: None,
            stats: SegmentStats::default(),
        }
    }

    fn frame_bits(&self, wire_len: usize) -> u64 {
        // Short frames are padded to the minimum on the medium.
        let len = wire_len.max(netblt_link::profiles::ethernet::MIN_FRAME);
        ((len + self.cfg.preamble_bytes) as u64) * 8
    }

    fn duration_ns(&self, bits: u64) -> u64 {
        let ns = u128::from(bits) * 1_000_000_000;
        u64::try_from(ns.div_ceil(u128::from(self.cfg.rate_bps.max(1)))).unwrap_or(u64::MAX)
    }

    /// Host `side` has loaded a frame of `wire_len` bytes (header and FCS
    /// included) and wants the medium from `now`.
    pub(crate) fn request(
        &mut self,
        now: Instant,
        side: Side,
        wire_len: usize,
        queue: &mut EventQueue,
        out: &mut Vec<Finished>,
    ) {
        let t = ns(now.since_zero());
        let bits = self.frame_bits(wire_len);
        self.waiting.push(Frame {
            station: Station::Host(side),
            ready_at: t,
            loaded_at: t,
            attempts: 0,
            bits,
        });
        self.on_wake(now, queue, out);
    }

    /// Advances the medium to `now`: new frames from the other stations, the
    /// end of a transmission or collision, stations joining a transmission
    /// they could not hear yet, and a new transmission on an idle medium.
    pub(crate) fn on_wake(
        &mut self,
        now: Instant,
        queue: &mut EventQueue,
        out: &mut Vec<Finished>,
    ) {
        let now_ns = ns(now.since_zero());
        if self.wake_at.is_some_and(|w| w <= now_ns) {
            self.wake_at = None;
        }
        loop {
            self.cross_arrivals(now_ns);
            let mut progressed = false;
            if self.wire.as_ref().is_some_and(|w| w.end <= now_ns) {
                if let Some(w) = self.wire.take() {
                    self.finish(w, out);
                    progressed = true;
                }
            }
            self.join_unheard(now_ns);
            if self.wire.is_none() {
                progressed |= self.start(now_ns);
            }
            if !progressed {
                break;
            }
        }
        self.schedule(now_ns, queue);
    }

    fn cross_arrivals(&mut self, now_ns: u64) {
        while let Some(t) = self.next_cross.filter(|&t| t <= now_ns) {
            let sizes = &self.cfg.cross.frame_sizes;
            let len = sizes[self.rng.random_range(0..sizes.len())];
            let bits = self.frame_bits(len);
            self.waiting.push(Frame {
                station: Station::Cross,
                ready_at: t,
                loaded_at: t,
                attempts: 0,
                bits,
            });
            self.stats.cross_frames_offered += 1;
            let gap = exp_draw(&mut self.rng, self.cross_gap_ns);
            self.next_cross = Some(t.saturating_add(gap.max(1)));
        }
    }

    /// Frames that became ready less than one propagation time after the
    /// transmission on the medium started did not hear it: they transmit too,
    /// and collide.
    fn join_unheard(&mut self, now_ns: u64) {
        let Some(w) = self.wire.as_mut() else {
            return;
        };
        let window_end = w.start.saturating_add(ns(self.cfg.propagation));
        let mut i = 0;
        while i < self.waiting.len() {
            let f = self.waiting[i];
            if f.ready_at <= now_ns && f.ready_at >= w.start && f.ready_at < window_end {
                self.waiting.swap_remove(i);
                w.frames.push(f);
                w.last_start = w.last_start.max(f.ready_at);
            } else {
                i += 1;
            }
        }
        if w.collided() {
            // The last starter hears the others after one propagation time,
            // then jams; the medium is quiet once the jam has passed.
            let jam = ns(self.cfg.propagation)
                + u64::try_from(
                    (u128::from(self.cfg.jam_bits) * 1_000_000_000)
                        .div_ceil(u128::from(self.cfg.rate_bps.max(1))),
                )
                .unwrap_or(u64::MAX);
            w.end = w.last_start.saturating_add(jam).max(w.start);
        }
    }

    /// Starts a transmission if the medium is idle and someone is ready.
    fn start(&mut self, now_ns: u64) -> bool {
        let Some(first) = self.waiting.iter().map(|f| f.ready_at).min() else {
            return false;
        };
        let s = first.max(self.idle_from);
        if s > now_ns {
            return false;
        }
        // 1-persistent: every station ready by `s` goes at `s`.
        let mut frames = Vec::new();
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].ready_at <= s {
                frames.push(self.waiting.swap_remove(i));
            } else {
                i += 1;
            }
        }
        // Stable order, so equal runs give equal results whatever the
        // swap_remove shuffle did.
        frames.sort_by_key(|f| (f.loaded_at, f.station == Station::Cross));
        let end = s.saturating_add(self.duration_ns(frames[0].bits));
        let mut w = OnWire {
            start: s,
            last_start: s,
            end,
            frames,
        };
        if w.collided() {
            w.end = s; // recomputed by join_unheard
        }
        self.wire = Some(w);
        self.join_unheard(now_ns);
        true
    }

    fn finish(&mut self, w: OnWire, out: &mut Vec<Finished>) {
        self.stats.busy_ns = self
            .stats
            .busy_ns
            .saturating_add(w.end.saturating_sub(w.start));
        self.idle_from = w.end.saturating_add(ns(self.cfg.inter_frame_gap));
        if !w.collided() {
            let f = w.frames[0];
            match f.station {
                Station::Host(side) => {
                    self.stats.host_frames_sent += 1;
                    self.stats.host_access_wait_ns = self
                        .stats
                        .host_access_wait_ns
                        .saturating_add(w.start.saturating_sub(f.loaded_at));
                    out.push(Finished::Sent(side));
                }
                Station::Cross => self.stats.cross_frames_sent += 1,
            }
            return;
        }
        self.stats.collisions += 1;
        for mut f in w.frames {
            f.attempts += 1;
            if let Station::Host(_) = f.station {
                self.stats.host_collisions += 1;
            }
            if f.attempts >= self.cfg.attempt_limit {
                match f.station {
                    Station::Host(side) => {
                        self.stats.host_frames_aborted += 1;
                        out.push(Finished::Aborted(side));
                    }
                    Station::Cross => self.stats.cross_frames_aborted += 1,
                }
                continue;
            }
            // Truncated binary exponential backoff: k in 0 .. 2^min(n, 10).
            let range = 1u64 << f.attempts.min(self.cfg.backoff_limit);
            let k = self.rng.random_range(0..range);
            f.ready_at = w
                .end
                .saturating_add(k.saturating_mul(ns(self.cfg.slot_time)));
            self.waiting.push(f);
        }
    }

    /// Puts the next instant anything can happen in the event queue (unless
    /// an earlier wake-up is already there).
    ///
    /// While neither host has a frame loaded, nothing is scheduled: the other
    /// stations' frames are generated and played out later, in order, when
    /// a host next asks for the medium (their arrival times are drawn in
    /// advance, so catching up gives the same medium as following them one
    /// by one). An idle simulation therefore stays idle.
    fn schedule(&mut self, now_ns: u64, queue: &mut EventQueue) {
        let is_host = |f: &Frame| matches!(f.station, Station::Host(_));
        let host_active = self.waiting.iter().any(is_host)
            || self
                .wire
                .as_ref()
                .is_some_and(|w| w.frames.iter().any(is_host));
        if !host_active {
            return;
        }
        let mut next = self.next_cross;
        let mut consider = |t: u64| {
            if t > now_ns {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        match &self.wire {
            Some(w) => {
                consider(w.end);
                let window_end = w.start.saturating_add(ns(self.cfg.propagation));
                for f in &self.waiting {
                    if f.ready_at < window_end {
                        consider(f.ready_at);
                    }
                }
            }
            None => {
                if let Some(first) = self.waiting.iter().map(|f| f.ready_at).min() {
                    consider(first.max(self.idle_from));
                }
            }
        }
        if let Some(t) = next {
            if self.wake_at.is_none_or(|w| t < w) {
                self.wake_at = Some(t);
                queue.push(
                    Instant::ZERO + core::time::Duration::from_nanos(t),
                    Event::SegmentWake,
                );
            }
        }
    }
}

/// An exponentially distributed gap with the given mean, in whole
/// nanoseconds.
fn exp_draw(rng: &mut ChaCha8Rng, mean_ns: f64) -> u64 {
    // 1 - u is in (0, 1], so the logarithm is finite.
    let u: f64 = rng.random::<f64>();
    let gap = -(1.0 - u).ln() * mean_ns;
    if gap.is_finite() && gap < u64::MAX as f64 {
        gap as u64
    } else {
        u64::MAX
    }
}
