//! The dumbbell's event loop: N flows, each a sender and a receiver, every
//! forward packet crossing one shared `netblt_link::Link`.

use std::collections::HashMap;
use std::time::Duration;

use netblt_link::{DropReason, Link, LinkConfig};
use netblt_proto::{Config, Connection, Instant, Mode, RateLimits};
use netblt_wire::PacketType;

use super::report::{BottleneckReport, DumbbellReport, FlowDrops, FlowReport};
use super::scenario::{ms, FlowKind, Scenario, ScenarioError};
use crate::event::{EventQueue, Pool};
use crate::metrics::Histogram;
use crate::netblt_nodes::{LimitSchedule, ReceiverNode, SenderNode};
use crate::tcp::{Recovery, Segment, TcpReceiver, TcpSender};
use crate::Node;

/// IPv4 + UDP headers around a NETBLT datagram.
const UDP_IP_OVERHEAD: usize = 28;
/// Most datagrams one host may emit at one instant (a guard: a node that
/// never stops answering `poll_transmit` cannot hang the run).
const MAX_BURST: usize = 100_000;
/// NETBLT ports of every flow (each flow has its own hosts).
const PORT_A: u16 = 4000;
const PORT_B: u16 = 30;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

enum Payload {
    Bytes(Vec<u8>),
    Tcp(Segment),
}

struct Pkt {
    payload: Payload,
    wire: usize,
    /// A data packet (NETBLT DATA/LDATA or a TCP segment with payload):
    /// counted in the per-flow delay and drop statistics.
    data: bool,
}

enum Ev {
    Start(usize),
    Stop(usize),
    Sample,
    /// A host's timer (end = 2 * flow + side); stale unless `generation`
    /// is the host's current one.
    Timer {
        end: usize,
        generation: u64,
    },
    /// A packet reaches the bottleneck router (end of the access link).
    AtBottleneck {
        flow: usize,
        pkt: Pkt,
    },
    /// A packet reaches a host.
    Arrive {
        end: usize,
        pkt: Pkt,
    },
}

enum Agent {
    Idle,
    TcpSend(Box<TcpSender>),
    TcpRecv(Box<TcpReceiver>),
    NetSend(Box<SenderNode>),
    NetRecv(Box<ReceiverNode>),
}

impl Agent {
    fn handle(&mut self, now: Instant, pkt: &Payload) {
        match (self, pkt) {
            (Agent::TcpSend(s), Payload::Tcp(seg)) => s.handle_segment(now, seg),
            (Agent::TcpRecv(r), Payload::Tcp(seg)) => r.handle_segment(now, seg),
            (Agent::NetSend(n), Payload::Bytes(b)) => n.handle_datagram(now, b),
            (Agent::NetRecv(n), Payload::Bytes(b)) => n.handle_datagram(now, b),
            _ => {}
        }
    }

    fn timeout(&mut self, now: Instant) {
        match self {
            Agent::TcpSend(s) => s.handle_timeout(now),
            Agent::TcpRecv(r) => r.handle_timeout(now),
            Agent::NetSend(n) => {
                if n.poll_timeout().is_some_and(|t| t <= now) {
                    n.handle_timeout(now);
                }
            }
            Agent::NetRecv(n) => {
                if n.poll_timeout().is_some_and(|t| t <= now) {
                    n.handle_timeout(now);
                }
            }
            Agent::Idle => {}
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Agent::TcpSend(s) => s.poll_timeout(),
            Agent::TcpRecv(r) => r.poll_timeout(),
            Agent::NetSend(n) => n.poll_timeout(),
            Agent::NetRecv(n) => n.poll_timeout(),
            Agent::Idle => None,
        }
    }

