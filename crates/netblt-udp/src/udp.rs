//! [`UdpSocket`]: a non-blocking UDP socket with GSO sends and GRO/`recvmmsg` receives.

use std::{
    io::{self, IoSliceMut},
    net::SocketAddr,
    sync::atomic::{AtomicUsize, Ordering::Relaxed},
    time::Duration,
};

use socket2::{Domain, Protocol, Socket, Type};
use tracing::debug;

use crate::{
    config::{apply_buffers, SocketConfig},
    send::{canonical, Family, Sender},
    stats::Counters,
    sys, DatagramSocket, GatherTransmit, IoStats, Readiness, RecvMeta, Transmit,
};

/// A non-blocking UDP socket tuned for bulk transfer (IPv4, or IPv6 with `IPV6_V6ONLY` unless
/// bound dual-stack to `[::]`).
///
/// Share it between a sending and a receiving thread by reference (`&UdpSocket` is `Sync`).
///
/// ```
/// use std::io::IoSliceMut;
/// use netblt_udp::{RecvMeta, SocketConfig, Transmit, UdpSocket};
///
/// let cfg = SocketConfig::default();
/// let rx = UdpSocket::bind("127.0.0.1:0".parse()?, &cfg)?;
/// let tx = UdpSocket::bind("127.0.0.1:0".parse()?, &cfg)?;
/// // Three 100-byte datagrams in one syscall when GSO works.
/// let data = [7u8; 300];
/// tx.send(&Transmit {
///     destination: rx.local_addr()?,
///     contents: &data,
///     segment_size: Some(100),
///     src_ip: None,
/// })?;
///
/// let mut storage = vec![0u8; netblt_udp::MAX_DATAGRAM_BUFFER];
/// let mut bufs = [IoSliceMut::new(&mut storage)];
/// let mut meta = [RecvMeta::default()];
/// let mut got = 0;
/// while got < 3 {
///     rx.wait(true, false, None)?;
///     let n = match rx.recv(&mut bufs, &mut meta) {
///         Ok(n) => n,
///         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
///         Err(e) => return Err(e.into()),
///     };
///     for m in &meta[..n] {
///         got += m.segments(&bufs[0]).count(); // 3 at once with GRO, else one at a time
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    socket: Socket,
    family: Family,
    /// Live GSO limit: drops to 1 for good if the kernel refuses a GSO send.
    gso_segments: AtomicUsize,
    gro_segments: usize,
    granted: (usize, usize),
    counters: Counters,
}

impl UdpSocket {
    /// Opens, configures and binds a socket. An IPv6 address gets `IPV6_V6ONLY` (no dual stack:
    /// a v6 socket never sees v4-mapped peers, so addresses compare as expected), except the
    /// unspecified one (`[::]`) with [`SocketConfig::dual_stack`]: that socket takes IPv4 peers
    /// too, and shows and takes their addresses as IPv4 ones.
    ///
    /// Options are set before `bind`, so that `SO_REUSEPORT` applies and the buffers are in place
    /// before the first datagram can arrive.
    pub fn bind(addr: SocketAddr, cfg: &SocketConfig) -> io::Result<UdpSocket> {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        let v6 = addr.is_ipv6();
        let dual = v6 && cfg.dual_stack && addr.ip().is_unspecified();
        if v6 {
            socket.set_only_v6(!dual)?;
        }
        if cfg.reuse_port {
            set_reuse_port(&socket)?;
        }
        socket.set_nonblocking(true)?;
        let granted = apply_buffers(&socket, cfg);
        let gso = cfg.gso && sys::probe_gso(&socket);
        let gro = cfg.gro && sys::enable_gro(&socket);
        // A wildcard socket receives for every local address: learn each datagram's, so that
        // answers can leave from it (RecvMeta::dst_ip, Transmit::src_ip).
        let pktinfo = cfg.pktinfo
            && addr.ip().is_unspecified()
            && sys::enable_pktinfo(&socket, !v6 || dual, v6);
        socket.bind(&addr.into())?;
        let this = UdpSocket {
            socket,
            family: if dual { Family::Dual } else { Family::of(v6) },
            gso_segments: AtomicUsize::new(if gso { sys::GSO_SEGMENTS } else { 1 }),
            gro_segments: if gro { sys::GRO_SEGMENTS } else { 1 },
            granted,
            counters: Counters::default(),
        };
        debug!(
            local = ?this.local_addr().ok(),
            gso, gro, dual, pktinfo,
            recv_buffer = granted.0,
            send_buffer = granted.1,
            "UDP socket bound"
        );
        Ok(this)
    }

