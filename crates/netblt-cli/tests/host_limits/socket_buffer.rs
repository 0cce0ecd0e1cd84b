//! Another process's UDP socket, taken over with `pidfd_getfd` (Linux 5.6+;
//! root): to give a running `netblt` a receive buffer too small for what
//! its peer sends, whatever its driver sized it to.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A copy of a process's UDP socket descriptor (the same socket).
pub(crate) struct ForeignSocket(OwnedFd);

impl ForeignSocket {
    /// Waits (at most `limit`) until process `pid` has a UDP socket, and
    /// returns it.
    pub(crate) fn find(pid: u32, limit: Duration) -> Result<Self, String> {
        // SAFETY: plain syscall with integer arguments.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
        if pidfd < 0 {
            return Err(format!("pidfd_open: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: pidfd_open returned a new descriptor we own.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            let entries = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map_err(|e| format!("/proc/{pid}/fd: {e}"))?;
            for e in entries.flatten() {
                let is_socket = std::fs::read_link(e.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"));
                let Some(target) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                if !is_socket {
                    continue;
                }
                // SAFETY: plain syscall with integer arguments.
                let fd =
                    unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target, 0) };
                if fd < 0 {
                    let e = std::io::Error::last_os_error();
                    // Not allowed (no CAP_SYS_PTRACE) or not there (before
                    // Linux 5.6): no use waiting.
                    if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS)) {
                        return Err(format!("pidfd_getfd: {e}"));
                    }
                    continue;
                }
                // SAFETY: pidfd_getfd returned a new descriptor we own.
                let s = ForeignSocket(unsafe { OwnedFd::from_raw_fd(fd as i32) });
                if s.int_opt(libc::SO_TYPE) == Some(libc::SOCK_DGRAM) {
                    return Ok(s);
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Err(format!("process {pid} opened no UDP socket"))
    }

    /// The receive buffer as the kernel reports it (twice what was set).
    pub(crate) fn recv_buffer(&self) -> Option<usize> {
        self.int_opt(libc::SO_RCVBUF).map(|v| v as usize)
    }

    /// Holds the receive buffer at `bytes` for `span` (the driver sizes it
    /// as it creates the socket and again as the connection opens: each
    /// time it grows, it is cut back), then sets it to `after`.
    pub(crate) fn hold_recv_buffer(&self, bytes: usize, span: Duration, after: usize) {
        let t0 = Instant::now();
        while t0.elapsed() < span {
            // The kernel reports twice what was set.
            if self.recv_buffer().is_some_and(|b| b > 2 * bytes) {
                let _ = self.set_recv_buffer(bytes);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let _ = self.set_recv_buffer(after);
    }

    /// Sets the receive buffer (`SO_RCVBUFFORCE`: root, past rmem_max).
    pub(crate) fn set_recv_buffer(&self, bytes: usize) -> Result<(), String> {
        let v = bytes as libc::c_int;
        // SAFETY: a valid socket descriptor and a c_int option value.
        let r = unsafe {
            libc::setsockopt(
                self.0.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(format!(
                "SO_RCVBUFFORCE: {}",
                std::io::Error::last_os_error()
            ))
        }
    }

    fn int_opt(&self, opt: libc::c_int) -> Option<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: v and len are live and sized for a c_int option.
        let r = unsafe {
            libc::getsockopt(
                self.0.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0).then_some(v)
    }
}
