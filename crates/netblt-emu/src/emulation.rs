//! [`Emulation`]: two namespaces, two TUN devices and a forwarder, torn down
//! on every path out.

use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use netblt_link::Link;

use crate::config::{EmuConfig, LEFT_V4, LEFT_V6, RIGHT_V4, RIGHT_V6};
use crate::error::EmuError;
use crate::forwarder::Forwarder;
use crate::stats::{EmuStats, TxDropped};
use crate::tun::{Tun, DEVICE};
use crate::{netns, signals};

/// Transmit queue of the TUN devices. The default (500) overflows under a
/// burst while the forwarder sleeps, and the kernel drops silently; 10000
/// covers a full TCP window of MTU-size packets at gigabit rates.
const TXQUEUELEN: &str = "10000";

/// How long processes left in a namespace get between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// A running emulated path between two network namespaces.
///
/// Left (`nb-<name>-l`, 198.18.0.1) and right (`nb-<name>-r`; the right side
/// is reachable at 198.18.0.2) each hold a TUN device `nbtun0`; the forwarder
/// in this process moves packets between them through the link models of
/// [`EmuConfig::forward`] (left to right) and [`EmuConfig::reverse`].
///
/// Dropping it (also while unwinding from a panic) stops the forwarder, ends
/// the processes still inside the namespaces and deletes both namespaces.
pub struct Emulation {
    cfg: EmuConfig,
    left_ns: String,
    right_ns: String,
    left_handle: Option<File>,
    right_handle: Option<File>,
    forwarder: Option<Forwarder>,
}

impl std::fmt::Debug for Emulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulation")
            .field("left_ns", &self.left_ns)
            .field("right_ns", &self.right_ns)
            .finish_non_exhaustive()
    }
}

/// Root and `/dev/net/tun`: what an emulation needs from the system.
pub fn check_environment() -> Result<(), EmuError> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::NotRoot);
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::NoTun);
    }
    Ok(())
}

/// Deletes namespaces created so far if `start` fails half-way.
struct Partial {
    created: Vec<String>,
}

impl Partial {
    fn add(&mut self, ns: &str) -> Result<(), EmuError> {
        netns::add(ns)?;
        signals::register(ns);
        self.created.push(ns.to_owned());
        Ok(())
    }

    fn defuse(mut self) {
        self.created.clear();
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        for ns in self.created.drain(..).rev() {
            match netns::delete(ns.as_str()) {
                Ok(()) => signals::unregister(&ns),
                Err(e) => tracing::error!("cleanup of {ns} failed: {e}"),
            }
        }
    }
}

impl Emulation {
    /// Creates the namespaces and devices and starts forwarding.
    ///
    /// Fails with [`EmuError::Exists`] if either namespace name is taken
    /// (a namespace we did not create is never touched); on any failure,
    /// whatever was created is removed again.
    pub fn start(cfg: EmuConfig) -> Result<Emulation, EmuError> {
        check_environment()?;
        cfg.validate()?;
        let forward = Link::new(cfg.forward.clone(), cfg.seed)?;
        let reverse = Link::new(cfg.reverse.clone(), cfg.reverse_seed())?;
        let left_ns = cfg.left_ns();
        let right_ns = cfg.right_ns();

        let mut partial = Partial {
            created: Vec::new(),
        };
        partial.add(&left_ns)?;
        partial.add(&right_ns)?;
        let left_handle = netns::open(&left_ns)?;
        let right_handle = netns::open(&right_ns)?;
        let left_tun = setup_side(&cfg, &left_ns, &left_handle, Side::Left)?;
        let right_tun = setup_side(&cfg, &right_ns, &right_handle, Side::Right)?;
        let forwarder = Forwarder::start(
            left_tun,
            right_tun,
            forward,
            reverse,
            cfg.realtime,
            cfg.nat_rebind,
        )
        .map_err(|e| EmuError::io("starting the forwarder threads", e))?;
        partial.defuse();
        tracing::info!("emulation {} up: {left_ns} <-> {right_ns}", cfg.name);
        Ok(Emulation {
            cfg,
            left_ns,
            right_ns,
            left_handle: Some(left_handle),
            right_handle: Some(right_handle),
            forwarder: Some(forwarder),
        })
    }

