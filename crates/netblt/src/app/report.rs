//! One result per transfer: a line for people, a JSON object for programs.
//!
//! The JSON object has the fields of `netblt sim --json` (RFC 1030's
//! appendix columns and both throughputs) plus wall time, CPU seconds of this
//! process, the digest, and the I/O counters.

use serde::Serialize;

use netblt_proto::{Connection, Stats};

use super::transfer::Transfer;
use super::{hex, AppError};
use crate::exit;
use crate::units::{fmt_bytes, fmt_rate};

/// CPU seconds (user, system) used by this process so far.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills a zeroed rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The result of one transfer.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub name: String,
    pub peer: String,
    /// "send" or "receive": which way data went from this end.
    pub direction: &'static str,
    pub bytes: u64,
    pub burst_size: u16,
    pub burst_interval_ms: u16,
    pub packet_size: u16,
    pub buffer_size: u32,
    pub buffers: u16,
    /// Data receiver: packets found missing (RESENDs, #LOSS as the protocol
    /// sees it). Data sender: packets it was asked to resend (the sender
    /// cannot see the receiver's counters).
    pub lost: u64,
    pub retransmitted: u64,
    pub data_timeouts: u64,
    pub control_packets: u64,
    pub control_retransmissions: u64,
    pub null_acks: u64,
    pub real_throughput_bps: Option<f64>,
    pub steady_throughput_bps: Option<f64>,
    pub verified: bool,
    pub wall_time_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub digest: Option<String>,
    pub malformed: u64,
    pub unexpected: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub srtt_ms: Option<f64>,
    pub error: Option<String>,
    #[serde(skip)]
    pub code: i32,
}

impl Report {
    pub fn new(
        t: &Transfer,
        conn: &Connection,
        peer: String,
        wall: std::time::Duration,
        cpu: (f64, f64),
    ) -> Report {
        let st: Stats = conn.stats();
        let p = t.params.unwrap_or(*conn.params());
        let ok = t.succeeded(conn);
        let bytes = t.size.unwrap_or(0);
        let real = if t.sender {
            st.real_throughput_bps()
        } else {
            match (st.started_at, st.completed_at) {
                (Some(a), Some(b)) if b > a => Some(bytes as f64 * 8.0 / (b - a).as_secs_f64()),
                _ => None,
            }
        };
        let (error, code) = if ok {
            (None, exit::OK)
        } else if let Some(e) = &t.app_error {
            (Some(e.message.clone()), e.code)
        } else if let Some(e) = &t.conn_error {
            (Some(describe(e, conn)), exit::FAILED)
        } else if let Some(Err(e)) = conn.result() {
            (Some(describe(e, conn)), exit::FAILED)
        } else {
            (Some("transfer did not complete".into()), exit::FAILED)
        };
        Report {
            name: t.name.clone(),
            peer,
            direction: if t.sender { "send" } else { "receive" },
            bytes,
            burst_size: p.burst_size,
            burst_interval_ms: p.burst_interval_ms,
            packet_size: p.packet_size,
            buffer_size: p.buffer_size,
            buffers: p.max_buffers,
            lost: if t.sender {
                st.data_packets_retransmitted
            } else {
                st.data_packets_lost
            },
            retransmitted: st.data_packets_retransmitted,
            data_timeouts: st.data_timeouts,
            control_packets: st.control_packets_sent,
            control_retransmissions: st.control_retransmissions,
            null_acks: st.null_acks_sent,
            real_throughput_bps: if ok { real } else { None },
            steady_throughput_bps: if ok { st.steady_throughput_bps() } else { None },
            verified: ok,
            wall_time_s: wall.as_secs_f64(),
            cpu_user_s: cpu.0,
            cpu_sys_s: cpu.1,
            digest: t.digest.map(|d| hex(&d)),
            malformed: st.malformed,
            unexpected: st.unexpected,
            datagrams_sent: st.datagrams_sent,
            datagrams_received: st.datagrams_received,
            srtt_ms: st.srtt.map(|d| d.as_secs_f64() * 1e3),
            error,
            code,
        }
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let arrow = if self.direction == "send" { "->" } else { "<-" };
        match &self.error {
            None => format!(
                "{} {arrow} {}: {} in {:.2} s, {} (steady {}), verified, blake3 {}{}",
                self.name,
                self.peer,
                fmt_bytes(self.bytes),
                self.wall_time_s,
                self.real_throughput_bps.map_or("-".into(), fmt_rate),
                self.steady_throughput_bps.map_or("-".into(), fmt_rate),
                self.digest
                    .as_deref()
                    .map_or("-", |d| d.get(..16).unwrap_or(d)),
                if self.retransmitted > 0 || self.lost > 0 {
                    format!(", {} lost, {} resent", self.lost, self.retransmitted)
                } else {
                    String::new()
                }
            ),
            Some(e) => format!("{} {arrow} {}: FAILED: {e}", self.name, self.peer),
        }
    }

    /// The RFC 1030 appendix row (`commands::sim::TABLE_HEADER`'s columns).
    pub fn table_row(&self) -> String {
        let speed = self
            .steady_throughput_bps
            .map_or_else(|| "-".to_string(), |b| format!("{:.3}", b / 1e6));
        format!(
            "{:<8} {:<6} {:<8} {:<6} {:<6} {:<6} {:<6} {:<6} {}",
            format!("{}/{}", self.burst_size, self.burst_interval_ms),
            self.packet_size,
            self.buffer_size,
            self.bytes / 1000,
            self.buffers,
            self.lost,
            self.retransmitted,
            self.data_timeouts,
            speed
        )
    }
}

/// A connection error in the user's words (the death timer's value is said).
pub fn describe(e: &netblt_proto::ConnectionError, conn: &Connection) -> String {
    use netblt_proto::ConnectionError as E;
    match e {
        E::DeathTimeout { timeout } => format!(
            "peer silent for {} s (death timer)",
            timeout.as_secs().max(1)
        ),
        E::OpenTimeout { attempts } => {
            format!("no answer after {attempts} OPEN packets (host down or port filtered?)")
        }
        E::Refused { reason } => format!("refused by peer: {reason}"),
        E::PeerAborted { reason } => format!("aborted by peer: {reason}"),
        other => {
            let _ = conn;
            other.to_string()
        }
    }
}

/// An error that ends a command before any report: keeps its exit code.
pub fn app_error_to_cli(e: AppError) -> crate::exit::CliError {
    crate::exit::CliError::new(e.code, e.message)
}
