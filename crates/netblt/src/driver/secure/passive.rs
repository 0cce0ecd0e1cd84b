//! The passive end's side of encrypted mode: a handshake per peer, then a
//! [`PacketProtection`] per peer, and the denial-of-service rules of
//! docs/security.md:
//!
//! 1. No state and no Diffie-Hellman before the envelope parsed and, under
//!    load, before a valid cookie came back ([`CookieGenerator`]: an
//!    initiation without one gets a 42-byte cookie reply and nothing
//!    else). Under load means `cookie_threshold` slots in use, or the
//!    handshake budget spent (decision K27, [`Budget`](crate::budget::Budget)): at most
//!    [`HANDSHAKE_BURST`] refusals after a Diffie-Hellman at once and
//!    [`HANDSHAKES_PER_SEC`] a second after that, before initiations need
//!    a cookie (handshakes that succeed do not count, K28). Under load, one that came
//!    with a valid cookie and is refused after its Diffie-Hellman keeps its
//!    source's slot for [`HALF_OPEN_TIMEOUT`], so a source that can answer
//!    cookies gets at most its per-source limit of them per 5 s.
//! 2. A peer holds a slot of the [`ConnectionLimiter`] (per source and in
//!    total) from its initiation to the end of its connection; refusals are
//!    logged, one line per second at most.
//! 3. Until its address is validated (a cookie, or a packet that opens
//!    under the session keys), never send a peer more than 3x the bytes
//!    received from it ([`AmplificationLimit`], RFC 9000 §8.1).
//! 4. Half-open handshakes (no FINISH, no packet) are dropped after
//!    [`HALF_OPEN_TIMEOUT`], and their connections aborted.
//! 5. An IK initiation whose timestamp is not newer than those already
//!    accepted from its key is a replay: dropped and counted, never
//!    answered, no state (decision K19, [`InitiationFreshness`]).
//! 6. XX and code mode: the engine gets the OPEN only when FINISH has
//!    authenticated and authorized the peer (K20). Until then the passive
//!    end answers with a handshake response that carries no RESPONSE body,
//!    so a spoofed first message costs a slot and a Diffie-Hellman, never a
//!    connection of the receiver's service (threads, files).
//! 7. `authorized_keys` is followed while the receiver runs (K26): a
//!    key-mode initiation that passed rules 1 and 2 may `stat` the file
//!    before its Diffie-Hellman, at most 4 times at once and once a second
//!    after that ([`AuthorizedKeysFile`]), and the file is read only when
//!    it changed; the handshake gets the keys in force then.
//! 8. A different initiation from an address and port with a handshake
//!    under way is dropped, unless it carries a cookie valid for that
//!    address and port and the handshake is unproven, in key mode, of the
//!    same pattern and (IK) the same key: then, once read, it replaces
//!    that handshake (decision K29, `may_replace`: a sender restarted by a
//!    cookie reply to one copy of its first initiation while another copy
//!    was answered).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use netblt_crypto::handshake::message::{MessageError, FORMAT, MAX_MESSAGE_LEN};
use netblt_crypto::handshake::{write_cookie_reply, write_key_mismatch};
use netblt_crypto::{
    AmplificationLimit, Authorization, ConnectionLimiter, CookieGenerator, FreshnessConfig,
    FreshnessError, Handshake, HandshakeError, HandshakeMessage, InitiationFreshness,
    Kind as MsgKind, OsRandom, PacketProtection, Pattern, Progress, ResponderConfig, SuiteOffer,
    Tai64n,
};
use netblt_proto::Gathered;

use super::active::pattern_name;
use super::{
    handshake_datagram, kind, open_body, plain_open, plain_reason, ports, refused, Rx, OPEN, PLAIN,
    PROTECTED, RESPONSE,
};
use crate::budget::Budget;
use crate::error::{AppError, Kind};
use crate::security::{AuthorizedKeysFile, Encryption, Keys, SecurityReport};

/// A handshake with no sign of life from the peer after this is dropped.
pub(crate) const HALF_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Between two log lines about refused connections.
const LOG_INTERVAL: Duration = Duration::from_secs(1);
/// Handshakes refused after their Diffie-Hellman at once before
/// initiations need a cookie (K27, K28), as many as the slots that turn
/// cookies on.
pub(crate) const HANDSHAKE_BURST: u32 = 64;
/// After a burst, refused handshakes a second before initiations need a
/// cookie (K27, K28). On the 2-core VM of docs/security.md one X25519
/// costs 37 µs and an IK initiation read and refused 108 µs: a flood of
/// refused initiations gets at most 1.1 % of one core, whatever its rate.
pub(crate) const HANDSHAKES_PER_SEC: u32 = 100;

/// A peer: its address and NETBLT port (raw IP carries no UDP port).
type PeerKey = (SocketAddr, u16);

enum State {
    /// Initiation read; the engine's RESPONSE (then, for XX, FINISH) due.
    Pending(Box<Handshake>),
    Established(Box<PacketProtection>),
    /// Refused or failed: only plain refusals may still go.
    Refused,
}

