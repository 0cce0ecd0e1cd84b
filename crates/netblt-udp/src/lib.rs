//! Fast datagram I/O for NETBLT's drivers: UDP with GSO/GRO and raw IP protocol 30.
//!
//! This crate moves datagrams between user buffers and the kernel as cheaply as Linux allows, and
//! nothing more. It knows nothing of NETBLT: it does not depend on `netblt-wire` or `netblt-proto`,
//! in the same way that quinn-udp knows no QUIC. A driver (the CLI, the emulator) glues a sans-IO
//! engine to one of the sockets here through the [`DatagramSocket`] trait.
//!
//! # Why this crate exists
//!
//! On the 2-core, Linux 6.18 hosts this project is built on (see `shared/peers.md`), one `sendto` per
//! 1400-byte datagram tops out near 3 Gb/s on loopback: the cost is the syscall and the per-packet
//! trip through the stack, not the copy. Three kernel features change that:
//!
//! * **GSO** (`UDP_SEGMENT`, Linux 4.18): one `sendmsg` carries up to 64 datagrams of equal size
//!   (the last may be shorter) in one buffer; the kernel (or the NIC) cuts them apart as late as
//!   possible. This is what [`UdpSocket::send`] does when [`Transmit::segment_size`] is set.
//! * **GRO** (`UDP_GRO`, Linux 5.0): the receive path hands us such a train still glued together,
//!   with a control message giving the segment size ([`RecvMeta::stride`]). On loopback a GSO train
//!   is never split at all, which is how peers measured 46 Gb/s here.
//! * **`recvmmsg`/`sendmmsg`**: many datagrams per syscall ([`BATCH`] = 32, as in quinn-udp).
//!
//! # Shape of the API
//!
//! The names follow quinn-udp: a [`Transmit`] describes one send (a destination, a buffer and an
//! optional segment size); [`RecvMeta`] describes one received (possibly coalesced) buffer. The caller
//! owns every buffer; the send and receive paths allocate nothing per datagram (control-message
//! space, address storage and `mmsghdr` arrays live on the stack).
//!
//! A socket bound to a wildcard address (`0.0.0.0`, `[::]`) receives for every address of the host,
//! but a plain send leaves from the address the kernel's routing picks, which on a host with several
//! addresses may not be the one the peer called; a peer whose socket is connected then drops the
//! answer. So such a socket asks for each datagram's destination (`IP_PKTINFO`,
//! `IPV6_RECVPKTINFO`; [`RecvMeta::dst_ip`]), and a send may name its source
//! ([`Transmit::src_ip`]: an `IP_PKTINFO` or `IPV6_PKTINFO` control message beside the
//! `UDP_SEGMENT` one), as quinn-udp and WireGuard do. See [`SocketConfig::pktinfo`].
//!
//! Sockets are non-blocking. [`UdpSocket::wait`] is a thin `ppoll(2)` for drivers without an async
//! runtime, and [`sleep_until`] gives sub-millisecond pacing: it sleeps in the kernel until about
//! [`SPIN_MARGIN`] (plus the timer slack) before the deadline and yields in a loop for the rest;
//! measured median lateness is under a microsecond, against ~60 µs for `std::thread::sleep`.
//!
//! GSO can fail at run time on some drivers and tunnels, and Linux offers no way to detect that
//! short of trying: like quinn-udp, we treat `EIO`/`EINVAL` from a GSO send as "GSO does not work
//! here", turn it off for the life of the socket ([`UdpSocket::max_gso_segments`] drops to 1), count
//! it in [`IoStats::gso_fallbacks`], and resend the batch as individual datagrams. Unlike quinn-udp
//! we first check that a single plain datagram goes through, so that an unrelated `EINVAL` does not
//! cost us GSO for good.
//!
//! [`RawIpSocket`] is NETBLT's native carrier (IP protocol 30, RFC 998). It has the same send and
//! receive shape without GSO/GRO, strips the IPv4 header that raw sockets deliver, and needs root or
//! `CAP_NET_RAW`.
//!
//! Every counter a benchmark or a diagnosis needs (syscalls against datagrams, GSO fallbacks,
//! `EAGAIN`s) is kept in [`IoStats`], as quinn's `UdpStats` does.
//!
//! # Platforms
//!
//! The fast path is `#[cfg(target_os = "linux")]`. Elsewhere, or on Linux with the `portable`
//! feature (which exists so the fallback can be tested here), a plain `send_to`/`recv_from` path is
//! used: one syscall per datagram, no GSO, no GRO, no destination addresses and no chosen source
//! (the kernel's routing picks it).

#![deny(missing_docs)]

mod config;
mod datagram;
mod raw;
mod send;
mod sleep;
mod socket;
mod stats;
mod sys;
mod udp;

pub use config::SocketConfig;
pub use datagram::{GatherTransmit, Readiness, RecvMeta, Segments, Transmit};
pub use raw::{strip_ipv4_header, RawIpSocket, NETBLT_PROTOCOL};
pub use sleep::{set_thread_timer_slack, sleep_until, thread_timer_slack, SPIN_MARGIN};
pub use socket::DatagramSocket;
pub use stats::IoStats;
pub use udp::UdpSocket;

/// How many datagrams (or GRO trains) one [`UdpSocket::recv`] and one [`UdpSocket::send_batch`]
/// handle at most: the size of the `mmsghdr` arrays kept on the stack. 32 as in quinn-udp.
pub const BATCH: usize = 32;

/// The most segments one GSO [`Transmit`] may carry on any platform.
///
/// The kernel's `UDP_MAX_SEGMENTS` was 64 when GSO appeared in Linux 4.18; Linux 6.18 accepts 128
/// (checked on the reference host). We keep 64 so that behaviour does not depend on the kernel;
/// with 1400-byte datagrams the 65,507-byte limit of one UDP send binds first anyway (46).
///
/// A longer transmit is rejected with [`std::io::ErrorKind::InvalidInput`] before any syscall, so
/// that it cannot be mistaken for the `EINVAL` of a device without GSO.
pub const MAX_SEGMENTS: usize = 64;

/// Receive buffer size that can hold any UDP datagram or GRO train (64 KiB).
///
/// With GRO on, a buffer shorter than this may truncate a coalesced train, losing its tail.
pub const MAX_DATAGRAM_BUFFER: usize = 65_536;
