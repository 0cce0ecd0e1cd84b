//! The trafgen side: write a fixed number of bytes to the sink as fast as possible, then ask
//! the server what arrived and what it cost.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::{is_timeout, MeasureError};
use crate::protocol::{
    parse_udp, write_udp_header, Mode, SinkSummary, UdpKind, MAX_UDP_PAYLOAD, SUMMARY_LEN,
    UDP_HEADER_LEN,
};
use crate::rusage::{thread_cpu, CpuTimes};
use crate::transport::Transport;

/// One finished one-way transfer, as seen by both ends.
///
/// Two clocks are kept. `write_end_s` is trafgen's: "the clock is read again directly after
/// the last packet is transmitted", which over a kernel socket means "handed to the kernel"
/// and can be several socket buffers ahead of delivery. `end_s` is read when the server's
/// report arrives, i.e. after the last byte was received and counted; throughput is computed
/// from this one, so buffering cannot flatter it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SinkReport {
    /// The transport used.
    pub transport: Transport,
    /// Payload bytes the client wrote.
    pub bytes_sent: u64,
    /// Payload bytes the server counted.
    pub bytes_received: u64,
    /// Write calls (TCP) or datagrams (UDP) the client made.
    pub writes: u64,
    /// Reads (TCP) or datagrams (UDP) the server counted.
    pub server_units: u64,
    /// Seconds from the caller's origin to just before the first write.
    pub start_s: f64,
    /// Seconds from the origin to the return of the last write (trafgen's end clock).
    pub write_end_s: f64,
    /// Seconds from the origin to the arrival of the server's report.
    pub end_s: f64,
    /// CPU used by the sending thread from the first write to the report.
    pub client_cpu: CpuTimes,
    /// CPU the server says the transfer cost it.
    pub server_cpu: CpuTimes,
    /// Seconds from the server's first received byte to its last.
    pub server_span_s: f64,
}

impl SinkReport {
    /// Seconds from first write to the server's report.
    pub fn elapsed_s(&self) -> f64 {
        (self.end_s - self.start_s).max(0.0)
    }

    /// Delivered throughput: bytes the server counted per second of `elapsed_s`.
    pub fn throughput(&self) -> f64 {
        let e = self.elapsed_s();
        if e > 0.0 {
            self.bytes_received as f64 / e
        } else {
            0.0
        }
    }

    /// Bytes sent but not counted by the server (UDP loss; always 0 over TCP).
    pub fn lost_bytes(&self) -> u64 {
        self.bytes_sent.saturating_sub(self.bytes_received)
    }
}

/// An established sink connection, ready to send (trafgen after call set-up).
#[derive(Debug)]
pub struct SinkConnection {
    link: Link,
    peer: SocketAddr,
    timeout: Duration,
}

enum Link {
    Tcp(TcpStream),
    Udp { socket: UdpSocket, session: u64 },
    Netblt(&'static dyn crate::transport::BulkSender),
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Link::Tcp(s) => f.debug_tuple("Tcp").field(s).finish(),
            Link::Udp { socket, session } => f
                .debug_struct("Udp")
                .field("socket", socket)
                .field("session", session)
                .finish(),
            Link::Netblt(_) => f.write_str("Netblt"),
        }
    }
}

impl SinkConnection {
    /// Connects to the sink at `peer`. `timeout` bounds every blocking step of the transfer
    /// (a write that makes no progress, the wait for the report).
    ///
    /// # Errors
    /// As for [`crate::client::EchoClient::connect`].
    pub fn connect(
        peer: SocketAddr,
        transport: Transport,
        timeout: Duration,
    ) -> Result<SinkConnection, MeasureError> {
        let link = match transport {
            Transport::Tcp => Link::Tcp(super::tcp_connect(peer, Mode::Sink, timeout)?),
            Transport::Udp => Link::Udp {
                socket: super::udp_connect(peer)?,
                session: new_session_id(),
            },
            Transport::Netblt => match crate::transport::netblt() {
                Some(sender) => Link::Netblt(sender),
                None => return Err(MeasureError::TransportUnavailable(transport)),
            },
        };
        let peer = match link {
            Link::Netblt(_) => SocketAddr::new(peer.ip(), crate::transport::NETBLT_SINK_PORT),
            _ => peer,
        };
        Ok(SinkConnection {
            link,
            peer,
            timeout,
        })
    }