struct Peer {
    state: State,
    initiation: Vec<u8>,
    /// The handshake response we sent (IK: made of the engine's RESPONSE;
    /// XX: written at once, without one), repeated for a repeated
    /// initiation.
    response: Option<Vec<u8>>,
    amp: AmplificationLimit,
    /// The newest sealed datagram the 3x limit held back, sent once the
    /// peer's address is validated (R10): the engine's first GOs follow
    /// its RESPONSE at once and, with 60 or more buffers, exceed the
    /// budget; dropped, they waited a control timer (1 s). One per peer,
    /// so memory stays bounded by the peer limit.
    held: Option<Vec<u8>>,
    since: Instant,
    /// A packet opened: the peer has the keys, its address is validated.
    proven: bool,
    holds_slot: bool,
    /// The source whose connection-limit slot this peer holds: where its
    /// handshake came from, whatever address its packets come from later.
    slot_ip: IpAddr,
    /// The pattern of its initiation: only one of the same pattern replaces
    /// it (K29, [`PassiveSecurity::may_replace`]).
    pattern: Option<Pattern>,
    code_mode: bool,
    /// XX and code mode (K20): the OPEN body, handed to the engine when
    /// FINISH arrives, and again if FINISH is repeated (our sealed RESPONSE
    /// was lost, RFC 998 §5.1 has the engine repeat it).
    deferred: Option<Vec<u8>>,
    /// The FINISH that completed the handshake.
    finish: Option<Vec<u8>>,
    /// The engine has a connection for this peer (abort it on expiry).
    engine: bool,
    /// The initiation came again before our RESPONSE was written (the
    /// sender's redundant first OPEN, R32): send the RESPONSE twice.
    answer_twice: bool,
}

/// Stateless replies (cookies, refusals) queued at most: a few sendmmsg
/// batches. A flood's extra replies are dropped; the initiator retries.
const STATELESS_MAX: usize = 256;

/// DoS and flood counters of a receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct FloodCounts {
    /// Cookie replies sent (under load).
    pub cookies_sent: u64,
    /// Initiations with an invalid cookie.
    pub bad_cookies: u64,
    /// Initiations refused by the connection limits.
    pub limited: u64,
    /// Handshakes that failed (bad message, unauthorized key, wrong code).
    pub handshakes_failed: u64,
    /// Half-open handshakes dropped after their timeout.
    pub half_open_expired: u64,
    /// Datagrams not sent because of the 3x amplification limit.
    pub amplification_blocked: u64,
    /// Most bytes sent to any unvalidated peer over bytes received from it,
    /// in thousandths (at most 3000).
    pub max_amplification_milli: u64,
    /// Most peers holding handshake or session state at once (bounded by
    /// the cookie threshold under a spoofed flood).
    pub peak_peers: u64,
    /// IK initiations refused as replays (a timestamp not newer than one
    /// already accepted from that key): no answer, no state (K19).
    pub replayed_initiations: u64,
    /// IK initiations refused because their timestamp is outside the clock
    /// window (±300 s): answered with a refusal naming the difference.
    pub stale_initiations: u64,
    /// Initiations in an older handshake format, refused in one line.
    pub old_format: u64,
    /// Stateless replies (cookies, refusals) not sent because 256 were
    /// already waiting (a flood outpacing the socket).
    pub replies_dropped: u64,
    /// Initiations read past the cheap checks: the Diffie-Hellman work
    /// (K27). Without a cookie at most 64 at once and 100 a second.
    pub handshakes_processed: u64,
}

/// See the module docs.
pub(crate) struct PassiveSecurity {
    keys: Keys,
    authorization: Authorization,
    /// Key mode with a list: `authorized_keys`, checked for changes before
    /// a key-mode handshake, at a bounded rate (K26). `None` with
    /// `--accept-any`.
    authorized: Option<AuthorizedKeysFile>,
    code: Option<netblt_crypto::OneTimeCode>,
    code_burnt: bool,
    peers: HashMap<PeerKey, Peer>,
    /// The proven peers by their NETBLT port: where a packet from an
    /// unknown address may belong (a peer whose NAT rebound it). Looked up
    /// per such packet, so a flood of them costs a hash lookup, not a walk
    /// over every peer.
    by_port: HashMap<u16, Vec<PeerKey>>,
    limiter: ConnectionLimiter,
    /// The budget of handshake work (decision K27): initiations refused
    /// after their Diffie-Hellman (an unknown key, a replay, one that does
    /// not decrypt), which the slots alone (K9) miss, as they give their
    /// slot back at once. Handshakes that succeed do not count (K28): `send
    /// --per-file` of 200 files with 8 at once read 300 initiations a
    /// second, all good, and counting them turned cookies on for a sender
    /// that had done nothing wrong. A flood can only be refused (it holds
    /// no authorized key), so it still spends the budget. When spent,
    /// initiations need a cookie.
    budget: Budget,
    /// Slots kept, until the time given, by handshakes refused after their
    /// Diffie-Hellman that came under load with a valid cookie (K27), in
    /// time order. At most `max_total`: each holds a slot.
    held: VecDeque<(Instant, IpAddr)>,
    cookies: CookieGenerator,
    fresh: InitiationFreshness,
    epoch: Instant,
    /// Replies to peers with state (handshake responses, their refusals):
    /// sent first. Bounded by the peers and their 3x budgets.
    outbox: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Replies to datagrams that left no state (cookies, refusals of
    /// stateless initiations): at most [`STATELESS_MAX`], newer ones
    /// dropped, so a flood queues no more than that however long it lasts,
    /// and a legitimate peer's reply never waits behind a flood's backlog.
    stateless: VecDeque<(SocketAddr, Vec<u8>)>,
    aborts: Vec<(SocketAddr, String)>,
    /// Sessions moved to a new peer address, for the driver to move their
    /// engine connections too: (old address, NETBLT port, new address).
    moved: Vec<(SocketAddr, u16, SocketAddr)>,
    fatal: Option<AppError>,
    last_log: Option<Instant>,
    pub(crate) flood: FloodCounts,
    report: SecurityReport,
    /// Stats of sessions already forgotten.
    retired: SecurityReport,
}

fn secs(epoch: Instant, now: Instant) -> u64 {
    // Cookie buckets need a clock that only moves forward; an offset keeps
    // bucket 0 unused.
    now.saturating_duration_since(epoch).as_secs() + 3600
}

impl PassiveSecurity {
    pub(crate) fn new(keys: Keys, enc: &Encryption) -> Result<PassiveSecurity, AppError> {
        let epoch = Instant::now();
        let authorized = if enc.accept_any {
            None
        } else {
            Some(keys.authorized(epoch)?)
        };
        let authorization = match &authorized {
            None => Authorization::AcceptAny,
            Some(f) => Authorization::Keys(f.keys().clone()),
        };
        let code = keys.code.clone();
        Ok(PassiveSecurity {
            keys,
            authorization,
            authorized,
            code,
            code_burnt: false,
            peers: HashMap::new(),
            by_port: HashMap::new(),
            limiter: ConnectionLimiter::new(enc.limits),
            budget: Budget::new(
                epoch,
                HANDSHAKE_BURST,
                Duration::from_secs(1) / HANDSHAKES_PER_SEC,
            ),
            held: VecDeque::new(),
            cookies: CookieGenerator::new(secs(epoch, epoch), &mut OsRandom),
            fresh: InitiationFreshness::new(FreshnessConfig::default()),
            epoch,
            outbox: VecDeque::new(),
            stateless: VecDeque::new(),
            aborts: Vec::new(),
            moved: Vec::new(),
            fatal: None,
            last_log: None,
            flood: FloodCounts::default(),
            report: SecurityReport::default(),
            retired: SecurityReport::default(),
        })
    }

