//! [`Scenario`]: a dumbbell run described in plain, serde-readable terms
//! (times in seconds or milliseconds, rates in bits per second), turned into
//! `netblt_link::LinkConfig`s and protocol configurations by the engine.

use std::time::Duration;

use netblt_link::{Aqm, DeliveryTrace, LinkConfig, LossModel, RateStep};
use netblt_proto::{Config, PacingClock, Policy, RateConfig, TransferParams};
use serde::{Deserialize, Serialize};

use crate::tcp::TcpConfig;

/// One dumbbell run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free text for reports.
    #[serde(default)]
    pub name: String,
    /// Seed of every random choice (bottleneck loss, NETBLT UIDs and data).
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Width of the time-series intervals in ms (default 100).
    #[serde(default = "hundred")]
    pub sample_interval_ms: f64,
    /// The shared link.
    pub bottleneck: BottleneckSpec,
    /// Rate of every access link and reverse link (default 10 Gb/s).
    #[serde(default = "ten_gig")]
    pub access_rate_bps: u64,
    /// Random loss on every flow's reverse path (ACKs, NETBLT control).
    #[serde(default)]
    pub reverse_loss: LossModel,
    /// The flows.
    pub flows: Vec<FlowSpec>,
}

fn one() -> u64 {
    1
}
fn hundred() -> f64 {
    100.0
}
fn ten_gig() -> u64 {
    10_000_000_000
}

/// The bottleneck router's output link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSpec {
    /// Initial rate in bits per second of IP packets (unless `trace` is set).
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Later rates: `[{ "at_s": 10, "rate_bps": 20000000 }, ...]`.
    #[serde(default)]
    pub rate_steps: Vec<RateStepSpec>,
    /// Mahimahi delivery trace (ms offsets, 1500 bytes each) instead of a
    /// rate: inline offsets, or `trace_file` (read by [`Scenario::load`]).
    #[serde(default)]
    pub trace: Option<Vec<u64>>,
    /// A mahimahi trace file, relative to the scenario file.
    #[serde(default)]
    pub trace_file: Option<String>,
    /// One-way propagation delay of the bottleneck, in ms (part of each
    /// flow's RTT, which must be at least twice this).
    #[serde(default)]
    pub delay_ms: f64,
    /// Extra delay per packet after the queue, uniform in `[0, jitter_ms]`,
    /// in FIFO order (netblt-link's `jitter`; the emulator's host scheduling
    /// and a real path's do the same to the round trips a flow measures).
    #[serde(default)]
    pub jitter_ms: f64,
    /// Queue limit in bytes.
    pub queue_bytes: usize,
    /// Queue discipline.
    #[serde(default)]
    pub aqm: AqmSpec,
    /// Random loss on the bottleneck ("noise"), netblt-link's model.
    #[serde(default)]
    pub loss: LossModel,
    /// Probability that a packet is held back by `reorder_delay_ms` after
    /// the queue, so that later packets overtake it (netblt-link's
    /// `reorder`: multipath routing, link-layer retransmission).
    #[serde(default)]
    pub reorder: f64,
    /// How long a reordered packet is held back, in ms.
    #[serde(default)]
    pub reorder_delay_ms: f64,
    /// Largest IP packet carried (default 1500).
    #[serde(default = "mtu")]
    pub mtu: usize,
}

fn mtu() -> usize {
    1500
}

/// A rate change of the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStepSpec {
    /// When, in seconds from the start.
    pub at_s: f64,
    /// New rate in bits per second.
    pub rate_bps: u64,
}

/// Queue discipline: `"drop_tail"`, `"codel"` (RFC 8289 defaults) or
/// `{"codel_with": {"target_ms": 5, "interval_ms": 100}}`.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AqmSpec {
    /// Drop-tail only.
    #[default]
    DropTail,
    /// CoDel with target 5 ms and interval 100 ms.
    Codel,
    /// CoDel with other values.
    CodelWith {
        /// Target sojourn time in ms.
        target_ms: f64,
        /// Interval in ms.
        interval_ms: f64,
    },
}

