//! The data receiver's FEEDBACK reports (the rate-feedback extension,
//! `netblt_wire::FeedbackRepr`): what arrived, what was found missing, and
//! the newest packet with how long it was held, so the data sender can time
//! a round trip and a delivery rate without any change to DATA packets.

use netblt_wire::{FeedbackRepr, Packet, Repr};

use crate::time::{Duration, Instant};

/// Shortest spacing of FEEDBACKs: bounds their cost at high packet rates
/// (4,000 per second at most).
const MIN_INTERVAL: Duration = Duration::from_micros(250);
/// Longest spacing while data arrives: keeps long paths' controllers fed.
const MAX_INTERVAL: Duration = Duration::from_millis(10);
/// R61: a report after which nothing arrives goes once more this many
/// intervals later.
const REPEAT_AFTER_INTERVALS: u32 = 2;

#[derive(Debug, Default)]
pub(crate) struct FeedbackOut {
    pub(crate) enabled: bool,
    arrived_pkts: u32,
    arrived_bytes: u32,
    pub(crate) lost: u32,
    seq: u32,
    /// Newest DATA/LDATA packet: (buffer, packet, arrival).
    newest: Option<(u32, u16, Instant)>,
    /// The one before it, for `on_found`.
    before: Option<(u32, u16, Instant)>,
    /// Arrivals since the last FEEDBACK.
    pending: u32,
    last_sent: Option<Instant>,
    /// R61: when the last report goes again if nothing arrives before.
    repeat_at: Option<Instant>,
}

impl FeedbackOut {
    /// Counts one DATA/LDATA packet that parsed (duplicates too: they used
    /// the path as much as new data).
    pub(crate) fn on_arrival(&mut self, now: Instant, buffer: u32, packet: u16, bytes: usize) {
        if !self.enabled {
            return;
        }
        self.arrived_pkts = self.arrived_pkts.wrapping_add(1);
        self.arrived_bytes = self.arrived_bytes.wrapping_add(bytes as u32);
        self.before = self.newest.replace((buffer, packet, now));
        self.pending = self.pending.saturating_add(1);
        // A new report follows within an interval: no repeat of the last.
        self.repeat_at = None;
    }

    /// Packets found missing.
    pub(crate) fn on_lost(&mut self, n: u32) {
        self.lost = self.lost.wrapping_add(n);
    }

    /// A packet reported missing that arrived after all (overtaken, not
    /// lost): the cumulative count goes back down, and the data sender
    /// reads a negative difference as packets found (R53).
    ///
    /// That packet, just counted by `on_arrival`, is not echoed either: it
    /// was held back on the way, and its round trip would read the holding
    /// as queue.
    pub(crate) fn on_found(&mut self, buffer: u32, packet: u16) {
        self.lost = self.lost.wrapping_sub(1);
        if self
            .newest
            .is_some_and(|(b, p, _)| b == buffer && p == packet)
            && self.before.is_some()
        {
            self.newest = self.before.take();
        }
    }

    /// Eight reports per round trip, within [`MIN_INTERVAL`, `MAX_INTERVAL`].
    fn interval(srtt: Duration) -> Duration {
        (srtt / 8).clamp(MIN_INTERVAL, MAX_INTERVAL)
    }

    /// When the next FEEDBACK is due: a new report if anything arrived
    /// since the last, else the last one's repeat (R61), if not yet sent.
    pub(crate) fn due(&self, srtt: Duration) -> Option<Instant> {
        if !self.enabled {
            return None;
        }
        if self.pending == 0 {
            return self.repeat_at;
        }
        let (_, _, arrived) = self.newest?;
        Some(match self.last_sent {
            Some(t) => (t + Self::interval(srtt)).max(arrived),
            None => arrived,
        })
    }

