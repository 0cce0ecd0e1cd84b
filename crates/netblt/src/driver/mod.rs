//! The network driver: runs the sans-IO engine (`netblt-proto`) over UDP or
//! raw IP sockets (`netblt-udp`).
//!
//! # One thread, one loop
//!
//! Each end runs a single-threaded loop ([`active::run_active`] for the end
//! that opens, [`passive::run_passive`] for a listener serving many peers
//! through an `Endpoint`):
//!
//! 1. receive everything queued (`recvmmsg`, GRO trains split by stride) and
//!    hand each datagram to the engine;
//! 2. run due timers, once the socket's queue was found empty
//!    ([`TimerGate`]);
//! 3. let the application (anything implementing [`Application`]; the
//!    file transfer's `Transfer` in practice) move buffers between the engine
//!    and its reader/writer threads;
//! 4. drain `poll_transmit_gather` into GSO trains ([`tx::TxQueue`]; DATA
//!    payloads stay in the engine's buffers and the kernel gathers them) and
//!    send them with one `sendmmsg`;
//! 5. sleep in `ppoll` on the socket and an eventfd ([`poll::Waker`]) until
//!    the engine's `poll_timeout`, the next datagram, or a buffer from the
//!    disk threads.
//!
//! Pacing below a millisecond comes from the engine's `pacing_quantum`
//! (bursts released in GSO-sized groups spread over the burst interval) and a
//! precise wait: the loop's thread lowers its timer slack to 1 µs, so `ppoll`
//! wakes within microseconds of the deadline. The pacer runs on a virtual
//! schedule (`PacingClock::Virtual`), so a late wake-up never lowers the
//! rate.
//!
//! Engine time is nanoseconds since the loop started ([`clock::Clock`]).
//! Nothing is allocated per packet: the receive buffers (32 × 64 KiB) and the
//! transmit trains (33 × 64 KiB) are allocated once (a gathering flush
//! allocates one `iovec` vector per `sendmmsg`), and NETBLT buffers are
//! recycled between the engine and the disk threads.

pub(crate) mod active;
pub(crate) mod clock;
pub(crate) mod locals;
pub(crate) mod meter;
pub(crate) mod passive;
pub(crate) mod poll;
pub(crate) mod rx;
pub(crate) mod secure;
pub(crate) mod share;
pub(crate) mod socket;
pub(crate) mod tx;

use std::io;
use std::net::SocketAddr;

pub(crate) use poll::Waker;

use netblt_proto::{Connection, Instant};

use crate::error::{AppError, Kind};

/// What the driver knows of the application on one connection: the layer
/// above implements it (the file transfer's `Transfer`), so the driver never
/// names a file, a digest or a report.
pub(crate) trait Application {
    /// Moves data between the engine and the application and reads the
    /// connection's events. Called after every batch of engine input and
    /// timers, and once more after the connection closed.
    fn drive(&mut self, now: Instant, conn: &mut Connection);
    /// The transfer ends for a reason of this end's (a network error, an
    /// interruption): the first such error is the one reported.
    fn fail_locally(&mut self, e: AppError);
    /// The connection closed and its last packets are out: stop helper
    /// threads and collect their last word.
    fn settle(&mut self);
    /// The application's side of the data flow, for the loop's
    /// [`meter`] (what the sender waited for). Default: nothing known.
    fn gauge(&self) -> meter::AppGauge {
        meter::AppGauge::default()
    }
}

/// Receive syscalls per loop turn at most, so that a flood of arrivals
/// cannot starve our own transmissions.
pub(crate) const MAX_RX_ROUNDS: usize = 8;

/// Most kernel receive buffer that data windows may ask for.
const RECV_BUFFER_MAX: usize = 512 << 20;

/// Sizes the socket's receive buffer for the data that may be in flight
/// towards this end: the windows (`max_buffers` × `buffer_size`) of every
/// connection in which this end receives data. A socket that can hold the
/// whole window never drops what the sender was allowed to send, however
/// long this process is kept off the CPU; NETBLT's GOs are then its flow
/// control, as a window is TCP's. Only grows, and is capped.
pub(crate) fn size_recv_buffer<'a>(
    sock: &dyn netblt_udp::DatagramSocket,
    conns: impl Iterator<Item = &'a netblt_proto::Connection>,
) {
    let window: usize = conns
        .filter(|c| c.role() == netblt_proto::Role::DataReceiver)
        .map(|c| usize::from(c.params().max_buffers) * c.params().buffer_size as usize)
        .sum();
    if window > 0 {
        sock.grow_recv_buffer(window.min(RECV_BUFFER_MAX));
    }
}

/// Longest that timers wait for a socket that never empties (a flood).
const TIMER_HOLD_MAX: std::time::Duration = std::time::Duration::from_millis(250);