    /// Replies of the handshake layer (cookie, stored RESPONSE, refusals),
    /// already within the amplification limit: those to peers with state
    /// first.
    pub(crate) fn next_outgoing(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.outbox
            .pop_front()
            .or_else(|| self.stateless.pop_front())
    }

    /// A reply taken by [`next_outgoing`](Self::next_outgoing) that found
    /// no room to go out: first in line next time.
    pub(crate) fn unpop(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        self.outbox.push_front((to, bytes));
    }

    /// Whether replies are waiting (the caller should not sleep).
    pub(crate) fn has_outgoing(&self) -> bool {
        !self.outbox.is_empty() || !self.stateless.is_empty()
    }

    /// Connections to abort (peer address, reason): a failed FINISH, an
    /// expired half-open handshake.
    pub(crate) fn take_aborts(&mut self) -> Vec<(SocketAddr, String)> {
        std::mem::take(&mut self.aborts)
    }

    /// A code-mode failure: the receiver stops with this error.
    pub(crate) fn fatal(&self) -> Option<&AppError> {
        self.fatal.as_ref()
    }

    /// All counters: live sessions and those forgotten.
    pub(crate) fn report(&self) -> SecurityReport {
        let mut r = self.report.clone();
        r.forged += self.retired.forged;
        r.replayed += self.retired.replayed;
        for p in self.peers.values() {
            if let State::Established(pr) = &p.state {
                r.add_protection(pr.stats());
            }
        }
        r
    }

    fn log_refusal(&mut self, now: Instant, line: &str) {
        if self
            .last_log
            .is_none_or(|t| now.duration_since(t) >= LOG_INTERVAL)
        {
            self.last_log = Some(now);
            tracing::warn!("{line}");
        }
    }

    /// Queues a reply to `to` if it fits the 3x rule (`budget` when the
    /// peer has no state: 3x the datagram that caused it).
    /// Returns whether it was queued.
    fn reply(&mut self, to: SocketAddr, bytes: Vec<u8>, budget: usize) -> bool {
        if bytes.is_empty() {
            return false;
        }
        if bytes.len() > budget {
            self.flood.amplification_blocked += 1;
            return false;
        }
        if self.stateless.len() >= STATELESS_MAX {
            self.flood.replies_dropped += 1;
            return false;
        }
        self.stateless.push_back((to, bytes));
        true
    }

    fn release(&mut self, key: PeerKey) {
        if let Some(p) = self.peers.get_mut(&key) {
            if std::mem::take(&mut p.holds_slot) {
                self.limiter.release(p.slot_ip);
            }
        }
    }

    fn unindex(&mut self, k: PeerKey) {
        if let Some(v) = self.by_port.get_mut(&k.1) {
            v.retain(|x| *x != k);
            if v.is_empty() {
                self.by_port.remove(&k.1);
            }
        }
    }

    /// The connection with this peer (address, NETBLT port) ended: forget
    /// it.
    pub(crate) fn forget(&mut self, addr: SocketAddr, port: u16) {
        let k = (addr, port);
        self.release(k);
        self.unindex(k);
        if let Some(p) = self.peers.remove(&k) {
            if let State::Established(pr) = &p.state {
                self.retired.add_protection(pr.stats());
            }
        }
    }

    /// Gives back the slots kept by refused handshakes whose time is up.
    fn release_held(&mut self, now: Instant) {
        while let Some(&(until, ip)) = self.held.front() {
            if until > now {
                break;
            }
            self.held.pop_front();
            self.limiter.release(ip);
        }
    }

    /// The slot of a handshake refused after its Diffie-Hellman: given
    /// back, or, if it came under load with a valid cookie, kept for
    /// [`HALF_OPEN_TIMEOUT`] (K27) so that a source which can answer
    /// cookies cannot make one handshake after another, each refused at
    /// once, faster than its per-source limit of slots per 5 s.
    fn refused_slot(&mut self, now: Instant, ip: IpAddr, validated: bool) {
        // The refused handshake's work counts against the budget (K28).
        let _ = self.budget.take(now);
        if validated {
            self.held.push_back((now + HALF_OPEN_TIMEOUT, ip));
        } else {
            self.limiter.release(ip);
        }
    }

