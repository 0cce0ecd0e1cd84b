//! `netblt sim`: one memory-to-memory NETBLT transfer in the simulator, like
//! RFC 1030's test application, printed as a row of its appendix tables.

use clap::{Args, ValueEnum};
use netblt_link::{profiles, LossModel};
use netblt_proto::{Duration, PacingClock, TransferParams};
use netblt_sim::transfer::{run_transfer, TransferReport, TransferSpec};
use netblt_sim::PathConfig;

use crate::exit::CliError;
use crate::units::{fmt_rate, parse_rate, parse_size};

/// The profiles built from the seed documents: their 1987 implementations
/// timed each burst from the actual start of the previous one.
const HISTORICAL: &[&str] = &[
    "proteon-ring",
    "ethernet-3c500",
    "wideband",
    "t1-satellite",
    "xunet",
];

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Pacing {
    /// Bursts on a virtual schedule; late bursts do not delay later ones.
    Virtual,
    /// Each burst interval counts from the actual start of the previous burst
    /// (RFC 1030's definition; the 1987 implementations).
    ActualStart,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Run a dumbbell scenario instead (JSON: several NETBLT and TCP flows
    /// through one shared bottleneck; see crates/netblt-sim/scenarios and
    /// docs/simulator.md). The other flags are then ignored but --json.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<std::path::PathBuf>,
    /// Network profile (see `netblt profiles`).
    #[arg(long, default_value = "proteon-ring")]
    pub profile: String,
    /// DATA packets per burst (BS). Default: the profile's.
    #[arg(long)]
    pub burst_size: Option<u16>,
    /// Milliseconds from the start of one burst to the next (BI).
    #[arg(long)]
    pub burst_interval: Option<u16>,
    /// Data bytes per DATA packet (PSZ), e.g. 1990.
    #[arg(long, value_parser = parse_size)]
    pub packet_size: Option<u64>,
    /// Bytes per buffer (BFSZ), e.g. 19900 or 1MiB.
    #[arg(long, value_parser = parse_size)]
    pub buffer_size: Option<u64>,
    /// Outstanding buffers (NBUFS).
    #[arg(long)]
    pub buffers: Option<u16>,
    /// Bytes to transfer (XFSZ), e.g. 1990000, 1990k, 2M, 1GiB.
    #[arg(long, value_parser = parse_size, default_value = "1990000")]
    pub size: u64,
    /// Random seed: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Packet loss probability on both links (0..1), replacing the profile's.
    #[arg(long, allow_negative_numbers = true)]
    pub loss: Option<f64>,
    /// Bit-error rate on both links (a packet with an error is dropped).
    #[arg(long, allow_negative_numbers = true)]
    pub ber: Option<f64>,
    /// Probability that a packet is held back and overtaken.
    #[arg(long, allow_negative_numbers = true)]
    pub reorder: Option<f64>,
    /// Probability that a packet is delivered twice.
    #[arg(long, allow_negative_numbers = true)]
    pub duplicate: Option<f64>,
    /// Probability that a packet is delivered with one bit flipped.
    #[arg(long, allow_negative_numbers = true)]
    pub corrupt: Option<f64>,
    /// One-way propagation delay in milliseconds, both directions.
    #[arg(long, allow_negative_numbers = true)]
    pub delay: Option<f64>,
    /// Bottleneck rate in bits per second (e.g. 1.544M), both directions.
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<u64>,
    /// Checksum DATA packet data (the C flag): on or off.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub data_checksum: String,
    /// Burst timing; default: actual-start for the seed documents' profiles,
    /// virtual for modern ones.
    #[arg(long, value_enum)]
    pub pacing: Option<Pacing>,
    /// Death timer of both ends, seconds.
    #[arg(long, default_value_t = 30)]
    pub death_timer: u64,
    /// Print one JSON object instead of the table row.
    #[arg(long)]
    pub json: bool,
}

fn probability(name: &str, p: Option<f64>) -> Result<Option<f64>, CliError> {
    match p {
        Some(v) if !(0.0..=1.0).contains(&v) => Err(CliError::usage(format!(
            "--{name} must be between 0 and 1, got {v}"
        ))),
        other => Ok(other),
    }
}

/// Builds the simulation from the flags (public for `netblt report`).
pub fn spec_from_args(a: &SimArgs) -> Result<TransferSpec, CliError> {
    let profile = profiles::profile(&a.profile).ok_or_else(|| {
        CliError::usage(format!(
            "unknown profile '{}' (known: {})",
            a.profile,
            profiles::names().join(", ")
        ))
    })?;
    let d = &profile.defaults;
    let u16_arg = |name: &str, v: Option<u64>, default: u16| -> Result<u16, CliError> {
        match v {
            None => Ok(default),
            Some(v) => {
                u16::try_from(v).map_err(|_| CliError::usage(format!("--{name} {v} is too large")))
            }
        }
    };
    let params = TransferParams {
        packet_size: u16_arg("packet-size", a.packet_size, d.packet_size)?,
        buffer_size: match a.buffer_size {
            None => d.buffer_size,
            Some(v) => u32::try_from(v)
                .map_err(|_| CliError::usage(format!("--buffer-size {v} is too large")))?,
        },
        burst_size: a.burst_size.unwrap_or(d.burst_size),
        burst_interval_ms: a.burst_interval.unwrap_or(d.burst_interval_ms),
        max_buffers: a.buffers.unwrap_or(d.buffers),
        checksum_data: a.data_checksum == "on",
    };
    params
        .validate()
        .map_err(|e| CliError::usage(format!("invalid parameters: {e}")))?;
    let mut path = PathConfig::from_profile(&profile);
    let loss = probability("loss", a.loss)?;
    let ber = probability("ber", a.ber)?;
    let reorder = probability("reorder", a.reorder)?;
    let duplicate = probability("duplicate", a.duplicate)?;
    let corrupt = probability("corrupt", a.corrupt)?;
    for link in [&mut path.forward, &mut path.reverse] {
        if let Some(p) = loss {
            link.loss = if p > 0.0 {
                LossModel::Bernoulli { p }
            } else {
                LossModel::None
            };
        }
        if let Some(b) = ber {
            link.ber = b;
        }
        if let Some(r) = reorder {
            link.reorder = r;
            if link.reorder_delay.is_zero() {
                link.reorder_delay = link.delay.max(Duration::from_millis(1));
            }
        }
        if let Some(d) = duplicate {
            link.duplicate = d;
        }
        if let Some(c) = corrupt {
            link.corrupt = c;
        }
        if let Some(ms) = a.delay {
            if !(0.0..=3_600_000.0).contains(&ms) {
                return Err(CliError::usage(format!(
                    "--delay must be between 0 and 3600000 ms, got {ms}"
                )));
            }
            link.delay = Duration::from_secs_f64(ms / 1000.0);
        }
        if let Some(r) = a.rate {
            if r == 0 {
                return Err(CliError::usage("--rate must be positive"));
            }
            link.rate_bps = Some(r);
        }
    }
    path.validate()
        .map_err(|e| CliError::usage(format!("invalid link settings: {e}")))?;
    let mut spec = TransferSpec::new(path, params, a.size);
    spec.seed = a.seed;
    spec.death_timeout = Duration::from_secs(a.death_timer.max(1));
    spec.pacing_clock = match a.pacing {
        Some(Pacing::Virtual) => PacingClock::Virtual,
        Some(Pacing::ActualStart) => PacingClock::FromActualStart,
        None if HISTORICAL.contains(&a.profile.as_str()) => PacingClock::FromActualStart,
        None => PacingClock::Virtual,
    };
    Ok(spec)
}

/// RFC 1030's appendix header.
pub const TABLE_HEADER: &str = "BS/BI    PSZ    BFSZ     XFSZ   NBUFS  #LOSS  #RXM   DTMOS  SPEED";

/// One RFC 1030 appendix row: SPEED is the steady-state throughput in Mb/s,
/// XFSZ the transfer size in kilobytes.
pub fn table_row(r: &TransferReport) -> String {
    let speed = r
        .steady_throughput_bps
        .map_or_else(|| "-".to_string(), |b| format!("{:.3}", b / 1e6));
    format!(
        "{:<8} {:<6} {:<8} {:<6} {:<6} {:<6} {:<6} {:<6} {}",
        format!("{}/{}", r.burst_size, r.burst_interval_ms),
        r.packet_size,
        r.buffer_size,
        r.bytes / 1000,
        r.buffers,
        r.lost,
        r.retransmitted,
        r.data_timeouts,
        speed
    )
}

/// A scenario that cannot be used: a file that cannot be read is a local
/// error (exit 3, `local` with its `io_kind` in `--json`'s error object, as
/// `send`'s file that is not there; F28), one that does not parse or
/// holds values that cannot work a usage error (exit 2).
fn scenario_error(e: netblt_sim::dumbbell::ScenarioError) -> CliError {
    use netblt_sim::dumbbell::ScenarioError;
    match &e {
        ScenarioError::Io { source, .. } => {
            let kind = netblt::ErrorKind::Local {
                io: Some(source.kind()),
            };
            CliError::new(crate::exit::LOCAL, e.to_string()).with_kind(Some(kind))
        }
        _ => CliError::usage(e.to_string()),
    }
}

/// `netblt sim --scenario FILE`: the dumbbell's table, or its JSON report.
fn run_scenario(path: &std::path::Path, json: bool) -> anyhow::Result<()> {
    use netblt_sim::dumbbell::{run_dumbbell, Scenario};
    let scenario = Scenario::load(path).map_err(scenario_error)?;
    let report =
        run_dumbbell(&scenario).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

pub fn run(args: SimArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.scenario {
        return run_scenario(path, args.json);
    }
    let spec = spec_from_args(&args)?;
    let wall = std::time::Instant::now();
    let report = run_transfer(&spec).map_err(|e| CliError::usage(e.to_string()))?;
    let wall = wall.elapsed();
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("profile".into(), args.profile.clone().into());
            o.insert("wall_time_s".into(), wall.as_secs_f64().into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{TABLE_HEADER}");
        println!("{}", table_row(&report));
        let real = report
            .real_throughput_bps
            .map_or_else(|| "-".into(), fmt_rate);
        println!(
            "real throughput {real}; {}; {:.3} s simulated in {:.0} ms (profile {}, seed {})",
            if report.verified {
                "data verified (BLAKE3 digests match)"
            } else {
                "NOT verified"
            },
            report.sim_time_s,
            wall.as_secs_f64() * 1e3,
            args.profile,
            args.seed
        );
    }
    if !report.verified {
        let why = report
            .error
            .clone()
            .unwrap_or_else(|| "transfer failed".into());
        let e = CliError::new(crate::exit::FAILED, format!("transfer failed: {why}"));
        // Its report, with `error`, is the JSON object of this run (F28:
        // no error object after it).
        return Err(if args.json { e.reported() } else { e }.into());
    }
    Ok(())
}
