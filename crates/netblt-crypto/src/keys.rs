//! Long-term static keys (X25519, the Noise `25519` DH) and their printable forms.
//!
//! ```text
//! public key   netblt:<base64 of the 32 bytes>          44 base64 characters, like WireGuard
//! private key  netblt-private:<base64 of the 32 bytes>   only ever in the 0600 key file
//! fingerprint  nbfp:<base64url of BLAKE3(public)[..15]>  20 characters, for people to compare
//! ```
//!
//! The public key text is a single token, so that `authorized_keys` and `known_hosts` lines
//! can be split on white space like ssh's.

use core::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use snow::resolvers::{CryptoResolver, DefaultResolver};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::rng::SecureRandom;

/// Length of a public or private X25519 key.
pub const KEY_LEN: usize = 32;
/// Prefix of a printed public key.
pub const PUBLIC_PREFIX: &str = "netblt:";
/// Prefix of a private key in its file.
pub const PRIVATE_PREFIX: &str = "netblt-private:";
/// Prefix of a fingerprint.
pub const FINGERPRINT_PREFIX: &str = "nbfp:";

/// Why a key did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyParseError {
    /// The text does not start with the expected prefix.
    #[error("expected a key starting with `{0}`")]
    Prefix(&'static str),
    /// The base64 part is not valid base64 or is not 32 bytes long.
    #[error("the key is not 32 bytes of base64")]
    Encoding,
}

/// A peer's or our own static public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; KEY_LEN]);

impl PublicKey {
    /// Wraps raw bytes.
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        PublicKey(bytes)
    }

    /// Copies a slice of exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(PublicKey)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The short form people compare by eye or read over the phone.
    pub fn fingerprint(&self) -> String {
        let h = blake3::derive_key("netblt 2026-11 public key fingerprint", &self.0);
        format!("{FINGERPRINT_PREFIX}{}", URL_SAFE_NO_PAD.encode(&h[..15]))
    }

    /// Parses `netblt:<base64>`.
    pub fn parse(text: &str) -> Result<Self, KeyParseError> {
        let b64 = text
            .strip_prefix(PUBLIC_PREFIX)
            .ok_or(KeyParseError::Prefix(PUBLIC_PREFIX))?;
        decode_key(b64).map(PublicKey)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PUBLIC_PREFIX}{}", STANDARD.encode(self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

impl core::str::FromStr for PublicKey {
    type Err = KeyParseError;
    fn from_str(s: &str) -> Result<Self, KeyParseError> {
        PublicKey::parse(s)
    }
}

fn decode_key(b64: &str) -> Result<[u8; KEY_LEN], KeyParseError> {
    // 32 bytes are 44 base64 characters; refuse anything longer before decoding.
    if b64.len() != 44 {
        return Err(KeyParseError::Encoding);
    }
    let mut out = [0u8; KEY_LEN + 3];
    let n = STANDARD
        .decode_slice(b64, &mut out)
        .map_err(|_| KeyParseError::Encoding)?;
    let key: [u8; KEY_LEN] = out
        .get(..n)
        .and_then(|s| s.try_into().ok())
        .ok_or(KeyParseError::Encoding)?;
    out.zeroize();
    Ok(key)
}

/// A long-term static key pair. The private half is wiped from memory on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Identity {
    private: [u8; KEY_LEN],
    #[zeroize(skip)]
    public: PublicKey,
}

impl Identity {
    /// A new random key pair.
    pub fn generate(rng: &mut dyn SecureRandom) -> Self {
        let mut private = [0u8; KEY_LEN];
        rng.fill(&mut private);
        let id = Identity::from_private(private);
        private.zeroize();
        id
    }

    /// The key pair of a private key (the public half is computed: X25519 base-point multiply).
    pub fn from_private(private: [u8; KEY_LEN]) -> Self {
        let mut dh = DefaultResolver
            .resolve_dh(&snow::params::DHChoice::Curve25519)
            .expect("snow's default resolver always has Curve25519");
        dh.set(&private);
        let public = PublicKey::from_slice(dh.pubkey()).expect("X25519 public keys are 32 bytes");
        Identity { private, public }
    }

    /// Our public key.
    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// The raw private key, for the handshake.
    pub(crate) fn private_bytes(&self) -> &[u8; KEY_LEN] {
        &self.private
    }

    /// The private key file's text (one line).
    pub fn private_text(&self) -> String {
        format!("{PRIVATE_PREFIX}{}\n", STANDARD.encode(self.private))
    }

    /// Parses the private key file's text (`netblt-private:<base64>`, surrounding blanks ignored).
    pub fn parse_private(text: &str) -> Result<Self, KeyParseError> {
        let b64 = text
            .trim()
            .strip_prefix(PRIVATE_PREFIX)
            .ok_or(KeyParseError::Prefix(PRIVATE_PREFIX))?;
        let mut private = decode_key(b64)?;
        let id = Identity::from_private(private);
        private.zeroize();
        Ok(id)
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.public.fingerprint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeededRandom;

    #[test]
    fn public_key_text_round_trips() {
        let id = Identity::generate(&mut SeededRandom::from_u64(7));
        let text = id.public().to_string();
        assert!(text.starts_with("netblt:"));
        assert_eq!(text.len(), 7 + 44);
        assert_eq!(PublicKey::parse(&text), Ok(id.public()));
        let fp = id.public().fingerprint();
        assert!(fp.starts_with("nbfp:") && fp.len() == 25, "{fp}");
    }

    #[test]
    fn private_key_text_round_trips() {
        let id = Identity::generate(&mut SeededRandom::from_u64(8));
        let back = Identity::parse_private(&id.private_text()).unwrap();
        assert_eq!(back.public(), id.public());
    }

    #[test]
    fn x25519_public_key_matches_rfc7748() {
        // RFC 7748 §6.1, Alice's key pair.
        let private = hex32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let public = hex32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_eq!(Identity::from_private(private).public().as_bytes(), &public);
    }

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    #[test]
    fn junk_keys_are_errors() {
        for junk in [
            "",
            "netblt:",
            "netblt:AAAA",
            "ssh-ed25519 AAAA",
            "netblt:!!!!",
        ] {
            assert!(PublicKey::parse(junk).is_err(), "{junk}");
        }
        let too_long = format!("netblt:{}", "A".repeat(48));
        assert!(PublicKey::parse(&too_long).is_err());
    }
}
