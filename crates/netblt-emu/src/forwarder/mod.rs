//! The forwarder: two threads moving packets between the TUN devices through
//! the link model.
//!
//! Each direction has its own thread, link model and queue, so the two never
//! contend for a lock on the packet path. A thread reads every packet waiting
//! on its source TUN, asks [`netblt_link::Link::offer`] for its fate with
//! `now` = time since the emulation started, queues the deliveries, and
//! writes each one into the destination TUN when its time comes. The model's
//! transmitter runs on its own virtual clock (`busy_until`), so when the
//! thread reads late or wakes late, departures are not pushed back: lateness
//! becomes a little delay jitter, never rate error.

mod direction;
mod queue;
mod wait;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use netblt_link::Link;

use crate::nat::{Nat, NatStats};
use crate::stats::DirStats;
use crate::tun::Tun;
use direction::{Direction, NatSide};

/// A running forwarder; dropping it stops the threads and closes both TUN
/// devices (which destroys them).
pub(crate) struct Forwarder {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    forward: Arc<Mutex<DirStats>>,
    reverse: Arc<Mutex<DirStats>>,
    start: Instant,
    nat: Option<Arc<Nat>>,
    /// Kept so the devices outlive the threads: their counters are read
    /// after [`halt`](Self::halt).
    _devices: [Arc<Tun>; 2],
}

impl Forwarder {
    /// Starts forwarding: `forward` shapes left -> right, `reverse` right -> left.
    /// With `realtime`, the threads run SCHED_FIFO (see `wait::raise_priority`);
    /// with `nat_rebind`, a rebinding NAT sits at the left edge (`crate::nat`).
    pub(crate) fn start(
        left: Tun,
        right: Tun,
        forward: Link,
        reverse: Link,
        realtime: bool,
        nat_rebind: Option<std::time::Duration>,
    ) -> io::Result<Self> {
        let nat = nat_rebind.map(|p| Arc::new(Nat::new(p)));
        let left = Arc::new(left);
        let right = Arc::new(right);
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let fwd_stats = Arc::new(Mutex::new(DirStats::default()));
        let rev_stats = Arc::new(Mutex::new(DirStats::default()));
        let mut fwd = Forwarder {
            stop: stop.clone(),
            threads: Vec::new(),
            forward: fwd_stats.clone(),
            reverse: rev_stats.clone(),
            start,
            nat: nat.clone(),
            _devices: [left.clone(), right.clone()],
        };
        let jobs = [
            (
                "nb-emu-fwd",
                left.clone(),
                right.clone(),
                forward,
                fwd_stats,
                nat.clone().map(NatSide::Outbound),
            ),
            (
                "nb-emu-rev",
                right,
                left,
                reverse,
                rev_stats,
                nat.map(NatSide::Inbound),
            ),
        ];
        for (name, src, dst, link, shared, nat) in jobs {
            let dir =
                Direction::new(src, dst, link, start, stop.clone(), shared, realtime).with_nat(nat);
            // On failure `fwd` is dropped, which stops a thread already started.
            let handle = std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || dir.run())?;
            fwd.threads.push(handle);
        }
        Ok(fwd)
    }

    /// What the NAT did, if there is one.
    pub(crate) fn nat_stats(&self) -> Option<NatStats> {
        self.nat.as_ref().map(|n| n.stats())
    }

    /// Seconds since forwarding started.
    pub(crate) fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Latest counters (published by the threads every few milliseconds,
    /// and exactly once more when they stop).
    pub(crate) fn snapshot(&self) -> (DirStats, DirStats) {
        let read = |m: &Mutex<DirStats>| m.lock().unwrap_or_else(PoisonError::into_inner).clone();
        (read(&self.forward), read(&self.reverse))
    }

    /// Stops both threads and waits for them; counters are final afterwards.
    /// The TUN devices stay open until the forwarder is dropped.
    pub(crate) fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for handle in self.threads.drain(..) {
            if handle.join().is_err() {
                tracing::error!("an emulator forwarding thread panicked");
            }
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.halt();
    }
}