/// One flow: a sender and a receiver across the bottleneck.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Label for reports (default `flow<i>`).
    #[serde(default)]
    pub name: String,
    /// What runs on the two hosts.
    pub kind: FlowKind,
    /// Base round trip in ms: propagation only, no queueing. The sender's
    /// access link gets `rtt/2 - bottleneck delay`, the reverse path `rtt/2`.
    pub rtt_ms: f64,
    /// Start, in seconds.
    #[serde(default)]
    pub start_s: f64,
    /// The flow is switched off at this time (its hosts fall silent and
    /// anything in flight to them is discarded).
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// Bytes to move; `None` = until stopped or the run ends.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// NETBLT flows: rate limits the application sets while the flow runs
    /// (`Connection::set_rate_limits`, decision R27), in time order.
    #[serde(default)]
    pub limits: Vec<LimitStepSpec>,
}

/// At `at_s`, the sending application limits its rate (R27).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitStepSpec {
    /// Seconds from the start of the run.
    pub at_s: f64,
    /// Pace at most this (bits/s of data); absent: the negotiated rate.
    #[serde(default)]
    pub max_bps: Option<u64>,
    /// Pace at least this (adaptive policies).
    #[serde(default)]
    pub min_bps: u64,
}

/// The protocol of a flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// The TCP model; every field of [`TcpConfig`] may be given, the rest
    /// take its defaults (`{"tcp": {"cc": "cubic"}}`).
    Tcp(TcpConfig),
    /// A NETBLT transfer (netblt-proto's engine on both hosts).
    Netblt(NetbltSpec),
}

/// A NETBLT flow's rate-control policy, as a scenario spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicySpec {
    /// RFC 998's fixed rate.
    #[default]
    Fixed,
    /// The adaptive controller.
    Fair,
    /// Adaptive, yielding to other traffic.
    Background,
}

impl From<PolicySpec> for Policy {
    fn from(p: PolicySpec) -> Policy {
        match p {
            PolicySpec::Fixed => Policy::Fixed,
            PolicySpec::Fair => Policy::Fair,
            PolicySpec::Background => Policy::Background,
        }
    }
}

/// NETBLT's parameters as a scenario gives them. The engine's
/// [`Config`] is built from them by [`NetbltSpec::configs`]; a caller
/// with its own `Config`s (a rate controller, say) passes them with
/// [`crate::dumbbell::Dumbbell::set_netblt_configs`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetbltSpec {
    /// Fixed data rate in bits per second, turned into a burst size and
    /// interval (`TransferParams::burst_for_rate`). Ignored when
    /// `burst_size` and `burst_interval_ms` are both given. Unset: 100 Mb/s
    /// with the `fixed` policy, a 10 Gb/s ceiling with an adaptive one (the
    /// tool's default).
    pub rate_bps: Option<u64>,
    /// Explicit burst size (packets).
    pub burst_size: Option<u16>,
    /// Explicit burst interval (ms).
    pub burst_interval_ms: Option<u16>,
    /// Data bytes per packet.
    pub packet_size: u16,
    /// Bytes per buffer.
    pub buffer_size: u32,
    /// Outstanding buffers (the ceiling).
    pub max_buffers: u16,
    /// Buffers the sender keeps queued at least, choosing more up to
    /// `max_buffers` as its rate and the buffers' outstanding time need
    /// (`Config::min_buffers`, decision R11). Default: all of them.
    pub min_buffers: Option<u16>,
    /// Spread each burst over its interval in groups of this many packets.
    pub pacing_quantum: Option<u16>,
    /// Death timer in seconds.
    pub death_timeout_s: u64,
    /// Rate control: `"fixed"` (RFC 998, the default here), `"fair"` or
    /// `"background"` (docs/decisions.md, R1). With an adaptive policy,
    /// `rate_bps` is the ceiling (default 10 Gb/s) and the FEEDBACK
    /// extension is negotiated.
    pub policy: PolicySpec,
    /// Adaptive policies: never slower than this (bits/s).
    pub min_rate_bps: u64,
    /// The tool's recovery besides RFC 998's ([`Config::with_tool_recovery`]:
    /// two first OPENs, the size hint, the doubled tail). Default false, so
    /// that the reproductions keep RFC 1030's behaviour.
    pub tool_recovery: bool,
}

