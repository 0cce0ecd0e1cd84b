//! What goes in and out of a socket: [`Transmit`], [`RecvMeta`] and [`Readiness`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

/// One send: `contents` to `destination`, optionally cut into `segment_size`-byte datagrams.
///
/// With `segment_size: Some(s)` and `contents.len() > s`, the contents are `ceil(len / s)` datagrams
/// of `s` bytes each, the last possibly shorter; they go out in one syscall when GSO works. At most
/// [`crate::MAX_SEGMENTS`] segments, and `contents` must fit in one UDP datagram (65,507 bytes
/// over IPv4, 65,527 over IPv6), the limits of the kernel's GSO path.
#[derive(Clone, Copy, Debug)]
pub struct Transmit<'a> {
    /// Where the datagrams go. For raw IP sockets the port is ignored.
    pub destination: SocketAddr,
    /// The bytes to send: one datagram, or a train of equal segments.
    pub contents: &'a [u8],
    /// Segment size for a train, `None` for a single datagram.
    pub segment_size: Option<usize>,
    /// The local address to send from: `None` (or an unspecified address) lets the kernel choose
    /// by its routing, as a plain `sendto` does. Set it to a received [`RecvMeta::dst_ip`] to
    /// answer from the address a peer sent to, which a socket bound to a wildcard address
    /// (`0.0.0.0`, `[::]`) on a host with several addresses needs: a peer whose socket is
    /// connected drops answers from any other address. Sent as an `IP_PKTINFO` (IPv4, also for
    /// an IPv4 peer of a dual-stack socket) or `IPV6_PKTINFO` control message on Linux; ignored
    /// by the portable path. Must be of the destination's family.
    pub src_ip: Option<IpAddr>,
}

impl Transmit<'_> {
    /// The effective segment size: `segment_size` if it actually splits the contents, else the whole
    /// length (a single datagram). Never 0 unless the contents are empty.
    pub fn effective_segment_size(&self) -> usize {
        match self.segment_size {
            Some(s) if s > 0 && self.contents.len() > s => s,
            _ => self.contents.len(),
        }
    }

    /// How many datagrams this transmit puts on the wire (an empty datagram counts as one).
    pub fn datagram_count(&self) -> usize {
        segment_count(self.contents.len(), self.effective_segment_size())
    }
}

/// A [`Transmit`] whose bytes are given in parts that the kernel gathers (`sendmsg` with several
/// `iovec`s): headers and payloads go out from where they lie, without first being copied into
/// one contiguous train. Same rules as [`Transmit`] for the concatenated bytes.
#[derive(Clone, Copy, Debug)]
pub struct GatherTransmit<'a> {
    /// Where the datagrams go. For raw IP sockets the port is ignored.
    pub destination: SocketAddr,
    /// The parts, in order; their concatenation is the transmit's contents.
    pub parts: &'a [std::io::IoSlice<'a>],
    /// Segment size for a train, `None` for a single datagram.
    pub segment_size: Option<usize>,
    /// The local address to send from, as [`Transmit::src_ip`].
    pub src_ip: Option<IpAddr>,
}

impl GatherTransmit<'_> {
    /// Bytes in all parts.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// True when there are no bytes at all (one empty datagram).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parts copied into one vector (the path without GSO, which cuts contiguous bytes).
    pub(crate) fn gather(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        for p in self.parts {
            v.extend_from_slice(p);
        }
        v
    }
}

/// Number of datagrams in `len` bytes cut every `stride` bytes; an empty datagram is still one.
pub(crate) fn segment_count(len: usize, stride: usize) -> usize {
    if len == 0 || stride == 0 {
        1
    } else {
        len.div_ceil(stride)
    }
}

/// What was received into one buffer: the sender, the length, and the GRO stride.
///
/// With GRO, one buffer can hold several datagrams from the same sender glued together: `len` is
/// then a multiple of `stride` plus a shorter remainder. Use [`RecvMeta::segments`] to walk them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecvMeta {
    /// Source of the datagram(s). For raw IP sockets the port is 0.
    pub addr: SocketAddr,
    /// Bytes written to the buffer (for raw IPv4, after the IP header was stripped).
    pub len: usize,
    /// Size of each coalesced datagram; equal to `len` for a single datagram.
    pub stride: usize,
    /// The datagram did not fit in the buffer and the kernel cut it (`MSG_TRUNC`): `len` bytes are
    /// valid, the rest is lost.
    pub truncated: bool,
    /// The local address the datagram(s) were sent to (`IP_PKTINFO` / `IPV6_PKTINFO`), an IPv4
    /// one for an IPv4 peer of a dual-stack socket. Only for a UDP socket bound to a wildcard
    /// address with [`crate::SocketConfig::pktinfo`] on Linux; `None` otherwise (a socket bound
    /// to one address receives only for it), and when the kernel did not say (e.g. the control
    /// message was cut, `MSG_CTRUNC`). Answer with it as [`Transmit::src_ip`].
    pub dst_ip: Option<IpAddr>,
}

