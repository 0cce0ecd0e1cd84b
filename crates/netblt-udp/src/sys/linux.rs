//! Linux fast path: `sendmsg` with a `UDP_SEGMENT` control message, `sendmmsg`, `recvmmsg` with
//! `UDP_GRO`, `ppoll` and `clock_nanosleep`; `IP_PKTINFO`/`IPV6_PKTINFO` to learn a datagram's
//! destination and to choose a send's source address.
//!
//! Every array the kernel reads or writes (`mmsghdr`, `iovec`, address storage, control-message
//! space) lives on the stack, sized for [`BATCH`] messages: no allocation per datagram.

use std::{
    io::{self, IoSliceMut},
    mem::{self, MaybeUninit},
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6},
    os::fd::AsRawFd,
    ptr,
    time::{Duration, Instant},
};

use socket2::Socket;

use super::{OutMsg, OutMsgGather};
use crate::{datagram::RecvMeta, stats::Counters, Readiness, BATCH, MAX_SEGMENTS};

// From <linux/udp.h>. The libc crate exports these only for some target environments.
const SOL_UDP: libc::c_int = libc::IPPROTO_UDP;
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

// From <asm/socket.h>: these differ on a few architectures and libc does not export them for gnu.
#[cfg(any(target_arch = "mips", target_arch = "mips64"))]
const SO_SNDBUFFORCE: libc::c_int = 31;
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_SNDBUFFORCE: libc::c_int = 0x100a;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const SO_SNDBUFFORCE: libc::c_int = 32;
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_RCVBUFFORCE: libc::c_int = 0x100b;
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_RCVBUFFORCE: libc::c_int = 33;

/// Segments per GSO send when GSO works (our cap, at most the kernel's `UDP_MAX_SEGMENTS`).
pub(crate) const GSO_SEGMENTS: usize = MAX_SEGMENTS;
/// Segments one GRO read may hold: the kernel coalesces up to 64 KiB, at most 64 segments.
pub(crate) const GRO_SEGMENTS: usize = 64;

// SAFETY: CMSG_SPACE is pure arithmetic on its argument.
const GSO_CMSG_SPACE: usize = unsafe { libc::CMSG_SPACE(mem::size_of::<u16>() as u32) } as usize;
// SAFETY: as above.
const PKTINFO4_CMSG_SPACE: usize =
    unsafe { libc::CMSG_SPACE(mem::size_of::<libc::in_pktinfo>() as u32) } as usize;
// SAFETY: as above.
const PKTINFO6_CMSG_SPACE: usize =
    unsafe { libc::CMSG_SPACE(mem::size_of::<libc::in6_pktinfo>() as u32) } as usize;
const PKTINFO_CMSG_SPACE: usize = if PKTINFO6_CMSG_SPACE > PKTINFO4_CMSG_SPACE {
    PKTINFO6_CMSG_SPACE
} else {
    PKTINFO4_CMSG_SPACE
};
/// Room for what one send may carry: a `UDP_SEGMENT` and an `IP_PKTINFO` or `IPV6_PKTINFO`
/// (24 + 40 bytes on 64-bit Linux).
const SEND_CMSG_SPACE: usize = GSO_CMSG_SPACE + PKTINFO_CMSG_SPACE;
// SAFETY: as above.
const GRO_CMSG_SPACE: usize =
    unsafe { libc::CMSG_SPACE(mem::size_of::<libc::c_int>() as u32) } as usize;
/// Room for everything we ask the kernel for on receive: `UDP_GRO` (an int) and the
/// destination (`IP_PKTINFO`, or `IPV6_PKTINFO`; one of the two per datagram, both counted), 96
/// bytes on 64-bit Linux. More would set `MSG_CTRUNC`; a cut message is never read (see
/// [`decode_cmsgs`]), so the worst case is a missing stride or destination, not a wrong one.
const RECV_CMSG_SPACE: usize = GRO_CMSG_SPACE + PKTINFO4_CMSG_SPACE + PKTINFO6_CMSG_SPACE;

