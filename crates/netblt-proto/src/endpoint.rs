//! The passive end's demultiplexer.
//!
//! RFC 998 §5.1: "The active end specifies a passive client through a
//! client-specific 'well-known' 16 bit port number on which the passive end
//! listens. The active end identifies itself through a 32 bit Internet address
//! and a unique 16 bit port number." An [`Endpoint`] listens on one NETBLT
//! port and keys connections by (peer address, peer NETBLT port): "there can
//! only be one connection between any two ports". Over UDP the peer address
//! includes the UDP port.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use netblt_wire::{Mode, OpenRepr, Packet, Repr};

use crate::config::{Config, ParamError, TransferParams};
use crate::connection::{Connection, Gathered, Payload};
use crate::time::Instant;

/// Names a connection inside an [`Endpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionHandle(pub usize);

/// An OPEN from a peer with no connection yet: accept or refuse it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The peer's address.
    pub remote: SocketAddr,
    /// The peer's NETBLT port.
    pub remote_port: u16,
    /// The OPEN's connection unique ID.
    pub uid: u32,
    /// The active end's offer (packet size is the data segment, PSZ).
    pub offer: TransferParams,
    /// From the active end's view: `Write` means the peer sends data to us.
    pub mode: Mode,
    /// The active end offered the FEEDBACK extension (the F flag).
    pub rate_feedback: bool,
    /// The O flag: the active end's receiver offers its own burst values in
    /// OKs (R31).
    pub receiver_offers: bool,
    /// Transfer size announced in OPEN (0 = not given).
    pub transfer_size: u32,
    /// The peer's death timer, seconds.
    pub death_timer_s: u16,
    /// The peer's client string.
    pub client: Vec<u8>,
    /// When it arrived (a refusal is remembered from then, R32).
    pub at: Instant,
    data_packet_size: u16,
    /// The NETBLT port the OPEN named as ours: the one the connection
    /// answers as (see [`Endpoint::answer_any_port`]).
    port: u16,
    /// The P flag and the OPEN's padded length (R58).
    path_probe: bool,
    padded_len: u16,
}

/// What [`Endpoint::handle`] did with a datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatagramEvent {
    /// A new OPEN: call [`Endpoint::accept`] or [`Endpoint::refuse`].
    NewConnection(Incoming),
    /// Delivered to this connection.
    Routed(ConnectionHandle),
}

/// Counters of datagrams the endpoint itself dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointStats {
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// Packets for no connection that were not an OPEN.
    pub stray: u64,
    /// OPENs refused (REFUSED sent).
    pub refused: u64,
    /// OPENs with a second UID on a port pair in use (ABORT sent).
    pub rejected_uid: u64,
    /// Connections moved to a new peer address ([`Endpoint::migrate`]).
    pub migrated: u64,
    /// Repeats of a refused OPEN, answered with the same REFUSED.
    pub refused_repeats: u64,
}

/// Listens on one NETBLT port and serves many peers at once.
pub struct Endpoint {
    config: Config,
    local_port: u16,
    /// Take packets for any NETBLT port ([`Endpoint::answer_any_port`]).
    any_port: bool,
    conns: Vec<Option<(SocketAddr, Connection)>>,
    index: HashMap<(SocketAddr, u16), usize>,
    queued: VecDeque<(SocketAddr, Vec<u8>)>,
    next_poll: usize,
    stats: EndpointStats,
    /// The last (peer, port) looked up and its slot: consecutive datagrams
    /// almost always belong to the same transfer, and this skips hashing.
    last: Option<((SocketAddr, u16), usize)>,
    /// OPENs refused lately (peer, port, UID) and the reason: a repeat of
    /// one (a redundant copy, R32, or a retransmission after a lost
    /// REFUSED) gets the same REFUSED without asking the caller again.
    /// At most [`REFUSED_MEMORY`] entries, each for [`REFUSED_FOR`].
    refused_recent: VecDeque<RefusedOpen>,
}

/// A refused OPEN: (peer, port, UID), when, and the reason given.
type RefusedOpen = ((SocketAddr, u16, u32), Instant, Vec<u8>);

