//! The active end's loop: one connection, one `connect`ed socket.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use netblt_proto::{Config, Connection, Gathered, Mode, State};
use netblt_udp::IoStats;

use super::clock::Clock;
use super::meter::{socket_drops, LoopTimes, Meter};
use super::poll::{wait, Waker};
use super::rx::RxBuffers;
use super::secure::active::ActiveSecurity;
use super::secure::Rx;
use super::socket::{random_port, NetSocket};
use super::tx::TxQueue;
use super::Application;
use super::{
    network_error, precise_timers, size_recv_buffer, socket_error, TimerGate, MAX_RX_ROUNDS,
};
use crate::error::{AppError, ErrorKind, Kind};

/// How to open the connection.
#[derive(Debug, Clone)]
pub(crate) struct ActiveOptions {
    /// The peer: UDP address, or (raw IP) its IP address with any port.
    pub(crate) remote: SocketAddr,
    /// The passive end's NETBLT port (the UDP port over UDP).
    pub(crate) remote_port: u16,
    pub(crate) raw: bool,
    pub(crate) config: Config,
    pub(crate) mode: Mode,
    pub(crate) transfer_size: Option<u64>,
    /// OPEN client string (application metadata).
    pub(crate) client: Vec<u8>,
    /// Encrypted mode (issue 11): see `driver::secure`.
    pub(crate) security: crate::security::Security,
    /// Sizes to choose from the path once the socket is connected (G3).
    pub(crate) auto_size: crate::AutoSize,
    /// Rate limits changed while the transfer runs (R27).
    pub(crate) rate_control: Option<crate::RateControl>,
}

/// What the loop leaves behind.
pub(crate) struct ActiveOutcome {
    pub(crate) conn: Connection,
    pub(crate) wall: Duration,
    pub(crate) io: IoStats,
    pub(crate) send_syscalls: u64,
    /// Where the loop's time went (for the report's `limit`).
    pub(crate) times: LoopTimes,
    /// Datagrams the kernel dropped at the socket (receive buffer full).
    pub(crate) socket_drops: Option<u64>,
    /// Encrypted mode's counters.
    pub(crate) security: Option<crate::security::SecurityReport>,
}

