//! The initiation a cookie reply made the initiator replace, kept to read one response
//! (decision K29).
//!
//! A sender's two copies of its first initiation (R32) can straddle the moment the passive
//! end's handshake budget runs out or refills: one copy draws a cookie reply, the other a
//! response. The initiator restarts with the cookie (fresh ephemeral keys), and the response
//! to the earlier initiation then fails authentication against the new state. Before K29 that
//! ended the handshake; K28 asked for "the active end, after a cookie restart, taking a response
//! that fails authentication as one to the earlier initiation ... rather than as the end". So the
//! earlier state reads the first response after a cookie restart before the new one does:
//!
//! * key mode (IK, XX): a response the earlier state authenticates answers an initiation that
//!   is no longer ours. [`HandshakeError::Superseded`]: drop it and wait. The passive end lets
//!   the initiation with the valid cookie replace its unproven pending handshake from that
//!   address and port (docs/security.md), so the response to the new one follows; copies of
//!   the dropped response are recognised by their bytes and dropped too.
//! * code mode: the earlier handshake is taken up (the passive end never replaces a pending
//!   code handshake: each one is a guess of the code), so its response is read as ours.
//!
//! A response that fails against both states stays fatal. The earlier state reads one response
//! (copies of a superseded one are compared, not read) and nothing here restarts the handshake:
//! no loop for an attacker to drive.

use spake2::{Ed25519Group, Spake2};

use super::message::{HandshakeMessage, Pattern};
use super::{Handshake, HandshakeError, Progress, Stage};

/// The per-initiation part of an initiator's state: what a cookie restart rebuilds.
pub(super) struct Attempt {
    noise: Option<snow::HandshakeState>,
    pake: Option<Spake2<Ed25519Group>>,
    pake_msg: Vec<u8>,
}

/// What is kept of the initiation a cookie reply replaced.
pub(super) enum Earlier {
    /// Its state, not yet tried on a response.
    State(Box<Attempt>),
    /// The Noise part of the response it got (key mode): copies of it are superseded too (R32
    /// has the passive end answer a redundant copy with the same bytes).
    Answered(Vec<u8>),
}

impl Handshake {
    /// At a cookie reply, before the state is rebuilt: keep the current initiation's state
    /// for one response (an earlier one kept before is dropped: one per restart).
    pub(super) fn keep_earlier(&mut self) {
        let attempt = self.swap_attempt(Attempt {
            noise: None,
            pake: None,
            pake_msg: Vec::new(),
        });
        self.earlier = Some(Earlier::State(Box::new(attempt)));
    }

    fn swap_attempt(&mut self, a: Attempt) -> Attempt {
        Attempt {
            noise: std::mem::replace(&mut self.noise, a.noise),
            pake: std::mem::replace(&mut self.pake, a.pake),
            pake_msg: std::mem::replace(&mut self.pake_msg, a.pake_msg),
        }
    }

    /// Reads a response: with the state of the initiation a cookie reply replaced first, if
    /// one is kept (see the module docs), then with the current one.
    pub(super) fn read_any_response(
        &mut self,
        m: &HandshakeMessage<'_>,
        payload_out: &mut [u8],
    ) -> Result<Progress, HandshakeError> {
        let old = match self.earlier.take() {
            None => return self.read_response(m, payload_out),
            Some(Earlier::Answered(noise)) => {
                let copy = noise == m.noise;
                self.earlier = Some(Earlier::Answered(noise));
                if copy {
                    return Err(HandshakeError::Superseded);
                }
                return self.read_response(m, payload_out);
            }
            Some(Earlier::State(old)) => old,
        };
        // Tried first: in code mode a failed read spends the SPAKE2 state it used, so the
        // current one must not be tried on the earlier initiation's response.
        let current = self.swap_attempt(*old);
        match self.read_response(m, payload_out) {
            // Code mode: the passive end keeps the handshake it answered; so do we.
            Ok(p) if self.pattern == Some(Pattern::XxCode) => Ok(p),
            Ok(_) => {
                let _answered = self.swap_attempt(current);
                self.stage = Stage::ReadResponse;
                self.suite = None;
                self.earlier = Some(Earlier::Answered(m.noise.to_vec()));
                Err(HandshakeError::Superseded)
            }
            // Not a response at all: nothing tried, the earlier state stays.
            Err(e @ (HandshakeError::Unexpected | HandshakeError::Malformed(_))) => {
                let old = self.swap_attempt(current);
                self.earlier = Some(Earlier::State(Box::new(old)));
                Err(e)
            }
            // Not its answer: the earlier state is spent, the current one reads it.
            Err(_) => {
                let _spent = self.swap_attempt(current);
                self.read_response(m, payload_out)
            }
        }
    }
}

#[cfg(test)]
#[path = "earlier_tests.rs"]
mod tests;
