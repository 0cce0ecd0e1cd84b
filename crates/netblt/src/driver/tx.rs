//! Outgoing datagrams, batched into GSO trains.
//!
//! The engine writes one datagram per poll. We let it write straight into
//! the tail of the current *train*: a run of datagrams to one destination,
//! all of one size but the last (the rule of `UDP_SEGMENT`). DATA packets of
//! one buffer have one size, and the pacer releases them `pacing_quantum` at
//! a time, so a quantum usually leaves in one `sendmsg`; [`TRAINS`] trains go
//! out per `sendmmsg`.
//!
//! With GSO the queue *gathers* ([`TxQueue::gathers`]): the engine writes
//! only a DATA packet's 24-byte header (`poll_transmit_gather`) and names
//! where its payload lies in the sender's buffer; the kernel collects
//! header, payload and padding from their places (one `iovec` each), so
//! payloads are never copied in user space. Measured on loopback, that copy
//! was a fifth of the sender's CPU time. Without GSO (raw IP, or a device
//! that refused it) each datagram is written whole, as before.
//!
//! A datagram that cannot join the open train (other size or destination)
//! is moved to the start of a new one: a copy of its written bytes (a header
//! or a control packet). Nothing is allocated per datagram; a flush in
//! gathering mode allocates one vector of `iovec`s for the whole batch.

use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};

use netblt_proto::{Gathered, Payload};
use netblt_udp::{DatagramSocket, GatherTransmit, Transmit, BATCH};

/// Trains held before a flush: one `sendmmsg`'s worth.
pub(crate) const TRAINS: usize = BATCH;
/// Bytes per train: a UDP datagram's limit over IPv4 (65,507), which bounds
/// a GSO train; also the room for the bytes written into a train's region.
const TRAIN_BYTES: usize = 65_507;
/// Zero bytes for DATA padding.
const ZEROS: [u8; 4] = [0; 4];

#[derive(Debug, Clone, Copy)]
struct Train {
    dest: SocketAddr,
    /// The local address to send from (`None`: the kernel's choice); see `locals.rs`.
    src: Option<IpAddr>,
    /// Bytes on the wire.
    len: usize,
    /// Bytes written into the train's region (all of `len` unless gathering).
    written: usize,
    seg: usize,
    count: usize,
    closed: bool,
    /// This train's parts: `parts[first_part..first_part + parts]`.
    first_part: usize,
    parts: usize,
}

/// A piece of a datagram, in order.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// Bytes of the train's region.
    Written { off: usize, len: usize },
    /// A DATA payload in the engine's buffer.
    Payload(Payload),
    /// Zero padding.
    Pad(usize),
}

/// Where [`TxQueue::slot`] pointed the engine.
#[derive(Debug, Clone, Copy)]
enum Slot {
    None,
    /// At the tail of open train `i`.
    Tail(usize),
    /// At the start of a new train.
    New,
}

/// Queue of outgoing trains; see the module docs.
pub(crate) struct TxQueue {
    /// `TRAINS + 1` regions of `TRAIN_BYTES`: the spare one receives a
    /// datagram that was written at the tail of the last train but cannot
    /// join it.
    buf: Vec<u8>,
    trains: Vec<Train>,
    parts: Vec<Part>,
    /// First train not yet handed to the kernel.
    head: usize,
    slot: Slot,
    max_segments: usize,
    /// Largest datagram the engine may write (its `max_datagram_size`).
    max_datagram: usize,
    gather: bool,
    /// Datagrams queued and send syscalls made, for reports.
    pub(crate) datagrams: u64,
    pub(crate) syscalls: u64,
}

impl TxQueue {
    /// `gather`: let the kernel collect DATA payloads in place (needs GSO:
    /// without it every datagram would be copied together anyway).
    pub(crate) fn new(max_segments: usize, max_datagram: usize, gather: bool) -> TxQueue {
        let max_segments = max_segments.clamp(1, netblt_udp::MAX_SEGMENTS);
        TxQueue {
            buf: vec![0; (TRAINS + 1) * TRAIN_BYTES],
            trains: Vec::with_capacity(TRAINS + 1),
            // Header, payload and padding per datagram.
            parts: Vec::with_capacity((TRAINS + 1) * max_segments * 3),
            head: 0,
            slot: Slot::None,
            max_segments,
            max_datagram: max_datagram.clamp(64, TRAIN_BYTES),
            gather: gather && max_segments > 1,
            datagrams: 0,
            syscalls: 0,
        }
    }

    pub(crate) fn set_max_datagram(&mut self, n: usize) {
        self.max_datagram = n.clamp(64, TRAIN_BYTES);
    }

    /// Whether to fill slots with `poll_transmit_gather`.
    pub(crate) fn gathers(&self) -> bool {
        self.gather
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head >= self.trains.len()
    }

