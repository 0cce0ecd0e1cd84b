//! The handshake envelope: what follows the 12-byte NETBLT common header in an OPEN,
//! a RESPONSE, the active end's FINISH, a cookie reply or a key-mismatch reply.
//!
//! ```text
//!  0       1       2       3       4               6               8              10
//! +-------+-------+-------+-------+---------------+---------------+---------------+
//! |format | kind  |pattern|suites | cookie length |  pake length  | noise length  |
//! +-------+-------+-------+-------+---------------+---------------+---------------+
//! | cookie (0 or 20 bytes) | SPAKE2 message (0 or 33) | Noise message (0..=1024)   |
//! +------------------------------------------------------------------------------+
//! ```
//!
//! Lengths are big-endian and must add up to the message exactly. `format` is
//! [`FORMAT`]; `pattern` and `suites` are meaningful only in an initiation (`suites` is
//! the initiator's offer, [`SuiteOffer`](crate::SuiteOffer)) and must be zero otherwise, except
//! that a key-mismatch reply carries the responder's public key as its "Noise message".
//!
//! Never-panic contract: [`HandshakeMessage::parse`] bounds-checks everything and never
//! panics on any input (fuzzed by `fuzz/fuzz_targets/handshake.rs`).

use crate::dos::cookie::COOKIE_LEN;

/// The envelope format this crate writes and reads: 2 since the IK initiation carries a
/// timestamp and the XX response no RESPONSE body (decisions K19, K20); 3 since the packets
/// after the handshake carry 4 bytes of counter instead of 8 (decision K24). Older formats
/// are refused with [`MessageError::Format`], which a passive end answers with a refusal
/// naming it.
pub const FORMAT: u8 = 3;
/// Length of the fixed part.
pub const ENVELOPE_FIXED_LEN: usize = 10;
/// Length of a SPAKE2 (Ed25519 group) message: a side byte and a point.
pub const PAKE_LEN: usize = 33;
/// Upper bound on the Noise part; with the rest this keeps a handshake datagram well under
/// 1200 bytes.
pub const MAX_NOISE_LEN: usize = 1024;
/// Upper bound on a whole envelope.
pub const MAX_MESSAGE_LEN: usize = ENVELOPE_FIXED_LEN + COOKIE_LEN + PAKE_LEN + MAX_NOISE_LEN;

/// What a handshake message is.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// First message, active end to passive end, in the OPEN.
    Initiation = 1,
    /// Second message, in the RESPONSE.
    Response = 2,
    /// Third message (XX patterns), sent by the active end after the RESPONSE.
    Finish = 3,
    /// The passive end, under load, asks for the initiation again with this cookie.
    CookieReply = 4,
    /// The passive end could not decrypt an IK initiation: it names its own key.
    KeyMismatch = 5,
}

/// Which Noise pattern the initiator chose.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Pinned responder key: `Noise_IK_25519_ChaChaPoly_BLAKE2s`, two messages.
    Ik = 1,
    /// First contact: `Noise_XX_25519_ChaChaPoly_BLAKE2s`, three messages.
    Xx = 2,
    /// One-time code: `Noise_XXpsk2_25519_ChaChaPoly_BLAKE2s` with the SPAKE2 key as PSK.
    XxCode = 3,
}

impl Pattern {
    pub(crate) fn noise_name(self) -> &'static str {
        match self {
            Pattern::Ik => "Noise_IK_25519_ChaChaPoly_BLAKE2s",
            Pattern::Xx => "Noise_XX_25519_ChaChaPoly_BLAKE2s",
            Pattern::XxCode => "Noise_XXpsk2_25519_ChaChaPoly_BLAKE2s",
        }
    }

    /// Messages in the pattern (2 or 3).
    pub fn messages(self) -> usize {
        match self {
            Pattern::Ik => 2,
            Pattern::Xx | Pattern::XxCode => 3,
        }
    }
}