    fn poll_transmit(&mut self, now: Instant, pool: &mut Pool, ts: bool) -> Option<Pkt> {
        match self {
            Agent::TcpSend(s) => s.poll_transmit(now).map(|seg| Pkt {
                wire: seg.wire_len(ts),
                data: seg.len > 0,
                payload: Payload::Tcp(seg),
            }),
            Agent::TcpRecv(r) => r.poll_transmit(now).map(|seg| Pkt {
                wire: seg.wire_len(ts),
                data: false,
                payload: Payload::Tcp(seg),
            }),
            Agent::NetSend(n) => {
                let mut buf = pool.get();
                if n.poll_transmit(now, &mut buf) {
                    // The packet type is the header's fourth byte (RFC 998
                    // §8); only DATA and LDATA count as the flow's data.
                    let data = buf.get(3).is_some_and(|&t| {
                        t == PacketType::Data as u8 || t == PacketType::LData as u8
                    });
                    Some(Pkt {
                        wire: buf.len() + UDP_IP_OVERHEAD,
                        data,
                        payload: Payload::Bytes(buf),
                    })
                } else {
                    pool.put(buf);
                    None
                }
            }
            Agent::NetRecv(n) => {
                let mut buf = pool.get();
                if n.poll_transmit(now, &mut buf) {
                    Some(Pkt {
                        wire: buf.len() + UDP_IP_OVERHEAD,
                        data: false,
                        payload: Payload::Bytes(buf),
                    })
                } else {
                    pool.put(buf);
                    None
                }
            }
            Agent::Idle => None,
        }
    }
}

#[derive(Default)]
struct TimerSlot {
    armed: Option<Instant>,
    generation: u64,
}

struct Flow {
    name: String,
    kind: FlowKind,
    base_rtt: Duration,
    start: Instant,
    stop: Option<Instant>,
    size: Option<u64>,
    access: Link,
    reverse: Link,
    agents: [Agent; 2],
    timers: [TimerSlot; 2],
    active: bool,
    ended_at: Option<Instant>,
    netblt_cfg: Option<(Config, Config)>,
    packet_size: u64,
    /// The application's rate limits over time (NETBLT senders), handed
    /// to the sender host when the flow starts.
    limits: Vec<(Instant, RateLimits)>,
    // Measurements.
    delivered_series: Vec<u64>,
    cwnd_series: Vec<u64>,
    last_delivered: u64,
    data_sent: u64,
    /// When each data packet left the sender, s (only when recording).
    send_times: Option<Vec<f64>>,
    drops: FlowDrops,
    qdelay_us: Histogram,
    rtt_us: Histogram,
}

impl Flow {
    /// Bytes delivered so far, counted per DATA packet received (at
    /// [`packet_data`] bytes each) so that the series follows arrivals, not
    /// whole buffers.
    fn delivered(&self) -> u64 {
        match &self.agents[1] {
            Agent::TcpRecv(r) => r.delivered(),
            Agent::NetRecv(n) => {
                let s = n.conn.as_ref().map(|c| c.stats()).unwrap_or_default();
                let got = s.data_packets_received * self.packet_size;
                got.min(self.size.unwrap_or(u64::MAX)).max(n.received)
            }
            _ => self.last_delivered,
        }
    }

    fn is_tcp(&self) -> bool {
        matches!(self.kind, FlowKind::Tcp(_))
    }

    fn timestamps(&self) -> bool {
        matches!(&self.kind, FlowKind::Tcp(c) if c.timestamps)
    }

    fn finished(&self) -> bool {
        match &self.agents[0] {
            Agent::TcpSend(s) => s.is_finished(),
            Agent::NetSend(n) => n.conn.is_closed(),
            _ => false,
        }
    }
}

/// A dumbbell ready to run: built from a [`Scenario`], optionally given
/// caller-made NETBLT configurations, then [`run`](Self::run).
pub struct Dumbbell {
    scenario: Scenario,
    flows: Vec<Flow>,
    bottleneck: Link,
    bn_cfg: LinkConfig,
    queue: EventQueue<Ev>,
    pool: Pool,
    now: Instant,
    end: Instant,
    interval: Duration,
    events: u64,
    // Bottleneck measurements.
    bn_queue_bytes: Histogram,
    bn_qdelay_us: Histogram,
    bn_delivered_series: Vec<u64>,
    bn_last_delivered: u64,
    bn_queue_series: Vec<u64>,
}

/// SplitMix64: independent seeds for each link and flow.
fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn instant(d: Duration) -> Instant {
    Instant::ZERO + d
}

