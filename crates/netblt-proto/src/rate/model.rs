//! The adaptive controller of the `fair` and `background` policies.
//!
//! It follows BBR's model (Cardwell et al., "BBR: Congestion-Based
//! Congestion Control", ACM Queue 2016): the path is a bottleneck rate and a
//! base round trip; pacing at the rate with about one rate x round trip in
//! flight fills the pipe without building a queue. The rate is the largest
//! delivery rate seen over the last ten rounds; the base round trip is the
//! smallest seen lately (re-measured by a PROBE-RTT at half rate for a round trip when five seconds (at least twenty round trips) pass without a round trip near it: R23). Phases: STARTUP doubles the rate each round
//! until the delivery rate stops growing, DRAIN empties the queue that built,
//! then CRUISE holds the rate and PROBE-UP / PROBE-DOWN test for more every
//! few rounds (BBR's gain cycle, with probes spaced by a per-connection
//! pseudo-random count so that flows do not probe in step).
//!
//! Where it departs from BBR (decision R1 in docs/decisions.md):
//!
//! * **Noise against congestion.** Every round it compares the loss rate with
//!   the queue: loss while the round's smallest round trip stays near the
//!   base is *noise* (a lossy link, nothing queued): it is learned as the
//!   noise floor and the pacing rate is raised by 1/(1 - noise) so that the
//!   packets that do arrive still fill the link. Loss above the noise floor
//!   while a queue stands is *congestion*: the rate estimate is cut to 90 %
//!   of what was delivered (BBRv2's reaction to loss, kept only for loss the
//!   queue explains).
//! * **Gentle probing.** PROBE-UP paces at 1.1x for one round, holds for
//!   one round while the answer comes back, and while the delivery rate
//!   keeps growing probes again with a larger gain (x1.25 each time, up to
//!   2x), so a freed path is found in a few rounds while a probe that finds
//!   nothing queues only a tenth of a round trip; CRUISE drains a standing queue it finds, unless draining
//!   did not shrink it (the queue is someone else's: a loss-based TCP fills
//!   any queue, and yielding to it would starve us).
//! * **A measuring train first** (R56): before anything is measured the
//!   first flight is 10 ms of STARTUP's pacing, held until reported; its
//!   spacing at the receiver is the first estimate, and a train that arrived
//!   slower than it was sent ends STARTUP at once, so a slow path is not
//!   paced at 28.85 Mb/s for a whole round trip.
//! * **Background** (LEDBAT, RFC 6817, in spirit): any standing queue above
//!   the target makes the flow back off by 30 % per round, down to the
//!   minimum rate.

use super::filter::{MaxFilter, MinFilter};
use super::{RateConfig, RateController, RateReason, RateSample, RateState};
use crate::time::{Duration, Instant};

mod compete;
mod fast;
mod train;

/// Rounds the bottleneck-rate filter remembers (BBR: 10).
const BW_WINDOW_ROUNDS: u64 = 10;
/// PROBE_RTT lasts this, and at least a base round trip and 20 ms (BBR:
/// 200 ms; long enough for every flow's queue to drain), and comes at most every
/// PROBE_RTT_INTERVAL and every twenty base round trips (BBRv2: 5 s; at
/// 1.8 s round trips a 5 s period would cost a third of the time).
/// at most (BBRv2: every 5 s).
const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// STARTUP's gain: 2/ln 2 doubles the delivery rate every round (BBR).
const STARTUP_GAIN: f64 = 2.885;
const DRAIN_GAIN: f64 = 1.0 / STARTUP_GAIN;
/// The first probe's gain: small, so that a probe finding nothing queues
/// only a tenth of a round trip.
const PROBE_UP_GAIN: f64 = 1.1;
/// Each probe that found more raises the next one's gain, up to this
/// (BBRv2's PROBE_UP also grows its step exponentially while it succeeds).
const PROBE_UP_MAX_GAIN: f64 = 2.0;
/// Bytes in flight allowed, in base round trips of the estimated rate.
const CWND_GAIN: f64 = 2.0;
/// Congestion cut: what is kept of the delivered rate.
const CONGESTION_BETA: f64 = 0.9;
/// ... and never less than this share of the estimate, per round.
const CONGESTION_FLOOR: f64 = 0.7;
/// Background policy: what is kept per round with a standing queue.
const YIELD_BETA: f64 = 0.7;
/// Rounds of BBR-style competition once a queue is found not to be ours.
const FOREIGN_ROUNDS: u32 = 64;
/// A competition's rate is resumed if FAST finds the competitor still there
/// within this many rounds of the competition's end (R19): FAST's test takes
/// six rounds, and it starts at the first CRUISE after the end (up to eight
/// rounds of probe cycle later). R63: 400 (was 32): after a competition
/// beside CUBIC, FAST took over while CUBIC's post-loss queue was small, and
/// its test came only when that queue stood again, seconds later.
const COMPETE_MEMORY_ROUNDS: u64 = 400;
/// R63: the rounds `calm` remembers the rate of a round with nobody
/// else's queue: a loss-based competitor's cycle (CUBIC's overflowed a 1 BDP
/// queue at 100 Mb/s and 50 ms every 16 s, 300 rounds), and FAST's
/// PROBE_RTT empties the queue within it at the squeezed rate.
const CALM_ROUNDS: u64 = 400;
/// R63: the rounds before an overflow whose queue must have been nearly as
/// long already: a loss-based TCP fills the queue over seconds, a FAST
/// flow's STARTUP within a round or two.
const OVERFLOW_RISE_ROUNDS: u64 = 4;
/// R63: ... and the rounds before it free of loss above the noise floor: a loss-based TCP
/// overflows the queue once a cycle of seconds, where flows that start
/// beside FAST ones (STARTUP, then congestion cuts floored at 0.7 a round)
/// keep it overflowing for a second or more.
const OVERFLOW_CALM_ROUNDS: u64 = 16;
/// R63: ... and our rate under this share of the calm rate. FAST's rate at
/// a competitor's overflow is alpha over the full queue's delay (2.2 of
/// 96 Mb/s in a 1 BDP queue at 50 ms); among N FAST flows it is 1/N of the
/// path, and four of them overflowing a 125 KB queue now and then at
/// 20 Mb/s went into competition with each other at 0.31 (Jain 0.45).
const CALM_SHARE: f64 = 0.25;
/// The first probe's gain in that competition (BBR v1's PROBE_BW gain).
const FOREIGN_PROBE_GAIN: f64 = 1.25;
/// The most of our packets a competitor's full queue may drop that we
/// send again on top of the rate (R21): 1 / (1 - 0.2) = 1.25x at most.
const FOREIGN_LOSS_MAX: f64 = 0.2;
/// FAST mode: bytes of its own a flow keeps queued, in packets.
const FAST_ALPHA: f64 = 10.0;
/// How far past the path's estimated rate FAST's fast growth goes in one
/// round: 5 % of the base round trip, but at most this much queue (R16,
/// R25). The delay answers a round late, so two rounds of it pile up:
/// 2 x 10 ms stays within the queueing allowance, max(5 ms, 0.1 x base),
/// from 200 ms up (below, 2 x 5 % is the allowance itself, and the
/// emulator's p95 there is 2-3 ms). 20 ms gave p95 23-31 ms at 300 ms.
const FAST_OVERSHOOT_MAX: Duration = Duration::from_millis(10);
/// Rounds FAST remembers the delay a round showed with (almost) nothing
/// queued (R45): a path's jitter floor.
const FAST_FLOOR_ROUNDS: u64 = 8;
/// R46: the share of the rate delivered at the top of a growth overshoot
/// that FAST keeps pacing while it drains it (BBRv3's PROBE_DOWN paces at
/// 0.9 too).
const OVERSHOOT_DRAIN: f64 = 0.9;
/// R46: ... for at most this many rounds from the first that drains it.
const OVERSHOOT_DRAIN_ROUNDS: u64 = 6;
/// Rounds with fewer packets than this say nothing about loss.
const MIN_ROUND_PACKETS: u64 = 8;
/// The FEEDBACK gap's running mean forgets this share per FEEDBACK (about
/// four rounds of eight FEEDBACKs).
const GAP_EWMA: f64 = 1.0 / 32.0;
/// R56: what the first flight holds before anything is measured, in time at
/// STARTUP's first pacing rate, rounded up to whole pacing groups (32
/// packets, 44.8 KB, at 28.85 Mb/s; TCP's initial window is 14.6 KB). The
/// estimate is the train's dispersion, from its first reported arrival to
/// its last, so a few FEEDBACKs suffice.
const TRAIN: Duration = Duration::from_millis(10);
/// R56: the train is whole groups of this many packets (see `train_bytes`).
const TRAIN_GROUP: f64 = 8.0;
/// R56: a first estimate under this share of the train's pacing means the
/// train arrived slower than it was sent: it found the bottleneck.
const TRAIN_FOUND: f64 = 0.8;
/// The longest FEEDBACK gap the in-flight allowance believes: twice the
/// receiver's longest interval (10 ms), so one lost FEEDBACK is covered, a
/// silent peer is not.
const MAX_GAP: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Startup,
    Drain,
    Cruise,
    ProbeUp,
    ProbeDown,
    /// BBR's PROBE_RTT: half rate until `probe_rtt_until`, to let queues
    /// drain and see the path's base round trip again.
    ProbeRtt,
}

