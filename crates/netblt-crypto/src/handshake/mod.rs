//! The Noise handshake carried by NETBLT's OPEN and RESPONSE (and, for the XX patterns, a
//! third message from the active end).
//!
//! | initiator knows           | pattern            | messages | responder authorizes at |
//! |---------------------------|--------------------|----------|-------------------------|
//! | the responder's key (pin) | `IK`               | 2        | message 1 (OPEN)        |
//! | nothing (first contact)   | `XX`               | 3        | message 3 (FINISH)      |
//! | a one-time code           | `XXpsk2` + SPAKE2  | 3        | the code (PSK)          |
//!
//! All use X25519, ChaCha20-Poly1305 and BLAKE2s inside the handshake (snow's defaults); the
//! packet AEAD afterwards is negotiated separately ([`SuiteOffer`]). The prologue binds the
//! envelope's pattern and suite offer, so a downgrade of either breaks the handshake. The
//! responder's pick of suite is the first byte of its (encrypted) payload.
//!
//! Code mode: the initiation carries SPAKE2 message A, the response SPAKE2 message B; each
//! end derives the PAKE key before it needs the PSK (the responder before writing message 2,
//! the initiator before reading it), so a wrong code fails at the initiator when it reads
//! the RESPONSE and at the responder when it reads the FINISH: [`HandshakeError::CodeMismatch`].
//!
//! IK initiations carry the initiator's [`timestamp::Tai64n`] (from
//! [`InitiatorConfig::timestamp`]) encrypted before the payload; the responder reads it back
//! with [`Handshake::initiation_timestamp`] and checks it with a
//! [`timestamp::InitiationFreshness`] before answering (replays are refused unanswered).
//!
//! The caller (the driver) owns everything else: it puts the NETBLT OPEN/RESPONSE body in
//! the payloads (in XX the response's payload stays empty and the RESPONSE travels sealed
//! after FINISH), checks cookies before creating a responder, pins keys after a first
//! contact.

mod earlier;
pub mod message;
pub mod timestamp;

use snow::resolvers::{CryptoResolver, DefaultResolver};
use spake2::{Ed25519Group, Spake2};
use zeroize::Zeroize;

use crate::authorized::Authorization;
use crate::code::OneTimeCode;
use crate::keys::{Identity, PublicKey, KEY_LEN};
use crate::protection::{PacketProtection, Suite, SuiteOffer};
use crate::rng::{RandCoreAdapter, SecureRandom, SeededRandom, SnowRandom};
use message::{HandshakeMessage, Kind, MessageError, Pattern, MAX_MESSAGE_LEN, MAX_NOISE_LEN};
use timestamp::{Tai64n, TIMESTAMP_LEN};

/// The largest application payload a handshake message can carry (the NETBLT OPEN or
/// RESPONSE body): what is left of [`MAX_NOISE_LEN`] after keys and tags and, in the IK
/// initiation (the tightest), the timestamp.
pub const MAX_PAYLOAD_LEN: usize = MAX_NOISE_LEN - 32 - (KEY_LEN + 16) - 16 - TIMESTAMP_LEN;

/// Names the handshake's version in every transcript (with [`message::FORMAT`] on the
/// wire): version 2 added the IK timestamp and moved the XX RESPONSE body after FINISH;
/// version 3 shortened the counter of every protected packet to 4 bytes (decision K24).
const PROLOGUE: &[u8] = b"netblt handshake 3";

/// How the initiator authenticates the responder.
#[derive(Clone, Debug)]
pub enum PeerAuth {
    /// Its pinned key (from `known_hosts`): IK.
    Pinned(PublicKey),
    /// Unknown yet (trust on first use): XX; pin [`Handshake::peer_static`] afterwards.
    FirstContact,
    /// A one-time code both people know: XXpsk2 with SPAKE2.
    Code(OneTimeCode),
}

/// The active end's settings.
#[derive(Clone, Debug)]
pub struct InitiatorConfig {
    /// Our long-term key pair.
    pub identity: Identity,
    /// What we know of the responder: a pinned key, nothing, or a code.
    pub peer: PeerAuth,
    /// The AEAD suites we offer.
    pub suites: SuiteOffer,
    /// IK only: the time of this initiation, carried encrypted in its payload so that the
    /// responder can refuse a replay ([`timestamp::InitiationFreshness`]). Take it from a
    /// clock that never repeats a value for one key (see docs/security.md).
    pub timestamp: Tai64n,
}

