//! Transfer parameters, their negotiation, and engine configuration.
//!
//! RFC 998 §4: "The client initiating the connection (the active end) proposes
//! and sends a set of values for each parameter in its connection request. The
//! other client (the passive end) compares these values with the
//! highest-performance values it can support. The passive end can then modify
//! any of the parameters, but only by making them more restrictive."
//!
//! "More restrictive" is not defined per parameter (notes §Z10). We decide:
//! smaller packet size, buffer size, burst size and outstanding-buffer count;
//! a *larger* burst interval; and the data checksum may only be switched on
//! (more checking is the conservative direction). See docs/decisions.md.

use crate::time::Duration;
use netblt_wire::DATA_HEADER_LEN;

/// Largest data segment: the 16-bit "DATA packet size" field carries the
/// whole DATA packet (header + data, decision Z3).
pub const MAX_PACKET_SIZE: u16 = (u16::MAX as usize - DATA_HEADER_LEN) as u16;
/// Packet numbers are 16 bits and per buffer (decision Z5), so a buffer holds
/// at most this many packets.
pub const MAX_PACKETS_PER_BUFFER: u32 = 1 << 16;
/// How far below a wanted rate [`TransferParams::burst_for_rate`]'s
/// whole-packet burst per whole milliseconds (RFC 998's burst fields) may
/// fall: the shortest interval within 1 % keeps bursts short for a pacer
/// that releases a burst at once, as RFC 998 describes.
pub const BURST_RATE_TOLERANCE: f64 = 0.01;
/// The same for a rate the application gave
/// ([`TransferParams::burst_for_rate_exact`]). A user's rate passed through
/// several 1 % roundings (the offer, the path's packet size, a probe's
/// refit) and lost them all: `--rate 200M` became 196 Mb/s. At 0.1 % the
/// interval is often longer (200 Mb/s of 1400-byte packets: 125 per 7 ms
/// instead of 71 per 4 ms); with a [`Config::pacing_quantum`] (the tool's
/// default) the pacer spreads a burst in groups of that many packets, so
/// the packets do not leave closer together.
pub const EXACT_RATE_TOLERANCE: f64 = 0.001;

/// The parameters NETBLT negotiates in OPEN/RESPONSE (RFC 998 §4, §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferParams {
    /// Data bytes carried by each DATA packet (RFC 1030's PSZ). On the wire the
    /// OPEN field holds `packet_size + 24`, the whole DATA packet.
    pub packet_size: u16,
    /// Bytes per buffer (all buffers but the last).
    pub buffer_size: u32,
    /// DATA packets per burst.
    pub burst_size: u16,
    /// Milliseconds from the start of one burst to the start of the next
    /// (RFC 998 calls it "burst rate").
    pub burst_interval_ms: u16,
    /// Maximum number of outstanding buffers.
    pub max_buffers: u16,
    /// Checksum DATA packet data (the C flag).
    pub checksum_data: bool,
}

impl Default for TransferParams {
    /// Suited to a modern LAN over UDP: 1400-byte segments fit a 1500-byte MTU
    /// with IP/UDP/NETBLT headers, 1 MiB buffers, 8 outstanding, and a burst of
    /// 64 packets per millisecond (about 717 Mb/s of data).
    fn default() -> Self {
        TransferParams {
            packet_size: 1400,
            buffer_size: 1 << 20,
            burst_size: 64,
            burst_interval_ms: 1,
            max_buffers: 8,
            checksum_data: true,
        }
    }
}

