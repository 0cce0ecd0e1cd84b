//! The send path shared by UDP and raw sockets: checks, GSO with its run-time fallback, and
//! cutting a train into individual datagrams when GSO is off.

use std::{
    io,
    net::{IpAddr, SocketAddr, SocketAddrV6},
    sync::atomic::{AtomicUsize, Ordering::Relaxed},
    time::Duration,
};

use socket2::{SockAddr, Socket};
use tracing::warn;

use crate::{
    datagram::{GatherTransmit, Transmit},
    stats::Counters,
    sys::{self, OutMsg, OutMsgGather},
    BATCH, MAX_SEGMENTS,
};

/// Largest payload of one UDP datagram: 65,535 minus the UDP header, minus the IPv4 header
/// (whose length counts in IPv4's total length, unlike IPv6's payload length).
pub(crate) fn max_udp_payload(v6: bool) -> usize {
    if v6 {
        65_535 - 8
    } else {
        65_535 - 20 - 8
    }
}

/// How long a split send waits for socket space once part of a train is already out. Beyond it
/// we give up rather than block a driver forever; NETBLT resends what was lost.
const SPLIT_STALL_TIMEOUT: Duration = Duration::from_secs(1);

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The destinations a socket takes: its own family's, or (a dual-stack IPv6 socket) both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    V4,
    V6,
    /// IPv6 with `IPV6_V6ONLY` off: IPv4 destinations go out as `::ffff:a.b.c.d`.
    Dual,
}

impl Family {
    pub(crate) fn of(v6: bool) -> Family {
        if v6 {
            Family::V6
        } else {
            Family::V4
        }
    }

    fn accepts(self, destination: SocketAddr) -> bool {
        match self {
            Family::V4 => destination.is_ipv4(),
            Family::V6 => destination.is_ipv6(),
            Family::Dual => true,
        }
    }

    /// The kernel's form of `destination`: an IPv4 one mapped into IPv6 on a dual-stack socket.
    pub(crate) fn sockaddr(self, destination: SocketAddr) -> SockAddr {
        match (self, destination) {
            (Family::Dual, SocketAddr::V4(a)) => SockAddr::from(SocketAddr::V6(SocketAddrV6::new(
                a.ip().to_ipv6_mapped(),
                a.port(),
                0,
                0,
            ))),
            _ => SockAddr::from(destination),
        }
    }

    /// Largest payload of one UDP datagram to any destination this socket takes.
    pub(crate) fn max_payload(self) -> usize {
        max_udp_payload(self == Family::V6)
    }
}

/// A received address as the caller knows it: an IPv4 peer of a dual-stack socket as IPv4.
pub(crate) fn canonical(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::new(ip.into(), v6.port()),
            None => a,
        },
        v4 => v4,
    }
}

/// Rejects transmits the kernel would refuse for reasons that have nothing to do with GSO, before
/// any syscall: their `EINVAL` must not be mistaken for "this device cannot segment". Returns the
/// source address to ask for (see [`source`]).
pub(crate) fn check(
    t: &Transmit<'_>,
    family: Family,
    max_payload: usize,
) -> io::Result<Option<IpAddr>> {
    check_shape(
        t.destination,
        t.src_ip,
        t.contents.len(),
        t.datagram_count(),
        family,
        max_payload,
    )
}

/// The source address a send asks for: `None` for none or an unspecified one (the kernel
/// chooses), an IPv4-mapped IPv6 one as IPv4 (so that a dual-stack socket sends it as
/// `IP_PKTINFO`, which its IPv4 sends honour); an error for one of the other family than the
/// destination's.
fn source(destination: SocketAddr, src: Option<IpAddr>) -> io::Result<Option<IpAddr>> {
    let Some(ip) = src.map(|ip| ip.to_canonical()) else {
        return Ok(None);
    };
    if ip.is_unspecified() {
        return Ok(None);
    }
    if ip.is_ipv4() != canonical(destination).is_ipv4() {
        return Err(invalid(format!(
            "source address {ip} is not in the family of the destination {destination}"
        )));
    }
    Ok(Some(ip))
}