/// The passive end's settings.
#[derive(Clone, Debug)]
pub struct ResponderConfig {
    /// Our long-term key pair.
    pub identity: Identity,
    /// Whom to accept in key mode (IK, XX).
    pub authorization: Authorization,
    /// The code of a code-mode transfer, if one is expected. Burn it after one failed
    /// attempt: [`HandshakeError::CodeMismatch`].
    pub code: Option<OneTimeCode>,
    /// Accept key-mode initiations (false for a receiver that waits only for a code).
    pub accept_keys: bool,
    /// The AEAD suites we accept, and our preference among them.
    pub suites: SuiteOffer,
}

/// What reading a message produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A handshake message: its application payload is `payload_out[..n]`.
    Payload(usize),
    /// A cookie reply: write the initiation again (same payload), which now carries it; in
    /// IK give it a fresh timestamp first ([`Handshake::set_timestamp`]).
    RetryWithCookie,
}

/// Why a handshake failed. All are final for this handshake except as noted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The envelope did not parse.
    #[error("malformed handshake message: {0}")]
    Malformed(#[from] MessageError),
    /// A message of the wrong kind for this point of the handshake (drop it; the handshake
    /// goes on).
    #[error("unexpected handshake message")]
    Unexpected,
    /// A response to the initiation a cookie reply made us replace (decision K29): the passive
    /// end read one copy of our first initiation and asked for a cookie for another. Drop it;
    /// the handshake goes on, and the response to the initiation with the cookie follows.
    #[error("a response to an initiation replaced after a cookie reply")]
    Superseded,
    /// A Noise message did not decrypt or verify: forged or corrupted. For an IK initiation
    /// it may also mean the initiator pinned another key for us; answer with
    /// [`write_key_mismatch`] then.
    #[error("handshake message failed authentication")]
    Decrypt,
    /// The initiator's key is not in `authorized_keys`.
    #[error("key {} is not authorized", .0.fingerprint())]
    Unauthorized(PublicKey),
    /// The responder says it has a key other than the one pinned (unauthenticated claim,
    /// reported like ssh's changed-host-key warning).
    #[error(
        "the receiver's key has changed: pinned {}, it now presents {}",
        expected.fingerprint(),
        claimed.fingerprint()
    )]
    HostKeyChanged {
        /// The key we pinned.
        expected: PublicKey,
        /// The key the responder claims now (unauthenticated).
        claimed: PublicKey,
    },
    /// Code mode: the two ends typed different codes (or someone guessed and failed).
    #[error("the one-time code does not match")]
    CodeMismatch,
    /// The responder does not accept this mode (a code initiation without a code set, or a
    /// key initiation when only a code is expected).
    #[error("the receiver does not accept this kind of handshake")]
    ModeRefused,
    /// No AEAD both ends accept.
    #[error("no cipher suite in common")]
    NoCommonSuite,
    /// The output buffer is too small or the payload too large.
    #[error("handshake buffer too small or payload too large")]
    Buffer,
    /// Called in the wrong state (a caller bug).
    #[error("handshake used out of order")]
    State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Initiator,
    Responder,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    WriteInitiation,
    ReadResponse,
    WriteFinish,
    ReadInitiation,
    WriteResponse,
    ReadFinish,
    Done,
}

/// One handshake, either end. Call [`write_message`](Self::write_message) and
/// [`read_message`](Self::read_message) in turn until [`is_finished`](Self::is_finished), then
/// [`into_transport`](Self::into_transport).
pub struct Handshake {
    role: Role,
    stage: Stage,
    pattern: Option<Pattern>,
    noise: Option<snow::HandshakeState>,
    pake: Option<Spake2<Ed25519Group>>,
    pake_msg: Vec<u8>,
    identity: Identity,
    peer_auth: Option<PeerAuth>,
    responder: Option<ResponderConfig>,
    local_suites: SuiteOffer,
    offered: SuiteOffer,
    suite: Option<Suite>,
    cookie: Option<Vec<u8>>,
    /// IK: the initiator's timestamp (written by the initiator, read by the responder).
    timestamp: Option<Tai64n>,
    /// Initiator, after a cookie reply: the initiation it replaced, for one response (K29).
    earlier: Option<earlier::Earlier>,
    rng: SeededRandom,
}