/// The `fair` / `background` controller.
#[derive(Debug, Clone)]
pub struct Model {
    background: bool,
    max_bps: f64,
    min_bps: f64,
    /// The negotiated rate and `config.max_bps`: limits set during the
    /// transfer stay under it (R27).
    ceiling: f64,
    phase: Phase,
    reason: RateReason,
    bw: MaxFilter,
    /// Bottleneck estimate before any sample.
    initial_bps: f64,
    min_rtt: Option<Duration>,
    min_rtt_at: Instant,
    last_rtt: Option<Duration>,
    round: u64,
    /// Rounds as the bottleneck-rate filter counts them: not in PROBE_RTT
    /// (BBRv3 ages its bandwidth filter by probe cycles, not by time or
    /// rounds). At a 10 ms round trip a 200 ms PROBE_RTT is twenty rounds,
    /// and the ten-round filter forgot the path's rate half way through:
    /// the probe then paced at a quarter of it, and took a second to recover
    /// (simulator, 10 ms and 5 % loss).
    bw_round: u64,
    round_start: Instant,
    // This round's measurements.
    r_arrived: u64,
    r_lost: u64,
    r_min_rtt: Option<Duration>,
    /// This round's longest round trip: a queue that filled and overflowed
    /// within the round shows here, not in its minimum (R70).
    r_max_rtt: Option<Duration>,
    /// This round, and the one before, saw STARTUP (R70).
    r_startup: bool,
    prev_r_startup: bool,
    /// When a round trip last came back above the base by more than
    /// [`Model::peak_threshold`]: losses counted over a sample that spans
    /// it may be a queue's overflow, not noise (R70).
    high_rtt_at: Option<Instant>,
    /// Sum and count of this round's round-trip samples (seconds).
    r_rtt_sum: f64,
    r_rtt_n: u32,
    /// As `r_rtt_sum` and `r_rtt_n`, for packets sent since `fast_from`.
    r_fresh_sum: f64,
    r_fresh_n: u32,
    r_max_delivery: f64,
    // STARTUP's plateau detector.
    full_bw: f64,
    full_bw_rounds: u32,
    /// Loss rate learned as noise (0..0.5).
    noise: f64,
    /// While competing with a flow that keeps the queue full: the share of
    /// our packets that queue drops (an EWMA over rounds), sent again on
    /// top of the rate (R21).
    foreign_loss: f64,
    cruise_left: u32,
    /// CRUISE lasts at least until this instant as well.
    cruise_until: Instant,
    now: Instant,
    probe_rounds: u32,
    probe_base: f64,
    probe_gain: f64,
    /// Queue seen when PROBE-DOWN began.
    queue_before_drain: Option<Duration>,
    /// Rounds during which a standing queue is known not to be ours.
    foreign_rounds: u32,
    /// CRUISE among delay-respecting flows (FAST mode): the window in
    /// bytes, and the last round's mean round trip.
    fast_w: Option<f64>,
    fast_rtt: Option<Duration>,
    fast_grow: u32,
    /// Empty rounds in a row in which the path's estimated rate rose with
    /// the window (R40): capacity is being found, so the steps double.
    fast_found: u32,
    /// R43: the last round did not raise the estimate, but the one before
    /// did; `fast_found` is held over it (the delivery answers a round late).
    fast_found_held: bool,
    /// The last round FAST ended with growth finding capacity (R48).
    fast_found_at: Option<u64>,
    /// R45: the smallest mean queueing delay (seconds) of the recent rounds
    /// in which some packet found the queue (almost) empty: what the path's
    /// jitter adds to a round's mean with nothing of ours standing.
    fast_floor: MinFilter,
    /// R46: growth that was finding capacity overshot the path: the rate
    /// the path delivered at the top, and the round the drain ends by
    /// (FAST's rounds and the congestion rounds between them alike).
    fast_overshoot: Option<(f64, u64)>,
    /// FAST's last reading of its own queue and alpha, in bytes (for the
    /// debug line).
    fast_own: (f64, f64),
    /// The estimated rate at the previous FAST round.
    fast_prev_bw: f64,
    fast_cut: u32,
    fast_q_before: Option<Duration>,
    /// The largest mean queueing delay of the rounds of that test, and
    /// when the round that had it ended (R48).
    fast_q_peak: Duration,
    fast_q_peak_at: Instant,
    /// R42: the round a delivery probe was sent in, the estimate before it,
    /// and its share of the window.
    fast_probe: Option<(u64, f64, f64)>,
    /// R42: probes in a row that found more (each doubles the next).
    fast_probe_k: u32,
    /// R42: probes in a row that found nothing (each doubles the wait for
    /// the next, up to 8x).
    fast_probe_misses: u32,
    /// R42: the last round a queue stood through (so the link was busy the
    /// whole round) and the rate it delivered of ours then, noise included.
    busy: Option<(u64, f64)>,
    /// R42: the window was capped at `busy`'s pipe in the standing queue
    /// under way (once per queue: see `fast`).
    busy_capped: bool,
    /// The calm rate: the largest bottleneck estimate of the FAST rounds in
    /// the last `CALM_ROUNDS` that found only our own share queued and no
    /// standing queue (R7, R63).
    calm: MaxFilter,
    /// R63: the smallest round trip (seconds) of the last rounds.
    recent_min_rtt: MinFilter,
    /// R63: the smallest round trip ever seen (`min_rtt` may go up).
    floor_rtt: Option<Duration>,
    /// R63: the last round before this one that lost more than the noise
    /// floor explains.
    last_lossy: Option<u64>,
    /// The round the last competition ended in and the bottleneck estimate
    /// then (R19): FAST then tests whether the competitor is still there,
    /// and if it is, the competition resumes from here.
    compete_end: Option<(u64, f64)>,
    /// A standing queue (above `queue_threshold`) was found not to be ours
    /// at least once (R23).
    met_competitor: bool,
    /// FAST's first round after entering CRUISE is not judged: its round
    /// trips straddle the drain before it.
    fast_settle: bool,
    /// R64: when FAST's period began (CRUISE entered with a new window).
    /// The round means FAST reads count only packets sent from then on.
    fast_from: Option<Instant>,
    /// R50: STARTUP was entered again from FAST's growth.
    restarted: bool,
    /// R74: the highest estimate since STARTUP last ended: the rate the
    /// path carried before it slowed down (CUBIC's W_max, kept as a rate).
    prior_bw: f64,
    /// R74: the rate STARTUP entered again from FAST's growth paces at (the
    /// prior rate, at most two rounds of STARTUP past the estimate), until
    /// the estimate reaches 0.9 of it; zero otherwise.
    startup_floor: f64,
    /// R74: the longest queueing delay seen in a round that lost no more
    /// than noise explains, seconds.
    buffer_seen: f64,
    /// R56: the first flight is a measuring train, and nothing more is sent
    /// until it is reported (`fair` only).
    train: bool,
    /// R56: payload bytes of the train reported arrived or lost so far.
    train_reported: f64,
    /// R56: the arrival of the newest packet the first report echoed (on
    /// the sender's clock, one way late) and `train_reported` then.
    train_first: Option<(Instant, f64)>,
    /// R56: the train's rate from its first to its newest reported arrival.
    train_bps: Option<f64>,
    /// R59: when the packet the train's first report echoed was sent.
    train_first_sent: Option<Instant>,
    probe_rtt_until: Instant,
    probe_rtt_min: Option<Duration>,
    inflight: u64,
    /// When the previous sample (FEEDBACK) came.
    last_sample_at: Option<Instant>,
    /// Mean gap between FEEDBACKs (seconds), each gap at most `MAX_GAP`.
    feedback_gap: Option<f64>,
    packet_bytes: u32,
    /// Packets the pacer releases back to back (see `RateSample`).
    group_packets: u32,
    congestion_events: u64,
    rng: u32,
}

