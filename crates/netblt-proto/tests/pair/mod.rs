//! A two-connection harness with explicit time, after quinn-proto's
//! `tests/util.rs` `Pair`: datagrams travel over a fixed-latency channel
//! that can drop, duplicate, corrupt and delay (reorder) them with a seeded
//! RNG. The clock jumps to the next event; nothing sleeps.

#![allow(dead_code, unreachable_pub)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use netblt_proto::{Config, Connection, Duration, Event, Instant, Mode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone, Copy, Default)]
pub struct Impair {
    pub loss: f64,
    pub duplicate: f64,
    pub corrupt: f64,
    pub reorder: f64,
}

/// A bottleneck on the A-to-B direction: a transmitter of `rate_bps` behind
/// a drop-tail queue of `queue_bytes`; random loss (`impair_ab.loss`) then
/// strikes after the transmitter, as on a noisy link.
#[derive(Debug, Clone, Default)]
pub struct Bottleneck {
    pub rate_bps: f64,
    pub queue_bytes: usize,
    busy_until: Option<Instant>,
    pub offered: u64,
    pub dropped: u64,
    /// Packets lost to random loss after the transmitter.
    pub lost: u64,
    /// Queueing delay of every packet that went through, in microseconds.
    pub delays_us: Vec<u64>,
}

impl Bottleneck {
    pub fn new(rate_bps: f64, queue_bytes: usize) -> Self {
        Bottleneck {
            rate_bps,
            queue_bytes,
            ..Default::default()
        }
    }

    /// The p-quantile of the queueing delay.
    pub fn delay_quantile(&self, q: f64) -> Duration {
        self.delay_quantile_from(0, q)
    }

    /// The p-quantile of the queueing delay of packets from the `skip`th on.
    pub fn delay_quantile_from(&self, skip: usize, q: f64) -> Duration {
        let mut v = self.delays_us.get(skip..).unwrap_or(&[]).to_vec();
        v.sort_unstable();
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        Duration::from_micros(v.get(i).copied().unwrap_or(0))
    }

    /// When a packet of `len` bytes offered at `now` leaves the
    /// transmitter, or `None` if the queue is full.
    fn offer(&mut self, now: Instant, len: usize) -> Option<Instant> {
        self.offered += 1;
        let start = self.busy_until.map_or(now, |b| b.max(now));
        let backlog = start.saturating_duration_since(now).as_secs_f64() * self.rate_bps / 8.0;
        if backlog + len as f64 > self.queue_bytes as f64 {
            self.dropped += 1;
            return None;
        }
        let tx = Duration::from_nanos((len as f64 * 8.0 / self.rate_bps * 1e9) as u64);
        let depart = start + tx;
        self.busy_until = Some(depart);
        self.delays_us
            .push(start.saturating_duration_since(now).as_micros() as u64);
        Some(depart)
    }
}

/// (arrival, tie-breaking sequence, to B?, bytes)
type InFlight = (Instant, u64, bool, Vec<u8>);

/// Says whether a datagram is lost.
pub type DropFilter = Box<dyn FnMut(&[u8]) -> bool>;

pub struct Pair {
    pub now: Instant,
    pub a: Connection,
    pub b: Option<Connection>,
    pub b_config: Config,
    pub latency: Duration,
    pub impair_ab: Impair,
    pub impair_ba: Impair,
    rng: ChaCha8Rng,
    wire: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    pub sent_data: Vec<u8>,
    pub received: Vec<u8>,
    pub events_a: Vec<String>,
    pub events_b: Vec<String>,
    to_send: Vec<u8>,
    send_off: usize,
    pub steps: u64,
    /// Give received buffers' storage back to the receiving connection.
    pub recycle: bool,
    /// Transmit with `poll_transmit_gather`, assembling each datagram from
    /// its header, payload and padding as a driver's `sendmsg` would.
    pub gather: bool,
    /// DATA datagrams that came out as a header plus a payload.
    pub gathered: u64,
    /// A rate-limited, queueing A-to-B direction (none: fixed latency only).
    pub bottleneck: Option<Bottleneck>,
    /// When the transfer's last byte reached B's application.
    pub finished_at: Option<Instant>,
    /// Path MTU as a UDP payload limit: a longer datagram is cut into IP
    /// fragments, each lost on its own, and arrives only if all of them do
    /// (a real driver hands the engine 64 KB buffers and the kernel
    /// fragments). `None`: no fragmentation.
    pub mtu: Option<usize>,
    /// Datagrams longer than `mtu` (fragmented), and the largest one sent.
    pub fragmented: u64,
    pub largest: usize,
    /// A B-to-A datagram for which this returns true is lost (a scripted
    /// loss of one packet).
    pub drop_to_a: Option<DropFilter>,
    /// The same for A-to-B datagrams.
    pub drop_to_b: Option<DropFilter>,
}

