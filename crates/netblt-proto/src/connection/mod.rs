//! One NETBLT connection, either end, either direction.
//!
//! # Driving a connection
//!
//! A [`Connection`] never reads a clock and never touches a socket. The driver
//! (UDP I/O, simulator, emulator, tests) calls, with a monotonic `now`:
//!
//! 1. [`handle_datagram`](Connection::handle_datagram) for every datagram from
//!    the peer;
//! 2. [`handle_timeout`](Connection::handle_timeout) whenever `now` has reached
//!    [`poll_timeout`](Connection::poll_timeout) (spurious calls are harmless);
//! 3. [`poll_transmit`](Connection::poll_transmit) until it returns `None`,
//!    sending each datagram it writes;
//! 4. [`poll_event`](Connection::poll_event) until `None`, and the application
//!    calls ([`push_buffer`](Connection::push_buffer), [`recycle`](Connection::recycle), ...);
//! 5. then sleeps until [`poll_timeout`](Connection::poll_timeout) or the next
//!    datagram, and repeats.
//!
//! Calling `poll_timeout` before the returned instant is harmless; calling it
//! late delays the protocol (it never breaks it).

mod feedback;
mod fifo;
mod gather;
mod receiver;
mod sender;
mod transmit;

use std::collections::VecDeque;

use netblt_wire::{Mode, OpenRepr, Packet, Repr, DATA_HEADER_LEN};

use crate::config::{Config, TransferParams};
use crate::event::{ConnectionError, Event};
use crate::rate::RateLimits;
use crate::rtt::RttEstimator;
use crate::stats::Stats;
use crate::time::{Duration, Instant};
pub use gather::{Gathered, Payload};
use receiver::{DataOutcome, Receiver};
pub use sender::PushError;
use sender::Sender;

/// Which end opened the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Sent the OPEN.
    Active,
    /// Accepted an OPEN.
    Passive,
}

/// Which way data flows from this end's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends DATA, receives control messages.
    DataSender,
    /// Receives DATA, sends GO/OK/RESEND.
    DataReceiver,
}

/// Connection states, displayed with the names RFC 998 uses where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Active end: OPEN sent, no RESPONSE yet.
    Opening,
    /// Data transfer.
    Open,
    /// Data sender: every buffer OK'd; "dallies" (RFC 998 §5.3.1) to answer a
    /// retransmitted OK, until DONE or the dally timer.
    Dallying,
    /// We sent QUIT and wait for QUITACK (RFC 998 §5.3.2).
    Quitting,
    /// We answered a QUIT and dally to answer retransmissions.
    QuitAcked,
    /// Over (successfully or not).
    Closed,
}

impl core::fmt::Display for State {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            State::Opening => "OPENING",
            State::Open => "OPEN",
            State::Dallying => "DALLYING",
            State::Quitting => "QUITTING",
            State::QuitAcked => "QUITACK-DALLY",
            State::Closed => "CLOSED",
        })
    }
}

/// One-shot packets waiting to be sent.
#[derive(Debug, Default)]
struct Pending {
    open: bool,
    response: bool,
    quit: bool,
    quitack: bool,
    abort: Option<Vec<u8>>,
    done: bool,
    keepalive: bool,
}

#[derive(Debug, Default)]
struct Timers {
    open: Option<Instant>,
    control: Option<Instant>,
    dally: Option<Instant>,
    quit: Option<Instant>,
}

enum DataPart {
    None,
    Sender(Box<Sender>),
    Receiver(Box<Receiver>),
}

/// A NETBLT connection: see the module documentation for how to drive it.
pub struct Connection {
    config: Config,
    side: Side,
    mode: Mode,
    role: Role,
    state: State,
    uid: u32,
    local_port: u16,
    remote_port: u16,
    /// Offered (active end, before RESPONSE), then negotiated.
    params: TransferParams,
    transfer_size: u32,
    client: Vec<u8>,
    peer_death: Duration,
    open_attempts: u32,
    open_interval: Duration,
    /// Copies of the first OPEN still to send at once (`open_copies`).
    open_copies_left: u8,
    /// Active end: the packet size its padded first OPEN copy offers
    /// (`Config::path_probe`, R58); `None` if it sends no probe.
    probe: Option<u16>,
    /// The padded copy is still to be sent.
    probe_pending: bool,
    /// Passive end: OPENs repeated before our RESPONSE went out, each owed
    /// a RESPONSE of its own (a redundant copy must draw a redundant
    /// answer, or a lost RESPONSE still costs the active end its OPEN
    /// timer; R32). At most two.
    extra_responses: u8,
    pending: Pending,
    timers: Timers,
    last_rx: Instant,
    last_tx: Instant,
    rtt: RttEstimator,
    data: DataPart,
    events: VecDeque<Event>,
    stats: Stats,
    result: Option<Result<(), ConnectionError>>,
    quit_reason: Vec<u8>,
    /// The peer sent something other than OPEN: a passive end knows the
    /// active end has its RESPONSE (and, encrypted, its address is proven:
    /// every GO may go, R11); an active end has the RESPONSE itself.
    peer_confirmed: bool,
    /// The FEEDBACK extension: offered (active end, before RESPONSE), then
    /// negotiated.
    feedback: bool,
    /// The O flag negotiated: the data receiver's OKs offer its own burst
    /// values (its limit on the sender), not an echo (R31).
    offers: bool,
    /// Data sender: the receiver's DONE came before its last OK did
    /// (reordered, or the OK lost): that OK then ends the connection at
    /// once (decision R26).
    peer_done: bool,
    /// The application's rate limits (R27), kept for a sender not yet
    /// created (set before the connection opened).
    limits: Option<RateLimits>,
}

