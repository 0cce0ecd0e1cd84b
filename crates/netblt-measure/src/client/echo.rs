//! The dkbench side: one message outstanding, timed from just before the send to just after
//! the whole echo has been read.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::error::{is_timeout, MeasureError};
use crate::protocol::{
    decode_frame_header, encode_frame_header, parse_udp, write_udp_header, Mode, UdpKind,
    FRAME_HEADER_LEN, MAX_TCP_MESSAGE, MAX_UDP_PAYLOAD, UDP_HEADER_LEN,
};
use crate::transport::Transport;

/// A connection to an echo server that measures one round trip at a time.
///
/// XUNET's dkbench: "read the clock, write 'packet' to destination, read 'packet' from
/// network, read the clock again". Only one message is ever outstanding, so a reply can
/// never be mistaken for another's; over UDP we still carry a sequence number, because a
/// message we gave up on may be answered late.
#[derive(Debug)]
pub struct EchoClient {
    link: Link,
    peer: SocketAddr,
    timeout: Duration,
    seq: u64,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
}

#[derive(Debug)]
enum Link {
    Tcp(TcpStream),
    Udp {
        socket: UdpSocket,
        /// True when the socket's read timeout was shortened while skipping a stale echo.
        timeout_dirty: bool,
    },
}

impl EchoClient {
    /// Connects to `peer`. For TCP the connection and hello happen here, outside any timing.
    ///
    /// `timeout` is how long one message may take: over UDP a message not echoed in time is
    /// counted lost; over TCP it is an error, because a byte stream cannot skip a message.
    ///
    /// # Errors
    /// [`MeasureError::Io`] when the server cannot be reached, [`MeasureError::Protocol`] when
    /// it is not a `netblt echo`, [`MeasureError::TransportUnavailable`] for NETBLT.
    pub fn connect(
        peer: SocketAddr,
        transport: Transport,
        timeout: Duration,
    ) -> Result<EchoClient, MeasureError> {
        let timeout = timeout.max(Duration::from_millis(1));
        let link = match transport {
            Transport::Tcp => {
                let stream = super::tcp_connect(peer, Mode::Echo, timeout)?;
                Link::Tcp(stream)
            }
            Transport::Udp => {
                let socket = super::udp_connect(peer)?;
                socket
                    .set_read_timeout(Some(timeout))
                    .map_err(|e| MeasureError::io("set udp read timeout", e))?;
                Link::Udp {
                    socket,
                    timeout_dirty: false,
                }
            }
            Transport::Netblt => return Err(MeasureError::TransportUnavailable(transport)),
        };
        Ok(EchoClient {
            link,
            peer,
            timeout,
            seq: 0,
            send_buf: Vec::new(),
            recv_buf: vec![0u8; 65_536],
        })
    }

    /// The largest message this connection can echo.
    pub fn max_message(&self) -> usize {
        match self.link {
            Link::Tcp(_) => MAX_TCP_MESSAGE,
            Link::Udp { .. } => MAX_UDP_PAYLOAD,
        }
    }

    /// The server's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Sends one message of `size` payload bytes and waits for its echo.
    ///
    /// Returns the round-trip time, or `None` if (UDP only) no echo came within the timeout.
    ///
    /// # Errors
    /// [`MeasureError::SizeOutOfRange`] for a size the transport cannot carry; I/O, protocol
    /// and mismatch errors as they occur; [`MeasureError::Timeout`] over TCP.
    pub fn round_trip(&mut self, size: usize) -> Result<Option<Duration>, MeasureError> {
        if size > self.max_message() {
            return Err(MeasureError::SizeOutOfRange {
                size,
                max: self.max_message(),
                transport: self.transport(),
            });
        }
        self.seq = self.seq.wrapping_add(1);
        match &mut self.link {
            Link::Tcp(stream) => tcp_round_trip(
                stream,
                self.peer,
                self.seq,
                size,
                &mut self.send_buf,
                &mut self.recv_buf,
            )
            .map(Some),
            Link::Udp {
                socket,
                timeout_dirty,
            } => udp_round_trip(
                socket,
                timeout_dirty,
                self.peer,
                self.timeout,
                self.seq,
                size,
                &mut self.send_buf,
                &mut self.recv_buf,
            ),
        }
    }

    fn transport(&self) -> Transport {
        match self.link {
            Link::Tcp(_) => Transport::Tcp,
            Link::Udp { .. } => Transport::Udp,
        }
    }
}