/// Control-message space with the alignment of `cmsghdr` (that of `size_t`).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct CmsgBuf<const N: usize>([u8; N]);

fn setsockopt_int(
    sock: &Socket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: we pass a pointer to a live c_int and its exact size.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Can this socket do GSO? Setting `UDP_SEGMENT` to 0 (no default segment size) succeeds exactly
/// when the kernel knows the option, and leaves per-send behaviour unchanged. A device that
/// cannot segment still shows up only at send time (EIO), which `send.rs` handles.
pub(crate) fn probe_gso(sock: &Socket) -> bool {
    setsockopt_int(sock, SOL_UDP, UDP_SEGMENT, 0).is_ok()
}

/// Turns on `UDP_GRO`; false when the kernel (before 5.0) does not know it.
pub(crate) fn enable_gro(sock: &Socket) -> bool {
    setsockopt_int(sock, SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Asks for each datagram's destination address: `IP_PKTINFO` for IPv4 (on a dual-stack IPv6
/// socket too, where IPv4 peers' datagrams carry IPv4 control messages), `IPV6_RECVPKTINFO` for
/// IPv6. True when every option asked for was accepted.
pub(crate) fn enable_pktinfo(sock: &Socket, v4: bool, v6: bool) -> bool {
    let mut ok = true;
    if v4 {
        ok &= setsockopt_int(sock, libc::IPPROTO_IP, libc::IP_PKTINFO, 1).is_ok();
    }
    if v6 {
        ok &= setsockopt_int(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1).is_ok();
    }
    ok
}

/// `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`: ignore `net.core.{r,w}mem_max` (needs `CAP_NET_ADMIN`).
pub(crate) fn set_buffer_forced(sock: &Socket, recv: bool, size: usize) -> io::Result<()> {
    let name = if recv { SO_RCVBUFFORCE } else { SO_SNDBUFFORCE };
    let value = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    setsockopt_int(sock, libc::SOL_SOCKET, name, value)
}

/// Points `hdr` at `ctrl` and writes into it the control messages a send needs: `UDP_SEGMENT`
/// for a GSO train, `IP_PKTINFO` or `IPV6_PKTINFO` for a chosen source address. Leaves `hdr`
/// without control data when there is neither. `msg_controllen` is exactly the space used: the
/// kernel reads every control message in it.
///
/// # Safety
/// `ctrl` must outlive every use of `hdr`.
unsafe fn encode_control(
    hdr: &mut libc::msghdr,
    ctrl: &mut CmsgBuf<SEND_CMSG_SPACE>,
    segment: Option<u16>,
    src: Option<IpAddr>,
) {
    let base = ctrl.0.as_mut_ptr();
    let mut used = 0;
    if let Some(segment) = segment {
        // SAFETY: ctrl is aligned for cmsghdr and has room for GSO_CMSG_SPACE bytes at 0.
        unsafe { put_cmsg(base, SOL_UDP, UDP_SEGMENT, segment) };
        used += GSO_CMSG_SPACE;
    }
    match src {
        Some(IpAddr::V4(ip)) => {
            // ipi_spec_dst is the source: "the local address of the packet", ip(7); interface 0
            // lets the route choose. Also on a dual-stack IPv6 socket, whose IPv4 sends honour
            // the IPv4 control messages.
            let info = libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from_ne_bytes(ip.octets()),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            };
            // SAFETY: used is a multiple of the alignment; PKTINFO_CMSG_SPACE bytes remain.
            unsafe { put_cmsg(base.add(used), libc::IPPROTO_IP, libc::IP_PKTINFO, info) };
            used += PKTINFO4_CMSG_SPACE;
        }
        Some(IpAddr::V6(ip)) => {
            let info = libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: ip.octets(),
                },
                ipi6_ifindex: 0,
            };
            // SAFETY: as above.
            unsafe { put_cmsg(base.add(used), libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, info) };
            used += PKTINFO6_CMSG_SPACE;
        }
        None => {}
    }
    if used > 0 {
        hdr.msg_control = base.cast();
        hdr.msg_controllen = used as _;
    }
}