/// Holds the engine's timers back while datagrams are still queued in the
/// socket.
///
/// A timer that expires while arrivals wait in the kernel's queue judges
/// the past: a receiver that fell behind (a busy CPU, a descheduled thread)
/// would take packets it simply has not read yet for lost and ask for them
/// again (measured on loopback: 7-30 % of the data resent, none of it lost).
/// So timers run once a receive call finds the queue empty, the same order
/// as the RFC's own rule of acting on the freshest information; a socket
/// that stays full (a flood of junk) delays them by [`TIMER_HOLD_MAX`] at
/// most.
#[derive(Debug, Default)]
pub(crate) struct TimerGate {
    backlog_since: Option<std::time::Instant>,
}

impl TimerGate {
    /// `drained`: this turn's last receive call left the socket empty.
    pub(crate) fn open(&mut self, drained: bool, now: std::time::Instant) -> bool {
        if drained {
            self.backlog_since = None;
            return true;
        }
        let since = *self.backlog_since.get_or_insert(now);
        now.saturating_duration_since(since) >= TIMER_HOLD_MAX
    }
}

/// 32 random bits from the OS (connection unique IDs, temp names, raw-IP
/// ports). Falls back to the clock if the OS source fails.
pub(crate) fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_ok() {
        return u32::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (t ^ (t >> 32) ^ u64::from(std::process::id())) as u32
}

/// Lowers the calling thread's timer slack for precise pacing (best effort).
pub(crate) fn precise_timers() {
    let _ = netblt_udp::set_thread_timer_slack(std::time::Duration::from_micros(1));
}

/// A socket error in the user's words, with its exit code. `opening`: no
/// answer from the peer yet.
pub(crate) fn network_error(e: &io::Error, peer: SocketAddr, opening: bool) -> AppError {
    let code = Kind::Network;
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) if opening => AppError::new(
            Kind::Refused,
            format!("connection refused by {peer} (nothing listening?)"),
            "",
        ),
        Some(libc::ECONNREFUSED) => AppError::new(
            code,
            format!("connection to {peer} lost: port unreachable (the receiver went away)"),
            "",
        ),
        Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) | Some(libc::EHOSTDOWN) => {
            AppError::new(code, format!("host unreachable: {peer}"), "")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => AppError::new(
            code,
            format!("sending to {peer}: permission denied (firewall?)"),
            "",
        ),
        // The kernel knows the path MTU (or the interface's) and refuses
        // larger datagrams: say so and what fits instead of "Message too
        // long" (the kind lets the tool name its flag, F25).
        Some(libc::EMSGSIZE) => AppError::new(
            code,
            format!(
                "datagrams to {peer} are larger than the path allows (MTU; packets of 1400 bytes fit a 1500-byte MTU)"
            ),
            "",
        )
        .because(crate::ErrorKind::PacketTooLarge),
        _ => AppError::new(code, format!("network error with {peer}: {e}"), ""),
    }
}

/// A socket that could not be opened.
pub(crate) fn socket_error(e: &io::Error, what: &str, raw: bool) -> AppError {
    if raw && e.kind() == io::ErrorKind::PermissionDenied {
        return AppError::new(
            Kind::Local,
            "raw IP (protocol 30) needs root (or CAP_NET_RAW): raw IP sockets are privileged",
            "",
        )
        .because(crate::ErrorKind::Local {
            io: Some(io::ErrorKind::PermissionDenied),
        });
    }
    match e.raw_os_error() {
        // "address already in use", "address not available on this
        // host", "permission denied": `io_reason`'s words, which a direct
        // `Error::Local` (a `Receiver::bind`) is read back by (F28).
        Some(libc::EADDRINUSE | libc::EADDRNOTAVAIL | libc::EACCES) => AppError::new(
            Kind::Local,
            format!("{what}: {}", crate::error::io_reason(e)),
            "",
        )
        .because(crate::ErrorKind::Local { io: Some(e.kind()) }),
        Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => {
            AppError::new(Kind::Network, format!("{what}: host unreachable"), "")
        }
        _ => AppError::new(Kind::Network, format!("{what}: {e}"), ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn timer_gate_waits_for_an_empty_socket_but_not_forever() {
        let t0 = Instant::now();
        let mut g = TimerGate::default();
        assert!(g.open(true, t0));
        assert!(!g.open(false, t0));
        assert!(!g.open(false, t0 + Duration::from_millis(249)));
        assert!(g.open(false, t0 + TIMER_HOLD_MAX));
        // Emptied: the next backlog is timed from its own start.
        assert!(g.open(true, t0 + Duration::from_millis(300)));
        assert!(!g.open(false, t0 + Duration::from_millis(400)));
    }
}
