//! `netblt echo`: the dkbenchs + trafgens server, for TCP and UDP at once.
//!
//! One TCP listener and one UDP socket, by default both on port 7007 of 127.0.0.1. We default
//! to loopback on purpose: an open UDP echo service on a public address is a reflection
//! amplifier. To serve a network namespace, listen on its address (`--listen 10.0.0.1:7007`)
//! or on `0.0.0.0:7007` inside it.
//!
//! Threads: one accepts TCP connections and gives each its own thread (so `RUSAGE_THREAD`
//! gives a per-transfer CPU figure); one serves every UDP datagram. All of them wake every
//! [`TICK`] to check the stop flag, so [`EchoServer::shutdown`] returns within about a tick.
//! Limits keep a misbehaving or hostile client from exhausting the host: at most
//! `max_connections` TCP connections, at most [`MAX_SESSIONS`] UDP sink sessions, TCP
//! messages of at most [`crate::protocol::MAX_TCP_MESSAGE`] bytes, and an idle timeout.

mod tcp;
mod udp;

pub use udp::MAX_SESSIONS;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

use crate::error::MeasureError;
use crate::protocol::DEFAULT_PORT;

/// How often blocked server threads wake to check for shutdown.
pub const TICK: Duration = Duration::from_millis(200);

/// Configuration of [`EchoServer`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EchoServerConfig {
    /// Address for both listeners. Default `127.0.0.1:7007`. Port 0 picks a free port (TCP
    /// first, then UDP on the same number if it is free).
    pub listen: SocketAddr,
    /// Serve TCP. Default true.
    pub tcp: bool,
    /// Serve UDP. Default true.
    pub udp: bool,
    /// Most TCP connections served at once; more are closed on accept. Default 64.
    pub max_connections: usize,
    /// A connection or session silent this long is dropped. Default 60 s.
    pub idle_timeout: Duration,
}

impl Default for EchoServerConfig {
    fn default() -> Self {
        EchoServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            tcp: true,
            udp: true,
            max_connections: 64,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl EchoServerConfig {
    /// Defaults with another listen address.
    pub fn new(listen: SocketAddr) -> Self {
        EchoServerConfig {
            listen,
            ..Self::default()
        }
    }
}

/// Counters of what the server has done, for the end-of-run line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerStats {
    /// TCP connections accepted.
    pub tcp_connections: u64,
    /// Messages echoed (TCP frames and UDP datagrams).
    pub echoed: u64,
    /// Payload bytes discarded by the sink (TCP and UDP).
    pub sunk_bytes: u64,
    /// Malformed messages dropped.
    pub malformed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    tcp_connections: AtomicU64,
    echoed: AtomicU64,
    sunk_bytes: AtomicU64,
    malformed: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    config: EchoServerConfig,
    stop: AtomicBool,
    counters: Counters,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn count(&self, which: impl Fn(&Counters) -> &AtomicU64, n: u64) {
        which(&self.counters).fetch_add(n, Ordering::Relaxed);
    }
}

/// A running echo/sink server. Dropping it stops it (and waits for its threads).
#[derive(Debug)]
pub struct EchoServer {
    shared: Arc<Shared>,
    tcp_addr: Option<SocketAddr>,
    udp_addr: Option<SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl EchoServer {
    /// Binds the listeners and starts serving in background threads.
    ///
    /// # Errors
    /// [`MeasureError::Io`] if a socket cannot be bound (port in use, no such address), and
    /// [`MeasureError::InvalidArgument`] if neither TCP nor UDP is enabled.
    pub fn start(config: EchoServerConfig) -> Result<EchoServer, MeasureError> {
        if !config.tcp && !config.udp {
            return Err(MeasureError::InvalidArgument(
                "echo server with neither TCP nor UDP".into(),
            ));
        }
        let listener = if config.tcp {
            Some(bind_tcp(config.listen)?)
        } else {
            None
        };
        let tcp_addr = match &listener {
            Some(l) => Some(
                l.local_addr()
                    .map_err(|e| MeasureError::io("tcp local address", e))?,
            ),
            None => None,
        };
        let udp = if config.udp {
            // With port 0, put UDP on the port TCP got, so one number serves both; fall back
            // to any free port if that one is taken for UDP.
            let want = match (config.listen.port(), tcp_addr) {
                (0, Some(t)) => SocketAddr::new(config.listen.ip(), t.port()),
                _ => config.listen,
            };
            let sock = match UdpSocket::bind(want) {
                Ok(s) => s,
                Err(_) if config.listen.port() == 0 => UdpSocket::bind(config.listen)
                    .map_err(|e| MeasureError::io(format!("bind udp {}", config.listen), e))?,
                Err(e) => return Err(MeasureError::io(format!("bind udp {want}"), e)),
            };
            Some(sock)
        } else {
            None
        };
        let udp_addr = match &udp {
            Some(s) => Some(
                s.local_addr()
                    .map_err(|e| MeasureError::io("udp local address", e))?,
            ),
            None => None,
        };

        let shared = Arc::new(Shared {
            config,
            stop: AtomicBool::new(false),
            counters: Counters::default(),
        });
        let mut threads = Vec::new();
        if let Some(l) = listener {
            let sh = Arc::clone(&shared);
            threads.push(spawn("echo-tcp-accept", move || tcp::accept_loop(l, &sh))?);
        }
        if let Some(s) = udp {
            let sh = Arc::clone(&shared);
            threads.push(spawn("echo-udp", move || udp::serve(s, &sh))?);
        }
        tracing::info!(?tcp_addr, ?udp_addr, "echo server listening");
        Ok(EchoServer {
            shared,
            tcp_addr,
            udp_addr,
            threads,
        })
    }

    /// The TCP listening address, if TCP is served.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The UDP address, if UDP is served.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        self.udp_addr
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        let c = &self.shared.counters;
        ServerStats {
            tcp_connections: c.tcp_connections.load(Ordering::Relaxed),
            echoed: c.echoed.load(Ordering::Relaxed),
            sunk_bytes: c.sunk_bytes.load(Ordering::Relaxed),
            malformed: c.malformed.load(Ordering::Relaxed),
        }
    }

