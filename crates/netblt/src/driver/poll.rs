//! Waiting for the socket, a timer, or another thread.
//!
//! The network loop sleeps in one `ppoll(2)` on two descriptors: the socket
//! and an `eventfd` ([`Waker`]) that the file reader and writer threads poke
//! when they hand over a buffer or a verdict. So the loop never polls a
//! channel on a timer, and a buffer the disk produced is on the wire within
//! microseconds. The timeout is the engine's `poll_timeout`, to the
//! nanosecond; with the thread's timer slack lowered (see
//! [`netblt_udp::set_thread_timer_slack`]) the kernel ends the wait within a
//! few microseconds of it, which is what sub-millisecond pacing needs.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Wakes the network loop from another thread (an `eventfd`).
#[derive(Debug)]
pub(crate) struct Waker {
    fd: OwnedFd,
}

impl Waker {
    pub(crate) fn new() -> io::Result<Waker> {
        // SAFETY: eventfd has no memory-safety preconditions; the returned
        // descriptor is checked and then owned.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(Waker {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Makes the next (or current) [`wait`] return. Never blocks.
    pub(crate) fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own descriptor. A
        // failure (counter saturated) means a wake-up is pending anyway.
        let _ = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }

    /// Whether a wake-up was pending (it is cleared).
    pub(crate) fn take(&self) -> bool {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64; non-blocking.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut v as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        n == 8 && v > 0
    }

    fn drain(&self) {
        let _ = self.take();
    }
}

/// What ended a [`wait`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ready {
    pub(crate) readable: bool,
    pub(crate) error: bool,
}

/// Waits until `sock` is readable (or writable, if `want_write`), the waker
/// fires, or `timeout` passes (`None`: no limit). `EINTR` counts as a
/// timeout, so that a signal (Ctrl-C) is seen promptly by the caller.
pub(crate) fn wait(
    sock: RawFd,
    want_write: bool,
    waker: &Waker,
    timeout: Option<Duration>,
) -> io::Result<Ready> {
    let mut fds = [
        libc::pollfd {
            fd: sock,
            events: libc::POLLIN | if want_write { libc::POLLOUT } else { 0 },
            revents: 0,
        },
        libc::pollfd {
            fd: waker.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a live array of 2 pollfd; tsp is null or points to a
    // live timespec; no signal mask is passed.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tsp, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(Ready::default());
        }
        return Err(e);
    }
    let s = fds[0].revents;
    let woken = fds[1].revents & libc::POLLIN != 0;
    if woken {
        waker.drain();
    }
    Ok(Ready {
        readable: s & libc::POLLIN != 0,
        error: s & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0,
    })
}