    /// The largest single write this transport accepts.
    pub fn max_write(&self) -> usize {
        match self.link {
            Link::Tcp(_) => usize::MAX,
            Link::Udp { .. } => MAX_UDP_PAYLOAD,
            Link::Netblt(_) => usize::MAX,
        }
    }

    /// Sends `bytes` bytes in writes of `write_size` (the last may be shorter), then collects
    /// the server's report. Times are measured from `origin`. If `progress` is given, the
    /// running byte count is stored there for a display thread to read.
    ///
    /// # Errors
    /// [`MeasureError::InvalidArgument`] for a zero write size, [`MeasureError::SizeOutOfRange`]
    /// for a UDP write above one datagram, I/O and protocol errors, and
    /// [`MeasureError::Timeout`] when the report does not come.
    pub fn run(
        self,
        bytes: u64,
        write_size: usize,
        origin: Instant,
        progress: Option<&AtomicU64>,
    ) -> Result<SinkReport, MeasureError> {
        if write_size == 0 {
            return Err(MeasureError::InvalidArgument(
                "write size must be at least 1".into(),
            ));
        }
        if write_size > self.max_write() {
            return Err(MeasureError::SizeOutOfRange {
                size: write_size,
                max: self.max_write(),
                transport: Transport::Udp,
            });
        }
        let cpu = |what| thread_cpu().map_err(|e| MeasureError::io(what, e));
        let peer = self.peer;
        match self.link {
            Link::Netblt(sender) => {
                // NETBLT packetizes by itself: the write size does not apply.
                let t0 = Instant::now();
                let cpu0 = cpu("getrusage")?;
                let outcome = sender.send(peer, bytes).map_err(|e| {
                    MeasureError::io(
                        format!("NETBLT transfer to {peer}"),
                        std::io::Error::other(e),
                    )
                })?;
                let client_cpu = cpu("getrusage")?.since(cpu0);
                let t_end = Instant::now();
                if let Some(p) = progress {
                    p.store(outcome.bytes, Ordering::Relaxed);
                }
                let summary = SinkSummary {
                    bytes: outcome.bytes,
                    units: 0,
                    cpu_user_us: 0,
                    cpu_sys_us: 0,
                    span_ns: u64::try_from(t_end.duration_since(t0).as_nanos()).unwrap_or(u64::MAX),
                };
                Ok(report(
                    Transport::Netblt,
                    origin,
                    (t0, t_end, t_end),
                    bytes,
                    outcome.datagrams,
                    client_cpu,
                    &summary,
                ))
            }
            Link::Tcp(mut stream) => {
                let block = pattern(write_size);
                // Clock outside, CPU inside: the CPU interval nests in the wall interval, so
                // the CPU share cannot exceed 100 % by the cost of getrusage itself.
                let t0 = Instant::now();
                let cpu0 = cpu("getrusage")?;
                let mut sent = 0u64;
                let mut writes = 0u64;
                while sent < bytes {
                    let n = chunk(bytes - sent, write_size);
                    stream
                        .write_all(block.get(..n).unwrap_or_default())
                        .map_err(|e| MeasureError::io(format!("send to sink {peer} (tcp)"), e))?;
                    sent += n as u64;
                    writes += 1;
                    if let Some(p) = progress {
                        p.store(sent, Ordering::Relaxed);
                    }
                }
                let t_written = Instant::now();
                // End of stream tells the sink the transfer is complete (our EOT).
                stream
                    .shutdown(Shutdown::Write)
                    .map_err(|e| MeasureError::io(format!("shutdown to {peer} (tcp)"), e))?;
                let summary = read_tcp_summary(&mut stream, peer, self.timeout)?;
                let client_cpu = cpu("getrusage")?.since(cpu0);
                let t_end = Instant::now();
                Ok(report(
                    Transport::Tcp,
                    origin,
                    (t0, t_written, t_end),
                    sent,
                    writes,
                    client_cpu,
                    &summary,
                ))
            }
            Link::Udp { socket, session } => {
                let mut datagram = pattern(UDP_HEADER_LEN + write_size);
                write_udp_header(&mut datagram, UdpKind::SinkData, session)
                    .map_err(|source| MeasureError::Protocol { peer, source })?;
                // Clock outside, CPU inside: the CPU interval nests in the wall interval, so
                // the CPU share cannot exceed 100 % by the cost of getrusage itself.
                let t0 = Instant::now();
                let cpu0 = cpu("getrusage")?;
                let mut sent = 0u64;
                let mut writes = 0u64;
                while sent < bytes {
                    let n = chunk(bytes - sent, write_size);
                    let d = datagram.get(..UDP_HEADER_LEN + n).unwrap_or_default();
                    match socket.send(d) {
                        Ok(_) => {}
                        // Linux may refuse a datagram when the device queue is full; that is
                        // a loss like any other, not a reason to abort the measurement.
                        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                        Err(e) => {
                            return Err(MeasureError::io(
                                format!("send to sink {peer} (udp); is `netblt echo` running?"),
                                e,
                            ))
                        }
                    }
                    sent += n as u64;
                    writes += 1;
                    if let Some(p) = progress {
                        p.store(sent, Ordering::Relaxed);
                    }
                }
                let t_written = Instant::now();
                let summary = udp_finish(&socket, peer, session, self.timeout)?;
                let client_cpu = cpu("getrusage")?.since(cpu0);
                let t_end = Instant::now();
                Ok(report(
                    Transport::Udp,
                    origin,
                    (t0, t_written, t_end),
                    sent,
                    writes,
                    client_cpu,
                    &summary,
                ))
            }
        }
    }
}

