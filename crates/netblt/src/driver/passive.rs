//! The passive end's loop: one socket, an `Endpoint`, many transfers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use netblt_proto::{
    Config, Connection, ConnectionHandle, DatagramEvent, Endpoint, Gathered, Incoming,
};

use super::clock::Clock;
use super::locals::{Locals, Trust};
use super::poll::{wait, Waker};
use super::rx::RxBuffers;
use super::secure::passive::PassiveSecurity;
use super::secure::{kind, ports, refused, Rx, IS_INSECURE, OPEN, PROTECTED};
use super::share::Share;
use super::socket::NetSocket;
use super::tx::TxQueue;
use super::Application;
use super::{precise_timers, size_recv_buffer, socket_error, TimerGate, MAX_RX_ROUNDS};
use crate::error::{AppError, Kind};

/// Datagrams a receiver's endpoint counted that belonged to no transfer,
/// and the OPENs it refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct JunkCounts {
    /// Datagrams that did not parse (bad checksum, short, unknown type).
    pub malformed: u64,
    /// Well-formed packets for no known connection.
    pub stray: u64,
    /// OPENs refused (bad request, busy, shutting down).
    pub refused: u64,
    /// Duplicate OPENs with a connection unique ID in use, rejected.
    pub rejected_uid: u64,
    /// Encrypted mode: packets that failed authentication (forged,
    /// modified, truncated).
    pub forged: u64,
    /// Encrypted mode: replayed packets.
    pub replayed: u64,
    /// Encrypted mode: plain (Version 1) packets dropped.
    pub plaintext: u64,
    /// Encrypted mode: handshake-layer counters (cookies, limits,
    /// amplification).
    pub flood: crate::FloodCounts,
    /// Not junk, but counted with it: connections that followed their
    /// peer to a new address (a NAT that rebound its mapping; encrypted
    /// mode only, docs/security.md "Address changes").
    pub migrated: u64,
}

/// What the listener's owner decides.
pub(crate) trait Service {
    /// One connection's application side.
    type App: Application;
    /// An OPEN arrived: accept with a RESPONSE client string and the
    /// transfer's application side (and optionally a per-connection config),
    /// or refuse with a reason.
    fn incoming(&mut self, inc: &Incoming, waker: &Arc<Waker>)
        -> Result<Accept<Self::App>, String>;
    /// A transfer ended (its application side settled), `wall` after it
    /// was accepted. Return false to stop listening.
    fn finished(
        &mut self,
        app: Self::App,
        conn: &Connection,
        peer: SocketAddr,
        wall: Duration,
        junk: JunkCounts,
    ) -> bool;
    /// An OPEN was refused with `reason` (not for shutting down). Return
    /// false to stop listening.
    fn refused(&mut self, _inc: &Incoming, _reason: &str) -> bool {
        true
    }
}

/// An accepted OPEN.
pub(crate) struct Accept<A> {
    pub(crate) config: Option<Config>,
    pub(crate) response: Vec<u8>,
    pub(crate) transfer: A,
}

/// The listener.
pub(crate) struct PassiveOptions {
    pub(crate) listen: SocketAddr,
    pub(crate) raw: bool,
    pub(crate) config: Config,
    /// Encrypted mode (issue 11): see `driver::secure`.
    pub(crate) security: crate::security::Security,
    /// Rate limits for all the transfers this end sends (`get`) together,
    /// changed while they run (R27).
    pub(crate) rate_control: Option<crate::RateControl>,
}

struct Live<A> {
    transfer: A,
    started: std::time::Instant,
    peer: SocketAddr,
}

fn junk(ep: &Endpoint, sec: Option<&PassiveSecurity>) -> JunkCounts {
    let s = ep.stats();
    let mut j = JunkCounts {
        malformed: s.malformed,
        stray: s.stray,
        refused: s.refused,
        rejected_uid: s.rejected_uid,
        migrated: s.migrated,
        ..JunkCounts::default()
    };
    if let Some(sec) = sec {
        let r = sec.report();
        j.forged = r.forged;
        j.replayed = r.replayed;
        j.plaintext = r.plaintext;
        j.flood = sec.flood;
    }
    j
}

