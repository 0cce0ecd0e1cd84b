//! [`RawIpSocket`]: NETBLT's native carrier, raw IP protocol 30.
//!
//! RFC 998 runs NETBLT directly over IP:
//!
//! ```text
//! //= RFC 998 §6 Protocol Layering Structure
//! //# NETBLT is implemented directly on top of the Internet Protocol (IP).
//! //# It has been assigned an official protocol number of 30 (decimal).
//! ```
//!
//! Linux delivers IPv4 raw datagrams with their IP header in front (raw(7): "For receiving, the IP
//! header is always included in the packet"); IPv6 raw sockets deliver the payload only. We strip
//! the IPv4 header in place, honouring IHL (options make it longer than 20 bytes), so that both
//! families look like UDP to the driver. Sends never include a header (`IP_HDRINCL` stays off):
//! the kernel builds it.

use std::{
    io::{self, IoSliceMut},
    net::{IpAddr, SocketAddr},
    sync::atomic::AtomicUsize,
    time::Duration,
};

use socket2::{Domain, Protocol, Socket, Type};
use tracing::debug;

use crate::{
    config::{apply_buffers, SocketConfig},
    send::Sender,
    stats::Counters,
    sys, DatagramSocket, IoStats, Readiness, RecvMeta, Transmit,
};

/// The IP protocol number assigned to NETBLT.
pub const NETBLT_PROTOCOL: u8 = 30;

/// Returns the payload of an IPv4 packet as delivered by a raw socket, or `None` if the bytes are
/// not a plausible IPv4 header (too short, version not 4, IHL below 5 or beyond the data).
///
/// Never panics, whatever the input.
pub fn strip_ipv4_header(packet: &[u8]) -> Option<&[u8]> {
    let first = *packet.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let header_len = usize::from(first & 0x0f) * 4;
    if header_len < 20 {
        return None;
    }
    packet.get(header_len..)
}

/// A non-blocking raw IP socket for one protocol (NETBLT: [`NETBLT_PROTOCOL`]); needs root or
/// `CAP_NET_RAW`.
///
/// Same send and receive shape as [`crate::UdpSocket`] without GSO or GRO: a segmented
/// [`Transmit`] goes out as individual datagrams ([`crate::BATCH`] per `sendmmsg`), and each
/// received buffer holds one datagram. Ports in addresses are ignored on send and 0 on receive.
///
/// A raw socket receives every packet of its protocol addressed to its bound address, including
/// ones meant for other programs; the driver must filter (NETBLT's connection identifiers do).
#[derive(Debug)]
pub struct RawIpSocket {
    socket: Socket,
    v6: bool,
    protocol: u8,
    /// Always 1: the send path is shared with UDP, which reads this.
    gso_segments: AtomicUsize,
    granted: (usize, usize),
    counters: Counters,
}

impl RawIpSocket {
    /// Opens a raw socket for `protocol`, bound to `addr`. `cfg.gso`/`cfg.gro` are ignored.
    ///
    /// Without root or `CAP_NET_RAW` this fails with [`io::ErrorKind::PermissionDenied`] and a
    /// message that says so.
    pub fn bind(addr: IpAddr, protocol: u8, cfg: &SocketConfig) -> io::Result<Self> {
        let sock_addr = SocketAddr::new(addr, 0);
        let socket = Socket::new(
            Domain::for_address(sock_addr),
            Type::RAW,
            Some(Protocol::from(i32::from(protocol))),
        )
        .map_err(|e| permission_hint(e, protocol))?;
        // No IPV6_V6ONLY here: an IPv6 raw socket never sees IPv4 traffic, and Linux refuses the
        // option (EINVAL) on sockets that already have a protocol number, as raw ones do.
        let v6 = addr.is_ipv6();
        socket.set_nonblocking(true)?;
        let granted = apply_buffers(&socket, cfg);
        socket.bind(&sock_addr.into())?;
        debug!(%addr, protocol, recv_buffer = granted.0, send_buffer = granted.1, "raw IP socket bound");
        Ok(Self {
            socket,
            v6,
            protocol,
            gso_segments: AtomicUsize::new(1),
            granted,
            counters: Counters::default(),
        })
    }

