//! A window-limited byte stream in the manner of XUNET's Datakit URP and its
//! KMC host interface (VandeWater 1988), to reproduce that report's Tables I-IV
//! in the simulator.
//!
//! What the report says the KMC does, and what we therefore model:
//!
//! * Blocks: "The KMC currently incorporates blocks of 32 bytes with 4 bytes of
//!   overhead per block, yielding 28 bytes of data per block" (§2.5.2); with
//!   the larger buffers "each of the three outstanding blocks of data was 256
//!   bytes ... yielding 252 bytes of user data per block" (§2.5.3). A block is
//!   one datagram: its data followed by a 4-byte trailer ([`TRAILER`]), which
//!   here carries the channel number and the block's kind.
//! * Windows: "there can be 3 outstanding blocks of data in a window", so 84-
//!   or 756-byte windows. The KMC sends a window and waits for its
//!   acknowledgement before sending the next ("transmits another 84 bytes
//!   *only* after receiving an acknowledgement for the first 84 bytes"). The
//!   receiver acknowledges the last block of each window with a 4-byte ACK
//!   datagram (URP piggybacks it on echoed data when it can; we always send it
//!   alone, which costs a few microseconds more).
//! * Requests: "The KMC code and the kernel interface allow only one
//!   outstanding request per channel at a time ... The KMC does not tell the
//!   host it is ready for another transmission until all the blocks of the
//!   previous request have been acknowledged. The mbufs being fed to the KMC
//!   are 1024 bytes long" (§3.7.2). An application write is cut into requests
//!   of at most [`MBUF`] bytes; a window never spans two requests, so 1025
//!   bytes go out as 756, 268 and 1.
//! * Hosts and trunks are the simulator's: the `xunet` profile gives the T1
//!   (1.344 Mb/s, 24.15 ms one way) and the hosts' 0.004 ms/byte. Every
//!   channel of a host shares its one CPU and its one path.
//! * The echo test's applications take `app_step` to read or to write a
//!   message, over and above the per-byte costs ([`echo_rtt`]): dkbench's
//!   write, dkbenchs' read and write back, and dkbench's read of the echo
//!   are four such steps per round trip. The report measured them together
//!   with one switch and no propagation: "Monet, in the local case, has a 1
//!   byte minimum round trip time (response time) of 5 ms" (§2.5.1), and
//!   "The nonzero values in the local case are due to processing time and
//!   bus contention" (§2.4); the caller passes a quarter of that. The
//!   transfer test's writer keeps a message queued in the kernel and its
//!   reader's reads do not gate the KMC's acknowledgements, so its steps
//!   overlap the network and are not charged.
//!
//! Not modelled: loss recovery (the profile loses nothing; a lost block would
//! stall its channel and the run would end `Idle`), the wide-area Datakit
//! switches' backplanes and trunk interface boards beyond what the local
//! case's 5 ms contains (the report gives no figures for them), call set-up.
//!
//! Two experiments run on it: [`echo_rtt`] (dkbench/dkbenchs and dkxload's
//! RTT test: one message outstanding, echoed back whole) and
//! [`stream_transfer`] (trafgen and dkxload's transfer test: N channels each
//! writing messages as fast as the KMC accepts them).

use std::collections::VecDeque;

use netblt_proto::{Duration, Instant};
use serde::Serialize;

use crate::{Node, Outcome, PathConfig, SimError, Simulation};

/// Bytes of each block's trailer (the report's "4 byte trailer").
pub const TRAILER: usize = 4;
/// Bytes per kernel mbuf page fed to the KMC as one request (§3.7.2).
pub const MBUF: usize = 1024;

const KIND_DATA: u8 = 0;
const KIND_LAST_OF_WINDOW: u8 = 1;
const KIND_ACK: u8 = 2;

/// One host interface's (KMC's) sending discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Kmc {
    /// User data bytes per block: 28 (small buffers) or 252 (large).
    pub block_data: usize,
    /// Blocks per window: three.
    pub blocks_per_window: usize,
    /// Largest request the kernel hands the KMC (one mbuf page).
    pub request_max: usize,
}

impl Kmc {
    /// The small buffers: 3 blocks of 28 data bytes, an 84-byte window.
    pub const SMALL: Kmc = Kmc {
        block_data: 28,
        blocks_per_window: 3,
        request_max: MBUF,
    };
    /// The large buffers: 3 blocks of 252 data bytes, a 756-byte window.
    pub const LARGE: Kmc = Kmc {
        block_data: 252,
        blocks_per_window: 3,
        request_max: MBUF,
    };

