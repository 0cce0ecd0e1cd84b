//! Command-line front ends: one `clap::Args` struct and one `run_*` function per command.
//!
//! The `netblt` binary mounts these as subcommands (`netblt echo`, `netblt rtt`, `netblt
//! load`, `netblt model`, `netblt cpu`). Every command prints a table to stdout, or with
//! `--json` exactly one JSON object; a progress line goes to stderr only when stderr is a
//! terminal. Errors come back as `anyhow::Error` with a one-line message.

mod cpu;
mod echo;
mod load;
mod model;
mod progress;
mod rtt;

pub use cpu::run_cpu;
pub use echo::run_echo;
pub use load::run_load;
pub use model::run_model;
pub use rtt::run_rtt;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Subcommand};

use crate::transport::Transport;
use crate::units::{ByteSize, ProcRange, SizeSpec, Target};

/// `netblt echo`: the echo and sink server (XUNET's dkbenchs and trafgens in one).
///
/// Serves TCP and UDP on the same port, 7007 by default, on loopback unless told otherwise.
#[derive(Args, Debug, Clone)]
pub struct EchoArgs {
    /// Address to listen on, for TCP and UDP alike. The default is loopback on purpose (an
    /// open UDP echo is a reflection amplifier); in a network namespace use its address or
    /// 0.0.0.0:7007.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:7007")]
    pub listen: SocketAddr,
    /// Serve TCP only (default: TCP and UDP).
    #[arg(long, conflicts_with = "udp")]
    pub tcp: bool,
    /// Serve UDP only (default: TCP and UDP).
    #[arg(long)]
    pub udp: bool,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long, value_name = "SECS", value_parser = parse_positive_secs)]
    pub duration: Option<f64>,
    /// Most TCP connections served at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_connections: u32,
    /// Print one JSON object (the listening addresses) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `netblt rtt`: round-trip times per message size, one message outstanding (dkbench).
///
/// For each size: n, min, mean, sd, p50, p90, p99 and max in microseconds, a loss count over
/// UDP, and a `*` when the host's 1-minute load average moved by more than 0.5 meanwhile.
#[derive(Args, Debug, Clone)]
pub struct RttArgs {
    /// Echo server (`netblt echo`); the port defaults to 7007.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: Target,
    /// Measure over TCP; messages are framed so one message is one round trip.
    #[arg(long, conflicts_with = "udp")]
    pub tcp: bool,
    /// Measure over UDP (the default); a message not echoed within the timeout is lost.
    #[arg(long)]
    pub udp: bool,
    /// Message sizes in bytes. `84,85` replaces the default list
    /// 1,2,16,17,112,113,1023,1024,1025 (XUNET's); `+84,85` adds to it. 1k = 1000, 1KiB = 1024.
    #[arg(long, value_name = "LIST", allow_hyphen_values = false)]
    pub sizes: Option<SizeSpec>,
    /// Measured messages per size (XUNET used 350).
    #[arg(long, default_value_t = 350, value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
    /// Unmeasured messages sent first for each size.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Per-message timeout in milliseconds (UDP: counted lost; TCP: an error).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw min and mean RTT against size (log-log) into STEM.svg and STEM.png.
    #[arg(long, value_name = "STEM")]
    pub plot: Option<PathBuf>,
}