/// Why an envelope did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// Shorter than its fixed part or than its lengths say, or longer.
    #[error("handshake message length does not match its fields")]
    Length,
    /// Unknown format byte.
    #[error("unknown handshake format {0}")]
    Format(u8),
    /// Unknown kind.
    #[error("unknown handshake message kind {0}")]
    Kind(u8),
    /// Unknown pattern, or a pattern where none belongs.
    #[error("bad handshake pattern {0}")]
    Pattern(u8),
    /// A field present that this kind must not carry, or one missing that it must.
    #[error("handshake message fields do not fit its kind")]
    Fields,
}

/// A parsed envelope, borrowing its parts from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandshakeMessage<'a> {
    /// Which message of the handshake this is.
    pub kind: Kind,
    /// Initiation only.
    pub pattern: Option<Pattern>,
    /// Initiation only: the initiator's [`SuiteOffer`](crate::SuiteOffer) byte.
    pub suites: u8,
    /// Initiation (optional) and cookie reply (required).
    pub cookie: Option<&'a [u8]>,
    /// Initiation and response in code mode.
    pub pake: Option<&'a [u8]>,
    /// The Noise message (or, in a key-mismatch reply, the responder's public key).
    pub noise: &'a [u8],
}

impl<'a> HandshakeMessage<'a> {
    /// Parses an envelope (the bytes after the NETBLT common header).
    pub fn parse(buf: &'a [u8]) -> Result<Self, MessageError> {
        let fixed = buf.get(..ENVELOPE_FIXED_LEN).ok_or(MessageError::Length)?;
        let u16_at = |i: usize| usize::from(u16::from_be_bytes([fixed[i], fixed[i + 1]]));
        if fixed[0] != FORMAT {
            return Err(MessageError::Format(fixed[0]));
        }
        let kind = match fixed[1] {
            1 => Kind::Initiation,
            2 => Kind::Response,
            3 => Kind::Finish,
            4 => Kind::CookieReply,
            5 => Kind::KeyMismatch,
            k => return Err(MessageError::Kind(k)),
        };
        let (c, p, n) = (u16_at(4), u16_at(6), u16_at(8));
        if c > COOKIE_LEN || p > PAKE_LEN || n > MAX_NOISE_LEN {
            return Err(MessageError::Length);
        }
        if buf.len() != ENVELOPE_FIXED_LEN + c + p + n {
            return Err(MessageError::Length);
        }
        let body = &buf[ENVELOPE_FIXED_LEN..];
        let (cookie, rest) = body.split_at(c);
        let (pake, noise) = rest.split_at(p);
        let opt = |s: &'a [u8]| (!s.is_empty()).then_some(s);
        let (cookie, pake) = (opt(cookie), opt(pake));
        if c != 0 && c != COOKIE_LEN || p != 0 && p != PAKE_LEN {
            return Err(MessageError::Fields);
        }
        let pattern = match (kind, fixed[2]) {
            (Kind::Initiation, 1) => Some(Pattern::Ik),
            (Kind::Initiation, 2) => Some(Pattern::Xx),
            (Kind::Initiation, 3) => Some(Pattern::XxCode),
            (Kind::Initiation, x) => return Err(MessageError::Pattern(x)),
            (_, 0) => None,
            (_, x) => return Err(MessageError::Pattern(x)),
        };
        let suites = fixed[3];
        let fields_ok = match kind {
            Kind::Initiation => {
                suites != 0 && (pake.is_some() == (pattern == Some(Pattern::XxCode))) && n > 0
            }
            Kind::Response => suites == 0 && cookie.is_none() && n > 0,
            Kind::Finish => suites == 0 && cookie.is_none() && pake.is_none() && n > 0,
            Kind::CookieReply => suites == 0 && cookie.is_some() && pake.is_none() && n == 0,
            Kind::KeyMismatch => {
                suites == 0 && cookie.is_none() && pake.is_none() && n == crate::keys::KEY_LEN
            }
        };
        if !fields_ok {
            return Err(MessageError::Fields);
        }
        Ok(HandshakeMessage {
            kind,
            pattern,
            suites,
            cookie,
            pake,
            noise,
        })
    }

    /// Length of the encoded envelope.
    pub fn buffer_len(&self) -> usize {
        ENVELOPE_FIXED_LEN
            + self.cookie.map_or(0, <[u8]>::len)
            + self.pake.map_or(0, <[u8]>::len)
            + self.noise.len()
    }