    /// Whether a different initiation `msg` from `key`, where a handshake
    /// is under way, replaces it (decision K29). K28 found that "a sender's
    /// two copies of its first initiation (R32) can straddle the moment the
    /// budget runs out or refills, so that one copy draws a cookie reply
    /// and the other a response. The sender restarts with the cookie (new
    /// ephemeral keys); the passive end, holding a pending handshake for
    /// the first copy at that address and port, drops the new initiation
    /// as different bytes". The fix: "letting a different initiation *with
    /// a valid cookie* replace an unproven pending handshake from the same
    /// address and port (only someone who receives that address's packets
    /// holds the cookie)". So, all of:
    /// - its cookie verifies for this address and port (an invalid one is
    ///   counted, as under load);
    /// - the handshake is unproven: no packet opened under its keys, no
    ///   FINISH read (a sender that completed one starts no other);
    /// - the same pattern, and no code mode: each code handshake is a
    ///   guess of the code, burnt when it does not complete, and a
    ///   replacement would be a free guess (the sender takes up the
    ///   handshake answered instead, `netblt_crypto`'s `earlier`);
    /// - in IK, the same key ([`same_initiator`](Self::same_initiator),
    ///   checked after the Diffie-Hellman).
    ///
    /// The replaced handshake is dropped only once the new one is read and
    /// passed every check; until then it stays as it was.
    fn may_replace(&mut self, t: u64, key: PeerKey, msg: &HandshakeMessage<'_>) -> bool {
        let Some(p) = self.peers.get(&key) else {
            return false;
        };
        let unproven = !p.proven && p.finish.is_none() && !matches!(p.state, State::Refused);
        if !unproven || p.code_mode || msg.pattern != p.pattern {
            return false;
        }
        match msg.cookie.map(|c| self.cookies.verify(t, key.0, c)) {
            Some(Ok(())) => true,
            Some(Err(_)) => {
                self.flood.bad_cookies += 1;
                false
            }
            None => false,
        }
    }

    /// A replacing handshake (K29) authenticates the key of the one it
    /// replaces, if that one's is known (IK: the key whose OPEN the engine
    /// has a connection for; XX learns it only at FINISH, before which the
    /// engine has no connection).
    fn same_initiator(&self, key: PeerKey, hs: &Handshake) -> bool {
        let old = match self.peers.get(&key).map(|p| &p.state) {
            Some(State::Pending(old)) => old.peer_static(),
            Some(State::Established(pr)) => pr.peer_static(),
            Some(State::Refused) | None => None,
        };
        old.is_none() || old == hs.peer_static()
    }

    /// Expires half-open handshakes and refused peers; rotates cookies.
    pub(crate) fn on_tick(&mut self, now: Instant) {
        self.cookies.rotate(secs(self.epoch, now), &mut OsRandom);
        self.release_held(now);
        let expired: Vec<PeerKey> = self
            .peers
            .iter()
            .filter(|(_, p)| {
                !p.proven
                    && now.saturating_duration_since(p.since) >= HALF_OPEN_TIMEOUT
                    && !matches!(p.state, State::Refused)
                    || matches!(p.state, State::Refused)
                        && now.saturating_duration_since(p.since) >= HALF_OPEN_TIMEOUT * 2
            })
            .map(|(k, _)| *k)
            .collect();
        for k in expired {
            let refused = self
                .peers
                .get(&k)
                .is_some_and(|p| matches!(p.state, State::Refused));
            if !refused {
                self.flood.half_open_expired += 1;
                if self.peers.get(&k).is_some_and(|p| p.code_mode) {
                    self.burn_code("no sender completed the one-time-code handshake in time");
                }
                if self.peers.get(&k).is_some_and(|p| p.engine) {
                    self.aborts
                        .push((k.0, "handshake not completed in time".to_string()));
                }
            }
            self.release(k);
            self.unindex(k);
            self.peers.remove(&k);
        }
    }

    fn burn_code(&mut self, why: &str) {
        if self.code.is_some() && !self.code_burnt {
            self.code_burnt = true;
            self.fatal = Some(
                AppError::new(
                    Kind::Failed,
                    format!("one-time code: {why}; the code is burnt, start again with a new one"),
                    "",
                )
                .because(crate::ErrorKind::Handshake),
            );
        }
    }

    /// A datagram from `from`: see the module docs.
    pub(crate) fn incoming(&mut self, now: Instant, from: SocketAddr, d: &mut [u8]) -> Rx {
        let Some((version, ty)) = kind(d) else {
            return Rx::Pass(d.len()); // the engine counts it as malformed
        };
        let key = (from, ports(d).0);
        if let Some(p) = self.peers.get_mut(&key) {
            p.amp.on_received(d.len());
        }
        match (version, ty) {
            (PLAIN, OPEN) => {
                let (lp, fp) = ports(d);
                let budget = 3 * d.len();
                self.reply(from, refused(fp, lp, super::NEEDS_ENCRYPTION), budget);
                self.report.plaintext += 1;
                Rx::Drop
            }
            (PLAIN, _) => {
                // A plain QUIT from a code-mode peer in its handshake: the
                // sender's code did not match.
                let code_fail = self.peers.get(&key).is_some_and(|p| {
                    p.code_mode && !p.proven && !matches!(p.state, State::Established(_))
                });
                if code_fail && plain_reason(d).is_some() {
                    self.burn_code("the sender's code did not match");
                    if self.peers.get(&key).is_some_and(|p| p.engine) {
                        self.aborts
                            .push((from, "the one-time code does not match".into()));
                    }
                    self.release(key);
                    if let Some(p) = self.peers.get_mut(&key) {
                        p.state = State::Refused;
                    }
                } else {
                    self.report.plaintext += 1;
                }
                Rx::Drop
            }
            (PROTECTED, OPEN) => self.handshake(now, key, d),
            (PROTECTED, RESPONSE) => {
                self.report.dropped += 1;
                Rx::Drop
            }
            (PROTECTED, _) => {
                let Some(p) = self.peers.get_mut(&key) else {
                    return self.opened_from_new_address(key, d);
                };
                let State::Established(pr) = &mut p.state else {
                    // FINISH not read yet (rule 3): dropped, never buffered.
                    self.report.dropped += 1;
                    return Rx::Drop;
                };
                match pr.open_in_place(d) {
                    Ok(n) => {
                        d[2] = PLAIN;
                        if !p.proven {
                            p.proven = true;
                            self.by_port.entry(key.1).or_default().push(key);
                            p.amp.validate();
                            if let Some(h) = p.held.take() {
                                self.outbox.push_back((from, h));
                            }
                        }
                        Rx::Pass(n)
                    }
                    Err(_) => Rx::Drop,
                }
            }
            _ => {
                self.report.dropped += 1;
                Rx::Drop
            }
        }
    }