/// `netblt load`: N concurrent one-way transfers (trafgen) with RTT probed under the load.
///
/// Reports throughput per transfer and in total (XUNET Table III) and min/mean RTT of the
/// probe (Figures 5-8). The server is `netblt echo`, which also sinks.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Server (`netblt echo`); the port defaults to 7007.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: Target,
    /// Concurrent transfers (threads); 0 measures the unloaded RTT alone.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub procs: u32,
    /// Run one load per process count in an inclusive range, e.g. `1..14` (Table III).
    #[arg(long, value_name = "A..B", conflicts_with = "procs")]
    pub sweep: Option<ProcRange>,
    /// Bytes per transfer (1MB = 10^6, 1MiB = 2^20 bytes).
    #[arg(long, value_name = "BYTES", default_value = "1MiB")]
    pub size: ByteSize,
    /// Bytes per write call (trafgen wrote 1024).
    #[arg(long, value_name = "BYTES", default_value = "1024")]
    pub write_size: ByteSize,
    /// Transfer over TCP (the default): every byte is delivered, as with trafgen's circuits.
    #[arg(long, conflicts_with = "udp")]
    pub tcp: bool,
    /// Transfer over UDP as fast as possible, unpaced; what the sink misses is reported lost.
    #[arg(long, conflicts_with = "netblt")]
    pub udp: bool,
    /// Transfer with NETBLT to a `netblt recv --sink` on port 9998 of the same host (RTT
    /// probes still go to the echo server at HOST:PORT).
    #[arg(long, conflicts_with = "tcp")]
    pub netblt: bool,
    /// RTT probe message size during the load; 0 disables the probe.
    #[arg(long, value_name = "BYTES", default_value = "756")]
    pub rtt_size: ByteSize,
    /// Most RTT probes per load (only those sent while the load runs are taken).
    #[arg(long, default_value_t = 100)]
    pub rtt_count: u32,
    /// Delay before the first probe, milliseconds (XUNET waited about 5 s).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub rtt_delay_ms: u64,
    /// Timeout of one probe, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rtt_timeout_ms: u64,
    /// Bound on any blocking step of a transfer, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// With --sweep, also draw RTT and throughput against processes into STEM-rtt.* and
    /// STEM-throughput.* (SVG and PNG).
    #[arg(long, value_name = "STEM", requires = "sweep")]
    pub plot: Option<PathBuf>,
}

/// `netblt model`: XUNET's throughput and delay formulas.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Which model.
    #[command(subcommand)]
    pub model: ModelCommand,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The models.
#[derive(Subcommand, Debug, Clone)]
pub enum ModelCommand {
    /// A Table II row from ZERO/LARGE transfer times (eqs. 7-9).
    ZeroLarge(ZeroLargeArgs),
    /// Predicted RTT per size from the delay formulas (eqs. 4-6).
    Delay(DelayArgs),
    /// Fit eq. 5 (and eq. 6) to measured (size, RTT) points; prints predicted vs measured.
    Fit(FitArgs),
}

/// Inputs of `model zero-large`.
#[derive(Args, Debug, Clone)]
pub struct ZeroLargeArgs {
    /// Minimum transfer time of the zero-length file, seconds.
    #[arg(long, value_name = "SECS")]
    pub zero_secs: f64,
    /// Minimum transfer time of the large file, seconds.
    #[arg(long, value_name = "SECS")]
    pub large_secs: f64,
    /// Size of the large file in bytes.
    #[arg(long, value_name = "BYTES")]
    pub size: ByteSize,
    /// Protocol window in bytes.
    #[arg(long, value_name = "BYTES")]
    pub window: f64,
    /// Minimum round-trip time, milliseconds.
    #[arg(long, value_name = "MS")]
    pub rtt_ms: f64,
}

/// Inputs of `model delay`.
#[derive(Args, Debug, Clone)]
pub struct DelayArgs {
    /// Sizes to predict; `+LIST` adds to, `LIST` replaces XUNET's nine sizes.
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<SizeSpec>,
    /// Response time (RTT of a 1-byte message), ms.
    #[arg(long, value_name = "MS")]
    pub response_ms: f64,
    /// Window in bytes: adds the eq. 4 (windowed) column.
    #[arg(long, value_name = "BYTES")]
    pub window: Option<f64>,
    /// Processing ms/byte: adds the eq. 5 (local) column (XUNET: 0.02).
    #[arg(long, value_name = "MS")]
    pub ms_per_byte: Option<f64>,
    /// Line rate in bits/s: with --extra-ms-per-byte adds the eq. 6 column (XUNET: 1344000).
    #[arg(long, value_name = "BPS", requires = "extra_ms_per_byte")]
    pub line_bps: Option<f64>,
    /// Extra ms/byte beyond the line (XUNET: 0.008).
    #[arg(long, value_name = "MS", requires = "line_bps")]
    pub extra_ms_per_byte: Option<f64>,
}

