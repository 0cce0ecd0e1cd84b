//! The cryptographic core of encrypted, authenticated NETBLT transfers (issue 11).
//!
//! Sans-IO like `netblt-proto`: no sockets, no clock (time comes in as `now`), no global
//! randomness (an RNG comes in as [`SecureRandom`]), so tests and simulations are
//! deterministic. Only [`keydir`], [`authorized`] and [`known_hosts`] touch files.
//!
//! The layers, bottom up:
//!
//! * [`keys`]: X25519 static key pairs, printable public keys (`netblt:<base64>`) and
//!   fingerprints (`nbfp:...`); [`keydir`]: the key directory and its 0600 private key file;
//!   [`authorized`] (`authorized_keys`) and [`known_hosts`] (trust on first use).
//! * [`handshake`]: a Noise handshake (via `snow`) carried in OPEN and RESPONSE, plus a third
//!   message for the XX patterns: IK when the initiator pinned the responder's key, XX on
//!   first contact, XXpsk2 with a SPAKE2-derived PSK in one-time-code mode ([`code`]).
//! * [`protection`]: per-packet AEAD (AES-256-GCM with AES instructions, else
//!   ChaCha20-Poly1305, via `ring`), the 12-byte NETBLT header in the clear as associated
//!   data, an explicit 64-bit counter, a [`replay`] window, and batch calls for GSO trains.
//! * [`dos`]: stateless cookies, the 3x anti-amplification rule, connection limits.
//!
//! No cryptographic primitive is implemented here; docs/security.md has the design, the
//! wire formats and the threat model.

#![deny(missing_docs)]

pub mod authorized;
pub mod code;
pub mod dos;
pub mod handshake;
pub mod keydir;
pub mod keys;
pub mod known_hosts;
pub mod protection;
pub mod replay;
pub mod rng;

pub use authorized::{Authorization, AuthorizedKeys};
pub use code::{CodeError, OneTimeCode};
pub use dos::amplification::AmplificationLimit;
pub use dos::cookie::{Cookie, CookieError, CookieGenerator};
pub use dos::limits::{ConnectionLimiter, LimitConfig, LimitError};
pub use handshake::message::{HandshakeMessage, Kind, MessageError, Pattern};
pub use handshake::timestamp::{
    FreshnessConfig, FreshnessError, InitiationFreshness, Tai64n, TIMESTAMP_LEN,
};
pub use handshake::{
    Handshake, HandshakeError, InitiatorConfig, PeerAuth, Progress, ResponderConfig,
};
pub use keydir::{FileError, KeyDir};
pub use keys::{Identity, KeyParseError, PublicKey};
pub use known_hosts::{HostKeyError, HostStatus, KnownHosts};
pub use protection::{
    has_aes_hardware, Datagram, OpenError, PacketProtection, ProtectionStats, SealError, Suite,
    SuiteOffer, OVERHEAD,
};
pub use replay::ReplayWindow;
pub use rng::{OsRandom, SecureRandom, SeededRandom};