    /// Writes a FEEDBACK if one is due at `now`.
    ///
    /// R61: the report after which nothing more arrives goes twice, the
    /// copy [`REPEAT_AFTER_INTERVALS`] intervals later with the same
    /// sequence number (a data sender that has the first ignores it as a
    /// duplicate) and the hold counted afresh (its round trip stays true).
    /// Such a report is the one a sender waits for: the end of its
    /// measuring train (R56), of a flight before it went idle, of the
    /// transfer; lost, nothing newer replaced it, and the sender waited for
    /// its guard (measured: 0.31 s at 100 ms and 1 % loss, seed 2009 of
    /// issue 9's completion runs). While data flows, each arrival cancels
    /// the repeat: it costs one small packet per pause.
    pub(crate) fn emit(
        &mut self,
        now: Instant,
        srtt: Duration,
        buf: &mut [u8],
        ports: (u16, u16),
    ) -> Option<usize> {
        if self.due(srtt)? > now {
            return None;
        }
        let repeat = self.pending == 0;
        let (buffer, packet, arrived) = self.newest?;
        let hold = now.saturating_duration_since(arrived).as_micros();
        let repr = FeedbackRepr {
            echo_buffer: buffer,
            echo_packet: packet,
            hold_us: u32::try_from(hold).unwrap_or(u32::MAX),
            arrived_packets: self.arrived_pkts,
            arrived_bytes: self.arrived_bytes,
            lost_packets: self.lost,
            seq: if repeat {
                self.seq.wrapping_sub(1)
            } else {
                self.seq
            },
        };
        let p = Packet {
            local_port: ports.0,
            foreign_port: ports.1,
            repr: Repr::Feedback(repr),
        };
        let n = p.emit(buf).ok()?;
        if repeat {
            self.repeat_at = None;
        } else {
            self.seq = self.seq.wrapping_add(1);
            self.pending = 0;
            self.last_sent = Some(now);
            self.repeat_at = Some(now + Self::interval(srtt) * REPEAT_AFTER_INTERVALS);
        }
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> FeedbackOut {
        FeedbackOut {
            enabled: true,
            ..FeedbackOut::default()
        }
    }

    fn report(f: &mut FeedbackOut, now: Instant) -> FeedbackRepr {
        let mut buf = [0u8; 64];
        let n = f
            .emit(now, Duration::from_millis(50), &mut buf, (1, 2))
            .unwrap();
        match Packet::parse(&buf[..n]).unwrap().repr {
            Repr::Feedback(r) => r,
            r => panic!("not a FEEDBACK: {r:?}"),
        }
    }

    /// R53: packet 1 overtaken by packet 2 is counted lost, then found when
    /// it arrives; the FEEDBACK echoes packet 2, whose round trip is the
    /// path's, not packet 1, which was held back on the way.
    #[test]
    fn an_overtaken_packet_is_found_and_not_echoed() {
        let mut f = enabled();
        let t = Instant::from_micros(1_000);
        f.on_arrival(t, 7, 0, 1400);
        f.on_arrival(t, 7, 2, 1400);
        f.on_lost(1);
        let r = report(&mut f, t);
        assert_eq!((r.arrived_packets, r.lost_packets), (2, 1));
        let later = Instant::from_micros(9_000);
        f.on_arrival(later, 7, 1, 1400);
        f.on_found(7, 1);
        let r = report(&mut f, later);
        assert_eq!((r.arrived_packets, r.lost_packets), (3, 0));
        assert_eq!((r.echo_buffer, r.echo_packet), (7, 2));
        // Held since packet 2 arrived, at 1 ms.
        assert_eq!(r.hold_us, 8_000);
    }

    /// R61: a report after which nothing arrives goes once more, two
    /// intervals later, with its sequence number and a fresh hold; an
    /// arrival in between cancels the copy (a new report follows).
    #[test]
    fn the_last_report_of_a_pause_goes_twice() {
        let mut f = enabled();
        let srtt = Duration::from_millis(50); // interval 6.25 ms
        let t = Instant::from_micros(1_000);
        f.on_arrival(t, 1, 0, 1400);
        let first = report(&mut f, t);
        assert_eq!(f.due(srtt), Some(t + Duration::from_micros(12_500)));
        let later = t + Duration::from_micros(12_500);
        let again = report(&mut f, later);
        assert_eq!(again.seq, first.seq);
        assert_eq!(again.arrived_packets, first.arrived_packets);
        assert_eq!(again.hold_us, 12_500);
        assert_eq!(f.due(srtt), None, "once");
        let mut buf = [0u8; 64];
        assert_eq!(
            f.emit(later + Duration::from_millis(100), srtt, &mut buf, (1, 2)),
            None
        );
        // An arrival cancels the copy: the next report is a new one.
        f.on_arrival(later, 1, 1, 1400);
        let next = report(&mut f, later);
        assert_eq!(next.seq, first.seq + 1);
        let t3 = later + Duration::from_micros(1_000);
        f.on_arrival(t3, 1, 2, 1400);
        assert_eq!(f.due(srtt), Some(later + Duration::from_micros(6_250)));
        let fourth = report(&mut f, later + Duration::from_micros(6_250));
        assert_eq!(fourth.seq, next.seq + 1);
    }

    /// The count wraps both ways, as the data sender's differences do: a
    /// packet found at zero takes it to u32::MAX, one less than zero
    /// (saturating at zero would lose it, and the sender would read the
    /// next loss as none).
    #[test]
    fn found_wraps_back() {
        let mut f = enabled();
        f.on_arrival(Instant::from_micros(1), 1, 3, 1400);
        f.on_found(1, 3);
        assert_eq!(f.lost, u32::MAX);
        f.on_lost(1);
        assert_eq!(f.lost, 0);
    }
}
