//! Connection limits: per source and in total, with memory bounded by the total.
//!
//! A "connection" here is anything holding state at the passive end: a responder handshake
//! in progress or an open NETBLT connection. The passive end asks [`ConnectionLimiter::admit`]
//! before creating such state and calls [`ConnectionLimiter::release`] when it is dropped.
//! The map holds an entry only for a source that holds at least one slot, so it never has
//! more than `max_total` entries, whatever the number of sources: 50,000 spoofed OPENs cost
//! nothing beyond the slots they win, and with cookies on (see [`under_load`]) a spoofed
//! source wins none, since it never sees its cookie.
//!
//! Sources are IPv4 addresses and IPv6 /64 prefixes (one host usually owns a whole /64).
//!
//! [`under_load`]: ConnectionLimiter::under_load

use std::collections::HashMap;
use std::net::IpAddr;

/// Limits, with defaults for a file server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitConfig {
    /// Connections (and handshakes) in total. Default 1024.
    pub max_total: usize,
    /// Per source address (IPv4) or /64 (IPv6). Default 16.
    pub max_per_source: u32,
    /// From this many slots in use, answer initiations without a valid cookie with a cookie
    /// reply. Default 64.
    pub cookie_threshold: usize,
}

impl Default for LimitConfig {
    fn default() -> Self {
        LimitConfig {
            max_total: 1024,
            max_per_source: 16,
            cookie_threshold: 64,
        }
    }
}

/// Why a connection was not admitted (log it: one line per refusal reason and source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// All slots are taken.
    #[error("connection limit reached ({0} in total)")]
    Total(usize),
    /// This source holds its share.
    #[error("per-source connection limit reached ({0} from {1})")]
    PerSource(u32, IpAddr),
}

/// Counts connections per source and in total.
#[derive(Debug, Clone)]
pub struct ConnectionLimiter {
    config: LimitConfig,
    per_source: HashMap<IpAddr, u32>,
    total: usize,
    refused: u64,
}

/// The key a source is counted under.
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

impl ConnectionLimiter {
    /// An empty limiter.
    pub fn new(config: LimitConfig) -> Self {
        ConnectionLimiter {
            config,
            per_source: HashMap::new(),
            total: 0,
            refused: 0,
        }
    }

    /// Takes a slot for `source`, or says why not.
    pub fn admit(&mut self, source: IpAddr) -> Result<(), LimitError> {
        let key = source_key(source);
        if self.total >= self.config.max_total {
            self.refused += 1;
            return Err(LimitError::Total(self.config.max_total));
        }
        let n = self.per_source.get(&key).copied().unwrap_or(0);
        if n >= self.config.max_per_source {
            self.refused += 1;
            return Err(LimitError::PerSource(self.config.max_per_source, key));
        }
        self.per_source.insert(key, n + 1);
        self.total += 1;
        Ok(())
    }

    /// Gives back a slot taken by [`admit`](Self::admit) for `source`. Releasing a source
    /// holding none is ignored.
    pub fn release(&mut self, source: IpAddr) {
        let key = source_key(source);
        if let Some(n) = self.per_source.get_mut(&key) {
            *n -= 1;
            self.total -= 1;
            if *n == 0 {
                self.per_source.remove(&key);
            }
        }
        // Give memory back after a flood has drained.
        if self.per_source.capacity() > 64 && self.per_source.len() < self.per_source.capacity() / 4
        {
            self.per_source.shrink_to(self.per_source.len() * 2);
        }
    }

    /// Whether initiations must carry a valid cookie.
    pub fn under_load(&self) -> bool {
        self.total >= self.config.cookie_threshold
    }

    /// Slots in use.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Sources with at least one slot (the map's size).
    pub fn tracked_sources(&self) -> usize {
        self.per_source.len()
    }

    /// Map capacity, for memory checks.
    pub fn capacity(&self) -> usize {
        self.per_source.capacity()
    }

    /// Refusals so far.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn per_source_and_total() {
        let mut l = ConnectionLimiter::new(LimitConfig {
            max_total: 5,
            max_per_source: 2,
            cookie_threshold: 3,
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(l.admit(a), Ok(()));
        assert_eq!(l.admit(a), Ok(()));
        assert_eq!(l.admit(a), Err(LimitError::PerSource(2, a)));
        assert!(!l.under_load());
        l.admit(b).unwrap();
        assert!(l.under_load());
        l.release(a);
        l.admit(a).unwrap();
        l.admit(b).unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        l.admit(c).unwrap();
        assert_eq!(
            l.admit("10.0.0.4".parse().unwrap()),
            Err(LimitError::Total(5))
        );
        assert_eq!(l.refused(), 2);
        for s in [a, a, b, b, c] {
            l.release(s);
        }
        l.release(a); // already empty: ignored
        assert_eq!((l.total(), l.tracked_sources()), (0, 0));
    }

    #[test]
    fn ipv6_counts_per_64() {
        let mut l = ConnectionLimiter::new(LimitConfig {
            max_total: 100,
            max_per_source: 2,
            cookie_threshold: 100,
        });
        let p = |s: &str| s.parse::<IpAddr>().unwrap();
        l.admit(p("2001:db8::1")).unwrap();
        l.admit(p("2001:db8::ffff:1")).unwrap();
        assert!(l.admit(p("2001:db8::2")).is_err());
        l.admit(p("2001:db8:0:1::1")).unwrap();
        assert_eq!(source_key(p("::ffff:10.0.0.1")), p("10.0.0.1"));
    }

    #[test]
    fn fifty_thousand_spoofed_sources_keep_memory_bounded() {
        let config = LimitConfig::default();
        let mut l = ConnectionLimiter::new(config);
        let mut admitted = Vec::new();
        for i in 0..50_000u32 {
            let ip = if i % 2 == 0 {
                IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))
            } else {
                IpAddr::V6(Ipv6Addr::from(u128::from(i) << 64))
            };
            if l.admit(ip).is_ok() {
                admitted.push(ip);
            }
        }
        assert_eq!(admitted.len(), config.max_total);
        assert!(l.tracked_sources() <= config.max_total);
        // The map never grew past what the slots need (HashMap rounds capacity up to a
        // power of two, times 7/8).
        assert!(l.capacity() <= 2 * config.max_total, "{}", l.capacity());
        assert!(l.under_load());
        assert_eq!(l.refused(), 50_000 - config.max_total as u64);
        // When the spoofed handshakes time out, a legitimate peer gets in.
        for ip in admitted {
            l.release(ip);
        }
        assert_eq!(l.admit("192.0.2.7".parse().unwrap()), Ok(()));
        assert!(l.capacity() <= 128);
    }
}