/// Why a set of parameters cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// The packet size is 0 or larger than [`MAX_PACKET_SIZE`].
    #[error("packet size must be between 1 and {MAX_PACKET_SIZE} bytes")]
    PacketSize,
    /// The buffer size is 0 or holds more than [`MAX_PACKETS_PER_BUFFER`] packets.
    #[error("buffer size must be at least 1 byte and hold at most 65536 packets (small packets need a smaller buffer)")]
    BufferSize,
    /// The burst size is 0.
    #[error("burst size must be at least 1 packet")]
    BurstSize,
    /// The burst interval is 0 ms.
    #[error("burst interval must be at least 1 ms")]
    BurstInterval,
    /// No buffer may be outstanding.
    #[error("at least one outstanding buffer is needed")]
    Buffers,
    /// A RESPONSE loosened the named parameter (RFC 998 §4 allows only
    /// "more restrictive").
    #[error("the passive end made {0} less restrictive than offered")]
    LessRestrictive(&'static str),
}

impl TransferParams {
    /// Checks the values a connection can run with.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.packet_size == 0 || self.packet_size > MAX_PACKET_SIZE {
            return Err(ParamError::PacketSize);
        }
        if self.buffer_size == 0 || self.packets_per_buffer() > MAX_PACKETS_PER_BUFFER {
            return Err(ParamError::BufferSize);
        }
        if self.burst_size == 0 {
            return Err(ParamError::BurstSize);
        }
        if self.burst_interval_ms == 0 {
            return Err(ParamError::BurstInterval);
        }
        if self.max_buffers == 0 {
            return Err(ParamError::Buffers);
        }
        Ok(())
    }

    /// Packets in a full buffer.
    pub fn packets_per_buffer(&self) -> u32 {
        let psz = u32::from(self.packet_size.max(1));
        self.buffer_size.div_ceil(psz)
    }

    /// The passive end's answer to an offer: every value made at least as
    /// restrictive as both the offer and this end's own limits (`self`).
    pub fn restrict(&self, offer: &TransferParams) -> TransferParams {
        TransferParams {
            packet_size: offer.packet_size.min(self.packet_size),
            buffer_size: offer.buffer_size.min(self.buffer_size),
            burst_size: offer.burst_size.min(self.burst_size),
            burst_interval_ms: offer.burst_interval_ms.max(self.burst_interval_ms),
            max_buffers: offer.max_buffers.min(self.max_buffers),
            checksum_data: offer.checksum_data || self.checksum_data,
        }
    }

    /// Checks that `answer` (a RESPONSE) is no less restrictive than `self`
    /// (the OPEN we sent), as RFC 998 §4 requires of the passive end.
    pub fn check_answer(&self, answer: &TransferParams) -> Result<(), ParamError> {
        use ParamError::LessRestrictive as L;
        if answer.packet_size > self.packet_size {
            return Err(L("the packet size"));
        }
        if answer.buffer_size > self.buffer_size {
            return Err(L("the buffer size"));
        }
        if answer.burst_size > self.burst_size {
            return Err(L("the burst size"));
        }
        if answer.burst_interval_ms < self.burst_interval_ms {
            return Err(L("the burst interval"));
        }
        if answer.max_buffers > self.max_buffers {
            return Err(L("the number of outstanding buffers"));
        }
        if self.checksum_data && !answer.checksum_data {
            return Err(L("the data checksum"));
        }
        answer.validate()
    }

    /// Nominal data rate in bits per second (data bytes only).
    pub fn rate_bps(&self) -> f64 {
        Self::burst_rate_bps((self.burst_size, self.burst_interval_ms), self.packet_size)
    }

    /// The data rate of a burst of `size` packets of `packet_size` bytes
    /// every `interval_ms`, in bits per second (the inverse of
    /// [`burst_for_rate`](Self::burst_for_rate)).
    pub fn burst_rate_bps((size, interval_ms): (u16, u16), packet_size: u16) -> f64 {
        f64::from(size) * f64::from(packet_size) * 8000.0 / f64::from(interval_ms.max(1))
    }

    /// The burst of packets of `packet_size` bytes that comes closest to
    /// `bps` without passing it, no larger than `max_size` and no shorter
    /// than `min_interval_ms` (each field at least as restrictive as a
    /// burst already agreed, RFC 998 §4), within [`EXACT_RATE_TOLERANCE`]
    /// when it can. Used when a path probe (R58) made packets larger than
    /// those the agreed burst was sized for: only this project's senders
    /// probe, and they spread a burst ([`Config::pacing_quantum`]).
    pub fn burst_within(
        bps: f64,
        packet_size: u16,
        max_size: u16,
        min_interval_ms: u16,
    ) -> (u16, u16) {
        let per_ms = bps / (f64::from(packet_size.max(1)) * 8.0) / 1000.0;
        let mut best = (1, min_interval_ms.max(1), 0.0);
        if !(per_ms > 0.0 && per_ms.is_finite()) {
            return (best.0, best.1);
        }
        for interval in min_interval_ms.max(1)..=min_interval_ms.max(1).saturating_add(999) {
            let size = (per_ms * f64::from(interval))
                .floor()
                .min(f64::from(max_size.max(1)));
            let rate = size / f64::from(interval);
            if size >= 1.0 && rate > best.2 + 1e-12 {
                best = (size as u16, interval, rate);
            }
            if best.2 >= (1.0 - EXACT_RATE_TOLERANCE) * per_ms {
                break;
            }
        }
        (best.0, best.1)
    }

    /// Burst size and interval giving `bps` bits of data per second with
    /// packets of `packet_size` bytes, never more: the shortest interval
    /// (from 1 ms) whose whole-packet burst comes within
    /// [`BURST_RATE_TOLERANCE`] of the rate, else the closest below it found
    /// up to 1 s. Rounding a burst *up* would overrun the link the user asked
    /// us to respect (18.9 Mb/s became 23.2 Mb/s and lost a quarter of its
    /// packets on a 20 Mb/s path).
    pub fn burst_for_rate(bps: u64, packet_size: u16) -> (u16, u16) {
        Self::burst_for_rate_within(bps, packet_size, BURST_RATE_TOLERANCE)
    }

    /// [`burst_for_rate`](Self::burst_for_rate) for a rate the application
    /// gave: within [`EXACT_RATE_TOLERANCE`] of it, for a pacer that spreads
    /// each burst ([`Config::pacing_quantum`]).
    pub fn burst_for_rate_exact(bps: u64, packet_size: u16) -> (u16, u16) {
        Self::burst_for_rate_within(bps, packet_size, EXACT_RATE_TOLERANCE)
    }

    /// The whole-packet bursts at or below `bps` with packets of
    /// `packet_size` bytes, one per interval from 1 ms to 1 s, shortest
    /// interval first (intervals too short for one packet left out), up to
    /// the burst size RFC 998's 16-bit field holds. The candidates
    /// [`burst_for_rate`](Self::burst_for_rate) chooses among.
    pub fn bursts_below(bps: u64, packet_size: u16) -> impl Iterator<Item = (u16, u16)> {
        let per_ms = bps as f64 / (f64::from(packet_size.max(1)) * 8.0) / 1000.0;
        let usable = per_ms > 0.0 && per_ms.is_finite();
        (1..=1000u16)
            .filter(move |_| usable)
            .map(move |interval| ((per_ms * f64::from(interval)).floor(), interval))
            .take_while(|&(size, _)| size <= f64::from(u16::MAX))
            .filter(|&(size, _)| size >= 1.0)
            .map(|(size, interval)| (size as u16, interval))
    }

    fn burst_for_rate_within(bps: u64, packet_size: u16, tolerance: f64) -> (u16, u16) {
        let bits_per_packet = f64::from(packet_size.max(1)) * 8.0;
        let per_ms = bps as f64 / bits_per_packet / 1000.0;
        if per_ms <= 0.0 || !per_ms.is_finite() {
            return (1, u16::MAX);
        }
        let mut best: Option<(f64, u16, u16)> = None;
        for (size, interval) in Self::bursts_below(bps, packet_size) {
            let shortfall = 1.0 - f64::from(size) / f64::from(interval) / per_ms;
            if best.is_none_or(|(e, _, _)| shortfall < e - 1e-12) {
                best = Some((shortfall, size, interval));
            }
            if shortfall <= tolerance {
                break;
            }
        }
        match best {
            Some((_, size, interval)) => (size, interval),
            // Slower than one packet per second: one packet per interval,
            // the interval rounded up so the rate stays below the target.
            None => (
                1,
                (1.0 / per_ms).ceil().clamp(1.0, f64::from(u16::MAX)) as u16,
            ),
        }
    }
}

