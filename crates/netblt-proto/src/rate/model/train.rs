//! R56: the measuring train, the first flight, whose spacing at the
//! receiver is the first estimate of the path's rate.

use super::*;

impl Model {
    /// R56: the measuring train's payload bytes.
    ///
    /// A whole number of the pacer's groups, which leave back to back (at
    /// least eight packets below 8 packets per millisecond; the sender's
    /// `apply_rate`): the dispersion runs from the end of the first group
    /// the receiver reports to the end of the last, and a last group of two
    /// packets read a train paced at 28.85 Mb/s as 21.7 on the emulator
    /// (the receiver reads a group in one batch), under R56's bar. Before
    /// the first report the packet size is not known and 1400 bytes are
    /// assumed, so the blind part of the train is 44.8 KB whatever the
    /// packets; with larger ones (jumbo frames) it is made up to whole
    /// groups of them once the first report says their size.
    pub(super) fn train_bytes(&self) -> f64 {
        let group = TRAIN_GROUP * f64::from(self.packet_bytes);
        let at_pacing = STARTUP_GAIN * self.initial_bps / 8.0 * TRAIN.as_secs_f64();
        (at_pacing / group).ceil().max(1.0) * group
    }

    /// R56: one report of the measuring train. Its estimate is the train's
    /// dispersion: payload reported (arrived, or lost: noise used the path
    /// too) between the first report's newest packet and this one's, over
    /// the time between their arrivals (each one-way delay late by the same
    /// amount: the send time of the echoed packet plus its round trip, the
    /// receiver's hold taken out). Once the train is all but reported (a
    /// lost last packet is only found by a RESEND), that is the first
    /// estimate. Slower than the train was sent: the train found the
    /// bottleneck, and STARTUP, whose next round would pace at 2.885x that,
    /// has nothing left to find (at 20 Mb/s, 100 ms and a one-BDP queue
    /// that round overfilled the queue: R54's 63 drops).
    pub(super) fn on_train_sample(&mut self, s: &RateSample) {
        let pkt = f64::from(self.packet_bytes);
        let reported = (s.arrived + s.lost).saturating_sub(s.found) as f64 * pkt;
        self.train_reported += reported;
        if let (Some(sent), Some(rtt)) = (s.echoed_sent_at, s.rtt) {
            let at = sent + rtt;
            match self.train_first {
                None => {
                    self.train_first = Some((at, self.train_reported));
                    self.train_first_sent = Some(sent);
                }
                Some((first, before)) if at > first => {
                    let secs = at.saturating_duration_since(first).as_secs_f64();
                    self.train_bps = Some((self.train_reported - before) * 8.0 / secs);
                }
                Some(_) => {}
            }
        }
        let train = self.train_bytes();
        let done =
            self.train_reported >= train - 1.5 * pkt || (s.inflight_bytes as f64) < 1.5 * pkt;
        if done {
            self.end_train();
        }
    }

    /// R59: this report echoes a packet sent well after the train (a
    /// packet a RESEND asked for, the train's own report having been lost,
    /// or one sent once the sender's guard gave way): it is no part of the
    /// train's dispersion, which would stretch over the wait (0.54 Mb/s
    /// for a 100 Mb/s path whose first two reports were lost; simulator,
    /// 300 ms, 5 % loss). "Well after": twice the train's time at its
    /// pacing, plus 20 ms for the pacer's groups and the receiver's batches.
    pub(super) fn after_the_train(&self, s: &RateSample) -> bool {
        let (Some(first), Some(sent)) = (self.train_first_sent, s.echoed_sent_at) else {
            return false;
        };
        let span = 2.0 * self.train_bytes() * 8.0 / self.pacing_bps() + 0.020;
        sent.saturating_duration_since(first).as_secs_f64() > span
    }

    /// R56: the train is over, all but reported or given up on: its
    /// dispersion so far is the first estimate.
    pub(super) fn end_train(&mut self) {
        self.train = false;
        // What the train was paced at (no estimate yet: the initial rate's).
        let sent_at = self.pacing_bps();
        let Some(found) = self.train_bps.filter(|b| b.is_finite() && *b > 0.0) else {
            // One report for the whole train (a path faster than the
            // receiver's report interval): the short span and the one-round
            // samples measure it as before.
            return;
        };
        self.bw.update(self.bw_round, found);
        if self.phase == Phase::Startup && found < TRAIN_FOUND * sent_at {
            self.phase = Phase::Drain;
            self.reason = RateReason::Draining;
        }
    }
}