/// The next datagram from `c`, by `poll_transmit` or by gathering.
fn next_datagram(
    c: &mut Connection,
    now: Instant,
    buf: &mut [u8],
    gather: bool,
    gathered: &mut u64,
) -> Option<Vec<u8>> {
    if !gather {
        let n = c.poll_transmit(now, buf)?;
        return Some(buf[..n].to_vec());
    }
    let g = c.poll_transmit_gather(now, buf)?;
    let mut d = buf[..g.head].to_vec();
    if let Some(p) = g.payload {
        *gathered += 1;
        d.extend_from_slice(c.payload(&p).expect("payload of a live buffer"));
    }
    d.resize(d.len() + g.pad, 0);
    assert_eq!(d.len(), g.len());
    Some(d)
}

/// Rate control under `policy` with the FEEDBACK extension: 1400-byte
/// packets, buffers of 256 packets, `max_buffers` of them, a 1 Gb/s ceiling.
pub fn adaptive_config(policy: netblt_proto::Policy, max_buffers: u16) -> Config {
    Config {
        params: netblt_proto::TransferParams {
            packet_size: 1400,
            buffer_size: 256 * 1400,
            // The ceiling: 1 Gb/s offered.
            burst_size: 89,
            burst_interval_ms: 1,
            max_buffers,
            checksum_data: false,
        },
        rate_feedback: true,
        rate: netblt_proto::RateConfig {
            policy,
            ..netblt_proto::RateConfig::default()
        },
        ..Config::default()
    }
}

/// A WRITE-mode OPEN from port 5000 to 7000 with the FEEDBACK extension:
/// 1400-byte packets, 4 per 1 ms burst, `max_outstanding` buffers of
/// `buffer_size` bytes, `transfer_size` in all (for scripted conversations
/// with a passive end made by `Connection::accept(cfg, &open, 7000, 5000, ..)`).
pub fn open_write(
    buffer_size: u32,
    transfer_size: u32,
    max_outstanding: u16,
) -> netblt_wire::OpenRepr<'static> {
    netblt_wire::OpenRepr {
        uid: 9,
        buffer_size,
        transfer_size,
        data_packet_size: 1400 + 24,
        burst_size: 4,
        burst_interval_ms: 1,
        death_timer_s: 30,
        checksum_data: false,
        mode: netblt_wire::Mode::Write,
        rate_feedback: true,
        receiver_offers: false,
        path_probe: false,
        padded_len: 0,
        max_outstanding,
        client: b"",
    }
}

/// The bytes of a packet from port 5000 to 7000 (the active end of
/// [`open_write`]).
pub fn emit_from_5000(repr: netblt_wire::Repr<'_>) -> Vec<u8> {
    let p = netblt_wire::Packet {
        local_port: 5000,
        foreign_port: 7000,
        repr,
    };
    let mut b = vec![0u8; p.buffer_len()];
    let n = p.emit(&mut b).unwrap_or(0);
    b.truncate(n);
    b
}

pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random()).collect()
}

impl Pair {
    /// A sends `data` to B (WRITE mode, A active).
    pub fn write(config_a: Config, config_b: Config, data: Vec<u8>, seed: u64) -> Pair {
        let a = Connection::connect(
            config_a,
            Mode::Write,
            0x1234_5678,
            5000,
            7000,
            Some(data.len() as u64),
            b"hello".to_vec(),
            Instant::ZERO,
        )
        .unwrap();
        Pair::new(a, config_b, data, seed)
    }