    /// Sessions moved to a new address since the last call: (old address,
    /// NETBLT port, new address). The driver moves the engine's connection.
    pub(crate) fn take_moves(&mut self) -> Vec<(SocketAddr, u16, SocketAddr)> {
        std::mem::take(&mut self.moved)
    }

    /// A protected packet from an address with no session: a peer whose NAT
    /// rebound its mapping (or that changed networks) keeps its NETBLT
    /// port, which is in the clear header, so it is tried against the
    /// established sessions on that port (docs/security.md, "Address
    /// changes"). The session moves only for a packet that opens with its
    /// keys and is the newest it has accepted (the highest counter), as
    /// WireGuard updates a peer's endpoint: a packet an attacker captured
    /// and re-sent from elsewhere is a replay, and a race won with a fresh
    /// one is undone by the peer's next packet. Forgeries move nothing and
    /// cost one AEAD attempt per session on that port (usually one).
    fn opened_from_new_address(&mut self, key: PeerKey, d: &mut [u8]) -> Rx {
        let (from, port) = key;
        let candidates = self.by_port.get(&port).cloned().unwrap_or_default();
        for old in candidates {
            let Some(p) = self.peers.get_mut(&old) else {
                continue;
            };
            let State::Established(pr) = &mut p.state else {
                continue;
            };
            let before = pr.highest_opened();
            // A failed open may overwrite the body: try on a copy.
            let mut trial = d.to_vec();
            let Ok(n) = pr.open_in_place(&mut trial) else {
                continue;
            };
            if pr.highest_opened() > before {
                d[..n].copy_from_slice(&trial[..n]);
                d[2] = PLAIN;
                if let Some(peer) = self.peers.remove(&old) {
                    self.peers.insert(key, peer);
                    self.unindex(old);
                    self.by_port.entry(port).or_default().push(key);
                    self.moved.push((old.0, port, from));
                    self.report.migrated += 1;
                    tracing::info!(%from, old = %old.0, "peer address changed; the session moved");
                }
                return Rx::Pass(n);
            }
            // Authentic but older than what came from the session's
            // address: a reordered packet sent before the change, or a
            // copy re-sent by someone else. It moves nothing, and the
            // engine has no connection at this address to give it to.
            self.report.dropped += 1;
            return Rx::Drop;
        }
        self.report.dropped += 1;
        Rx::Drop
    }