    /// The IP protocol number this socket carries.
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// The bound address, with port 0.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        let a = self
            .socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("socket has no IP address"))?;
        // Linux reports the protocol number as the "port" of a raw socket; it is not one.
        Ok(SocketAddr::new(a.ip(), 0))
    }

    /// `(receive, send)` buffer sizes as the kernel reports them (see
    /// [`crate::UdpSocket::granted_buffers`]).
    pub fn granted_buffers(&self) -> (usize, usize) {
        self.granted
    }

    /// Always 1: raw sockets have no GSO.
    pub fn max_gso_segments(&self) -> usize {
        1
    }

    /// Always 1: raw sockets have no GRO.
    pub fn gro_segments(&self) -> usize {
        1
    }

    /// Sends one datagram, or a segmented train as individual datagrams. Errors as
    /// [`crate::UdpSocket::send`].
    pub fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
        self.sender().send(t)
    }

    /// Receives up to `min(bufs.len(), meta.len(), BATCH)` datagrams with one `recvmmsg`; IPv4
    /// headers are stripped in place, so `bufs[i][..meta[i].len]` is the NETBLT packet. A buffer
    /// too short even for the IP header yields `len == 0` with `truncated` set.
    pub fn recv(&self, bufs: &mut [IoSliceMut<'_>], meta: &mut [RecvMeta]) -> io::Result<usize> {
        let n = sys::recv_many(&self.socket, &self.counters, bufs, meta)?;
        for (buf, m) in bufs.iter_mut().zip(meta.iter_mut()).take(n) {
            m.addr.set_port(0);
            if !self.v6 {
                let packet = buf.get(..m.len).unwrap_or(&[]);
                match strip_ipv4_header(packet) {
                    Some(payload) => {
                        let start = m.len - payload.len();
                        let end = m.len;
                        buf.copy_within(start..end, 0);
                        m.len = end - start;
                    }
                    None => {
                        // Only a buffer shorter than the header can get here: the kernel always
                        // delivers a well-formed header to raw sockets.
                        m.len = 0;
                        m.truncated = true;
                    }
                }
            }
            m.stride = m.len;
            self.counters.received(1, m.len);
            if m.truncated {
                self.counters.truncated();
            }
        }
        Ok(n)
    }

    /// As [`crate::UdpSocket::wait`].
    pub fn wait(
        &self,
        readable: bool,
        writable: bool,
        timeout: Option<Duration>,
    ) -> io::Result<Readiness> {
        sys::wait(&self.socket, readable, writable, timeout)
    }

    /// A snapshot of the I/O counters.
    pub fn stats(&self) -> IoStats {
        self.counters.snapshot()
    }

    fn sender(&self) -> Sender<'_> {
        Sender {
            sock: &self.socket,
            counters: &self.counters,
            gso_segments: &self.gso_segments,
            family: crate::send::Family::of(self.v6),
            // Same limit as UDP so a driver's batching does not depend on the carrier.
            max_payload: crate::send::max_udp_payload(self.v6),
        }
    }
}

/// Turns the bare `EPERM` of `socket(AF_INET, SOCK_RAW, …)` into an error that says what to do.
fn permission_hint(e: io::Error, protocol: u8) -> io::Error {
    if e.kind() == io::ErrorKind::PermissionDenied {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "opening a raw IP socket for protocol {protocol} needs root or CAP_NET_RAW \
                 (run as root, or `setcap cap_net_raw+ep` on the binary); or use UDP: {e}"
            ),
        )
    } else {
        e
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for RawIpSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for RawIpSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.socket)
    }
}

impl DatagramSocket for RawIpSocket {
    fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
        RawIpSocket::send(self, t)
    }
    fn recv(&self, bufs: &mut [IoSliceMut<'_>], meta: &mut [RecvMeta]) -> io::Result<usize> {
        RawIpSocket::recv(self, bufs, meta)
    }
    fn wait(
        &self,
        readable: bool,
        writable: bool,
        timeout: Option<Duration>,
    ) -> io::Result<Readiness> {
        RawIpSocket::wait(self, readable, writable, timeout)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        RawIpSocket::local_addr(self)
    }
    fn max_gso_segments(&self) -> usize {
        1
    }
    fn stats(&self) -> IoStats {
        RawIpSocket::stats(self)
    }

    fn grow_recv_buffer(&self, bytes: usize) -> usize {
        crate::config::grow_recv_buffer(&self.socket, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::strip_ipv4_header;

    #[test]
    fn strips_plain_and_optioned_headers() {
        let mut p = vec![0x45u8; 20];
        p.extend_from_slice(b"netblt");
        assert_eq!(strip_ipv4_header(&p), Some(&b"netblt"[..]));
        // IHL 6: one 4-byte option word.
        let mut q = vec![0x46u8; 24];
        q.extend_from_slice(b"x");
        assert_eq!(strip_ipv4_header(&q), Some(&b"x"[..]));
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert_eq!(strip_ipv4_header(&[]), None);
        assert_eq!(strip_ipv4_header(&[0x45; 19]), None); // shorter than IHL says
        assert_eq!(strip_ipv4_header(&[0x44; 40]), None); // IHL 4 < 5
        assert_eq!(strip_ipv4_header(&[0x65; 40]), None); // version 6
        assert_eq!(strip_ipv4_header(&[0x4f; 59]), None); // IHL 15 = 60 bytes
        assert_eq!(strip_ipv4_header(&[0x4f; 60]), Some(&[][..]));
        // Exhaustive over the first byte and short lengths.
        for b in 0..=255u8 {
            for len in 0..64 {
                let mut v = vec![0u8; len];
                if let Some(f) = v.first_mut() {
                    *f = b;
                }
                let _ = strip_ipv4_header(&v);
            }
        }
    }
}