impl Dumbbell {
    /// Checks the scenario and builds every link and flow.
    pub fn new(scenario: &Scenario) -> Result<Dumbbell, ScenarioError> {
        scenario.validate()?;
        let bn_cfg = scenario.bottleneck_link()?;
        let bottleneck = Link::new(bn_cfg.clone(), derive_seed(scenario.seed, 1))?;
        let bn_delay = bn_cfg.delay;
        let mut flows = Vec::new();
        for (i, f) in scenario.flows.iter().enumerate() {
            let rtt = ms("rtt_ms", f.rtt_ms)?;
            let access = LinkConfig::with_rate_delay(scenario.access_rate_bps, rtt / 2 - bn_delay);
            let reverse = LinkConfig {
                loss: scenario.reverse_loss.clone(),
                ..LinkConfig::with_rate_delay(scenario.access_rate_bps, rtt / 2)
            };
            let stream = 16 + 4 * i as u64;
            let (netblt_cfg, packet_size) = match &f.kind {
                FlowKind::Netblt(n) => {
                    (Some(n.configs()), packet_data(n.packet_size, n.buffer_size))
                }
                FlowKind::Tcp(c) => (None, u64::from(c.mss)),
            };
            flows.push(Flow {
                name: if f.name.is_empty() {
                    format!("flow{i}")
                } else {
                    f.name.clone()
                },
                kind: f.kind.clone(),
                base_rtt: rtt,
                start: instant(Duration::from_secs_f64(f.start_s)),
                stop: f.stop_s.map(|s| instant(Duration::from_secs_f64(s))),
                size: f.size_bytes,
                access: Link::new(access, derive_seed(scenario.seed, stream))?,
                reverse: Link::new(reverse, derive_seed(scenario.seed, stream + 1))?,
                agents: [Agent::Idle, Agent::Idle],
                timers: [TimerSlot::default(), TimerSlot::default()],
                active: false,
                ended_at: None,
                netblt_cfg,
                packet_size,
                limits: f
                    .limits
                    .iter()
                    .map(|l| {
                        let at = instant(Duration::from_secs_f64(l.at_s));
                        let limits = RateLimits {
                            min_bps: l.min_bps,
                            max_bps: l.max_bps,
                        };
                        (at, limits)
                    })
                    .collect(),
                delivered_series: Vec::new(),
                cwnd_series: Vec::new(),
                last_delivered: 0,
                data_sent: 0,
                send_times: None,
                drops: FlowDrops::default(),
                qdelay_us: Histogram::default(),
                rtt_us: Histogram::default(),
            });
        }
        let interval = ms("sample_interval_ms", scenario.sample_interval_ms)?;
        let end = instant(Duration::from_secs_f64(scenario.duration_s));
        let mut queue = EventQueue::default();
        for (i, f) in flows.iter().enumerate() {
            queue.push(f.start, Ev::Start(i));
            if let Some(stop) = f.stop {
                queue.push(stop, Ev::Stop(i));
            }
        }
        queue.push(instant(interval), Ev::Sample);
        Ok(Dumbbell {
            scenario: scenario.clone(),
            flows,
            bottleneck,
            bn_cfg,
            queue,
            pool: Pool::default(),
            now: Instant::ZERO,
            end,
            interval,
            events: 0,
            bn_queue_bytes: Histogram::default(),
            bn_qdelay_us: Histogram::default(),
            bn_delivered_series: Vec::new(),
            bn_last_delivered: 0,
            bn_queue_series: Vec::new(),
        })
    }

    /// Replaces the NETBLT configurations of flow `flow` (sender = active
    /// end, receiver = passive end), e.g. with a rate controller's. Returns
    /// `false` if that flow is not a NETBLT flow.
    pub fn set_netblt_configs(&mut self, flow: usize, sender: Config, receiver: Config) -> bool {
        match self.flows.get_mut(flow) {
            Some(f) if matches!(f.kind, FlowKind::Netblt(_)) => {
                f.packet_size = packet_data(sender.params.packet_size, sender.params.buffer_size);
                f.netblt_cfg = Some((sender, receiver));
                true
            }
            _ => false,
        }
    }

