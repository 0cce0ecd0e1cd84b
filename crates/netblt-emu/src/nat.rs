//! A NAT at the left edge of the path that rebinds its mappings (`--nat-rebind SECS`).
//!
//! Users behind home and carrier NATs see their UDP mappings expire during pauses or get
//! rebound under port pressure: their packets then reach the far end from a new source port,
//! and what the far end sends to the old one is dropped (RFC 4787 §4.3 on mapping refresh and
//! timeouts). This models that: the left side's UDP source ports are translated to ports of
//! the NAT's own (IPv4 and IPv6, address kept), a new set of mappings is made every `period`,
//! and a packet from the right side to a port of an older set is dropped. The NAT's port is
//! translated back on the way in, so the left side never sees it. Ports below 20,000 on the
//! left are forwarded as they are (a port forward: a receiver on the left still works), and
//! other packets (ICMP, fragments) pass untouched.
//!
//! Outbound packets are translated when the forwarder reads them (the NAT sits before the
//! link); inbound ones when they are delivered (after the link), so a packet in flight when
//! the mapping changes is dropped, as it would be.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The first port the NAT hands out; each new mapping takes the next (wrapping below 65536).
const FIRST_PORT: u16 = 20_000;

/// A mapping's key: the left side's address and port.
type Inside = (IpAddr, u16);

#[derive(Default)]
struct State {
    /// Which set of mappings is current (`elapsed / period`).
    epoch: u64,
    out: HashMap<Inside, u16>,
    back: HashMap<u16, Inside>,
    next_port: u16,
    rebinds: u64,
    dropped: u64,
}

/// What the NAT did, for the emulator's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NatStats {
    /// Times the NAT made a new set of mappings (forgetting the old).
    pub rebinds: u64,
    /// Packets from the right side to a mapping the NAT no longer has.
    pub dropped: u64,
}

/// Shared by the two forwarding threads (a lock per UDP packet: the NAT is opt-in).
pub(crate) struct Nat {
    period: Duration,
    state: Mutex<State>,
}

impl Nat {
    pub(crate) fn new(period: Duration) -> Self {
        Nat {
            period: period.max(Duration::from_millis(1)),
            state: Mutex::new(State {
                next_port: FIRST_PORT,
                ..State::default()
            }),
        }
    }

    fn state(&self, now: Duration) -> std::sync::MutexGuard<'_, State> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let epoch = (now.as_nanos() / self.period.as_nanos()) as u64;
        if epoch != s.epoch {
            s.epoch = epoch;
            s.out.clear();
            s.back.clear();
            s.rebinds += 1;
        }
        s
    }

    /// A packet leaving the left side at `now`: its UDP source port becomes the NAT's.
    pub(crate) fn outbound(&self, now: Duration, packet: &mut [u8]) {
        let Some(udp) = Udp::find(packet) else {
            return;
        };
        let inside = (udp.src, udp.src_port(packet));
        if inside.1 < FIRST_PORT {
            // A port forward: the left side's services keep their ports.
            return;
        }
        let mut s = self.state(now);
        let port = match s.out.get(&inside) {
            Some(&p) => p,
            None => {
                let p = s.next_port;
                s.next_port = if p == u16::MAX { FIRST_PORT } else { p + 1 };
                s.out.insert(inside, p);
                s.back.insert(p, inside);
                p
            }
        };
        udp.set_port(packet, udp.src_port_at, port);
    }

    /// A packet arriving for the left side at `now`: back to the inside port, or `false`
    /// (drop) if it is for a mapping the NAT no longer has. Packets that are not UDP to the
    /// NAT's ports pass.
    pub(crate) fn inbound(&self, now: Duration, packet: &mut [u8]) -> bool {
        let Some(udp) = Udp::find(packet) else {
            return true;
        };
        let port = udp.dst_port(packet);
        if port < FIRST_PORT {
            return true;
        }
        let mut s = self.state(now);
        match s.back.get(&port) {
            Some(&(ip, inside)) if ip == udp.dst => {
                udp.set_port(packet, udp.src_port_at + 2, inside);
                true
            }
            _ => {
                s.dropped += 1;
                false
            }
        }
    }

    pub(crate) fn stats(&self) -> NatStats {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        NatStats {
            rebinds: s.rebinds,
            dropped: s.dropped,
        }
    }
}