impl Default for RecvMeta {
    fn default() -> Self {
        Self {
            addr: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
            len: 0,
            stride: 0,
            truncated: false,
            dst_ip: None,
        }
    }
}

impl RecvMeta {
    /// Iterates over the datagrams held in `buf` (the buffer this meta was filled for).
    ///
    /// Never panics: a `len` beyond `buf` is clamped and a zero stride means one datagram.
    pub fn segments<'b>(&self, buf: &'b [u8]) -> Segments<'b> {
        let data = buf.get(..self.len).unwrap_or(buf);
        let stride = if self.stride == 0 {
            data.len()
        } else {
            self.stride
        };
        Segments {
            rest: data,
            stride,
            empty_pending: data.is_empty(),
        }
    }

    /// Number of datagrams this meta stands for (1 for an empty datagram).
    pub fn datagram_count(&self) -> usize {
        segment_count(self.len, self.stride)
    }
}

/// Iterator over the datagrams of a GRO train, from [`RecvMeta::segments`].
#[derive(Clone, Debug)]
pub struct Segments<'b> {
    rest: &'b [u8],
    stride: usize,
    empty_pending: bool,
}

impl<'b> Iterator for Segments<'b> {
    type Item = &'b [u8];

    fn next(&mut self) -> Option<&'b [u8]> {
        if self.empty_pending {
            // A zero-length datagram is still a datagram.
            self.empty_pending = false;
            return Some(&[]);
        }
        if self.rest.is_empty() {
            return None;
        }
        let (head, tail) = self.rest.split_at(self.stride.min(self.rest.len()));
        self.rest = tail;
        Some(head)
    }
}

/// Result of [`crate::UdpSocket::wait`]. All false means the timeout expired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Readiness {
    /// A receive would not block.
    pub readable: bool,
    /// A send would not block.
    pub writable: bool,
    /// The socket reports an error or hang-up (`POLLERR`/`POLLHUP`/`POLLNVAL`).
    pub error: bool,
}

impl Readiness {
    /// True when nothing became ready before the timeout.
    pub fn timed_out(&self) -> bool {
        !(self.readable || self.writable || self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(len: usize, stride: usize) -> RecvMeta {
        RecvMeta {
            len,
            stride,
            ..RecvMeta::default()
        }
    }

    #[test]
    fn segments_split_on_stride_with_short_tail() {
        let buf = [7u8; 10];
        let lens: Vec<usize> = meta(10, 4).segments(&buf).map(<[u8]>::len).collect();
        assert_eq!(lens, [4, 4, 2]);
        assert_eq!(meta(10, 4).datagram_count(), 3);
    }

    #[test]
    fn segments_never_panic_on_odd_meta() {
        let buf = [0u8; 8];
        // len beyond the buffer is clamped, zero stride is one datagram, empty is one datagram.
        assert_eq!(meta(100, 3).segments(&buf).count(), 3);
        assert_eq!(meta(8, 0).segments(&buf).count(), 1);
        assert_eq!(meta(0, 0).segments(&buf).count(), 1);
        assert_eq!(meta(0, 5).datagram_count(), 1);
    }

    #[test]
    fn transmit_counts() {
        let data = [0u8; 10];
        let dst: SocketAddr = "127.0.0.1:1".parse().unwrap_or_else(|_| unreachable!());
        let t = |s| Transmit {
            destination: dst,
            contents: &data,
            segment_size: s,
            src_ip: None,
        };
        assert_eq!(t(None).datagram_count(), 1);
        assert_eq!(t(Some(10)).datagram_count(), 1);
        assert_eq!(t(Some(20)).datagram_count(), 1);
        assert_eq!(t(Some(3)).datagram_count(), 4);
        assert_eq!(t(Some(0)).effective_segment_size(), 10);
    }
}