/// [`check`] on a transmit's destination, source, length and datagram count.
fn check_shape(
    destination: SocketAddr,
    src: Option<IpAddr>,
    len: usize,
    count: usize,
    family: Family,
    max_payload: usize,
) -> io::Result<Option<IpAddr>> {
    if !family.accepts(destination) {
        return Err(invalid(format!(
            "destination {} is not in the socket's address family (IPv{})",
            destination,
            if family == Family::V4 { 4 } else { 6 }
        )));
    }
    if count > 1 {
        if count > MAX_SEGMENTS {
            return Err(invalid(format!(
                "transmit of {} segments exceeds the limit of {MAX_SEGMENTS}",
                count
            )));
        }
        if len > max_payload {
            return Err(invalid(format!(
                "segmented transmit of {} bytes exceeds the {max_payload}-byte limit of one GSO send",
                len
            )));
        }
    }
    source(destination, src)
}

/// `EIO` or `EINVAL` from a GSO send: what Linux reports when the route's device or a tunnel
/// cannot segment. quinn-udp: "Some network adapters and drivers do not support GSO.
/// Unfortunately, Linux offers no easy way for us to detect this short of an EIO or sometimes
/// EINVAL when we try to actually send datagrams using it."
fn is_gso_refusal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if code == libc::EIO || code == libc::EINVAL)
}

/// Sends `contents` cut into `seg`-byte datagrams, from datagram index `skip` on, with one
/// `sendmmsg` per [`BATCH`] datagrams.
///
/// Returns `WouldBlock` only when nothing of the train has gone out yet (`skip == 0` and the first
/// syscall blocked), so that a caller can simply retry the whole transmit. Once part of the train
/// is out it waits (up to [`SPLIT_STALL_TIMEOUT`]) for socket space rather than leave the caller
/// unable to tell what was sent.
pub(crate) fn send_split(
    sock: &Socket,
    counters: &Counters,
    dst: &SockAddr,
    src: Option<IpAddr>,
    contents: &[u8],
    seg: usize,
    skip: usize,
) -> io::Result<()> {
    let seg = seg.max(1);
    let total = crate::datagram::segment_count(contents.len(), seg);
    let mut next = skip;
    while next < total {
        let empty = OutMsg {
            dst,
            contents: &[],
            segment_size: None,
            src,
        };
        let mut msgs = [empty; BATCH];
        let mut k = 0;
        for (slot, chunk) in msgs.iter_mut().zip(contents.chunks(seg).skip(next)) {
            slot.contents = chunk;
            k += 1;
        }
        if k == 0 {
            // Only empty contents get here (they are one datagram, sent by the caller's
            // single-datagram path); never loop on nothing.
            break;
        }
        let batch = msgs.get(..k).unwrap_or(&[]);
        match sys::send_many(sock, counters, batch) {
            Ok(m) if m > 0 => {
                let bytes = batch.iter().take(m).map(|msg| msg.contents.len()).sum();
                counters.sent(m, bytes);
                next += m;
            }
            Ok(_) => wait_for_space(sock)?,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && next > 0 => wait_for_space(sock)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn wait_for_space(sock: &Socket) -> io::Result<()> {
    let r = sys::wait(sock, false, true, Some(SPLIT_STALL_TIMEOUT))?;
    if r.writable {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "socket send buffer stayed full with part of a segmented transmit sent",
        ))
    }
}

/// A socket's view of the send path: the fd, its counters and its live GSO limit.
pub(crate) struct Sender<'s> {
    pub(crate) sock: &'s Socket,
    pub(crate) counters: &'s Counters,
    /// Segments per GSO send; 1 when GSO is off or was turned off at run time.
    pub(crate) gso_segments: &'s AtomicUsize,
    pub(crate) family: Family,
    pub(crate) max_payload: usize,
}