/// How many refused OPENs are remembered.
const REFUSED_MEMORY: usize = 64;
/// For how long: longer than the active end's OPEN retries take (27 s).
const REFUSED_FOR: crate::Duration = crate::Duration::from_secs(30);

impl Endpoint {
    /// An endpoint on NETBLT port `local_port`, accepting with `config`.
    pub fn new(config: Config, local_port: u16) -> Self {
        Endpoint {
            config,
            local_port,
            any_port: false,
            conns: Vec::new(),
            index: HashMap::new(),
            queued: VecDeque::new(),
            next_poll: 0,
            stats: EndpointStats::default(),
            last: None,
            refused_recent: VecDeque::new(),
        }
    }

    /// Takes packets for any NETBLT port, and answers each connection as
    /// the port its OPEN named. Over UDP the socket's port has already
    /// chosen this endpoint, and the active end names the port it sent to
    /// (RFC 998 §5.1: it "specifies a passive client through a
    /// client-specific 'well-known' 16 bit port number"); behind a port
    /// translation (a NAT's port forward, a container's published port:
    /// 9000 outside, 2998 inside) that is not ours, and every packet was
    /// dropped as stray: the sender saw "no answer after 8 OPEN packets".
    /// Not over raw IP, where every NETBLT packet to the host reaches every
    /// endpoint and the port is what tells them apart.
    pub fn answer_any_port(mut self) -> Self {
        self.any_port = true;
        self
    }

    /// Our NETBLT port.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    /// Counters of datagrams that reached no connection.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// The configuration new connections get unless `accept` says otherwise.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Handles one datagram from `remote`. Never panics; junk is counted.
    pub fn handle(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        datagram: &[u8],
    ) -> Option<DatagramEvent> {
        let packet = match Packet::parse(datagram) {
            Ok(p) => p,
            Err(_) => {
                self.stats.malformed += 1;
                return None;
            }
        };
        if !self.any_port && packet.foreign_port != self.local_port {
            self.stats.stray += 1;
            return None;
        }
        // The port this peer addressed: ours, or (answering any port) the
        // one its packets name.
        let ours = packet.foreign_port;
        let key = (remote, packet.local_port);
        let slot = match self.last {
            Some((k, i)) if k == key => Some(i),
            _ => self.index.get(&key).copied(),
        };
        if let Some(i) = slot {
            self.last = Some((key, i));
            if let Some(Some((_, conn))) = self.conns.get_mut(i) {
                let reopen = matches!(&packet.repr, Repr::Open(o) if o.uid != conn.uid());
                if !reopen {
                    conn.count_received(datagram.len());
                    conn.handle_packet(now, &packet);
                    return Some(DatagramEvent::Routed(ConnectionHandle(i)));
                }
                if !conn.is_closed() {
                    // RFC 998 §5.1: a non-matching unique ID "is rejected by
                    // sending an ABORT message" (decision Z20: the existing
                    // connection carries on).
                    self.stats.rejected_uid += 1;
                    self.queue(
                        (ours, remote, packet.local_port),
                        Repr::Abort {
                            reason: b"connection already open on this port pair",
                        },
                    );
                    return None;
                }
                // The old connection is over: a fresh OPEN starts anew.
            }
        }
        if let Repr::Open(o) = &packet.repr {
            let key = (remote, packet.local_port, o.uid);
            self.refused_recent
                .retain(|(_, at, _)| now.saturating_duration_since(*at) < REFUSED_FOR);
            if let Some((_, _, reason)) = self.refused_recent.iter().find(|(k, ..)| *k == key) {
                // RFC 998 §5.1: a repeated OPEN is answered as the first was.
                let reason = reason.clone();
                self.stats.refused_repeats += 1;
                self.queue(
                    (ours, remote, packet.local_port),
                    Repr::Refused { reason: &reason },
                );
                return None;
            }
        }
        match packet.repr {
            Repr::Open(o) => Some(DatagramEvent::NewConnection(Incoming {
                remote,
                remote_port: packet.local_port,
                uid: o.uid,
                offer: TransferParams {
                    packet_size: o
                        .data_packet_size
                        .saturating_sub(netblt_wire::DATA_HEADER_LEN as u16),
                    buffer_size: o.buffer_size,
                    burst_size: o.burst_size,
                    burst_interval_ms: o.burst_interval_ms,
                    max_buffers: o.max_outstanding,
                    checksum_data: o.checksum_data,
                },
                mode: o.mode,
                rate_feedback: o.rate_feedback,
                receiver_offers: o.receiver_offers,
                transfer_size: o.transfer_size,
                death_timer_s: o.death_timer_s,
                client: o.client.to_vec(),
                at: now,
                data_packet_size: o.data_packet_size,
                port: ours,
                path_probe: o.path_probe,
                padded_len: o.padded_len,
            })),
            _ => {
                self.stats.stray += 1;
                None
            }
        }
    }

