//! RFC 1030's test application in simulation: one memory-to-memory NETBLT
//! transfer between host A (active end, data sender, WRITE mode) and host B
//! (passive end, data receiver).
//!
//! RFC 1030 §3: "The test application performs a simple memory-to-memory
//! transfer of an arbitrary amount of data. All data are actually allocated by
//! the application, given to the protocol layer, and copied into NETBLT
//! packets." Here the data are a seeded pseudo-random stream; both ends hash
//! what they sent and received with BLAKE3, and the report says whether the
//! two digests agree.

use netblt_proto::{
    Config, Connection, ConnectionError, Instant, Mode, PacingClock, Stats, TransferParams,
};
use serde::Serialize;

use crate::netblt_nodes::{LimitSchedule, ReceiverNode, SenderNode};
use crate::{Outcome, PathConfig, SimError, SimStats, Simulation};

/// Why a transfer could not even be simulated (a failed transfer is a
/// report, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// The path (links or host models) was rejected.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The NETBLT transfer parameters were rejected.
    #[error("bad transfer parameters: {0}")]
    Params(#[from] netblt_proto::ParamError),
}

const PORT_A: u16 = 4000;
const PORT_B: u16 = 30;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct TransferSpec {
    /// The path: links, host models, wire overhead, shared segment.
    pub path: PathConfig,
    /// NETBLT's transfer parameters (RFC 1030's BS/BI, PSZ, BFSZ, NBUFS).
    pub params: TransferParams,
    /// Bytes to move.
    pub size: u64,
    /// Seed of every random choice (links, hosts, segment, data stream).
    pub seed: u64,
    /// How the sender counts burst intervals.
    pub pacing_clock: PacingClock,
    /// Death timer of both ends.
    pub death_timeout: netblt_proto::Duration,
    /// Simulated time after which the run is abandoned.
    pub time_limit: netblt_proto::Duration,
    /// Rate control of the data sender (with the FEEDBACK extension);
    /// `None`: RFC 998's fixed rate, as the reproductions need.
    pub rate: Option<netblt_proto::RateConfig>,
    /// How the receiver sets its data timers; the engine's default
    /// (adaptive) unless a reproduction asks for RFC 998's rule.
    pub data_timer: netblt_proto::DataTimerPolicy,
    /// The receiver sends each control message in a CONTROL packet of its
    /// own, as the 1987 implementation did before RFC 1030 §7's change
    /// (see `ReceiverNode::split_control`); `false`: the engine's packing.
    pub one_control_message_per_packet: bool,
    /// Rate limits the sending application sets while the transfer runs
    /// (`Connection::set_rate_limits`, decision R27): at each offset from
    /// the start, in time order.
    pub limits: Vec<(netblt_proto::Duration, netblt_proto::RateLimits)>,
    /// Rate limits the receiving application sets while the transfer runs
    /// (decision R31: offered to the sender in the receiver's OKs), at each
    /// offset from the start, in time order; set once the OPEN has arrived.
    pub receiver_limits: Vec<(netblt_proto::Duration, netblt_proto::RateLimits)>,
}

impl TransferSpec {
    /// A transfer of `size` bytes with seed 1, RFC 1030's pacing (from the
    /// actual start of the previous burst), a 30 s death timer, a day's
    /// time limit and a fixed rate.
    pub fn new(path: PathConfig, params: TransferParams, size: u64) -> Self {
        TransferSpec {
            path,
            params,
            size,
            seed: 1,
            pacing_clock: PacingClock::FromActualStart,
            death_timeout: netblt_proto::Duration::from_secs(30),
            time_limit: netblt_proto::Duration::from_secs(24 * 3600),
            rate: None,
            data_timer: netblt_proto::DataTimerPolicy::Adaptive,
            one_control_message_per_packet: false,
            limits: Vec::new(),
            receiver_limits: Vec::new(),
        }
    }

    fn config(&self) -> Config {
        Config {
            params: self.params,
            death_timeout: self.death_timeout,
            pacing_clock: self.pacing_clock,
            max_datagram: netblt_wire::round_up4(
                netblt_wire::DATA_HEADER_LEN + usize::from(self.params.packet_size),
            )
            .max(netblt_wire::FEEDBACK_LEN),
            rate_feedback: self.rate.is_some(),
            rate: self.rate.unwrap_or_default(),
            data_timer: self.data_timer,
            ..Config::default()
        }
    }
}