/// Writes one control message (header and `value`) at `at`.
///
/// # Safety
/// `at` must be aligned for `cmsghdr` and have `CMSG_SPACE(size_of::<T>())` writable bytes.
unsafe fn put_cmsg<T: Copy>(at: *mut u8, level: libc::c_int, kind: libc::c_int, value: T) {
    let cmsg = at.cast::<libc::cmsghdr>();
    // SAFETY: the caller gives room for the header and the data after it.
    unsafe {
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<T>() as u32) as _;
        ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<T>(), value);
    }
}

fn iovec_of(contents: &[u8]) -> libc::iovec {
    libc::iovec {
        // The kernel only reads through this pointer on send.
        iov_base: contents.as_ptr() as *mut libc::c_void,
        iov_len: contents.len(),
    }
}

/// One `sendmsg` (retried on `EINTR`). UDP and raw sends are all-or-nothing.
pub(crate) fn send_one(sock: &Socket, counters: &Counters, msg: &OutMsg<'_>) -> io::Result<()> {
    let mut iov = iovec_of(msg.contents);
    let mut ctrl = CmsgBuf([0u8; SEND_CMSG_SPACE]);
    // SAFETY: an all-zero msghdr is a valid "nothing" value.
    let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
    hdr.msg_name = msg.dst.as_ptr() as *mut libc::c_void;
    hdr.msg_namelen = msg.dst.len();
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    // SAFETY: ctrl lives until the end of this function, past the syscall.
    unsafe { encode_control(&mut hdr, &mut ctrl, msg.segment_size, msg.src) };
    loop {
        counters.send_syscall();
        // SAFETY: hdr points at live iov, address and control buffers.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &hdr, 0) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            counters.note_error(&e);
            return Err(e);
        }
    }
}

/// [`send_many`] for messages given in parts: each message's `iovec` array is its `IoSlice`s,
/// which std guarantees to be ABI-compatible with `iovec` on Unix. Linux caps a message at
/// `UIO_MAXIOV` (1024) parts.
pub(crate) fn send_many_gather(
    sock: &Socket,
    counters: &Counters,
    msgs: &[OutMsgGather<'_>],
) -> io::Result<usize> {
    let n = msgs.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut ctrls = [CmsgBuf([0u8; SEND_CMSG_SPACE]); BATCH];
    // SAFETY: all-zero mmsghdrs are valid empty headers.
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
    for (i, msg) in msgs.iter().take(n).enumerate() {
        let hdr = &mut hdrs[i].msg_hdr;
        hdr.msg_name = msg.dst.as_ptr() as *mut libc::c_void;
        hdr.msg_namelen = msg.dst.len();
        // The kernel only reads through these pointers on send.
        hdr.msg_iov = msg.parts.as_ptr() as *mut libc::iovec;
        hdr.msg_iovlen = msg.parts.len();
        // SAFETY: ctrls outlives the syscall below.
        unsafe { encode_control(hdr, &mut ctrls[i], msg.segment_size, msg.src) };
    }
    sendmmsg_retrying(sock, counters, &mut hdrs[..n])
}

/// `sendmmsg` of prepared headers (retried on `EINTR`); returns how many the kernel took.
fn sendmmsg_retrying(
    sock: &Socket,
    counters: &Counters,
    hdrs: &mut [libc::mmsghdr],
) -> io::Result<usize> {
    loop {
        counters.send_syscall();
        // SAFETY: the callers' headers point at buffers, addresses and control messages that
        // live until they return, past this syscall.
        let r = unsafe {
            libc::sendmmsg(
                sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                hdrs.len() as libc::c_uint,
                0,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            counters.note_error(&e);
            return Err(e);
        }
    }
}

/// One `sendmmsg` for up to [`BATCH`] messages; returns how many the kernel took.
///
/// From sendmmsg(2): "A nonblocking call sends as many messages as possible (up to the limit
/// specified by vlen) and returns immediately. [...] If an error occurs after at least one message
/// has been sent, the call succeeds, and returns the number of messages sent."
pub(crate) fn send_many(
    sock: &Socket,
    counters: &Counters,
    msgs: &[OutMsg<'_>],
) -> io::Result<usize> {
    let n = msgs.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut iovs = [libc::iovec {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    }; BATCH];
    let mut ctrls = [CmsgBuf([0u8; SEND_CMSG_SPACE]); BATCH];
    // SAFETY: all-zero mmsghdrs are valid empty headers.
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
    for (i, msg) in msgs.iter().take(n).enumerate() {
        iovs[i] = iovec_of(msg.contents);
        let hdr = &mut hdrs[i].msg_hdr;
        hdr.msg_name = msg.dst.as_ptr() as *mut libc::c_void;
        hdr.msg_namelen = msg.dst.len();
        hdr.msg_iov = &mut iovs[i];
        hdr.msg_iovlen = 1;
        // SAFETY: ctrls outlives the syscall below.
        unsafe { encode_control(hdr, &mut ctrls[i], msg.segment_size, msg.src) };
    }
    sendmmsg_retrying(sock, counters, &mut hdrs[..n])
}

/// Decodes a kernel-written socket address; anything but AF_INET/AF_INET6 becomes `0.0.0.0:0`.
fn decode_addr(storage: &libc::sockaddr_storage) -> SocketAddr {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in; storage is larger and
            // at least as aligned.
            let sin =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            ))
        }
        _ => RecvMeta::default().addr,
    }
}