    fn handshake(&mut self, now: Instant, key: PeerKey, d: &[u8]) -> Rx {
        let from = key.0;
        // R58: a path probe's initiation is followed by NULs past the
        // header's Length. Replies are budgeted on what came (`full`); the
        // handshake reads, and compares with a repeat, the message alone.
        let full = d.len();
        let (d, probed) = super::cut_probe_padding(d);
        let env = &d[netblt_wire::HEADER_LEN..];
        let msg = match HandshakeMessage::parse(env) {
            Ok(m) => m,
            Err(MessageError::Format(f)) if (1..FORMAT).contains(&f) && env.get(1) == Some(&1) => {
                // An initiation from an older netblt: one line it can print
                // (a plain REFUSED, within 3x like every reply).
                self.flood.old_format += 1;
                let (lp, fp) = ports(d);
                let why = format!(
                    "this receiver speaks netblt handshake format {FORMAT}, the sender format {f}: upgrade netblt on the sender"
                );
                self.reply(from, refused(fp, lp, &why), 3 * full);
                return Rx::Drop;
            }
            Err(_) => {
                self.report.dropped += 1;
                return Rx::Drop;
            }
        };
        match msg.kind {
            MsgKind::Initiation => {}
            MsgKind::Finish => return self.finish(now, key, d),
            _ => {
                self.report.dropped += 1;
                return Rx::Drop;
            }
        }
        let t = secs(self.epoch, now);
        // A different initiation from a peer with a handshake replaces it
        // only if it may (K29); its cookie is then verified already.
        let mut replacing = false;
        if let Some(p) = self.peers.get_mut(&key) {
            // A retransmitted initiation: the stored RESPONSE, no new DH.
            if p.initiation == d {
                if let Some(r) = p.response.clone() {
                    if p.amp.try_send(r.len()) {
                        self.outbox.push_back((from, r));
                    } else {
                        self.flood.amplification_blocked += 1;
                    }
                } else {
                    // A redundant copy that came before the engine's
                    // RESPONSE was written: owed a copy of it (R32).
                    p.answer_twice = true;
                }
                return Rx::Drop;
            }
            if !self.may_replace(t, key, &msg) {
                self.report.dropped += 1;
                return Rx::Drop;
            }
            replacing = true;
        }
        self.release_held(now);
        let mut validated = replacing;
        // Under load: too many slots in use, or too much handshake work
        // lately (K27).
        if !replacing && (self.limiter.under_load() || self.budget.spent(now)) {
            match msg.cookie.map(|c| self.cookies.verify(t, from, c)) {
                Some(Ok(())) => validated = true,
                Some(Err(_)) => {
                    self.flood.bad_cookies += 1;
                    return Rx::Drop;
                }
                None => {
                    let cookie = self.cookies.issue(t, from, &mut OsRandom);
                    let mut env = [0u8; 64];
                    if let Some(n) = write_cookie_reply(&cookie, &mut env) {
                        let (lp, fp) = ports(d);
                        let r = handshake_datagram(RESPONSE, fp, lp, &env[..n]);
                        if self.reply(from, r, 3 * full) {
                            self.flood.cookies_sent += 1;
                        }
                    }
                    return Rx::Drop;
                }
            }
        }
        if let Err(e) = self.limiter.admit(from.ip()) {
            self.flood.limited += 1;
            self.log_refusal(now, &format!("refused a connection from {from}: {e}"));
            return Rx::Drop;
        }
        if self.code_burnt {
            self.limiter.release(from.ip());
            return Rx::Drop;
        }
        // The Diffie-Hellman work starts here; if it ends in a refusal, it
        // takes from the budget (`refused_slot`, K28).
        self.flood.handshakes_processed += 1;
        // After the cheap checks, before the Diffie-Hellman: a key added to
        // (or removed from) authorized_keys counts from this handshake on,
        // without a restart (K26). One `stat` at most, at a bounded rate
        // whatever the rate of initiations; a read only if the file changed.
        if self.code.is_none() {
            if let Some(f) = &mut self.authorized {
                if f.refresh(now) {
                    self.authorization = Authorization::Keys(f.keys().clone());
                }
            }
        }
        let mut hs = Handshake::responder(
            ResponderConfig {
                identity: self.keys.identity.clone(),
                authorization: self.authorization.clone(),
                code: self.code.clone(),
                accept_keys: self.code.is_none(),
                suites: SuiteOffer::local(),
            },
            &mut OsRandom,
        );
        let mut payload = vec![0u8; MAX_MESSAGE_LEN];
        let (lp, fp) = ports(d);
        match hs.read_message(env, &mut payload) {
            Ok(Progress::Payload(k)) => {
                if replacing && !self.same_initiator(key, &hs) {
                    // Another key than the one whose OPEN the engine has a
                    // connection for: that connection is never handed to it.
                    self.refused_slot(now, from.ip(), validated);
                    self.flood.handshakes_failed += 1;
                    return Rx::Drop;
                }
                if let Err(e) = self.check_fresh(now, &hs) {
                    self.refused_slot(now, from.ip(), validated);
                    if let Some(why) = e {
                        self.reply(from, refused(fp, lp, &why), 3 * full);
                    }
                    return Rx::Drop;
                }
                let mut amp = AmplificationLimit::new();
                amp.on_received(full);
                if validated {
                    amp.validate();
                }
                let code_mode = hs.pattern() == Some(Pattern::XxCode);
                self.report.pattern = pattern_name(hs.pattern()).into();
                // A probe's padding goes on to the engine as the OPEN's own
                // (RFC 998's client string area), as long as a sealed DATA
                // packet of the size it probes: the engine decides (R58).
                let body = super::probe_body(&payload[..k], probed);
                // IK: the engine answers (its RESPONSE body goes in our
                // response). XX: we answer now, without the engine (K20).
                let (response, deferred) = if hs.pattern() == Some(Pattern::Ik) {
                    (None, None)
                } else {
                    let mut env = vec![0u8; MAX_MESSAGE_LEN];
                    match hs.write_message(&[], &mut env) {
                        Ok(n) => (
                            Some(handshake_datagram(RESPONSE, fp, lp, &env[..n])),
                            Some(body.clone()),
                        ),
                        Err(e) => {
                            tracing::debug!(error = %e, "writing the response");
                            self.refused_slot(now, from.ip(), validated);
                            self.flood.handshakes_failed += 1;
                            return Rx::Drop;
                        }
                    }
                };
                if let Some(r) = &response {
                    if amp.try_send(r.len()) {
                        self.outbox.push_back((from, r.clone()));
                        note_amplification(&mut self.flood, &amp);
                    } else {
                        self.flood.amplification_blocked += 1;
                    }
                }
                let engine = deferred.is_none();
                let pattern = hs.pattern();
                let replaced = self.peers.insert(
                    key,
                    Peer {
                        state: State::Pending(Box::new(hs)),
                        initiation: d.to_vec(),
                        response,
                        amp,
                        held: None,
                        since: now,
                        proven: false,
                        holds_slot: true,
                        slot_ip: from.ip(),
                        pattern,
                        code_mode,
                        deferred,
                        finish: None,
                        engine,
                        answer_twice: false,
                    },
                );
                if let Some(old) = replaced {
                    // K29: the handshake this one replaced gives its slot
                    // back. In IK the engine's connection stays: the OPEN
                    // below is a repeat for it (same UID), which it answers
                    // with another RESPONSE, written by this handshake.
                    if old.holds_slot {
                        self.limiter.release(old.slot_ip);
                    }
                    tracing::debug!(%from, "an initiation with a valid cookie replaced an unproven handshake");
                }
                self.flood.peak_peers = self.flood.peak_peers.max(self.peers.len() as u64);
                if engine {
                    Rx::Owned(plain_open(OPEN, lp, fp, &body))
                } else {
                    Rx::Drop
                }
            }
            Ok(Progress::RetryWithCookie) => {
                self.limiter.release(from.ip());
                Rx::Drop
            }
            Err(e) => {
                self.refused_slot(now, from.ip(), validated);
                self.flood.handshakes_failed += 1;
                let budget = 3 * full;
                match e {
                    HandshakeError::Decrypt if msg.pattern == Some(Pattern::Ik) => {
                        // Maybe pinned an old key of ours: say which we have.
                        let mut env = [0u8; 64];
                        if let Some(n) = write_key_mismatch(&self.keys.identity, &mut env) {
                            self.reply(
                                from,
                                handshake_datagram(RESPONSE, fp, lp, &env[..n]),
                                budget,
                            );
                        }
                    }
                    HandshakeError::Unauthorized(k) => {
                        self.log_refusal(
                            now,
                            &format!(
                                "refused {from}: key {k} ({}) is not in authorized_keys",
                                k.fingerprint()
                            ),
                        );
                        let why = format!("key {} is not authorized", k.fingerprint());
                        self.reply(from, refused(fp, lp, &why), budget);
                    }
                    HandshakeError::ModeRefused => {
                        let why = if self.code.is_some() {
                            crate::error::WIRE_WANTS_CODE
                        } else {
                            crate::error::WIRE_TAKES_NO_CODE
                        };
                        self.reply(from, refused(fp, lp, why), budget);
                    }
                    HandshakeError::CodeMismatch => {
                        self.burn_code("a sender presented a malformed code message");
                    }
                    other => {
                        tracing::debug!(error = %other, %from, "handshake failed");
                    }
                }
                Rx::Drop
            }
        }
    }

