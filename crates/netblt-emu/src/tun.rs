//! TUN devices: the two ends of the emulated wire.
//!
//! A TUN device created with `IFF_TUN | IFF_NO_PI` hands user space whole IP
//! packets with no extra header, and takes whole IP packets back. The device
//! lives in the network namespace of the thread that opened `/dev/net/tun`,
//! but the file descriptor works from anywhere: that is what lets one
//! forwarder process in the parent namespace hold both ends.
//!
//! Without `IFF_VNET_HDR` the kernel never hands us GSO super-packets, so every
//! packet we read is at most the device MTU and rate accounting is per real
//! packet.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

/// Name of the TUN device inside each namespace (the same in both: each
/// namespace has its own interface table).
pub const DEVICE: &str = "nbtun0";

/// One open TUN device (closing it destroys the device: it is not persistent).
#[derive(Debug)]
pub(crate) struct Tun {
    file: File,
}

impl Tun {
    /// Creates the TUN device `name` in the network namespace of the calling
    /// thread, non-blocking.
    pub(crate) fn create(name: &str) -> io::Result<Tun> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")?;
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= req.ifr_name.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad TUN device name",
            ));
        }
        for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
            *dst = src as libc::c_char;
        }
        // Truncation is fine: both flags fit in the 16-bit field.
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which `req` is,
        // and the fd is an open /dev/net/tun.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun { file })
    }

    /// Reads one packet; `WouldBlock` when none is waiting.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe { libc::read(self.file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            // n >= 0 and at most buf.len(), so the cast is lossless.
            Ok(n as usize)
        }
    }

    /// Writes one packet into the namespace's IP stack.
    pub(crate) fn send(&self, packet: &[u8]) -> io::Result<usize> {
        // SAFETY: packet is valid for reads of packet.len() bytes.
        let n = unsafe { libc::write(self.file.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