    /// Replaces the shared bottleneck by a link of any shape (e.g. a
    /// profile's slotted satellite channel). Its delay should be the
    /// scenario's `bottleneck.delay_ms`, from which the access links were
    /// sized. Call before [`run`](Self::run).
    pub fn set_bottleneck_link(&mut self, cfg: LinkConfig) -> Result<(), netblt_link::ConfigError> {
        self.bottleneck = Link::new(cfg.clone(), derive_seed(self.scenario.seed, 1))?;
        self.bn_cfg = cfg;
        Ok(())
    }

    /// Records when every data packet leaves its sender
    /// ([`FlowReport::data_send_times_s`]), e.g. to measure burst timing.
    pub fn record_send_times(&mut self) {
        for f in &mut self.flows {
            f.send_times = Some(Vec::new());
        }
    }

    /// Runs to the scenario's duration and reports.
    pub fn run(mut self) -> DumbbellReport {
        while let Some((at, ev)) = self.queue.pop() {
            if at > self.end {
                break;
            }
            self.now = self.now.max(at);
            self.events += 1;
            self.step(ev);
        }
        self.now = self.end;
        self.report()
    }

    fn step(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::Start(i) => self.start(i),
            Ev::Stop(i) => {
                if let Some(f) = self.flows.get_mut(i) {
                    if f.active {
                        f.active = false;
                        f.ended_at.get_or_insert(now);
                    }
                }
            }
            Ev::Sample => self.sample(),
            Ev::Timer { end, generation } => {
                let (i, side) = (end / 2, end % 2);
                let Some(f) = self.flows.get_mut(i) else {
                    return;
                };
                if !f.active || f.timers[side].generation != generation {
                    return;
                }
                f.timers[side].armed = None;
                f.agents[side].timeout(now);
                self.service(end);
            }
            Ev::AtBottleneck { flow, pkt } => self.at_bottleneck(flow, pkt),
            Ev::Arrive { end, pkt } => {
                let i = end / 2;
                let Some(f) = self.flows.get_mut(i) else {
                    return;
                };
                if f.active {
                    f.agents[end % 2].handle(now, &pkt.payload);
                }
                let alive = f.active;
                if let Payload::Bytes(b) = pkt.payload {
                    self.pool.put(b);
                }
                if alive {
                    self.service(end);
                    if end % 2 == 1 {
                        // A receiver's reply can change what the sender may
                        // do only when it arrives; nothing to do here.
                    }
                }
            }
        }
    }

    fn start(&mut self, i: usize) {
        let now = self.now;
        let seed = self.scenario.seed;
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        match &f.kind {
            FlowKind::Tcp(cfg) => {
                f.agents = [
                    Agent::TcpSend(Box::new(TcpSender::new(*cfg, f.size))),
                    Agent::TcpRecv(Box::new(TcpReceiver::new(*cfg))),
                ];
            }
            FlowKind::Netblt(_) => {
                let Some((snd, rcv)) = f.netblt_cfg.clone() else {
                    return;
                };
                // An endless flow is a transfer larger than the run can move.
                let size = f.size.unwrap_or(1 << 50);
                let stream = derive_seed(seed, 1000 + i as u64);
                let uid = (derive_seed(seed, 2000 + i as u64) as u32) | 1;
                let Ok(conn) = Connection::connect(
                    snd,
                    Mode::Write,
                    uid,
                    PORT_A,
                    PORT_B,
                    f.size,
                    Vec::new(),
                    now,
                ) else {
                    return;
                };
                let mut node = SenderNode::new(conn, stream, size);
                // The host applies them on its own timer (those already
                // due, from its first packet).
                node.limits = LimitSchedule::new(f.limits.iter().copied());
                node.limits.apply_due(now, &mut node.conn);
                f.agents = [
                    Agent::NetSend(Box::new(node)),
                    Agent::NetRecv(Box::new(ReceiverNode::new(rcv, PORT_B, stream))),
                ];
            }
        }
        f.active = true;
        self.service(2 * i);
        self.service(2 * i + 1);
    }

    /// Lets host `end` send all it wants now, then re-arms its timer.
    fn service(&mut self, end: usize) {
        let now = self.now;
        let (i, side) = (end / 2, end % 2);
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        let ts = f.timestamps();
        for _ in 0..MAX_BURST {
            let Some(pkt) = f.agents[side].poll_transmit(now, &mut self.pool, ts) else {
                break;
            };
            if side == 0 {
                if pkt.data {
                    f.data_sent += 1;
                    if let Some(v) = f.send_times.as_mut() {
                        v.push(now.as_secs_f64());
                    }
                }
                let fate = f.access.offer(now.since_zero(), pkt.wire);
                match fate.deliveries[0] {
                    Some(d) => self
                        .queue
                        .push(instant(d.at), Ev::AtBottleneck { flow: i, pkt }),
                    None => recycle(&mut self.pool, pkt),
                }
            } else {
                let fate = f.reverse.offer(now.since_zero(), pkt.wire);
                match fate.deliveries[0] {
                    Some(d) => self
                        .queue
                        .push(instant(d.at), Ev::Arrive { end: 2 * i, pkt }),
                    None => recycle(&mut self.pool, pkt),
                }
            }
        }
        if f.ended_at.is_none() && f.finished() {
            f.ended_at = Some(now);
        }
        // Re-arm the timer if the host's deadline changed.
        let want = f.agents[side].poll_timeout();
        let slot = &mut f.timers[side];
        if want != slot.armed {
            slot.armed = want;
            slot.generation += 1;
            if let Some(t) = want {
                self.queue.push(
                    t.max(now),
                    Ev::Timer {
                        end,
                        generation: slot.generation,
                    },
                );
            }
        }
    }

    fn at_bottleneck(&mut self, i: usize, pkt: Pkt) {
        let now = self.now;
        let backlog = self.bottleneck.backlog_bytes(now.since_zero());
        self.bn_queue_bytes.record(backlog as u64);
        let fate = self.bottleneck.offer(now.since_zero(), pkt.wire);
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        if let Some(reason) = fate.drop {
            if pkt.data {
                match reason {
                    DropReason::Queue | DropReason::Mtu => f.drops.queue += 1,
                    DropReason::Aqm => f.drops.aqm += 1,
                    DropReason::Loss | DropReason::BitError => f.drops.loss += 1,
                }
            }
            recycle(&mut self.pool, pkt);
            return;
        }
        let qdelay = nanos(fate.tx_start.saturating_sub(now.since_zero()));
        self.bn_qdelay_us.record(qdelay / 1000);
        if pkt.data {
            f.qdelay_us.record(qdelay / 1000);
            if !f.is_tcp() {
                f.rtt_us.record((nanos(f.base_rtt) + qdelay) / 1000);
            }
        }
        match fate.deliveries[0] {
            Some(d) => self.queue.push(
                instant(d.at),
                Ev::Arrive {
                    end: 2 * i + 1,
                    pkt,
                },
            ),
            None => recycle(&mut self.pool, pkt),
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        for f in &mut self.flows {
            let d = f.delivered();
            f.delivered_series.push(d.saturating_sub(f.last_delivered));
            f.last_delivered = d;
            if let Agent::TcpSend(s) = &f.agents[0] {
                f.cwnd_series.push(if f.active { s.cwnd() } else { 0 });
            } else if f.is_tcp() {
                f.cwnd_series.push(0);
            }
        }
        let delivered = self.bottleneck.stats().delivered_bytes;
        self.bn_delivered_series
            .push(delivered.saturating_sub(self.bn_last_delivered));
        self.bn_last_delivered = delivered;
        self.bn_queue_series
            .push(self.bottleneck.backlog_bytes(now.since_zero()) as u64);
        let next = now + self.interval;
        if next <= self.end {
            self.queue.push(next, Ev::Sample);
        }
    }

    fn report(mut self) -> DumbbellReport {
        let iv = self.interval.as_secs_f64();
        let end_s = self.end.as_secs_f64();
        let mut flows = Vec::new();
        for f in &mut self.flows {
            let delivered = f.delivered();
            let start_s = f.start.as_secs_f64().min(end_s);
            let stop_s = f
                .ended_at
                .map_or(end_s, |t| t.as_secs_f64())
                .min(f.stop.map_or(end_s, |t| t.as_secs_f64()))
                .min(end_s);
            let active = (stop_s - start_s).max(0.0);
            let (kind, tcp, retx, rtt, completed, verified, error) = match &f.agents[0] {
                Agent::TcpSend(s) => {
                    let FlowKind::Tcp(c) = &f.kind else {
                        unreachable!("a TCP sender runs only in a TCP flow")
                    };
                    let kind = format!(
                        "tcp-{}-{}",
                        match c.cc {
                            crate::tcp::CongestionControl::Reno => "reno",
                            crate::tcp::CongestionControl::Cubic => "cubic",
                            crate::tcp::CongestionControl::Jacobson88 => "jacobson88",
                        },
                        match c.recovery {
                            Recovery::NewReno => "newreno",
                            Recovery::Sack => "sack",
                            Recovery::Tahoe if c.nak => "tahoe-nak",
                            Recovery::Tahoe => "tahoe",
                        }
                    );
                    let st = s.stats().clone();
                    (
                        kind,
                        Some(st.clone()),
                        st.retransmissions,
                        s.rtt_samples().summary(1e-3),
                        st.completed_at_s,
                        None,
                        None,
                    )
                }
                Agent::NetSend(n) => {
                    let stats = n.conn.stats();
                    let recv = match &f.agents[1] {
                        Agent::NetRecv(r) => Some(r),
                        _ => None,
                    };
                    let ok = n.conn.result() == Some(&Ok(()));
                    let wrong = recv.is_some_and(|r| r.wrong_delivery);
                    let verified = if ok {
                        !wrong
                            && recv.is_some_and(|r| {
                                r.received == f.size.unwrap_or(0)
                                    && r.hash.finalize() == n.hash.finalize()
                            })
                    } else {
                        !wrong
                    };
                    let error = n
                        .error
                        .as_ref()
                        .or(recv.and_then(|r| r.error.as_ref()))
                        .map(|e| e.to_string());
                    (
                        "netblt".to_string(),
                        None,
                        stats.data_packets_retransmitted,
                        f.rtt_us.summary(1e-3),
                        stats.completed_at.filter(|_| ok).map(|t| t.as_secs_f64()),
                        Some(verified),
                        error,
                    )
                }
                _ => (
                    if f.is_tcp() { "tcp" } else { "netblt" }.to_string(),
                    None,
                    0,
                    None,
                    None,
                    None,
                    None,
                ),
            };
            flows.push(FlowReport {
                name: f.name.clone(),
                kind,
                base_rtt_ms: f.base_rtt.as_secs_f64() * 1e3,
                start_s,
                end_s: stop_s.max(start_s),
                delivered_bytes: delivered,
                goodput_bps: if active > 0.0 {
                    delivered as f64 * 8.0 / active
                } else {
                    0.0
                },
                goodput_series_bps: f
                    .delivered_series
                    .iter()
                    .map(|&b| b as f64 * 8.0 / iv)
                    .collect(),
                cwnd_series: std::mem::take(&mut f.cwnd_series),
                data_packets_sent: f.data_sent,
                retransmissions: retx,
                bottleneck_drops: f.drops,
                queue_delay_ms: f.qdelay_us.summary(1e-3),
                rtt_ms: rtt,
                tcp,
                completed_at_s: completed,
                verified,
                error,
                data_send_times_s: f.send_times.take().unwrap_or_default(),
            });
        }
        let capacity_series: Vec<f64> = (0..self.bn_delivered_series.len())
            .map(|k| capacity_bits(&self.bn_cfg, k as f64 * iv, (k + 1) as f64 * iv))
            .collect();
        let utilization_series = self
            .bn_delivered_series
            .iter()
            .zip(&capacity_series)
            .map(|(&b, &c)| if c > 0.0 { b as f64 * 8.0 / c } else { 0.0 })
            .collect();
        let stats = *self.bottleneck.stats();
        let total_cap = capacity_bits(&self.bn_cfg, 0.0, end_s);
        // Fairness over the second half of the time all flows ran together.
        let together_from = flows.iter().map(|f| f.start_s).fold(0.0, f64::max);
        let together_to = flows.iter().map(|f| f.end_s).fold(end_s, f64::min);
        let mut report = DumbbellReport {
            name: self.scenario.name.clone(),
            seed: self.scenario.seed,
            duration_s: end_s,
            sample_interval_s: iv,
            flows,
            bottleneck: BottleneckReport {
                utilization: if total_cap > 0.0 {
                    stats.delivered_bytes as f64 * 8.0 / total_cap
                } else {
                    0.0
                },
                delivered_packets: stats.delivered,
                delivered_bytes: stats.delivered_bytes,
                drops: stats.drops,
                queue_bytes: self.bn_queue_bytes.summary(1.0),
                queue_delay_ms: self.bn_qdelay_us.summary(1e-3),
                utilization_series,
                queue_series_bytes: std::mem::take(&mut self.bn_queue_series),
            },
            fairness: None,
            events: self.events,
        };
        if report.flows.len() > 1 && together_to - together_from > 2.0 * iv {
            let mid = (together_from + together_to) / 2.0;
            report.fairness = report.jain(&[], mid, together_to);
        }
        report
    }
}

