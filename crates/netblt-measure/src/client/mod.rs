//! Client ends of the measurement protocol: the echo client (dkbench) and the sink client
//! (trafgen). Connection setup happens in `connect`, outside every timed interval, as XUNET
//! did ("the virtual circuit connection is established prior to reading the clock").

mod echo;
mod sink;

pub use echo::EchoClient;
pub use sink::{SinkConnection, SinkReport};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use crate::error::{is_timeout, MeasureError};
use crate::protocol::{decode_hello, encode_hello, Mode, HELLO_LEN};

/// Connects over TCP, exchanges the hello for `mode`, and sets `TCP_NODELAY` and timeouts.
fn tcp_connect(peer: SocketAddr, mode: Mode, timeout: Duration) -> Result<TcpStream, MeasureError> {
    let ctx = |what: &str| format!("{what} {peer} (tcp)");
    let mut stream = TcpStream::connect_timeout(&peer, timeout.max(Duration::from_secs(1)))
        .map_err(|e| {
            MeasureError::io(
                format!("connect to {peer} (tcp); is `netblt echo` running there?"),
                e,
            )
        })?;
    stream
        .set_nodelay(true)
        .map_err(|e| MeasureError::io(ctx("TCP_NODELAY on"), e))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| MeasureError::io(ctx("read timeout on"), e))?;
    stream
        .set_write_timeout(Some(timeout.max(Duration::from_secs(1))))
        .map_err(|e| MeasureError::io(ctx("write timeout on"), e))?;
    stream
        .write_all(&encode_hello(mode))
        .map_err(|e| MeasureError::io(ctx("send hello to"), e))?;
    let mut reply = [0u8; HELLO_LEN];
    stream.read_exact(&mut reply).map_err(|e| {
        if is_timeout(&e) {
            MeasureError::Timeout(format!(
                "{peer} did not answer the hello; not `netblt echo`?"
            ))
        } else {
            MeasureError::io(ctx("read hello from"), e)
        }
    })?;
    match decode_hello(&reply) {
        Ok(m) if m == mode => Ok(stream),
        Ok(m) => Err(MeasureError::EchoMismatch {
            peer,
            detail: format!("asked for {mode} service, server answered {m}"),
        }),
        Err(source) => Err(MeasureError::Protocol { peer, source }),
    }
}

/// A UDP socket connected to `peer`, on the matching address family.
fn udp_connect(peer: SocketAddr) -> Result<UdpSocket, MeasureError> {
    let local: SocketAddr = if peer.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).map_err(|e| MeasureError::io("bind udp socket", e))?;
    // Connecting filters out datagrams from anyone else and lets ICMP "port unreachable" come
    // back as ECONNREFUSED, so a missing server is an error rather than a run of losses.
    socket
        .connect(peer)
        .map_err(|e| MeasureError::io(format!("connect udp socket to {peer}"), e))?;
    Ok(socket)
}
