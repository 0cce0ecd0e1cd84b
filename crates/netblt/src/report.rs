//! One result per transfer, for people and programs: [`TransferReport`].
//!
//! Its JSON form (serde) has the fields of `netblt sim --json` (RFC 1030's
//! appendix columns and both throughputs) plus wall time, CPU seconds of this
//! process, the digest, and the I/O counters.

use serde::{Serialize, Serializer};

use netblt_proto::{Connection, Stats};

use crate::app::transfer::Transfer;
use crate::app::{hex, Kind};
use crate::diagnosis::Diagnosis;
use crate::error::{connection_kind, neutral, AppError, Error, ErrorKind};
use crate::error_code::ErrorCodes;

/// CPU seconds (user, system) used by this process so far.
pub(crate) fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills a zeroed rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// Which way the data went, seen from this end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// This end sent the data.
    Send,
    /// This end received the data.
    Receive,
}

/// System-call counters of an active end's socket (`netblt bench --json`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IoCounters {
    /// `sendmmsg`/`sendmsg` calls.
    pub send_syscalls: u64,
    /// `recvmmsg` calls.
    pub recv_syscalls: u64,
    /// Times segmentation offload (GSO) was refused by the kernel and
    /// turned off.
    pub gso_fallbacks: u64,
}

/// What the data sender's rate controller believed when the transfer ended
/// (docs/decisions.md, R1).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RateReport {
    /// Pacing rate, bits/s of data.
    pub rate_bps: f64,
    /// Why the rate was what it was.
    pub reason: &'static str,
    /// Estimated bottleneck rate, bits/s of data (lost packets counted).
    pub bottleneck_bps: Option<f64>,
    /// Smallest round trip seen (the path without queues), milliseconds.
    pub min_rtt_ms: Option<f64>,
    /// Latest round-trip sample, milliseconds.
    pub last_rtt_ms: Option<f64>,
    /// Loss rate treated as link noise (0..1).
    pub noise_loss: f64,
    /// Rate cuts for congestion.
    pub congestion_events: u64,
    /// The last maximum the application set while the transfer ran
    /// (`--rate-file`, [`RateControl`](crate::RateControl); decision R27),
    /// bits/s of data; `None` when it set none.
    pub limit_max_bps: Option<u64>,
    /// The last minimum it set, when not 0.
    pub limit_min_bps: Option<u64>,
}