    /// Queues a packet from our port `ours` to the peer's `remote_port` at
    /// `remote`.
    fn queue(&mut self, (ours, remote, remote_port): (u16, SocketAddr, u16), repr: Repr<'_>) {
        let p = Packet {
            local_port: ours,
            foreign_port: remote_port,
            repr,
        };
        let mut buf = vec![0; p.buffer_len()];
        if let Ok(n) = p.emit(&mut buf) {
            buf.truncate(n);
            self.queued.push_back((remote, buf));
        }
    }

    /// Accepts an incoming OPEN with `config` (or the endpoint's) and our
    /// client string; the RESPONSE goes out on the next `poll_transmit`.
    pub fn accept(
        &mut self,
        incoming: Incoming,
        config: Option<Config>,
        client: Vec<u8>,
        now: Instant,
    ) -> Result<ConnectionHandle, ParamError> {
        let open = OpenRepr {
            uid: incoming.uid,
            buffer_size: incoming.offer.buffer_size,
            transfer_size: incoming.transfer_size,
            data_packet_size: incoming.data_packet_size,
            burst_size: incoming.offer.burst_size,
            burst_interval_ms: incoming.offer.burst_interval_ms,
            death_timer_s: incoming.death_timer_s,
            checksum_data: incoming.offer.checksum_data,
            mode: incoming.mode,
            rate_feedback: incoming.rate_feedback,
            receiver_offers: incoming.receiver_offers,
            path_probe: incoming.path_probe,
            padded_len: incoming.padded_len,
            max_outstanding: incoming.offer.max_buffers,
            client: &incoming.client,
        };
        let config = config.unwrap_or_else(|| self.config.clone());
        let conn = Connection::accept(
            config,
            &open,
            incoming.port,
            incoming.remote_port,
            client,
            now,
        )?;
        let key = (incoming.remote, incoming.remote_port);
        let slot = match self.index.get(&key) {
            Some(&i) => i,
            None => match self.conns.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.conns.len() - 1
                }
            },
        };
        self.conns[slot] = Some((incoming.remote, conn));
        self.index.insert(key, slot);
        self.last = None;
        Ok(ConnectionHandle(slot))
    }

    /// Refuses an incoming OPEN with a reason (RFC 998: REFUSED "with a
    /// 'reason for refusal' field").
    pub fn refuse(&mut self, incoming: &Incoming, reason: &str) {
        self.stats.refused += 1;
        let reason: Vec<u8> = reason.bytes().filter(|&b| b != 0).collect();
        if self.refused_recent.len() >= REFUSED_MEMORY {
            self.refused_recent.pop_front();
        }
        self.refused_recent.push_back((
            (incoming.remote, incoming.remote_port, incoming.uid),
            incoming.at,
            reason.clone(),
        ));
        self.queue(
            (incoming.port, incoming.remote, incoming.remote_port),
            Repr::Refused { reason: &reason },
        );
    }

    /// A live connection.
    pub fn connection(&self, h: ConnectionHandle) -> Option<&Connection> {
        self.conns.get(h.0)?.as_ref().map(|(_, c)| c)
    }

    /// A live connection, to drive its application calls.
    pub fn connection_mut(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        self.conns.get_mut(h.0)?.as_mut().map(|(_, c)| c)
    }

    /// A connection's peer address.
    pub fn remote(&self, h: ConnectionHandle) -> Option<SocketAddr> {
        self.conns.get(h.0)?.as_ref().map(|(a, _)| *a)
    }

    /// Moves the connection with (`from`, `remote_port`) to the peer
    /// address `to` (a NAT that rebound the peer's mapping, or a peer that
    /// changed networks): datagrams from `to` reach it, and what it sends
    /// goes there. RFC 998 keys a connection by its port pair, not by the
    /// network address under it; the caller decides when an address change
    /// is genuine (only an authenticated packet may move a connection, see
    /// docs/security.md "Address changes"). Returns the connection moved;
    /// `None` if there is none at `from`, or `to` already has one on that
    /// port.
    pub fn migrate(
        &mut self,
        from: SocketAddr,
        remote_port: u16,
        to: SocketAddr,
    ) -> Option<ConnectionHandle> {
        if from == to || self.index.contains_key(&(to, remote_port)) {
            return None;
        }
        let i = self.index.remove(&(from, remote_port))?;
        self.index.insert((to, remote_port), i);
        if let Some(Some((addr, _))) = self.conns.get_mut(i) {
            *addr = to;
        }
        self.last = None;
        self.stats.migrated += 1;
        Some(ConnectionHandle(i))
    }

    /// Every live connection.
    pub fn handles(&self) -> Vec<ConnectionHandle> {
        (0..self.conns.len())
            .filter(|&i| self.conns[i].is_some())
            .map(ConnectionHandle)
            .collect()
    }

    /// Forgets a connection (after its final events were read).
    pub fn remove(&mut self, h: ConnectionHandle) -> Option<Connection> {
        let (remote, conn) = self.conns.get_mut(h.0)?.take()?;
        self.index.remove(&(remote, conn.remote_port()));
        self.last = None;
        Some(conn)
    }

    /// Next datagram to send and its destination: endpoint replies first,
    /// then the connections in turn, so one busy transfer cannot starve the
    /// others.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        if let Some((to, bytes)) = self.queued.pop_front() {
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            return Some((to, n));
        }
        let n = self.conns.len();
        for k in 0..n {
            let i = (self.next_poll + k) % n;
            if let Some((to, conn)) = self.conns[i].as_mut() {
                if let Some(len) = conn.poll_transmit(now, buf) {
                    self.next_poll = (i + 1) % n;
                    return Some((*to, len));
                }
            }
        }
        None
    }

    /// [`poll_transmit`](Self::poll_transmit) with DATA payloads left in
    /// place, as [`Connection::poll_transmit_gather`]; resolve them with
    /// [`payload`](Self::payload).
    pub fn poll_transmit_gather(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<(SocketAddr, Gathered)> {
        if let Some((to, bytes)) = self.queued.pop_front() {
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            return Some((to, Gathered::whole(n)));
        }
        let n = self.conns.len();
        for k in 0..n {
            let i = (self.next_poll + k) % n;
            if let Some((to, conn)) = self.conns[i].as_mut() {
                if let Some(mut g) = conn.poll_transmit_gather(now, buf) {
                    self.next_poll = (i + 1) % n;
                    if let Some(p) = g.payload.as_mut() {
                        p.conn = i;
                    }
                    return Some((*to, g));
                }
            }
        }
        None
    }

    /// The bytes of a payload from [`poll_transmit_gather`](Self::poll_transmit_gather),
    /// or `None` if its buffer (or connection) is gone.
    pub fn payload(&self, p: &Payload) -> Option<&[u8]> {
        self.conns.get(p.conn)?.as_ref()?.1.payload(p)
    }

    /// The earliest timer of any connection.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.conns
            .iter()
            .flatten()
            .filter_map(|(_, c)| c.poll_timeout())
            .min()
    }

    /// Runs every connection's due timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        for (_, c) in self.conns.iter_mut().flatten() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
    }
}
