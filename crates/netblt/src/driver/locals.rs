//! Which local address each peer called (decision Z26).
//!
//! A listening socket bound to a wildcard address (`[::]`, `0.0.0.0`) receives for every address
//! of the host, and a plain send leaves from the address the kernel's routing picks. On a host
//! with several addresses (a secondary or floating IP, SLAAC and static IPv6 addresses, a VIP)
//! that may not be the one a peer called, and the peer's `connect`ed socket drops every answer:
//! it gave up after eight OPENs. So the passive end notes, per peer, the destination of its
//! datagrams (`RecvMeta::dst_ip`, from `IP_PKTINFO`/`IPV6_PKTINFO`) and sends everything for
//! that peer from it (`Transmit::src_ip`), as quinn and WireGuard do.
//!
//! Hot-path cost: one comparison per datagram each way while the peer and its address stay the
//! same (a one-entry cache on each side); the map is touched only when they change. The map is
//! bounded: a peer is forgotten when its last connection retires, and past [`CAP`] entries those
//! of no live connection (junk, floods from forged sources) are dropped.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

/// Entries kept before the ones of no live connection are pruned.
pub(crate) const CAP: usize = 1024;

/// How far a datagram is trusted to say where its peer called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Authenticated, or plain mode (where nothing is): it may move the peer's address.
    Update,
    /// Not authenticated (encrypted mode: a handshake message answered before any key, or junk):
    /// it may name the address of a peer not yet known, not change a known one, so that a
    /// forged datagram cannot make our answers to a live peer leave from the wrong address.
    IfUnknown,
}

#[derive(Debug, Default)]
pub(crate) struct Locals {
    map: HashMap<SocketAddr, IpAddr>,
    /// The last (peer, address) seen on receive, as the map holds it.
    learnt: Option<(SocketAddr, IpAddr)>,
    /// The last lookup on send.
    looked_up: Option<(SocketAddr, Option<IpAddr>)>,
}

impl Locals {
    /// Notes that `peer` sent a datagram to `dst` (`None`: the socket cannot tell, which changes
    /// nothing). `live` tells a peer with a live connection, for pruning.
    pub(crate) fn learn(
        &mut self,
        peer: SocketAddr,
        dst: Option<IpAddr>,
        trust: Trust,
        live: impl Fn(&SocketAddr) -> bool,
    ) {
        let Some(dst) = dst.filter(is_unicast) else {
            return;
        };
        if self.learnt == Some((peer, dst)) {
            return;
        }
        let held = match self.map.get(&peer) {
            Some(&ip) if ip == dst || trust == Trust::IfUnknown => ip,
            known => {
                if known.is_none() && self.map.len() >= CAP {
                    self.prune(&live);
                    if self.map.len() >= CAP && trust == Trust::IfUnknown {
                        // Full of live peers' entries: the kernel chooses for this one.
                        return;
                    }
                }
                self.map.insert(peer, dst);
                self.looked_up = None;
                dst
            }
        };
        self.learnt = Some((peer, held));
    }

    /// The address to answer `peer` from, if one is known.
    pub(crate) fn get(&mut self, peer: SocketAddr) -> Option<IpAddr> {
        if self.map.is_empty() {
            return None;
        }
        match self.looked_up {
            Some((p, ip)) if p == peer => ip,
            _ => {
                let ip = self.map.get(&peer).copied();
                self.looked_up = Some((peer, ip));
                ip
            }
        }
    }

    /// Forgets `peer` (its last connection retired).
    pub(crate) fn forget(&mut self, peer: SocketAddr) {
        if self.map.remove(&peer).is_some() {
            self.learnt = None;
            self.looked_up = None;
        }
    }

    /// Keeps only the peers `live` says have a connection.
    fn prune(&mut self, live: &impl Fn(&SocketAddr) -> bool) {
        self.map.retain(|a, _| live(a));
        self.learnt = None;
        self.looked_up = None;
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// An address answers can leave from: not unspecified, multicast or IPv4 broadcast (a datagram
/// to those is answered as the kernel chooses).
fn is_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast()),
        IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_multicast()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    const NONE_LIVE: fn(&SocketAddr) -> bool = |_| false;

    #[test]
    fn a_peer_is_answered_from_where_it_called() {
        let mut l = Locals::default();
        let p = a("10.0.0.9:4000");
        assert_eq!(l.get(p), None);
        l.learn(p, ip("10.0.0.3"), Trust::Update, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.3"));
        assert_eq!(l.get(a("10.0.0.9:4001")), None);
        // An authenticated datagram moves it; an unauthenticated one cannot.
        l.learn(p, ip("10.0.0.2"), Trust::Update, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.2"));
        l.learn(p, ip("10.0.0.3"), Trust::IfUnknown, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.2"));
        // ...and did not poison the cache: the same pair, trusted, still moves it.
        l.learn(p, ip("10.0.0.3"), Trust::Update, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.3"));
        // Unknown peers may be named by an unauthenticated datagram (cookie replies).
        let q = a("[2001:db8::1]:5");
        l.learn(q, ip("2001:db8::7"), Trust::IfUnknown, NONE_LIVE);
        assert_eq!(l.get(q), ip("2001:db8::7"));
        // No destination, or one that is no source: nothing changes.
        l.learn(p, None, Trust::Update, NONE_LIVE);
        l.learn(p, ip("255.255.255.255"), Trust::Update, NONE_LIVE);
        l.learn(p, ip("224.0.0.1"), Trust::Update, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.3"));
        l.forget(p);
        assert_eq!(l.get(p), None);
        l.learn(p, ip("10.0.0.3"), Trust::Update, NONE_LIVE);
        assert_eq!(l.get(p), ip("10.0.0.3"), "forgetting clears the cache");
    }

    #[test]
    fn the_map_is_bounded_and_keeps_live_peers() {
        let mut l = Locals::default();
        let live = a("192.0.2.1:1");
        l.learn(live, ip("10.0.0.3"), Trust::Update, NONE_LIVE);
        let is_live = |p: &SocketAddr| *p == live;
        for i in 0..3 * CAP {
            let port = u16::try_from(i + 2).unwrap();
            let junk = SocketAddr::new("198.51.100.1".parse().unwrap(), port);
            l.learn(junk, ip("10.0.0.2"), Trust::IfUnknown, is_live);
            assert!(l.len() <= CAP);
        }
        assert_eq!(l.get(live), ip("10.0.0.3"));
    }
}