    /// Data bytes per window.
    pub fn window(&self) -> usize {
        self.block_data * self.blocks_per_window
    }
}

/// Sending state of one channel at one host.
#[derive(Default)]
struct Sender {
    /// Requests (each at most one mbuf) the kernel has not yet given the KMC.
    requests: VecDeque<usize>,
    /// Bytes of the current request not yet put into a window.
    unsent: usize,
    /// Blocks of the current window still to transmit (data lengths).
    blocks: VecDeque<usize>,
    /// The current window is sent and not yet acknowledged.
    awaiting_ack: bool,
}

impl Sender {
    fn idle(&self) -> bool {
        self.requests.is_empty() && self.unsent == 0 && self.blocks.is_empty() && !self.awaiting_ack
    }

    fn write(&mut self, kmc: &Kmc, mut len: usize) {
        let max = kmc.request_max.max(1);
        while len > 0 {
            let r = len.min(max);
            self.requests.push_back(r);
            len -= r;
        }
    }

    /// Fills the next window if the previous one is acknowledged.
    fn refill(&mut self, kmc: &Kmc) {
        if self.awaiting_ack || !self.blocks.is_empty() {
            return;
        }
        if self.unsent == 0 {
            match self.requests.pop_front() {
                Some(r) => self.unsent = r,
                None => return,
            }
        }
        for _ in 0..kmc.blocks_per_window.max(1) {
            if self.unsent == 0 {
                break;
            }
            let b = self.unsent.min(kmc.block_data.max(1));
            self.blocks.push_back(b);
            self.unsent -= b;
        }
    }
}

/// What the application on a channel does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// dkbench: write `size`, wait for it to come back whole, repeat.
    Pinger { size: usize, reps: u32 },
    /// dkbenchs: read a whole `size`-byte message, write it back.
    Echoer { size: usize },
    /// trafgen: write `size`-byte messages until `total` bytes are written.
    Source { size: usize, total: u64 },
    /// trafgens: read and discard.
    Sink,
}

struct Channel {
    role: Role,
    tx: Sender,
    /// Bytes of the current incoming message received so far.
    rx_partial: usize,
    rx_total: u64,
    acks_owed: u32,
    written: u64,
    write_at: Option<Instant>,
    /// A pinger's next write may start then (its read of the last echo
    /// ends then).
    ready_at: Instant,
    /// Messages an application has begun to write: (when the write reaches
    /// the kernel, bytes).
    writing: VecDeque<(Instant, usize)>,
    rtts: Vec<Duration>,
    first_write: Option<Instant>,
    last_ack: Option<Instant>,
    last_rx: Option<Instant>,
}

impl Channel {
    fn new(role: Role) -> Self {
        Channel {
            role,
            tx: Sender::default(),
            rx_partial: 0,
            rx_total: 0,
            acks_owed: 0,
            written: 0,
            write_at: None,
            ready_at: Instant::ZERO,
            writing: VecDeque::new(),
            rtts: Vec::new(),
            first_write: None,
            last_ack: None,
            last_rx: None,
        }
    }

    fn done(&self) -> bool {
        match self.role {
            Role::Pinger { reps, .. } => self.rtts.len() as u32 >= reps && self.writing.is_empty(),
            Role::Source { total, .. } => self.written >= total && self.tx.idle(),
            Role::Echoer { .. } => self.writing.is_empty(),
            Role::Sink => true,
        }
    }

    /// Hands the kernel the writes whose application step has ended.
    fn writes_due(&mut self, kmc: &Kmc, now: Instant) {
        while let Some(&(at, len)) = self.writing.front() {
            if at > now {
                break;
            }
            self.writing.pop_front();
            self.tx.write(kmc, len);
        }
    }
}

/// One host: a KMC and its channels.
struct StreamNode {
    kmc: Kmc,
    channels: Vec<Channel>,
    next: usize,
    /// An echo application's time to read or to write one message.
    app_step: Duration,
}

impl StreamNode {
    fn new(kmc: Kmc, roles: Vec<Role>, app_step: Duration) -> Self {
        StreamNode {
            kmc,
            channels: roles.into_iter().map(Channel::new).collect(),
            next: 0,
            app_step,
        }
    }