    /// Where the engine may write the next datagram, or `None` when the
    /// queue is full (flush first). Follow with [`commit`](Self::commit) if
    /// something was written.
    pub(crate) fn slot(&mut self) -> Option<&mut [u8]> {
        let need = self.max_datagram;
        let n = self.trains.len();
        let (slot, off) = match self.trains.last() {
            Some(t)
                if n <= TRAINS
                    && !t.closed
                    && TRAIN_BYTES - t.len >= need
                    && TRAIN_BYTES - t.written >= need
                    && t.count < self.max_segments =>
            {
                (Slot::Tail(n - 1), (n - 1) * TRAIN_BYTES + t.written)
            }
            _ if n < TRAINS => (Slot::New, n * TRAIN_BYTES),
            _ => return None,
        };
        self.slot = slot;
        let end = match slot {
            Slot::Tail(i) => (i + 1) * TRAIN_BYTES,
            _ => off + TRAIN_BYTES,
        };
        self.buf.get_mut(off..end)
    }

    /// Records the datagram just written into [`slot`](Self::slot): `g.head`
    /// bytes there, then its payload and padding if gathered; it goes to
    /// `dest`, from `src` if given (else from where the kernel's routing
    /// says).
    pub(crate) fn commit(&mut self, dest: SocketAddr, src: Option<IpAddr>, g: Gathered) {
        self.datagrams += 1;
        let n = g.len();
        let (i, off) = match std::mem::replace(&mut self.slot, Slot::None) {
            Slot::None => return,
            Slot::New => (self.trains.len(), self.trains.len() * TRAIN_BYTES),
            Slot::Tail(i) => {
                let Some(t) = self.trains.get_mut(i) else {
                    return;
                };
                let off = i * TRAIN_BYTES + t.written;
                if t.dest == dest && t.src == src && n <= t.seg {
                    t.len += n;
                    t.written += g.head;
                    t.count += 1;
                    // A shorter datagram ends a GSO train.
                    t.closed = n < t.seg;
                    t.parts += push_parts(&mut self.parts, off, g);
                    return;
                }
                // Cannot join: close the train and move the written bytes to
                // the start of the next region (the spare one at worst).
                t.closed = true;
                let to = (i + 1) * TRAIN_BYTES;
                if to + g.head > self.buf.len() {
                    return;
                }
                self.buf.copy_within(off..off + g.head, to);
                (i + 1, to)
            }
        };
        debug_assert_eq!(i, self.trains.len());
        let first_part = self.parts.len();
        let parts = push_parts(&mut self.parts, off, g);
        self.trains.push(Train {
            dest,
            src,
            len: n,
            written: g.head,
            seg: n,
            count: 1,
            closed: false,
            first_part,
            parts,
        });
    }