/// Inputs of `model fit`.
#[derive(Args, Debug, Clone)]
pub struct FitArgs {
    /// Points as SIZE:MS pairs, e.g. `1:54.64,756:69.97`.
    #[arg(
        long,
        value_name = "LIST",
        required_unless_present = "rtt_json",
        conflicts_with = "rtt_json"
    )]
    pub points: Option<PointList>,
    /// Read the points from the output of `netblt rtt --json` (its per-size RTT, see --stat).
    #[arg(long, value_name = "FILE")]
    pub rtt_json: Option<PathBuf>,
    /// Which RTT statistic to take from --rtt-json (XUNET fitted minima).
    #[arg(long, value_enum, default_value_t = RttStat::Min)]
    pub stat: RttStat,
    /// Only fit sizes up to this many bytes (eq. 5 "holds up to one window").
    #[arg(long, value_name = "BYTES")]
    pub max_size: Option<ByteSize>,
    /// Line rate in bits/s, to split the slope into line time and eq. 6's extra ms/byte.
    #[arg(long, value_name = "BPS")]
    pub line_bps: Option<f64>,
}

/// Which statistic of an RTT run to fit.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RttStat {
    /// Minimum RTT.
    Min,
    /// Mean RTT.
    Mean,
    /// Median RTT.
    P50,
}

/// `size:ms` pairs from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct PointList(pub Vec<(f64, f64)>);

impl FromStr for PointList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut v = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (a, b) = item
                .split_once(':')
                .ok_or_else(|| format!("`{item}`: expected SIZE:MS"))?;
            let x: f64 = a
                .trim()
                .parse()
                .map_err(|_| format!("`{item}`: bad size"))?;
            let y: f64 = b
                .trim()
                .parse()
                .map_err(|_| format!("`{item}`: bad time"))?;
            if !(x.is_finite() && y.is_finite()) {
                return Err(format!("`{item}`: not finite"));
            }
            v.push((x, y));
        }
        if v.is_empty() {
            return Err("expected SIZE:MS pairs, e.g. 1:54.64,756:69.97".into());
        }
        Ok(PointList(v))
    }
}

/// `netblt cpu`: CPU cost per message size, in the manner of RFC 415.
///
/// For each size, one transfer of --bytes: real baud, CPU seconds of this process's sending
/// thread and of the server (which reports its own getrusage), CPU share, and CPU baud (bits
/// per CPU-second).
#[derive(Args, Debug, Clone)]
pub struct CpuArgs {
    /// Server (`netblt echo`); the port defaults to 7007.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: Target,
    /// Over TCP (the default).
    #[arg(long, conflicts_with = "udp")]
    pub tcp: bool,
    /// Over UDP, unpaced (sizes above one datagram are capped at 65494 bytes).
    #[arg(long, conflicts_with = "netblt")]
    pub udp: bool,
    /// Over NETBLT, to a `netblt recv --sink` on port 9998 of the same host (one row:
    /// NETBLT chooses its own packet size).
    #[arg(long, conflicts_with = "tcp")]
    pub netblt: bool,
    /// Message sizes; `LIST` replaces 64,256,1KiB,4KiB,16KiB,64KiB, `+LIST` adds to it.
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<SizeSpec>,
    /// Bytes to send per size (1MB = 10^6, 1MiB = 2^20 bytes).
    #[arg(long, value_name = "BYTES", default_value = "256MiB")]
    pub bytes: ByteSize,
    /// Bound on any blocking step, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw CPU baud and real baud against size (log-log) into STEM.svg and STEM.png.
    #[arg(long, value_name = "STEM")]
    pub plot: Option<PathBuf>,
}

/// `--tcp`/`--udp` to a transport, with the command's default when neither is given.
fn pick_transport(tcp: bool, udp: bool, default: Transport) -> Transport {
    match (tcp, udp) {
        (true, _) => Transport::Tcp,
        (_, true) => Transport::Udp,
        _ => default,
    }
}