impl core::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Handshake")
            .field("role", &self.role)
            .field("stage", &self.stage)
            .field("pattern", &self.pattern)
            .field("suite", &self.suite)
            .finish_non_exhaustive()
    }
}

/// Hands snow a deterministic generator seeded from the caller's RNG.
struct Resolver {
    seed: [u8; 32],
}

impl CryptoResolver for Resolver {
    fn resolve_rng(&self) -> Option<Box<dyn snow::types::Random>> {
        Some(Box::new(SnowRandom(SeededRandom::new(self.seed))))
    }
    fn resolve_dh(&self, c: &snow::params::DHChoice) -> Option<Box<dyn snow::types::Dh>> {
        DefaultResolver.resolve_dh(c)
    }
    fn resolve_hash(&self, c: &snow::params::HashChoice) -> Option<Box<dyn snow::types::Hash>> {
        DefaultResolver.resolve_hash(c)
    }
    fn resolve_cipher(
        &self,
        c: &snow::params::CipherChoice,
    ) -> Option<Box<dyn snow::types::Cipher>> {
        DefaultResolver.resolve_cipher(c)
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        self.seed.zeroize();
    }
}

fn prologue(pattern: Pattern, offer: SuiteOffer) -> Vec<u8> {
    let mut p = PROLOGUE.to_vec();
    p.extend_from_slice(&[pattern as u8, offer.0]);
    p
}

fn psk_from_pake(key: &[u8]) -> [u8; 32] {
    blake3::derive_key("netblt 2026-11 one-time code psk", key)
}

const PAKE_ID_A: &[u8] = b"netblt initiator";
const PAKE_ID_B: &[u8] = b"netblt responder";

impl Handshake {
    /// The active end. `rng` seeds the ephemeral keys (and SPAKE2's scalar).
    pub fn initiator(
        config: InitiatorConfig,
        rng: &mut dyn SecureRandom,
    ) -> Result<Self, HandshakeError> {
        let timestamp = Some(config.timestamp);
        let pattern = match config.peer {
            PeerAuth::Pinned(_) => Pattern::Ik,
            PeerAuth::FirstContact => Pattern::Xx,
            PeerAuth::Code(_) => Pattern::XxCode,
        };
        let mut hs = Handshake {
            role: Role::Initiator,
            stage: Stage::WriteInitiation,
            pattern: Some(pattern),
            noise: None,
            pake: None,
            pake_msg: Vec::new(),
            identity: config.identity,
            peer_auth: Some(config.peer),
            responder: None,
            local_suites: config.suites,
            offered: config.suites,
            suite: None,
            cookie: None,
            timestamp,
            earlier: None,
            rng: SeededRandom::from_rng(rng),
        };
        hs.start_initiator()?;
        Ok(hs)
    }

    /// (Re)builds the initiator's Noise and SPAKE2 state: at creation and after a cookie
    /// reply (fresh ephemeral keys: a retried initiation is a new message).
    fn start_initiator(&mut self) -> Result<(), HandshakeError> {
        let pattern = self.pattern.ok_or(HandshakeError::State)?;
        let remote = match &self.peer_auth {
            Some(PeerAuth::Pinned(k)) => Some(*k),
            _ => None,
        };
        self.noise = Some(self.build(pattern, self.local_suites, remote)?);
        if let Some(PeerAuth::Code(code)) = &self.peer_auth {
            let (state, msg) = Spake2::<Ed25519Group>::start_a_with_rng(
                &spake2::Password::new(code.password()),
                &spake2::Identity::new(PAKE_ID_A),
                &spake2::Identity::new(PAKE_ID_B),
                RandCoreAdapter(&mut self.rng),
            );
            self.pake = Some(state);
            self.pake_msg = msg;
        }
        self.stage = Stage::WriteInitiation;
        Ok(())
    }