    /// Applications write when they are ready (and, for sources, when the
    /// kernel has room: one message queued beyond the KMC's request).
    fn app_step(&mut self, now: Instant) {
        let kmc = self.kmc;
        for ch in &mut self.channels {
            match ch.role {
                Role::Pinger { size, reps } => {
                    // dkbench reads the clock, then writes.
                    if ch.write_at.is_none() && ch.ready_at <= now && (ch.rtts.len() as u32) < reps
                    {
                        ch.write_at = Some(now);
                        ch.first_write.get_or_insert(now);
                        ch.writing.push_back((now + self.app_step, size));
                    }
                }
                Role::Source { size, total } => {
                    // A blocking write returns once the kernel holds the data;
                    // keep one message waiting so the KMC never idles on us.
                    while ch.written < total && ch.tx.requests.is_empty() {
                        let n = (size as u64).min(total - ch.written) as usize;
                        ch.first_write.get_or_insert(now);
                        ch.tx.write(&kmc, n.max(1));
                        ch.written += n.max(1) as u64;
                    }
                }
                Role::Echoer { .. } | Role::Sink => {}
            }
            ch.writes_due(&kmc, now);
            ch.tx.refill(&kmc);
        }
    }

    fn finished(&self) -> bool {
        self.channels.iter().all(Channel::done)
    }
}

fn trailer(buf: &mut Vec<u8>, channel: usize, kind: u8) {
    buf.extend_from_slice(&[(channel & 0xff) as u8, kind, 0, 0]);
}