impl Model {
    /// A controller starting at `config.initial_bps`, never above the
    /// negotiated burst rate `fixed_bps` (RFC 998: the passive end may lower
    /// it at OPEN) nor `config.max_bps`.
    pub fn new(config: &RateConfig, fixed_bps: f64, background: bool, seed: u32) -> Self {
        let max_bps = config
            .max_bps
            .map_or(fixed_bps, |m| (m as f64).min(fixed_bps))
            .max(1.0);
        let min_bps = (config.min_bps as f64).min(max_bps);
        // min/max, not clamp, here and below: clamp panics when the bounds
        // cross, and a library caller may give any numbers.
        let initial = (config.initial_bps as f64)
            .min(max_bps)
            .max(min_bps)
            .max(1.0);
        Model {
            background,
            max_bps,
            min_bps,
            ceiling: max_bps,
            phase: Phase::Startup,
            reason: RateReason::Startup,
            bw: MaxFilter::new(BW_WINDOW_ROUNDS),
            initial_bps: initial,
            min_rtt: None,
            min_rtt_at: Instant::ZERO,
            last_rtt: None,
            round: 0,
            bw_round: 0,
            round_start: Instant::ZERO,
            r_arrived: 0,
            r_lost: 0,
            r_min_rtt: None,
            r_max_rtt: None,
            r_startup: false,
            prev_r_startup: false,
            high_rtt_at: None,
            r_rtt_sum: 0.0,
            r_rtt_n: 0,
            r_fresh_sum: 0.0,
            r_fresh_n: 0,
            r_max_delivery: 0.0,
            full_bw: 0.0,
            full_bw_rounds: 0,
            noise: 0.0,
            foreign_loss: 0.0,
            cruise_left: 4,
            cruise_until: Instant::ZERO,
            now: Instant::ZERO,
            probe_rounds: 0,
            probe_base: 0.0,
            probe_gain: PROBE_UP_GAIN,
            queue_before_drain: None,
            foreign_rounds: 0,
            fast_w: None,
            fast_rtt: None,
            fast_grow: 0,
            fast_found: 0,
            fast_found_held: false,
            fast_found_at: None,
            fast_floor: MinFilter::new(FAST_FLOOR_ROUNDS),
            fast_overshoot: None,
            fast_own: (0.0, 0.0),
            fast_prev_bw: 0.0,
            fast_cut: 0,
            fast_q_before: None,
            fast_q_peak: Duration::ZERO,
            fast_q_peak_at: Instant::ZERO,
            fast_probe: None,
            fast_probe_k: 0,
            fast_probe_misses: 0,
            busy: None,
            busy_capped: false,
            calm: MaxFilter::new(CALM_ROUNDS),
            recent_min_rtt: MinFilter::new(OVERFLOW_RISE_ROUNDS),
            last_lossy: None,
            floor_rtt: None,
            compete_end: None,
            met_competitor: false,
            fast_settle: false,
            fast_from: None,
            restarted: false,
            prior_bw: 0.0,
            startup_floor: 0.0,
            buffer_seen: 0.0,
            train: !background,
            train_reported: 0.0,
            train_first: None,
            train_bps: None,
            train_first_sent: None,
            probe_rtt_until: Instant::ZERO,
            probe_rtt_min: None,
            inflight: 0,
            last_sample_at: None,
            feedback_gap: None,
            packet_bytes: 1400,
            group_packets: 1,
            congestion_events: 0,
            rng: seed | 1,
        }
    }