impl Default for NetbltSpec {
    /// 1400-byte packets (1428-byte IP datagrams), 1 MiB buffers, 8
    /// outstanding, 100 Mb/s, bursts released whole (RFC 998). The rate is
    /// left unset so that a scenario giving only `"policy": "fair"` gets the
    /// adaptive ceiling, not 100 Mb/s: on a 100 Mb/s bottleneck that held
    /// the controller at 99.2 Mb/s, under the path it was meant to find.
    fn default() -> Self {
        NetbltSpec {
            rate_bps: None,
            burst_size: None,
            burst_interval_ms: None,
            packet_size: 1400,
            buffer_size: 1 << 20,
            max_buffers: 8,
            min_buffers: None,
            pacing_quantum: None,
            death_timeout_s: 30,
            policy: PolicySpec::Fixed,
            min_rate_bps: 0,
            tool_recovery: false,
        }
    }
}

impl NetbltSpec {
    /// The engine configurations for the sender (active end) and the
    /// receiver (passive end).
    pub fn configs(&self) -> (Config, Config) {
        let (burst_size, burst_interval_ms) = match (self.burst_size, self.burst_interval_ms) {
            (Some(s), Some(i)) => (s, i),
            _ => TransferParams::burst_for_rate(
                self.rate_bps
                    .unwrap_or(if self.policy == PolicySpec::Fixed {
                        100_000_000
                    } else {
                        10_000_000_000
                    }),
                self.packet_size,
            ),
        };
        let params = TransferParams {
            packet_size: self.packet_size,
            buffer_size: self.buffer_size,
            burst_size,
            burst_interval_ms,
            max_buffers: self.max_buffers,
            checksum_data: false,
        };
        let cfg = Config {
            params,
            death_timeout: Duration::from_secs(self.death_timeout_s.max(1)),
            pacing_quantum: self.pacing_quantum,
            pacing_clock: PacingClock::Virtual,
            max_datagram: netblt_wire::round_up4(
                netblt_wire::DATA_HEADER_LEN + usize::from(self.packet_size),
            )
            .max(1472),
            rate_feedback: self.policy != PolicySpec::Fixed,
            min_buffers: self.min_buffers,
            rate: RateConfig {
                policy: self.policy.into(),
                min_bps: self.min_rate_bps,
                ..RateConfig::default()
            },
            ..Config::default()
        };
        let cfg = if self.tool_recovery {
            cfg.with_tool_recovery()
        } else {
            cfg
        };
        // The passive end accepts up to what the active end offers.
        let receiver = Config {
            params: TransferParams {
                burst_size: u16::MAX,
                burst_interval_ms: 1,
                max_buffers: u16::MAX,
                packet_size: u16::MAX - 64,
                buffer_size: u32::MAX,
                ..params
            },
            ..cfg.clone()
        };
        (cfg, receiver)
    }
}

/// Why a scenario cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// A value is out of range or inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// The bottleneck's link configuration was refused.
    #[error("bottleneck: {0}")]
    Link(#[from] netblt_link::ConfigError),
    /// The scenario or trace file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The scenario file is not valid JSON for a [`Scenario`].
    #[error("{path}: {source}")]
    Json {
        /// File.
        path: String,
        /// Cause.
        source: serde_json::Error,
    },
}

fn secs(field: &str, v: f64) -> Result<Duration, ScenarioError> {
    if v.is_finite() && (0.0..=86_400.0).contains(&v) {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(ScenarioError::Invalid(format!(
            "{field} must be between 0 and 86400 s, got {v}"
        )))
    }
}

pub(crate) fn ms(field: &str, v: f64) -> Result<Duration, ScenarioError> {
    secs(field, v / 1000.0)
}