    /// Writes the envelope into `out`; returns its length, or `None` if `out` is too small
    /// or a part is longer than its bound.
    pub fn emit(&self, out: &mut [u8]) -> Option<usize> {
        let cookie = self.cookie.unwrap_or_default();
        let pake = self.pake.unwrap_or_default();
        if cookie.len() > COOKIE_LEN || pake.len() > PAKE_LEN || self.noise.len() > MAX_NOISE_LEN {
            return None;
        }
        let len = self.buffer_len();
        let out = out.get_mut(..len)?;
        out[0] = FORMAT;
        out[1] = self.kind as u8;
        out[2] = self.pattern.map_or(0, |p| p as u8);
        out[3] = self.suites;
        // The bounds above make these lengths fit in u16.
        out[4..6].copy_from_slice(&(cookie.len() as u16).to_be_bytes());
        out[6..8].copy_from_slice(&(pake.len() as u16).to_be_bytes());
        out[8..10].copy_from_slice(&(self.noise.len() as u16).to_be_bytes());
        let mut at = ENVELOPE_FIXED_LEN;
        for part in [cookie, pake, self.noise] {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn emit_parse_round_trip() {
        let cookie = [7u8; COOKIE_LEN];
        let pake = [9u8; PAKE_LEN];
        let m = HandshakeMessage {
            kind: Kind::Initiation,
            pattern: Some(Pattern::XxCode),
            suites: 3,
            cookie: Some(&cookie),
            pake: Some(&pake),
            noise: &[1, 2, 3],
        };
        let mut buf = [0u8; 200];
        let n = m.emit(&mut buf).unwrap();
        assert_eq!(n, 10 + COOKIE_LEN + 33 + 3);
        assert_eq!(HandshakeMessage::parse(&buf[..n]), Ok(m));
        assert_eq!(
            HandshakeMessage::parse(&buf[..n - 1]),
            Err(MessageError::Length)
        );
        assert!(m.emit(&mut buf[..n - 1]).is_none());
    }

    #[test]
    fn kind_rules() {
        let mut buf = [0u8; 64];
        // A cookie reply without a cookie.
        buf[..10].copy_from_slice(&[FORMAT, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            HandshakeMessage::parse(&buf[..10]),
            Err(MessageError::Fields)
        );
        // An initiation in code mode without a SPAKE2 message.
        buf[..11].copy_from_slice(&[FORMAT, 1, 3, 1, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            HandshakeMessage::parse(&buf[..11]),
            Err(MessageError::Fields)
        );
        // A response naming a pattern.
        buf[..11].copy_from_slice(&[FORMAT, 2, 1, 0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            HandshakeMessage::parse(&buf[..11]),
            Err(MessageError::Pattern(1))
        );
        assert_eq!(
            HandshakeMessage::parse(&[9; 10]),
            Err(MessageError::Format(9))
        );
        // Format 1 (before the IK timestamp) is refused by its number, so a passive end
        // can tell an older sender what to do.
        buf[..11].copy_from_slice(&[1, 1, 2, 1, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            HandshakeMessage::parse(&buf[..11]),
            Err(MessageError::Format(1))
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
            if let Ok(m) = HandshakeMessage::parse(&bytes) {
                let mut out = vec![0u8; m.buffer_len()];
                prop_assert_eq!(m.emit(&mut out), Some(bytes.len()));
                prop_assert_eq!(out, bytes);
            }
        }

        #[test]
        fn parse_structured_never_panics(
            kind in 0u8..7, pattern in 0u8..5, suites in any::<u8>(),
            c in 0usize..40, p in 0usize..40, n in 0usize..80, extra in 0usize..3,
        ) {
            let mut b = vec![FORMAT, kind, pattern, suites];
            for l in [c, p, n] { b.extend_from_slice(&(l as u16).to_be_bytes()); }
            b.resize(10 + c + p + n + extra, 0xAB);
            let _ = HandshakeMessage::parse(&b);
        }
    }
}