/// The result of one simulated transfer; `lost`, `retransmitted`,
/// `data_timeouts`, `control_packets` and the two throughputs are RFC 1030's
/// appendix columns #LOSS, #RXM, DTMOS and SPEED.
#[derive(Debug, Clone, Serialize)]
pub struct TransferReport {
    /// Bytes the transfer was to move.
    pub bytes: u64,
    /// Packets per burst, as negotiated.
    pub burst_size: u16,
    /// Milliseconds per burst, as negotiated.
    pub burst_interval_ms: u16,
    /// Data bytes per packet, as negotiated.
    pub packet_size: u16,
    /// Bytes per buffer, as negotiated.
    pub buffer_size: u32,
    /// Outstanding buffers, as negotiated.
    pub buffers: u16,
    /// Data packets lost in the network or at the receiving host (sent, less
    /// those that reached the receiver's protocol intact, plus link duplicates).
    pub lost: u64,
    /// Data packets the receiver found missing and asked for again.
    pub lost_detected: u64,
    /// Data packets the sender resent (#RXM).
    pub retransmitted: u64,
    /// The receiver's data timer expirations (DTMOS).
    pub data_timeouts: u64,
    /// CONTROL packets the receiver sent.
    pub control_packets: u64,
    /// CONTROL packets the receiver sent again on its control timer.
    pub control_retransmissions: u64,
    /// NULL-ACK packets the sender sent.
    pub null_acks: u64,
    /// RFC 1030 §3's real throughput (bits per second), if it succeeded.
    pub real_throughput_bps: Option<f64>,
    /// RFC 1030 §3's steady-state throughput (SPEED), if it succeeded.
    pub steady_throughput_bps: Option<f64>,
    /// Simulated seconds when the run ended.
    pub sim_time_s: f64,
    /// Received bytes hash-equal to those sent (and the transfer succeeded).
    pub verified: bool,
    /// Why the transfer failed, if it did.
    pub error: Option<String>,
    /// Bytes the receiver's application was given.
    pub delivered: u64,
    /// Some delivered byte differed from what was sent (must never happen).
    pub wrong_delivery: bool,
    /// The failure was the death timer (or OPEN retries running out): the
    /// protocol's own, clear way of giving up.
    pub gave_up: bool,
    /// Why the simulation stopped ([`Outcome`], as text).
    pub outcome: String,
    /// The seed the run used.
    pub seed: u64,
    /// Events the simulator processed.
    pub sim_events: u64,
    /// The sender's protocol counters.
    #[serde(skip)]
    pub sender: Stats,
    /// The receiver's protocol counters.
    #[serde(skip)]
    pub receiver: Stats,
    /// The simulator's counters (hosts, links, segment).
    #[serde(skip)]
    pub sim: Option<SimStats>,
}

/// Runs one transfer to completion (or failure, or the time limit).
pub fn run_transfer(spec: &TransferSpec) -> Result<TransferReport, TransferError> {
    let config = spec.config();
    let conn = Connection::connect(
        config.clone(),
        Mode::Write,
        // The connection UID only has to differ between connections on the
        // same ports; derive it from the seed so runs stay reproducible.
        (spec.seed as u32) ^ 0x5eed_0001,
        PORT_A,
        PORT_B,
        Some(spec.size),
        Vec::new(),
        Instant::ZERO,
    )?;
    let mut a = SenderNode::new(conn, spec.seed ^ 0xda7a, spec.size);
    let at_times = |v: &[(netblt_proto::Duration, netblt_proto::RateLimits)]| {
        LimitSchedule::new(v.iter().map(|&(at, l)| (Instant::ZERO + at, l)))
    };
    a.limits = at_times(&spec.limits);
    let mut b = ReceiverNode::new(config, PORT_B, spec.seed ^ 0xda7a);
    b.limits = at_times(&spec.receiver_limits);
    b.one_message_per_packet = spec.one_control_message_per_packet;
    let mut sim = Simulation::new(a, b, spec.path.clone(), spec.seed)?;
    let outcome = sim.run(Instant::ZERO + spec.time_limit);
    let stats = sim.stats();
    let a = sim.node_a();
    let b = sim.node_b();
    let sender = a.conn.stats();
    let receiver = b.conn.as_ref().map(|c| c.stats()).unwrap_or_default();
    let ok = a.conn.result() == Some(&Ok(()))
        && b.conn.as_ref().and_then(|c| c.result()) == Some(&Ok(()));
    let verified = ok && b.received == spec.size && a.hash.finalize() == b.hash.finalize();
    let error = a
        .error
        .as_ref()
        .or(b.error.as_ref())
        .map(|e| e.to_string())
        .or_else(|| {
            (!matches!(outcome, Outcome::Finished))
                .then(|| format!("simulation ended: {outcome:?}"))
        });
    let sent_total = sender.data_packets_sent + sender.data_packets_retransmitted;
    let arrived = receiver.data_packets_received + receiver.duplicate_data;
    let params = *a.conn.params();
    let gave_up = [a.error.as_ref(), b.error.as_ref()]
        .into_iter()
        .flatten()
        .any(|e| {
            matches!(
                e,
                ConnectionError::DeathTimeout { .. } | ConnectionError::OpenTimeout { .. }
            )
        });
    let report = TransferReport {
        bytes: spec.size,
        burst_size: params.burst_size,
        burst_interval_ms: params.burst_interval_ms,
        packet_size: params.packet_size,
        buffer_size: params.buffer_size,
        buffers: params.max_buffers,
        lost: (sent_total + stats.forward.duplicates).saturating_sub(arrived),
        lost_detected: receiver.data_packets_lost,
        retransmitted: sender.data_packets_retransmitted,
        data_timeouts: receiver.data_timeouts,
        control_packets: receiver.control_packets_sent,
        control_retransmissions: receiver.control_retransmissions,
        null_acks: sender.null_acks_sent,
        real_throughput_bps: ok.then(|| sender.real_throughput_bps()).flatten(),
        steady_throughput_bps: ok.then(|| sender.steady_throughput_bps()).flatten(),
        sim_time_s: sim.now().as_secs_f64(),
        verified,
        error: if verified {
            None
        } else {
            error.or_else(|| Some("data mismatch".into()))
        },
        delivered: b.received,
        wrong_delivery: b.wrong_delivery,
        gave_up,
        outcome: format!("{outcome:?}"),
        seed: spec.seed,
        sim_events: stats.events,
        sender,
        receiver,
        sim: Some(stats),
    };
    Ok(report)
}