    /// A reads `data` from B (READ mode, A active, B sends).
    pub fn read(config_a: Config, config_b: Config, data: Vec<u8>, seed: u64) -> Pair {
        let a = Connection::connect(
            config_a,
            Mode::Read,
            0x1234_5678,
            5000,
            7000,
            None,
            b"get".to_vec(),
            Instant::ZERO,
        )
        .unwrap();
        Pair::new(a, config_b, data, seed)
    }

    fn new(a: Connection, b_config: Config, data: Vec<u8>, seed: u64) -> Pair {
        Pair {
            now: Instant::ZERO,
            a,
            b: None,
            b_config,
            latency: Duration::from_millis(5),
            impair_ab: Impair::default(),
            impair_ba: Impair::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            wire: BinaryHeap::new(),
            seq: 0,
            sent_data: data.clone(),
            received: Vec::new(),
            events_a: Vec::new(),
            events_b: Vec::new(),
            to_send: data,
            send_off: 0,
            steps: 0,
            recycle: false,
            gather: false,
            gathered: 0,
            bottleneck: None,
            finished_at: None,
            mtu: None,
            fragmented: 0,
            largest: 0,
            drop_to_a: None,
            drop_to_b: None,
        }
    }

    /// Payload bytes of DATA and LDATA packets on their way from A to B
    /// (queued at the bottleneck or travelling).
    pub fn data_in_transit_ab(&self) -> u64 {
        self.wire
            .iter()
            .filter(|Reverse((_, _, to_b, _))| *to_b)
            .filter_map(|Reverse((.., bytes))| netblt_wire::Packet::parse(bytes).ok())
            .map(|p| match p.repr {
                netblt_wire::Repr::Data(d) | netblt_wire::Repr::LData(d) => d.data.len() as u64,
                _ => 0,
            })
            .sum()
    }

    fn sender_mut(&mut self) -> Option<&mut Connection> {
        match self.a.mode() {
            Mode::Write => Some(&mut self.a),
            Mode::Read => self.b.as_mut(),
        }
    }