/// Binds the listening socket (separately, so that callers can learn the
/// port before serving).
pub(crate) fn bind(opts: &PassiveOptions) -> Result<NetSocket, AppError> {
    NetSocket::listen(opts.listen, opts.raw)
        .map_err(|e| socket_error(&e, &format!("cannot listen on {}", opts.listen), opts.raw))
}

/// Serves until `stop` or until the service says so.
pub(crate) fn run_passive<S: Service>(
    opts: &PassiveOptions,
    sock: NetSocket,
    service: &mut S,
    stop: &AtomicBool,
) -> Result<JunkCounts, AppError> {
    precise_timers();
    let waker = Arc::new(Waker::new().map_err(|e| AppError::io("eventfd", &e))?);
    let port = if opts.raw {
        opts.listen.port()
    } else {
        sock.local_addr()
            .map_err(|e| socket_error(&e, "socket", false))?
            .port()
    };
    // Encrypted mode: keys first; the AEAD's 20 bytes come off the
    // engine's datagram budget; no gathered sends (sealing copies).
    let mut config = opts.config.clone();
    let mut sec = match &opts.security {
        crate::security::Security::Encrypted(enc) => {
            let keys = crate::security::Keys::load(enc)?;
            config.max_datagram = config.max_datagram.saturating_sub(netblt_crypto::OVERHEAD);
            Some(PassiveSecurity::new(keys, enc)?)
        }
        crate::security::Security::Insecure => None,
    };
    let mut ep = Endpoint::new(config, port);
    if !opts.raw {
        // Over UDP the socket chose us; a sender behind a port forward
        // names the port it dialled (decision Z25, Endpoint::answer_any_port).
        ep = ep.answer_any_port();
    }
    let clock = Clock::new();
    let s = sock.as_dyn();
    let mut tx = TxQueue::new(s.max_gso_segments(), 65_507, sec.is_none());
    let mut rx = RxBuffers::new();
    let mut live: HashMap<usize, Live<S::App>> = HashMap::new();
    // Per peer, the local address it called: answers leave from there
    // (decision Z26; empty unless the socket is bound to a wildcard).
    let mut locals = Locals::default();
    let mut gate = TimerGate::default();
    let mut want_write = false;
    let mut keep_going = true;
    let mut stopping = false;
    let mut share = opts.rate_control.clone().map(|rc| {
        rc.attach(&waker);
        Share::new(rc)
    });
    loop {
        if let Some(sh) = share.as_mut() {
            sh.update(&mut ep);
        }
        let mut drained = false;
        for _ in 0..MAX_RX_ROUNDS {
            let now = match rx.recv(s) {
                Ok(n) => {
                    drained = n < RxBuffers::CAPACITY;
                    // Arrival time as the datagrams left the kernel (FEEDBACK
                    // reports how long they were held).
                    clock.now()
                }
                // Errors on an unconnected socket are about one peer (an
                // ICMP message): nothing to do but carry on.
                Err(e) => {
                    tracing::debug!(error = %e, "receive error");
                    drained = true;
                    break;
                }
            };
            for (from, dst, d) in rx.datagrams_mut() {
                let is_live = |a: &SocketAddr| live.values().any(|l| l.peer == *a);
                let owned;
                let d: &[u8] = match sec.as_mut() {
                    None => {
                        locals.learn(from, dst, Trust::Update, is_live);
                        if insecure_refusal(&mut tx, &mut locals, from, d) {
                            continue;
                        }
                        d
                    }
                    Some(sc) => match sc.incoming(std::time::Instant::now(), from, d) {
                        Rx::Pass(k) => {
                            // Authenticated, unless too short for a
                            // header (passed on for the engine to count).
                            let trust = kind(&d[..k]).map_or(Trust::IfUnknown, |_| Trust::Update);
                            locals.learn(from, dst, trust, is_live);
                            &d[..k]
                        }
                        Rx::Owned(v) => {
                            locals.learn(from, dst, Trust::Update, is_live);
                            owned = v;
                            &owned
                        }
                        Rx::Drop => {
                            // Perhaps answered (a cookie, a stored
                            // RESPONSE) though not authenticated.
                            locals.learn(from, dst, Trust::IfUnknown, is_live);
                            continue;
                        }
                    },
                };
                if let Some(sc) = sec.as_mut() {
                    // A peer's new address (NAT rebinding): its session
                    // moved; its engine connection and ours follow.
                    for (old, port, new) in sc.take_moves() {
                        if let Some(h) = ep.migrate(old, port, new) {
                            if let Some(l) = live.get_mut(&h.0) {
                                l.peer = new;
                            }
                        }
                    }
                }
                let Some(DatagramEvent::NewConnection(inc)) = ep.handle(now, from, d) else {
                    continue;
                };
                if stopping || !keep_going {
                    if let Some(sc) = sec.as_mut() {
                        sc.refused_by_engine(inc.remote);
                    }
                    ep.refuse(&inc, "receiver shutting down");
                    continue;
                }
                match service.incoming(&inc, &waker) {
                    Ok(a) => match ep.accept(inc.clone(), a.config, a.response, now) {
                        Ok(h) => {
                            if let Some(sh) = share.as_mut() {
                                sh.admit(&mut ep, h);
                            }
                            size_recv_buffer(
                                s,
                                live.keys()
                                    .chain([&h.0])
                                    .filter_map(|&i| ep.connection(ConnectionHandle(i))),
                            );
                            live.insert(
                                h.0,
                                Live {
                                    transfer: a.transfer,
                                    started: std::time::Instant::now(),
                                    peer: inc.remote,
                                },
                            );
                        }
                        Err(e) => {
                            if let Some(sc) = sec.as_mut() {
                                sc.refused_by_engine(inc.remote);
                            }
                            let reason = format!("unacceptable parameters: {e}");
                            keep_going &= service.refused(&inc, &reason);
                            ep.refuse(&inc, &reason)
                        }
                    },
                    Err(reason) => {
                        if let Some(sc) = sec.as_mut() {
                            sc.refused_by_engine(inc.remote);
                        }
                        keep_going &= service.refused(&inc, &reason);
                        ep.refuse(&inc, &reason)
                    }
                }
            }
            if drained {
                break;
            }
        }
        let now = clock.now();
        if gate.open(drained, std::time::Instant::now()) {
            ep.handle_timeout(now);
        }
        if let Some(sc) = sec.as_mut() {
            sc.on_tick(std::time::Instant::now());
            for (addr, reason) in sc.take_aborts() {
                for (&i, l) in live.iter() {
                    if l.peer == addr {
                        if let Some(c) = ep.connection_mut(ConnectionHandle(i)) {
                            if !c.is_closed() {
                                c.abort(now, &reason);
                            }
                        }
                    }
                }
            }
            if sc.fatal().is_some() && !stopping {
                stopping = true;
                for h in ep.handles() {
                    if let Some(c) = ep.connection_mut(h) {
                        if !c.is_closed() {
                            c.abort(now, "one-time code failed");
                        }
                    }
                }
            }
        }
        if stop.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            for h in ep.handles() {
                if let Some(c) = ep.connection_mut(h) {
                    if !c.is_closed() {
                        c.stop(now, "receiver interrupted");
                    }
                }
            }
        }
        for (&i, l) in live.iter_mut() {
            if let Some(c) = ep.connection_mut(ConnectionHandle(i)) {
                l.transfer.drive(now, c);
            }
        }
        if !want_write {
            // Handshake replies (cookies, stored RESPONSEs, refusals) first.
            while let Some(sc) = sec.as_mut() {
                let Some((to, b)) = sc.next_outgoing() else {
                    break;
                };
                let Some(slot) = tx.slot() else {
                    // Full: keep the reply for the next round.
                    sc.unpop(to, b);
                    break;
                };
                if let Some(slot) = slot.get_mut(..b.len()) {
                    slot.copy_from_slice(&b);
                    tx.commit(to, locals.get(to), Gathered::whole(b.len()));
                }
            }
            loop {
                let mut full = true;
                // Encrypted: the engine gathers too, and DATA payloads are
                // sealed from its buffers straight into the train.
                let gather = tx.gathers() || sec.is_some();
                while let Some(slot) = tx.slot() {
                    let next = if gather {
                        ep.poll_transmit_gather(now, slot)
                    } else {
                        ep.poll_transmit(now, slot)
                            .map(|(to, n)| (to, Gathered::whole(n)))
                    };
                    match next {
                        Some((to, g)) => match sec.as_mut() {
                            None => tx.commit(to, locals.get(to), g),
                            Some(sc) => {
                                let payload = g.payload.and_then(|p| ep.payload(&p));
                                if let Some(m) = sc.outgoing_gathered(to, slot, g, payload) {
                                    tx.commit(to, locals.get(to), Gathered::whole(m));
                                }
                            }
                        },
                        None => {
                            full = false;
                            break;
                        }
                    }
                }
                match tx.flush(s, &|p| ep.payload(p)) {
                    Ok(true) if full => continue,
                    Ok(true) => break,
                    Ok(false) => {
                        want_write = true;
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "send error");
                        break;
                    }
                }
            }
        } else {
            want_write = !tx.flush(s, &|p| ep.payload(p)).unwrap_or(true);
        }
        // Retire closed connections (their last packets are out).
        if tx.is_empty() {
            let closed: Vec<usize> = live
                .keys()
                .copied()
                .filter(|&i| {
                    ep.connection(ConnectionHandle(i))
                        .is_none_or(|c| c.is_closed())
                })
                .collect();
            for i in closed {
                let h = ConnectionHandle(i);
                let (Some(mut l), Some(mut conn)) = (live.remove(&i), ep.remove(h)) else {
                    continue;
                };
                l.transfer.drive(now, &mut conn);
                l.transfer.settle();
                if let Some(sc) = sec.as_mut() {
                    sc.forget(l.peer, conn.remote_port());
                }
                if !live.values().any(|o| o.peer == l.peer) {
                    locals.forget(l.peer);
                }
                keep_going &= service.finished(
                    l.transfer,
                    &conn,
                    l.peer,
                    l.started.elapsed(),
                    junk(&ep, sec.as_ref()),
                );
            }
        }
        if (!keep_going || stopping) && live.is_empty() && tx.is_empty() {
            if let Some(e) = sec.as_ref().and_then(PassiveSecurity::fatal) {
                return Err(e.clone());
            }
            return Ok(junk(&ep, sec.as_ref()));
        }
        let mut timeout = ep
            .poll_timeout()
            .map(|t| t.saturating_duration_since(clock.now()));
        // Bounded even when idle: Ctrl-C is noticed through a flag set by
        // another thread, which does not interrupt ppoll.
        let cap = if stopping || !keep_going {
            Duration::from_millis(10)
        } else {
            Duration::from_millis(200)
        };
        timeout = Some(timeout.map_or(cap, |t| t.min(cap)));
        // Handshake replies still queued: no sleep before the next round,
        // unless the socket is full (they can go only once it is writable,
        // and the wait below is for exactly that; not sleeping then would
        // spin under a flood).
        if !want_write && sec.as_ref().is_some_and(PassiveSecurity::has_outgoing) {
            timeout = Some(Duration::ZERO);
        }
        if timeout.is_some_and(|t| t.is_zero()) && !want_write {
            continue;
        }
        wait(sock.raw_fd(), want_write, &waker, timeout)
            .map_err(|e| AppError::new(Kind::Network, format!("waiting on the socket: {e}"), ""))?;
    }
}

/// An `--insecure` receiver answers an encrypted OPEN (Version 2) with a
/// plain REFUSED saying so, instead of dropping it as an unknown version
/// and leaving the sender to time out. Returns whether it was one.
fn insecure_refusal(tx: &mut TxQueue, locals: &mut Locals, from: SocketAddr, d: &[u8]) -> bool {
    if kind(d) != Some((PROTECTED, OPEN)) {
        return false;
    }
    let (lp, fp) = ports(d);
    let r = refused(fp, lp, IS_INSECURE);
    // Never more than 3x what came in (the initiation is at least 94 bytes).
    if r.len() <= 3 * d.len() {
        if let Some(slot) = tx.slot().and_then(|t| t.get_mut(..r.len())) {
            slot.copy_from_slice(&r);
            tx.commit(from, locals.get(from), Gathered::whole(r.len()));
        }
    }
    true
}