/// Where a UDP header sits in an IP packet, and the addresses around it.
struct Udp {
    src: IpAddr,
    dst: IpAddr,
    /// Offset of the UDP source port (the destination port follows it).
    src_port_at: usize,
    /// Whether the checksum may be 0 for "none" (IPv4 only).
    v4: bool,
}

impl Udp {
    /// The UDP header of an unfragmented IPv4 packet or of an IPv6 packet whose first header is
    /// UDP; `None` for anything else (left untouched).
    fn find(p: &[u8]) -> Option<Udp> {
        match p.first()? >> 4 {
            4 => {
                let ihl = usize::from(p[0] & 0x0f) * 4;
                let frag = u16::from_be_bytes([*p.get(6)?, *p.get(7)?]) & 0x3fff;
                if p.get(9) != Some(&17) || frag != 0 || ihl < 20 || p.len() < ihl + 8 {
                    return None;
                }
                let a: [u8; 4] = p.get(12..16)?.try_into().ok()?;
                let b: [u8; 4] = p.get(16..20)?.try_into().ok()?;
                Some(Udp {
                    src: IpAddr::from(a),
                    dst: IpAddr::from(b),
                    src_port_at: ihl,
                    v4: true,
                })
            }
            6 => {
                if p.get(6) != Some(&17) || p.len() < 48 {
                    return None;
                }
                let a: [u8; 16] = p.get(8..24)?.try_into().ok()?;
                let b: [u8; 16] = p.get(24..40)?.try_into().ok()?;
                Some(Udp {
                    src: IpAddr::from(a),
                    dst: IpAddr::from(b),
                    src_port_at: 40,
                    v4: false,
                })
            }
            _ => None,
        }
    }

    fn src_port(&self, p: &[u8]) -> u16 {
        u16::from_be_bytes([p[self.src_port_at], p[self.src_port_at + 1]])
    }

    fn dst_port(&self, p: &[u8]) -> u16 {
        u16::from_be_bytes([p[self.src_port_at + 2], p[self.src_port_at + 3]])
    }

    /// Writes `port` at `at` and updates the UDP checksum incrementally (RFC 1624, eqn. 3:
    /// HC' = ~(~HC + ~m + m')); an IPv4 checksum of 0 ("none") stays 0.
    fn set_port(&self, p: &mut [u8], at: usize, port: u16) {
        let old = u16::from_be_bytes([p[at], p[at + 1]]);
        p[at..at + 2].copy_from_slice(&port.to_be_bytes());
        let c = self.src_port_at + 6;
        let hc = u16::from_be_bytes([p[c], p[c + 1]]);
        if hc == 0 && self.v4 {
            return;
        }
        let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(port);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let mut new = !(sum as u16);
        if new == 0 {
            // 0 means "no checksum" in UDP: its one's-complement twin is sent instead.
            new = 0xffff;
        }
        p[c..c + 2].copy_from_slice(&new.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The UDP checksum computed from scratch (pseudo-header included).
    fn udp_checksum(p: &[u8]) -> u16 {
        let u = Udp::find(p).unwrap();
        let l4 = &p[u.src_port_at..];
        let mut sum: u32 = 0;
        let mut add = |b: &[u8]| {
            for c in b.chunks(2) {
                sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
            }
        };
        match (u.src, u.dst) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                add(&a.octets());
                add(&b.octets());
                add(&[0, 17]);
                add(&(l4.len() as u16).to_be_bytes());
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                add(&a.octets());
                add(&b.octets());
                add(&(l4.len() as u32).to_be_bytes());
                add(&[0, 0, 0, 17]);
            }
            _ => unreachable!(),
        }
        let mut body = l4.to_vec();
        body[6] = 0;
        body[7] = 0;
        add(&body);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let c = !(sum as u16);
        if c == 0 {
            0xffff
        } else {
            c
        }
    }