    /// A Noise state for `pattern`, seeded from our generator, with the prologue binding the
    /// pattern and the initiator's suite offer.
    fn build(
        &mut self,
        pattern: Pattern,
        offer: SuiteOffer,
        remote: Option<PublicKey>,
    ) -> Result<snow::HandshakeState, HandshakeError> {
        let mut seed = [0u8; 32];
        self.rng.fill(&mut seed);
        let resolver = Box::new(Resolver { seed });
        seed.zeroize();
        let params = pattern
            .noise_name()
            .parse()
            .map_err(|_| HandshakeError::State)?;
        let prologue = prologue(pattern, offer);
        let mut builder = snow::Builder::with_resolver(params, resolver)
            .prologue(&prologue)
            .and_then(|b| b.local_private_key(self.identity.private_bytes()))
            .map_err(|_| HandshakeError::State)?;
        let remote_bytes;
        if let Some(k) = remote {
            remote_bytes = *k.as_bytes();
            builder = builder
                .remote_public_key(&remote_bytes)
                .map_err(|_| HandshakeError::State)?;
        }
        match self.role {
            Role::Initiator => builder.build_initiator(),
            Role::Responder => builder.build_responder(),
        }
        .map_err(|_| HandshakeError::State)
    }

    /// The passive end, created when an initiation arrives (after any cookie check).
    pub fn responder(config: ResponderConfig, rng: &mut dyn SecureRandom) -> Self {
        Handshake {
            role: Role::Responder,
            stage: Stage::ReadInitiation,
            pattern: None,
            noise: None,
            pake: None,
            pake_msg: Vec::new(),
            identity: config.identity.clone(),
            peer_auth: None,
            local_suites: config.suites,
            responder: Some(config),
            offered: SuiteOffer(0),
            suite: None,
            cookie: None,
            timestamp: None,
            earlier: None,
            rng: SeededRandom::from_rng(rng),
        }
    }

    /// Initiator still waiting for the response: starts over with fresh ephemeral keys (and,
    /// in IK, this timestamp), keeping any cookie; write the initiation again next. For an
    /// initiation left unanswered so long that the responder may have dropped its state:
    /// repeated as it was, it would then be refused as a replay (WireGuard likewise sends a
    /// new initiation every few seconds rather than repeating one).
    pub fn restart(&mut self, timestamp: Tai64n) -> Result<(), HandshakeError> {
        if self.role != Role::Initiator || self.stage != Stage::ReadResponse {
            return Err(HandshakeError::State);
        }
        self.timestamp = Some(timestamp);
        // A new attempt: what a cookie restart kept was for the response to the one before.
        self.earlier = None;
        self.start_initiator()
    }

    /// Initiator about to write its initiation again after a cookie reply
    /// ([`Progress::RetryWithCookie`]): the timestamp it carries in IK (ignored otherwise).
    /// The responder may have read the initiation the cookie reply replaced (one of two
    /// copies, decision K29), and would refuse the same timestamp again as a replay; take it
    /// from the clock of [`InitiatorConfig::timestamp`].
    pub fn set_timestamp(&mut self, timestamp: Tai64n) -> Result<(), HandshakeError> {
        if self.role != Role::Initiator || self.stage != Stage::WriteInitiation {
            return Err(HandshakeError::State);
        }
        self.timestamp = Some(timestamp);
        Ok(())
    }