/// What a received header's control messages say: the `UDP_GRO` segment size and the
/// destination address (`IP_PKTINFO`'s `ipi_addr`, `IPV6_PKTINFO`'s `ipi6_addr`).
///
/// A message whose length does not cover its data (the kernel cuts the last one that does not
/// fit, setting `MSG_CTRUNC`) is skipped, so a cut buffer yields `None`s, never garbage.
fn decode_cmsgs(hdr: &libc::msghdr) -> (Option<usize>, Option<IpAddr>) {
    let mut stride = None;
    let mut dst = None;
    // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG_* walkers stay inside them,
    // and each read is of a message whose cmsg_len covers the type read.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let len = (*cmsg).cmsg_len as usize;
            let fits = |n: usize| len >= libc::CMSG_LEN(n as u32) as usize;
            let data = libc::CMSG_DATA(cmsg);
            match ((*cmsg).cmsg_level, (*cmsg).cmsg_type) {
                (SOL_UDP, UDP_GRO) if fits(mem::size_of::<libc::c_int>()) => {
                    let v = ptr::read_unaligned(data.cast::<libc::c_int>());
                    stride = usize::try_from(v).ok().filter(|&s| s > 0);
                }
                (libc::IPPROTO_IP, libc::IP_PKTINFO) if fits(mem::size_of::<libc::in_pktinfo>()) => {
                    let info = ptr::read_unaligned(data.cast::<libc::in_pktinfo>());
                    let ip = Ipv4Addr::from(info.ipi_addr.s_addr.to_ne_bytes());
                    dst = Some(IpAddr::V4(ip));
                }
                (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO)
                    if fits(mem::size_of::<libc::in6_pktinfo>()) =>
                {
                    let info = ptr::read_unaligned(data.cast::<libc::in6_pktinfo>());
                    dst = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                }
                _ => {}
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    (stride, dst)
}

/// One `recvmmsg` into up to [`BATCH`] buffers; fills `meta` and returns how many were filled.
pub(crate) fn recv_many(
    sock: &Socket,
    counters: &Counters,
    bufs: &mut [IoSliceMut<'_>],
    meta: &mut [RecvMeta],
) -> io::Result<usize> {
    let n = bufs.len().min(meta.len()).min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut names = [const { MaybeUninit::<libc::sockaddr_storage>::zeroed() }; BATCH];
    let mut ctrls = [CmsgBuf([0u8; RECV_CMSG_SPACE]); BATCH];
    // SAFETY: all-zero mmsghdrs are valid empty headers.
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
    for i in 0..n {
        let hdr = &mut hdrs[i].msg_hdr;
        hdr.msg_name = names[i].as_mut_ptr().cast();
        hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // IoSliceMut is guaranteed ABI-compatible with iovec on Unix.
        hdr.msg_iov = (&mut bufs[i] as *mut IoSliceMut<'_>).cast::<libc::iovec>();
        hdr.msg_iovlen = 1;
        hdr.msg_control = ctrls[i].0.as_mut_ptr().cast();
        hdr.msg_controllen = RECV_CMSG_SPACE as _;
    }
    let count = loop {
        counters.recv_syscall();
        // SAFETY: the first n headers point at live buffers of the stated sizes. No timeout: the
        // socket is non-blocking (recvmmsg's own timeout is broken, see BUGS in recvmmsg(2)).
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                n as libc::c_uint,
                0,
                ptr::null_mut(),
            )
        };
        if r >= 0 {
            break (r as usize).min(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            counters.note_error(&e);
            return Err(e);
        }
    };
    for i in 0..count {
        let hdr = &hdrs[i].msg_hdr;
        // SAFETY: zero-initialised, then possibly written by the kernel: always initialised.
        let addr = decode_addr(unsafe { names[i].assume_init_ref() });
        // The kernel never reports more than it copied (we do not pass MSG_TRUNC), but clamp to
        // the buffer anyway so that no later slice can go out of bounds.
        let len = (hdrs[i].msg_len as usize).min(bufs[i].len());
        let truncated = hdr.msg_flags & libc::MSG_TRUNC != 0;
        let (stride, dst_ip) = decode_cmsgs(hdr);
        meta[i] = RecvMeta {
            addr,
            len,
            stride: stride.unwrap_or(len),
            truncated,
            dst_ip,
        };
    }
    Ok(count)
}

/// `ppoll` on one socket. `None` waits forever; the timeout has nanosecond resolution (plain
/// `poll` would round up to whole milliseconds, too coarse for pacing).
pub(crate) fn wait(
    sock: &Socket,
    readable: bool,
    writable: bool,
    timeout: Option<Duration>,
) -> io::Result<Readiness> {
    let mut events = 0;
    if readable {
        events |= libc::POLLIN;
    }
    if writable {
        events |= libc::POLLOUT;
    }
    let deadline = timeout.map(|t| Instant::now().checked_add(t));
    loop {
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events,
            revents: 0,
        };
        let ts = match deadline {
            None | Some(None) => None, // no timeout, or one too far to represent
            Some(Some(d)) => {
                let left = d.saturating_duration_since(Instant::now());
                Some(libc::timespec {
                    tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_nsec: left.subsec_nanos() as _,
                })
            }
        };
        let ts_ptr = ts
            .as_ref()
            .map_or(ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: one valid pollfd; ts_ptr is null or points at a live timespec.
        let r = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, ptr::null()) };
        if r >= 0 {
            return Ok(Readiness {
                readable: pfd.revents & libc::POLLIN != 0,
                writable: pfd.revents & libc::POLLOUT != 0,
                error: pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0,
            });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sleeps in the kernel for `d` (relative `clock_nanosleep` on `CLOCK_MONOTONIC`, the clock
/// behind `std::time::Instant`). May return early on a signal; the caller loops.
pub(crate) fn sleep(d: Duration) {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: d.subsec_nanos() as _,
    };
    // SAFETY: ts is a valid timespec; we do not want the remainder.
    unsafe {
        libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, ptr::null_mut());
    }
}

/// `prctl(PR_SET_TIMERSLACK)` for the calling thread; 0 restores the default.
pub(crate) fn set_timer_slack(slack: Duration) -> io::Result<()> {
    let ns = libc::c_ulong::try_from(slack.as_nanos()).unwrap_or(libc::c_ulong::MAX);
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
    let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `prctl(PR_GET_TIMERSLACK)` for the calling thread.
pub(crate) fn timer_slack() -> Option<Duration> {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and returns the slack in ns.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(r).ok().map(Duration::from_nanos)
}

/// The path MTU the kernel holds for a connected socket (`IP_MTU` /
/// `IPV6_MTU`, see ip(7) and ipv6(7)): the route's MTU (the interface's;
/// 65535 on IPv4 loopback) or a smaller one learned by path MTU discovery.
pub(crate) fn path_mtu(sock: &Socket, v6: bool) -> io::Result<usize> {
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mut mtu: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: mtu and len are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    usize::try_from(mtu).map_err(|_| io::Error::other("negative MTU"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A received header over `ctrl`'s first `len` bytes, as the kernel leaves it.
    fn header(ctrl: &mut CmsgBuf<RECV_CMSG_SPACE>, len: usize) -> libc::msghdr {
        // SAFETY: an all-zero msghdr is a valid "nothing" value.
        let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
        hdr.msg_control = ctrl.0.as_mut_ptr().cast();
        hdr.msg_controllen = len as _;
        hdr
    }

    #[test]
    fn control_messages_give_stride_and_destination() {
        let mut ctrl = CmsgBuf([0u8; RECV_CMSG_SPACE]);
        let base = ctrl.0.as_mut_ptr();
        let info = libc::in_pktinfo {
            ipi_ifindex: 1,
            ipi_spec_dst: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            ipi_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 2]),
            },
        };
        // SAFETY: both messages fit in the aligned buffer.
        unsafe {
            put_cmsg(base, SOL_UDP, UDP_GRO, 1400 as libc::c_int);
            put_cmsg(
                base.add(GRO_CMSG_SPACE),
                libc::IPPROTO_IP,
                libc::IP_PKTINFO,
                info,
            );
        }
        let hdr = header(&mut ctrl, GRO_CMSG_SPACE + PKTINFO4_CMSG_SPACE);
        assert_eq!(
            decode_cmsgs(&hdr),
            (Some(1400), Some(IpAddr::from([127, 0, 0, 2])))
        );
    }

    #[test]
    fn a_cut_control_message_is_not_read() {
        // MSG_CTRUNC: the kernel wrote the IPv6 message's header with a cmsg_len that covers
        // only what fit. The stride before it is good; the destination is unknown, not garbage.
        let mut ctrl = CmsgBuf([0u8; RECV_CMSG_SPACE]);
        let base = ctrl.0.as_mut_ptr();
        let info = libc::in6_pktinfo {
            ipi6_addr: libc::in6_addr {
                s6_addr: [0xfd; 16],
            },
            ipi6_ifindex: 1,
        };
        let room = GRO_CMSG_SPACE + 24;
        // SAFETY: as above; the second message is then cut to what `room` leaves.
        unsafe {
            put_cmsg(base, SOL_UDP, UDP_GRO, 1200 as libc::c_int);
            let cut = base.add(GRO_CMSG_SPACE);
            put_cmsg(cut, libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, info);
            (*cut.cast::<libc::cmsghdr>()).cmsg_len = (room - GRO_CMSG_SPACE) as _;
        }
        let mut hdr = header(&mut ctrl, room);
        hdr.msg_flags = libc::MSG_CTRUNC;
        assert_eq!(decode_cmsgs(&hdr), (Some(1200), None));
        // Nothing at all: neither.
        let hdr = header(&mut ctrl, 0);
        assert_eq!(decode_cmsgs(&hdr), (None, None));
    }
}