/// How the pacer places bursts in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacingClock {
    /// Bursts start on a virtual schedule (t0, t0 + I, t0 + 2I, ...): a burst
    /// that starts late does not delay the ones after it, so a driver's late
    /// wake-ups never turn into rate error. The default for real networks.
    #[default]
    Virtual,
    /// RFC 1030 §3's definition taken literally, "the number of milliseconds
    /// from the start of one burst transmission to the start of the next": a
    /// burst that starts late pushes back every later burst. This is how the
    /// 1987 PC/AT implementation behaved; the simulator's historical profiles
    /// use it.
    FromActualStart,
}

/// How the data receiver sets its data timers (RFC 998 §5.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataTimerPolicy {
    /// The engine's own timers: RFC 998's loose and tight timers, with the
    /// time per packet taken from the observed inter-packet arrival (RFC 1030
    /// §7: "an adaptive data timer value calculation algorithm"), the tight
    /// timer refreshed on every arrival, a variance term of two burst
    /// intervals and four mean deviations, and backoff. The default.
    #[default]
    Adaptive,
    /// RFC 998 §5.2.2 taken literally, as for the 1987 implementation's
    /// measurements: a timer's value is "the amount of time taken to transfer
    /// a buffer (as determined by the number of DATA packet bursts in the
    /// buffer times the burst rate) plus a variance factor"; the loose timer
    /// is set when the buffer's GO or RESEND is acknowledged and covers the
    /// packets of lower-numbered buffers still expected; the tight timer is
    /// set once, when the buffer's first DATA packet arrives (and then for
    /// lower-numbered buffers still in ACKED), not on later arrivals; on
    /// expiry the receiver "sends a RESEND message requesting all missing
    /// DATA packets in the buffer". No backoff, no round-trip term ("Data
    /// timer values are not based on network round-trip transit time").
    Rfc998 {
        /// The "variance factor". RFC 998 gives no value (note <1>: "the
        /// variance value need not be very big. This expectation will be
        /// explored in further testing").
        variance: Duration,
    },
}

