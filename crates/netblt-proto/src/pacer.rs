//! Burst rate control.
//!
//! RFC 998 §4: "The sender transmits a burst of packets over a negotiated time
//! interval, then sends another burst." and "The sender uses timers, rather
//! than messages from the receiver, to maintain the negotiated rate." The
//! pacer applies to new DATA and retransmissions alike (notes §J).
//!
//! A burst of `burst_size` packets is allowed per interval. With a pacing
//! quantum smaller than the burst, the burst's packets are released in groups
//! of `quantum`, evenly spaced within the interval: the rate and the RFC's
//! negotiated fields are unchanged, but a 1 ms, 89-packet burst no longer
//! leaves the host as one spike (pacing finer than the 1 ms field allows).

use crate::config::PacingClock;
use crate::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    burst_size: u32,
    interval: Duration,
    quantum: u32,
    clock: PacingClock,
    /// Start of the current burst window, if one has begun.
    window_start: Option<Instant>,
    /// Packets sent in the current window.
    sent: u32,
}

impl Pacer {
    pub(crate) fn new(
        burst_size: u16,
        interval_ms: u16,
        quantum: Option<u16>,
        clock: PacingClock,
    ) -> Self {
        let mut p = Pacer {
            burst_size: 1,
            interval: Duration::from_millis(1),
            quantum: 1,
            clock,
            window_start: None,
            sent: 0,
        };
        p.set_rate(burst_size, interval_ms, quantum);
        p
    }

    /// Applies renegotiated burst values (RFC 998 §4, NULL-ACK); takes effect
    /// from the next burst window.
    pub(crate) fn set_rate(&mut self, burst_size: u16, interval_ms: u16, quantum: Option<u16>) {
        self.burst_size = u32::from(burst_size.max(1));
        self.interval = Duration::from_millis(u64::from(interval_ms.max(1)));
        self.quantum = quantum
            .map(|q| u32::from(q.max(1)))
            .unwrap_or(self.burst_size)
            .min(self.burst_size);
    }

    /// Paces `burst_size` packets per `interval`, released all together
    /// (a rate controller's exact rate: the interval need not be whole
    /// milliseconds). Takes effect from the next burst window.
    pub(crate) fn set_rate_exact(&mut self, burst_size: u16, interval: Duration) {
        self.burst_size = u32::from(burst_size.max(1));
        self.interval = interval.max(Duration::from_nanos(1));
        self.quantum = self.burst_size;
    }

    /// Earliest time the next packet may leave.
    pub(crate) fn next_send_time(&self, now: Instant) -> Instant {
        let Some(start) = self.window_start else {
            return now;
        };
        if self.sent >= self.burst_size {
            return start + self.interval;
        }
        // Within the window, group g = sent / quantum leaves at
        // start + interval * g * quantum / burst_size.
        let group = u64::from(self.sent / self.quantum);
        let offset_ns = self.interval.as_nanos() as u64 * group * u64::from(self.quantum)
            / u64::from(self.burst_size);
        start + Duration::from_nanos(offset_ns)
    }

    /// Records one packet sent at `now` (which must be >= next_send_time).
    pub(crate) fn on_send(&mut self, now: Instant) {
        match self.window_start {
            Some(start) if self.sent < self.burst_size && now < start + self.interval => {
                self.sent += 1;
            }
            Some(start) => {
                let scheduled = start + self.interval;
                let new_start = match self.clock {
                    // A window that would already be over starts afresh now:
                    // credit is not banked across idle periods.
                    PacingClock::Virtual if now < scheduled + self.interval => scheduled,
                    _ => now,
                };
                self.window_start = Some(new_start);
                self.sent = 1;
            }
            None => {
                self.window_start = Some(now);
                self.sent = 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn whole_bursts_per_interval() {
        let mut p = Pacer::new(5, 40, None, PacingClock::Virtual);
        for _ in 0..5 {
            assert_eq!(p.next_send_time(ms(0)), ms(0));
            p.on_send(ms(0));
        }
        assert_eq!(p.next_send_time(ms(1)), ms(40));
        p.on_send(ms(41)); // one ms late: the virtual schedule keeps 40
        assert!(p.next_send_time(ms(41)) <= ms(41));
        for _ in 0..4 {
            p.on_send(ms(41));
        }
        assert_eq!(p.next_send_time(ms(41)), ms(80));
    }

    #[test]
    fn actual_start_clock_pushes_later_bursts() {
        let mut p = Pacer::new(1, 40, None, PacingClock::FromActualStart);
        p.on_send(ms(0));
        p.on_send(ms(43));
        assert_eq!(p.next_send_time(ms(43)), ms(83));
    }

    #[test]
    fn quantum_spreads_a_burst() {
        let mut p = Pacer::new(8, 1, Some(2), PacingClock::Virtual);
        p.on_send(ms(0));
        p.on_send(ms(0));
        assert_eq!(p.next_send_time(ms(0)), Instant::from_micros(250));
        p.on_send(Instant::from_micros(250));
        p.on_send(Instant::from_micros(250));
        assert_eq!(p.next_send_time(ms(0)), Instant::from_micros(500));
    }

    #[test]
    fn idle_does_not_bank_credit() {
        let mut p = Pacer::new(2, 10, None, PacingClock::Virtual);
        p.on_send(ms(0));
        p.on_send(ms(0));
        p.on_send(ms(100));
        p.on_send(ms(100));
        assert_eq!(p.next_send_time(ms(100)), ms(110));
    }
}
