//! A stand-alone front end for the measurement commands, exactly as the `netblt` binary
//! mounts them. Handy while the main binary is being assembled:
//!
//! ```text
//! cargo run -p netblt-measure --example measure -- echo &
//! cargo run -p netblt-measure --example measure -- rtt 127.0.0.1 --count 100
//! cargo run -p netblt-measure --example measure -- model zero-large --zero-secs 4 \
//!     --large-secs 166 --size 334848 --window 84 --rtt-ms 40
//! ```

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use netblt_measure::cli::{self, CpuArgs, EchoArgs, LoadArgs, ModelArgs, RttArgs};

#[derive(Parser, Debug)]
#[command(name = "measure", about = "netblt measurement tools (XUNET / RFC 415)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Echo and sink server (dkbenchs + trafgens), TCP and UDP on port 7007.
    Echo(EchoArgs),
    /// Round-trip time per message size (dkbench).
    Rtt(RttArgs),
    /// Concurrent one-way transfers with RTT under load (trafgen).
    Load(LoadArgs),
    /// XUNET's throughput and delay models.
    Model(ModelArgs),
    /// CPU cost per message size (RFC 415).
    Cpu(CpuArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Echo(a) => cli::run_echo(a),
        Command::Rtt(a) => cli::run_rtt(a),
        Command::Load(a) => cli::run_load(a),
        Command::Model(a) => cli::run_model(a),
        Command::Cpu(a) => cli::run_cpu(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
