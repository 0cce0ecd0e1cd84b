//! UDP side of the echo server: echo datagrams back, count sink sessions, answer finishes.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::{Shared, TICK};
use crate::error::is_timeout;
use crate::protocol::{parse_udp, write_udp_header, SinkSummary, UdpKind, UDP_HEADER_LEN};
use crate::rusage::{thread_cpu, CpuTimes};

/// Most sink sessions tracked at once; datagrams of further new sessions are dropped.
pub const MAX_SESSIONS: usize = 1024;

/// How long a finished session's report is kept for repeated finish requests.
const REPORT_KEEP: Duration = Duration::from_secs(30);

type Key = (SocketAddr, u64);

#[derive(Debug)]
struct Session {
    bytes: u64,
    datagrams: u64,
    first: Instant,
    last: Instant,
    cpu0: CpuTimes,
}

pub(super) fn serve(socket: UdpSocket, shared: &Shared) {
    if let Err(e) = socket.set_read_timeout(Some(TICK)) {
        tracing::warn!("udp SO_RCVTIMEO: {e}; shutdown may hang");
    }
    // Best effort: a larger receive buffer lets a sink absorb a burst instead of dropping it.
    // The kernel caps this at net.core.rmem_max, which is fine.
    let _ = socket2::SockRef::from(&socket).set_recv_buffer_size(4 << 20);
    let mut buf = vec![0u8; 65_536];
    let mut sessions: HashMap<Key, Session> = HashMap::new();
    let mut reports: HashMap<Key, (SinkSummary, Instant)> = HashMap::new();
    let mut last_sweep = Instant::now();
    while !shared.stopping() {
        match socket.recv_from(&mut buf) {
            Ok((n, peer)) => {
                if let Some(datagram) = buf.get(..n) {
                    handle(&socket, datagram, peer, shared, &mut sessions, &mut reports);
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                // On Linux an unconnected socket can still see errors queued by ICMP for an
                // earlier reply (e.g. the client went away); they concern that client only.
                tracing::debug!("udp recv: {e}");
            }
        }
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            let idle = shared.config.idle_timeout;
            sessions.retain(|_, s| s.last.elapsed() < idle);
            reports.retain(|_, (_, at)| at.elapsed() < REPORT_KEEP);
        }
    }
}

fn handle(
    socket: &UdpSocket,
    datagram: &[u8],
    peer: SocketAddr,
    shared: &Shared,
    sessions: &mut HashMap<Key, Session>,
    reports: &mut HashMap<Key, (SinkSummary, Instant)>,
) {
    let (kind, id, payload) = match parse_udp(datagram) {
        Ok(p) => p,
        Err(e) => {
            shared.count(|c| &c.malformed, 1);
            tracing::trace!(%peer, "dropping malformed datagram: {e}");
            return;
        }
    };
    match kind {
        UdpKind::Echo => {
            // dkbenchs: write the packet back to its originator, byte for byte.
            if let Err(e) = socket.send_to(datagram, peer) {
                tracing::debug!(%peer, "udp echo send: {e}");
            }
            shared.count(|c| &c.echoed, 1);
        }
        UdpKind::SinkData => {
            let now = Instant::now();
            let key = (peer, id);
            if !sessions.contains_key(&key) && sessions.len() >= MAX_SESSIONS {
                tracing::debug!(%peer, "too many udp sink sessions; dropping");
                return;
            }
            let s = sessions.entry(key).or_insert_with(|| Session {
                bytes: 0,
                datagrams: 0,
                first: now,
                last: now,
                cpu0: thread_cpu().unwrap_or_default(),
            });
            s.bytes += payload.len() as u64;
            s.datagrams += 1;
            s.last = now;
            shared.count(|c| &c.sunk_bytes, payload.len() as u64);
        }
        UdpKind::Finish => {
            let key = (peer, id);
            let summary = match sessions.remove(&key) {
                Some(s) => {
                    // The UDP thread serves every client, so this CPU figure also contains
                    // whatever else it did during the session (documented in `cpu`).
                    let cpu = thread_cpu().unwrap_or_default().since(s.cpu0);
                    let (cpu_user_us, cpu_sys_us) = cpu.to_micros();
                    let span = s.last.duration_since(s.first);
                    let summary = SinkSummary {
                        bytes: s.bytes,
                        units: s.datagrams,
                        cpu_user_us,
                        cpu_sys_us,
                        span_ns: u64::try_from(span.as_nanos()).unwrap_or(u64::MAX),
                    };
                    if reports.len() < MAX_SESSIONS {
                        reports.insert(key, (summary, Instant::now()));
                    }
                    summary
                }
                // A repeated finish gets the same report; a finish for a session we never saw
                // (all its data lost) gets an honest zero.
                None => reports.get(&key).map(|(s, _)| *s).unwrap_or_default(),
            };
            let mut reply = [0u8; UDP_HEADER_LEN + crate::protocol::SUMMARY_LEN];
            if write_udp_header(&mut reply, UdpKind::Report, id).is_ok() {
                if let Some(body) = reply.get_mut(UDP_HEADER_LEN..) {
                    body.copy_from_slice(&summary.encode());
                }
                if let Err(e) = socket.send_to(&reply, peer) {
                    tracing::debug!(%peer, "udp report send: {e}");
                }
            }
        }
        UdpKind::Report => {
            // Only servers send reports; one arriving here is noise.
            shared.count(|c| &c.malformed, 1);
        }
    }
}