    /// Hands queued trains to the kernel; `payload` resolves gathered
    /// payloads (a payload whose buffer was acknowledged meanwhile resolves
    /// to nothing, and its datagram is left out: it need not go any more).
    /// `Ok(true)` when everything went, `Ok(false)` when the socket is full
    /// (wait for writability and call again). Other errors (e.g.
    /// `ECONNREFUSED`) are returned as they are.
    pub(crate) fn flush<'a>(
        &mut self,
        sock: &dyn DatagramSocket,
        payload: &dyn Fn(&Payload) -> Option<&'a [u8]>,
    ) -> io::Result<bool> {
        while self.head < self.trains.len() {
            let n = (self.trains.len() - self.head).min(TRAINS);
            let sent = if self.gather {
                self.send_gathered(sock, n, payload)
            } else {
                self.send_whole(sock, n)
            };
            self.syscalls += 1;
            match sent {
                Ok(k) => self.head += k.max(1).min(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => {
                    // Drop what failed: the engine recovers lost data, and
                    // the caller decides whether the error is fatal.
                    self.head += 1;
                    self.reset_if_done();
                    return Err(e);
                }
            }
        }
        self.reset_if_done();
        Ok(true)
    }

    fn send_whole(&self, sock: &dyn DatagramSocket, n: usize) -> io::Result<usize> {
        let pending = &self.trains[self.head..self.head + n];
        let mut ts: [Transmit<'_>; TRAINS] = [Transmit {
            destination: pending[0].dest,
            contents: &[],
            segment_size: None,
            src_ip: None,
        }; TRAINS];
        for (k, t) in pending.iter().enumerate() {
            let off = (self.head + k) * TRAIN_BYTES;
            ts[k] = Transmit {
                destination: t.dest,
                contents: &self.buf[off..off + t.written],
                segment_size: (t.count > 1).then_some(t.seg),
                src_ip: t.src,
            };
        }
        sock.send_batch(&ts[..n])
    }

    fn send_gathered<'s, 'p: 's>(
        &'s self,
        sock: &dyn DatagramSocket,
        n: usize,
        payload: &dyn Fn(&Payload) -> Option<&'p [u8]>,
    ) -> io::Result<usize> {
        let pending = &self.trains[self.head..self.head + n];
        let total: usize = pending.iter().map(|t| t.parts).sum();
        let mut slices: Vec<IoSlice<'s>> = Vec::with_capacity(total);
        let mut ranges = [(0usize, 0usize, None); TRAINS];
        for (k, t) in pending.iter().enumerate() {
            let start = slices.len();
            let mut seg = None;
            let parts = &self.parts[t.first_part..t.first_part + t.parts];
            // One datagram at a time: its written bytes, payload, padding.
            let mut d = 0;
            while d < parts.len() {
                let Part::Written { off, len } = parts[d] else {
                    d += 1;
                    continue;
                };
                let mut end = d + 1;
                while end < parts.len() && !matches!(parts[end], Part::Written { .. }) {
                    end += 1;
                }
                let mut datagram = [IoSlice::new(&[]); 3];
                let mut m = 0;
                let mut ok = true;
                datagram[m] = IoSlice::new(&self.buf[off..off + len]);
                m += 1;
                for p in &parts[d + 1..end] {
                    let s: &'s [u8] = match p {
                        Part::Payload(p) => match payload(p) {
                            Some(s) => s,
                            None => {
                                ok = false;
                                break;
                            }
                        },
                        Part::Pad(z) => &ZEROS[..(*z).min(ZEROS.len())],
                        Part::Written { .. } => &[],
                    };
                    if m < datagram.len() {
                        datagram[m] = IoSlice::new(s);
                        m += 1;
                    }
                }
                if ok {
                    slices.extend_from_slice(&datagram[..m]);
                    seg.get_or_insert(t.seg);
                }
                d = end;
            }
            ranges[k] = (start, slices.len(), seg.filter(|_| t.count > 1));
        }
        // A train whose every payload was acknowledged meanwhile has no
        // parts: it is left out, and counts as handled.
        let mut ts: [GatherTransmit<'_>; TRAINS] = [GatherTransmit {
            destination: pending[0].dest,
            parts: &[],
            segment_size: None,
            src_ip: None,
        }; TRAINS];
        let mut train_of = [0usize; TRAINS];
        let mut m = 0;
        for (k, t) in pending.iter().enumerate() {
            let (a, b, seg) = ranges[k];
            if a == b {
                continue;
            }
            ts[m] = GatherTransmit {
                destination: t.dest,
                parts: &slices[a..b],
                segment_size: seg,
                src_ip: t.src,
            };
            train_of[m] = k;
            m += 1;
        }
        if m == 0 {
            return Ok(n);
        }
        let sent = sock.send_batch_gather(&ts[..m])?;
        // Trains handled: up to the first one not sent.
        Ok(if sent >= m { n } else { train_of[sent] })
    }

    fn reset_if_done(&mut self) {
        if self.head >= self.trains.len() {
            self.trains.clear();
            self.parts.clear();
            self.head = 0;
        }
    }
}

/// Appends a datagram's parts (written bytes at `off`, payload, padding);
/// returns how many.
fn push_parts(parts: &mut Vec<Part>, off: usize, g: Gathered) -> usize {
    let before = parts.len();
    parts.push(Part::Written { off, len: g.head });
    if let Some(p) = g.payload {
        parts.push(Part::Payload(p));
    }
    if g.pad > 0 {
        parts.push(Part::Pad(g.pad));
    }
    parts.len() - before
}

#[cfg(test)]
mod tests {
    use super::*;
    use netblt_proto::{Config, Connection, Mode, TransferParams};
    use std::cell::RefCell;
    use std::time::Duration;

    /// A socket that records each datagram it is given (trains cut at their
    /// segment size), as the receiving end would see them.
    #[derive(Default)]
    struct Capture {
        datagrams: RefCell<Vec<Vec<u8>>>,
        calls: RefCell<usize>,
    }

    impl Capture {
        fn cut(&self, bytes: &[u8], seg: Option<usize>) {
            let seg = seg.unwrap_or(bytes.len()).max(1);
            for d in bytes.chunks(seg) {
                self.datagrams.borrow_mut().push(d.to_vec());
            }
        }
    }