/// Engine configuration. Defaults are documented per field.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// As the active end: what we offer. As the passive end: the least
    /// restrictive values we accept.
    pub params: TransferParams,
    /// Our death-timer value, sent to the peer in OPEN/RESPONSE (whole
    /// seconds on the wire). Default 30 s.
    pub death_timeout: Duration,
    /// First OPEN retransmission interval; doubles each time. Default 1 s.
    pub open_retry: Duration,
    /// OPEN packets sent before giving up. Default 8.
    pub open_attempts: u32,
    /// Copies of the first OPEN sent back to back (R32). On a lossy path
    /// a lost OPEN or RESPONSE costs the whole first `open_retry` (1 s);
    /// with two copies the passive end answers each, so at 5 % loss each
    /// way about 1 start in 100 waits instead of 1 in 10. Later OPENs go
    /// once. Default 1 (RFC 998 §5.1's one OPEN per timer); the tool
    /// sends 2.
    pub open_copies: u8,
    /// A path probe (decision R58): the data size of the DATA packets the
    /// active end would rather have than `params.packet_size`, if the path
    /// carries them. With two or more `open_copies` it sends one copy of
    /// its first OPEN more, first, padded (its client string area, with
    /// NULs) to the size of a whole DATA packet of this many data bytes,
    /// and sets the OPEN's P flag; a passive end whose connection began with that padded copy
    /// may answer with this size instead of the offered one (in READ mode
    /// too: the reverse direction is taken to carry what this one did).
    /// Default `None`; the tool sets it to what fits the first hop's MTU
    /// when that is more than it offers (1428 bytes sealed and 1448 plain
    /// with IPv4 at 1500 bytes, 8928 at 9000, 16000 on loopback).
    pub path_probe: Option<u16>,
    /// A data receiver takes the transfer size from OPEN (RFC 998 §3:
    /// informational) as a hint of how many packets each buffer holds, so
    /// that a lost LDATA of the last buffer costs about a packet's time
    /// instead of a full buffer's twice (R33). Packets are still judged by
    /// LDATA alone. Default false (the data timers of RFC 1030's
    /// implementation); the tool turns it on.
    pub size_hint: bool,
    /// Once every packet of the transfer has been sent once, a data sender
    /// sends a packet a RESEND asks for twice (R34): the path has nothing
    /// else to carry then, and at loss p a round of k resends needs another
    /// round with probability 1-(1-p^2)^k instead of 1-(1-p)^k, a round
    /// trip each (0.6 s at 600 ms). Only where the copy is likely to save
    /// that round, and within a budget of copies (R39). Default false
    /// (RFC 998's one copy); the tool turns it on.
    pub double_tail: bool,
    /// Control timer before any round trip has been measured. RFC 998 §5.2.1:
    /// "It can have as its initial value an arbitrary number." Default 1 s.
    pub initial_control_timeout: Duration,
    /// Floor and ceiling of the adaptive control timer. Defaults 2 ms and 60 s.
    pub min_control_timeout: Duration,
    /// Ceiling of the adaptive control timer (see `min_control_timeout`).
    pub max_control_timeout: Duration,
    /// Floor of the data timers' variance term. Default 2 ms.
    pub min_data_timer_margin: Duration,
    /// Packets released together within a burst. `None` releases the whole
    /// burst at once, as RFC 998 describes; a smaller quantum spreads each
    /// burst evenly over its interval (the negotiated burst size and interval,
    /// hence the rate, are unchanged). Default `None`.
    pub pacing_quantum: Option<u16>,
    /// See [`PacingClock`]. Default `Virtual`.
    pub pacing_clock: PacingClock,
    /// Receiver: received buffers waiting for the application before no new
    /// GO is issued (client-level flow control, RFC 998 §4). Default 8.
    pub receive_queue: usize,
    /// Receiver: hold the OK of the last buffer until the application calls
    /// [`Connection::confirm_last`](crate::Connection::confirm_last), so that
    /// the sender's success means the receiver checked the data end to end.
    /// Default false.
    pub confirm_last_buffer: bool,
    /// Active data sender: send a NULL-ACK as soon as the connection opens
    /// (RFC 998 §5.2.1: "If the sending NETBLT is not in a position to send
    /// data, it should send a NULL-ACK packet"; it waits for GO). Over an
    /// encrypted session that first sealed packet proves the sender's
    /// address to the passive end (decision R10). Default false, as the
    /// 1987 implementations the simulator reproduces behaved.
    pub open_null_ack: bool,
    /// Data sender: buffers to keep queued (taken from the application
    /// ahead of sending) at least; more when the sending rate times the
    /// time a buffer stays outstanding (first packet sent to OK) needs
    /// them, up to the negotiated count. RFC 1030 §8 asks for "dynamic
    /// selection and control of NETBLT's transmission parameters (burst
    /// size, burst interval, and number of outstanding buffers)"; a buffer
    /// with a lost packet stays outstanding two or three round trips, so a
    /// long lossy path needs many, a LAN few (decision R11). `None`: always
    /// the negotiated count, as RFC 998 and the 1987 implementations did.
    /// Default `None`.
    pub min_buffers: Option<u16>,
    /// Data receiver: GO at most this many buffers until the sender is
    /// heard after OPEN, then as many as negotiated. An encrypted passive
    /// end may send only three times what it received before the sender's
    /// address is proven: one 8-byte GO per buffer for 128 buffers does not
    /// fit beside the RESPONSE (decision R11). `None`: no such limit.
    /// Default `None`.
    pub initial_gos: Option<u16>,
    /// Largest datagram this end will send (control packets are split to fit).
    /// Default 1472 (a 1500-byte MTU less IPv4 and UDP headers).
    pub max_datagram: usize,
    /// Offer (active end) or accept (passive end) the FEEDBACK extension: the
    /// data receiver reports deliveries a few times per round trip, which
    /// rate control needs. Default false (plain RFC 998, as the simulator's
    /// reproductions of the 1987 measurements require).
    pub rate_feedback: bool,
    /// The data sender's rate control. Default `fixed` (RFC 998). Adaptive
    /// policies need `rate_feedback` negotiated by both ends; without it the
    /// sender keeps the fixed rate.
    pub rate: crate::rate::RateConfig,
    /// Receiver: how data timers are set. Default
    /// [`DataTimerPolicy::Adaptive`].
    pub data_timer: DataTimerPolicy,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            params: TransferParams::default(),
            death_timeout: Duration::from_secs(30),
            open_retry: Duration::from_secs(1),
            open_attempts: 8,
            open_copies: 1,
            path_probe: None,
            size_hint: false,
            double_tail: false,
            initial_control_timeout: Duration::from_secs(1),
            min_control_timeout: Duration::from_millis(2),
            max_control_timeout: Duration::from_secs(60),
            min_data_timer_margin: Duration::from_millis(2),
            pacing_quantum: None,
            pacing_clock: PacingClock::Virtual,
            receive_queue: 8,
            confirm_last_buffer: false,
            open_null_ack: false,
            min_buffers: None,
            initial_gos: None,
            max_datagram: 1472,
            rate_feedback: false,
            rate: crate::rate::RateConfig::default(),
            data_timer: DataTimerPolicy::Adaptive,
        }
    }
}

