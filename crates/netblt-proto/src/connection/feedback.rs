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

    /// When the next FEEDBACK is due, if anything arrived since the last.
    pub(crate) fn due(&self, srtt: Duration) -> Option<Instant> {
        if !self.enabled || self.pending == 0 {
            return None;
        }
        let (_, _, arrived) = self.newest?;
        Some(match self.last_sent {
            Some(t) => (t + Self::interval(srtt)).max(arrived),
            None => arrived,
        })
    }

    /// Writes a FEEDBACK if one is due at `now`.
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
        let (buffer, packet, arrived) = self.newest?;
        let hold = now.saturating_duration_since(arrived).as_micros();
        let repr = FeedbackRepr {
            echo_buffer: buffer,
            echo_packet: packet,
            hold_us: u32::try_from(hold).unwrap_or(u32::MAX),
            arrived_packets: self.arrived_pkts,
            arrived_bytes: self.arrived_bytes,
            lost_packets: self.lost,
            seq: self.seq,
        };
        let p = Packet {
            local_port: ports.0,
            foreign_port: ports.1,
            repr: Repr::Feedback(repr),
        };
        let n = p.emit(buf).ok()?;
        self.seq = self.seq.wrapping_add(1);
        self.pending = 0;
        self.last_sent = Some(now);
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
