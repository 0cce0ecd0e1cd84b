//! Portable path: one `send_to` and one `recv_from` per datagram, no GSO, no GRO, no PKTINFO:
//! [`RecvMeta::dst_ip`] is always `None` and a send's source address ([`crate::Transmit::src_ip`])
//! is ignored, so the kernel's routing chooses it (a wildcard-bound server on a host with several
//! addresses may then answer from another address than the one it was called on).
//!
//! Used off Linux, and on Linux with the `portable` feature so that it is exercised by the same
//! tests. Same functions as `linux.rs`; `send_many` loops, so it costs one syscall per message.

use std::{
    io::{self, IoSliceMut},
    mem::MaybeUninit,
    time::{Duration, Instant},
};

use socket2::{MaybeUninitSlice, Socket};

use super::{OutMsg, OutMsgGather};
use crate::{datagram::RecvMeta, stats::Counters, Readiness};

/// No GSO here: every transmit is sent one datagram at a time.
pub(crate) const GSO_SEGMENTS: usize = 1;
/// No GRO here: one datagram per read.
pub(crate) const GRO_SEGMENTS: usize = 1;

pub(crate) fn probe_gso(_sock: &Socket) -> bool {
    false
}

pub(crate) fn enable_gro(_sock: &Socket) -> bool {
    false
}

/// No destination addresses here (see the module docs).
pub(crate) fn enable_pktinfo(_sock: &Socket, _v4: bool, _v6: bool) -> bool {
    false
}

pub(crate) fn set_buffer_forced(_sock: &Socket, _recv: bool, _size: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "forced socket buffers are Linux-only",
    ))
}

/// One `send_to`. A GSO segment size cannot reach this path (GSO is never enabled here); the
/// source address is ignored.
pub(crate) fn send_one(sock: &Socket, counters: &Counters, msg: &OutMsg<'_>) -> io::Result<()> {
    if msg.segment_size.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "GSO is not available on this platform",
        ));
    }
    // No portable way to choose the source: the kernel's routing does (see the module docs).
    let _ = msg.src;
    loop {
        counters.send_syscall();
        match sock.send_to(msg.contents, msg.dst) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                counters.note_error(&e);
                return Err(e);
            }
        }
    }
}

/// Sends messages one by one; stops at the first error (returned only if nothing was sent), like
/// `sendmmsg`.
/// Gathered messages: copied into one buffer each, then [`send_one`].
pub(crate) fn send_many_gather(
    sock: &Socket,
    counters: &Counters,
    msgs: &[OutMsgGather<'_>],
) -> io::Result<usize> {
    for (i, msg) in msgs.iter().enumerate() {
        let mut bytes = Vec::new();
        for p in msg.parts {
            bytes.extend_from_slice(p);
        }
        let one = OutMsg {
            dst: msg.dst,
            contents: &bytes,
            segment_size: msg.segment_size,
            src: msg.src,
        };
        if let Err(e) = send_one(sock, counters, &one) {
            return if i == 0 { Err(e) } else { Ok(i) };
        }
    }
    Ok(msgs.len())
}

pub(crate) fn send_many(
    sock: &Socket,
    counters: &Counters,
    msgs: &[OutMsg<'_>],
) -> io::Result<usize> {
    for (i, msg) in msgs.iter().enumerate() {
        if let Err(e) = send_one(sock, counters, msg) {
            return if i == 0 { Err(e) } else { Ok(i) };
        }
    }
    Ok(msgs.len())
}

/// One `recvmsg` into the first buffer.
pub(crate) fn recv_many(
    sock: &Socket,
    counters: &Counters,
    bufs: &mut [IoSliceMut<'_>],
    meta: &mut [RecvMeta],
) -> io::Result<usize> {
    let (Some(buf), Some(m)) = (bufs.first_mut(), meta.first_mut()) else {
        return Ok(0);
    };
    let cap = buf.len();
    // SAFETY: we only let the kernel write initialised bytes into an already initialised buffer,
    // and never write uninitialised values through this view.
    let uninit: &mut [MaybeUninit<u8>] =
        unsafe { &mut *(&mut buf[..] as *mut [u8] as *mut [MaybeUninit<u8>]) };
    let mut slices = [MaybeUninitSlice::new(uninit)];
    loop {
        counters.recv_syscall();
        match sock.recv_from_vectored(&mut slices) {
            Ok((len, flags, addr)) => {
                let len = len.min(cap);
                *m = RecvMeta {
                    addr: addr.as_socket().unwrap_or(RecvMeta::default().addr),
                    len,
                    stride: len,
                    truncated: flags.is_truncated(),
                    dst_ip: None,
                };
                return Ok(1);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                counters.note_error(&e);
                return Err(e);
            }
        }
    }
}

/// `poll(2)` with the timeout rounded up to whole milliseconds.
#[cfg(unix)]
pub(crate) fn wait(
    sock: &Socket,
    readable: bool,
    writable: bool,
    timeout: Option<Duration>,
) -> io::Result<Readiness> {
    use std::os::fd::AsRawFd;
    let mut events = 0;
    if readable {
        events |= libc::POLLIN;
    }
    if writable {
        events |= libc::POLLOUT;
    }
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    loop {
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events,
            revents: 0,
        };
        let ms = match (timeout, deadline) {
            (None, _) | (Some(_), None) => -1,
            (Some(_), Some(d)) => {
                let left = d.saturating_duration_since(Instant::now());
                let ms = left.as_nanos().div_ceil(1_000_000);
                libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
            }
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
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

/// Without `poll(2)`: peek every 200 µs. Writability is assumed (a blocked send reports
/// `WouldBlock` and the caller waits again).
#[cfg(not(unix))]
pub(crate) fn wait(
    sock: &Socket,
    readable: bool,
    writable: bool,
    timeout: Option<Duration>,
) -> io::Result<Readiness> {
    if writable {
        return Ok(Readiness {
            writable: true,
            ..Readiness::default()
        });
    }
    let start = Instant::now();
    loop {
        if readable {
            let mut probe = [MaybeUninit::<u8>::uninit(); 1];
            match sock.peek_from(&mut probe) {
                Ok(_) => {
                    return Ok(Readiness {
                        readable: true,
                        ..Readiness::default()
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // A datagram larger than the probe is still a datagram (WSAEMSGSIZE).
                Err(_) => {
                    return Ok(Readiness {
                        readable: true,
                        ..Readiness::default()
                    })
                }
            }
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            return Ok(Readiness::default());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Plain `std::thread::sleep`.
pub(crate) fn sleep(d: Duration) {
    std::thread::sleep(d);
}

pub(crate) fn set_timer_slack(_slack: Duration) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "timer slack is Linux-only",
    ))
}

pub(crate) fn timer_slack() -> Option<Duration> {
    None
}

/// No portable way to read the path MTU.
pub(crate) fn path_mtu(_sock: &Socket, _v6: bool) -> io::Result<usize> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}