    fn finish(&mut self, now: Instant, key: PeerKey, d: &[u8]) -> Rx {
        let from = key.0;
        let (lp, fp) = ports(d);
        let Some(p) = self.peers.get_mut(&key) else {
            self.report.dropped += 1;
            return Rx::Drop;
        };
        if let (State::Established(_), Some(body)) = (&p.state, &p.deferred) {
            // Once a sealed packet from the peer opened, it has our
            // RESPONSE: a FINISH repeated after that is a replay (anyone on
            // the path can resend one), and answering it would make us send
            // on a stranger's say-so.
            if p.finish.as_deref() == Some(d) && !p.proven {
                // The peer repeats FINISH: its engine still waits for our
                // sealed RESPONSE, which was lost. The engine repeats it for
                // a repeated OPEN (RFC 998 §5.1: "the passive NETBLT sends
                // another RESPONSE"); a duplicate is ignored there.
                return Rx::Owned(plain_open(OPEN, lp, fp, body));
            }
        }
        let State::Pending(hs) = &mut p.state else {
            // A FINISH after the handshake (rule 4): ignored.
            self.report.dropped += 1;
            return Rx::Drop;
        };
        let mut payload = vec![0u8; MAX_MESSAGE_LEN];
        match hs.read_message(&d[netblt_wire::HEADER_LEN..], &mut payload) {
            Ok(_) if hs.is_finished() => {
                let State::Pending(hs) = std::mem::replace(&mut p.state, State::Refused) else {
                    return Rx::Drop;
                };
                let peer = hs.peer_static();
                match hs.into_transport() {
                    Ok(pr) => {
                        self.report.suite = pr.suite().name().into();
                        self.report.peer = peer.map(|k| k.fingerprint());
                        p.state = State::Established(Box::new(pr));
                        // FINISH proves the peer read our response.
                        p.amp.validate();
                        p.finish = Some(d.to_vec());
                        // Authorized: now the engine (and the service) see
                        // the OPEN, with the usual time to prove the keys.
                        p.since = now;
                        p.engine = true;
                        match &p.deferred {
                            Some(body) => Rx::Owned(plain_open(OPEN, lp, fp, body)),
                            None => Rx::Drop,
                        }
                    }
                    Err(_) => {
                        self.release(key);
                        Rx::Drop
                    }
                }
            }
            Ok(_) | Err(HandshakeError::Unexpected | HandshakeError::Malformed(_)) => {
                self.report.dropped += 1;
                Rx::Drop
            }
            Err(e) => {
                p.state = State::Refused;
                let code_mode = p.code_mode;
                self.flood.handshakes_failed += 1;
                let reason = match &e {
                    HandshakeError::Unauthorized(k) => {
                        self.log_refusal(
                            now,
                            &format!(
                                "refused {from}: key {k} ({}) is not in authorized_keys",
                                k.fingerprint()
                            ),
                        );
                        format!("key {} is not authorized", k.fingerprint())
                    }
                    HandshakeError::CodeMismatch => "the one-time code does not match".into(),
                    other => format!("handshake failed: {other}"),
                };
                if code_mode {
                    self.burn_code("the sender's code did not match");
                }
                self.release(key);
                // No connection exists yet (K20): the refusal goes plain,
                // from here, within the peer's 3x budget.
                let r = refused(fp, lp, &reason);
                if let Some(p) = self.peers.get_mut(&key) {
                    if p.engine {
                        self.aborts.push((from, reason));
                    } else if p.amp.try_send(r.len()) {
                        self.outbox.push_back((from, r));
                    } else {
                        self.flood.amplification_blocked += 1;
                    }
                }
                Rx::Drop
            }
        }
    }

    /// Rule 5 (K19): an IK initiation must carry a timestamp newer than
    /// those already accepted from its key, and within the clock window.
    /// `Err(None)`: a replay, answer nothing; `Err(Some(reason))`: refuse
    /// with this line (the clocks disagree).
    fn check_fresh(&mut self, now: Instant, hs: &Handshake) -> Result<(), Option<String>> {
        if hs.pattern() != Some(Pattern::Ik) {
            // XX: FINISH proves the initiator is live (it needs our fresh
            // ephemeral key), so a replayed first message never gets further
            // than our response.
            return Ok(());
        }
        let (Some(key), Some(t)) = (hs.peer_static(), hs.initiation_timestamp()) else {
            self.flood.handshakes_failed += 1;
            return Err(None);
        };
        let wall = Tai64n::from_system_time(SystemTime::now());
        match self.fresh.check(&key, t, wall) {
            Ok(()) => Ok(()),
            Err(FreshnessError::Replayed) => {
                self.flood.replayed_initiations += 1;
                tracing::debug!(key = %key.fingerprint(), "replayed IK initiation dropped");
                Err(None)
            }
            Err(e) => {
                self.flood.stale_initiations += 1;
                let cfg = self.fresh.config();
                let (diff, side, allowed) = match e {
                    FreshnessError::TooNew(d) => (d.as_secs(), "ahead of", cfg.max_ahead_secs),
                    FreshnessError::TooOld(_) | FreshnessError::Replayed => {
                        (d_secs(e), "behind", cfg.max_age_secs)
                    }
                };
                let line = format!(
                    "refused an initiation of key {}: the sender's clock is {diff} s {side} this host's (at most {allowed} s allowed)",
                    key.fingerprint()
                );
                self.log_refusal(now, &line);
                Err(Some(format!(
                    "the sender's clock is {diff} s {side} the receiver's: the clocks of both hosts must agree within {allowed} s"
                )))
            }
        }
    }