    /// Stops serving and waits (about one [`TICK`]) for every thread to finish.
    pub fn shutdown(mut self) -> ServerStats {
        self.stop_and_join();
        self.stats()
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, MeasureError> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| MeasureError::io(format!("spawn thread {name}"), e))
}

/// Binds a TCP listener whose `accept` times out after [`TICK`].
///
/// Linux applies `SO_RCVTIMEO` to `accept(2)` (it returns `EAGAIN`), which lets the accept
/// loop notice shutdown without a self-connect trick or non-blocking polling, and without the
/// added accept latency that polling would put on a client's first measured message.
fn bind_tcp(addr: SocketAddr) -> Result<TcpListener, MeasureError> {
    let ctx = |what: &str| format!("{what} tcp {addr}");
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| MeasureError::io(ctx("socket"), e))?;
    sock.set_reuse_address(true)
        .map_err(|e| MeasureError::io(ctx("SO_REUSEADDR"), e))?;
    sock.bind(&addr.into())
        .map_err(|e| MeasureError::io(ctx("bind"), e))?;
    sock.listen(128)
        .map_err(|e| MeasureError::io(ctx("listen"), e))?;
    sock.set_read_timeout(Some(TICK))
        .map_err(|e| MeasureError::io(ctx("SO_RCVTIMEO"), e))?;
    Ok(sock.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_both_on_one_port_and_shuts_down_quickly() {
        let server = EchoServer::start(EchoServerConfig::new("127.0.0.1:0".parse().unwrap()))
            .expect("bind loopback");
        let t = server.tcp_addr().unwrap();
        let u = server.udp_addr().unwrap();
        assert_ne!(t.port(), 0);
        assert_eq!(t.ip(), u.ip());
        let stats = server.shutdown();
        assert_eq!(stats, ServerStats::default());
    }

    #[test]
    fn refuses_to_serve_nothing() {
        let mut c = EchoServerConfig::new("127.0.0.1:0".parse().unwrap());
        c.tcp = false;
        c.udp = false;
        assert!(matches!(
            EchoServer::start(c),
            Err(MeasureError::InvalidArgument(_))
        ));
    }
}