    fn v4(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
        p.extend_from_slice(&[198, 18, 0, 1, 198, 18, 0, 2]);
        p.extend_from_slice(&src_port.to_be_bytes());
        p.extend_from_slice(&dst_port.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        let n = p.len() as u16;
        p[2..4].copy_from_slice(&n.to_be_bytes());
        let c = udp_checksum(&p);
        p[26..28].copy_from_slice(&c.to_be_bytes());
        p
    }

    fn v6(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[17, 64]);
        p.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(&src_port.to_be_bytes());
        p.extend_from_slice(&dst_port.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        let c = udp_checksum(&p);
        p[46..48].copy_from_slice(&c.to_be_bytes());
        p
    }

    /// The same packet with source and destination swapped (the reply).
    fn reply(p: &[u8]) -> Vec<u8> {
        let mut r = p.to_vec();
        let u = Udp::find(p).unwrap();
        let (a, b) = match u.src {
            IpAddr::V4(_) => (12..16, 16..20),
            IpAddr::V6(_) => (8..24, 24..40),
        };
        let (sa, da) = (p[a.clone()].to_vec(), p[b.clone()].to_vec());
        r[a].copy_from_slice(&da);
        r[b].copy_from_slice(&sa);
        let s = u.src_port_at;
        r[s..s + 2].copy_from_slice(&p[s + 2..s + 4]);
        r[s + 2..s + 4].copy_from_slice(&p[s..s + 2]);
        r
    }

    #[test]
    fn ports_are_translated_both_ways_with_valid_checksums() {
        for mut p in [v4(41_000, 9998, b"hello nat"), v6(41_000, 9998, b"odd len")] {
            let nat = Nat::new(Duration::from_secs(10));
            let t = Duration::from_millis(5);
            nat.outbound(t, &mut p);
            let u = Udp::find(&p).unwrap();
            let mapped = u.src_port(&p);
            assert!(mapped >= FIRST_PORT && mapped != 41_000);
            assert_eq!(
                udp_checksum(&p),
                u16::from_be_bytes([p[u.src_port_at + 6], p[u.src_port_at + 7]])
            );
            let mut r = reply(&p);
            let c = udp_checksum(&r);
            r[u.src_port_at + 6..u.src_port_at + 8].copy_from_slice(&c.to_be_bytes());
            assert!(nat.inbound(t, &mut r));
            assert_eq!(u.dst_port(&r), 41_000);
            assert_eq!(
                udp_checksum(&r),
                u16::from_be_bytes([r[u.src_port_at + 6], r[u.src_port_at + 7]])
            );
            // The same flow keeps its mapping within a period.
            let mut again = v4(41_000, 9998, b"x");
            nat.outbound(t, &mut again);
            if u.v4 {
                assert_eq!(Udp::find(&again).unwrap().src_port(&again), mapped);
            }
        }
    }

    #[test]
    fn a_new_period_rebinds_and_the_old_mapping_is_gone() {
        let nat = Nat::new(Duration::from_secs(1));
        let mut a = v4(41_000, 9998, b"a");
        nat.outbound(Duration::from_millis(900), &mut a);
        let first = Udp::find(&a).unwrap().src_port(&a);
        let mut late_reply = reply(&a);
        let mut b = v4(41_000, 9998, b"b");
        nat.outbound(Duration::from_millis(1100), &mut b);
        let second = Udp::find(&b).unwrap().src_port(&b);
        assert_ne!(first, second, "a new mapping after the period");
        assert!(!nat.inbound(Duration::from_millis(1150), &mut late_reply));
        let mut ok = reply(&b);
        assert!(nat.inbound(Duration::from_millis(1150), &mut ok));
        assert_eq!(
            nat.stats(),
            NatStats {
                rebinds: 1,
                dropped: 1
            }
        );
    }

    #[test]
    fn other_packets_pass_untouched() {
        let nat = Nat::new(Duration::from_secs(1));
        // ICMP echo, a fragment, junk, a reply to a port below the NAT's range.
        let mut icmp = v4(1, 2, b"ping");
        icmp[9] = 1;
        let mut frag = v4(41_000, 9998, b"frag");
        frag[7] = 8;
        for p in [icmp, frag, vec![0x45], vec![], vec![0x99; 40]] {
            let mut q = p.clone();
            nat.outbound(Duration::ZERO, &mut q);
            assert_eq!(q, p);
            assert!(nat.inbound(Duration::ZERO, &mut q));
            assert_eq!(q, p);
        }
        // A service on the left (port 9998) is forwarded both ways as it is.
        let mut low = v4(9998, 41_000, b"from a low port");
        let before = low.clone();
        nat.outbound(Duration::ZERO, &mut low);
        assert_eq!(low, before);
        let mut to_low = reply(&low);
        let before = to_low.clone();
        assert!(nat.inbound(Duration::ZERO, &mut to_low));
        assert_eq!(to_low, before);
        assert_eq!(nat.stats().dropped, 0);
    }
}