    impl DatagramSocket for Capture {
        fn send(&self, t: &Transmit<'_>) -> io::Result<()> {
            self.cut(t.contents, t.segment_size);
            Ok(())
        }
        fn send_batch_gather(&self, ts: &[GatherTransmit<'_>]) -> io::Result<usize> {
            *self.calls.borrow_mut() += 1;
            for t in ts {
                let bytes: Vec<u8> = t.parts.iter().flat_map(|p| p.iter().copied()).collect();
                self.cut(&bytes, t.segment_size);
            }
            Ok(ts.len())
        }
        fn recv(
            &self,
            _: &mut [std::io::IoSliceMut<'_>],
            _: &mut [netblt_udp::RecvMeta],
        ) -> io::Result<usize> {
            Ok(0)
        }
        fn wait(&self, _: bool, _: bool, _: Option<Duration>) -> io::Result<netblt_udp::Readiness> {
            Ok(netblt_udp::Readiness::default())
        }
        fn local_addr(&self) -> io::Result<SocketAddr> {
            Ok("127.0.0.1:1".parse().unwrap())
        }
        fn max_gso_segments(&self) -> usize {
            64
        }
        fn stats(&self) -> netblt_udp::IoStats {
            netblt_udp::IoStats::default()
        }
        fn grow_recv_buffer(&self, _: usize) -> usize {
            0
        }
    }

    /// A data sender past its handshake, with `n` bytes pushed and GO'd.
    fn sender(n: usize) -> Connection {
        let params = TransferParams {
            packet_size: 997,
            buffer_size: 9_970,
            burst_size: 1000,
            burst_interval_ms: 1,
            max_buffers: 4,
            checksum_data: false,
        };
        let cfg = Config {
            params,
            ..Config::default()
        };
        let t0 = netblt_proto::Instant::ZERO;
        let mut a = Connection::connect(
            cfg.clone(),
            Mode::Write,
            7,
            1,
            2,
            Some(n as u64),
            vec![],
            t0,
        )
        .unwrap();
        let mut buf = vec![0u8; 70_000];
        let open = a.poll_transmit(t0, &mut buf).unwrap();
        let p = netblt_wire::Packet::parse(&buf[..open]).unwrap();
        let netblt_wire::Repr::Open(o) = p.repr else {
            panic!("not an OPEN")
        };
        let mut b = Connection::accept(cfg, &o, 2, 1, vec![], t0).unwrap();
        // RESPONSE and the GOs, until the sender has a buffer to send.
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + i / 997) as u8).collect();
        let mut off = 0;
        for _ in 0..10 {
            while let Some(k) = b.poll_transmit(t0, &mut buf) {
                a.handle_datagram(t0, &buf[..k]);
            }
            while a.wants_buffer() && off < n {
                let end = (off + 9_970).min(n);
                a.push_buffer(data[off..end].to_vec(), end == n).unwrap();
                off = end;
            }
            while let Some(k) = a.poll_transmit(t0, &mut buf) {
                b.handle_datagram(t0, &buf[..k]);
                if k > 500 {
                    break;
                }
            }
        }
        a
    }

    fn drain(conn: &mut Connection, gather: bool) -> Vec<Vec<u8>> {
        let sock = Capture::default();
        let mut q = TxQueue::new(64, conn.max_datagram_size(), gather);
        assert_eq!(q.gathers(), gather);
        let dest: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let now = netblt_proto::Instant::ZERO + netblt_proto::Duration::from_secs(1);
        loop {
            let mut any = false;
            while let Some(slot) = q.slot() {
                let g = if gather {
                    conn.poll_transmit_gather(now, slot)
                } else {
                    conn.poll_transmit(now, slot).map(Gathered::whole)
                };
                let Some(g) = g else { break };
                q.commit(dest, None, g);
                any = true;
            }
            assert!(q.flush(&sock, &|p| conn.payload(p)).unwrap());
            if !any {
                break;
            }
        }
        sock.datagrams.into_inner()
    }

    #[test]
    fn gathered_trains_carry_the_same_datagrams_as_whole_ones() {
        let whole = drain(&mut sender(35_001), false);
        let gathered = drain(&mut sender(35_001), true);
        assert!(whole.len() > 20, "{} datagrams", whole.len());
        assert_eq!(whole, gathered);
        // 997-byte payloads need a 3-byte pad: 24 + 997 + 3.
        assert!(gathered.iter().any(|d| d.len() == 1024));
    }

    #[test]
    fn payloads_of_acknowledged_buffers_are_left_out() {
        let mut conn = sender(20_000);
        let sock = Capture::default();
        let mut q = TxQueue::new(64, conn.max_datagram_size(), true);
        let dest: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let now = netblt_proto::Instant::ZERO + netblt_proto::Duration::from_secs(1);
        let mut n = 0;
        while let Some(slot) = q.slot() {
            let Some(g) = conn.poll_transmit_gather(now, slot) else {
                break;
            };
            q.commit(dest, None, g);
            n += 1;
        }
        assert!(n > 3);
        // As if every buffer had been acknowledged before the flush.
        assert!(q.flush(&sock, &|_| None).unwrap());
        assert!(q.is_empty());
        let sent = sock.datagrams.into_inner();
        assert!(
            sent.iter().all(|d| d.len() < 500),
            "only control packets may go"
        );
    }
}
