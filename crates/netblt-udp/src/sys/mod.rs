//! Platform layer: the syscalls behind the sockets.
//!
//! `linux.rs` holds the fast path (`sendmsg` + `UDP_SEGMENT`, `sendmmsg`, `recvmmsg` + `UDP_GRO`,
//! `ppoll`, `clock_nanosleep`); `fallback.rs` the portable one (one `send_to`/`recv_from` per
//! datagram). Both offer the same `pub(crate)` functions, chosen as quinn-udp does with `#[path]`.
//! The `portable` feature selects the fallback on Linux too, so that it is built and tested here.

use std::net::IpAddr;

use socket2::SockAddr;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[path = "linux.rs"]
mod imp;

#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
#[path = "fallback.rs"]
mod imp;

pub(crate) use imp::*;

/// One datagram, or one GSO train when `segment_size` is set, ready for the kernel.
#[derive(Clone, Copy)]
pub(crate) struct OutMsg<'a> {
    pub(crate) dst: &'a SockAddr,
    pub(crate) contents: &'a [u8],
    /// Set only when the contents really are longer than one segment and GSO is in use.
    pub(crate) segment_size: Option<u16>,
    /// Source address (`IP_PKTINFO`/`IPV6_PKTINFO`), already checked against the destination's
    /// family by `send.rs`; never unspecified.
    pub(crate) src: Option<IpAddr>,
}

/// A GSO train (or one datagram) whose contents are gathered from `parts` by the kernel.
#[derive(Clone, Copy)]
pub(crate) struct OutMsgGather<'a> {
    pub(crate) dst: &'a SockAddr,
    pub(crate) parts: &'a [std::io::IoSlice<'a>],
    pub(crate) segment_size: Option<u16>,
    pub(crate) src: Option<IpAddr>,
}