impl Config {
    /// The recovery a tool on a real path wants, beyond RFC 998's: two
    /// copies of the first OPEN (R32), the transfer size as a data-timer
    /// hint (R33) and the tail's resends doubled (R34, within the budget of
    /// R39). The tool and the simulator's `tool_recovery` flows both take
    /// it from here, so that what the simulator shows is what the tool does.
    pub fn with_tool_recovery(self) -> Self {
        Config {
            open_copies: 2,
            size_hint: true,
            double_tail: true,
            ..self
        }
    }

    /// Our death timer as sent on the wire: whole seconds, at least 1.
    pub fn death_timer_secs(&self) -> u16 {
        u16::try_from(self.death_timeout.as_secs().max(1)).unwrap_or(u16::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_within_an_agreed_one_keeps_its_rate_at_a_larger_packet_size() {
        // 48 Mb/s agreed as 17 packets of 1400 per 4 ms; packets of 16000.
        let agreed = TransferParams::burst_rate_bps((17, 4), 1400);
        let (size, interval) = TransferParams::burst_within(agreed, 16_000, 17, 4);
        let now = TransferParams::burst_rate_bps((size, interval), 16_000);
        assert!(size <= 17 && interval >= 4, "{size}/{interval}");
        assert!(now <= agreed && now > 0.99 * agreed, "{now} vs {agreed}");
        // The 10 Gb/s ceiling: 892 per 1 ms becomes 78 of 16000.
        let agreed = TransferParams::burst_rate_bps((892, 1), 1400);
        assert_eq!(
            TransferParams::burst_within(agreed, 16_000, 892, 1),
            (78, 1)
        );
        // Nonsense in, one packet out, never a panic.
        assert_eq!(TransferParams::burst_within(0.0, 1424, 8, 1), (1, 1));
        assert_eq!(TransferParams::burst_within(f64::NAN, 1424, 0, 0), (1, 1));
    }

    #[test]
    fn restrict_only_tightens() {
        let mine = TransferParams {
            packet_size: 1000,
            buffer_size: 50_000,
            burst_size: 10,
            burst_interval_ms: 20,
            max_buffers: 4,
            checksum_data: false,
        };
        let offer = TransferParams {
            packet_size: 1400,
            buffer_size: 20_000,
            burst_size: 5,
            burst_interval_ms: 10,
            max_buffers: 8,
            checksum_data: true,
        };
        let ans = mine.restrict(&offer);
        assert_eq!(ans.packet_size, 1000);
        assert_eq!(ans.buffer_size, 20_000);
        assert_eq!(ans.burst_size, 5);
        assert_eq!(ans.burst_interval_ms, 20);
        assert_eq!(ans.max_buffers, 4);
        assert!(ans.checksum_data);
        assert_eq!(offer.check_answer(&ans), Ok(()));
        let mut loose = ans;
        loose.burst_interval_ms = 5;
        assert!(offer.check_answer(&loose).is_err());
    }

    #[test]
    fn burst_for_rate() {
        let rate = TransferParams::burst_rate_bps;
        // 1 Gb/s with 1400-byte segments: 89 packets per ms.
        assert_eq!(TransferParams::burst_for_rate(1_000_000_000, 1400), (89, 1));
        // 18.9 Mb/s with 1448-byte segments: 13 packets per 8 ms, not the
        // 2 per ms (23.2 Mb/s) that rounding up gave.
        assert_eq!(TransferParams::burst_for_rate(18_900_000, 1448), (13, 8));
        for (bps, psz) in [
            (1_850_000u64, 1990u16),
            (1_544_000, 1400),
            (7_777_777, 512),
            (100_000, 1400),
        ] {
            let got = rate(TransferParams::burst_for_rate(bps, psz), psz);
            assert!(
                got <= bps as f64 && got >= bps as f64 * 0.99,
                "{bps} -> {got}"
            );
        }
        assert_eq!(TransferParams::burst_for_rate(8, 1400), (1, u16::MAX));
        assert_eq!(TransferParams::burst_for_rate(0, 1400), (1, u16::MAX));
    }

    #[test]
    fn a_users_rate_survives_the_offer_and_a_probes_refit() {
        // `--rate 200M` was offered at 1400-byte packets, re-rounded and
        // refitted to 16,000-byte packets by a probe: 196 Mb/s (F15 #10).
        let rate = TransferParams::burst_rate_bps;
        for bps in [
            200_000_000u64,
            100_000_000,
            95_000_000,
            18_900_000,
            1_234_567_890,
        ] {
            let offer = TransferParams::burst_for_rate_exact(bps, 1400);
            let offered = rate(offer, 1400);
            assert!(
                offered <= bps as f64 && offered >= bps as f64 * 0.999,
                "{bps} -> {offered}"
            );
            let refit = TransferParams::burst_within(offered, 16_000, offer.0, offer.1);
            let got = rate(refit, 16_000);
            assert!(
                got <= bps as f64 && got >= bps as f64 * 0.998,
                "{bps} -> {got}"
            );
        }
        // The plain rule keeps RFC 998's short bursts.
        assert_eq!(
            TransferParams::burst_for_rate_exact(200_000_000, 1400),
            (125, 7)
        );
        assert_eq!(TransferParams::burst_for_rate(200_000_000, 1400), (71, 4));
    }

    #[test]
    fn validate_rejects_zero_and_huge_buffers() {
        let mut p = TransferParams::default();
        assert!(p.validate().is_ok());
        p.buffer_size = 0;
        assert_eq!(p.validate(), Err(ParamError::BufferSize));
        p.buffer_size = u32::MAX;
        p.packet_size = 1;
        assert_eq!(p.validate(), Err(ParamError::BufferSize));
    }
}
