//! `netblt emu`: the command-line face of the emulator.
//!
//! ```text
//! netblt emu --profile NAME [knobs] [--right 'SHELL COMMAND'] -- COMMAND ARGS...
//! netblt emu up NAME [--profile NAME] [knobs]
//! netblt emu down NAME [--json]
//! netblt emu list
//! netblt emu profiles
//! ```
//!
//! In the first form COMMAND runs in the left namespace with this process's
//! stdin/stdout/stderr; the right side is reachable at 198.18.0.2. The
//! optional `--right` command starts first, in its own process group in the
//! right namespace, with its stdout sent to stderr (so stdout carries only
//! COMMAND's output and `--json`), and is killed when COMMAND ends. The exit status is
//! COMMAND's; a run whose TUN devices dropped packets (`tx_dropped`) is
//! reported as failed and exits 1 if COMMAND itself succeeded.

use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use netblt_link::profiles;

use crate::config::{EmuConfig, RIGHT_V4};
use crate::daemon;
use crate::emulation::{check_environment, Emulation};
use crate::error::EmuError;
use crate::knobs::LinkKnobs;
use crate::signals;

/// Exit status when the environment cannot run an emulation (no root, no TUN).
pub const EXIT_ENVIRONMENT: i32 = 5;

/// How long COMMAND gets between SIGTERM and SIGKILL when we are interrupted.
const CHILD_GRACE: Duration = Duration::from_secs(2);

/// `netblt emu` arguments.
#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EmuArgs {
    /// Long-lived emulations and listings (omit to run COMMAND).
    #[command(subcommand)]
    pub action: Option<EmuAction>,
    /// Profile and knobs.
    #[command(flatten)]
    pub setup: EmuSetup,
    /// Shell command started first in the right namespace (via `sh -c`), killed at the end.
    #[arg(long, value_name = "SHELL COMMAND")]
    pub right: Option<String>,
    /// Milliseconds to give the --right command to start before COMMAND runs.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub right_wait: u64,
    /// Emulation name: namespaces nb-NAME-l and nb-NAME-r (default "run" + process id).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the counters as JSON on stdout at the end (instead of a summary on stderr).
    #[arg(long)]
    pub json: bool,
    /// COMMAND and its arguments, run in the left namespace; the right side is at 198.18.0.2.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Subcommands of `netblt emu`.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum EmuAction {
    /// Start a named emulation in the background (pid file under /run/netblt/).
    Up {
        /// Emulation name: namespaces nb-NAME-l and nb-NAME-r.
        name: String,
        /// Profile and knobs.
        #[command(flatten)]
        setup: Box<EmuSetup>,
    },
    /// Stop a named emulation and remove both namespaces.
    Down {
        /// Emulation name.
        name: String,
        /// Print the final counters as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// List emulations on this machine.
    List,
    /// List the link profiles.
    Profiles,
}

/// What the emulated path looks like: a profile plus knobs on top.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EmuSetup {
    /// Start from this profile (see `netblt emu profiles`); default an ideal link.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Also give the devices IPv6 addresses (fd00:6e62::1 left, fd00:6e62::2 right).
    #[arg(long)]
    pub ipv6: bool,
    /// Run the forwarder at ordinary priority (nice -20) instead of SCHED_FIFO.
    #[arg(long)]
    pub no_realtime: bool,
    /// Knobs overriding the profile.
    #[command(flatten)]
    pub knobs: LinkKnobs,
}