    /// Like [`outgoing`](Self::outgoing) for a datagram the engine handed
    /// out gathered: `buf[..g.head]` written, `payload` still in the
    /// engine's buffer. An established peer's DATA is sealed from there
    /// straight into `buf` ([`super::seal_gathered`]); anything else is
    /// written whole first.
    pub(crate) fn outgoing_gathered(
        &mut self,
        to: SocketAddr,
        buf: &mut [u8],
        g: Gathered,
        payload: Option<&[u8]>,
    ) -> Option<usize> {
        if let (Some(data), 0) = (payload, g.pad) {
            let key = (to, ports(buf).1);
            if let Some(p) = self.peers.get_mut(&key) {
                if let State::Established(pr) = &mut p.state {
                    let len = super::seal_gathered(pr, buf, g.head, data)?;
                    if !p.amp.try_send(len) {
                        self.flood.amplification_blocked += 1;
                        p.held = buf.get(..len).map(<[u8]>::to_vec);
                        return None;
                    }
                    note_amplification(&mut self.flood, &p.amp);
                    return Some(len);
                }
            }
        }
        let n = super::flatten(buf, g, payload)?;
        self.outgoing(to, buf, n)
    }

    /// The plain datagram the engine wrote for `to` in `buf[..n]`, as it
    /// goes on the wire; `None`: not sent. `buf` has room for 24 more bytes.
    pub(crate) fn outgoing(&mut self, to: SocketAddr, buf: &mut [u8], n: usize) -> Option<usize> {
        let (_, ty) = kind(&buf[..n])?;
        let key = (to, ports(buf).1);
        let p = self.peers.get_mut(&key)?;
        let len = match &mut p.state {
            State::Pending(hs) if ty == RESPONSE && hs.is_my_turn() => {
                let mut env = vec![0u8; MAX_MESSAGE_LEN];
                let k = match hs.write_message(open_body(&buf[..n]), &mut env) {
                    Ok(k) => k,
                    Err(e) => {
                        tracing::debug!(error = %e, "writing the RESPONSE");
                        return None;
                    }
                };
                let (lp, fp) = ports(buf);
                let r = handshake_datagram(RESPONSE, lp, fp, &env[..k]);
                if hs.is_finished() {
                    // IK: keys now; the address is validated by the
                    // first packet that opens.
                    let State::Pending(hs) = std::mem::replace(&mut p.state, State::Refused) else {
                        return None;
                    };
                    let peer = hs.peer_static();
                    if let Ok(pr) = hs.into_transport() {
                        self.report.suite = pr.suite().name().into();
                        self.report.peer = peer.map(|k| k.fingerprint());
                        p.state = State::Established(Box::new(pr));
                    }
                }
                buf.get_mut(..r.len())?.copy_from_slice(&r);
                let l = r.len();
                if std::mem::take(&mut p.answer_twice) {
                    if p.amp.try_send(r.len()) {
                        self.outbox.push_back((to, r.clone()));
                    } else {
                        self.flood.amplification_blocked += 1;
                    }
                }
                p.response = Some(r);
                l
            }
            State::Established(_) | State::Pending(_) if ty == RESPONSE && p.deferred.is_none() => {
                let r = p.response.clone()?;
                buf.get_mut(..r.len())?.copy_from_slice(&r);
                r.len()
            }
            State::Established(pr) => {
                buf[2] = PROTECTED;
                pr.seal_in_place(buf, n).ok()?
            }
            // No keys yet (cannot happen: the engine sees an XX peer only
            // after FINISH, an IK peer has keys once its RESPONSE is out).
            State::Pending(_) => return None,
            State::Refused => {
                // The engine's REFUSED/QUIT/ABORT go plain; nothing else.
                plain_reason(&buf[..n])?;
                n
            }
        };
        if !p.amp.try_send(len) {
            self.flood.amplification_blocked += 1;
            p.held = buf.get(..len).map(<[u8]>::to_vec);
            return None;
        }
        note_amplification(&mut self.flood, &p.amp);
        Some(len)
    }

    /// The engine refused the OPEN of this peer (after the initiation was
    /// read): its REFUSED goes plain, and the slot is free.
    pub(crate) fn refused_by_engine(&mut self, from: SocketAddr) {
        let keys: Vec<PeerKey> = self.peers.keys().filter(|k| k.0 == from).copied().collect();
        for k in keys {
            self.release(k);
            if let Some(p) = self.peers.get_mut(&k) {
                p.state = State::Refused;
            }
        }
    }
}

/// Seconds of a clock difference (none for a replay).
fn d_secs(e: FreshnessError) -> u64 {
    match e {
        FreshnessError::TooOld(d) | FreshnessError::TooNew(d) => d.as_secs(),
        FreshnessError::Replayed => 0,
    }
}

/// Records the ratio of bytes sent to bytes received of an unvalidated peer.
fn note_amplification(flood: &mut FloodCounts, amp: &AmplificationLimit) {
    if !amp.is_validated() && amp.received() > 0 {
        let r = amp.sent() * 1000 / amp.received();
        flood.max_amplification_milli = flood.max_amplification_milli.max(r);
    }
}

#[cfg(test)]
#[path = "passive_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "cookie_race_tests.rs"]
mod cookie_race_tests;
