//! TCP side of the echo server: accept loop, framed echo, and sink.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{Shared, TICK};
use crate::error::is_timeout;
use crate::protocol::{
    decode_frame_header, decode_hello, encode_hello, Mode, SinkSummary, FRAME_HEADER_LEN, HELLO_LEN,
};
use crate::rusage::thread_cpu;

/// Sink read buffer: large, so that the server's own cost per byte stays small and a
/// measured difference between message sizes is the client's, not an artefact of ours.
const SINK_BUF: usize = 256 * 1024;

pub(super) fn accept_loop(listener: TcpListener, shared: &std::sync::Arc<Shared>) {
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stopping() {
        match listener.accept() {
            Ok((stream, peer)) => {
                conns.retain(|h| !h.is_finished());
                if conns.len() >= shared.config.max_connections {
                    tracing::warn!(%peer, "too many connections; closing");
                    continue;
                }
                shared.count(|c| &c.tcp_connections, 1);
                let sh = std::sync::Arc::clone(shared);
                match thread::Builder::new()
                    .name("echo-tcp".into())
                    .spawn(move || serve_connection(stream, peer, &sh))
                {
                    Ok(h) => conns.push(h),
                    Err(e) => tracing::warn!(%peer, "cannot spawn connection thread: {e}"),
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // EMFILE and friends: back off rather than spin on the error.
                tracing::warn!("accept: {e}");
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for h in conns {
        let _ = h.join();
    }
}

fn serve_connection(mut stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    match serve(&mut stream, shared) {
        Ok(()) => tracing::debug!(%peer, "connection closed"),
        Err(e) => {
            if e.kind() == io::ErrorKind::InvalidData {
                shared.count(|c| &c.malformed, 1);
            }
            tracing::debug!(%peer, "connection ended: {e}");
        }
    }
}

fn serve(stream: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    // Without TCP_NODELAY, Nagle would hold a small echo back until the previous one is
    // acknowledged, and a round trip would measure the delayed-ACK timer instead.
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(TICK))?;
    stream.set_write_timeout(Some(shared.config.idle_timeout))?;
    let mut hello = [0u8; HELLO_LEN];
    if read_full(stream, &mut hello, shared)? == Filled::Eof {
        return Ok(());
    }
    let mode = decode_hello(&hello).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    stream.write_all(&encode_hello(mode))?;
    match mode {
        Mode::Echo => echo(stream, shared),
        Mode::Sink => sink(stream, shared),
    }
}

/// dkbenchs: "read packet from network; write packet back to sender", one whole frame at a
/// time, until the client closes.
fn echo(stream: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    // Header and payload live in one buffer so the reply goes out in one write(2).
    let mut buf = vec![0u8; FRAME_HEADER_LEN];
    loop {
        let mut header = [0u8; FRAME_HEADER_LEN];
        if read_full(stream, &mut header, shared)? == Filled::Eof {
            return Ok(());
        }
        let len = decode_frame_header(header)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        buf.resize(FRAME_HEADER_LEN + len, 0);
        let (head, payload) = buf.split_at_mut(FRAME_HEADER_LEN);
        head.copy_from_slice(&header);
        if read_full(stream, payload, shared)? == Filled::Eof && len > 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        stream.write_all(&buf)?;
        shared.count(|c| &c.echoed, 1);
    }
}

/// trafgens: read and discard until end of stream, then report what arrived and what it cost.
fn sink(stream: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let cpu0 = thread_cpu()?;
    let mut buf = vec![0u8; SINK_BUF];
    let mut bytes = 0u64;
    let mut reads = 0u64;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let mut idle_since = Instant::now();
    loop {
        if shared.stopping() {
            return Err(io::Error::other("server stopping"));
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = Instant::now();
                first.get_or_insert(now);
                last = now;
                idle_since = now;
                bytes += n as u64;
                reads += 1;
            }
            Err(e) if is_timeout(&e) => {
                if idle_since.elapsed() > shared.config.idle_timeout {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let cpu = thread_cpu()?.since(cpu0);
    let (cpu_user_us, cpu_sys_us) = cpu.to_micros();
    let span = first.map_or(Duration::ZERO, |f| last.duration_since(f));
    let summary = SinkSummary {
        bytes,
        units: reads,
        cpu_user_us,
        cpu_sys_us,
        span_ns: u64::try_from(span.as_nanos()).unwrap_or(u64::MAX),
    };
    shared.count(|c| &c.sunk_bytes, bytes);
    stream.write_all(&summary.encode())?;
    tracing::debug!(bytes, reads, "tcp sink finished");
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Filled {
    Full,
    /// End of stream before the first byte (a clean close between messages).
    Eof,
}

/// Fills `buf` completely, tolerating the read timeout ticks; end of stream in the middle is
/// an error, at the very start it is [`Filled::Eof`].
fn read_full(stream: &mut TcpStream, buf: &mut [u8], shared: &Shared) -> io::Result<Filled> {
    let mut filled = 0;
    let mut idle_since = Instant::now();
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        if shared.stopping() {
            return Err(io::Error::other("server stopping"));
        }
        match stream.read(rest) {
            Ok(0) if filled == 0 => return Ok(Filled::Eof),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                filled += n;
                idle_since = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                if idle_since.elapsed() > shared.config.idle_timeout {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Filled::Full)
}