impl EmuSetup {
    /// The emulation configuration these options describe.
    pub fn to_config(&self, name: &str) -> Result<EmuConfig, EmuError> {
        let mut cfg = match &self.profile {
            Some(p) => EmuConfig::from_profile_name(name, p)?,
            None => EmuConfig::new(name),
        };
        self.knobs.apply(&mut cfg)?;
        cfg.ipv6 = self.ipv6;
        cfg.realtime = !self.no_realtime;
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Runs `netblt emu`; returns the process exit status.
pub fn run(args: EmuArgs) -> anyhow::Result<i32> {
    match args.action.clone() {
        Some(EmuAction::List) => {
            list();
            Ok(0)
        }
        Some(EmuAction::Profiles) => {
            for p in profiles::all() {
                println!("{:<16} {}", p.name, p.summary);
            }
            Ok(0)
        }
        Some(EmuAction::Up { name, setup }) => {
            if let Some(code) = environment_refusal() {
                return Ok(code);
            }
            let cfg = setup.to_config(&name)?;
            daemon::up(cfg.clone())?;
            eprintln!(
                "netblt emu: {name} is up: {} (198.18.0.1) <-> {} (198.18.0.2); the right side is reachable at {RIGHT_V4}",
                cfg.left_ns(),
                cfg.right_ns()
            );
            eprintln!("netblt emu: run commands with `ip netns exec {} COMMAND`; stop with `netblt emu down {name}`", cfg.left_ns());
            Ok(0)
        }
        Some(EmuAction::Down { name, json }) => {
            if let Some(code) = environment_refusal() {
                return Ok(code);
            }
            let stats = daemon::down(&name)?;
            match (stats, json) {
                (Some(s), true) => println!("{}", serde_json::to_string_pretty(&s)?),
                (Some(s), false) => eprint!("{}", s.render()),
                (None, _) => eprintln!("netblt emu: {name} removed (no final counters were left)"),
            }
            Ok(0)
        }
        None => run_command(args),
    }
}

/// Prints why the emulator cannot run here, as one line, and returns the exit status.
fn environment_refusal() -> Option<i32> {
    match check_environment() {
        Ok(()) => None,
        Err(e) => {
            eprintln!("netblt emu: {e}");
            Some(EXIT_ENVIRONMENT)
        }
    }
}

fn list() {
    let listed = daemon::list();
    if listed.is_empty() {
        println!("no emulations");
        return;
    }
    println!(
        "{:<24} {:<22} {:<5} {:<5}",
        "NAME", "FORWARDER", "LEFT", "RIGHT"
    );
    for e in listed {
        let fwd = match e.pid {
            Some(pid) => format!("running (pid {pid})"),
            None => "not running".to_owned(),
        };
        let yes = |b: bool| if b { "yes" } else { "no" };
        println!(
            "{:<24} {:<22} {:<5} {:<5}",
            e.name,
            fwd,
            yes(e.namespaces.0),
            yes(e.namespaces.1)
        );
    }
}

fn run_command(args: EmuArgs) -> anyhow::Result<i32> {
    let Some((program, program_args)) = args.command.split_first() else {
        anyhow::bail!(
            "give the COMMAND to run after `--` (e.g. `netblt emu --profile lan-1g -- iperf3 -c {RIGHT_V4}`), or use up/down/list"
        );
    };
    if let Some(code) = environment_refusal() {
        return Ok(code);
    }
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("run{}", std::process::id()));
    let cfg = args.setup.to_config(&name)?;
    if let Err(e) = signals::install_signal_cleanup() {
        tracing::warn!("{e}; namespaces may be left behind on Ctrl-C");
    }
    let _graceful = signals::Graceful::new();
    let emu = Emulation::start(cfg).context("starting the emulation")?;
    eprintln!(
        "netblt emu: {} (198.18.0.1) <-> {} (198.18.0.2); the right side is reachable at {RIGHT_V4}",
        emu.left_ns(),
        emu.right_ns()
    );

    let right = match &args.right {
        Some(shell) => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(shell)
                .stdin(Stdio::null())
                .process_group(0);
            // Its output goes to stderr: stdout is COMMAND's (and --json's).
            if let Ok(err) = std::io::stderr().as_fd().try_clone_to_owned() {
                cmd.stdout(Stdio::from(err));
            }
            let child = emu
                .spawn_right(&mut cmd)
                .context("starting the --right command")?;
            std::thread::sleep(Duration::from_millis(args.right_wait));
            Some(child)
        }
        None => None,
    };
    if let Some(child) = &right {
        // Not try_wait: reaping now would free the pid we later signal as a group.
        if libc::pid_t::try_from(child.id()).is_ok_and(|pid| !crate::netns::alive(pid)) {
            eprintln!("netblt emu: warning: the --right command has already exited");
        }
    }

    if signals::interrupted() {
        // Stopped while setting up: do not start COMMAND at all.
        if let Some(mut child) = right {
            stop_group(&mut child);
        }
        let _ = emu.stop();
        return Ok(130);
    }
    let status = emu
        .spawn_left(Command::new(program).args(program_args))
        .with_context(|| format!("starting {program}"))
        .and_then(|mut child| wait_child(&mut child).context("waiting for COMMAND"));
    if let Some(mut child) = right {
        stop_group(&mut child);
    }
    let status = status?;
    let stats = emu.stop();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        eprint!("{}", stats.render());
    }
    let mut code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    if stats.failed {
        eprintln!(
            "netblt emu: the emulation FAILED: {}",
            stats.failure.as_deref().unwrap_or("unknown reason")
        );
        if code == 0 {
            code = 1;
        }
    }
    Ok(code)
}

/// Waits for COMMAND; on a stop signal forwards SIGTERM, then SIGKILL.
fn wait_child(child: &mut Child) -> std::io::Result<ExitStatus> {
    let mut signalled: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if signals::interrupted() {
            match signalled {
                None => {
                    signalled = Some(Instant::now());
                    send_signal(child.id(), libc::SIGTERM);
                }
                Some(at) if at.elapsed() > CHILD_GRACE => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends the `--right` command's whole process group (the shell and what it
/// started). The shell is reaped only at the end, so until then its pid, which
/// is the group id, cannot be reused by an unrelated process. SIGKILL comes
/// only when some process of the group outlives a second: the shell dies at
/// SIGTERM at once, and a `netblt recv` under it needs a moment to print its
/// report (it may be waiting for the acknowledgment of its last OK when the
/// sender's exit ends the run, decision R26).
fn stop_group(child: &mut Child) {
    let pgid = child.id();
    send_group_signal(pgid, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(1);
    let alive = || libc::pid_t::try_from(pgid).is_ok_and(crate::netns::group_alive);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    send_group_signal(pgid, libc::SIGKILL);
    let _ = child.wait();
}

fn send_signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill has no memory-safety preconditions; pid is our child.
        unsafe { libc::kill(pid, sig) };
    }
}

fn send_group_signal(pgid: u32, sig: libc::c_int) {
    if let Ok(pgid) = libc::pid_t::try_from(pgid) {
        if pgid > 0 {
            // SAFETY: as above; the group is the one our child leads.
            unsafe { libc::kill(-pgid, sig) };
        }
    }
}
