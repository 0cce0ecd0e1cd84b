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
//! 2. run due timers;
//! 3. let the application ([`crate::app::transfer::Transfer`]) move buffers
//!    between the engine and its reader/writer threads;
//! 4. drain `poll_transmit` into GSO trains ([`tx::TxQueue`]) and send them
//!    with one `sendmmsg`;
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
//! transmit trains (33 × 64 KiB) are allocated once, and NETBLT buffers are
//! recycled between the engine and the disk threads.

pub mod active;
pub mod clock;
pub mod passive;
pub mod poll;
pub mod rx;
pub mod socket;
pub mod tx;

use std::io;
use std::net::SocketAddr;

pub use poll::Waker;

use crate::app::AppError;
use crate::exit;

/// Receive syscalls per loop turn at most, so that a flood of arrivals
/// cannot starve our own transmissions.
pub const MAX_RX_ROUNDS: usize = 8;

/// 32 random bits from the OS (connection unique IDs, temp names, raw-IP
/// ports). Falls back to the clock if the OS source fails.
pub fn random_u32() -> u32 {
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
pub fn precise_timers() {
    let _ = netblt_udp::set_thread_timer_slack(std::time::Duration::from_micros(1));
}

/// A socket error in the user's words, with its exit code. `opening`: no
/// answer from the peer yet.
pub fn network_error(e: &io::Error, peer: SocketAddr, opening: bool) -> AppError {
    let code = exit::NETWORK;
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) if opening => AppError::new(
            code,
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
        // larger datagrams: say what to change instead of "Message too long".
        Some(libc::EMSGSIZE) => AppError::new(
            code,
            format!(
                "datagrams to {peer} are larger than the path allows (MTU): use a smaller --packet-size (1400 fits a 1500-byte MTU)"
            ),
            "",
        ),
        _ => AppError::new(code, format!("network error with {peer}: {e}"), ""),
    }
}

/// A socket that could not be opened.
pub fn socket_error(e: &io::Error, what: &str, raw: bool) -> AppError {
    if raw && e.kind() == io::ErrorKind::PermissionDenied {
        return AppError::new(
            exit::LOCAL,
            "--raw-ip needs root (or CAP_NET_RAW): raw IP sockets are privileged",
            "",
        );
    }
    match e.raw_os_error() {
        Some(libc::EADDRINUSE) => {
            AppError::new(exit::LOCAL, format!("{what}: address already in use"), "")
        }
        Some(libc::EADDRNOTAVAIL) => AppError::new(
            exit::LOCAL,
            format!("{what}: address not available on this host"),
            "",
        ),
        Some(libc::EACCES) => AppError::new(exit::LOCAL, format!("{what}: permission denied"), ""),
        Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => {
            AppError::new(exit::NETWORK, format!("{what}: host unreachable"), "")
        }
        _ => AppError::new(exit::NETWORK, format!("{what}: {e}"), ""),
    }
}