/// The result of one transfer, whichever end and direction.
///
/// `error` is `None` exactly when the transfer succeeded: the connection
/// ended well and the data were checked, by the BLAKE3 digest the receiver
/// checks before its last OK ([`verified`](Self::verified)) or, for an
/// encrypted [`bench`](crate::bench) without
/// [`SendOptions::verify`](crate::SendOptions::verify), by every packet's
/// authentication. A resumed transfer of a file the receiver already had
/// whole sends nothing, succeeds and is not `verified` (see
/// [`resumed_from`](Self::resumed_from)).
///
/// Its JSON form has, beside `error` (the message), the failure's stable
/// codes (decision F26): `error_kind` ([`ErrorKind::code`] of
/// [`error_kind`](Self::error_kind); null on success), and `peer_reason`
/// ([`PeerReason::code`](crate::PeerReason::code)), `peer_detail`
/// ([`PeerReason::detail`](crate::PeerReason::detail), F28) and `io_kind`
/// ([`io_kind_code`](crate::io_kind_code)) when the kind has one.
#[derive(Debug, Clone, Serialize)]
// The derive writes the fields (as `TransferReport::serialize`); the
// `Serialize` impl below adds the codes, which come from `error_kind()`
// (the kind found, else the error's own), not from one field.
#[serde(remote = "Self")]
#[non_exhaustive]
pub struct TransferReport {
    /// The file's name as sent (relative path), or `sink`.
    pub name: String,
    /// The peer's address.
    pub peer: String,
    /// Which way data went from this end.
    pub direction: Direction,
    /// The file's size in bytes (without the 32-byte digest that follows it).
    pub bytes: u64,
    /// Payload bytes that got across: acknowledged by the receiver's OKs
    /// (data sender) or received (data receiver), those already there on a
    /// resume included. `bytes` when the transfer succeeded; what a
    /// refused (0) or interrupted transfer moved, which `bytes` does not say.
    pub bytes_done: u64,
    /// Negotiated DATA packets per burst.
    pub burst_size: u16,
    /// Negotiated milliseconds between bursts.
    pub burst_interval_ms: u16,
    /// Negotiated data bytes per DATA packet.
    pub packet_size: u16,
    /// Negotiated bytes per NETBLT buffer.
    pub buffer_size: u32,
    /// Negotiated buffers outstanding at once (the ceiling).
    pub buffers: u16,
    /// Data sender: the most buffers it held outstanding at once, chosen up
    /// to `buffers` from its rate and how long buffers stayed outstanding
    /// (decision R11). 0 for a receiver.
    pub buffers_peak: u64,
    /// Data receiver: packets found missing (RESENDs, #LOSS as the protocol
    /// sees it). Data sender: packets it was asked to resend (the sender
    /// cannot see the receiver's counters).
    pub lost: u64,
    /// DATA packets sent again (#RXM).
    pub retransmitted: u64,
    /// Data timer expiries (DTMOS).
    pub data_timeouts: u64,
    /// Control packets sent.
    pub control_packets: u64,
    /// Control packets sent again.
    pub control_retransmissions: u64,
    /// NULL-ACK packets sent.
    pub null_acks: u64,
    /// The bytes that travelled over the time from the first DATA to the
    /// end, in bits per second (only on success): a resumed transfer's
    /// `resumed_from` bytes, already at the receiver, are not counted, at
    /// either end.
    pub real_throughput_bps: Option<f64>,
    /// RFC 1030's SPEED: the rate while buffers were flowing, in bits per
    /// second (only on success, and only at the data sender, which knows
    /// when the last new data left: `None` for a [`get`](crate::get)).
    pub steady_throughput_bps: Option<f64>,
    /// The data were verified end to end.
    pub verified: bool,
    /// Seconds from start to end.
    pub wall_time_s: f64,
    /// CPU seconds in user mode spent by this process during the transfer
    /// (a receiver reports the whole process's).
    pub cpu_user_s: f64,
    /// CPU seconds in the kernel, likewise.
    pub cpu_sys_s: f64,
    /// The data's BLAKE3 digest in hex, when known.
    pub digest: Option<String>,
    /// Malformed datagrams dropped by the connection.
    pub malformed: u64,
    /// Well-formed but unexpected packets ignored.
    pub unexpected: u64,
    /// Datagrams this end sent.
    pub datagrams_sent: u64,
    /// Datagrams this end received.
    pub datagrams_received: u64,
    /// Smoothed round-trip time, milliseconds: of the control messages at
    /// the data receiver, of the data (FEEDBACK echoes) at the data sender.
    pub srtt_ms: Option<f64>,
    /// Data sender with rate control on: the rate controller at the end.
    pub rate: Option<RateReport>,
    /// What limited the transfer's speed ("why was it slow?"), from the
    /// measured counters: active end, successful transfers only.
    pub limit: Option<Diagnosis>,
    /// A resumed transfer: bytes of the file that were already at the
    /// receiver and were not sent (`bytes` counts the whole file). Equal to
    /// `bytes`, with no `digest`: the receiver had the whole file (same size
    /// and modification time) and nothing was sent or verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<u64>,
    /// Something the user should know: a partial copy discarded because the
    /// file changed, or a file sent to a receiver that discards data
    /// (`recv --sink`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why the transfer failed (`None`: it succeeded). Serialized as its
    /// message. To match on why, ask [`error_kind`](Self::error_kind) (or
    /// [`Error::kind`] of the error a call returned), not this error alone,
    /// whose variant is the coarse one.
    #[serde(serialize_with = "error_message")]
    pub error: Option<Error>,
    /// Why, to match on ([`error_kind`](Self::error_kind)), as found where
    /// the failure was (serialized as codes, by `Serialize` below).
    #[serde(skip)]
    pub(crate) kind: Option<ErrorKind>,
    /// Socket counters (active end only; not serialized).
    #[serde(skip)]
    pub io: Option<IoCounters>,
    /// Encrypted mode: suite, peer and refused-packet counters (active
    /// end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::SecurityReport>,
    /// A bundle of files ([`send_bundle`](crate::send_bundle)): files,
    /// directories and bytes sent or stored, and the entries that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<crate::FilesReport>,
}

impl Serialize for TransferReport {
    /// The fields, then `error_kind` and, when they apply, `peer_reason`,
    /// `peer_detail` (F28) and `io_kind` (F26).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WithCodes<'a> {
            #[serde(flatten, serialize_with = "fields")]
            report: &'a TransferReport,
            #[serde(flatten)]
            codes: ErrorCodes<'a>,
        }
        fn fields<S: Serializer>(r: &&TransferReport, s: S) -> Result<S::Ok, S::Error> {
            TransferReport::serialize(r, s)
        }
        let kind = self.error_kind();
        WithCodes {
            report: self,
            codes: ErrorCodes::of(kind.as_ref()),
        }
        .serialize(s)
    }
}

fn error_message<S: Serializer>(e: &Option<Error>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.serialize_some(&e.to_string()),
        None => s.serialize_none(),
    }
}

