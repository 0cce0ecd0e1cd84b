//! The peer a command talks to: every address its name resolves to, tried
//! in turn while the host refuses.
//!
//! A name often resolves to an IPv6 and an IPv4 address, IPv6 first, while
//! `netblt recv` listens on one family (0.0.0.0 by default). Over UDP the
//! other family's host answers the OPEN with "port unreachable", so the
//! command would fail against a receiver that is running. Like ssh and
//! iperf3, which try each address until one connects, a command tries the
//! next address when the host refused (`netblt::Error::Refused`: nothing was
//! transferred), and keeps the first that did not refuse for its later
//! transfers. An address that does not answer at all is not skipped: its
//! silence takes the whole OPEN timeout, and it may be the right one behind
//! a slow path.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;

use crate::exit::CliError;

/// The addresses of one peer, and the one that last answered.
#[derive(Debug)]
pub struct Remote {
    addrs: Vec<SocketAddr>,
    chosen: Mutex<Option<SocketAddr>>,
}

impl Remote {
    /// `HOST[:PORT]` (IPv6 as `[::1]:PORT` or a bare `::1`), resolved to
    /// all its addresses, in the resolver's order, without repeats.
    pub fn resolve(s: &str, default_port: u16) -> Result<Remote, CliError> {
        // A port that is digits but no port (`host:99999`, `host:0`) is the
        // user's typo, not a name to look up: the resolver's "Name or
        // service not known" sent users looking at the host.
        let bad_port = s.rsplit_once(':').filter(|(host, p)| {
            let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            let v6_bare = host.contains(':') && !host.ends_with(']');
            digits && !v6_bare && p.parse::<u16>().map_or(true, |n| n == 0)
        });
        if let Some((_, p)) = bad_port {
            return Err(CliError::usage(format!(
                "'{s}': port {p} is not a port (1-65535)"
            )));
        }
        let addrs = if let Ok(a) = s.parse::<SocketAddr>() {
            vec![a]
        } else if let Ok(ip) = s.parse::<std::net::IpAddr>() {
            vec![SocketAddr::new(ip, default_port)]
        } else {
            let with_port = if s
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            {
                s.to_string()
            } else {
                format!("{s}:{default_port}")
            };
            let mut out: Vec<SocketAddr> = Vec::new();
            for a in with_port.to_socket_addrs().map_err(|e| {
                CliError::new(crate::exit::NETWORK, format!("cannot resolve '{s}': {e}"))
            })? {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
            out
        };
        Remote::of(addrs)
            .ok_or_else(|| CliError::new(crate::exit::NETWORK, format!("'{s}' has no address")))
    }

    /// A peer at one address.
    pub fn one(addr: SocketAddr) -> Remote {
        Remote {
            addrs: vec![addr],
            chosen: Mutex::new(None),
        }
    }

    /// A peer at these addresses (none: `None`).
    pub fn of(addrs: Vec<SocketAddr>) -> Option<Remote> {
        (!addrs.is_empty()).then(|| Remote {
            addrs,
            chosen: Mutex::new(None),
        })
    }

    /// The address to use where a failure cannot be retried (standard
    /// input is consumed by the first try): the one that answered, else
    /// the first.
    pub fn first(&self) -> SocketAddr {
        self.chosen().unwrap_or(self.addrs[0])
    }

    fn chosen(&self) -> Option<SocketAddr> {
        *self.chosen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` with the address that answered before, or with each address
    /// in turn while the host refuses. When every address refused, the
    /// error names them all.
    pub fn run<T>(
        &self,
        mut f: impl FnMut(SocketAddr) -> Result<T, netblt::Error>,
    ) -> Result<T, netblt::Error> {
        if let Some(a) = self.chosen() {
            return f(a);
        }
        let mut refused = Vec::new();
        for &a in &self.addrs {
            match f(a) {
                Err(e) if matches!(e.cause(), netblt::Error::Refused(_)) => refused.push((a, e)),
                other => {
                    *self.chosen.lock().unwrap_or_else(|p| p.into_inner()) = Some(a);
                    return other;
                }
            }
        }
        match refused.len() {
            1 => Err(refused.remove(0).1),
            _ => {
                let all: Vec<String> = refused.iter().map(|(a, _)| a.to_string()).collect();
                Err(netblt::Error::Refused(format!(
                    "connection refused by {} (nothing listening at any of its addresses?)",
                    all.join(" and ")
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(a: SocketAddr) -> netblt::Error {
        netblt::Error::Refused(format!("connection refused by {a} (nothing listening?)"))
    }

    #[test]
    fn a_port_out_of_range_is_a_usage_error() {
        for s in [
            "127.0.0.1:99999",
            "example.invalid:0",
            "[::1]:70000",
            "127.0.0.1:0",
        ] {
            let e = Remote::resolve(s, 9998).unwrap_err();
            assert_eq!(e.code, crate::exit::USAGE, "{s}");
            assert!(e.message.contains("is not a port"), "{s}: {}", e.message);
        }
        // A bare IPv6 address ends in digits too: not a port.
        let r = Remote::resolve("::1", 9998).unwrap();
        assert_eq!(r.addrs, ["[::1]:9998".parse::<SocketAddr>().unwrap()]);
        let r = Remote::resolve("127.0.0.1:65535", 9998).unwrap();
        assert_eq!(r.addrs[0].port(), 65535);
    }

    #[test]
    fn a_refusing_address_is_skipped_and_the_answer_kept() {
        let v6: SocketAddr = "[::1]:9998".parse().unwrap();
        let v4: SocketAddr = "127.0.0.1:9998".parse().unwrap();
        let r = Remote::of(vec![v6, v4]).unwrap();
        let mut tried = Vec::new();
        let out = r.run(|a| {
            tried.push(a);
            if a == v6 {
                Err(refused(a))
            } else {
                Ok(7)
            }
        });
        assert_eq!(out.unwrap(), 7);
        assert_eq!(tried, [v6, v4]);
        // Later transfers go straight to the address that answered.
        let mut later = Vec::new();
        r.run(|a| {
            later.push(a);
            Ok(())
        })
        .unwrap();
        assert_eq!(later, [v4]);
        assert_eq!(r.first(), v4);
    }

    #[test]
    fn other_failures_are_not_retried_elsewhere() {
        let a: SocketAddr = "[::1]:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let r = Remote::of(vec![a, b]).unwrap();
        let mut tried = 0;
        let e = r
            .run::<()>(|_| {
                tried += 1;
                Err(netblt::Error::Failed("peer silent for 10 s".into()))
            })
            .unwrap_err();
        assert_eq!(tried, 1);
        assert!(matches!(e, netblt::Error::Failed(_)));
    }

    #[test]
    fn every_address_refusing_names_them_all() {
        let a: SocketAddr = "[::1]:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let r = Remote::of(vec![a, b]).unwrap();
        let e = r.run::<()>(|x| Err(refused(x))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "connection refused by [::1]:1 and 127.0.0.1:1 (nothing listening at any of its addresses?)"
        );
        // With one address, its own error.
        let r = Remote::of(vec![b]).unwrap();
        let e = r.run::<()>(|x| Err(refused(x))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "connection refused by 127.0.0.1:1 (nothing listening?)"
        );
        assert!(Remote::of(vec![]).is_none());
    }

    #[test]
    fn literal_addresses_and_names_resolve() {
        let r = Remote::resolve("127.0.0.1", 9998).unwrap();
        assert_eq!(r.first(), "127.0.0.1:9998".parse().unwrap());
        let r = Remote::resolve("[::1]:7", 9998).unwrap();
        assert_eq!(r.first(), "[::1]:7".parse().unwrap());
        let r = Remote::resolve("::1", 9998).unwrap();
        assert_eq!(r.first(), "[::1]:9998".parse().unwrap());
        // `localhost` has at least one loopback address, without repeats.
        let r = Remote::resolve("localhost:5", 9998).unwrap();
        assert!(r
            .addrs
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 5));
        let mut d = r.addrs.clone();
        d.dedup();
        assert_eq!(d.len(), r.addrs.len());
    }
}
