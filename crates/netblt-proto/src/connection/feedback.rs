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

/// Packets of a run whose spread is measured: the sender's pacer releases
/// at least eight together (decision R2), so a run of eight consecutive
/// packets lies, now and then, within one such group.
const TRAIN_LEN: usize = 8;
/// A run spread over less than this is not measured: a receiving loop or
/// its network card hands packets over in batches on this scale, which
/// would make them look faster than the path.
const MIN_TRAIN_SPAN: Duration = Duration::from_micros(200);

/// The spacing of runs of consecutive packets (R29): the highest rate seen
/// since the last FEEDBACK, of the data after each run's first packet over
/// the run's spread.
#[derive(Debug, Default)]
struct TrainMeter {
    /// The previous packet (buffer, number).
    prev: Option<(u32, u16)>,
    /// The current run's last packets: arrival and data bytes.
    ring: [(Instant, u32); TRAIN_LEN],
    /// Where the next arrival goes in `ring`.
    pos: usize,
    /// Packets of the current run in `ring` (at most `TRAIN_LEN`).
    len: usize,
    /// Highest rate since the last FEEDBACK, bits/s of data.
    max_bps: f64,
}

impl TrainMeter {
    fn on_arrival(&mut self, now: Instant, buffer: u32, packet: u16, bytes: usize) {
        let follows = self.prev == Some((buffer, packet.wrapping_sub(1))) && packet > 0;
        self.prev = Some((buffer, packet));
        if !follows {
            self.len = 0;
        }
        self.ring[self.pos] = (now, u32::try_from(bytes).unwrap_or(u32::MAX));
        self.pos = (self.pos + 1) % TRAIN_LEN;
        self.len = (self.len + 1).min(TRAIN_LEN);
        if self.len < TRAIN_LEN {
            return;
        }
        // The oldest of the eight is where the next one will go.
        let (first, _) = self.ring[self.pos];
        let span = now.saturating_duration_since(first);
        if span < MIN_TRAIN_SPAN {
            return;
        }
        let after_first: u64 = (1..TRAIN_LEN)
            .map(|k| u64::from(self.ring[(self.pos + k) % TRAIN_LEN].1))
            .sum();
        let bps = after_first as f64 * 8.0 / span.as_secs_f64();
        self.max_bps = self.max_bps.max(bps);
    }

    /// The rate for a FEEDBACK (kb/s, 0: none), and a fresh start.
    fn take_kbps(&mut self) -> u64 {
        let k = (self.max_bps / 1000.0) as u64;
        self.max_bps = 0.0;
        k
    }
}

#[derive(Debug, Default)]
pub(crate) struct FeedbackOut {
    pub(crate) enabled: bool,
    arrived_pkts: u32,
    arrived_bytes: u32,
    pub(crate) lost: u32,
    seq: u32,
    /// Newest DATA/LDATA packet: (buffer, packet, arrival).
    newest: Option<(u32, u16, Instant)>,
    /// Arrivals since the last FEEDBACK.
    pending: u32,
    last_sent: Option<Instant>,
    train: TrainMeter,
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
        self.newest = Some((buffer, packet, now));
        self.pending = self.pending.saturating_add(1);
        self.train.on_arrival(now, buffer, packet, bytes);
    }

    /// Packets found missing.
    pub(crate) fn on_lost(&mut self, n: u32) {
        self.lost = self.lost.wrapping_add(n);
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
            train_kbps: self.train.take_kbps(),
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

    fn at_us(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    /// Eight consecutive 1400-byte packets 112 us apart (100 Mb/s of
    /// data): the run's rate; batches and broken runs give none.
    #[test]
    fn a_run_of_back_to_back_packets_gives_the_paths_rate() {
        let mut t = TrainMeter::default();
        for p in 0..8u16 {
            t.on_arrival(at_us(1_000 + u64::from(p) * 112), 5, p + 10, 1400);
        }
        let k = t.take_kbps();
        assert!((99_000..=101_000).contains(&k), "{k} kb/s");
        assert_eq!(t.take_kbps(), 0, "taken once");
        // Eight in one batch (the same instant): too short to measure.
        for p in 0..8u16 {
            t.on_arrival(at_us(5_000), 6, p + 1, 1400);
        }
        assert_eq!(t.take_kbps(), 0);
        // A gap in the numbers (a lost packet) starts a new run.
        for (i, p) in [1u16, 2, 3, 5, 6, 7, 8, 9].into_iter().enumerate() {
            t.on_arrival(at_us(9_000 + i as u64 * 112), 7, p, 1400);
        }
        assert_eq!(t.take_kbps(), 0);
    }
}