impl Sender<'_> {
    /// [`crate::UdpSocket::send`].
    pub(crate) fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
        let src = check(t, self.family, self.max_payload)?;
        let dst = self.family.sockaddr(t.destination);
        let seg = t.effective_segment_size();
        let count = t.datagram_count();
        if count == 1 {
            let msg = OutMsg {
                dst: &dst,
                contents: t.contents,
                segment_size: None,
                src,
            };
            sys::send_one(self.sock, self.counters, &msg)?;
            self.counters.sent(1, t.contents.len());
            return Ok(());
        }
        if self.gso_segments.load(Relaxed) > 1 {
            // check() bounded the contents to < 65,536 bytes, so the segment size fits a u16.
            let segment = u16::try_from(seg).map_err(|_| invalid(format!("segment size {seg}")))?;
            let msg = OutMsg {
                dst: &dst,
                contents: t.contents,
                segment_size: Some(segment),
                src,
            };
            match sys::send_one(self.sock, self.counters, &msg) {
                Ok(()) => {
                    self.counters.sent(count, t.contents.len());
                    return Ok(());
                }
                Err(e) if is_gso_refusal(&e) => {
                    return self.fall_back(&dst, src, t.contents, seg, &e)
                }
                Err(e) => return Err(e),
            }
        }
        send_split(self.sock, self.counters, &dst, src, t.contents, seg, 0)
    }

    /// A GSO send failed with `EIO`/`EINVAL`. We first send the first segment on its own: if that
    /// fails too, the fault is not GSO's, and we keep GSO and report the error. Otherwise GSO is
    /// off for good on this socket and the rest of the train follows as plain datagrams.
    fn fall_back(
        &self,
        dst: &SockAddr,
        src: Option<IpAddr>,
        contents: &[u8],
        seg: usize,
        cause: &io::Error,
    ) -> io::Result<()> {
        let first = contents.chunks(seg.max(1)).next().unwrap_or(&[]);
        let msg = OutMsg {
            dst,
            contents: first,
            segment_size: None,
            src,
        };
        sys::send_one(self.sock, self.counters, &msg)?;
        self.counters.sent(1, first.len());
        if self.gso_segments.swap(1, Relaxed) > 1 {
            self.counters.gso_fallback();
            warn!(error = %cause, "GSO send refused by the kernel; GSO is now off for this socket");
        }
        send_split(self.sock, self.counters, dst, src, contents, seg, 1)
    }

    /// [`crate::DatagramSocket::send_batch_gather`]. With GSO on, one `sendmmsg` whose messages
    /// point at the parts; otherwise (or when the kernel refuses GSO) each transmit is gathered
    /// into one buffer and goes through [`Self::send`], which cuts it and falls back.
    pub(crate) fn send_batch_gather(&self, ts: &[GatherTransmit<'_>]) -> io::Result<usize> {
        let ts = ts.get(..ts.len().min(BATCH)).unwrap_or(ts);
        let Some(first) = ts.first() else {
            return Ok(0);
        };
        let copy_one = |t: &GatherTransmit<'_>| {
            let bytes = t.gather();
            self.send(&Transmit {
                destination: t.destination,
                contents: &bytes,
                segment_size: t.segment_size,
                src_ip: t.src_ip,
            })
        };
        if self.gso_segments.load(Relaxed) <= 1 || ts.iter().any(|t| t.parts.len() > 1024) {
            for (i, t) in ts.iter().enumerate() {
                if let Err(e) = copy_one(t) {
                    return if i == 0 { Err(e) } else { Ok(i) };
                }
            }
            return Ok(ts.len());
        }
        let mut counts = [0usize; BATCH];
        let mut lens = [0usize; BATCH];
        let mut segs = [None; BATCH];
        let mut srcs = [None; BATCH];
        for (i, t) in ts.iter().enumerate() {
            let len = t.len();
            let seg = match t.segment_size {
                Some(s) if s > 0 && len > s => s,
                _ => len,
            };
            let count = crate::datagram::segment_count(len, seg);
            srcs[i] = check_shape(
                t.destination,
                t.src_ip,
                len,
                count,
                self.family,
                self.max_payload,
            )?;
            counts[i] = count;
            lens[i] = len;
            // check_shape() bounded trains below 65,536 bytes: the conversion cannot fail.
            segs[i] = if count > 1 {
                u16::try_from(seg).ok()
            } else {
                None
            };
        }
        let addrs: [SockAddr; BATCH] = std::array::from_fn(|i| {
            let a = ts.get(i).map_or(first.destination, |t| t.destination);
            self.family.sockaddr(a)
        });
        let mut msgs = [OutMsgGather {
            dst: &addrs[0],
            parts: &[],
            segment_size: None,
            src: None,
        }; BATCH];
        for (i, t) in ts.iter().enumerate() {
            msgs[i] = OutMsgGather {
                dst: &addrs[i],
                parts: t.parts,
                segment_size: segs[i],
                src: srcs[i],
            };
        }
        let batch = msgs.get(..ts.len()).unwrap_or(&[]);
        match sys::send_many_gather(self.sock, self.counters, batch) {
            Ok(m) => {
                for i in 0..m.min(ts.len()) {
                    self.counters.sent(counts[i], lens[i]);
                }
                Ok(m)
            }
            // As in send_batch: only the first message failed; let send() tell a GSO refusal
            // from other errors.
            Err(e) if is_gso_refusal(&e) && counts[0] > 1 => {
                copy_one(first)?;
                Ok(1)
            }
            Err(e) => Err(e),
        }
    }

    /// [`crate::UdpSocket::send_batch`].
    pub(crate) fn send_batch(&self, ts: &[Transmit<'_>]) -> io::Result<usize> {
        let ts = ts.get(..ts.len().min(BATCH)).unwrap_or(ts);
        let Some(first) = ts.first() else {
            return Ok(0);
        };
        let mut srcs = [None; BATCH];
        for (src, t) in srcs.iter_mut().zip(ts) {
            *src = check(t, self.family, self.max_payload)?;
        }
        let gso_on = self.gso_segments.load(Relaxed) > 1;
        if !gso_on && ts.iter().any(|t| t.datagram_count() > 1) {
            // Without GSO a train is several syscalls anyway: send the transmits one by one.
            for (i, t) in ts.iter().enumerate() {
                if let Err(e) = self.send(t) {
                    return if i == 0 { Err(e) } else { Ok(i) };
                }
            }
            return Ok(ts.len());
        }
        let addrs: [SockAddr; BATCH] = std::array::from_fn(|i| {
            let a = ts.get(i).map_or(first.destination, |t| t.destination);
            self.family.sockaddr(a)
        });
        let mut msgs = [OutMsg {
            dst: &addrs[0],
            contents: &[],
            segment_size: None,
            src: None,
        }; BATCH];
        for (((slot, t), dst), &src) in msgs.iter_mut().zip(ts).zip(&addrs).zip(&srcs) {
            let seg = t.effective_segment_size();
            *slot = OutMsg {
                dst,
                src,
                contents: t.contents,
                // check() bounded trains below 65,536 bytes; a failed conversion cannot happen.
                segment_size: if t.datagram_count() > 1 {
                    u16::try_from(seg).ok()
                } else {
                    None
                },
            };
        }
        let batch = msgs.get(..ts.len()).unwrap_or(&[]);
        match sys::send_many(self.sock, self.counters, batch) {
            Ok(m) => {
                for t in ts.iter().take(m) {
                    self.counters.sent(t.datagram_count(), t.contents.len());
                }
                Ok(m)
            }
            // sendmmsg reports an error only for its first message: run that one through send(),
            // which tells a GSO refusal from other failures and falls back if needed.
            Err(e) if is_gso_refusal(&e) && first.datagram_count() > 1 => {
                self.send(first)?;
                Ok(1)
            }
            Err(e) => Err(e),
        }
    }
}