/// Control-timer expiries in a row, with nothing heard from the sender,
/// that end a complete receiver after its early DONE (R26). A live sender
/// answers every copy of the last OK; six silent expiries (the OK sent
/// seven times, the timer doubling: about 63 control timeouts, so this
/// matters only where that is shorter than the death timer: short round
/// trips) happen to a live one with probability (1 - (1 - p)^2)^6: 0.2 %
/// at 20 % loss each way. With four, the randomized robustness suite had
/// 75 more transfers in 20,000 end on a sender's death timer; with six, 1.
const FINAL_OK_TIMEOUTS: u32 = 6;

/// The wire value of "DATA packet size": the whole DATA packet (decision Z3).
fn wire_packet_size(psz: u16) -> u16 {
    psz.saturating_add(DATA_HEADER_LEN as u16)
}

fn params_from_open(o: &OpenRepr<'_>) -> TransferParams {
    TransferParams {
        packet_size: o.data_packet_size.saturating_sub(DATA_HEADER_LEN as u16),
        buffer_size: o.buffer_size,
        burst_size: o.burst_size,
        burst_interval_ms: o.burst_interval_ms,
        max_buffers: o.max_outstanding,
        checksum_data: o.checksum_data,
    }
}

/// The data size a padded OPEN with the P flag proves the path carries
/// (R58): its whole length is that of a DATA packet of this many data
/// bytes (rounded down to RFC 998 §8's multiple of 4). `None` for an OPEN
/// without the flag or the padding. It proves the active end's direction;
/// in READ mode the data comes back the other way, which is taken to carry
/// the same (an asymmetric MTU is rarer than a first hop wider than the
/// path, and without the probe the size came from the first hop alone).
fn probe_proves(o: &OpenRepr<'_>) -> Option<u16> {
    if !o.path_probe {
        return None;
    }
    let data = usize::from(o.padded_len).checked_sub(DATA_HEADER_LEN)? & !3;
    u16::try_from(data).ok().filter(|&d| d > 0)
}

