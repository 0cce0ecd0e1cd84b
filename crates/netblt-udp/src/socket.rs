//! [`DatagramSocket`]: what a driver needs from a socket, so it can be generic over UDP and raw IP.

use std::{
    io::{self, IoSliceMut},
    net::SocketAddr,
    time::Duration,
};

use crate::{IoStats, Readiness, RecvMeta, Transmit};

/// The operations a NETBLT driver uses, implemented by [`crate::UdpSocket`] and
/// [`crate::RawIpSocket`]. See [`crate::UdpSocket`] for the full contract of each method.
pub trait DatagramSocket {
    /// Sends one datagram or one segmented train (see [`Transmit`]).
    fn send(&self, t: &Transmit<'_>) -> io::Result<()>;

    /// Sends up to [`crate::BATCH`] transmits, in one syscall where the platform allows; returns how
    /// many were sent (the rest may be retried). The default sends them one by one.
    fn send_batch(&self, ts: &[Transmit<'_>]) -> io::Result<usize> {
        for (i, t) in ts.iter().enumerate() {
            if let Err(e) = self.send(t) {
                return if i == 0 { Err(e) } else { Ok(i) };
            }
        }
        Ok(ts.len())
    }

    /// Receives into up to `min(bufs.len(), meta.len(), BATCH)` buffers; returns how many `meta`
    /// entries were filled. `WouldBlock` when nothing is queued.
    fn recv(&self, bufs: &mut [IoSliceMut<'_>], meta: &mut [RecvMeta]) -> io::Result<usize>;

    /// Waits until the socket is readable and/or writable, or the timeout passes.
    fn wait(
        &self,
        readable: bool,
        writable: bool,
        timeout: Option<Duration>,
    ) -> io::Result<Readiness>;

    /// The bound local address.
    fn local_addr(&self) -> io::Result<SocketAddr>;

    /// Segments one [`Transmit`] may carry in a single syscall right now (1 without GSO).
    fn max_gso_segments(&self) -> usize;

    /// Datagrams one receive buffer may hold coalesced (1 without GRO).
    fn gro_segments(&self) -> usize {
        1
    }

    /// I/O counters since the socket was opened.
    fn stats(&self) -> IoStats;
}
