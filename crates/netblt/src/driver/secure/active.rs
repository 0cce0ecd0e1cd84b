//! The active end's side of encrypted mode: one handshake as initiator,
//! then one [`PacketProtection`].

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netblt_crypto::handshake::message::MAX_MESSAGE_LEN;
use netblt_crypto::{
    Handshake, HandshakeError, HandshakeMessage, HostStatus, InitiatorConfig, KnownHosts, OsRandom,
    PacketProtection, Pattern, PeerAuth, Progress, SuiteOffer,
};
use netblt_proto::Gathered;

use super::{
    handshake_datagram, initiation_timestamp, kind, open_body, plain_open, plain_reason, ports,
    quit, Rx, OPEN, PLAIN, PROTECTED, RESPONSE,
};
use crate::error::{AppError, ErrorKind, Kind, PeerReason};
use crate::security::{Keys, SecurityReport};

/// First FINISH retransmission; doubles, [`FINISH_TRIES`] at most (rule 2
/// of docs/security.md: until a packet of the passive end opens).
const FINISH_RTO: Duration = Duration::from_millis(200);
const FINISH_TRIES: u32 = 8;

/// An initiation unanswered this long is written anew (fresh ephemeral key
/// and timestamp) rather than repeated: by then the passive end dropped any
/// half-open state for it (after 5 s) and would refuse the same bytes as a
/// replay (K19).
const REWRITE_AFTER: Duration = Duration::from_secs(6);

pub(crate) fn pattern_name(p: Option<Pattern>) -> &'static str {
    match p {
        Some(Pattern::Ik) => "IK",
        Some(Pattern::Xx) => "XX",
        Some(Pattern::XxCode) => "XXpsk2",
        _ => "",
    }
}

/// See the module docs.
pub(crate) struct ActiveSecurity {
    peer: SocketAddr,
    host_id: String,
    known_hosts: Option<KnownHosts>,
    first_contact: bool,
    hs: Option<Handshake>,
    prot: Option<PacketProtection>,
    /// The OPEN body, for a retry after a cookie reply.
    body: Vec<u8>,
    local_port: u16,
    remote_port: u16,
    initiation: Option<Vec<u8>>,
    /// When `initiation` was written.
    written_at: Option<Instant>,
    finish: Option<Vec<u8>>,
    finish_at: Option<Instant>,
    finish_tries: u32,
    /// A packet of the peer opened (or IK's RESPONSE was read): plain
    /// refusals are forgeries from now on.
    peer_proven: bool,
    outbox: VecDeque<Vec<u8>>,
    failure: Option<AppError>,
    report: SecurityReport,
    /// Anything at all came from the peer.
    heard: bool,
}

/// A failed handshake ([`ErrorKind::Handshake`] unless said otherwise).
fn fail(msg: impl Into<String>) -> AppError {
    AppError::new(Kind::Failed, msg, "").because(ErrorKind::Handshake)
}

impl ActiveSecurity {
    pub(crate) fn new(keys: &Keys, peer: SocketAddr) -> Result<ActiveSecurity, AppError> {
        let host_id = KnownHosts::host_id(&peer.ip().to_string(), peer.port());
        let (auth, known_hosts, first_contact) = match &keys.code {
            Some(c) => (PeerAuth::Code(c.clone()), None, false),
            None => {
                let kh = keys.known_hosts()?;
                match kh.status(&host_id) {
                    HostStatus::Pinned(k) => (PeerAuth::Pinned(k), Some(kh), false),
                    HostStatus::Unknown => (PeerAuth::FirstContact, Some(kh), true),
                }
            }
        };
        let hs = Handshake::initiator(
            InitiatorConfig {
                identity: keys.identity.clone(),
                peer: auth,
                suites: SuiteOffer::local(),
                timestamp: initiation_timestamp(),
            },
            &mut OsRandom,
        )
        .map_err(|e| fail(format!("handshake: {e}")))?;
        let report = SecurityReport {
            pattern: pattern_name(hs.pattern()).into(),
            ..SecurityReport::default()
        };
        Ok(ActiveSecurity {
            peer,
            host_id,
            known_hosts,
            first_contact,
            hs: Some(hs),
            prot: None,
            body: Vec::new(),
            local_port: 0,
            remote_port: 0,
            initiation: None,
            written_at: None,
            finish: None,
            finish_at: None,
            finish_tries: 0,
            peer_proven: false,
            outbox: VecDeque::new(),
            failure: None,
            report,
            heard: false,
        })
    }