/// Runs one transfer to its end. `progress` is called about ten times a
/// second. `stop` (Ctrl-C) aborts the connection.
pub(crate) fn run_active<A: Application>(
    opts: &ActiveOptions,
    transfer: &mut A,
    waker: &Arc<Waker>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&A, &Connection),
) -> Result<ActiveOutcome, AppError> {
    precise_timers();
    let peer = opts.remote;
    let sock = NetSocket::connect(peer, opts.raw)
        .map_err(|e| socket_error(&e, &format!("socket to {peer}"), opts.raw))?;
    let local_port = if opts.raw {
        random_port()
    } else {
        sock.local_addr()
            .map_err(|e| socket_error(&e, "socket", false))?
            .port()
    };
    let dest = if opts.raw {
        SocketAddr::new(peer.ip(), 0)
    } else {
        peer
    };
    // Encrypted mode: keys first (a key-file error is one line, no packet
    // sent); the AEAD's 20 bytes come off the engine's datagram budget.
    let mut config = opts.config.clone();
    let mut sec = match &opts.security {
        crate::security::Security::Encrypted(enc) => {
            let keys = crate::security::Keys::load(enc)?;
            config.max_datagram = config.max_datagram.saturating_sub(netblt_crypto::OVERHEAD);
            Some(ActiveSecurity::new(&keys, peer)?)
        }
        crate::security::Security::Insecure => None,
    };
    // A code-mode sender starts first (it prints the code the receiver
    // types), so "nothing listening" is not an error while it opens.
    let patient = sec.as_ref().is_some_and(ActiveSecurity::code_mode);
    let overhead = if sec.is_some() {
        netblt_crypto::OVERHEAD
    } else {
        0
    };
    // Sizes from the path (G3): the connected socket knows its route's MTU.
    if opts.auto_size != crate::AutoSize::default() {
        let mtu = match &sock {
            NetSocket::Udp(u) => u.path_mtu().ok(),
            NetSocket::Raw(_) => None,
        };
        // R58: the active end offers 1400 and lets the first OPEN's padded
        // copy prove more; the engine sends it only with a plain copy
        // beside it, so without one G3's size is offered outright.
        let probe = config.open_copies >= 2;
        let sizes = crate::app::params::size_for_path(
            &mut config.params,
            opts.auto_size,
            mtu,
            peer.is_ipv6(),
            overhead,
            probe,
            config.rate.max_bps,
        );
        if let Some(ceiling) = sizes.ceiling {
            config.rate.max_bps = Some(ceiling);
        }
        config.path_probe = sizes.probe;
    }
    let clock = Clock::new();
    let started = std::time::Instant::now();
    let mut conn = Connection::connect(
        config,
        opts.mode,
        super::random_u32(),
        local_port,
        opts.remote_port,
        opts.transfer_size,
        opts.client.clone(),
        clock.now(),
    )
    .map_err(|e| AppError::new(Kind::InvalidOptions, format!("invalid parameters: {e}"), ""))?;
    let s = sock.as_dyn();
    // Encrypted datagrams are sealed into the train (the payload encrypted
    // from the engine's buffer): no gathered sends then.
    let mut tx = TxQueue::new(
        s.max_gso_segments(),
        conn.max_datagram_size() + overhead,
        sec.is_none(),
    );
    let mut sec_error: Option<AppError> = None;
    let mut rx = RxBuffers::new();
    let mut gate = TimerGate::default();
    let mut sized = false;
    let mut want_write = false;
    let mut last_progress = std::time::Instant::now();
    let mut net_error: Option<AppError> = None;
    let mut meter = Meter::new(clock.now());
    let mut limits_seen = 0;
    if let Some(rc) = &opts.rate_control {
        rc.attach(waker);
    }
    loop {
        if let Some(l) = opts
            .rate_control
            .as_ref()
            .and_then(|rc| rc.changed(&mut limits_seen))
        {
            conn.set_rate_limits(l);
        }
        let now = clock.now();
        let mut drained = false;
        for _ in 0..MAX_RX_ROUNDS {
            match rx.recv(s) {
                Ok(n) => {
                    // Arrival time as the datagrams left the kernel, not the
                    // loop's start: the rate controller's round-trip
                    // samples are tens of microseconds on loopback.
                    feed(&mut rx, sec.as_mut(), &mut conn, clock.now());
                    drained = n < RxBuffers::CAPACITY;
                    if drained {
                        break;
                    }
                }
                Err(e) => {
                    net_error = net_failure(&e, peer, &mut conn, clock.now(), patient);
                    break;
                }
            }
        }
        if net_error.is_some() {
            break;
        }
        if let Some(s) = sec.as_mut() {
            s.on_timer(std::time::Instant::now());
            if let Some(e) = s.take_failure() {
                sec_error.get_or_insert(e);
            }
        }
        if conn.poll_timeout().is_some_and(|t| t <= now)
            && gate.open(drained, std::time::Instant::now())
        {
            conn.handle_timeout(now);
        }
        if !sized && conn.state() == State::Open {
            sized = true;
            size_recv_buffer(s, std::iter::once(&conn));
        }
        // Fresh for the transmissions: their send times feed round-trip
        // samples too.
        let now = clock.now();
        transfer.drive(now, &mut conn);
        if stop.load(Ordering::Relaxed) && !conn.is_closed() {
            conn.stop(now, "interrupted by the user");
            // A receiver with every byte ends as a success (`stop`).
            if !matches!(conn.result(), Some(Ok(()))) {
                transfer.fail_locally(
                    AppError::new(Kind::Failed, "interrupted", "interrupted")
                        .because(ErrorKind::Cancelled),
                );
            }
        }
        // Transmit: fill trains from the engine, flush, repeat while full.
        if !want_write {
            tx.set_max_datagram(conn.max_datagram_size() + overhead);
            // Handshake datagrams (FINISH, a retry with a cookie) first.
            while let Some(s) = sec.as_mut() {
                let Some(b) = s.next_outgoing() else { break };
                let Some(slot) = tx.slot().and_then(|t| t.get_mut(..b.len())) else {
                    break;
                };
                slot.copy_from_slice(&b);
                tx.commit(dest, None, Gathered::whole(b.len()));
            }
            loop {
                let mut full = true;
                // Encrypted: the engine gathers too, and the payload is
                // sealed from its buffer straight into the train.
                let gather = tx.gathers() || sec.is_some();
                while let Some(slot) = tx.slot() {
                    let next = if gather {
                        conn.poll_transmit_gather(now, slot)
                    } else {
                        conn.poll_transmit(now, slot).map(Gathered::whole)
                    };
                    match next {
                        Some(g) => match sec.as_mut() {
                            None => tx.commit(dest, None, g),
                            Some(sc) => {
                                let payload = g.payload.and_then(|p| conn.payload(&p));
                                if let Some(m) = sc.outgoing_gathered(slot, g, payload) {
                                    tx.commit(dest, None, Gathered::whole(m));
                                }
                            }
                        },
                        None => {
                            full = false;
                            break;
                        }
                    }
                }
                match tx.flush(s, &|p| conn.payload(p)) {
                    Ok(true) if full => continue,
                    Ok(true) => break,
                    Ok(false) => {
                        want_write = true;
                        break;
                    }
                    Err(e) => {
                        net_error = net_failure(&e, peer, &mut conn, clock.now(), patient);
                        break;
                    }
                }
            }
        } else {
            match tx.flush(s, &|p| conn.payload(p)) {
                Ok(done) => want_write = !done,
                Err(e) => net_error = net_failure(&e, peer, &mut conn, clock.now(), patient),
            }
        }
        if let Some(e) = sec_error.take() {
            net_error = Some(e);
        }
        if net_error.is_some() || (conn.is_closed() && tx.is_empty()) {
            break;
        }
        if last_progress.elapsed() >= Duration::from_millis(100) {
            last_progress = std::time::Instant::now();
            progress(transfer, &conn);
        }
        // Bounded: Ctrl-C sets a flag from another thread.
        let cap = Duration::from_millis(200);
        let mut timeout = Some(
            conn.poll_timeout()
                .map_or(cap, |t| t.saturating_duration_since(clock.now()).min(cap)),
        );
        if let Some(t) = sec.as_ref().and_then(ActiveSecurity::poll_timeout) {
            let d = t.saturating_duration_since(std::time::Instant::now());
            timeout = timeout.map(|x| x.min(d));
        }
        if timeout.is_some_and(|t| t.is_zero()) && !want_write {
            continue;
        }
        meter.sleep(clock.now(), &conn, transfer.gauge(), conn.poll_timeout());
        let ready = wait(sock.raw_fd(), want_write, waker, timeout)
            .map_err(|e| AppError::new(Kind::Network, format!("waiting on the socket: {e}"), ""))?;
        meter.woke(clock.now(), &conn);
        if ready.error && !ready.readable {
            if let Some(e) = sock.take_error() {
                net_error = net_failure(&e, peer, &mut conn, clock.now(), patient);
                if net_error.is_some() {
                    break;
                }
            }
        }
    }
    let now = clock.now();
    if let Some(e) = net_error {
        // A receiver that went away may have said why first: its ABORT can
        // wait in the socket's queue behind the port unreachable a send
        // returned (the kernel reports a pending error on the next send,
        // queued datagrams on the next receive). Read what is queued before
        // calling it a network failure: the peer's words, and its exit
        // code, are better (resume.rs's `other_interruptions_say_how_to_resume`
        // saw "port unreachable" now and then under load).
        if !conn.is_closed() {
            for _ in 0..MAX_RX_ROUNDS {
                match rx.recv(s) {
                    Ok(n) => {
                        feed(&mut rx, sec.as_mut(), &mut conn, clock.now());
                        if n < RxBuffers::CAPACITY {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        let peer_said = matches!(
            conn.result(),
            Some(Err(netblt_proto::ConnectionError::PeerAborted { .. }))
        );
        if !conn.is_closed() {
            conn.abort(now, "network error");
        }
        if !peer_said {
            transfer.fail_locally(e);
        }
    }
    // Encrypted mode: a silent peer may be a receiver too old to answer.
    if let (Some(s), Some(Err(netblt_proto::ConnectionError::OpenTimeout { attempts }))) =
        (sec.as_ref(), conn.result())
    {
        if let Some(e) = s.silence(*attempts) {
            transfer.fail_locally(e);
        }
    }
    transfer.drive(now, &mut conn);
    transfer.settle();
    Ok(ActiveOutcome {
        conn,
        wall: started.elapsed(),
        io: s.stats(),
        send_syscalls: tx.syscalls,
        times: meter.finish(),
        socket_drops: socket_drops(sock.raw_fd()),
        security: sec.as_ref().map(ActiveSecurity::report),
    })
}

/// Hands the datagrams `rx` holds to the connection, opened first in
/// encrypted mode.
fn feed(
    rx: &mut RxBuffers,
    mut sec: Option<&mut ActiveSecurity>,
    conn: &mut Connection,
    arrived: netblt_proto::Instant,
) {
    for (_, _, d) in rx.datagrams_mut() {
        match sec.as_mut().map(|s| s.incoming(d)) {
            None => conn.handle_datagram(arrived, d),
            Some(Rx::Pass(k)) => conn.handle_datagram(arrived, &d[..k]),
            Some(Rx::Owned(v)) => conn.handle_datagram(arrived, &v),
            Some(Rx::Drop) => {}
        }
    }
}

/// A socket error as the transfer's failure, or `None` for a refused port
/// while a `patient` end opens (the OPEN timer keeps trying), or once the
/// transfer has succeeded (a receiver that closed after its last OK was
/// acknowledged: see `Connection::peer_unreachable`).
fn net_failure(
    e: &std::io::Error,
    peer: SocketAddr,
    conn: &mut Connection,
    now: netblt_proto::Instant,
    patient: bool,
) -> Option<AppError> {
    let opening = conn.state() == State::Opening;
    if e.raw_os_error() == Some(libc::ECONNREFUSED) {
        if patient && opening {
            return None;
        }
        if !opening && (conn.peer_unreachable(now) || matches!(conn.result(), Some(Ok(())))) {
            return None;
        }
    }
    Some(network_error(e, peer, opening))
}
