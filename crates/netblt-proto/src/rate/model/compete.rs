//! Competing with a flow that keeps the queue full (CUBIC, BBR): when an
//! overflow is someone else's (R63, R65), and how the competition is
//! entered and remembered (R19, R24).

use super::*;

impl Model {
    /// The rate of a competition that ended at most `COMPETE_MEMORY_ROUNDS`
    /// ago (R19, R24).
    pub(super) fn recent_competition(&self) -> Option<f64> {
        self.compete_end
            .filter(|&(end, _)| self.round <= end + COMPETE_MEMORY_ROUNDS)
            .map(|(_, bps)| bps)
    }

    /// R63: a congestion round in FAST's CRUISE with at most twice alpha of
    /// our own queued (this round's mean round trip), FAST neither probing,
    /// nor growing past the pipe, nor draining an overshoot: the losses
    /// came from a queue someone else filled. Among FAST flows alone a
    /// queue holds alpha of each and does not overflow. R65: or a
    /// congestion round in a STARTUP (or its DRAIN) that FAST's growth began.
    pub(super) fn overflow_not_ours(&self) -> bool {
        if self.background || self.foreign_rounds > 0 {
            return false;
        }
        // R65: or a STARTUP that FAST's growth began (R50) at a squeezed
        // rate. Beside CUBIC, PROBE_RTT re-measures the base inside its
        // standing queue (R23), the queue then looks empty, FAST's growth
        // finds "capacity" and starts up again, and CUBIC's overflow finds
        // us in that STARTUP: counted as congestion, it left NETBLT at
        // 0.11 of CUBIC's rate over 15-35 s (simulator, seed 7 with R64),
        // with CUBIC's next overflow seconds away. The rate and queue tests
        // below still decide; our own share is not measured in STARTUP.
        // (Or its DRAIN: HyStart may have ended it within the round.)
        let refill = matches!(self.phase, Phase::Startup | Phase::Drain) && self.restarted;
        if !refill && !self.cruising_with_little_of_ours() {
            return false;
        }
        // FAST's equilibrium reads alpha of its own in any queue (its
        // rate is alpha over the queue's delay, whoever built it), so the
        // share of our own says nothing here; what does is the rate: under
        // a quarter of what the path gave us with nobody else's queue,
        // someone else is taking the rest. Alone, at low rates alpha's own delay
        // stands above the threshold, and noise bursts there passed for
        // overflow (the simulator's noisy-path tests).
        let calm = self.calm.get().unwrap_or(0.0);
        // And the queue stood nearly this long through the rounds before:
        // a loss-based TCP grows it slowly to the brim, where another
        // flow's STARTUP fills it within a round (four NETBLT flows
        // starting two seconds apart each took the others into BBR-style
        // competition: Jain 0.55, simulator).
        // Measured from the smallest round trip ever seen: PROBE_RTT in a
        // queue that does not drain takes the base up into it (R23).
        let before = self.recent_min_rtt.get(self.round.saturating_sub(1));
        let slow_rise = match (before, self.r_min_rtt, self.floor_rtt) {
            (Some(b), Some(now), Some(floor)) => {
                let floor = floor.as_secs_f64();
                b - floor >= 0.7 * (now.as_secs_f64() - floor)
            }
            _ => false,
        };
        let first = self
            .last_lossy
            .is_none_or(|r| r + OVERFLOW_CALM_ROUNDS <= self.round);
        self.bottleneck() < CALM_SHARE * calm && first && slow_rise
    }

    /// R63's first test: FAST's CRUISE, neither settling, probing, growing
    /// past the pipe nor draining an overshoot, with at most twice alpha of
    /// our own queued (this round's mean round trip).
    pub(super) fn cruising_with_little_of_ours(&self) -> bool {
        let (Some(base), Some(w)) = (self.min_rtt, self.fast_w) else {
            return false;
        };
        if self.phase != Phase::Cruise
            || self.r_rtt_n == 0
            || self.fast_settle
            || self.fast_probe.is_some()
            || self.fast_overshoot.is_some()
            || self.fast_found > 0
        {
            return false;
        }
        let mean = self.r_rtt_sum / f64::from(self.r_rtt_n);
        let own = w * (1.0 - base.as_secs_f64() / mean.max(1e-6)).max(0.0);
        own <= 2.0 * self.fast_alpha()
    }

    /// A queue found not to be ours: compete as BBR does for
    /// `FOREIGN_ROUNDS` rounds (FAST's six-round test, R7; a competitor's
    /// overflow, R63).
    pub(super) fn compete(&mut self, standing: bool) {
        tracing::debug!(now = %self.now, round = self.round, standing, "competing");
        self.foreign_rounds = FOREIGN_ROUNDS;
        self.met_competitor |= standing;
        self.fast_w = None;
        // The cuts of those rounds (FAST's, and the congestion cuts of the
        // competitor's start-up losses) went to a flow that does not yield:
        // start the competition from at least an even share of what we had
        // before it came (R7). From the cut-down rate BBR-style probing
        // never caught up: 0.13-0.37 of BBR v1's rate (emulator).
        let even = 0.5 * self.calm.get().unwrap_or(0.0);
        // And a competition that ended only for FAST's test resumes at the
        // rate it had (R19): the test's six rounds of cuts and a
        // competitor's emptied queue in them (BBR's PROBE_RTT, which then
        // reset the calm rate to the cut-down rate) took us from 33 to 12 Mb/s beside
        // BBR v1 (emulator trace).
        let resumed = self.recent_competition().unwrap_or(0.0);
        self.compete_end = None;
        let start = even.max(resumed);
        if start > self.bottleneck() {
            self.bw.reset(self.bw_round, start);
        }
        self.enter_cruise();
    }
}