    /// One-time-code mode.
    pub(crate) fn code_mode(&self) -> bool {
        self.report.pattern == "XXpsk2"
    }

    /// The counters so far.
    pub(crate) fn report(&self) -> SecurityReport {
        let mut r = self.report.clone();
        if let Some(p) = &self.prot {
            r.add_protection(p.stats());
        }
        r
    }

    /// The handshake failed or the peer refused: end the transfer with this.
    pub(crate) fn take_failure(&mut self) -> Option<AppError> {
        self.failure.take()
    }

    /// The engine gave up opening after `attempts` OPENs: if nothing at all
    /// came back, say what the silence may mean, an older receiver among
    /// the rest (decision K21: a receiver of an older handshake version
    /// drops this sender's initiation without a word).
    pub(crate) fn silence(&self, attempts: u32) -> Option<AppError> {
        // A network error (exit 4, as the README's table says for an
        // unreachable peer), in words a user can act on (F14).
        (!self.heard).then(|| {
            AppError::new(
                Kind::Network,
                format!(
                    "no answer from {} after {attempts} tries (host down, a firewall dropping UDP, no netblt receiver on that port, or one older than this sender's handshake version {})",
                    self.peer,
                    netblt_crypto::handshake::message::FORMAT
                ),
                "",
            )
            .because(ErrorKind::ConnectTimeout)
        })
    }

    /// Handshake datagrams to send before the engine's.
    pub(crate) fn next_outgoing(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }

    /// When [`on_timer`](Self::on_timer) wants to run.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.finish_at
    }

    /// Re-sends FINISH until the passive end proves it arrived.
    pub(crate) fn on_timer(&mut self, now: Instant) {
        let Some(at) = self.finish_at else { return };
        if now < at {
            return;
        }
        if self.peer_proven || self.finish_tries >= FINISH_TRIES {
            self.finish_at = None;
            return;
        }
        if let Some(f) = &self.finish {
            self.outbox.push_back(f.clone());
        }
        self.finish_tries += 1;
        self.finish_at = Some(now + FINISH_RTO * (1 << self.finish_tries.min(6)));
    }

    /// Like [`outgoing`](Self::outgoing) for a datagram the engine handed
    /// out gathered (`poll_transmit_gather`): `buf[..g.head]` written,
    /// `payload` (a DATA payload) still in the engine's buffer. Once keys
    /// exist, the payload is encrypted straight from there into `buf`, with
    /// no plaintext copy (see [`super::seal_gathered`]).
    pub(crate) fn outgoing_gathered(
        &mut self,
        buf: &mut [u8],
        g: Gathered,
        payload: Option<&[u8]>,
    ) -> Option<usize> {
        match (&mut self.prot, payload) {
            (Some(p), Some(data)) if g.pad == 0 => super::seal_gathered(p, buf, g.head, data),
            _ => {
                let n = super::flatten(buf, g, payload)?;
                self.outgoing(buf, n)
            }
        }
    }

    /// Turns the plain datagram the engine wrote into `buf[..n]` into what
    /// goes on the wire; `None`: send nothing. `buf` has room for
    /// [`overhead`](Self::overhead) more bytes.
    pub(crate) fn outgoing(&mut self, buf: &mut [u8], n: usize) -> Option<usize> {
        let (_, ty) = kind(&buf[..n])?;
        if let Some(p) = &mut self.prot {
            if ty == OPEN {
                // Our engine repeats its OPEN: it still waits for the
                // RESPONSE. IK had it in the handshake; XX gets it sealed
                // after FINISH (K20), so FINISH goes again, and the passive
                // end has its engine repeat the RESPONSE.
                let f = self.finish.as_ref()?;
                let out = buf.get_mut(..f.len())?;
                out.copy_from_slice(f);
                return Some(f.len());
            }
            buf[2] = PROTECTED;
            return p.seal_in_place(buf, n).ok();
        }
        if ty != OPEN {
            // No keys yet: nothing but the OPEN may leave.
            return None;
        }
        if self.initiation.is_none() {
            // A path probe's copy (R58) pads the OPEN's client string area;
            // the padding stays out of the Noise payload and goes after the
            // envelope instead (below).
            self.body = super::unpadded(open_body(&buf[..n])).to_vec();
            (self.local_port, self.remote_port) = ports(buf);
            self.write_initiation();
        } else if self
            .written_at
            .is_some_and(|t| t.elapsed() >= REWRITE_AFTER)
        {
            if let Some(hs) = self.hs.as_mut() {
                if hs.restart(initiation_timestamp()).is_ok() {
                    self.write_initiation();
                }
            }
        }
        let init = self.initiation.as_ref()?;
        // R58: a padded OPEN (a path probe) goes as a datagram as long as a
        // sealed DATA packet of the probed size: the initiation, then NULs
        // past the header's Length, which the passive end cuts off (a
        // receiver older than R58 drops the copy as malformed and takes
        // the plain one that follows).
        let len = if n > netblt_wire::HEADER_LEN + self.body.len() {
            (n + netblt_crypto::OVERHEAD).max(init.len())
        } else {
            init.len()
        };
        let out = buf.get_mut(..len)?;
        out[..init.len()].copy_from_slice(init);
        out[init.len()..].fill(0);
        Some(len)
    }

    fn write_initiation(&mut self) {
        let Some(hs) = self.hs.as_mut() else { return };
        let mut env = vec![0u8; MAX_MESSAGE_LEN];
        match hs.write_message(&self.body, &mut env) {
            Ok(k) => {
                self.initiation = Some(handshake_datagram(
                    OPEN,
                    self.local_port,
                    self.remote_port,
                    &env[..k],
                ));
                self.written_at = Some(Instant::now());
            }
            Err(e) => self.failure = Some(fail(format!("handshake: {e}"))),
        }
    }

    /// A datagram from the peer: open it, read the handshake, or drop it.
    pub(crate) fn incoming(&mut self, d: &mut [u8]) -> Rx {
        let Some((version, ty)) = kind(d) else {
            self.report.dropped += 1;
            return Rx::Drop;
        };
        self.heard = true;
        match (version, ty) {
            (PROTECTED, RESPONSE) if self.hs.is_some() => self.read_response(d),
            (PROTECTED, RESPONSE)
                if HandshakeMessage::parse(&d[netblt_wire::HEADER_LEN..]).is_ok() =>
            {
                // A late copy of the handshake's response (our initiation
                // was repeated, or sent twice at first: R32), not a sealed
                // RESPONSE: nothing to open, and nothing amiss to count.
                Rx::Drop
            }
            (PROTECTED, t) if t != OPEN => {
                let Some(p) = &mut self.prot else {
                    self.report.dropped += 1;
                    return Rx::Drop;
                };
                match p.open_in_place(d) {
                    Ok(n) => {
                        d[2] = PLAIN;
                        self.peer_proven = true;
                        self.finish_at = None;
                        Rx::Pass(n)
                    }
                    // Counted in the protection's stats.
                    Err(_) => Rx::Drop,
                }
            }
            (PLAIN, _) if !self.peer_proven => {
                match plain_reason(d) {
                    Some(reason) if self.failure.is_none() => {
                        let why = PeerReason::from_wire(&reason);
                        let reason = crate::error::neutral(&reason);
                        let msg = if why == PeerReason::PeerInsecure {
                            format!("{}: {reason}", self.peer)
                        } else {
                            format!("{} refused the connection: {reason}", self.peer)
                        };
                        self.failure = Some(fail(msg).because(ErrorKind::RefusedByPeer(why)));
                    }
                    _ => self.report.plaintext += 1,
                }
                Rx::Drop
            }
            (PLAIN, _) => {
                self.report.plaintext += 1;
                Rx::Drop
            }
            _ => {
                self.report.dropped += 1;
                Rx::Drop
            }
        }
    }

    fn read_response(&mut self, d: &[u8]) -> Rx {
        let Some(hs) = self.hs.as_mut() else {
            return Rx::Drop;
        };
        let mut payload = vec![0u8; MAX_MESSAGE_LEN];
        match hs.read_message(&d[netblt_wire::HEADER_LEN..], &mut payload) {
            Ok(Progress::Payload(k)) => {
                // XX and code mode (format 2, K20): the response carries no
                // RESPONSE body; the passive end's engine writes its
                // RESPONSE after FINISH, sealed, and it reaches our engine
                // like any other packet.
                let deferred = hs.is_my_turn();
                if deferred {
                    let mut env = vec![0u8; MAX_MESSAGE_LEN];
                    match hs.write_message(&[], &mut env) {
                        Ok(m) => {
                            let f = handshake_datagram(
                                OPEN,
                                self.local_port,
                                self.remote_port,
                                &env[..m],
                            );
                            self.outbox.push_back(f.clone());
                            self.finish = Some(f);
                            self.finish_at = Some(Instant::now() + FINISH_RTO);
                        }
                        Err(e) => {
                            self.failure = Some(fail(format!("handshake: {e}")));
                            return Rx::Drop;
                        }
                    }
                } else {
                    // IK: the RESPONSE itself proves the receiver's key.
                    self.peer_proven = true;
                }
                let key = hs.peer_static();
                let Some(hs) = self.hs.take() else {
                    return Rx::Drop;
                };
                match hs.into_transport() {
                    Ok(p) => {
                        self.report.suite = p.suite().name().into();
                        self.prot = Some(p);
                    }
                    Err(e) => {
                        self.failure = Some(fail(format!("handshake: {e}")));
                        return Rx::Drop;
                    }
                }
                if let Some(key) = key {
                    self.report.peer = Some(key.fingerprint());
                    if self.first_contact {
                        if let Some(kh) = &mut self.known_hosts {
                            match kh.pin(&self.host_id, &key) {
                                Ok(()) => {
                                    self.report.pinned = true;
                                    tracing::info!(
                                    host = %self.host_id,
                                    key = %key.fingerprint(),
                                        "first contact: pinned the receiver's key in known_hosts"
                                    )
                                }
                                Err(e) => tracing::warn!(error = %e, "could not pin the key"),
                            }
                        }
                    }
                }
                if deferred {
                    return Rx::Drop;
                }
                let (lp, fp) = ports(d);
                Rx::Owned(plain_open(RESPONSE, lp, fp, &payload[..k]))
            }
            Ok(Progress::RetryWithCookie) => {
                // A fresh timestamp (K29): the passive end may have read a
                // copy of the initiation this one replaces (R32's copies
                // straddling its budget) and would refuse the same
                // timestamp as a replay, where it must let this one, with
                // its cookie, replace that handshake.
                let _ = hs.set_timestamp(initiation_timestamp());
                self.initiation = None;
                self.write_initiation();
                if let Some(i) = &self.initiation {
                    self.outbox.push_back(i.clone());
                }
                Rx::Drop
            }
            Err(HandshakeError::Unexpected | HandshakeError::Malformed(_)) => {
                self.report.dropped += 1;
                Rx::Drop
            }
            // K29: "a sender's two copies of its first initiation (R32) can
            // straddle the moment the budget runs out or refills, so that
            // one copy draws a cookie reply and the other a response". This
            // is that response, authenticated by the state of the
            // initiation the cookie replaced: not the end. The passive end
            // lets our initiation with the cookie replace the handshake it
            // answered, and the response to it follows (no restart here: it
            // would orphan that one in turn).
            Err(HandshakeError::Superseded) => Rx::Drop,
            Err(HandshakeError::HostKeyChanged { claimed, .. }) => {
                let msg = self
                    .known_hosts
                    .as_ref()
                    .and_then(|kh| kh.check(&self.host_id, &claimed).err())
                    .map_or_else(
                        || format!("the key of {} has changed", self.host_id),
                        |e| e.to_string(),
                    );
                self.hs = None;
                self.failure = Some(fail(msg).because(ErrorKind::HostKeyChanged));
                Rx::Drop
            }
            Err(HandshakeError::CodeMismatch) => {
                self.hs = None;
                // Tell the receiver, which burns its code (unauthenticated,
                // so it can only end an attempt).
                self.outbox.push_back(quit(
                    self.local_port,
                    self.remote_port,
                    "the one-time code does not match",
                ));
                self.failure = Some(fail(
                    "the one-time code does not match the receiver's (check the words and start again)",
                ));
                Rx::Drop
            }
            Err(e) => {
                self.hs = None;
                self.failure = Some(fail(format!("handshake with {} failed: {e}", self.peer)));
                Rx::Drop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::Encryption;

    #[test]
    fn silence_names_an_older_receiver_only_when_nothing_came_back() {
        let tmp = tempfile::tempdir().unwrap();
        let enc = Encryption {
            key_dir: Some(tmp.path().to_path_buf()),
            ..Encryption::default()
        };
        let keys = Keys::load(&enc).unwrap();
        let mut a = ActiveSecurity::new(&keys, "127.0.0.1:9".parse().unwrap()).unwrap();
        let e = a.silence(8).unwrap();
        assert_eq!(e.kind, Kind::Network, "exit 4, a network error");
        let msg = e.to_string();
        assert!(
            msg.contains("after 8 tries") && msg.contains("handshake version 3"),
            "{msg}"
        );
        // Any datagram from the peer (here a junk plain header) is an answer.
        let mut junk = [0u8; 12];
        junk[2] = PLAIN;
        let _ = a.incoming(&mut junk);
        assert!(a.silence(8).is_none());
    }
}