    fn next_random(&mut self) -> u32 {
        // xorshift32: a deterministic spread of probe times per connection.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }

    fn bottleneck(&self) -> f64 {
        self.bw.get().unwrap_or(self.initial_bps)
    }

    /// Bytes of one bottleneck-rate x base-round-trip.
    fn bdp_bytes(&self) -> Option<f64> {
        let rtt = self.min_rtt?;
        Some(self.bottleneck() / 8.0 * rtt.as_secs_f64())
    }

    /// R71: what the application's minimum rate (`--min-rate`) keeps in
    /// flight at least: two base round trips of it, as the caps allow two
    /// of the estimate. The floor held the pacing rate but not the window:
    /// on a 10 Mb/s path `--min-rate 30M` reported "30 Mb/s (floor)" while
    /// the window held the sender at 9.1 (walkthrough finding 4). "Never
    /// slower than this, whatever the path says" is what the flag promises
    /// (Aspera's minimum rate too): what the path cannot carry is lost.
    fn floor_bytes(&self) -> u64 {
        let rtt = self.min_rtt.or(self.last_rtt).unwrap_or_default();
        (self.min_bps / 8.0 * CWND_GAIN * rtt.as_secs_f64()) as u64
    }

    /// The window of the phase: FAST's in CRUISE, else two BDPs.
    fn window_cap(&self) -> Option<u64> {
        if let (Phase::Cruise, Some(w), 0) = (self.phase, self.fast_w, self.foreign_rounds) {
            // FAST is a window: the pacing rate (window over the last
            // round's round trip) lags a growing queue by a round, the cap
            // does not.
            let cap = w * 1.05 / (1.0 - self.noise)
                + 2.0 * f64::from(self.packet_bytes)
                + self.feedback_allowance();
            return Some(cap as u64);
        }
        let mut bdp = self.bdp_bytes()?;
        if self.phase == Phase::Startup && self.startup_floor > 0.0 {
            // R74: the window of the prior rate STARTUP paces at.
            let base = self.min_rtt.unwrap_or_default().as_secs_f64();
            bdp = bdp.max(self.startup_floor / 8.0 * base);
        }
        // 2 BDP in STARTUP too, although it paces at 2.885x: BBR v1's
        // 2.885 cap there reached the path 0.4 s sooner at 100 Mb/s and
        // 300 ms but lost 681 packets to the 1-BDP queue instead of 121
        // (emulator, 80 MB), over the 1 % the issue allows.
        let gain = CWND_GAIN;
        // Lost packets stay "in flight" until a FEEDBACK reports them, so
        // leave room for them; and never fewer than four packets.
        let cap = gain * bdp / (1.0 - self.noise) / (1.0 - self.foreign_loss)
            + 4.0 * f64::from(self.packet_bytes)
            + self.feedback_allowance();
        Some(cap as u64)
    }

    /// Bytes delivered but not yet reported: the receiver reports arrivals
    /// only every FEEDBACK interval (an eighth of a round trip, 250 us to
    /// 10 ms), so up to one interval's worth of delivered data still
    /// counts as in flight when the next FEEDBACK leaves. BBR calls this
    /// ACK aggregation and adds its `extra_acked` to the window; without
    /// it a window of one rate x round trip stalls the sender for part of
    /// every interval (on loopback, whose 20-40 us round trip is far below
    /// the 250 us interval, 7 Gb/s where 19 Gb/s was possible; at 100 ms,
    /// where the interval is a tenth of the round trip, 0.92 of the path).
    fn feedback_allowance(&self) -> f64 {
        // The caps' own margins (1.05 w + 2 packets; 2 BDP) were sized for
        // FEEDBACK every eighth of a round trip: only a longer gap (the
        // 250 us floor on short paths) needs room. Giving the whole gap at
        // 100 ms let probes queue more and lose more (954 against 680
        // packets for 95 MB at 1 % loss, emulator). The mean gap, not the
        // longest (decision R18): a lost FEEDBACK is one gap in many, and
        // the cap grows while one is overdue (`overdue_growth`). The
        // longest gap of four rounds loosened the cap for four rounds after
        // every lost FEEDBACK, which at 5 % loss back is always: FAST's
        // window then no longer clocked the sender, its pacing (the window
        // over the last round's round trip) swung 80-108 Mb/s every five
        // rounds on a 96 Mb/s path, and the queue of alpha (a millisecond
        // at 100 Mb/s) emptied in every trough.
        self.bottleneck() / 8.0 * (self.mean_gap() - self.nominal_gap()).max(0.0)
    }

    /// The FEEDBACK interval the caps' margins are sized for (seconds): an
    /// eighth of the round trip as it is now, queue included, which is what
    /// the receiver aims at (its smoothed round trip over eight). Against
    /// the base round trip, the queue FAST keeps made a gap of its own: at
    /// 20 Mb/s and 10 ms a 6 ms queue stretched the receiver's interval
    /// from 1.3 to 2 ms, and the allowance for it loosened the cap enough
    /// for pacing groups to overflow a 17-packet queue (simulator, with an
    /// exact in-flight estimate: 210-225 queue drops for 15,500 packets,
    /// 41-60 without; decision R18).
    fn nominal_gap(&self) -> f64 {
        let rtt = self.last_rtt.max(self.min_rtt);
        rtt.map_or(0.0, |r| r.as_secs_f64() / 8.0)
    }

    /// The mean gap between FEEDBACKs lately (seconds).
    fn mean_gap(&self) -> f64 {
        self.feedback_gap.unwrap_or(0.0)
    }

    /// The queueing delay above which a queue is "standing": a twentieth of
    /// the base round trip, at least 2 ms (timer and scheduling noise of real
    /// hosts is of the order of a millisecond).
    fn queue_threshold(&self) -> Duration {
        let base = self.min_rtt.unwrap_or(Duration::ZERO);
        (base / 20).max(Duration::from_millis(2))
    }

    /// How close to the base a round trip must come to confirm it and put
    /// off PROBE_RTT (R23): a quarter of the standing-queue threshold, so
    /// half a millisecond up to 40 ms round trips, an eightieth of the base
    /// above (7.5 ms at 600 ms). Without it the base went
    /// "stale" every five seconds (twenty round trips) whenever no sample
    /// came back at or under it to the microsecond, and each PROBE_RTT
    /// halved the rate for 200 ms or a round trip: 2-2.5 % of a lone
    /// flow's throughput on a path it had to itself.
    fn base_confirm_tolerance(&self) -> Duration {
        self.queue_threshold() / 4
    }

    /// The standing queue of the round just measured, if any.
    fn round_queue(&self) -> Option<Duration> {
        let (r, base) = (self.r_min_rtt?, self.min_rtt?);
        Some(r.saturating_sub(base))
    }

    /// R70: a queue that rose this high within a round, even if it did not
    /// stand through it, keeps that round's excess loss (in or just after
    /// STARTUP) out of the noise estimate, and a sample spanning it from
    /// counting its losses as delivered: the standing-queue threshold (a
    /// twentieth of the base, 30 ms at 600 ms) let a 100 ms drop-tail queue
    /// overflow with the round's minimum under it, and STARTUP's overshoot
    /// was taken for noise. Capped at HyStart++'s largest RTT rise, 16 ms
    /// (RFC 9406 §4.2), so a shallow queue on a long path still counts.
    fn peak_threshold(&self) -> Duration {
        self.queue_threshold().min(Duration::from_millis(16))
    }

    /// The rest of the round in which STARTUP ended, and the round after
    /// (R73): STARTUP's queue still reaches the bottleneck then, which
    /// carries it at its rate, and the short-span sample shows that rate
    /// while the one-round sample averages the ramp.
    fn after_startup(&self) -> bool {
        self.phase != Phase::Startup && (self.r_startup || self.prev_r_startup)
    }

    /// The round's queue peaked past [`peak_threshold`](Self::peak_threshold).
    fn round_peaked(&self) -> bool {
        match (self.r_max_rtt, self.min_rtt) {
            (Some(r), Some(base)) => r > base + self.peak_threshold(),
            _ => false,
        }
    }

    /// R48: a round that a standing queue has stretched to twice the base
    /// round trip ends there. A round lasts until a packet
    /// sent in it is echoed, so it lasts the round trip of the moment: when
    /// a path's rate fell from 100 to 20 Mb/s at 300 ms, the one-BDP queue
    /// our window filled stretched the round trip to 1.3-1.6 s, and FAST,
    /// which acts once a round, took four of those rounds, 3.6-3.8 s, to
    /// drain it (simulator, `bench/sim_ratestep.sh`). FAST TCP updates its
    /// window on a fixed period, not per round trip (Jin, Wei and Low, "FAST
    /// TCP", 2004: "periodically"); two base round trips is that period
    /// here. Only with FAST's window in force and a queue standing now (the
    /// latest round trip): at FAST's equilibrium, or beside a competitor in
    /// a queue of a bandwidth-delay product, a round trip stays under twice
    /// the base and nothing changes.
    fn stretched_round(&self) -> bool {
        let Some(base) = self.min_rtt else {
            return false;
        };
        self.phase == Phase::Cruise
            && self.fast_w.is_some()
            && self.foreign_rounds == 0
            && self.r_arrived + self.r_lost >= MIN_ROUND_PACKETS
            && self.now.saturating_duration_since(self.round_start) >= 2 * base
            && self
                .last_rtt
                .is_some_and(|r| r > base + self.queue_threshold())
    }

    /// R74: STARTUP entered again because capacity was freed paces at the
    /// prior rate at once, if the prior rate is more than STARTUP's first
    /// round would reach; at most two rounds of STARTUP past the estimate,
    /// and no further past it than the queue the path was seen to hold
    /// without loss, so the round trip it takes to see an overshoot cannot
    /// overflow the path's buffer.
    fn start_up_at_prior(&mut self, bw: f64) {
        self.start_up_again(bw);
        // The buffer held `buffer_seen` seconds at a rate no lower than the
        // path's now, so at least that many seconds of `bw`: a round trip
        // at `held` adds no more than that.
        let base = self.min_rtt.unwrap_or_default().as_secs_f64();
        let held = if base > 0.0 {
            bw * (1.0 + self.buffer_seen / base)
        } else {
            bw
        };
        let floor = self
            .prior_bw
            .min(STARTUP_GAIN * STARTUP_GAIN * bw)
            .min(held);
        tracing::debug!(
            bw,
            prior = self.prior_bw,
            buffer_seen = self.buffer_seen,
            floor,
            "STARTUP again: the prior rate"
        );
        if floor > STARTUP_GAIN * bw {
            self.startup_floor = floor;
        }
    }

    /// Back to STARTUP from CRUISE (a cap lifted, R27; capacity found,
    /// R50), its plateau test counting from `full_bw`. FAST's window starts
    /// again from the new estimate when STARTUP ends (`enter_cruise`).
    fn start_up_again(&mut self, full_bw: f64) {
        self.phase = Phase::Startup;
        self.reason = RateReason::Startup;
        self.full_bw = full_bw;
        self.full_bw_rounds = 0;
        self.fast_w = None;
    }

    fn gain(&self) -> f64 {
        match self.phase {
            Phase::Startup => STARTUP_GAIN,
            Phase::Drain => DRAIN_GAIN,
            Phase::Cruise => 1.0,
            // One round up, one round at 1.0 while the answer comes back.
            Phase::ProbeUp if self.probe_rounds % 2 == 0 => self.probe_gain,
            Phase::ProbeUp => 1.0,
            // Drain what the last probe queued, and a little more.
            Phase::ProbeDown => (2.0 - self.probe_gain - 0.05).clamp(0.5, 0.9),
            Phase::ProbeRtt => 0.5,
        }
    }

    fn enter_cruise(&mut self) {
        self.phase = Phase::Cruise;
        self.probe_gain = PROBE_UP_GAIN;
        let restarted = std::mem::take(&mut self.restarted);
        // FAST is for `fair` only: `background` must yield even to other
        // delay-respecting flows (LEDBAT), so it keeps the BBR-style cruise
        // and its yield rule.
        if self.foreign_rounds == 0 && self.fast_w.is_none() && !self.background {
            self.fast_w = self.bdp_bytes();
            self.fast_rtt = self.min_rtt;
            self.fast_grow = 0;
            self.fast_found = 0;
            self.fast_found_held = false;
            // A new FAST period compares with its own rounds only (R40).
            self.fast_prev_bw = 0.0;
            self.fast_cut = 0;
            self.fast_probe = None;
            self.fast_probe_k = 0;
            self.fast_probe_misses = 0;
            self.fast_settle = true;
            self.fast_from = Some(self.now);
            // R50: after a STARTUP FAST began again, drain its queue as
            // R46 drains a growth overshoot.
            if restarted {
                self.fast_overshoot =
                    Some((self.bottleneck(), self.round + OVERSHOOT_DRAIN_ROUNDS));
            }
        }
        // Probe again after 4 to 8 rounds and 0.5 to 1 s, whichever is
        // later (BBR probes every 8 rounds, BBRv2 every 2 to 3 s: a probe
        // queues a quarter of a round trip for two rounds, so probing less
        // often keeps the queue short; a second is still quick enough to
        // find freed capacity). Random so flows do not probe in step.
        let r = self.next_random();
        if self.foreign_rounds > 0 {
            // Competing with a flow that keeps the queue full (CUBIC, BBR):
            // probe as BBR does, 1.25x about every eight rounds, whatever
            // the wall clock; probing gently and at most every half second
            // left us 0.39 of BBR's rate on the emulator.
            self.probe_gain = FOREIGN_PROBE_GAIN;
            self.cruise_left = 5 + r % 3;
            self.cruise_until = self.now;
        } else {
            self.schedule_probe(r);
        }
        if !matches!(self.reason, RateReason::Congestion | RateReason::Noise) {
            self.reason = RateReason::Steady;
        }
    }

    /// The next probe: after 4 to 8 rounds and 0.5 to 1 s, whichever is
    /// later (`r` a random draw).
    fn schedule_probe(&mut self, r: u32) {
        self.cruise_left = 4 + r % 5;
        self.cruise_until = self.now + Duration::from_millis(500 + u64::from(r >> 8) % 500);
    }

    fn end_round(&mut self, now: Instant) {
        self.round += 1;
        if self.phase != Phase::ProbeRtt {
            self.bw_round += 1;
        }
        self.round_start = now;
        self.bw.expire(self.bw_round);
        self.calm.expire(self.round);
        let total = self.r_arrived + self.r_lost;
        let loss = (total >= MIN_ROUND_PACKETS).then(|| self.r_lost as f64 / total as f64);
        let queue = self.round_queue();
        let standing = queue.is_some_and(|q| q > self.queue_threshold());
        if self.foreign_rounds == 1 {
            // The competition ends: FAST will test whether the competitor
            // is still there (R19).
            self.compete_end = Some((self.round, self.bottleneck()));
        }
        self.foreign_rounds = self.foreign_rounds.saturating_sub(1);
        // A window-limited competitor (BBR v1 at its 2 BDP window, CUBIC)
        // is clocked by its ACKs: each packet leaving the full queue lets
        // one of its own in, and what we pace in at other instants is
        // dropped. Beside BBR v1 on the emulator 10-24 % of ours were lost
        // per round against its 5 %, our delivered rate (and with it the
        // estimate) shrank round by round, and we ended near 0.35 of its
        // rate. So while competing, what the queue drops of ours is sent on
        // top of the rate, up to a quarter more (R21).
        self.foreign_loss = match (self.foreign_rounds, loss) {
            (0, _) => 0.0,
            (_, Some(l)) if self.phase != Phase::ProbeRtt => {
                0.875 * self.foreign_loss + 0.125 * l.min(FOREIGN_LOSS_MAX)
            }
            _ => self.foreign_loss,
        };

        if standing && self.r_max_delivery > 0.0 && self.phase != Phase::ProbeRtt {
            self.busy = Some((self.round, self.r_max_delivery / (1.0 - self.noise)));
        } else if !standing {
            self.busy_capped = false;
        }

        // Noise or congestion?
        let mut congested = false;
        let mut lossy_round = false;
        if let Some(loss) = loss {
            // More loss than noise explains: above the noise floor by a
            // margin and by three standard deviations of a binomial count,
            // since a round of 80 packets at 5 % noise loses 4 +- 2 (a
            // fixed margin alone called every other round congestion).
            let n = total as f64;
            let p = self.noise.max(0.002);
            let expected = n * p + 3.0 * (n * p * (1.0 - p)).sqrt() + 1.0;
            lossy_round = loss > (self.noise * 2.0).max(self.noise + 0.01);
            let excess = lossy_round && (self.r_lost as f64) > expected;
            // In a queue someone else keeps full (a loss-based TCP), its
            // losses are not a sign that we send too fast: BBR ignores them
            // there too, and cutting on them starved us against CUBIC.
            if excess && standing && self.foreign_rounds == 0 {
                congested = true;
            } else if excess && self.round_peaked() && (self.r_startup || self.prev_r_startup) {
                // R70: in or just after STARTUP, the queue rose within the
                // round without standing through it, and more was lost than
                // noise explains: maybe its overflow (STARTUP's overshoot at
                // 600 ms through a 100 ms queue lost 30 % in one round, which
                // the EWMA took for noise: "4.1 % loss treated as noise" on
                // a path with none, and the estimate divided by it). Maybe
                // noise that the estimate has not learnt yet (5 % at 600 ms,
                // where STARTUP's rounds peak too: calling those congestion
                // cut a lossy path's rate by a fifth). Neither is known: the
                // round teaches the noise estimate nothing and cuts nothing.
                // (In every round, not only near STARTUP, it left a flow
                // beside CUBIC at a tenth of CUBIC's rate in 12 of 30 seeds
                // of `netblt_first_keeps_a_share_when_cubic_arrives`,
                // against 2: CUBIC's overflows had fed the noise estimate.)
            } else if !standing {
                // No queue: whatever was lost was lost to noise. An EWMA over
                // rounds, capped at half (beyond, nothing here is reliable).
                self.noise = (0.875 * self.noise + 0.125 * loss).min(0.5);
                if loss > 0.0 && self.phase != Phase::Startup {
                    self.reason = RateReason::Noise;
                }
            }
        }

        let not_ours = congested && self.overflow_not_ours();
        if not_ours {
            // R63: the queue overflowed while FAST held only its own share
            // of it: someone else filled it. A loss-based TCP (CUBIC) fills
            // any queue until it drops, and FAST, keeping alpha of its own
            // in whatever queue stands, yields to it round by round (at
            // alpha over CUBIC's queueing delay: 16 Mb/s beside a 7 ms
            // queue, 4 by the time it overflowed, simulator) without ever
            // holding the 2 alpha that its six-round test asks for.
            self.congestion_events += 1;
            self.compete(true);
            self.reason = RateReason::Congestion;
        } else if congested {
            self.congestion_events += 1;
            let delivered = self.r_max_delivery / (1.0 - self.noise);
            // At most 30 % per round, as BBRv2 bounds its loss response
            // (inflight_lo never below beta = 0.7 of its last value): a
            // round in which a competitor's start-up burst filled the queue
            // delivers little of ours, and cutting to 0.9 of that took a
            // 79 Mb/s flow to 27 in one round when BBR started beside it.
            // (`background` keeps the deep cut: it is there to yield.)
            let floor = if self.background {
                0.0
            } else {
                self.bottleneck() * CONGESTION_FLOOR
            };
            let cut = (delivered * CONGESTION_BETA)
                .max(floor)
                .min(self.bottleneck() * CONGESTION_BETA);
            if cut > 0.0 {
                self.bw.reset(self.bw_round, cut);
            }
            self.reason = RateReason::Congestion;
            if self.phase == Phase::Startup {
                self.phase = Phase::Drain;
            } else {
                self.enter_cruise();
            }
        } else if self.background && standing && self.phase != Phase::Startup {
            // LEDBAT: a queue means other traffic; get out of its way.
            let cut = (self.bottleneck() * YIELD_BETA).max(self.min_bps.max(1.0));
            self.bw.reset(self.bw_round, cut);
            self.reason = RateReason::Yielding;
            self.enter_cruise();
        } else {
            self.advance_phase(standing, queue);
        }
        tracing::debug!(
            %now,
            round = self.round,
            phase = ?self.phase,
            ?queue,
            peak = ?self.r_max_rtt.zip(self.min_rtt).map(|(r, b)| r.saturating_sub(b)),
            ?loss,
            noise = self.noise,
            bottleneck_mbps = self.bottleneck() / 1e6,
            foreign = self.foreign_rounds,
            reason = %self.reason,
            pacing_mbps = self.pacing_bps() / 1e6,
            inflight = self.inflight,
            cap = self.inflight_cap(),
            fast_rtt_ms = self.fast_rtt.map(|r| r.as_secs_f64() * 1e3),
            found = self.fast_found,
            held = self.fast_found_held,
            own_alpha = ?self.fast_own,
            probe = ?self.fast_probe.map(|(r, _, share)| (r, share)),
            probe_misses = self.fast_probe_misses,
            cruise_left = self.cruise_left,
            "rate control round"
        );
        if let Some(r) = self.r_min_rtt {
            self.recent_min_rtt.update(self.round, r.as_secs_f64());
        }
        if lossy_round {
            self.last_lossy = Some(self.round);
        } else if let (Some(peak), Some(base)) = (self.r_max_rtt, self.min_rtt) {
            // R74: in time, not bytes: the rate the queue drained at is not
            // known around a change of the path's rate (the estimate and the
            // round's delivery still said 96 Mb/s when a queue of 400 KB
            // read 160 ms at 20, which made 1.7 MB of it).
            let queued = peak.saturating_sub(base).as_secs_f64();
            self.buffer_seen = self.buffer_seen.max(queued);
        }
        if self.phase != Phase::Startup {
            // R74: STARTUP's end measured the path afresh; after it, the
            // highest estimate is what the path carried.
            self.prior_bw = if self.r_startup {
                self.bottleneck()
            } else {
                self.prior_bw.max(self.bottleneck())
            };
            self.startup_floor = 0.0;
        }
        self.r_arrived = 0;
        self.r_lost = 0;
        self.r_min_rtt = None;
        self.r_max_rtt = None;
        self.prev_r_startup = self.r_startup;
        self.r_startup = self.phase == Phase::Startup;
        self.r_rtt_sum = 0.0;
        self.r_rtt_n = 0;
        self.r_fresh_sum = 0.0;
        self.r_fresh_n = 0;
        self.r_max_delivery = 0.0;
    }

    fn advance_phase(&mut self, standing: bool, queue: Option<Duration>) {
        match self.phase {
            Phase::Startup if standing => {
                // The queue grew for a whole round: the rate passed the
                // bottleneck's (BBRv3 also leaves STARTUP on queue or loss
                // signals, not only on a delivery-rate plateau).
                self.phase = Phase::Drain;
                self.reason = RateReason::Draining;
            }
            Phase::Startup => {
                let bw = self.bottleneck();
                if bw >= self.full_bw * 1.25 {
                    self.full_bw = bw;
                    self.full_bw_rounds = 0;
                } else {
                    self.full_bw_rounds += 1;
                }
                if self.full_bw_rounds >= 3 || self.bottleneck() >= self.max_bps {
                    self.phase = Phase::Drain;
                    self.reason = RateReason::Draining;
                }
            }
            Phase::Drain => {
                if !standing {
                    self.enter_cruise();
                }
            }
            Phase::Cruise if self.foreign_rounds == 0 && self.fast_w.is_some() => self.fast(),
            Phase::Cruise => {
                if standing && self.foreign_rounds == 0 {
                    self.phase = Phase::ProbeDown;
                    self.probe_rounds = 0;
                    self.queue_before_drain = queue;
                    self.reason = RateReason::Draining;
                } else if self.cruise_left <= 1 && self.now >= self.cruise_until {
                    self.phase = Phase::ProbeUp;
                    self.probe_rounds = 0;
                    self.probe_base = self.bottleneck();
                    self.reason = RateReason::Probing;
                } else {
                    self.cruise_left = self.cruise_left.saturating_sub(1);
                }
            }
            Phase::ProbeUp => {
                self.probe_rounds += 1;
                // The delivery rate answers a pacing change one round later.
                if self.probe_rounds % 2 == 0 {
                    let found = self.bottleneck()
                        >= self.probe_base * (1.0 + (self.probe_gain - 1.0) / 2.0);
                    if found && !standing {
                        // More was there: keep climbing, faster (a freed path).
                        self.probe_base = self.bottleneck();
                        self.probe_gain = (self.probe_gain * 1.25).min(PROBE_UP_MAX_GAIN);
                    } else {
                        self.phase = Phase::ProbeDown;
                        self.probe_rounds = 0;
                        self.queue_before_drain = queue;
                    }
                }
            }
            // Ends by time (see on_sample).
            Phase::ProbeRtt => {}
            Phase::ProbeDown => {
                self.probe_rounds += 1;
                // The queue answers a pacing change one round later: judge
                // after two rounds. Gone: cruise. Shrinking: drain on (up to
                // eight rounds). Not shrinking: it is not ours (a loss-based
                // TCP keeps any queue full); stop draining for a while.
                if !standing {
                    self.queue_before_drain = None;
                    self.enter_cruise();
                } else if self.probe_rounds >= 2 {
                    let shrank = match (self.queue_before_drain, queue) {
                        (Some(before), Some(after)) => after * 10 < before * 9,
                        _ => false,
                    };
                    if !shrank || self.probe_rounds >= 8 {
                        if !shrank {
                            // Never shortens a competition already under way (it
                            // cut a 64-round one to 16 beside BBR v1: R7).
                            self.foreign_rounds = self.foreign_rounds.max(16);
                            // A queue of a few hundred microseconds that a
                            // drain did not shrink is noise, not a competitor.
                            self.met_competitor |=
                                queue.is_some_and(|q| q > self.queue_threshold());
                        }
                        self.queue_before_drain = None;
                        self.enter_cruise();
                    } else {
                        self.queue_before_drain = queue;
                    }
                }
            }
        }
    }
}

impl RateController for Model {
    fn on_sample(&mut self, s: &RateSample) {
        self.r_startup |= self.phase == Phase::Startup;
        self.now = s.now;
        self.inflight = s.inflight_bytes;
        self.group_packets = s.group_packets.max(1);
        if let Some(prev) = self.last_sample_at {
            let gap = s.now.saturating_duration_since(prev).min(MAX_GAP);
            let gap = gap.as_secs_f64();
            self.feedback_gap = Some(self.feedback_gap.map_or(gap, |m| m + GAP_EWMA * (gap - m)));
        }
        self.last_sample_at = Some(s.now);
        self.packet_bytes = s.packet_bytes.max(1);
        if let Some(rtt) = s.rtt {
            self.last_rtt = Some(rtt);
            self.floor_rtt = Some(self.floor_rtt.map_or(rtt, |f| f.min(rtt)));
            if self.min_rtt.is_none_or(|m| rtt <= m) {
                self.min_rtt = Some(rtt);
                self.min_rtt_at = s.now;
            } else if !self.met_competitor
                && self
                    .min_rtt
                    .is_some_and(|m| rtt <= m + self.base_confirm_tolerance())
            {
                // A round trip this close to the base confirms it: nothing
                // stood in the queue, so a PROBE_RTT would drain nothing
                // (R23). Only a new minimum moves the base itself. Not
                // once a queue-filling competitor was met: there the base
                // is seen only when the competitor drains (BBR's
                // PROBE_RTT), and our own PROBE_RTT, which re-measures the
                // base inside its standing queue, is what keeps FAST from
                // yielding to that queue after a competition (beside BBR
                // v1, 5 runs of 12 under half its rate with the
                // confirmation, 1 of 12 without).
                self.min_rtt_at = s.now;
            }
            if self.phase == Phase::ProbeRtt {
                self.probe_rtt_min = Some(self.probe_rtt_min.map_or(rtt, |m| m.min(rtt)));
            }
            // A base round trip not seen again for a while may be stale (a
            // route change), or, for a flow that started into a standing
            // queue, never was the base: drain and look again. Flows that
            // do this at about the same time see the empty queue together.
            let base = self.min_rtt.unwrap_or_default();
            let stale = s.now.saturating_duration_since(self.min_rtt_at)
                > PROBE_RTT_INTERVAL.max(base * 20);
            if stale && !matches!(self.phase, Phase::Startup | Phase::ProbeRtt) {
                self.phase = Phase::ProbeRtt;
                self.probe_rtt_until = s.now + PROBE_RTT_TIME.max(base + Duration::from_millis(20));
                self.probe_rtt_min = None;
            }
            self.r_min_rtt = Some(self.r_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.r_max_rtt = Some(self.r_max_rtt.map_or(rtt, |m| m.max(rtt)));
            if self
                .min_rtt
                .is_some_and(|m| rtt > m + self.peak_threshold())
            {
                self.high_rtt_at = Some(s.now);
            }
            // R64: FAST's round mean leaves out packets sent before its
            // period began. A round ends a round trip after it starts, so
            // the round after the settling one (R55) still echoed packets
            // that STARTUP's overshoot had queued: at 300 ms it read a mean
            // of 382 ms with the queue long gone and paced 68 of 96 Mb/s
            // for a round (simulator, 100 Mb/s alone; 0.59-0.71 of the link
            // for 0.4 s after every start-up).
            let fresh = match (self.fast_from, s.echoed_sent_at) {
                (Some(from), Some(sent)) => sent >= from,
                _ => true,
            };
            if fresh {
                self.r_fresh_sum += rtt.as_secs_f64();
                self.r_fresh_n += 1;
            }
            self.r_rtt_sum += rtt.as_secs_f64();
            self.r_rtt_n += 1;
        }
        self.r_arrived += s.arrived;
        // Packets found (R53) were counted lost in this round or the one
        // before; take them out of this round's count.
        self.r_lost = self.r_lost.saturating_sub(s.found) + s.lost;
        // DRAIN follows a STARTUP round whose rate grew within the round:
        // the short-span sample sees the bottleneck's rate while the queue
        // STARTUP built empties, where the one-round sample still averages
        // the ramp (decision R6). Not in STARTUP itself: pacing at 2.885x a
        // sample that follows the rate within the round compounds (243 Mb/s
        // into a 100 Mb/s path, 3,500 packets lost at 300 ms). Nor later:
        // the steadier one-round sample rules there. The first round is the
        // other exception: its packets were all sent before any FEEDBACK,
        // so no one-round sample exists until a round later (0.8 s of 28
        // Mb/s pacing at 600 ms); the short span gives the first estimate.
        // Not in `background`, which needs no quick start and, starting
        // into CUBIC's queue with it, then held 12 Mb/s beside it (CUBIC
        // kept 86-88 % of its solo rate instead of 98 %; emulator).
        if self.train && self.after_the_train(s) {
            self.end_train();
        }
        let usable = |d: &f64| d.is_finite() && *d > 0.0;
        // The train's own estimate rules until it is all reported (R56).
        let one = s.delivery_bps.filter(usable).filter(|_| !self.train);
        let recent = s
            .recent
            .filter(|r| usable(&r.delivery_bps))
            .filter(|_| !self.background && !self.train)
            .filter(|_| {
                self.phase == Phase::Drain || self.bw.get().is_none() || self.after_startup()
            });
        if one.is_some() || recent.is_some() {
            let d = one.or(recent.map(|r| r.delivery_bps)).unwrap_or(0.0);
            self.r_max_delivery = self.r_max_delivery.max(d);
            // Packets lost to noise used the bottleneck too: count them, so
            // that the rate fills the link rather than the link less its
            // loss. Only while no queue stands: then loss is noise, not
            // drops at a full queue. (Counting the losses measured over the
            // sample, not dividing by the noise estimate, keeps the max
            // filter from amplifying the estimate's own error.)
            // R70: and, around STARTUP, when one came back high over the
            // sample's span (about a round trip), its losses must look like
            // noise: after STARTUP overflowed a queue, the next round's low
            // round trips carried the overflow's losses in their samples,
            // counted as if delivered, and the estimate read 137 Mb/s on a
            // 100 Mb/s path (600 ms, a 100 ms queue, simulator), which kept
            // it overflowing. (Any high round trip alone was too much: a
            // lossy path's recovery peaks, and at 600 ms and 5 % loss the
            // transfer took 2 % longer; and in CRUISE it cost a flow
            // beside CUBIC some of its share.)
            let near_startup = self.r_startup || self.prev_r_startup;
            let span = self.min_rtt.unwrap_or_default() + self.queue_threshold();
            let calm_span = self
                .high_rtt_at
                .is_none_or(|t| s.now.saturating_duration_since(t) > span);
            let noise_band = (self.noise * 2.0).max(self.noise + 0.01);
            let like_noise = |d: f64, t: f64| t > 0.0 && (t - d) / t <= noise_band;
            let queue_low = match (s.rtt, self.min_rtt) {
                (Some(r), Some(m)) => r <= m + self.queue_threshold(),
                _ => false,
            };
            let pick = |d: f64, t: Option<f64>| match t {
                Some(t)
                    if queue_low
                        && t.is_finite()
                        && (calm_span || like_noise(d, t) || !near_startup) =>
                {
                    t
                }
                _ => d,
            };
            let mut adj = one.map_or(0.0, |d| pick(d, s.transmit_bps));
            if let Some(r) = recent {
                adj = adj.max(pick(r.delivery_bps, Some(r.transmit_bps)));
            }
            // An application-limited sample raises the estimate, never
            // lowers it; nor does it set a first one below the initial rate
            // (R60: the packets sent once the train's hold ended measured
            // the hold, 0.54 Mb/s for a 100 Mb/s path).
            let first_ok = |a: f64| a >= self.initial_bps;
            if !s.app_limited || self.bw.get().map_or(first_ok(adj), |b| adj > b) {
                self.bw.update(self.bw_round, adj);
            }
        }
        if self.train {
            self.on_train_sample(s);
        }
        if self.phase == Phase::Startup && self.round >= 2 {
            // HyStart++ (RFC 9406 §4.2): leave slow start as soon as a round
            // trip grows by clamp(base/8, 4 ms, 16 ms), not a round later:
            // a doubling rate fills a queue within one round.
            if let (Some(rtt), Some(base)) = (s.rtt, self.min_rtt) {
                let eta = (base / 8).clamp(Duration::from_millis(4), Duration::from_millis(16));
                if rtt > base + eta {
                    tracing::debug!(?rtt, ?base, "STARTUP ends: the round trip rose (HyStart++)");
                    self.phase = Phase::Drain;
                    self.reason = RateReason::Draining;
                }
            }
        }
        if self.phase == Phase::Startup
            && self.startup_floor > 0.0
            && self.bottleneck() >= 0.9 * self.startup_floor
        {
            // R74: the path carries its prior rate again. STARTUP's 2.885x of
            // it would go on for the round HyStart needs to see the queue
            // (297 ms of it at 300 ms; 84 ms when STARTUP climbed from the
            // estimate): end here, and leave any capacity beyond it to FAST's
            // growth.
            tracing::debug!("STARTUP ends: the prior rate is back");
            self.phase = Phase::Drain;
            self.reason = RateReason::Draining;
        }
        if self.phase == Phase::ProbeRtt && s.now >= self.probe_rtt_until {
            if let Some(m) = self.probe_rtt_min {
                self.min_rtt = Some(m);
            }
            self.min_rtt_at = s.now;
            self.enter_cruise();
        }
        if self.phase == Phase::Drain {
            if let Some(bdp) = self.bdp_bytes() {
                if (self.inflight as f64) <= bdp {
                    self.enter_cruise();
                }
            }
        }
        if s.echoed_sent_at.is_some_and(|t| t >= self.round_start) || self.stretched_round() {
            self.end_round(s.now);
        }
    }

    fn pacing_bps(&self) -> f64 {
        // The estimate already counts packets lost to noise (see on_sample).
        let r = match (self.phase, self.fast_w, self.fast_rtt) {
            (Phase::Cruise, Some(w), Some(rtt)) if self.foreign_rounds == 0 => {
                let r = (w * 8.0 / rtt.as_secs_f64().max(1e-6))
                    .min(self.bottleneck() * self.fast_pacing_gain());
                // R46: draining a growth overshoot keeps the link busy.
                match self.fast_overshoot {
                    Some((top, end)) if self.round < end => r.max(OVERSHOOT_DRAIN * top),
                    _ => r,
                }
            }
            (Phase::ProbeRtt, ..) => self.gain() * self.bottleneck(),
            // R74: at the prior rate, not past it: 2.885x an estimate that
            // climbs to it within a round reached 250 Mb/s on a 100 Mb/s
            // path before STARTUP ended (181 ms of queue at 300 ms).
            (Phase::Startup, ..) if self.startup_floor > 0.0 => {
                self.startup_floor / (1.0 - self.foreign_loss)
            }
            _ => self.gain() * self.bottleneck() / (1.0 - self.foreign_loss),
        };
        r.min(self.max_bps).max(self.min_bps).max(1.0)
    }

    /// R59: the report of the train's last packets was lost (FEEDBACKs
    /// carry counts since the previous one, and none follows while the
    /// train holds the sender), and the sender's guard let it go on. The
    /// train ends with what its reports measured; before, it went on
    /// waiting, and the first report of the packets sent after the guard
    /// (a round trip or two later) stretched its dispersion over that wait:
    /// 0.39 Mb/s on a 100 Mb/s path, 5 s to recover (simulator, 300 ms, 5 %
    /// loss, 5 starts of 120).
    fn cap_gave_way(&mut self) {
        if self.train {
            self.end_train();
        }
    }

    fn first_flight(&self) -> bool {
        self.train
    }

    fn inflight_cap(&self) -> Option<u64> {
        if self.train {
            // R56: before anything is measured, a measuring train, not a
            // round trip of blind pacing (28.85 Mb/s for a whole round trip:
            // 390 KB into a 2 Mb/s, 100 ms path that holds 75 KB). What is
            // reported frees no room: the train is sent once, and the
            // sender waits for its reports. TCP's initial window (RFC 6928)
            // is the same idea counted in packets and clocked by ACKs, which
            // make the first sample ten packets per round trip.
            return Some((self.train_bytes() - self.train_reported).max(0.0) as u64);
        }
        self.window_cap().map(|cap| cap.max(self.floor_bytes()))
    }

    fn overdue_growth(&self) -> Option<(Duration, f64)> {
        if self.train {
            // Reports of the train free no room (R56).
            return None;
        }
        // A FEEDBACK later than the caps and their allowance cover (lost,
        // or late): what it would have reported delivered is taken to have
        // drained at the bottleneck's rate, so a lost FEEDBACK does not
        // stall the sender until the next one, and nothing is added while
        // FEEDBACKs come on time (decision R18).
        let after = self.mean_gap().max(self.nominal_gap());
        let after = Duration::try_from_secs_f64(after).unwrap_or(MAX_GAP);
        Some((after.min(MAX_GAP), self.bottleneck()))
    }

    fn set_limits(&mut self, min_bps: f64, max_bps: f64) {
        let old = self.max_bps;
        self.max_bps = max_bps.min(self.ceiling).max(1.0);
        self.min_bps = min_bps.min(self.max_bps).max(0.0);
        // A cap that held the rate was raised well above it: find the
        // path's rate again as at the start (STARTUP doubles it each round
        // trip), not with 1.25x probes a few rounds apart, which took
        // seconds to climb from 10 to 100 Mb/s at 100 ms. A cap that did
        // not hold the rate (the path was slower) changes nothing else.
        let held = self.bw.get().is_some_and(|bw| bw >= old * 0.9);
        let idle_phase = matches!(self.phase, Phase::Startup | Phase::ProbeRtt);
        if self.max_bps > old * 1.25 && held && !idle_phase {
            self.start_up_again(0.0);
        }
    }

    fn state(&self) -> RateState {
        let rate = self.pacing_bps();
        let reason = if rate >= self.max_bps {
            RateReason::Cap
        } else if rate <= self.min_bps && self.min_bps > 0.0 {
            RateReason::Floor
        } else {
            self.reason
        };
        RateState {
            rate_bps: rate,
            bottleneck_bps: self.bw.get(),
            min_rtt: self.min_rtt,
            last_rtt: self.last_rtt,
            noise_loss: self.noise,
            reason,
            congestion_events: self.congestion_events,
            inflight_bytes: self.inflight,
        }
    }
}

#[cfg(test)]
mod tests;