    /// Whether both ends have their transport keys.
    pub fn is_finished(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Whether the next call is [`write_message`](Self::write_message).
    pub fn is_my_turn(&self) -> bool {
        matches!(
            self.stage,
            Stage::WriteInitiation | Stage::WriteFinish | Stage::WriteResponse
        )
    }

    /// The pattern in use (the responder knows it once the initiation is read).
    pub fn pattern(&self) -> Option<Pattern> {
        self.pattern
    }

    /// IK, at the responder once the initiation is read: the initiator's timestamp, to check
    /// with [`timestamp::InitiationFreshness::check`] before answering.
    pub fn initiation_timestamp(&self) -> Option<Tai64n> {
        match (self.role, self.pattern) {
            (Role::Responder, Some(Pattern::Ik)) => self.timestamp,
            _ => None,
        }
    }

    /// The negotiated packet AEAD, once known.
    pub fn suite(&self) -> Option<Suite> {
        self.suite
    }

    /// The peer's static key, once the handshake has authenticated it.
    pub fn peer_static(&self) -> Option<PublicKey> {
        self.noise
            .as_ref()
            .and_then(|n| n.get_remote_static())
            .and_then(PublicKey::from_slice)
    }

    /// Writes the next message (its envelope included) with `payload` into `out`; returns
    /// its length. `payload` is at most [`MAX_PAYLOAD_LEN`] bytes.
    pub fn write_message(
        &mut self,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<usize, HandshakeError> {
        if payload.len() > MAX_PAYLOAD_LEN {
            return Err(HandshakeError::Buffer);
        }
        let mut noise_buf = [0u8; MAX_NOISE_LEN];
        let (kind, inner): (Kind, Vec<u8>) = match self.stage {
            Stage::WriteInitiation if self.pattern == Some(Pattern::Ik) => {
                // IK: TAI64N ‖ OPEN body, both encrypted to the responder's key.
                let t = self.timestamp.ok_or(HandshakeError::State)?;
                let mut p = Vec::with_capacity(TIMESTAMP_LEN + payload.len());
                p.extend_from_slice(&t.to_bytes());
                p.extend_from_slice(payload);
                (Kind::Initiation, p)
            }
            Stage::WriteInitiation => (Kind::Initiation, payload.to_vec()),
            Stage::WriteResponse => {
                let suite = self.suite.ok_or(HandshakeError::State)?;
                let mut p = Vec::with_capacity(payload.len() + 1);
                p.push(suite as u8);
                p.extend_from_slice(payload);
                (Kind::Response, p)
            }
            Stage::WriteFinish => (Kind::Finish, payload.to_vec()),
            _ => return Err(HandshakeError::State),
        };
        let noise = self.noise.as_mut().ok_or(HandshakeError::State)?;
        let n = noise
            .write_message(&inner, &mut noise_buf)
            .map_err(|_| HandshakeError::Buffer)?;
        let msg = HandshakeMessage {
            kind,
            pattern: (kind == Kind::Initiation).then_some(self.pattern).flatten(),
            suites: if kind == Kind::Initiation {
                self.local_suites.0
            } else {
                0
            },
            cookie: if kind == Kind::Initiation {
                self.cookie.as_deref()
            } else {
                None
            },
            pake: (kind != Kind::Finish && !self.pake_msg.is_empty()).then_some(&self.pake_msg[..]),
            noise: &noise_buf[..n],
        };
        let len = msg.emit(out).ok_or(HandshakeError::Buffer)?;
        self.stage = match self.stage {
            Stage::WriteInitiation => Stage::ReadResponse,
            Stage::WriteResponse if self.pattern == Some(Pattern::Ik) => Stage::Done,
            Stage::WriteResponse => Stage::ReadFinish,
            _ => Stage::Done,
        };
        Ok(len)
    }

    /// Reads the peer's next message; its application payload goes to `payload_out`.
    ///
    /// An error other than [`HandshakeError::Unexpected`], [`HandshakeError::Malformed`] and
    /// [`HandshakeError::Superseded`] ends the handshake (the state is spent); those three
    /// leave it going.
    pub fn read_message(
        &mut self,
        msg: &[u8],
        payload_out: &mut [u8],
    ) -> Result<Progress, HandshakeError> {
        let m = HandshakeMessage::parse(msg)?;
        match (self.stage, m.kind) {
            (Stage::ReadInitiation, Kind::Initiation) => self.read_initiation(&m, payload_out),
            (Stage::ReadResponse, Kind::Response) => self.read_any_response(&m, payload_out),
            (Stage::ReadResponse, Kind::CookieReply) => {
                let cookie = m.cookie.map(<[u8]>::to_vec);
                if cookie.is_some() && cookie == self.cookie {
                    // A second reply with the cookie our initiation already
                    // carries (one per copy of a redundant first OPEN, R32):
                    // restarting again would orphan the answer to the
                    // initiation already sent with it.
                    return Err(HandshakeError::Unexpected);
                }
                self.cookie = cookie;
                // The passive end may also have answered a copy of the initiation this one
                // replaces (R32's two copies straddling its budget): keep its state for that
                // response (K29, `earlier`).
                self.keep_earlier();
                self.start_initiator()?;
                Ok(Progress::RetryWithCookie)
            }
            (Stage::ReadResponse, Kind::KeyMismatch) => match &self.peer_auth {
                Some(PeerAuth::Pinned(expected)) => {
                    let claimed =
                        PublicKey::from_slice(m.noise).ok_or(HandshakeError::Unexpected)?;
                    if claimed == *expected {
                        // Not a key change; someone is making noise. Ignore it.
                        return Err(HandshakeError::Unexpected);
                    }
                    Err(HandshakeError::HostKeyChanged {
                        expected: *expected,
                        claimed,
                    })
                }
                _ => Err(HandshakeError::Unexpected),
            },
            (Stage::ReadFinish, Kind::Finish) => self.read_finish(&m, payload_out),
            _ => Err(HandshakeError::Unexpected),
        }
    }

    fn read_initiation(
        &mut self,
        m: &HandshakeMessage<'_>,
        payload_out: &mut [u8],
    ) -> Result<Progress, HandshakeError> {
        let cfg = self.responder.clone().ok_or(HandshakeError::State)?;
        let pattern = m.pattern.ok_or(HandshakeError::Unexpected)?;
        let offered = SuiteOffer(m.suites);
        match pattern {
            Pattern::XxCode if cfg.code.is_none() => return Err(HandshakeError::ModeRefused),
            Pattern::Ik | Pattern::Xx if !cfg.accept_keys => {
                return Err(HandshakeError::ModeRefused)
            }
            _ => {}
        }
        let suite = SuiteOffer::choose(offered, cfg.suites).ok_or(HandshakeError::NoCommonSuite)?;
        let mut noise = self.build(pattern, offered, None)?;
        if let (Pattern::XxCode, Some(code), Some(pake_a)) = (pattern, &cfg.code, m.pake) {
            let (state, msg_b) = Spake2::<Ed25519Group>::start_b_with_rng(
                &spake2::Password::new(code.password()),
                &spake2::Identity::new(PAKE_ID_A),
                &spake2::Identity::new(PAKE_ID_B),
                RandCoreAdapter(&mut self.rng),
            );
            // A malformed SPAKE2 message is a failed attempt like a wrong code.
            let mut key = state
                .finish(pake_a)
                .map_err(|_| HandshakeError::CodeMismatch)?;
            let mut psk = psk_from_pake(&key);
            key.zeroize();
            noise.set_psk(2, &psk).map_err(|_| HandshakeError::State)?;
            psk.zeroize();
            self.pake_msg = msg_b;
        }
        let mut buf = [0u8; MAX_MESSAGE_LEN];
        let n = noise
            .read_message(m.noise, &mut buf)
            .map_err(|_| HandshakeError::Decrypt)?;
        let mut body = &buf[..n];
        if pattern == Pattern::Ik {
            let key = noise
                .get_remote_static()
                .and_then(PublicKey::from_slice)
                .ok_or(HandshakeError::Decrypt)?;
            if !cfg.authorization.allows(&key) {
                return Err(HandshakeError::Unauthorized(key));
            }
            // Authenticated, so a bad timestamp is the key holder's doing (or an older
            // peer's layout): refused like a forgery.
            let (t, rest) = body
                .split_at_checked(TIMESTAMP_LEN)
                .ok_or(HandshakeError::Decrypt)?;
            self.timestamp = Some(Tai64n::from_bytes(t).ok_or(HandshakeError::Decrypt)?);
            body = rest;
        }
        let n = body.len();
        let out = payload_out.get_mut(..n).ok_or(HandshakeError::Buffer)?;
        out.copy_from_slice(body);
        self.noise = Some(noise);
        self.pattern = Some(pattern);
        self.offered = offered;
        self.suite = Some(suite);
        self.stage = Stage::WriteResponse;
        Ok(Progress::Payload(n))
    }

    fn read_response(
        &mut self,
        m: &HandshakeMessage<'_>,
        payload_out: &mut [u8],
    ) -> Result<Progress, HandshakeError> {
        let code_mode = self.pattern == Some(Pattern::XxCode);
        if code_mode != m.pake.is_some() {
            return Err(HandshakeError::Unexpected);
        }
        let noise = self.noise.as_mut().ok_or(HandshakeError::State)?;
        if let Some(pake_b) = m.pake {
            let state = self.pake.take().ok_or(HandshakeError::State)?;
            let mut key = state
                .finish(pake_b)
                .map_err(|_| HandshakeError::CodeMismatch)?;
            let mut psk = psk_from_pake(&key);
            key.zeroize();
            noise.set_psk(2, &psk).map_err(|_| HandshakeError::State)?;
            psk.zeroize();
        }
        let mut buf = [0u8; MAX_MESSAGE_LEN];
        let n = noise.read_message(m.noise, &mut buf).map_err(|_| {
            if code_mode {
                HandshakeError::CodeMismatch
            } else {
                HandshakeError::Decrypt
            }
        })?;
        let (&suite_byte, payload) = buf[..n].split_first().ok_or(HandshakeError::Decrypt)?;
        let suite = match suite_byte {
            1 => Suite::Aes256Gcm,
            2 => Suite::ChaCha20Poly1305,
            _ => return Err(HandshakeError::NoCommonSuite),
        };
        if SuiteOffer::choose(SuiteOffer::only(suite), self.local_suites).is_none() {
            return Err(HandshakeError::NoCommonSuite);
        }
        let out = payload_out
            .get_mut(..payload.len())
            .ok_or(HandshakeError::Buffer)?;
        out.copy_from_slice(payload);
        self.suite = Some(suite);
        self.pake_msg.clear();
        self.stage = if self.pattern == Some(Pattern::Ik) {
            Stage::Done
        } else {
            Stage::WriteFinish
        };
        Ok(Progress::Payload(payload.len()))
    }

    fn read_finish(
        &mut self,
        m: &HandshakeMessage<'_>,
        payload_out: &mut [u8],
    ) -> Result<Progress, HandshakeError> {
        let code_mode = self.pattern == Some(Pattern::XxCode);
        let noise = self.noise.as_mut().ok_or(HandshakeError::State)?;
        let mut buf = [0u8; MAX_MESSAGE_LEN];
        let n = noise.read_message(m.noise, &mut buf).map_err(|_| {
            if code_mode {
                HandshakeError::CodeMismatch
            } else {
                HandshakeError::Decrypt
            }
        })?;
        let key = self.peer_static().ok_or(HandshakeError::Decrypt)?;
        let cfg = self.responder.as_ref().ok_or(HandshakeError::State)?;
        if !code_mode && !cfg.authorization.allows(&key) {
            return Err(HandshakeError::Unauthorized(key));
        }
        let out = payload_out.get_mut(..n).ok_or(HandshakeError::Buffer)?;
        out.copy_from_slice(&buf[..n]);
        self.stage = Stage::Done;
        Ok(Progress::Payload(n))
    }

    /// The packet protection of the finished session, with the peer's key.
    pub fn into_transport(mut self) -> Result<PacketProtection, HandshakeError> {
        if self.stage != Stage::Done {
            return Err(HandshakeError::State);
        }
        let suite = self.suite.ok_or(HandshakeError::State)?;
        let peer = self.peer_static();
        let noise = self.noise.as_mut().ok_or(HandshakeError::State)?;
        let hash = noise.get_handshake_hash().to_vec();
        // Noise's Split(): the first key protects initiator-to-responder traffic.
        let (i2r, r2i) = noise.dangerously_get_raw_split();
        let (send, recv) = match self.role {
            Role::Initiator => (i2r, r2i),
            Role::Responder => (r2i, i2r),
        };
        Ok(PacketProtection::from_secrets(suite, send, recv).with_peer(peer, &hash))
    }
}

/// Writes a cookie reply envelope (the passive end under load, instead of a RESPONSE).
pub fn write_cookie_reply(cookie: &[u8], out: &mut [u8]) -> Option<usize> {
    HandshakeMessage {
        kind: Kind::CookieReply,
        pattern: None,
        suites: 0,
        cookie: Some(cookie),
        pake: None,
        noise: &[],
    }
    .emit(out)
}

/// Writes a key-mismatch reply naming our public key (after an IK initiation failed with
/// [`HandshakeError::Decrypt`]), so the initiator can report a changed host key.
pub fn write_key_mismatch(identity: &Identity, out: &mut [u8]) -> Option<usize> {
    HandshakeMessage {
        kind: Kind::KeyMismatch,
        pattern: None,
        suites: 0,
        cookie: None,
        pake: None,
        noise: identity.public().as_bytes(),
    }
    .emit(out)
}

#[cfg(test)]
mod tests;
