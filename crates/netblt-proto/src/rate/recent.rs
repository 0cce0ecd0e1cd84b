//! The delivery rate over the last few FEEDBACKs (decision R6).
//!
//! BBR's delivery-rate sample spans one round trip: the bytes delivered
//! between a packet's sending and its acknowledgment. While the rate doubles
//! every round, that sample averages the whole ramp and lags the bottleneck
//! by most of a round. STARTUP leaves on a round trip that grew (HyStart++,
//! RFC 9406), a few tens of milliseconds after the bottleneck became busy,
//! so the one-round sample at that moment is far below the path: 61 of 96
//! Mb/s at 600 ms (emulator). The flow then cruised at that and found the
//! rest only by probing, 10 round trips later.
//!
//! This sample spans only the last few FEEDBACKs (about an eighth of a
//! round trip, at least 10 ms): while the bottleneck is busy, arrivals are
//! at its rate over any span. It keeps BBR's guard against acknowledgment
//! compression: the bytes are divided by the longer of the span over which
//! their FEEDBACKs came and the span over which the packets they echo were
//! sent, so bunched FEEDBACKs cannot show more than was sent.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// FEEDBACKs remembered, a sixteenth of the span apart: four spans.
const MARKS: usize = 64;
/// The shortest span believed: a few FEEDBACK intervals, so that the
/// timing noise of real hosts (tens of microseconds to a millisecond) is a
/// small part of it.
const MIN_SPAN: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    /// Bytes reported delivered up to this FEEDBACK.
    delivered: u64,
    /// Bytes reported lost up to this FEEDBACK.
    lost: u64,
    /// When the packet this FEEDBACK echoed was sent.
    echoed_sent_at: Instant,
}

/// Delivery rate over a short span of recent FEEDBACKs.
#[derive(Debug, Clone, Default)]
pub struct RecentDelivery {
    marks: VecDeque<Mark>,
}

/// One short-span sample: bits/s delivered, and delivered plus lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecentSample {
    /// Payload bits per second that arrived over the span.
    pub delivery_bps: f64,
    /// As `delivery_bps`, packets lost over the span counted as arrived.
    pub transmit_bps: f64,
}

impl RecentDelivery {
    /// Records one FEEDBACK (totals so far) and returns the rate over the
    /// span back to the newest earlier FEEDBACK at least `span` ago (at
    /// least 10 ms), if one is remembered.
    pub fn on_feedback(
        &mut self,
        now: Instant,
        delivered: u64,
        lost: u64,
        echoed_sent_at: Instant,
        span: Duration,
    ) -> Option<RecentSample> {
        let span = span.max(MIN_SPAN);
        let base = self
            .marks
            .iter()
            .rev()
            .find(|m| now.saturating_duration_since(m.at) >= span)
            .copied();
        // Marks at least a sixteenth of the span apart, so that the ring
        // reaches back four spans however often FEEDBACKs come (every 2.6
        // ms at 1.8 s in the simulator: 64 of them covered 166 ms of the
        // 225 ms span, and no sample came at all).
        let spaced = self
            .marks
            .back()
            .is_none_or(|m| now.saturating_duration_since(m.at) >= span / 16);
        if spaced {
            if self.marks.len() == MARKS {
                self.marks.pop_front();
            }
            self.marks.push_back(Mark {
                at: now,
                delivered,
                lost,
                echoed_sent_at,
            });
        }
        let base = base?;
        let ack_span = now.saturating_duration_since(base.at);
        let send_span = echoed_sent_at.saturating_duration_since(base.echoed_sent_at);
        let secs = ack_span.max(send_span).as_secs_f64();
        if secs <= 0.0 {
            return None;
        }
        let bytes = delivered.saturating_sub(base.delivered);
        let lost = lost.saturating_sub(base.lost);
        Some(RecentSample {
            delivery_bps: bytes as f64 * 8.0 / secs,
            transmit_bps: (bytes + lost) as f64 * 8.0 / secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn busy_bottleneck_rate_over_the_last_span() {
        // Arrivals at 1 Mb/s for 100 ms, then at 8 Mb/s: a 20 ms span sees
        // 8 Mb/s as soon as it lies inside the faster part.
        let mut r = RecentDelivery::default();
        let (mut delivered, mut last) = (0u64, None);
        for ms in (0..=200u64).step_by(5) {
            delivered += if ms <= 100 { 625 } else { 5000 };
            // Packets were sent twice as fast as they arrived.
            last = r.on_feedback(at(ms), delivered, 0, at(ms / 2), Duration::from_millis(20));
        }
        let s = last.unwrap();
        assert!((s.delivery_bps - 8e6).abs() < 1e3, "{s:?}");
    }

    #[test]
    fn bunched_feedback_cannot_exceed_the_send_rate() {
        // Four FEEDBACKs delayed and delivered back to back 1 ms apart,
        // echoing packets sent 10 ms apart at 1 Mb/s: the send span rules.
        let mut r = RecentDelivery::default();
        r.on_feedback(at(0), 0, 0, at(0), Duration::ZERO);
        let mut s = None;
        for i in 1..=40u64 {
            s = r.on_feedback(at(100 + i), i * 1250, 0, at(i * 10), Duration::ZERO);
        }
        let s = s.unwrap();
        assert!(s.delivery_bps <= 1.0e6 + 1.0, "{s:?}");
    }

    #[test]
    fn frequent_feedback_still_reaches_back_a_whole_span() {
        // FEEDBACK every 2 ms, a 225 ms span (1.8 s round trips): the
        // sample must still come, over about the span.
        let mut r = RecentDelivery::default();
        let mut s = None;
        for i in 0..=500u64 {
            let ms = 2 * i;
            s = r.on_feedback(at(ms), ms * 1250, 0, at(ms), Duration::from_millis(225));
        }
        let s = s.expect("a sample after a second of FEEDBACKs");
        assert!((s.delivery_bps - 10e6).abs() < 1e3, "{s:?}");
    }

    #[test]
    fn too_short_a_history_gives_nothing_and_losses_count_in_transmit() {
        let mut r = RecentDelivery::default();
        assert!(r
            .on_feedback(at(0), 0, 0, at(0), Duration::from_millis(50))
            .is_none());
        assert!(r
            .on_feedback(at(30), 3750, 0, at(30), Duration::from_millis(50))
            .is_none());
        let s = r
            .on_feedback(at(60), 7500, 1250, at(60), Duration::from_millis(50))
            .unwrap();
        assert!((s.delivery_bps - 1e6).abs() < 1.0, "{s:?}");
        assert!((s.transmit_bps - 8_750.0 * 8.0 / 0.06).abs() < 1.0, "{s:?}");
    }
}