impl Scenario {
    /// Reads a scenario file; a `trace_file` is read relative to it.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: p.clone(),
            source,
        })?;
        let mut s: Scenario = serde_json::from_str(&text)
            .map_err(|source| ScenarioError::Json { path: p, source })?;
        if let Some(file) = s.bottleneck.trace_file.take() {
            let full = path
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(&file);
            let text = std::fs::read_to_string(&full).map_err(|source| ScenarioError::Io {
                path: full.display().to_string(),
                source,
            })?;
            let trace = DeliveryTrace::parse(&text)
                .map_err(|e| ScenarioError::Invalid(format!("{}: {e}", full.display())))?;
            s.bottleneck.trace = Some(trace.opportunities_ms);
        }
        Ok(s)
    }

    /// The bottleneck as netblt-link runs it.
    pub fn bottleneck_link(&self) -> Result<LinkConfig, ScenarioError> {
        let b = &self.bottleneck;
        if b.trace_file.is_some() {
            return Err(ScenarioError::Invalid(
                "bottleneck.trace_file is read by Scenario::load; give `trace` inline".into(),
            ));
        }
        let mut steps = Vec::new();
        for s in &b.rate_steps {
            steps.push(RateStep {
                at: secs("rate_steps.at_s", s.at_s)?,
                rate_bps: s.rate_bps,
            });
        }
        let trace = match &b.trace {
            Some(v) => Some(
                DeliveryTrace::from_offsets(v.clone()).map_err(netblt_link::ConfigError::from)?,
            ),
            None => None,
        };
        if trace.is_none() && b.rate_bps.is_none() {
            return Err(ScenarioError::Invalid(
                "bottleneck needs rate_bps or a trace".into(),
            ));
        }
        let aqm = match b.aqm {
            AqmSpec::DropTail => Aqm::DropTail,
            AqmSpec::Codel => Aqm::CODEL,
            AqmSpec::CodelWith {
                target_ms,
                interval_ms,
            } => Aqm::Codel {
                target: ms("aqm.target_ms", target_ms)?,
                interval: ms("aqm.interval_ms", interval_ms)?,
            },
        };
        let cfg = LinkConfig {
            rate_bps: if trace.is_some() { None } else { b.rate_bps },
            rate_steps: steps,
            trace,
            delay: ms("bottleneck.delay_ms", b.delay_ms)?,
            jitter: ms("bottleneck.jitter_ms", b.jitter_ms)?,
            queue_limit_bytes: Some(b.queue_bytes),
            aqm,
            loss: b.loss.clone(),
            reorder: b.reorder,
            reorder_delay: ms("bottleneck.reorder_delay_ms", b.reorder_delay_ms)?,
            mtu: Some(b.mtu),
            ..LinkConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks everything the engine relies on.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        secs("duration_s", self.duration_s)?;
        let iv = ms("sample_interval_ms", self.sample_interval_ms)?;
        if iv < Duration::from_micros(100) {
            return bad("sample_interval_ms must be at least 0.1".into());
        }
        if self.access_rate_bps == 0 {
            return bad("access_rate_bps must be positive".into());
        }
        self.bottleneck_link()?;
        LinkConfig {
            loss: self.reverse_loss.clone(),
            ..LinkConfig::default()
        }
        .validate()
        .map_err(|e| ScenarioError::Invalid(format!("reverse_loss: {e}")))?;
        let bn_delay = ms("bottleneck.delay_ms", self.bottleneck.delay_ms)?;
        for (i, f) in self.flows.iter().enumerate() {
            let rtt = ms("rtt_ms", f.rtt_ms)?;
            if rtt < bn_delay * 2 {
                return bad(format!(
                    "flow {i}: rtt_ms {} is less than twice the bottleneck delay",
                    f.rtt_ms
                ));
            }
            secs("start_s", f.start_s)?;
            if let Some(stop) = f.stop_s {
                secs("stop_s", stop)?;
                if stop < f.start_s {
                    return bad(format!("flow {i}: stop_s is before start_s"));
                }
            }
            for l in &f.limits {
                secs("limits.at_s", l.at_s)?;
                if l.max_bps == Some(0) {
                    return bad(format!("flow {i}: a limit's max_bps must be positive"));
                }
            }
            if f.limits.windows(2).any(|w| w[1].at_s < w[0].at_s) {
                return bad(format!("flow {i}: limits must be in time order"));
            }
            if !f.limits.is_empty() && matches!(f.kind, FlowKind::Tcp(_)) {
                return bad(format!("flow {i}: limits apply to NETBLT flows only"));
            }
            match &f.kind {
                FlowKind::Tcp(cfg) => {
                    cfg.validate()
                        .map_err(|e| ScenarioError::Invalid(format!("flow {i}: {e}")))?;
                    if cfg.mss as usize + 52 > self.bottleneck.mtu {
                        return bad(format!("flow {i}: mss + headers exceed the MTU"));
                    }
                }
                FlowKind::Netblt(n) => {
                    n.configs()
                        .0
                        .params
                        .validate()
                        .map_err(|e| ScenarioError::Invalid(format!("flow {i}: {e}")))?;
                    if usize::from(n.packet_size) + netblt_wire::DATA_HEADER_LEN + 28
                        > self.bottleneck.mtu
                    {
                        return bad(format!("flow {i}: packet_size + headers exceed the MTU"));
                    }
                }
            }
        }
        Ok(())
    }
}