    /// The bound address (with the port the kernel picked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("socket has no IP address"))
    }

    /// The path MTU the kernel knows for this socket's peer (`IP_MTU` or `IPV6_MTU`): only for a
    /// `connect`ed socket. The interface's MTU (65535 on IPv4 loopback: its MTU is 65536, an IPv4
    /// packet at most 65535), or less once path MTU discovery learned it. An error for an
    /// unconnected socket, or where the system cannot tell.
    pub fn path_mtu(&self) -> io::Result<usize> {
        let v6 = self.local_addr()?.is_ipv6();
        sys::path_mtu(&self.socket, v6)
    }

    /// `(receive, send)` buffer sizes as the kernel reports them after configuration. Linux reports
    /// twice the size it was asked for (it counts its bookkeeping), so the default 32 MiB request
    /// reads back as 64 MiB when granted in full.
    pub fn granted_buffers(&self) -> (usize, usize) {
        self.granted
    }

    /// Segments one [`Transmit`] may carry in a single syscall: [`crate::MAX_SEGMENTS`] with GSO,
    /// 1 when GSO is unavailable, disabled by config, or was turned off at run time.
    ///
    /// A transmit with more segments than this is still accepted (up to `MAX_SEGMENTS`): it is
    /// then sent as individual datagrams.
    pub fn max_gso_segments(&self) -> usize {
        self.gso_segments.load(Relaxed)
    }

    /// Datagrams one received buffer may hold coalesced: 64 with GRO, else 1. With GRO, give
    /// [`UdpSocket::recv`] buffers of [`crate::MAX_DATAGRAM_BUFFER`] bytes.
    pub fn gro_segments(&self) -> usize {
        self.gro_segments
    }

    /// One `sendmsg`. With `segment_size: Some(s)` and contents longer than `s`, a `UDP_SEGMENT`
    /// control message asks the kernel to cut the contents into `s`-byte datagrams (GSO).
    ///
    /// * On `EIO`/`EINVAL` from a GSO send, GSO is turned off for good on this socket (counted in
    ///   [`IoStats::gso_fallbacks`]) and the train is resent as individual datagrams, once a lone
    ///   datagram has shown that the fault is GSO's.
    /// * Without GSO a train goes out as individual datagrams, [`crate::BATCH`] per `sendmmsg`.
    /// * `WouldBlock` (as [`io::ErrorKind::WouldBlock`]) means nothing was sent: retry the whole
    ///   transmit after [`UdpSocket::wait`]. Once part of a split train is out, `send` waits for
    ///   space itself (up to 1 s, then `TimedOut`); any error after part of a train went out
    ///   leaves the sent part sent (and counted in [`UdpSocket::stats`]).
    /// * `InvalidInput` before any syscall for a destination of the other address family, a
    ///   [`Transmit::src_ip`] of another family than the destination, more than
    ///   [`crate::MAX_SEGMENTS`] segments, or a train longer than one UDP datagram may be.
    /// * With [`Transmit::src_ip`] set, an `IP_PKTINFO`/`IPV6_PKTINFO` control message beside
    ///   the `UDP_SEGMENT` one makes the datagrams leave from that address; one that is not (or
    ///   no longer) local fails as the kernel says (`EINVAL`, `EADDRNOTAVAIL`).
    pub fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
        self.sender().send(t)
    }

    /// Sends up to [`crate::BATCH`] transmits (each may be a GSO train) with one `sendmmsg`;
    /// returns how many were sent, so that the caller retries the rest. Errors as
    /// [`UdpSocket::send`], reported only when the first transmit failed.
    ///
    /// This is how to put more than 64 KiB on the wire per syscall: e.g. two 32-segment trains
    /// of 1400-byte datagrams (89,600 bytes) in one call, which a single GSO send cannot carry.
    pub fn send_batch(&self, ts: &[Transmit<'_>]) -> io::Result<usize> {
        self.sender().send_batch(ts)
    }

    /// One `recvmmsg` into up to `min(bufs.len(), meta.len(), BATCH)` buffers, one datagram or GRO
    /// train per buffer. `meta[i]` describes `bufs[i]`; returns the number of entries filled.
    ///
    /// With GRO on, `meta[i].len` may be a multiple of `meta[i].stride` plus a remainder: walk it
    /// with [`RecvMeta::segments`]. A datagram larger than its buffer is cut and reported with
    /// `meta[i].truncated` (never a panic). `WouldBlock` when nothing is queued.
    pub fn recv(&self, bufs: &mut [IoSliceMut<'_>], meta: &mut [RecvMeta]) -> io::Result<usize> {
        let n = sys::recv_many(&self.socket, &self.counters, bufs, meta)?;
        for m in meta.iter_mut().take(n) {
            if self.family == Family::Dual {
                m.addr = canonical(m.addr);
                m.dst_ip = m.dst_ip.map(|ip| ip.to_canonical());
            }
            self.counters.received(m.datagram_count(), m.len);
            if m.truncated {
                self.counters.truncated();
            }
        }
        Ok(n)
    }

    /// Blocks until the socket is readable (if `readable`) or writable (if `writable`), or until
    /// `timeout` passes (`None`: no limit). Uses `ppoll(2)` on Linux (nanosecond timeout).
    /// [`Readiness::timed_out`] tells a timeout.
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
            family: self.family,
            max_payload: self.family.max_payload(),
        }
    }
}

