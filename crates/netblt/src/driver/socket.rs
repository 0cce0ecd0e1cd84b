//! The carrier: UDP (default, port [`DEFAULT_PORT`]) or raw IP protocol 30.
//!
//! RFC 998 §6: "NETBLT is implemented directly on top of the Internet
//! Protocol (IP). It has been assigned an official protocol number of 30".
//! Raw IP needs root (or `CAP_NET_RAW`), and most firewalls and NATs drop
//! unknown protocols, so UDP is the default: NETBLT's header rides inside a
//! UDP datagram, NETBLT ports equal UDP ports, and the kernel's GSO/GRO
//! batching applies. With `--raw-ip` the same packets go straight into IP.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};

use netblt_udp::{DatagramSocket, RawIpSocket, SocketConfig, UdpSocket, NETBLT_PROTOCOL};

/// NETBLT's default port, UDP and NETBLT alike: 9998, after RFC 998.
pub const DEFAULT_PORT: u16 = 9998;

/// A bound socket of either kind.
#[derive(Debug)]
pub(crate) enum NetSocket {
    Udp(UdpSocket),
    Raw(RawIpSocket),
}

fn unspecified(v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    }
}

impl NetSocket {
    /// Binds a listening socket (the passive end). Over UDP, `[::]` is
    /// dual-stack: IPv4 peers reach it too and are seen as IPv4 addresses
    /// (decision F10); a wildcard socket learns each datagram's destination
    /// so that answers leave from it (decision Z26, `locals.rs`).
    pub(crate) fn listen(addr: SocketAddr, raw: bool) -> io::Result<NetSocket> {
        let cfg = SocketConfig {
            dual_stack: true,
            ..SocketConfig::default()
        };
        if raw {
            Ok(NetSocket::Raw(RawIpSocket::bind(
                addr.ip(),
                NETBLT_PROTOCOL,
                &cfg,
            )?))
        } else {
            Ok(NetSocket::Udp(UdpSocket::bind(addr, &cfg)?))
        }
    }

    /// Binds the active end's socket for talking to `remote`. A UDP socket is
    /// also `connect`ed: the kernel then reports an ICMP port unreachable as
    /// `ECONNREFUSED`, which is how we tell "nothing listening" at once
    /// instead of after eight unanswered OPENs.
    pub(crate) fn connect(remote: SocketAddr, raw: bool) -> io::Result<NetSocket> {
        // Connected: its source address is fixed, nothing to learn per datagram.
        let cfg = SocketConfig {
            pktinfo: false,
            ..SocketConfig::default()
        };
        let local = SocketAddr::new(unspecified(remote.is_ipv6()), 0);
        if raw {
            return Ok(NetSocket::Raw(RawIpSocket::bind(
                local.ip(),
                NETBLT_PROTOCOL,
                &cfg,
            )?));
        }
        let s = UdpSocket::bind(local, &cfg)?;
        socket2::SockRef::from(&s).connect(&remote.into())?;
        Ok(NetSocket::Udp(s))
    }

    pub(crate) fn as_dyn(&self) -> &dyn DatagramSocket {
        match self {
            NetSocket::Udp(s) => s,
            NetSocket::Raw(s) => s,
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.as_dyn().local_addr()
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        match self {
            NetSocket::Udp(s) => s.as_raw_fd(),
            NetSocket::Raw(s) => s.as_raw_fd(),
        }
    }

    /// A pending asynchronous error (`SO_ERROR`), e.g. `ECONNREFUSED` from
    /// an ICMP message, taken off the socket.
    pub(crate) fn take_error(&self) -> Option<io::Error> {
        let r = match self {
            NetSocket::Udp(s) => socket2::SockRef::from(s).take_error(),
            NetSocket::Raw(s) => socket2::SockRef::from(s).take_error(),
        };
        r.unwrap_or_else(Some)
    }
}

/// A random NETBLT port for the active end over raw IP, where no kernel
/// assigns one (the ephemeral range, 49152..=65535).
pub(crate) fn random_port() -> u16 {
    49152 + (crate::driver::random_u32() % 16384) as u16
}