impl Node for StreamNode {
    fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        let Some(split) = data.len().checked_sub(TRAILER) else {
            return;
        };
        let (payload, t) = data.split_at(split);
        let (Some(&ch_no), Some(&kind)) = (t.first(), t.get(1)) else {
            return;
        };
        let kmc = self.kmc;
        let step = self.app_step;
        let Some(ch) = self.channels.get_mut(usize::from(ch_no)) else {
            return;
        };
        match kind {
            KIND_ACK => {
                ch.tx.awaiting_ack = false;
                ch.last_ack = Some(now);
                ch.tx.refill(&kmc);
            }
            KIND_DATA | KIND_LAST_OF_WINDOW => {
                if kind == KIND_LAST_OF_WINDOW {
                    ch.acks_owed += 1;
                }
                ch.rx_total += payload.len() as u64;
                ch.last_rx = Some(now);
                ch.rx_partial += payload.len();
                match ch.role {
                    Role::Pinger { size, .. } if ch.rx_partial >= size => {
                        // The read of the echo ends one step later; then
                        // dkbench reads the clock.
                        ch.rx_partial -= size;
                        ch.ready_at = now + step;
                        if let Some(t0) = ch.write_at.take() {
                            ch.rtts.push(ch.ready_at - t0);
                        }
                    }
                    Role::Echoer { size } if ch.rx_partial >= size => {
                        // dkbenchs reads the message, then writes it back.
                        ch.rx_partial -= size;
                        ch.writing.push_back((now + step + step, size));
                        ch.writes_due(&kmc, now);
                        ch.tx.refill(&kmc);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        self.app_step(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.app_step(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        self.app_step(now);
        let n = self.channels.len();
        // Acknowledgements first, then data, channels served round robin.
        for i in 0..n {
            let c = (self.next + i) % n;
            if let Some(ch) = self.channels.get_mut(c) {
                if ch.acks_owed > 0 {
                    ch.acks_owed -= 1;
                    trailer(buf, c, KIND_ACK);
                    return true;
                }
            }
        }
        for i in 0..n {
            let c = (self.next + i) % n;
            let Some(ch) = self.channels.get_mut(c) else {
                continue;
            };
            if let Some(len) = ch.tx.blocks.pop_front() {
                let last = ch.tx.blocks.is_empty();
                if last {
                    ch.tx.awaiting_ack = true;
                }
                buf.resize(len, 0x5a);
                trailer(buf, c, if last { KIND_LAST_OF_WINDOW } else { KIND_DATA });
                self.next = (c + 1) % n;
                return true;
            }
        }
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // A source's first write at the start of the run; a pinger's next
        // write and any echo's write when an application step ends.
        self.channels
            .iter()
            .flat_map(|c| {
                let start = match c.role {
                    Role::Pinger { reps, .. }
                        if c.write_at.is_none() && (c.rtts.len() as u32) < reps =>
                    {
                        Some(c.ready_at)
                    }
                    Role::Source { .. } if c.first_write.is_none() => Some(Instant::ZERO),
                    _ => None,
                };
                c.writing.front().map(|w| w.0).into_iter().chain(start)
            })
            .min()
    }

    fn is_finished(&self) -> bool {
        self.finished()
    }
}

/// Result of an echo (RTT) test for one message size.
#[derive(Clone, Debug, Serialize)]
pub struct EchoResult {
    /// Message size, bytes.
    pub size: usize,
    /// Messages echoed.
    pub count: usize,
    /// Minimum round-trip time, ms (dkbench's statistic).
    pub min_ms: f64,
    /// Mean round-trip time, ms (dkxload's statistic).
    pub mean_ms: f64,
    /// Messages per second at one outstanding message (dkxload's "packets per sec").
    pub messages_per_s: f64,
    /// How the run ended.
    pub outcome: Outcome,
}

/// dkbench against dkbenchs: host A writes `size` bytes, host B echoes them
/// once all have arrived, A times the round trip; `reps` times. `kmc_a` is
/// A's interface (A to B), `kmc_b` B's. Each application takes `app_step`
/// to read or to write a message (four steps per round trip).
pub fn echo_rtt(
    path: &PathConfig,
    kmc_a: Kmc,
    kmc_b: Kmc,
    app_step: Duration,
    size: usize,
    reps: u32,
    seed: u64,
) -> Result<EchoResult, SimError> {
    let size = size.max(1);
    let a = StreamNode::new(kmc_a, vec![Role::Pinger { size, reps }], app_step);
    let b = StreamNode::new(kmc_b, vec![Role::Echoer { size }], app_step);
    let mut sim = Simulation::new(a, b, path.clone(), seed)?;
    let outcome = sim.run(Instant::ZERO + Duration::from_secs(24 * 3600));
    let rtts: Vec<f64> = sim
        .node_a()
        .channels
        .first()
        .map(|c| c.rtts.iter().map(|d| d.as_secs_f64() * 1e3).collect())
        .unwrap_or_default();
    let count = rtts.len();
    let min_ms = rtts.iter().copied().fold(f64::INFINITY, f64::min);
    let mean_ms = if count > 0 {
        rtts.iter().sum::<f64>() / count as f64
    } else {
        f64::NAN
    };
    Ok(EchoResult {
        size,
        count,
        min_ms: if count > 0 { min_ms } else { f64::NAN },
        mean_ms,
        messages_per_s: 1e3 / mean_ms,
        outcome,
    })
}

/// Result of a one-way transfer on `channels` concurrent channels.
#[derive(Clone, Debug, Serialize)]
pub struct StreamTransferResult {
    /// Message (write) size, bytes.
    pub message_size: usize,
    /// Bytes each channel moved.
    pub bytes_per_channel: u64,
    /// Throughput of each channel, bytes/s: bytes / (last acknowledgement -
    /// first write), as trafgen timed its 1 MB.
    pub per_channel_bytes_per_s: Vec<f64>,
    /// Sum of the channels' throughputs, bytes/s (as Table III adds them).
    pub total_bytes_per_s: f64,
    /// Mean time per message on channel 0, ms (dkxload's "mean transfer rate").
    pub mean_message_ms: f64,
    /// How the run ended.
    pub outcome: Outcome,
}

/// trafgen against trafgens: host A runs `channels` writers, each writing
/// `message_size`-byte messages until `bytes_per_channel` are written; host B
/// reads and discards.
pub fn stream_transfer(
    path: &PathConfig,
    kmc: Kmc,
    message_size: usize,
    bytes_per_channel: u64,
    channels: usize,
    seed: u64,
) -> Result<StreamTransferResult, SimError> {
    let size = message_size.max(1);
    let channels = channels.clamp(1, 256);
    let total = bytes_per_channel.max(1);
    let a = StreamNode::new(
        kmc,
        vec![Role::Source { size, total }; channels],
        Duration::ZERO,
    );
    let b = StreamNode::new(kmc, vec![Role::Sink; channels], Duration::ZERO);
    let mut sim = Simulation::new(a, b, path.clone(), seed)?;
    let outcome = sim.run(Instant::ZERO + Duration::from_secs(7 * 24 * 3600));
    let per: Vec<f64> = sim
        .node_a()
        .channels
        .iter()
        .map(|c| match (c.first_write, c.last_ack) {
            (Some(t0), Some(t1)) if t1 > t0 => total as f64 / (t1 - t0).as_secs_f64(),
            _ => 0.0,
        })
        .collect();
    let mean_message_ms = sim
        .node_a()
        .channels
        .first()
        .and_then(|c| Some((c.last_ack? - c.first_write?).as_secs_f64()))
        .map_or(f64::NAN, |s| s * 1e3 / (total as f64 / size as f64).ceil());
    Ok(StreamTransferResult {
        message_size: size,
        bytes_per_channel: total,
        total_bytes_per_s: per.iter().sum(),
        per_channel_bytes_per_s: per,
        mean_message_ms,
        outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::profile;

    fn xunet() -> PathConfig {
        PathConfig::from(&profile("xunet").expect("xunet profile"))
    }

    /// Round trips of one window (eq. 4's structure): 84 and 85 bytes with
    /// 84-byte windows both ways differ by two round trips.
    #[test]
    fn small_window_costs_two_round_trips_per_extra_window() {
        let p = xunet();
        let r84 = echo_rtt(&p, Kmc::SMALL, Kmc::SMALL, Duration::ZERO, 84, 3, 1).unwrap();
        let r85 = echo_rtt(&p, Kmc::SMALL, Kmc::SMALL, Duration::ZERO, 85, 3, 1).unwrap();
        assert_eq!(r84.count, 3);
        let one = r84.min_ms;
        assert!((48.0..52.0).contains(&one), "{one}");
        let extra = r85.min_ms - r84.min_ms;
        assert!((2.0 * 48.0..2.0 * 52.0).contains(&extra), "{extra}");
    }

    /// §3.7.2: 1025 bytes go out as 756, 268 and 1: three windows each way.
    #[test]
    fn requests_are_cut_at_one_mbuf() {
        let p = xunet();
        let r1024 = echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, Duration::ZERO, 1024, 2, 1).unwrap();
        let r1025 = echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, Duration::ZERO, 1025, 2, 1).unwrap();
        let extra = r1025.min_ms - r1024.min_ms;
        assert!((95.0..105.0).contains(&extra), "{extra}");
    }

    /// Each of an echo's four application steps (write, read, write back,
    /// read back) adds its time to the round trip, for one window or three:
    /// 5 ms, less the echoer's stand-alone ACK (about 0.2 ms on the T1),
    /// which now leaves while dkbenchs reads instead of ahead of the echo.
    #[test]
    fn each_application_step_adds_to_the_echo() {
        let p = xunet();
        let step = Duration::from_micros(1250);
        for size in [1, 1025] {
            let bare = echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, Duration::ZERO, size, 3, 1).unwrap();
            let with = echo_rtt(&p, Kmc::LARGE, Kmc::LARGE, step, size, 3, 1).unwrap();
            assert_eq!(with.count, 3);
            let added = with.min_ms - bare.min_ms;
            assert!(
                (4.5..=5.0).contains(&added),
                "{size} bytes: {added} ms added"
            );
            // The pinger's next write waits for its read: the mean follows.
            let mean_added = with.mean_ms - bare.mean_ms;
            assert!((4.5..=5.0).contains(&mean_added), "{mean_added}");
        }
    }

    #[test]
    fn transfer_of_full_windows_is_one_window_per_round_trip() {
        let p = xunet();
        let r = stream_transfer(&p, Kmc::LARGE, 756, 756 * 20, 1, 1).unwrap();
        assert_eq!(r.outcome, Outcome::Finished);
        // 756 bytes per round trip of ~55 ms (propagation, three blocks on
        // the T1, the hosts' per-byte costs).
        let bps = r.per_channel_bytes_per_s[0];
        assert!((13_000.0..15_000.0).contains(&bps), "{bps}");
    }

    #[test]
    fn sender_cuts_windows_within_requests() {
        let mut s = Sender::default();
        s.write(&Kmc::LARGE, 1025);
        assert_eq!(s.requests, [1024, 1]);
        s.refill(&Kmc::LARGE);
        assert_eq!(s.blocks, [252, 252, 252]);
        s.blocks.clear();
        s.awaiting_ack = false;
        s.refill(&Kmc::LARGE);
        assert_eq!(s.blocks, [252, 16]);
    }
}
