//! CRUISE among delay-respecting flows: FAST TCP's window (decision R1),
//! its growth when the queue stays empty (R15, R40-R51) and its delivery
//! probes (R42).

use super::*;

impl Model {
    /// FAST's alpha in bytes: what each flow keeps of its own in the
    /// queue. A pacing group reaches the bottleneck back to back and queues
    /// there whatever the rate: its packets wait (g - 1) / 2 packet times
    /// on average, a queue FAST counts as its own. With groups larger than
    /// alpha (a millisecond of data at high rates: 32 packets of 16 KB on
    /// loopback) FAST backed off from its own bursts and held 12 Gb/s where
    /// the path carried 20; alpha is therefore at least a group. Flows at
    /// one rate have one group size, so FAST's fairness stands; at up to
    /// ~100 Mb/s with 1400-byte packets a group is 8 packets and alpha is
    /// unchanged.
    pub(super) fn fast_alpha(&self) -> f64 {
        FAST_ALPHA.max(f64::from(self.group_packets)) * f64::from(self.packet_bytes)
    }

    /// CRUISE among delay-respecting flows: FAST TCP's window update (Wei,
    /// Jin, Low and Hegde, "FAST TCP: motivation, architecture, algorithms,
    /// performance", IEEE/ACM ToN 2006), once per round:
    /// w <- (1 - g) w + g (base/rtt w + alpha), g = 1/2. At equilibrium
    /// each flow keeps `alpha` bytes of its own in the bottleneck's queue;
    /// the queueing delay is the same for every flow there, so every flow
    /// runs at the same rate, whatever its round trip (the paper proves
    /// stability and this fairness). Loss does not enter, so random loss
    /// costs nothing. While the queue stays empty the window also grows
    /// multiplicatively (2.5, 5, then 10 % per round, from the second empty
    /// round on), so freed capacity is
    /// found in a few rounds; FAST's own rule would add only alpha per round.
    pub(super) fn fast(&mut self) {
        let (Some(base), Some(w)) = (self.min_rtt, self.fast_w) else {
            return;
        };
        if self.r_rtt_n == 0 {
            return;
        }
        // Round trips of zero happen on loopback (timer resolution): keep
        // both at least a microsecond, so the ratio is a number.
        let base = base.max(Duration::from_micros(1));
        // R64: the round's packets sent since FAST's period began, if any.
        let mean = if self.r_fresh_n > 0 {
            self.r_fresh_sum / f64::from(self.r_fresh_n)
        } else {
            self.r_rtt_sum / f64::from(self.r_rtt_n)
        };
        let rtt = Duration::try_from_secs_f64(mean).unwrap_or(base).max(base);
        if std::mem::take(&mut self.fast_settle) {
            // The round began while DRAIN (or STARTUP's queue) was still
            // emptying: its mean round trip counts a queue that is gone,
            // and acting on it cut a 100 Mb/s, 300 ms flow to 79 Mb/s for
            // a second after every start-up (emulator).
            // R55: but the window was set from the estimate STARTUP left,
            // and the short-span sample of the drain (R6) may since have
            // found more: if some packet of the round found the queue
            // (almost) empty, take the window up to the new estimate's
            // pipe. A restart at 300 ms whose STARTUP ended on HyStart's
            // round trip with the estimate at 78 of 96 Mb/s paced 78 for
            // two more rounds.
            let room = self
                .round_queue()
                .is_some_and(|q| q <= self.queue_threshold() / 4);
            let pipe = self.bdp_bytes().map(|b| b + self.fast_alpha());
            if let Some(pipe) = pipe.filter(|p| room && *p > w && p.is_finite()) {
                self.fast_w = Some(pipe.min(2.0 * w));
            }
            return;
        }
        self.fast_rtt = Some(rtt);
        let ratio = base.as_secs_f64() / rtt.as_secs_f64();
        let pkt = f64::from(self.packet_bytes);
        let alpha = self.fast_alpha();
        let own = w * (1.0 - ratio);
        self.fast_own = (own, alpha);
        let mut new = 0.5 * w + 0.5 * (ratio * w + alpha);
        let bw = self.bottleneck();
        let prev_bw = std::mem::replace(&mut self.fast_prev_bw, bw);
        // R46: growth that was finding capacity (R40's doubling, R45's
        // floor) passes the top of the path by up to a round of doubling,
        // seen a round late, and FAST's cut then paced the window over a
        // mean round trip the overshoot had lengthened: at the top of a
        // 100 ms rate step the emulator paced 52 of 96 Mb/s for two rounds
        // (the second a congestion round, which the overshoot's own drops
        // set off and which does not run FAST), where BBR would keep the
        // link busy. While FAST drains such an overshoot (for at most six
        // rounds of any kind, so a path that dropped meanwhile is not paced
        // at its old rate for long), it paces at no less than 0.9 of the
        // rate the path delivered at the top: the queue drains at a tenth
        // of the path, and the link stays busy.
        // (Growth found capacity in one of the last two rounds: at the top
        // the round before the overshoot shows may queue between alpha and
        // 2 alpha, which ends growth; without this the 100 ms step paced 68
        // of 96 Mb/s for two rounds after such a round; simulator, R48.)
        let found_lately =
            self.fast_found > 0 || self.fast_found_at.is_some_and(|r| self.round <= r + 2);
        let drain_ended =
            own <= 2.0 * alpha && self.fast_overshoot.is_some_and(|(_, end)| self.round < end);
        self.fast_overshoot = if own > 2.0 * alpha {
            match self.fast_overshoot {
                _ if found_lately => Some((bw, self.round + OVERSHOOT_DRAIN_ROUNDS)),
                o => o.filter(|&(_, end)| self.round < end),
            }
        } else {
            None
        };
        // R45: while growth is finding capacity, or the window is under the
        // path's pipe, the queue growth asks about is the one above the
        // path's jitter floor. Jitter (a link that delivers in slots, host
        // scheduling) adds a near-constant delay to every round's mean, which FAST turns into bytes at its own rate,
        // so the same millisecond reads as more queue the faster it goes:
        // on the emulator's 1 ms trace a 300 ms flow refilling a path gone
        // from 20 to 100 Mb/s read half of alpha at 58 Mb/s with nothing
        // queued, and its doubling stopped there (R43: 4.6 s median to
        // follow the step). The floor is the smallest mean delay of the
        // last rounds in which some packet found the queue (almost) empty,
        // so a queue of ours that stands is not in it; it is at most the
        // standing-queue threshold; and it is used only while the delivery
        // rate is rising or the window cannot fill the pipe, so FAST's
        // equilibrium (alpha of each flow's own in a queue that stands,
        // where no round finds room and the floor is forgotten) is
        // untouched. After the step up at 300 ms the window passed the top,
        // drained, and then sat at 82 of 96 Mb/s reading 0.8 alpha of
        // jitter: under the pipe, the floor lets R37 take it back there.
        let excess = rtt.saturating_sub(base).as_secs_f64();
        let room_now = self
            .round_queue()
            .is_some_and(|q| q.as_secs_f64() * bw / 8.0 < alpha / 2.0);
        if room_now {
            self.fast_floor.update(self.round, excess);
        }
        // The pipe at the rate a queue last showed the link to carry, if
        // that is lower than the ten-round estimate and recent (R42, R37
        // below).
        let pipe_bw = match self.busy {
            Some((r, b)) if self.round <= r + BW_WINDOW_ROUNDS => bw.min(b),
            _ => bw,
        };
        let pipe = pipe_bw / 8.0 * base.as_secs_f64() + alpha;
        let grow_own = match self.fast_floor.get(self.round) {
            Some(floor) if self.fast_found > 0 || w < pipe => {
                let floor = floor.min(self.queue_threshold().as_secs_f64());
                w * (excess - floor).max(0.0) / rtt.as_secs_f64()
            }
            _ => own,
        };
        // A window under the path's pipe with the queue empty (R37), or
        // with an overshoot's queue just drained (R49), leaves the link
        // idle for certain: back to FAST's equilibrium at the path's rate
        // at once, not by the growth steps below, which need two empty
        // rounds. R37: draining a probe's queue, FAST's cut (on the round's
        // mean delay, a round late) went on after the queue had gone: at
        // 300 ms it paced 3 % under the path for two rounds of every eight.
        // R49: FAST's cuts over the rounds the overshoot lengthened left the
        // window under the pipe with alpha of its own queued, where neither
        // growth nor R37 runs (100 ms, 2 ms of jitter: 74 of 96 Mb/s for a
        // round after the drain). The pipe (above) is at the rate a queue
        // last showed the link to carry, if that is lower than the ten-round
        // estimate and recent: after a drop from 100 to 20 Mb/s the estimate
        // remembered 100 for ten rounds, and the first empty round after the
        // drain doubled the window back over the 20 Mb/s pipe, which queued
        // 20 ms and drained again (emulator, 100 ms; R42).
        if w < pipe && (grow_own < alpha / 2.0 || drain_ended) {
            new = new.max(pipe.min(2.0 * w));
        }
        if grow_own < alpha / 2.0 {
            self.fast_grow += 1;
            // R40: the path delivered more as the window grew, with nothing
            // queued: capacity was freed (a competitor left, the link got
            // faster). The steps double each such round, as BBRv2's PROBE_UP
            // does while it finds more. With 5 % past the estimate per
            // round, a path that went from 20 to 100 Mb/s took 5 s at 50 ms
            // (emulator, `bench/ratestep.sh`); issue 9 asks for 2.
            // A rise is half of one overshoot (below) or more: 2.5 % up to
            // 200 ms, 1.7 % at 300 ms, where the overshoot is capped at
            // 10 ms; a fixed 2.5 % was about what 300 ms's 3.3 % step could
            // show, and more than 600 ms's 1.7 % could (R43).
            // On a noisy path the estimate itself moves by that much from
            // round to round (at 300 ms and 5 % loss the lower bar found
            // capacity that was not there: p95 queue 22 -> 32 ms).
            // R51: from the third empty round running (growth has gone on
            // for a round, a path that is full would have queued it), a
            // quarter of an overshoot: the estimate, two rounds behind the
            // window and averaged over a round, rose by 1.6 % a round at
            // 300 ms where 1.7 % was asked, and the refill waited two more
            // rounds for a rise that counted.
            let over_share = (base.as_secs_f64() * 0.05).min(FAST_OVERSHOOT_MAX.as_secs_f64())
                / base.as_secs_f64();
            let rise = if self.noise < 0.01 && self.fast_grow >= 3 {
                over_share / 4.0
            } else if self.noise < 0.01 {
                over_share / 2.0
            } else {
                0.025
            };
            if bw >= prev_bw * (1.0 + rise) && prev_bw > 0.0 {
                self.fast_found = (self.fast_found + 1).min(5);
                self.fast_found_held = false;
                // R51: or once (`fast_found` is at least 1 here), after
                // three empty rounds running: the window went on growing
                // past the estimate's pipe for two of them and nothing
                // queued, which a full path cannot do.
                if self.fast_found >= 2 || self.fast_grow >= 3 {
                    // R50: capacity found twice (the path delivered more,
                    // with nothing queued, in two rounds of growth at most a
                    // round apart, R43's hold):
                    // a competitor left or the link got faster, by an
                    // unknown amount. Find it as at the start, by STARTUP
                    // (2.885x a round; it ends on a round trip grown by
                    // HyStart's eta, a standing queue or a plateau), not by
                    // FAST's doubling, which the two rounds the estimate
                    // lags hold to about 1.4x a round: a 300 ms path gone
                    // from 20 to 100 Mb/s took 3.1-4.0 s to refill in the
                    // simulator, 3.4-4.6 s on the emulator. When DRAIN
                    // ends FAST starts again from the new estimate's pipe,
                    // pacing at no less than 0.9 of it while the queue
                    // STARTUP left drains (R46; `enter_cruise`).
                    tracing::debug!(
                        bw,
                        prev_bw,
                        found = self.fast_found,
                        grow = self.fast_grow,
                        "STARTUP again: capacity found"
                    );
                    self.restarted = true;
                    self.start_up_at_prior(bw);
                    return;
                }
            } else if self.fast_found > 0 && !self.fast_found_held {
                // R43: a window grown at the end of round k is sent in
                // round k + 1 and delivered, so measured, in round k + 2.
                // With a round trip of FEEDBACKs the estimate therefore rose
                // every other round, and R40's doubling reset in between: at
                // 300 ms a path gone from 20 to 100 Mb/s was refilled by
                // about 8 % per two rounds (20 -> 56 Mb/s in 10 s in the
                // simulator, 20 -> 58 on the emulator). One round without a
                // rise keeps what was found; two in a row end it.
                self.fast_found_held = true;
            } else {
                self.fast_found = 0;
                self.fast_found_held = false;
            }
            // Only after two empty rounds in a row: near the equilibrium the
            // queue empties for a round now and then, and growing then
            // overshoots (the answer comes a round late).
            if self.fast_grow >= 2 {
                let k = (self.fast_grow - 2).min(2) + self.fast_found;
                let step = (0.025 * f64::from(1u32 << k)).min(1.0);
                let grown = w * (1.0 + step);
                // Fast up to the path's estimated rate, then 5 % past it
                // per round (decision R15): the delivery rate then shows
                // freed capacity as quickly, while growing 10 % past it
                // filled a tenth of a round trip of queue before the delay
                // answered, every few seconds (emulator, 300 ms: p95 50 ms).
                // And at most 10 ms of queue (R16, R25): 5 % of 1.8 s queued
                // 90 ms, which FAST then drained for rounds, under the path's
                // rate.
                // R72: but while the estimate is rising, never less than
                // twice the rise that counts as capacity found: on a noisy
                // path (2.5 %) past 400 ms the 10 ms let the estimate rise
                // by at most 1.7 % a round, no rise ever counted, and a 600
                // ms, 5 % path left by STARTUP at 64 of 96 Mb/s took 50
                // rounds (30 s) to reach 95. Only while it rises: at the
                // path's rate FAST's cycle on a noisy path (the queue
                // empties, growth, a drain) then overshot by 5 % of the
                // round trip each time, not 10 ms (600 ms: p95 queue 14 ->
                // 63 ms).
                let rising = prev_bw > 0.0 && bw >= prev_bw * (1.0 + over_share / 4.0);
                let seen = if rising { 2.0 * rise } else { 0.0 };
                let over = (base.as_secs_f64() * 0.05)
                    .min(FAST_OVERSHOOT_MAX.as_secs_f64())
                    .max(seen * base.as_secs_f64())
                    * f64::from(1u32 << self.fast_found);
                let ceiling = bw / 8.0 * (base.as_secs_f64() + over) + alpha;
                new = new.max(grown.min(ceiling.max(w)));
            }
            self.reason = RateReason::Probing;
        } else if own <= alpha
            && self.fast_found > 0
            && !self.fast_found_held
            && self
                .round_queue()
                .is_some_and(|q| q.as_secs_f64() * bw / 8.0 < alpha / 2.0)
        {
            // R43: one round with a little queue (at most alpha) while growth
            // was finding capacity holds what it found, as one round without
            // a rise does above. On the emulator's trace, which delivers in
            // 1 ms slots, a round's mean round trip reads half of alpha
            // queued now and then at 80 Mb/s with the queue empty (R42): a
            // 300 ms path refilling from 20 Mb/s lost its doubling at 58
            // Mb/s and went on by R42's probes, two rounds each. Only if
            // some packet of the round found the queue (almost) empty, as
            // for R42's probes: at the top of a path without jitter every
            // packet queues, and holding there overshot the path by a fifth
            // for half a second (simulator, 100 ms).
            self.fast_found_held = true;
            self.reason = RateReason::Probing;
        } else {
            self.fast_grow = 0;
            if self.fast_found > 0 && self.fast_probe.is_none() {
                // Growth that was finding capacity stopped at a little
                // queue: it may be jitter (R42), so probe in the next round
                // that allows it, not 0.5-1 s later (the path changed: no
                // backoff from earlier misses).
                self.cruise_left = 1;
                self.cruise_until = self.now;
                self.fast_probe_misses = 0;
            }
            self.fast_found = 0;
            self.fast_found_held = false;
            self.reason = if own > 2.0 * alpha {
                RateReason::Draining
            } else {
                RateReason::Steady
            };
        }
        // R42: FAST reads a path's jitter (host scheduling, a link that
        // delivers in slots, ACKs that bunch) as queue of its own. With half
        // of alpha of it, a window under the path's pipe looked like FAST's
        // equilibrium and grew by alpha / 4 a round: after a rate step up
        // the emulator's trace at 100 ms sat at 82-87 of 93 Mb/s for 7 s,
        // and the simulator with 2 ms of jitter at 37-49 Mb/s for 10 s.
        // Delay cannot tell that window from the full pipe; the delivery
        // rate can. So now and then (BBR's rhythm: 4-8 rounds and at least
        // 0.5-1 s) a round with alpha / 2 to alpha of its own queued, and
        // room (below), sends one overshoot more (5 % of the base round
        // trip, at most 10 ms of the estimated rate, as the growth above).
        // If two rounds later the path delivered at least half of it more
        // with no more than alpha queued, the next probe goes at once and
        // is twice as large (up to 4x); otherwise FAST's own rule takes the
        // overshoot back and the next probe waits twice as long (up to 8x).
        let over_base = (base.as_secs_f64() * 0.05).min(FAST_OVERSHOOT_MAX.as_secs_f64());
        // Room (`room_now`, above): some packet of the round found (almost)
        // nothing queued, so what FAST reads as its queue is jitter, not a
        // standing queue (among FAST flows one stands: each keeps alpha in
        // it). Probing there too
        // took four flows from Jain 1.00 to 0.50 (the simulator's
        // `four_staggered_flows_converge`). Nor on a noisy path: its losses
        // empty the queue now and then, and the delivery estimate's spread
        // passes for capacity found; probing at 5 % loss and 100 ms cost
        // 1 % of the path (`five_percent_loss_at_a_hundred_ms_...`).
        let room = self.noise < 0.01 && room_now;
        let mut probe = false;
        if let Some((sent, bw0, share)) = self.fast_probe {
            if self.round >= sent + 2 {
                self.fast_probe = None;
                if bw >= bw0 * (1.0 + (share / 2.0).max(0.01)) && own <= alpha {
                    self.fast_probe_k = (self.fast_probe_k + 1).min(2);
                    self.fast_probe_misses = 0;
                    probe = true;
                } else {
                    self.fast_probe_k = 0;
                    self.fast_probe_misses += 1;
                    self.schedule_fast_probe();
                }
            }
        } else if own <= alpha && own >= alpha / 2.0 {
            self.cruise_left = self.cruise_left.saturating_sub(1);
            probe = self.cruise_left == 0 && self.now >= self.cruise_until && room;
        }
        // (Both ways to a probe above require no more than alpha queued.)
        if probe {
            let extra = bw / 8.0 * over_base * f64::from(1u32 << self.fast_probe_k);
            new = new.max(w + extra);
            self.fast_probe = Some((self.round, bw, extra / w.max(1.0)));
            self.reason = RateReason::Probing;
        }
        // Cutting for six rounds did not shrink the queue: it is not ours
        // (a loss-based TCP keeps any queue full, and yielding to it would
        // starve us). Compete as BBR does for a while.
        let dq = rtt.saturating_sub(base);
        let standing = dq > self.queue_threshold();
        // Just after a competition, a standing queue counts as suspect even
        // when our own share of it looks small (R24): beside BBR v1, whose
        // standing queue is 6-16 ms at 50 ms, FAST cut its window by small
        // steps (own between alpha and 2 alpha) from 42 to 7 Mb/s in five
        // seconds and never cut six rounds in a row above 2 alpha.
        let suspect = own > 2.0 * alpha || (standing && self.recent_competition().is_some());
        if suspect {
            if self.fast_cut == 0 || dq > self.fast_q_peak {
                self.fast_q_peak = dq;
                self.fast_q_peak_at = self.now;
            }
            if self.fast_cut == 0 {
                self.fast_q_before = Some(dq);
            }
            self.fast_cut += 1;
            // R48: and not before the largest queue seen could have drained
            // (its delay is the time the path needs to empty it) and a round
            // trip more shown it, unless the test has already had twice its
            // rounds: a round trip's samples tell of the queue a round trip
            // ago, and six rounds that a standing queue ended early
            // (`stretched_round`) came while the queue a rate step down left
            // was still draining (300 ms: the sixth 0.5 s after the peak of
            // a 1.2 s queue).
            let waited = self.now.saturating_duration_since(self.fast_q_peak_at)
                >= self.fast_q_peak + base
                || self.fast_cut >= 12;
            if self.fast_cut >= 6 && waited {
                let shrank = self.fast_q_before.is_some_and(|b| dq * 10 < b * 8);
                // R48: a queue that grew fourfold after the test began and
                // has gone again, some packet of this round finding it
                // empty, was ours: the test began as our own queue was
                // building (a path's rate had fallen) and ended as our cuts
                // had drained it, the round's mean still above the first
                // round's. Called a competitor's, it set the competition
                // pacing the old rate into the slower path, which kept the
                // queue full for the rest of the phase (R47). A competitor
                // that does not yield keeps a queue under every packet; one
                // that empties it now and then (BBR's PROBE_RTT) has not
                // grown it fourfold within the test.
                let first = self
                    .fast_q_before
                    .unwrap_or_default()
                    .max(self.queue_threshold());
                let drained = self.fast_q_peak >= 4 * first
                    && self
                        .round_queue()
                        .is_some_and(|q| q <= self.queue_threshold());
                self.fast_cut = 0;
                if !shrank && !drained {
                    self.compete(standing);
                    return;
                }
                self.fast_q_before = Some(dq);
            }
        } else {
            self.fast_cut = 0;
            // A round with only our own share queued and no queue standing
            // (R63): the rate we had with nobody else filling the queue.
            // Beside CUBIC's slowly growing queue our share stays alpha as
            // the rate shrinks to alpha over its delay, and this followed
            // it down to 4 Mb/s (simulator).
            if !standing {
                self.calm.update(self.round, self.bottleneck());
            }
        }
        // Draining a queue that stood through the round: the link carried
        // `busy` of ours all round, so FAST's equilibrium is that rate's pipe
        // plus alpha, and the window goes no higher. FAST's own cut (halfway
        // to base/rtt of the window) left it at 300 KB where the pipe after
        // a step from 100 to 20 Mb/s at 100 ms held 264 KB; when the queue
        // had gone, that window queued 20 ms again and drained a second
        // time (simulator and emulator; R42). Once per standing queue: if
        // the queue is someone else's, what we deliver follows what we send,
        // and capping every round halved the rate round after round (FAST's
        // test for a queue not ours then never saw its six rounds of cuts).
        let draining = own > 2.0 * alpha && !self.busy_capped;
        if let Some((_, b)) = self.busy.filter(|&(r, _)| draining && r == self.round) {
            new = new.min(b / 8.0 * base.as_secs_f64() + alpha);
            self.busy_capped = true;
        }
        if self.fast_found > 0 {
            self.fast_found_at = Some(self.round);
        }
        // min/max, not clamp: clamp panics if the bounds cross or are NaN.
        let new = new.min(2.0 * w).max(4.0 * pkt);
        if new.is_finite() {
            self.fast_w = Some(new);
        }
    }

    /// FAST's next delivery probe (R42): the cruise schedule, stretched 2x
    /// per probe in a row that found nothing, up to 8x. A lone flow at its
    /// pipe finds nothing each time, and each probe's overshoot queues a
    /// little and costs a little while FAST takes it back.
    pub(super) fn schedule_fast_probe(&mut self) {
        let r = self.next_random();
        self.schedule_probe(r);
        let m = self.fast_probe_misses.min(3);
        self.cruise_left <<= m;
        let wait = self.cruise_until.saturating_duration_since(self.now);
        self.cruise_until = self.now + wait * (1u32 << m);
    }

    /// How far past the estimate FAST may pace. 1.25x, BBR's probing
    /// gain; while growth keeps finding capacity (R40's `fast_found`, two
    /// rises of the estimate or more) 2x, slow start's: the estimate can
    /// rise by no more than the pacing lets through, and at 1.25x (a rise
    /// of about 16 % a round, seen a round late) a 300 ms path gone from
    /// 20 to 100 Mb/s took about 5 s to refill (simulator; R43).
    pub(super) fn fast_pacing_gain(&self) -> f64 {
        if self.fast_found >= 2 {
            2.0
        } else {
            1.25
        }
    }
}
