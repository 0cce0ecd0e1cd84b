//! netblt: bulk data transfer over any network with NETBLT (RFC 998, as
//! revised by RFC 1030), and honest network measurement.
//!
//! This binary is the top layer: it parses the command line and calls the
//! library crates (the `netblt` library for real transfers, the simulator,
//! the emulator, the measurement tools, the seed-paper reports), draws
//! progress bars, prints results and chooses exit codes.

#![allow(unreachable_pub)] // a binary: `pub` marks what subcommands share

mod bulk;
mod commands;
mod exit;
mod flags;
mod json_error;
mod leftovers;
mod output;
mod progress;
mod rate_file;
mod remote;
mod security_flags;
mod units;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "netblt", version, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    /// Log filter for diagnostics on stderr (e.g. `netblt_proto=debug`);
    /// also read from RUST_LOG.
    #[arg(long, global = true)]
    log: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create this host's key pair (encrypted transfers; done on first use too).
    Keygen(commands::keygen::KeygenArgs),
    /// Print this host's public key and fingerprint (for authorized_keys).
    Id(commands::id::IdArgs),
    /// One memory-to-memory NETBLT transfer in the deterministic simulator.
    Sim(Box<commands::sim::SimArgs>),
    /// List the named network profiles (simulator and emulator).
    Profiles(commands::profiles::ProfilesArgs),
    /// Run a command across an emulated network path (TUN + namespaces; root).
    Emu(Box<netblt_emu::cli::EmuArgs>),
    /// Receive files (or discard data, or serve files) as NETBLT's passive end.
    Recv(commands::recv::RecvArgs),
    /// Send files or directories to a `netblt recv` (WRITE mode).
    Send(commands::send::SendArgs),
    /// Fetch a file or a directory from a `netblt recv --serve` (READ mode).
    Get(commands::get::GetArgs),
    /// RFC 1030's memory-to-memory test against a `netblt recv --sink`.
    Bench(commands::bench::BenchArgs),
    /// The main job: a real transfer over an emulated long, lossy path (or loopback), with its results.
    Demo(commands::demo::DemoArgs),
    /// Echo server for `netblt rtt`, `netblt load` and `netblt cpu` (dkbenchs).
    Echo(netblt_measure::cli::EchoArgs),
    /// Round-trip times over packet sizes, one message at a time (dkbench).
    Rtt(netblt_measure::cli::RttArgs),
    /// N concurrent one-way transfers, with RTT under load (trafgen).
    Load(netblt_measure::cli::LoadArgs),
    /// Throughput and delay models of the XUNET report.
    Model(netblt_measure::cli::ModelArgs),
    /// Throughput and CPU cost against message size (RFC 415).
    Cpu(netblt_measure::cli::CpuArgs),
    /// Reproduce the seed documents' tables in the simulator: docs/reproduction.md + figures.
    Report(commands::report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::completions::CompletionsArgs),
    /// Write manual pages (netblt.1 and one per subcommand) into a directory.
    Man(commands::man::ManArgs),
}

// The emulator's own exit code for a missing environment is ours.
const _: () = assert!(netblt_emu::cli::EXIT_ENVIRONMENT == exit::EMULATOR);

fn init_logging(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let asked = filter
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_default_env().ok());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = match asked {
        // Diagnostics asked for (--log, RUST_LOG): levels and module paths.
        Some(filter) => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            // Colours only for a terminal: a log file gets plain text.
            .with_ansi(ansi)
            .without_time()
            .try_init(),
        // By default only warnings, which are for the user: one line each
        // in the tool's own voice ("netblt: refused ...: key ... is not in
        // authorized_keys"), not " WARN netblt::driver::secure::passive:".
        None => tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new("warn"))
            .with_writer(std::io::stderr)
            .event_format(UserLine)
            .try_init(),
    };
}