fn recycle(pool: &mut Pool, pkt: Pkt) {
    if let Payload::Bytes(b) = pkt.payload {
        pool.put(b);
    }
}

/// Bits the bottleneck can carry in `[t0, t1)` seconds: its rate with the
/// steps, or a trace's mean rate.
fn capacity_bits(cfg: &LinkConfig, t0: f64, t1: f64) -> f64 {
    if let Some(trace) = &cfg.trace {
        return trace.mean_rate_bps() * (t1 - t0).max(0.0);
    }
    if let Some(fr) = &cfg.frames {
        // A slotted channel: bytes_per_frame every interval.
        let iv = fr.interval.as_secs_f64();
        return if iv > 0.0 {
            fr.bytes_per_frame as f64 * 8.0 / iv * (t1 - t0).max(0.0)
        } else {
            0.0
        };
    }
    let Some(mut rate) = cfg.rate_bps else {
        return 0.0;
    };
    let mut bits = 0.0;
    let mut t = t0;
    for step in &cfg.rate_steps {
        let at = step.at.as_secs_f64();
        if at >= t1 {
            break;
        }
        if at > t {
            bits += rate as f64 * (at - t);
            t = at;
        }
        rate = step.rate_bps;
    }
    bits + rate as f64 * (t1 - t).max(0.0)
}

