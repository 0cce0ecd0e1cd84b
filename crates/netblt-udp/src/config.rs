//! Socket configuration shared by [`crate::UdpSocket`] and [`crate::RawIpSocket`].

/// How to set up a socket. Build it with struct update syntax from [`SocketConfig::default`].
///
/// ```
/// let cfg = netblt_udp::SocketConfig { gro: false, ..Default::default() };
/// assert!(cfg.gso);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketConfig {
    /// Requested kernel receive buffer in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF`).
    ///
    /// Default 32 MiB: at 10 Gb/s that is 27 ms of arrivals, enough to ride out a descheduled
    /// receiver thread on a 2-core host. Without `CAP_NET_ADMIN` Linux caps the plain option at
    /// `net.core.rmem_max`; see [`crate::UdpSocket::granted_buffers`] for what was obtained.
    /// 0 leaves the kernel default.
    pub recv_buffer: usize,
    /// Requested kernel send buffer in bytes (`SO_SNDBUFFORCE`, else `SO_SNDBUF`). Default 32 MiB;
    /// 0 leaves the kernel default.
    pub send_buffer: usize,
    /// Use UDP generic segmentation offload when the kernel supports it. Default on.
    /// Ignored by raw IP sockets.
    pub gso: bool,
    /// Ask for UDP generic receive offload (coalesced reads with a stride). Default on.
    /// Ignored by raw IP sockets.
    pub gro: bool,
    /// Set `SO_REUSEPORT` before binding (several sockets sharing one port). Default off.
    pub reuse_port: bool,
    /// A UDP socket bound to the unspecified IPv6 address (`[::]`) takes IPv4 peers too
    /// (`IPV6_V6ONLY` off); they appear as IPv4 addresses both ways (received from `1.2.3.4`,
    /// not `::ffff:1.2.3.4`, and sent to the same), so a caller never sees a mapped address.
    /// Default off: every other IPv6 socket is IPv6 only. Ignored by raw IP sockets.
    pub dual_stack: bool,
    /// On a UDP socket bound to a wildcard address (`0.0.0.0`, `[::]`), learn each datagram's
    /// local destination address ([`crate::RecvMeta::dst_ip`], from `IP_PKTINFO` and
    /// `IPV6_RECVPKTINFO`), so that a server on a host with several addresses can answer from
    /// the one it was called on ([`crate::Transmit::src_ip`]). Default on; a socket bound to one
    /// address, or one that is `connect`ed, does not need it. Linux only; ignored by raw IP
    /// sockets.
    pub pktinfo: bool,
}

impl SocketConfig {
    /// The default buffer request: 32 MiB each way.
    pub const DEFAULT_BUFFER: usize = 32 * 1024 * 1024;
}

impl Default for SocketConfig {
    fn default() -> Self {
        Self {
            recv_buffer: Self::DEFAULT_BUFFER,
            send_buffer: Self::DEFAULT_BUFFER,
            gso: true,
            gro: true,
            reuse_port: false,
            dual_stack: false,
            pktinfo: true,
        }
    }
}

/// Requests the configured buffers and returns what the kernel granted, as `(recv, send)`.
///
/// The forcing options come first because they ignore `net.core.{r,w}mem_max` (4 MiB on the
/// reference hosts); without `CAP_NET_ADMIN` they fail with `EPERM` and the plain options are
/// clamped to that maximum. Linux doubles the value it stores (to account for its bookkeeping) and
/// `getsockopt` reports the doubled figure; we report it as is.
pub(crate) fn apply_buffers(sock: &socket2::Socket, cfg: &SocketConfig) -> (usize, usize) {
    (
        apply_buffer(sock, true, cfg.recv_buffer),
        apply_buffer(sock, false, cfg.send_buffer),
    )
}

/// Raises the receive buffer to at least `size` bytes; see
/// [`crate::DatagramSocket::grow_recv_buffer`].
pub(crate) fn grow_recv_buffer(sock: &socket2::Socket, size: usize) -> usize {
    let now = sock.recv_buffer_size().unwrap_or(0);
    // Linux reports twice the size that was set.
    if now / 2 >= size {
        return now;
    }
    apply_buffer(sock, true, size)
}

fn apply_buffer(sock: &socket2::Socket, recv: bool, size: usize) -> usize {
    let which = if recv { "receive" } else { "send" };
    if size > 0 && crate::sys::set_buffer_forced(sock, recv, size).is_err() {
        let r = if recv {
            sock.set_recv_buffer_size(size)
        } else {
            sock.set_send_buffer_size(size)
        };
        if let Err(e) = r {
            tracing::debug!(error = %e, size, which, "could not set socket buffer");
        }
    }
    let granted = if recv {
        sock.recv_buffer_size()
    } else {
        sock.send_buffer_size()
    }
    .unwrap_or(0);
    if granted < size {
        tracing::info!(
            requested = size,
            granted,
            which,
            "kernel granted a smaller socket buffer than requested \
             (run with CAP_NET_ADMIN or raise net.core.rmem_max/wmem_max)"
        );
    }
    granted
}
