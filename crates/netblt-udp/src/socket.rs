//! [`DatagramSocket`]: what a driver needs from a socket, so it can be generic over UDP and raw IP.

use std::{
    io::{self, IoSliceMut},
    net::SocketAddr,
    time::Duration,
};

use crate::{GatherTransmit, IoStats, Readiness, RecvMeta, Transmit};

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

    /// [`send_batch`](Self::send_batch) for transmits given in parts (see [`GatherTransmit`]): the
    /// kernel gathers them, so payloads are not copied into a train first. The default gathers
    /// each into one buffer and sends it.
    fn send_batch_gather(&self, ts: &[GatherTransmit<'_>]) -> io::Result<usize> {
        for (i, t) in ts.iter().take(crate::BATCH).enumerate() {
            let bytes = t.gather();
            let one = Transmit {
                destination: t.destination,
                contents: &bytes,
                segment_size: t.segment_size,
                src_ip: t.src_ip,
            };
            if let Err(e) = self.send(&one) {
                return if i == 0 { Err(e) } else { Ok(i) };
            }
        }
        Ok(ts.len().min(crate::BATCH))
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

    /// Raises the kernel receive buffer to at least `bytes` (never lowers it), for a driver that
    /// learns after binding how much data may be in flight towards it; returns the size the kernel
    /// reports (twice what it was asked for, on Linux).
    fn grow_recv_buffer(&self, bytes: usize) -> usize;
}