impl TransferReport {
    /// The transfer succeeded (`error` is `None`; see the type's docs for
    /// what was checked).
    pub fn succeeded(&self) -> bool {
        self.error.is_none()
    }

    /// Why the transfer failed, to match on (`None`: it succeeded): the
    /// kind found where the failure was, else the one `error`'s variant
    /// says (see [`Error::kind`], which returns this for
    /// [`Error::Transfer`]).
    pub fn error_kind(&self) -> Option<ErrorKind> {
        let e = self.error.as_ref()?;
        Some(self.kind.clone().unwrap_or_else(|| e.cause().kind()))
    }

    /// `Ok(self)` on success, else [`Error::Transfer`] holding it.
    pub fn into_result(self) -> Result<TransferReport, Error> {
        if self.error.is_none() {
            Ok(self)
        } else {
            Err(Error::Transfer(Box::new(self)))
        }
    }

    /// Builds the report of a finished transfer.
    pub(crate) fn new(
        t: &Transfer,
        conn: &Connection,
        peer: String,
        wall: std::time::Duration,
        cpu: (f64, f64),
    ) -> TransferReport {
        let st: Stats = conn.stats();
        let p = t.params.unwrap_or(*conn.params());
        let ok = t.succeeded(conn);
        let bytes = t.size.unwrap_or(0);
        let real = if t.sender {
            st.real_throughput_bps()
        } else {
            // The bytes that travelled, as the sender counts them: a resumed
            // file's first part was already here (F18: 124 Mb/s was reported
            // on a 100 Mb/s link, the whole file over the rest's time).
            let moved = bytes.saturating_sub(t.resumed_from.unwrap_or(0));
            match (st.started_at, st.completed_at) {
                (Some(a), Some(b)) if b > a => Some(moved as f64 * 8.0 / (b - a).as_secs_f64()),
                _ => None,
            }
        };
        let (error, kind) = if ok {
            (None, None)
        } else if let Some(e) = &t.app_error {
            (Some(Error::from(e.clone())), Some(e.reason.clone()))
        } else if let Some(e) = t
            .conn_error
            .as_ref()
            .or(conn.result().and_then(|r| r.as_ref().err()))
        {
            (Some(Error::Failed(describe(e))), Some(connection_kind(e)))
        } else {
            let e = AppError::new(Kind::Failed, "transfer did not complete", "");
            (Some(Error::from(e)), Some(ErrorKind::Other))
        };
        TransferReport {
            name: t.name.clone(),
            peer,
            direction: if t.sender {
                Direction::Send
            } else {
                Direction::Receive
            },
            bytes,
            bytes_done: t.progress(),
            burst_size: p.burst_size,
            burst_interval_ms: p.burst_interval_ms,
            packet_size: p.packet_size,
            buffer_size: p.buffer_size,
            buffers: p.max_buffers,
            buffers_peak: st.peak_buffers,
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
            rate: conn.rate_state().map(|r| RateReport {
                rate_bps: r.rate_bps,
                reason: r.reason.name(),
                bottleneck_bps: r.bottleneck_bps,
                min_rtt_ms: r.min_rtt.map(|d| d.as_secs_f64() * 1e3),
                last_rtt_ms: r.last_rtt.map(|d| d.as_secs_f64() * 1e3),
                noise_loss: r.noise_loss,
                congestion_events: r.congestion_events,
                limit_max_bps: conn.rate_limits().and_then(|l| l.max_bps),
                limit_min_bps: conn.rate_limits().map(|l| l.min_bps).filter(|&m| m > 0),
            }),
            limit: None,
            resumed_from: t.resumed_from.filter(|&f| f > 0),
            note: t.note.clone(),
            error,
            kind,
            io: None,
            security: None,
            files: t.files_report(),
        }
    }
}

/// A connection error in the user's words (the death timer's value is said).
fn describe(e: &netblt_proto::ConnectionError) -> String {
    use netblt_proto::ConnectionError as E;
    match e {
        E::DeathTimeout { timeout } => format!(
            "peer silent for {} s (death timer)",
            timeout.as_secs().max(1)
        ),
        E::OpenTimeout { attempts } => {
            format!("no answer after {attempts} OPEN packets (host down or port filtered?)")
        }
        E::Refused { reason } => format!("refused by peer: {}", neutral(reason)),
        E::PeerAborted { reason } => format!("aborted by peer: {}", neutral(reason)),
        // A bundle's receiver lists the entries it could not store, an
        // older one with the tool's advice on each (F25).
        E::PeerQuit { reason } => format!("peer quit: {}", neutral(reason)),
        other => other.to_string(),
    }
}