/// As [`pick_transport`], with `--netblt` too.
fn pick_bulk_transport(tcp: bool, udp: bool, netblt: bool, default: Transport) -> Transport {
    if netblt {
        Transport::Netblt
    } else {
        pick_transport(tcp, udp, default)
    }
}

fn parse_positive_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}`: expected a positive number of seconds")),
    }
}

fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Cmd {
        Echo(EchoArgs),
        Rtt(RttArgs),
        Load(LoadArgs),
        Model(ModelArgs),
        Cpu(CpuArgs),
    }

    fn parse(args: &[&str]) -> Result<Cmd, clap::Error> {
        Cli::try_parse_from(std::iter::once("netblt").chain(args.iter().copied())).map(|c| c.cmd)
    }

    #[test]
    fn definitions_are_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn rtt_defaults_and_size_lists() {
        let Ok(Cmd::Rtt(a)) = parse(&["rtt", "127.0.0.1"]) else {
            panic!()
        };
        assert_eq!(a.target.0.port(), 7007);
        assert_eq!(a.count, 350);
        assert_eq!(pick_transport(a.tcp, a.udp, Transport::Udp), Transport::Udp);
        let Ok(Cmd::Rtt(a)) = parse(&["rtt", "127.0.0.1:9", "--tcp", "--sizes", "+84,85"]) else {
            panic!()
        };
        assert_eq!(a.sizes.map(|s| s.extend), Some(true));
        assert!(parse(&["rtt", "127.0.0.1", "--tcp", "--udp"]).is_err());
        assert!(parse(&["rtt", "127.0.0.1", "--count", "0"]).is_err());
        assert!(parse(&["rtt", "127.0.0.1", "--sizes", "1,x"]).is_err());
        assert!(parse(&["rtt"]).is_err());
    }

    #[test]
    fn model_zero_large_parses_the_brief_example() {
        let r = parse(&[
            "model",
            "zero-large",
            "--zero-secs",
            "4",
            "--large-secs",
            "166",
            "--size",
            "334848",
            "--window",
            "84",
            "--rtt-ms",
            "40",
            "--json",
        ]);
        let Ok(Cmd::Model(m)) = r else {
            panic!("{r:?}")
        };
        assert!(m.json);
        assert!(matches!(m.model, ModelCommand::ZeroLarge(ref z) if z.size == ByteSize(334_848)));
        assert!(parse(&["model", "fit"]).is_err());
        assert!(parse(&["model", "delay", "--response-ms", "54", "--line-bps", "1e6"]).is_err());
    }

    #[test]
    fn load_and_cpu_and_echo() {
        let Ok(Cmd::Load(l)) = parse(&["load", "localhost", "--sweep", "1..14"]) else {
            panic!()
        };
        assert_eq!(l.sweep, Some(ProcRange(1..=14)));
        assert_eq!(l.size, ByteSize(1 << 20));
        assert!(parse(&["load", "localhost", "--sweep", "1..3", "--procs", "2"]).is_err());
        let Ok(Cmd::Cpu(c)) = parse(&["cpu", "127.0.0.1", "--bytes", "1MB"]) else {
            panic!()
        };
        assert_eq!(c.bytes, ByteSize(1_000_000));
        let Ok(Cmd::Cpu(c)) = parse(&["cpu", "127.0.0.1", "--bytes", "1MiB"]) else {
            panic!()
        };
        assert_eq!(c.bytes, ByteSize(1 << 20));
        let Ok(Cmd::Echo(e)) = parse(&["echo"]) else {
            panic!()
        };
        assert_eq!(e.listen, "127.0.0.1:7007".parse().unwrap());
        assert!(parse(&["echo", "--duration", "-1"]).is_err());
    }

    #[test]
    fn point_lists() {
        assert_eq!(
            "1:54.64, 756:69.97".parse::<PointList>(),
            Ok(PointList(vec![(1.0, 54.64), (756.0, 69.97)]))
        );
        assert!("1-2".parse::<PointList>().is_err());
        assert!("".parse::<PointList>().is_err());
    }
}