    /// The configuration it runs.
    pub fn config(&self) -> &EmuConfig {
        &self.cfg
    }

    /// Name of the left namespace (`nb-<name>-l`).
    pub fn left_ns(&self) -> &str {
        &self.left_ns
    }

    /// Name of the right namespace (`nb-<name>-r`).
    pub fn right_ns(&self) -> &str {
        &self.right_ns
    }

    /// Address of the left side, 198.18.0.1.
    pub fn left_addr(&self) -> IpAddr {
        IpAddr::V4(LEFT_V4)
    }

    /// Address of the right side, 198.18.0.2.
    pub fn right_addr(&self) -> IpAddr {
        IpAddr::V4(RIGHT_V4)
    }

    /// IPv6 address of the right side, if the emulation has IPv6.
    pub fn right_addr_v6(&self) -> Option<Ipv6Addr> {
        self.cfg.ipv6.then_some(RIGHT_V6)
    }

    /// Spawns `cmd` inside the left namespace. Only the network namespace
    /// changes (unlike `ip netns exec`, `/sys` is not remounted).
    pub fn spawn_left(&self, cmd: &mut Command) -> io::Result<Child> {
        spawn_in(self.left_handle.as_ref(), cmd)
    }

    /// Spawns `cmd` inside the right namespace.
    pub fn spawn_right(&self, cmd: &mut Command) -> io::Result<Child> {
        spawn_in(self.right_handle.as_ref(), cmd)
    }

    /// Runs `f` on a thread inside the left namespace and returns its result:
    /// sockets `f` opens belong to that namespace and stay there.
    ///
    /// # Panics
    /// If `f` panics, or if joining the namespace fails (it cannot while the
    /// emulation holds it open, short of a kernel refusing root).
    pub fn enter_left<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        enter(self.left_handle.as_ref(), f)
    }

    /// Like [`enter_left`](Self::enter_left), in the right namespace.
    ///
    /// # Panics
    /// As [`enter_left`](Self::enter_left).
    pub fn enter_right<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        enter(self.right_handle.as_ref(), f)
    }

    /// Counters so far (`tx_dropped` is read only by [`stop`](Self::stop)).
    pub fn stats(&self) -> EmuStats {
        let mut stats = EmuStats {
            name: self.cfg.name.clone(),
            ..EmuStats::default()
        };
        if let Some(fwd) = &self.forwarder {
            (stats.forward, stats.reverse) = fwd.snapshot();
            stats.nat = fwd.nat_stats();
            stats.elapsed_s = fwd.elapsed_s();
        }
        stats.judge();
        stats
    }

    /// Stops forwarding, reads the final counters including both devices'
    /// `tx_dropped`, and removes everything. A run whose `tx_dropped` is not
    /// zero comes back with [`EmuStats::failed`] set.
    pub fn stop(mut self) -> EmuStats {
        self.teardown()
    }

    fn teardown(&mut self) -> EmuStats {
        let mut stats = EmuStats {
            name: self.cfg.name.clone(),
            ..EmuStats::default()
        };
        let mut tx_error = None;
        if let Some(mut fwd) = self.forwarder.take() {
            fwd.halt();
            (stats.forward, stats.reverse) = fwd.snapshot();
            stats.nat = fwd.nat_stats();
            stats.elapsed_s = fwd.elapsed_s();
            // The devices still exist while the forwarder holds their fds.
            let left = read_tx_dropped(&self.left_ns);
            let right = read_tx_dropped(&self.right_ns);
            match (left, right) {
                (Ok(left), Ok(right)) => stats.tx_dropped = Some(TxDropped { left, right }),
                (Err(e), _) | (_, Err(e)) => tx_error = Some(e.to_string()),
            }
            drop(fwd);
        }
        self.left_handle = None;
        self.right_handle = None;
        for ns in [&self.right_ns, &self.left_ns] {
            netns::kill_all(ns, KILL_GRACE);
            match netns::delete(ns) {
                Ok(()) => signals::unregister(ns),
                Err(e) => tracing::error!("deleting namespace {ns}: {e}"),
            }
        }
        stats.judge();
        if stats.tx_dropped.is_none() && !stats.failed {
            stats.failed = true;
            stats.failure = Some(format!(
                "could not read the TUN devices' tx_dropped: {}",
                tx_error.unwrap_or_default()
            ));
        }
        stats
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        if self.forwarder.is_some() || netns::exists(&self.left_ns) || netns::exists(&self.right_ns)
        {
            let _ = self.teardown();
        }
    }
}