/// After a path probe (R58) made the packets of `p` larger than the
/// `sized_for` bytes its burst was offered for, the same burst would be a
/// higher rate: the passive end, which raised the size, refits the burst
/// to keep the offered rate, each field only ever more restrictive (RFC
/// 998 §4), and its RESPONSE carries it; the active end takes it as is
/// (refitting it again as if it were for the offered size cut `--rate 20M`
/// to 1.7 Mb/s on loopback).
fn refit_burst(p: &mut TransferParams, sized_for: u16) {
    if p.packet_size <= sized_for {
        return;
    }
    let bps = TransferParams::burst_rate_bps((p.burst_size, p.burst_interval_ms), sized_for);
    (p.burst_size, p.burst_interval_ms) =
        TransferParams::burst_within(bps, p.packet_size, p.burst_size, p.burst_interval_ms);
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl Connection {
    /// Opens a connection as the active end (RFC 998 §5.1): an OPEN goes out
    /// on the first `poll_transmit`. In `Mode::Write` this end sends data.
    /// `uid` must differ between successive connections on the same ports
    /// (the driver draws it from its seeded or OS randomness).
    /// `transfer_size` is informational (RFC 998 §3); sizes of 2^32 bytes or
    /// more are sent as 0, "not given".
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        config: Config,
        mode: Mode,
        uid: u32,
        local_port: u16,
        remote_port: u16,
        transfer_size: Option<u64>,
        client: Vec<u8>,
        now: Instant,
    ) -> Result<Connection, crate::config::ParamError> {
        config.params.validate()?;
        let role = match mode {
            Mode::Write => Role::DataSender,
            Mode::Read => Role::DataReceiver,
        };
        let mut c = Connection::new(
            config,
            Side::Active,
            mode,
            role,
            uid,
            local_port,
            remote_port,
            now,
        );
        c.params = c.config.params;
        c.transfer_size = transfer_size
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or(0);
        c.client = client;
        c.feedback = c.config.rate_feedback;
        // Offered always: a data receiver's OKs carry its own offer (R31).
        c.offers = true;
        c.pending.open = true;
        c.open_attempts = 0;
        c.open_interval = c.config.open_retry;
        c.open_copies_left = c.config.open_copies.saturating_sub(1);
        // R58: only with a copy that goes unpadded (a path that drops the
        // padded one must not cost the OPEN's 1 s retry), and only for more
        // than is offered.
        c.probe = c.config.path_probe.filter(|&p| {
            c.open_copies_left > 0
                && p > c.params.packet_size
                && p <= crate::config::MAX_PACKET_SIZE
        });
        c.probe_pending = c.probe.is_some();
        if c.probe_pending {
            // The padded copy comes on top of R32's copies: a path that
            // drops it still gets two plain OPENs at once, and a lost OPEN
            // or RESPONSE costs the 1 s retry as rarely as without a probe.
            c.open_copies_left += 1;
        }
        Ok(c)
    }

    /// Accepts an OPEN as the passive end: negotiates (RFC 998 §4: "only by
    /// making them more restrictive") and answers with RESPONSE on the next
    /// `poll_transmit`. `client` is our client string for the RESPONSE.
    pub fn accept(
        config: Config,
        open: &OpenRepr<'_>,
        local_port: u16,
        remote_port: u16,
        client: Vec<u8>,
        now: Instant,
    ) -> Result<Connection, crate::config::ParamError> {
        let offer = params_from_open(open);
        offer.validate()?;
        let mut params = config.params.restrict(&offer);
        if let Some(proved) = probe_proves(open) {
            // R58: the connection began with the padded copy of an OPEN
            // that offers a path probe, so the path carried a DATA packet
            // of `proved` data bytes; take up to that instead of the offer.
            let offered = params.packet_size;
            params.packet_size = offered.max(proved.min(config.params.packet_size));
            refit_burst(&mut params, offered);
        }
        params.validate()?;
        // M is given from the active end's view (decision Z9): WRITE means the
        // active end sends, so the passive end receives.
        let role = match open.mode {
            Mode::Write => Role::DataReceiver,
            Mode::Read => Role::DataSender,
        };
        let mut c = Connection::new(
            config,
            Side::Passive,
            open.mode,
            role,
            open.uid,
            local_port,
            remote_port,
            now,
        );
        c.params = params;
        c.transfer_size = open.transfer_size;
        c.client = client;
        c.peer_death = Duration::from_secs(u64::from(open.death_timer_s.max(1)));
        c.feedback = c.config.rate_feedback && open.rate_feedback;
        c.offers = open.receiver_offers;
        c.pending.response = true;
        c.start_transfer(now, open.client.to_vec());
        Ok(c)
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        config: Config,
        side: Side,
        mode: Mode,
        role: Role,
        uid: u32,
        local_port: u16,
        remote_port: u16,
        now: Instant,
    ) -> Connection {
        let rtt = RttEstimator::new(
            config.initial_control_timeout,
            config.min_control_timeout,
            config.max_control_timeout,
        );
        let stats = Stats {
            started_at: Some(now),
            ..Stats::default()
        };
        Connection {
            params: config.params,
            config,
            side,
            mode,
            role,
            state: State::Opening,
            uid,
            local_port,
            remote_port,
            transfer_size: 0,
            client: Vec::new(),
            peer_death: Duration::from_secs(30),
            open_attempts: 0,
            open_interval: Duration::from_secs(1),
            open_copies_left: 0,
            probe: None,
            probe_pending: false,
            extra_responses: 0,
            pending: Pending::default(),
            timers: Timers::default(),
            last_rx: now,
            last_tx: now,
            rtt,
            data: DataPart::None,
            events: VecDeque::new(),
            stats,
            result: None,
            quit_reason: Vec::new(),
            peer_confirmed: false,
            peer_done: false,
            feedback: false,
            offers: false,
            limits: None,
        }
    }

    fn start_transfer(&mut self, now: Instant, peer_client: Vec<u8>) {
        self.state = State::Open;
        self.last_rx = now;
        self.timers.open = None;
        self.data = match self.role {
            Role::DataSender => {
                let mut s = Sender::new(self.params, &self.config.params, &self.config);
                if self.feedback {
                    s.enable_rate_control(&self.config, self.uid);
                }
                s.receiver_offers = self.offers;
                if let Some(l) = self.limits {
                    s.set_limits(l);
                }
                // RFC 998 §5.2.1: "If the sending NETBLT is not in a position
                // to send data, it should send a NULL-ACK packet". An active
                // sender waits for GO after the RESPONSE: it says so at once
                // when configured to. Over an encrypted session this first
                // sealed packet also proves its address to the passive end,
                // whose first GOs (8 bytes per buffer) were held by the 3x
                // amplification limit until then: with 60 or more buffers,
                // 3.5 s (R10).
                if self.side == Side::Active && self.config.open_null_ack {
                    s.null_ack_pending = true;
                    // Redundant like the first OPEN (R32): over encryption
                    // it is what validates our address for the passive
                    // end's first GOs, so losing it costs a control timer.
                    s.null_ack_copies = self.config.open_copies.saturating_sub(1);
                }
                DataPart::Sender(Box::new(s))
            }
            Role::DataReceiver => {
                let mut r = Receiver::new(self.params, &self.config);
                r.feedback.enabled = self.feedback;
                r.offers = self.offers;
                if self.config.size_hint {
                    r.set_size_hint(self.transfer_size);
                }
                if let Some(l) = self.limits {
                    r.set_cap(l.max_bps);
                }
                DataPart::Receiver(Box::new(r))
            }
        };
        self.events.push_back(Event::Connected {
            params: self.params,
            peer_client,
            transfer_size: self.transfer_size,
        });
    }

    // ----- getters -------------------------------------------------------

    /// The connection's state (RFC 998's names where it has them).
    pub fn state(&self) -> State {
        self.state
    }
    /// Which end opened the connection.
    pub fn side(&self) -> Side {
        self.side
    }
    /// Which way data flows from this end.
    pub fn role(&self) -> Role {
        self.role
    }
    /// The OPEN's M flag: READ or WRITE, from the active end's view.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// The connection unique ID from the OPEN.
    pub fn uid(&self) -> u32 {
        self.uid
    }
    /// This end's NETBLT port.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }
    /// The peer's NETBLT port.
    pub fn remote_port(&self) -> u16 {
        self.remote_port
    }
    /// Offered parameters before the connection opens, negotiated after.
    pub fn params(&self) -> &TransferParams {
        &self.params
    }
    /// The burst values in force now (renegotiated after each buffer).
    pub fn current_rate(&self) -> (u16, u16) {
        match &self.data {
            DataPart::Sender(s) => (s.params.burst_size, s.params.burst_interval_ms),
            _ => (self.params.burst_size, self.params.burst_interval_ms),
        }
    }
    /// Whether the FEEDBACK extension was negotiated (the F flag in both
    /// OPEN and RESPONSE).
    pub fn rate_feedback(&self) -> bool {
        self.feedback
    }
    /// The data sender's rate controller, when rate control is on: the
    /// current rate, the path estimates and why the rate is what it is.
    pub fn rate_state(&self) -> Option<crate::rate::RateState> {
        match &self.data {
            DataPart::Sender(s) => s.rate_state(),
            _ => None,
        }
    }
    /// The counters so far, with the smoothed round trip: the control
    /// messages' at the data receiver, the data's (FEEDBACK echoes) at a
    /// data sender, which has no control round trip to measure.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.srtt = self.rtt.srtt().or(match &self.data {
            DataPart::Sender(d) => d.data_srtt(),
            _ => None,
        });
        s
    }
    /// The peer's death-timer value (from OPEN or RESPONSE).
    pub fn peer_death_timeout(&self) -> Duration {
        self.peer_death
    }
    /// This end's death-timer value (sent to the peer in OPEN/RESPONSE).
    pub fn death_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.config.death_timer_secs()))
    }
    /// The connection is over; nothing more will be sent.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    /// `Some(Ok)` once the transfer succeeded, `Some(Err)` once it failed.
    pub fn result(&self) -> Option<&Result<(), ConnectionError>> {
        self.result.as_ref()
    }
    /// The largest datagram this connection writes; `poll_transmit`'s buffer
    /// must be at least this long.
    pub fn max_datagram_size(&self) -> usize {
        let psz = self.params.packet_size.max(self.probe.unwrap_or(0));
        netblt_wire::round_up4(DATA_HEADER_LEN + usize::from(psz))
            .max(self.config.max_datagram)
            .max(netblt_wire::OPEN_FIXED_LEN + netblt_wire::round_up4(self.client.len() + 1))
    }

    // ----- application calls ---------------------------------------------

    /// Data sender: can a buffer be handed over now?
    pub fn wants_buffer(&self) -> bool {
        matches!(&self.data, DataPart::Sender(s) if s.wants_buffer()) && self.state == State::Open
    }

    /// Data sender: hands over the next buffer. Every buffer but the last
    /// must hold exactly the negotiated buffer size.
    pub fn push_buffer(&mut self, data: Vec<u8>, last: bool) -> Result<(), PushError> {
        match (&mut self.data, self.state) {
            (DataPart::Sender(s), State::Open) => {
                s.push(data, last)?;
                let held = s.buffers_held() as u64;
                self.stats.peak_buffers = self.stats.peak_buffers.max(held);
                Ok(())
            }
            _ => Err(PushError::NotSending),
        }
    }

    /// Data sender: limits the rate from now on, e.g. when the user turns a
    /// knob during a long transfer (decision R27). `limits.max_bps` holds
    /// the pacing rate under itself, `limits.min_bps` is the adaptive
    /// policies' floor; neither goes above the rate negotiated at OPEN
    /// (RFC 998 §4 lets the sender make the parameters "more restrictive",
    /// never less). Under RFC 998's fixed rate a cap below the negotiated
    /// rate is the rate, and the NULL-ACK tells the receiver. Set before
    /// the connection opens, the limits apply from its first packet.
    ///
    /// Data receiver (R31): `limits.max_bps` goes to the sender in the burst
    /// values of each OK (RFC 998 §4), when the peer negotiated the O flag
    /// (this engine always does; a plain RFC 998 sender gets echoes and is
    /// not limited); it takes effect a buffer and half a round trip later.
    /// `min_bps` is ignored.
    pub fn set_rate_limits(&mut self, limits: RateLimits) {
        self.limits = Some(limits);
        match &mut self.data {
            DataPart::Sender(s) => s.set_limits(limits),
            // RFC 998 §4: "The receiving end sends burst size and burst rate
            // values in its OK messages" (R31); the minimum is the sender's
            // business.
            DataPart::Receiver(r) => r.set_cap(limits.max_bps),
            _ => {}
        }
    }

    /// The limits last given to [`set_rate_limits`](Self::set_rate_limits).
    pub fn rate_limits(&self) -> Option<RateLimits> {
        self.limits
    }

    /// Data receiver: gives storage back for reuse (optional).
    pub fn recycle(&mut self, storage: Vec<u8>) {
        if let DataPart::Receiver(r) = &mut self.data {
            r.recycle(storage);
        }
    }

    /// Data receiver with `confirm_last_buffer`: the application checked the
    /// whole transfer. `Ok` lets the last OK go; `Err(reason)` aborts.
    pub fn confirm_last(&mut self, now: Instant, verdict: Result<(), String>) {
        match verdict {
            Ok(()) => {
                if let DataPart::Receiver(r) = &mut self.data {
                    r.confirm_last();
                    r.progress(&mut self.stats, |_, _, _| {});
                }
                self.check_receiver_done(now);
            }
            Err(reason) => self.abort(now, &reason),
        }
    }

    /// Client QUIT (RFC 998 §5.3.2): "the QUIT transmission can only occur
    /// between buffer transmissions". Retransmitted until QUITACK or the
    /// death timer.
    pub fn quit(&mut self, now: Instant, reason: &str) {
        if matches!(self.state, State::Closed | State::Quitting) {
            return;
        }
        self.quit_reason = reason
            .as_bytes()
            .iter()
            .copied()
            .filter(|&b| b != 0)
            .collect();
        self.pending.quit = true;
        self.state = State::Quitting;
        self.timers = Timers::default();
        self.timers.quit = Some(now + self.control_timeout());
    }

    /// The peer's port answered "unreachable" (ICMP): nothing listens there
    /// any more. While this end dallies (RFC 998 §5.3.1: the sender has all
    /// its OKs; or it answered a QUIT) that is the peer's normal exit: a
    /// receiver closes only once all its control messages were
    /// acknowledged, and its DONE may have been lost (5 % loss each way at
    /// 600 ms failed one `bench` in six on the emulator with "the receiver
    /// went away" after the receiver had verified every byte). Then the
    /// connection closes with the result it already has, and this returns
    /// `true`. So is it for a receiver that has every byte and waits only
    /// for the acknowledgment of its last OKs: since R26 the sender may
    /// close on the DONE that went with them, and its NULL-ACK may be lost.
    /// In any other state it returns `false` and changes nothing: the
    /// driver reports the lost peer.
    pub fn peer_unreachable(&mut self, now: Instant) -> bool {
        match self.state {
            State::Dallying | State::QuitAcked => {
                let result = self.result.clone().unwrap_or(Ok(()));
                self.close(now, result);
                true
            }
            State::Open if self.receiver_complete() => {
                self.finish_complete_receiver(now);
                true
            }
            _ => false,
        }
    }

    /// The application is going away (Ctrl-C, a server stopping). A data
    /// receiver that has every byte, delivered and confirmed, and waits only
    /// for the acknowledgment of its last OKs ends as a success, with a
    /// DONE for a sender that may still dally (an ABORT would fail a
    /// transfer that is complete at both ends). Anything else is aborted
    /// with `reason`.
    pub fn stop(&mut self, now: Instant, reason: &str) {
        if self.state == State::Open && self.receiver_complete() {
            self.finish_complete_receiver(now);
        } else {
            self.abort(now, reason);
        }
    }

    /// A data receiver with every byte delivered (and confirmed) whose only
    /// outstanding control messages are its final OKs.
    fn receiver_complete(&self) -> bool {
        matches!(&self.data, DataPart::Receiver(r) if r.only_final_oks_unacknowledged())
    }

    /// Closes a complete receiver with success, as its death timer does
    /// when the last OKs go unacknowledged.
    fn finish_complete_receiver(&mut self, now: Instant) {
        if let DataPart::Receiver(r) = &mut self.data {
            r.finished = true;
        }
        self.pending.done = true;
        self.stats.completed_at = Some(now);
        self.events.push_back(Event::Finished);
        self.close(now, Ok(()));
    }

    /// NETBLT ABORT (RFC 998 §5.3.3): sent once, "the sender can immediately
    /// close its connection".
    pub fn abort(&mut self, now: Instant, reason: &str) {
        if self.state == State::Closed {
            return;
        }
        self.pending.abort = Some(
            reason
                .as_bytes()
                .iter()
                .copied()
                .filter(|&b| b != 0)
                .collect(),
        );
        self.close(
            now,
            Err(ConnectionError::LocalAbort {
                reason: reason.to_string(),
            }),
        );
    }

    /// The next event for the application, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        if let (Event::BufferReceived { .. }, DataPart::Receiver(r)) = (&e, &mut self.data) {
            r.undelivered = r.undelivered.saturating_sub(1);
            // The last buffer just reached the application.
            self.send_early_done();
        }
        Some(e)
    }

    // ----- input ---------------------------------------------------------

    /// Handles one datagram from the peer. Malformed datagrams are counted
    /// and dropped; nothing here panics on any input.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        self.count_received(datagram.len());
        match Packet::parse(datagram) {
            Ok(p) => self.handle_packet(now, &p),
            Err(e) => {
                self.stats.malformed += 1;
                tracing::trace!(error = %e, "malformed datagram dropped");
            }
        }
    }

    /// Counts a datagram of `len` bytes that arrived for this connection.
    pub(crate) fn count_received(&mut self, len: usize) {
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += len as u64;
    }

    /// Handles an already parsed packet (the endpoint parses to demultiplex).
    pub fn handle_packet(&mut self, now: Instant, p: &Packet<'_>) {
        // RFC 998 §8: Local Port is the sender's, Foreign Port the receiver's
        // (decision Z19).
        if p.local_port != self.remote_port || p.foreign_port != self.local_port {
            self.stats.unexpected += 1;
            return;
        }
        if self.state == State::Closed {
            return;
        }
        // RFC 998 §5.2.3: the death timer "is reset every time a packet is
        // received".
        self.last_rx = now;
        tracing::trace!(%now, side = ?self.side, packet = %p, "received");
        if !matches!(p.repr, Repr::Open(_)) {
            self.peer_confirmed = true;
        }
        match &p.repr {
            Repr::Open(o) => self.on_open(o),
            Repr::Response(r) => self.on_response(now, r),
            Repr::Refused { reason } if self.state == State::Opening => self.close(
                now,
                Err(ConnectionError::Refused {
                    reason: lossy(reason),
                }),
            ),
            Repr::Keepalive => {}
            Repr::Quit { reason } => self.on_quit(now, reason),
            Repr::QuitAck if self.state == State::Quitting => {
                let reason = lossy(&self.quit_reason);
                self.pending.quit = false;
                self.close(now, Err(ConnectionError::LocalQuit { reason }));
            }
            Repr::Abort { reason } => self.close(
                now,
                Err(ConnectionError::PeerAborted {
                    reason: lossy(reason),
                }),
            ),
            Repr::Data(d) | Repr::LData(d) => {
                let ldata = matches!(p.repr, Repr::LData(_));
                self.on_data(now, ldata, d);
            }
            Repr::NullAck(n) => {
                self.on_null_ack(now, n.high_ack, n.burst_size, n.burst_interval_ms)
            }
            Repr::Control(c) => self.on_control(now, c),
            Repr::Feedback(f) => match &mut self.data {
                DataPart::Sender(s) if self.feedback => s.on_feedback(now, f),
                _ => self.stats.unexpected += 1,
            },
            // RFC 998 §5.3.1: "When the sender receives a DONE packet, it is
            // allowed to clear its dally timer and close its half of the
            // connection immediately." One that comes before the last OK
            // (R26: the receiver sends it with that OK) is kept for it.
            Repr::Done => match (matches!(self.data, DataPart::Sender(_)), self.state) {
                (true, State::Dallying) => self.close(now, Ok(())),
                (true, State::Open) => self.peer_done = true,
                _ => self.stats.unexpected += 1,
            },
            _ => self.stats.unexpected += 1,
        }
    }

    fn on_open(&mut self, o: &OpenRepr<'_>) {
        if self.side != Side::Passive {
            self.stats.unexpected += 1;
        } else if o.uid == self.uid {
            // RFC 998 §5.1: "If it is an OPEN packet, the passive NETBLT sends
            // another RESPONSE (assuming that a previous RESPONSE packet was
            // sent and lost ...)".
            if self.pending.response {
                self.extra_responses = (self.extra_responses + 1).min(2);
            }
            self.pending.response = true;
        } else {
            // "A non-matching unique ID must be treated as an attempt to open
            // a second connection between the same port pair and is rejected
            // by sending an ABORT message." The endpoint sends that ABORT;
            // this connection carries on (decision Z20).
            self.stats.unexpected += 1;
        }
    }

    fn on_response(&mut self, now: Instant, r: &OpenRepr<'_>) {
        if self.side != Side::Active || r.uid != self.uid {
            self.stats.unexpected += 1;
            return;
        }
        if self.state != State::Opening {
            // "If it is a RESPONSE packet, it is treated as a duplicate and
            // ignored."
            return;
        }
        let answer = params_from_open(r);
        let mut offered = self.params;
        if let Some(p) = self.probe {
            // R58: our padded copy offered up to `p`; a passive end that
            // opened with it may answer with more than the plain offer.
            if answer.packet_size <= p {
                offered.packet_size = offered.packet_size.max(answer.packet_size);
            }
        }
        if let Err(e) = offered.check_answer(&answer) {
            let reason = e.to_string();
            self.pending.abort = Some(reason.clone().into_bytes());
            self.close(now, Err(ConnectionError::Negotiation { reason }));
            return;
        }
        // A packet size above the offer comes from a passive end that took
        // our probe (R58) and refitted the burst to it (`refit_burst`):
        // the answer's burst is for the answer's packets already.
        self.params = answer;
        self.feedback = self.feedback && r.rate_feedback;
        self.offers = self.offers && r.receiver_offers;
        // "each end transmits its death-timeout value in seconds in either the
        // OPEN or the RESPONSE packet": this is the passive end's own value.
        self.peer_death = Duration::from_secs(u64::from(r.death_timer_s.max(1)));
        self.start_transfer(now, r.client.to_vec());
    }

    fn on_quit(&mut self, now: Instant, reason: &[u8]) {
        // RFC 998 §5.3.2: "The NETBLT receiving the QUIT packet can take no
        // action other than immediately notifying its client and transmitting
        // a QUITACK packet. ... The sender of the QUITACK dallies before
        // quitting, so that it can respond to a retransmitted QUIT."
        self.pending.quitack = true;
        if self.state != State::QuitAcked {
            let reason = lossy(reason);
            self.events.push_back(Event::PeerQuit {
                reason: reason.clone(),
            });
            self.state = State::QuitAcked;
            self.timers = Timers::default();
            self.timers.dally = Some(now + self.dally_time());
            self.result = Some(Err(ConnectionError::PeerQuit { reason }));
        }
    }

    fn on_data(&mut self, now: Instant, ldata: bool, d: &netblt_wire::DataRepr<'_>) {
        let DataPart::Receiver(r) = &mut self.data else {
            self.stats.unexpected += 1;
            return;
        };
        if self.params.checksum_data && !d.data_checksum_ok() {
            self.stats.malformed += 1;
            return;
        }
        r.feedback.on_arrival(now, d.buffer, d.packet, d.data.len());
        // Every packet flowing back carries the high-acknowledged sequence
        // number; process it before the data (it may acknowledge this
        // buffer's GO or RESEND).
        Self::process_ack(r, &mut self.rtt, &mut self.timers, now, d.high_ack);
        match r.on_data(now, ldata, d, &mut self.stats) {
            DataOutcome::Accepted | DataOutcome::Duplicate => {}
            DataOutcome::Invalid => self.stats.unexpected += 1,
        }
        self.after_receiver_input(now);
    }

    fn on_null_ack(&mut self, now: Instant, high_ack: u16, burst_size: u16, interval: u16) {
        let DataPart::Receiver(r) = &mut self.data else {
            self.stats.unexpected += 1;
            return;
        };
        // "New Burst Size/Rate as negotiated": what the sender uses now; the
        // data timers estimate with it.
        r.set_rate(burst_size, interval);
        Self::process_ack(r, &mut self.rtt, &mut self.timers, now, high_ack);
        self.after_receiver_input(now);
    }

    fn process_ack(
        r: &mut Receiver,
        rtt: &mut RttEstimator,
        timers: &mut Timers,
        now: Instant,
        wire: u16,
    ) {
        let Some(ack) = r.fifo.expand_ack(wire) else {
            return;
        };
        let mut acked = Vec::new();
        let (all_acked, sample) = r.fifo.on_ack(ack, |m| acked.push(m.clone()));
        if let Some(sent) = sample {
            rtt.on_sample(now.saturating_duration_since(sent));
            // Reported in OK messages (RFC 998 §5.3.1); it changes only here.
            r.control_timer_ms = u16::try_from(rtt.base_timeout().as_millis()).unwrap_or(u16::MAX);
        }
        let srtt = rtt.srtt().unwrap_or(Duration::ZERO);
        r.srtt = srtt;
        for m in &acked {
            r.on_acked(now, m, srtt);
        }
        if all_acked || r.fifo.is_empty() {
            timers.control = None;
        }
    }

    fn after_receiver_input(&mut self, now: Instant) {
        let DataPart::Receiver(r) = &mut self.data else {
            return;
        };
        let events = &mut self.events;
        let mut delivered = 0;
        r.progress(&mut self.stats, |number, data, last| {
            delivered += 1;
            events.push_back(Event::BufferReceived { number, data, last });
        });
        r.undelivered += delivered;
        self.check_receiver_done(now);
    }

    /// Decision R26: DONE goes with the last OK, as soon as every byte is
    /// here and delivered, not a round trip later when the NULL-ACK for
    /// that OK arrives: the sender closes on it at once instead of dallying
    /// for the second DONE (`check_receiver_done`). RFC 998 §5.3.1 lets the
    /// receiver send DONE "when the receiver knows the transfer has been
    /// successfully completed"; this end keeps its OKs going until they are
    /// acknowledged, as before, so a sender that ignores an early DONE (an
    /// RFC 998 one dallies only after the OK) loses nothing.
    fn send_early_done(&mut self) {
        let DataPart::Receiver(r) = &mut self.data else {
            return;
        };
        if self.state == State::Open
            && !r.finished
            && !r.early_done
            && r.only_final_oks_unacknowledged()
        {
            r.early_done = true;
            self.pending.done = true;
        }
    }

    fn check_receiver_done(&mut self, now: Instant) {
        // RFC 998 §5.3.1: the receiver is done when "(1) it has received DATA
        // packets with a 'last-buffer' flag set, (2) all its control messages
        // have been acknowledged, and (3) it has no outstanding buffers with
        // missing packets." It then sends DONE to cut the sender's dally short.
        self.send_early_done();
        let DataPart::Receiver(r) = &mut self.data else {
            return;
        };
        if self.state == State::Open && r.is_done() && !r.finished {
            r.finished = true;
            self.pending.done = true;
            self.stats.completed_at = Some(now);
            self.events.push_back(Event::Finished);
            self.close(now, Ok(()));
        }
    }

    fn on_control(&mut self, now: Instant, c: &netblt_wire::ControlRepr<'_>) {
        let DataPart::Sender(s) = &mut self.data else {
            self.stats.unexpected += 1;
            return;
        };
        let events = &mut self.events;
        s.on_control(now, c.iter(), &mut self.stats, |number, storage| {
            events.push_back(Event::BufferAcked { number, storage });
        });
        let dallying = self.state == State::Dallying;
        if dallying {
            // A retransmitted OK: the NULL-ACK for the last OK was lost. Answer
            // it, and dally on: the receiver is still waiting for that answer.
            s.null_ack_pending = true;
        }
        if s.all_acked && self.state == State::Open {
            // RFC 998 §5.3.1: the sender "has received OK messages for all its
            // buffers. At that point, it 'dallies' for a predetermined period".
            self.stats.completed_at = Some(now);
            self.events.push_back(Event::Finished);
            self.result = Some(Ok(()));
            self.state = State::Dallying;
            self.timers.dally = Some(now + self.dally_time());
            if self.peer_done {
                // The NULL-ACK for this OK still goes (see `transmit`).
                self.close(now, Ok(()));
            }
        } else if dallying {
            self.timers.dally = Some(now + self.dally_time());
        }
    }

    /// RFC 998 §5.3.1: "The dally timer value MUST be based on the receiver's
    /// control timer value; it must be long enough to allow the receiver's
    /// control timer to expire so that the OK message can be re-sent." We
    /// dally eight of the receiver's control timer values, and at least a
    /// quarter of its death timer (its retransmissions are at most an eighth
    /// of that apart, so two of them fit), and start again whenever one
    /// arrives. A DONE ends the dally at once, so on a healthy path the dally
    /// costs one round trip.
    fn dally_time(&self) -> Duration {
        let ms = match &self.data {
            DataPart::Sender(s) if s.receiver_control_timer_ms > 0 => {
                u64::from(s.receiver_control_timer_ms)
            }
            _ => self.rtt.base_timeout().as_millis() as u64,
        };
        Duration::from_millis(8 * ms).max(self.peer_death / 4)
    }

    fn close(&mut self, now: Instant, result: Result<(), ConnectionError>) {
        if self.state == State::Closed {
            return;
        }
        if let Err(e) = &result {
            self.events.push_back(Event::Closed(e.clone()));
        }
        if self.result.is_none() || result.is_err() {
            self.result = Some(result);
        }
        self.stats.completed_at.get_or_insert(now);
        self.state = State::Closed;
        self.timers = Timers::default();
    }

    // ----- timers ----------------------------------------------------------

    /// The control timer to arm now: the backed-off estimate, but never so
    /// long that fewer than eight retransmissions fit in our death timer.
    /// RFC 998 §5.2.1: the receiver resends "until either the control timer
    /// is cleared or the receiving NETBLT's death timer ... expires".
    fn control_timeout(&self) -> Duration {
        self.rtt
            .timeout()
            .min(self.rtt.base_timeout().max(self.death_timeout() / 8))
    }

    fn keepalive_interval(&self) -> Duration {
        // RFC 998 §5.2.3: "several KEEPALIVE packets can be lost before the
        // other end's death timer expires (e.g. death timer value divided by
        // four)".
        self.peer_death / 4
    }

    /// Earliest instant at which `handle_timeout` has work, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut t = [
            self.timers.open,
            self.timers.control,
            self.timers.dally,
            self.timers.quit,
            None,
            None,
            None,
        ];
        if self.state != State::Opening {
            t[4] = Some(self.last_rx + self.death_timeout());
            t[5] = Some(self.last_tx + self.keepalive_interval());
        }
        t[6] = match &self.data {
            // A FEEDBACK goes out only while open: a pending one must not
            // keep the timer in the past after a QUIT (a busy loop).
            DataPart::Receiver(r) if self.state == State::Open => r.next_wakeup(),
            DataPart::Receiver(r) => r.next_timer(),
            DataPart::Sender(s) if self.state == State::Open => {
                s.next_data_time(self.last_tx.max(self.last_rx))
            }
            _ => None,
        };
        t.into_iter().flatten().min()
    }

    /// Handles every timer due at `now`. Spurious calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if self.timers.open.is_some_and(|t| t <= now) {
            if self.open_attempts >= self.config.open_attempts {
                let attempts = self.open_attempts;
                self.close(now, Err(ConnectionError::OpenTimeout { attempts }));
                return;
            }
            self.pending.open = true;
            self.timers.open = None;
        }
        if self.state != State::Opening && now >= self.last_rx + self.death_timeout() {
            // RFC 998 §5.2.3: "When a NETBLT's death timer expires, it can
            // assume the other end has died and can close the connection."
            let timeout = self.death_timeout();
            if self.receiver_complete() {
                // Every byte arrived and was delivered; only the sender's
                // acknowledgment of our last OKs is missing, so it most
                // likely finished and left. The data are complete.
                tracing::debug!("death timer with only final OKs unacknowledged: success");
                self.finish_complete_receiver(now);
                return;
            }
            self.close(now, Err(ConnectionError::DeathTimeout { timeout }));
            return;
        }
        if self.timers.dally.is_some_and(|t| t <= now) {
            let ok = self.state == State::Dallying;
            self.timers.dally = None;
            let result = if ok {
                Ok(())
            } else {
                self.result.clone().unwrap_or(Ok(()))
            };
            self.close(now, result);
            return;
        }
        if self.timers.quit.is_some_and(|t| t <= now) {
            self.rtt.on_timeout();
            self.timers.quit = Some(now + self.control_timeout());
            self.pending.quit = true;
        }
        if self.timers.control.is_some_and(|t| t <= now) {
            tracing::trace!(%now, "control timer expired");
            self.timers.control = None;
            self.rtt.on_timeout();
            // The RFC retransmits only OPEN, but a lost RESPONSE otherwise
            // waits for the active end's next OPEN: until the active end shows
            // it has the RESPONSE, we repeat it with our control packet.
            if self.side == Side::Passive && !self.peer_confirmed {
                self.pending.response = true;
            }
            if let DataPart::Receiver(r) = &mut self.data {
                r.fifo.on_timer();
                if r.early_done {
                    // Counted only while nothing is heard: anything from the
                    // sender since the last expiry starts the count again.
                    let heard = r.final_ok_expired_at.is_none_or(|t| self.last_rx > t);
                    r.final_ok_timeouts = if heard { 1 } else { r.final_ok_timeouts + 1 };
                    r.final_ok_expired_at = Some(now);
                }
            }
            // R26: a sender that closed on our DONE without acknowledging
            // the last OK (netblt before R26 did when the OK and the DONE
            // came in one read) answers no retransmission of it; a live one
            // (open, or dallying) answers each copy it gets. So after
            // `FINAL_OK_TIMEOUTS` expiries in a row with nothing heard, a
            // complete receiver ends as the success it is instead of waiting
            // for its death timer.
            if self.receiver_complete()
                && matches!(&self.data, DataPart::Receiver(r) if r.final_ok_timeouts >= FINAL_OK_TIMEOUTS)
            {
                tracing::debug!("last OK unanswered after DONE: success");
                self.finish_complete_receiver(now);
                return;
            }
        }
        if let DataPart::Receiver(r) = &mut self.data {
            if r.next_timer().is_some_and(|t| t <= now) {
                r.on_timeout(now, &mut self.stats);
            }
        }
        if self.state != State::Opening && now >= self.last_tx + self.keepalive_interval() {
            self.pending.keepalive = true;
        }
    }
}