    fn send(&mut self, to_b: bool, mut bytes: Vec<u8>) {
        let filter = if to_b {
            &mut self.drop_to_b
        } else {
            &mut self.drop_to_a
        };
        if filter.as_mut().is_some_and(|f| f(&bytes)) {
            return;
        }
        let imp = if to_b { self.impair_ab } else { self.impair_ba };
        self.largest = self.largest.max(bytes.len());
        if let (true, Some(b)) = (to_b, self.bottleneck.as_mut()) {
            let Some(depart) = b.offer(self.now, bytes.len() + 28) else {
                return;
            };
            if self.rng.random_bool(imp.loss) {
                b.lost += 1;
                return;
            }
            self.seq += 1;
            self.wire
                .push(Reverse((depart + self.latency, self.seq, to_b, bytes)));
            return;
        }
        let fragments = match self.mtu {
            Some(mtu) if bytes.len() > mtu => {
                self.fragmented += 1;
                bytes.len().div_ceil(mtu)
            }
            _ => 1,
        };
        for _ in 0..fragments {
            if self.rng.random_bool(imp.loss) {
                return;
            }
        }
        if self.rng.random_bool(imp.corrupt) && !bytes.is_empty() {
            let bit = self.rng.random_range(0..bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        let mut at = self.now + self.latency;
        if self.rng.random_bool(imp.reorder) {
            at += self.latency * 3;
        }
        let copies = if self.rng.random_bool(imp.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            self.seq += 1;
            self.wire.push(Reverse((at, self.seq, to_b, bytes.clone())));
        }
    }

    /// Drives until both ends are closed or `limit` steps pass.
    pub fn drive(&mut self, limit: u64) -> bool {
        let mut buf = vec![0u8; 70_000];
        while self.steps < limit {
            self.steps += 1;
            self.app();
            // Transmit everything now due.
            while let Some(d) = next_datagram(
                &mut self.a,
                self.now,
                &mut buf,
                self.gather,
                &mut self.gathered,
            ) {
                self.send(true, d);
            }
            if let Some(b) = self.b.as_mut() {
                let mut out = Vec::new();
                while let Some(d) =
                    next_datagram(b, self.now, &mut buf, self.gather, &mut self.gathered)
                {
                    out.push(d);
                }
                for d in out {
                    self.send(false, d);
                }
            }
            let a_done = self.a.is_closed();
            let b_done = self.b.as_ref().is_some_and(|b| b.is_closed());
            if a_done && b_done && self.wire.is_empty() {
                return true;
            }
            // Next event.
            let t_wire = self.wire.peek().map(|Reverse((t, ..))| *t);
            let t_a = self.a.poll_timeout();
            let t_b = self.b.as_ref().and_then(|b| b.poll_timeout());
            let Some(next) = [t_wire, t_a, t_b].into_iter().flatten().min() else {
                return a_done && b_done;
            };
            self.now = self.now.max(next);
            while self
                .wire
                .peek()
                .is_some_and(|Reverse((t, ..))| *t <= self.now)
            {
                let Some(Reverse((_, _, to_b, bytes))) = self.wire.pop() else {
                    break;
                };
                if to_b {
                    self.deliver_to_b(&bytes);
                } else {
                    self.a.handle_datagram(self.now, &bytes);
                }
            }
            if self.a.poll_timeout().is_some_and(|t| t <= self.now) {
                self.a.handle_timeout(self.now);
            }
            if let Some(b) = self.b.as_mut() {
                if b.poll_timeout().is_some_and(|t| t <= self.now) {
                    b.handle_timeout(self.now);
                }
            }
        }
        false
    }

    fn deliver_to_b(&mut self, bytes: &[u8]) {
        if let Some(b) = self.b.as_mut() {
            b.handle_datagram(self.now, bytes);
            return;
        }
        // No connection yet: only an OPEN creates one.
        if let Ok(p) = netblt_wire::Packet::parse(bytes) {
            if let netblt_wire::Repr::Open(o) = p.repr {
                if let Ok(c) = Connection::accept(
                    self.b_config.clone(),
                    &o,
                    7000,
                    p.local_port,
                    b"srv".to_vec(),
                    self.now,
                ) {
                    self.b = Some(c);
                }
            }
        }
    }

    fn app(&mut self) {
        // Events.
        while let Some(e) = self.a.poll_event() {
            self.on_event(true, e);
        }
        if self.b.is_some() {
            while let Some(e) = self.b.as_mut().and_then(|b| b.poll_event()) {
                self.on_event(false, e);
            }
        }
        // Feed the sender.
        let len = self.to_send.len();
        loop {
            let off = self.send_off;
            if off > len {
                break;
            }
            let data = std::mem::take(&mut self.to_send);
            let pushed = {
                let Some(s) = self.sender_mut() else {
                    self.to_send = data;
                    break;
                };
                if !s.wants_buffer() {
                    None
                } else {
                    let bsz = s.params().buffer_size as usize;
                    let end = (off + bsz).min(len);
                    let last = end == len;
                    s.push_buffer(data[off..end].to_vec(), last).unwrap();
                    Some(if last { len + 1 } else { end })
                }
            };
            self.to_send = data;
            match pushed {
                Some(n) => self.send_off = n,
                None => break,
            }
        }
    }

    fn on_event(&mut self, at_a: bool, e: Event) {
        let log = format!("{:?}", short(&e));
        if let Event::BufferReceived { data, .. } = e {
            self.received.extend_from_slice(&data);
            if self.received.len() == self.sent_data.len() {
                self.finished_at.get_or_insert(self.now);
            }
            if self.recycle {
                let receiver = if at_a {
                    Some(&mut self.a)
                } else {
                    self.b.as_mut()
                };
                if let Some(r) = receiver {
                    r.recycle(data);
                }
            }
        }
        if at_a {
            self.events_a.push(log);
        } else {
            self.events_b.push(log);
        }
    }
}

fn short(e: &Event) -> String {
    match e {
        Event::BufferReceived { number, data, last } => {
            format!("Received({number}, {} bytes, last={last})", data.len())
        }
        Event::BufferAcked { number, .. } => format!("Acked({number})"),
        Event::Connected { params, .. } => format!(
            "Connected(psz={}, bsz={})",
            params.packet_size, params.buffer_size
        ),
        other => format!("{other:?}"),
    }
}