#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// Creates the TUN device inside the namespace and configures it.
fn setup_side(cfg: &EmuConfig, ns: &str, handle: &File, side: Side) -> Result<Tun, EmuError> {
    let ipv6 = cfg.ipv6;
    let tun = netns::within(handle, || -> io::Result<Tun> {
        if !ipv6 {
            // Before the device exists, so it is born without IPv6 and never
            // sends router solicitations or MLD reports across the link.
            // /proc/sys/net shows the namespace of the thread that opens it.
            for which in ["all", "default"] {
                std::fs::write(format!("/proc/sys/net/ipv6/conf/{which}/disable_ipv6"), "1")?;
            }
        }
        Tun::create(DEVICE)
    })
    .and_then(|r| r)
    .map_err(|e| EmuError::io(format!("creating TUN device {DEVICE} in {ns}"), e))?;

    let (local, peer, local6): (Ipv4Addr, Ipv4Addr, Ipv6Addr) = match side {
        Side::Left => (LEFT_V4, RIGHT_V4, LEFT_V6),
        Side::Right => (RIGHT_V4, LEFT_V4, RIGHT_V6),
    };
    let mtu = cfg.mtu.to_string();
    let local = format!("{local}/32");
    let peer = format!("{peer}/32");
    netns::ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    netns::ip(&[
        "-n",
        ns,
        "link",
        "set",
        "dev",
        DEVICE,
        "mtu",
        &mtu,
        "txqueuelen",
        TXQUEUELEN,
    ])?;
    netns::ip(&[
        "-n", ns, "addr", "add", &local, "peer", &peer, "dev", DEVICE,
    ])?;
    if ipv6 {
        let local6 = format!("{local6}/64");
        netns::ip(&[
            "-n", ns, "-6", "addr", "add", &local6, "dev", DEVICE, "nodad",
        ])?;
    }
    netns::ip(&["-n", ns, "link", "set", "dev", DEVICE, "up"])?;
    Ok(tun)
}

fn spawn_in(handle: Option<&File>, cmd: &mut Command) -> io::Result<Child> {
    let Some(handle) = handle else {
        return Err(io::Error::other("the emulation has been stopped"));
    };
    let fd = handle.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // the async-signal-safe setns system call on an fd the parent keeps open
    // for the lifetime of the emulation.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

fn enter<T: Send>(handle: Option<&File>, f: impl FnOnce() -> T + Send) -> T {
    let Some(handle) = handle else {
        panic!("enter_left/enter_right called on a stopped emulation");
    };
    match netns::within(handle, f) {
        Ok(value) => value,
        Err(e) => panic!("cannot join the emulation's namespace: {e}"),
    }
}

fn read_tx_dropped(ns: &str) -> Result<u64, EmuError> {
    let text = netns::read_in(
        ns,
        &format!("/sys/class/net/{DEVICE}/statistics/tx_dropped"),
    )?;
    text.trim()
        .parse()
        .map_err(|_| EmuError::Failed(format!("unexpected tx_dropped value {:?}", text.trim())))
}