/// A warning as the tool's other messages read: `netblt: MESSAGE`, then
/// the event's other fields, if any.
struct UserLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for UserLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        write!(w, "netblt: ")?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout with success, errors to
            // stderr with usage: keep its formatting, our exit code.
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    init_logging(cli.log.as_deref());
    bulk::register();
    let json = json_sink(&cli.command);
    let result: anyhow::Result<i32> = match cli.command {
        Command::Keygen(a) => commands::keygen::run(a),
        Command::Id(a) => commands::id::run(a),
        Command::Sim(a) => commands::sim::run(*a).map(|()| exit::OK),
        Command::Profiles(a) => commands::profiles::run(a).map(|()| exit::OK),
        Command::Recv(a) => commands::recv::run(a),
        Command::Send(a) => commands::send::run(a),
        Command::Get(a) => commands::get::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Demo(a) => commands::demo::run(a),
        Command::Emu(a) => netblt_emu::cli::run(*a),
        Command::Echo(a) => netblt_measure::cli::run_echo(a).map(|()| exit::OK),
        Command::Rtt(a) => netblt_measure::cli::run_rtt(a).map(|()| exit::OK),
        Command::Load(a) => netblt_measure::cli::run_load(a).map(|()| exit::OK),
        Command::Model(a) => netblt_measure::cli::run_model(a).map(|()| exit::OK),
        Command::Cpu(a) => netblt_measure::cli::run_cpu(a).map(|()| exit::OK),
        Command::Report(a) => commands::report::run(a).map(|()| exit::OK),
        Command::Completions(a) => commands::completions::run(a).map(|()| exit::OK),
        Command::Man(a) => commands::man::run(a).map(|()| exit::OK),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // A peer's words (a refusal's reason, an abort's) reach this
            // line: no control character of theirs reaches the terminal.
            eprintln!("netblt: {}", output::shown_lines(&format!("{e:#}")));
            if let Some(sink) = json {
                json_error::print(sink, &e);
            }
            std::process::exit(exit::code_of(&e));
        }
    }
}

/// Where a failure without a report goes as JSON (F26): the transfer
/// commands asked for `--json` or `--json-stream`, where their reports go;
/// the other commands' `--json` (F28).
fn json_sink(command: &Command) -> Option<json_error::Sink> {
    use json_error::Sink;
    match command {
        Command::Send(a) => a.common.json_sink(),
        Command::Bench(a) => a.common.json_sink(),
        // `-o -`: the data on standard output, the report on stderr.
        Command::Get(a) if a.output.as_deref() == Some(std::path::Path::new("-")) => {
            a.common.json.then_some(Sink::Stderr { prefix: "" })
        }
        Command::Get(a) => a.common.json_sink(),
        Command::Recv(a) if a.stdout => a.json.then_some(Sink::Stderr { prefix: "netblt: " }),
        Command::Recv(a) => a.json.then_some(Sink::Stdout),
        // F28: every other command with a JSON mode, where its one object
        // goes (a failure that printed its report says so: `reported`).
        Command::Demo(a) => a.json.then_some(Sink::Stdout),
        Command::Sim(a) => a.json.then_some(Sink::Stdout),
        Command::Profiles(a) => a.json.then_some(Sink::Stdout),
        Command::Report(a) => a.json.then_some(Sink::Stdout),
        Command::Echo(a) => a.json.then_some(Sink::Stdout),
        Command::Rtt(a) => a.json.then_some(Sink::Stdout),
        Command::Load(a) => a.json.then_some(Sink::Stdout),
        Command::Model(a) => a.json.then_some(Sink::Stdout),
        Command::Cpu(a) => a.json.then_some(Sink::Stdout),
        // `emu --json` prints its counters after the command it runs,
        // whose own output shares standard output: no object of its own.
        Command::Emu(_)
        | Command::Keygen(_)
        | Command::Id(_)
        | Command::Completions(_)
        | Command::Man(_) => None,
    }
}