/// Deterministic payload: varies with the sequence number so a stale echo cannot pass as a
/// fresh one of the same size.
fn fill_payload(buf: &mut [u8], seq: u64) {
    let s = seq as u8;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(s);
    }
}

fn tcp_round_trip(
    stream: &mut TcpStream,
    peer: SocketAddr,
    seq: u64,
    size: usize,
    send_buf: &mut Vec<u8>,
    recv_buf: &mut Vec<u8>,
) -> Result<Duration, MeasureError> {
    let header =
        encode_frame_header(size).map_err(|source| MeasureError::Protocol { peer, source })?;
    send_buf.clear();
    send_buf.extend_from_slice(&header);
    send_buf.resize(FRAME_HEADER_LEN + size, 0);
    if let Some(payload) = send_buf.get_mut(FRAME_HEADER_LEN..) {
        fill_payload(payload, seq);
    }
    if recv_buf.len() < size {
        recv_buf.resize(size, 0);
    }
    let read_err = |e: std::io::Error| {
        if is_timeout(&e) {
            MeasureError::Timeout(format!("no echo from {peer} (tcp) within the timeout"))
        } else {
            MeasureError::io(format!("read echo from {peer} (tcp)"), e)
        }
    };

    let t0 = Instant::now();
    stream
        .write_all(send_buf)
        .map_err(|e| MeasureError::io(format!("send to {peer} (tcp)"), e))?;
    let mut echoed_header = [0u8; FRAME_HEADER_LEN];
    stream.read_exact(&mut echoed_header).map_err(read_err)?;
    let len = decode_frame_header(echoed_header)
        .map_err(|source| MeasureError::Protocol { peer, source })?;
    if len != size {
        return Err(MeasureError::EchoMismatch {
            peer,
            detail: format!("sent {size} bytes, echo announces {len}"),
        });
    }
    let echoed = recv_buf.get_mut(..len).unwrap_or_default();
    stream.read_exact(echoed).map_err(read_err)?;
    let rtt = t0.elapsed();

    if send_buf.get(FRAME_HEADER_LEN..) != Some(&*echoed) {
        return Err(MeasureError::EchoMismatch {
            peer,
            detail: format!("content of a {size}-byte message differs"),
        });
    }
    Ok(rtt)
}

#[allow(clippy::too_many_arguments)]
fn udp_round_trip(
    socket: &UdpSocket,
    timeout_dirty: &mut bool,
    peer: SocketAddr,
    timeout: Duration,
    seq: u64,
    size: usize,
    send_buf: &mut Vec<u8>,
    recv_buf: &mut [u8],
) -> Result<Option<Duration>, MeasureError> {
    send_buf.clear();
    send_buf.resize(UDP_HEADER_LEN + size, 0);
    write_udp_header(send_buf, UdpKind::Echo, seq)
        .map_err(|source| MeasureError::Protocol { peer, source })?;
    if let Some(payload) = send_buf.get_mut(UDP_HEADER_LEN..) {
        fill_payload(payload, seq);
    }
    // Restore the full timeout outside the timed interval if skipping a stale echo last time
    // shortened it; on the normal path no setsockopt sits between the two clock readings.
    if *timeout_dirty {
        socket
            .set_read_timeout(Some(timeout))
            .map_err(|e| MeasureError::io("set udp read timeout", e))?;
        *timeout_dirty = false;
    }

    let t0 = Instant::now();
    let deadline = t0 + timeout;
    socket
        .send(send_buf)
        .map_err(|e| MeasureError::io(format!("send to {peer} (udp)"), e))?;
    loop {
        let n = match socket.recv(recv_buf) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(MeasureError::io(
                    format!("receive echo from {peer} (udp); is `netblt echo` running there?"),
                    e,
                ))
            }
        };
        let t1 = Instant::now();
        let datagram = recv_buf.get(..n).unwrap_or_default();
        match parse_udp(datagram) {
            Ok((UdpKind::Echo, id, payload)) if id == seq => {
                if payload.len() != size || send_buf.get(UDP_HEADER_LEN..) != Some(payload) {
                    return Err(MeasureError::EchoMismatch {
                        peer,
                        detail: format!(
                            "sent {size} bytes, echo carries {} (or different content)",
                            payload.len()
                        ),
                    });
                }
                return Ok(Some(t1.duration_since(t0)));
            }
            // A late echo of an earlier message, or noise: skip it and keep waiting for ours
            // until the original deadline.
            _ => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                socket
                    .set_read_timeout(Some(left))
                    .map_err(|e| MeasureError::io("set udp read timeout", e))?;
                *timeout_dirty = true;
            }
        }
    }
}
