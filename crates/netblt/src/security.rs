//! How a transfer is protected (issue 11): the options and the key files.
//!
//! [`Security::Encrypted`] runs the Noise handshake of `netblt-crypto` in
//! OPEN/RESPONSE and seals every other packet (docs/security.md); the
//! driver does it around the engine (`driver/secure/`), so the engine still
//! sees plain RFC 998 packets. [`Security::Insecure`] is plain RFC 998, for
//! interoperation and measurements.
//!
//! The library's default is [`Security::Insecure`] (decision K14: the API
//! and its tests predate encryption, and a library must not create key
//! files in `$HOME` behind its caller's back); the `netblt` tool encrypts by
//! default and asks for `--insecure`.

use std::path::PathBuf;

use netblt_crypto::{
    AuthorizedKeys, FileError, Identity, KeyDir, KnownHosts, LimitConfig, OneTimeCode, OsRandom,
};

use crate::error::{AppError, Kind};

/// Whether and how a transfer is encrypted and authenticated.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Security {
    /// Plain RFC 998: no handshake, no protection (Version 1 packets).
    #[default]
    Insecure,
    /// The handshake in OPEN/RESPONSE and AEAD on every packet (Version 2).
    Encrypted(Encryption),
}

impl Security {
    /// Encrypted with the key directory from the environment and default
    /// settings.
    pub fn encrypted() -> Security {
        Security::Encrypted(Encryption::default())
    }

    /// Whether packets are protected.
    pub fn is_encrypted(&self) -> bool {
        matches!(self, Security::Encrypted(_))
    }
}

/// The settings of an encrypted transfer.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Encryption {
    /// The key directory (`id_netblt`, `authorized_keys`, `known_hosts`);
    /// `None`: `$NETBLT_HOME`, else `$XDG_CONFIG_HOME/netblt`, else
    /// `~/.config/netblt`. Created, with a new key pair, on first use.
    pub key_dir: Option<PathBuf>,
    /// Receiver: accept any sender's key, not only those in
    /// `authorized_keys`. Default off.
    pub accept_any: bool,
    /// A one-time code (`crossword-puppy-orbit`): both ends authenticate
    /// by it instead of by keys (SPAKE2 + Noise XXpsk2). A receiver with a
    /// code accepts only code-mode senders and burns the code after one
    /// attempt.
    pub code: Option<String>,
    /// Receiver: connection limits and the cookie threshold.
    pub limits: LimitConfig,
}

/// The loaded key material of one end.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub(crate) dir: KeyDir,
    pub(crate) identity: Identity,
    pub(crate) code: Option<OneTimeCode>,
}

fn file_error(e: FileError) -> AppError {
    AppError::new(Kind::Local, format!("key files: {e}"), "")
}

impl Keys {
    /// Loads (or creates, on first use) this host's identity, and parses
    /// the code.
    pub(crate) fn load(enc: &Encryption) -> Result<Keys, AppError> {
        let dir = match &enc.key_dir {
            Some(p) => KeyDir::at(p),
            None => KeyDir::from_env().map_err(file_error)?,
        };
        let (identity, created) = dir
            .load_or_create_identity(&mut OsRandom)
            .map_err(file_error)?;
        if created {
            tracing::info!(dir = %dir.path().display(), "created a new key pair");
        }
        let code = enc
            .code
            .as_deref()
            .map(OneTimeCode::parse)
            .transpose()
            .map_err(|e| AppError::new(Kind::InvalidOptions, format!("one-time code: {e}"), ""))?;
        Ok(Keys {
            dir,
            identity,
            code,
        })
    }

    pub(crate) fn authorized(&self) -> Result<AuthorizedKeys, AppError> {
        AuthorizedKeys::load(&netblt_crypto::authorized::default_path(&self.dir))
            .map_err(file_error)
    }

    pub(crate) fn known_hosts(&self) -> Result<KnownHosts, AppError> {
        KnownHosts::load(&netblt_crypto::known_hosts::default_path(&self.dir)).map_err(file_error)
    }
}

/// What the protection did on one end of a transfer (or, for a receiver,
/// all its sessions): in reports as `security`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SecurityReport {
    /// The packet AEAD (`AES-256-GCM`, `ChaCha20-Poly1305`).
    pub suite: String,
    /// The handshake pattern (`IK`, `XX`, `XXpsk2`).
    pub pattern: String,
    /// The peer's key fingerprint, once authenticated.
    pub peer: Option<String>,
    /// Packets that failed authentication (forged, modified, truncated).
    pub forged: u64,
    /// Replayed packets (counter seen before, or behind the window).
    pub replayed: u64,
    /// Plain (Version 1) packets dropped in an encrypted session.
    pub plaintext: u64,
    /// Other datagrams dropped (early, unexpected handshake messages).
    pub dropped: u64,
    /// Times a peer's authenticated packets came from a new address (a NAT
    /// that rebound its mapping, a host that changed networks) and its
    /// session moved there (docs/security.md, "Address changes").
    pub migrated: u64,
}

impl SecurityReport {
    pub(crate) fn add_protection(&mut self, s: &netblt_crypto::ProtectionStats) {
        self.forged += s.forged + s.too_short + s.out_of_range;
        self.replayed += s.replayed + s.too_old;
    }
}
