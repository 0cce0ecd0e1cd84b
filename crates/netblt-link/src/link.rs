//! [`Link`]: decides, packet by packet, what the path does to a datagram.

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::codel::Codel;
use crate::config::{Aqm, ConfigError, LinkConfig, LossModel};
use crate::stats::LinkStats;
use crate::transmitter::Transmitter;

/// Why a packet was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DropReason {
    /// Larger than [`LinkConfig::mtu`]. Not transmitted.
    Mtu,
    /// The drop-tail queue was full. Not transmitted.
    Queue,
    /// Dropped by the queue's AQM (CoDel) when it reached the head. Not
    /// transmitted.
    Aqm,
    /// Lost by [`LinkConfig::loss`] (after using the transmitter).
    Loss,
    /// Hit by a bit error, [`LinkConfig::ber`] (after using the transmitter).
    BitError,
}

/// One arrival of a packet at the far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Arrival time (last bit received), on the caller's clock.
    pub at: Duration,
    /// If set, the receiver must flip this bit (index `8 * byte + bit`, bit 0 =
    /// least significant) in its copy of the packet.
    pub flip_bit: Option<usize>,
}

/// What happens to one offered packet.
///
/// No heap allocation: at most two deliveries (original and duplicate), in
/// the order the far end sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    /// `Some` if the packet never arrives.
    pub drop: Option<DropReason>,
    /// When the first bit went onto the medium (`now` if not transmitted).
    pub tx_start: Duration,
    /// When the last bit went onto the medium: the transmitter is busy until
    /// then (`now` if not transmitted).
    pub tx_end: Duration,
    /// Arrivals, earliest first; both `None` when dropped.
    pub deliveries: [Option<Delivery>; 2],
}

impl Fate {
    /// Iterates over the arrivals.
    pub fn iter(&self) -> impl Iterator<Item = &Delivery> {
        self.deliveries.iter().flatten()
    }

