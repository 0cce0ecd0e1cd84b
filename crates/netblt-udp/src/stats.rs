//! Syscall and datagram counters ([`IoStats`]).
//!
//! Counting syscalls against datagrams is the whole point of GSO, GRO and `mmsg`, so every syscall
//! is counted where it is made, failed ones (`EAGAIN`) included: a busy-polling receiver pays for
//! those too.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of a socket's I/O counters since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoStats {
    /// Send syscalls made (`sendmsg`, `sendmmsg`, `sendto`), including failed ones.
    pub send_syscalls: u64,
    /// Receive syscalls made (`recvmmsg`, `recvfrom`), including ones that found nothing.
    pub recv_syscalls: u64,
    /// Datagrams handed to the kernel (a GSO train of N segments counts N).
    pub datagrams_sent: u64,
    /// Datagrams received (a GRO train of N segments counts N).
    pub datagrams_received: u64,
    /// Payload bytes handed to the kernel.
    pub bytes_sent: u64,
    /// Payload bytes received (for raw IPv4, without the IP header).
    pub bytes_received: u64,
    /// Times GSO failed at run time and was turned off (0 or 1 per socket).
    pub gso_fallbacks: u64,
    /// Syscalls that failed with `EAGAIN`/`EWOULDBLOCK`, both directions.
    pub would_block: u64,
    /// Received buffers the kernel truncated (`MSG_TRUNC`).
    pub truncated: u64,
}

impl IoStats {
    /// Send syscalls per datagram sent (0 when nothing was sent).
    pub fn send_syscalls_per_datagram(&self) -> f64 {
        ratio(self.send_syscalls, self.datagrams_sent)
    }

    /// Receive syscalls per datagram received (0 when nothing was received).
    pub fn recv_syscalls_per_datagram(&self) -> f64 {
        ratio(self.recv_syscalls, self.datagrams_received)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The live counters. Relaxed atomics: they are statistics, ordered with nothing, and they let a
/// socket be shared by a sending and a receiving thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    send_syscalls: AtomicU64,
    recv_syscalls: AtomicU64,
    datagrams_sent: AtomicU64,
    datagrams_received: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    gso_fallbacks: AtomicU64,
    would_block: AtomicU64,
    truncated: AtomicU64,
}

fn add(c: &AtomicU64, n: usize) {
    c.fetch_add(n as u64, Relaxed);
}

impl Counters {
    pub(crate) fn send_syscall(&self) {
        add(&self.send_syscalls, 1);
    }
    pub(crate) fn recv_syscall(&self) {
        add(&self.recv_syscalls, 1);
    }
    pub(crate) fn sent(&self, datagrams: usize, bytes: usize) {
        add(&self.datagrams_sent, datagrams);
        add(&self.bytes_sent, bytes);
    }
    pub(crate) fn received(&self, datagrams: usize, bytes: usize) {
        add(&self.datagrams_received, datagrams);
        add(&self.bytes_received, bytes);
    }
    pub(crate) fn gso_fallback(&self) {
        add(&self.gso_fallbacks, 1);
    }
    pub(crate) fn would_block(&self) {
        add(&self.would_block, 1);
    }
    pub(crate) fn truncated(&self) {
        add(&self.truncated, 1);
    }
    /// Counts the outcome of one syscall's error, if any.
    pub(crate) fn note_error(&self, e: &std::io::Error) {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            self.would_block();
        }
    }

    pub(crate) fn snapshot(&self) -> IoStats {
        IoStats {
            send_syscalls: self.send_syscalls.load(Relaxed),
            recv_syscalls: self.recv_syscalls.load(Relaxed),
            datagrams_sent: self.datagrams_sent.load(Relaxed),
            datagrams_received: self.datagrams_received.load(Relaxed),
            bytes_sent: self.bytes_sent.load(Relaxed),
            bytes_received: self.bytes_received.load(Relaxed),
            gso_fallbacks: self.gso_fallbacks.load(Relaxed),
            would_block: self.would_block.load(Relaxed),
            truncated: self.truncated.load(Relaxed),
        }
    }
}