fn report(
    transport: Transport,
    origin: Instant,
    (t0, t_written, t_end): (Instant, Instant, Instant),
    bytes_sent: u64,
    writes: u64,
    client_cpu: CpuTimes,
    summary: &SinkSummary,
) -> SinkReport {
    let rel = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    SinkReport {
        transport,
        bytes_sent,
        bytes_received: summary.bytes,
        writes,
        server_units: summary.units,
        start_s: rel(t0),
        write_end_s: rel(t_written),
        end_s: rel(t_end),
        client_cpu,
        server_cpu: CpuTimes::from_micros(summary.cpu_user_us, summary.cpu_sys_us),
        server_span_s: Duration::from_nanos(summary.span_ns).as_secs_f64(),
    }
}

fn chunk(remaining: u64, write_size: usize) -> usize {
    usize::try_from(remaining).map_or(write_size, |r| r.min(write_size))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(13)).collect()
}

fn read_tcp_summary(
    stream: &mut TcpStream,
    peer: SocketAddr,
    timeout: Duration,
) -> Result<SinkSummary, MeasureError> {
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| MeasureError::io("set read timeout", e))?;
    let mut buf = [0u8; SUMMARY_LEN];
    stream.read_exact(&mut buf).map_err(|e| {
        if is_timeout(&e) {
            MeasureError::Timeout(format!("no sink report from {peer} (tcp)"))
        } else {
            MeasureError::io(format!("read sink report from {peer} (tcp)"), e)
        }
    })?;
    SinkSummary::decode(&buf).map_err(|source| MeasureError::Protocol { peer, source })
}

/// Asks for the session's report, repeating the request until one comes or `timeout` passes.
fn udp_finish(
    socket: &UdpSocket,
    peer: SocketAddr,
    session: u64,
    timeout: Duration,
) -> Result<SinkSummary, MeasureError> {
    let mut finish = [0u8; UDP_HEADER_LEN];
    write_udp_header(&mut finish, UdpKind::Finish, session)
        .map_err(|source| MeasureError::Protocol { peer, source })?;
    let deadline = Instant::now() + timeout;
    let per_try = Duration::from_millis(250);
    let mut buf = vec![0u8; 65_536];
    while Instant::now() < deadline {
        socket
            .send(&finish)
            .map_err(|e| MeasureError::io(format!("send finish to {peer} (udp)"), e))?;
        let try_until = (Instant::now() + per_try).min(deadline);
        loop {
            let left = try_until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket
                .set_read_timeout(Some(left))
                .map_err(|e| MeasureError::io("set udp read timeout", e))?;
            let n = match socket.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(MeasureError::io(
                        format!("receive report from {peer} (udp)"),
                        e,
                    ))
                }
            };
            if let Ok((UdpKind::Report, id, body)) = parse_udp(buf.get(..n).unwrap_or_default()) {
                if id == session {
                    return SinkSummary::decode(body)
                        .map_err(|source| MeasureError::Protocol { peer, source });
                }
            }
        }
    }
    Err(MeasureError::Timeout(format!(
        "no sink report from {peer} (udp) within {timeout:?}"
    )))
}

/// A session id unique enough per client socket (the server keys sessions by address too).
fn new_session_id() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    nanos ^ (u64::from(std::process::id()) << 32) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