    /// Whether the packet arrives at least once.
    pub fn is_delivered(&self) -> bool {
        self.deliveries[0].is_some()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One direction of a path: a seeded, clock-free model of rate, queueing,
/// delay and impairments.
///
/// The caller owns time. Each [`offer`](Self::offer) says "this many bytes
/// reached the transmitter at `now`" and gets back the packet's whole
/// [`Fate`]; the caller schedules the deliveries (a simulator pushes events, an
/// emulator sleeps). `now` must not decrease from call to call; if it does, it
/// is treated as equal to the latest `now` seen.
#[derive(Debug, Clone)]
pub struct Link {
    cfg: LinkConfig,
    rng: ChaCha8Rng,
    tx: Transmitter,
    /// (tx_end, len) of accepted packets still being transmitted or waiting.
    queue: VecDeque<(u64, usize)>,
    queued: usize,
    /// Latest `now` seen, so a caller going backwards cannot break FIFO.
    last_now: u64,
    /// Arrival time of the last in-order packet: jittered packets are never
    /// delivered before it.
    fifo_floor: u64,
    ge_bad: bool,
    codel: Option<Codel>,
    stats: LinkStats,
}

impl Link {
    /// Creates a link; `seed` fixes every random choice it will make.
    pub fn new(cfg: LinkConfig, seed: u64) -> Result<Link, ConfigError> {
        cfg.validate()?;
        Ok(Link {
            tx: Transmitter::new(&cfg),
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: VecDeque::new(),
            queued: 0,
            last_now: 0,
            fifo_floor: 0,
            ge_bad: false,
            codel: match cfg.aqm {
                Aqm::DropTail => None,
                Aqm::Codel { target, interval } => Some(Codel::new(target, interval)),
            },
            stats: LinkStats::default(),
            cfg,
        })
    }

    /// The configuration this link runs.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Counters since creation.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Bytes accepted whose transmission has not ended by `now`.
    pub fn queued_bytes(&self, now: Duration) -> usize {
        let now = nanos(now);
        // Entries are in tx_end order, so the still-busy ones are a suffix.
        self.queue
            .iter()
            .rev()
            .take_while(|&&(end, _)| end > now)
            .fold(0usize, |acc, &(_, len)| acc.saturating_add(len))
    }

    /// Bytes accepted whose transmission has not ended by `now`, like
    /// [`queued_bytes`](Self::queued_bytes) but in amortized constant time
    /// (it forgets what has left, as [`offer`](Self::offer) does). `now`
    /// follows the same rule as in `offer`.
    pub fn backlog_bytes(&mut self, now: Duration) -> usize {
        let now_ns = nanos(now).max(self.last_now);
        self.last_now = now_ns;
        self.purge(now_ns);
        self.queued
    }

    fn purge(&mut self, now_ns: u64) {
        while let Some(&(end, old)) = self.queue.front() {
            if end > now_ns {
                break;
            }
            self.queue.pop_front();
            self.queued = self.queued.saturating_sub(old);
        }
    }

    /// Offers a packet of `len` bytes (as on the wire) to the transmitter at
    /// `now` and decides its fate.
    ///
    /// Steps, in order: MTU check, drop-tail queue check, AQM, transmission (uses
    /// capacity even if the packet is later lost), then loss, bit errors,
    /// corruption, duplication, reordering, delay spikes, delay and jitter.
    pub fn offer(&mut self, now: Duration, len: usize) -> Fate {
        let now_ns = nanos(now).max(self.last_now);
        self.last_now = now_ns;
        self.stats.offered += 1;
        self.stats.offered_bytes = self.stats.offered_bytes.saturating_add(len as u64);
        let now_d = Duration::from_nanos(now_ns);

        if self.cfg.mtu.is_some_and(|mtu| len > mtu) {
            return self.dropped(DropReason::Mtu, now_d, now_d);
        }
        if self.cfg.fragmentation.is_some_and(|f| f.too_long(len)) {
            return self.dropped(DropReason::Mtu, now_d, now_d);
        }
        self.purge(now_ns);
        if let Some(limit) = self.cfg.queue_limit_bytes {
            if self.queued.saturating_add(len) > limit {
                return self.dropped(DropReason::Queue, now_d, now_d);
            }
        }
        if let Some(codel) = self.codel.as_mut() {
            // The packet reaches the head when the transmitter is free for
            // it; CoDel judges it then (see the `codel` module).
            let head = self.tx.peek_start(now_ns);
            if codel.drop_at_head(head, head - now_ns.min(head), self.queued, len) {
                let at = Duration::from_nanos(head);
                return self.dropped(DropReason::Aqm, at, at);
            }
        }

        // RFC 791 fragmentation at the link's entrance: each piece uses the
        // transmitter and meets loss, bit errors and delay spikes on its own.
        // A whole datagram keeps its own branch so that its random draws
        // stay in the order they always had: every seeded run without
        // fragmentation (the simulator's reproductions, the emulator's
        // profiles) is unchanged bit for bit.
        let fragments = self
            .cfg
            .fragmentation
            .filter(|f| f.pieces(len).nth(1).is_some());
        let (tx_start, tx_end, spiked_arrival) = match fragments {
            None => {
                let slot = self.tx.transmit(now_ns, len);
                self.note_queued(now_ns, slot.end, len);
                let (start, end) = (
                    Duration::from_nanos(slot.start),
                    Duration::from_nanos(slot.end),
                );
                if self.lose() {
                    return self.dropped(DropReason::Loss, start, end);
                }
                if self.cfg.ber > 0.0
                    && self.rng.random::<f64>() < packet_error_rate(self.cfg.ber, len)
                {
                    return self.dropped(DropReason::BitError, start, end);
                }
                (slot.start, slot.end, None)
            }
            Some(frag) => {
                self.stats.fragmented += 1;
                let (mut start, mut end, mut latest) = (None, now_ns, 0u64);
                let mut drop = None;
                for piece in frag.pieces(len) {
                    let slot = self.tx.transmit(now_ns, piece);
                    self.note_queued(now_ns, slot.end, piece);
                    start.get_or_insert(slot.start);
                    end = slot.end;
                    // Every piece steps the loss process, lost datagram or not.
                    let lost = self.lose();
                    let hit = self.cfg.ber > 0.0
                        && self.rng.random::<f64>() < packet_error_rate(self.cfg.ber, piece);
                    if drop.is_none() {
                        drop = if lost {
                            Some(DropReason::Loss)
                        } else if hit {
                            Some(DropReason::BitError)
                        } else {
                            None
                        };
                    }
                    latest = latest.max(slot.end.saturating_add(self.spike()));
                }
                let start = start.unwrap_or(now_ns);
                if let Some(reason) = drop {
                    let (s, e) = (Duration::from_nanos(start), Duration::from_nanos(end));
                    return self.dropped(reason, s, e);
                }
                // Reassembly: the datagram is whole when its last piece is in.
                (start, end, Some(latest))
            }
        };
        let tx_start = Duration::from_nanos(tx_start);
        let slot_end = tx_end;
        let tx_end = Duration::from_nanos(tx_end);

        let flip_bit = if len > 0 && self.chance(self.cfg.corrupt) {
            self.stats.corrupted += 1;
            Some(self.rng.random_range(0..len.saturating_mul(8)))
        } else {
            None
        };
        let duplicate = self.chance(self.cfg.duplicate);
        let reordered = self.chance(self.cfg.reorder);

        let mut at = slot_end.saturating_add(nanos(self.cfg.delay));
        let mut out_of_order = false;
        if reordered {
            self.stats.reordered += 1;
            at = at.saturating_add(nanos(self.cfg.reorder_delay));
            out_of_order = true;
        }
        match spiked_arrival {
            // Fragments drew their spikes one by one.
            Some(latest) => {
                let extra = latest.saturating_sub(slot_end);
                if extra > 0 {
                    at = at.saturating_add(extra);
                    out_of_order = true;
                }
            }
            None => {
                let extra = self.spike();
                if extra > 0 {
                    at = at.saturating_add(extra);
                    out_of_order = true;
                }
            }
        }
        let jitter = nanos(self.cfg.jitter);
        if jitter > 0 {
            at = at.saturating_add(self.rng.random_range(0..=jitter));
        }
        if !out_of_order {
            // netem-with-rate behaviour: jitter stretches gaps but never
            // reorders, so an in-order packet waits for the one before it.
            at = at.max(self.fifo_floor);
            self.fifo_floor = at;
        }

        self.stats.delivered += 1;
        self.stats.delivered_bytes = self.stats.delivered_bytes.saturating_add(len as u64);
        let first = Delivery {
            at: Duration::from_nanos(at),
            flip_bit,
        };
        // The copy is made before the corrupting bit flip, so it is clean, and
        // it arrives right behind the original.
        let second = duplicate.then(|| {
            self.stats.duplicates += 1;
            Delivery {
                at: Duration::from_nanos(at),
                flip_bit: None,
            }
        });
        Fate {
            drop: None,
            tx_start,
            tx_end,
            deliveries: [Some(first), second],
        }
    }

    /// Records an accepted piece in the queue until its transmission ends.
    fn note_queued(&mut self, now_ns: u64, end: u64, len: usize) {
        if end > now_ns {
            self.queue.push_back((end, len));
            self.queued = self.queued.saturating_add(len);
        }
    }

    /// Draws a delay spike (0 if none): whole multiples of the quantum.
    fn spike(&mut self) -> u64 {
        let Some((prob, quantum, max_multiple)) = self
            .cfg
            .delay_spike
            .as_ref()
            .map(|s| (s.prob, s.quantum, s.max_multiple))
        else {
            return 0;
        };
        if prob > 0.0 && self.rng.random::<f64>() < prob {
            let k = self.rng.random_range(1..=max_multiple.max(1));
            self.stats.spiked += 1;
            nanos(quantum).saturating_mul(u64::from(k))
        } else {
            0
        }
    }

    fn dropped(&mut self, reason: DropReason, tx_start: Duration, tx_end: Duration) -> Fate {
        self.stats.drops.count(reason);
        Fate {
            drop: Some(reason),
            tx_start,
            tx_end,
            deliveries: [None, None],
        }
    }

    /// Draws only for a non-zero probability, so turning a knob off does not
    /// consume randomness (and `0.0` never fires, `1.0` always does).
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random::<f64>() < p
    }

    /// Steps the loss process once for this packet.
    fn lose(&mut self) -> bool {
        match self.cfg.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.chance(p),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                // Move first, then lose according to the new state.
                let flip = if self.ge_bad {
                    p_bad_to_good
                } else {
                    p_good_to_bad
                };
                if self.chance(flip) {
                    self.ge_bad = !self.ge_bad;
                }
                let p = if self.ge_bad { loss_bad } else { loss_good };
                self.chance(p)
            }
        }
    }
}

/// Probability that at least one of a packet's `8 * len` bits is in error:
/// `1 - (1 - ber)^(8 len)`, computed as `-expm1(8 len * ln_1p(-ber))` so that
/// tiny rates do not vanish in rounding.
pub fn packet_error_rate(ber: f64, len: usize) -> f64 {
    if ber <= 0.0 {
        return 0.0;
    }
    if ber >= 1.0 {
        return if len > 0 { 1.0 } else { 0.0 };
    }
    let bits = (len as f64) * 8.0;
    -(bits * (-ber).ln_1p()).exp_m1()
}