#[cfg(all(
    unix,
    not(any(target_os = "solaris", target_os = "illumos", target_os = "cygwin"))
))]
fn set_reuse_port(socket: &Socket) -> io::Result<()> {
    socket.set_reuse_port(true)
}

#[cfg(not(all(
    unix,
    not(any(target_os = "solaris", target_os = "illumos", target_os = "cygwin"))
)))]
fn set_reuse_port(_socket: &Socket) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "SO_REUSEPORT is not available on this platform",
    ))
}

#[cfg(unix)]
impl std::os::fd::AsFd for UdpSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.socket)
    }
}

impl DatagramSocket for UdpSocket {
    fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
        UdpSocket::send(self, t)
    }
    fn send_batch(&self, ts: &[Transmit<'_>]) -> io::Result<usize> {
        UdpSocket::send_batch(self, ts)
    }

    fn send_batch_gather(&self, ts: &[GatherTransmit<'_>]) -> io::Result<usize> {
        self.sender().send_batch_gather(ts)
    }
    fn recv(&self, bufs: &mut [IoSliceMut<'_>], meta: &mut [RecvMeta]) -> io::Result<usize> {
        UdpSocket::recv(self, bufs, meta)
    }
    fn wait(
        &self,
        readable: bool,
        writable: bool,
        timeout: Option<Duration>,
    ) -> io::Result<Readiness> {
        UdpSocket::wait(self, readable, writable, timeout)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        UdpSocket::local_addr(self)
    }
    fn max_gso_segments(&self) -> usize {
        UdpSocket::max_gso_segments(self)
    }
    fn gro_segments(&self) -> usize {
        UdpSocket::gro_segments(self)
    }
    fn stats(&self) -> IoStats {
        UdpSocket::stats(self)
    }

    fn grow_recv_buffer(&self, bytes: usize) -> usize {
        crate::config::grow_recv_buffer(&self.socket, bytes)
    }
}