/// Runs a scenario with the NETBLT configurations its specs give.
pub fn run_dumbbell(scenario: &Scenario) -> Result<DumbbellReport, ScenarioError> {
    Ok(Dumbbell::new(scenario)?.run())
}

/// Runs a scenario with caller-made NETBLT configurations for some flows
/// (flow index -> (sender, receiver)).
pub fn run_dumbbell_with(
    scenario: &Scenario,
    netblt: HashMap<usize, (Config, Config)>,
) -> Result<DumbbellReport, ScenarioError> {
    let mut d = Dumbbell::new(scenario)?;
    for (i, (s, r)) in netblt {
        if !d.set_netblt_configs(i, s, r) {
            return Err(ScenarioError::Invalid(format!(
                "flow {i} is not a NETBLT flow"
            )));
        }
    }
    Ok(d.run())
}

/// The mean data bytes of the packets a whole buffer is cut into: the
/// packet size, unless the buffer is smaller or not a multiple of it (its
/// last packet is short). Counted at the packet size, buffers of 500 bytes
/// under 1400-byte packets read 46 Mb/s delivered on a 20 Mb/s path (R69).
fn packet_data(packet_size: u16, buffer_size: u32) -> u64 {
    let psz = u64::from(packet_size.max(1));
    let bsz = u64::from(buffer_size.max(1));
    bsz.div_ceil(bsz.div_ceil(psz)).min(psz)
}
