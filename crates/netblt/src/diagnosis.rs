//! "Why was it slow?": the one thing that limited a transfer's speed, named
//! from measured counters ([`Diagnosis`], in [`TransferReport::limit`]).
//!
//! Three sources feed it, gathered into [`LimitInputs`]:
//!
//! * the engine's counters (packets sent, resent, lost) and its rate
//!   controller's view of the path (bottleneck estimate, round trip, loss
//!   treated as noise, congestion backoffs, and why the rate is what it is,
//!   time-weighted over the transfer);
//! * the active loop's meter (`driver::meter`): how long the loop slept
//!   waiting for the pacer, for the receiver's OKs (the window), for a GO,
//!   for the application's next buffer or for the local writer, how long it
//!   was busy, and its thread's CPU time;
//! * the socket's drop counter (`SO_MEMINFO`);
//! * the scheduler's count of how long the loop's thread waited for a CPU
//!   (`crate::cpu_wait`): a CPU quota or a busy machine.
//!
//! [`diagnose`] is a pure function of those figures, so each verdict is
//! unit-tested with constructed counters (below) and end to end by runs in
//! which that limit is really the cause (`tests/limits.rs`).
//! Decisions D1, Y1 and Y2 in docs/decisions.md give the rules and their
//! thresholds.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::driver::meter::LoopTimes;
use crate::report::TransferReport;

/// What limited a transfer's speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Limit {
    /// The rate the user allowed: the cap
    /// ([`SendOptions::rate`](crate::SendOptions::rate), or a maximum set
    /// through [`RateControl`](crate::RateControl)) held the adaptive
    /// controller there, or the fixed policy sent at that rate.
    RateCap,
    /// The path: its bottleneck rate, round trip and loss, as the rate
    /// controller measured them (or the loss a fixed rate met).
    Path,
    /// Start-up: the transfer ended while the rate controller was still
    /// ramping up to the path's rate.
    Startup,
    /// The receiver's window: all the buffers it allows (`buffers` ×
    /// `buffer_size`) were in flight, waiting for OKs, most of the time.
    ReceiverWindow,
    /// The receiving socket: the kernel dropped datagrams because its
    /// buffer was full.
    ReceiverDrops,
    /// The receiver's disk or application: it was slow to take buffers (a
    /// sender saw no GO; a receiver's writer was behind).
    ReceiverDisk,
    /// The receiver's CPU: its event loop was busy all the time.
    ReceiverCpu,
    /// The sender's CPU: its event loop was busy all the time and sent
    /// below the pacing rate.
    SenderCpu,
    /// The sender's disk or reader: the engine waited for the
    /// application's data.
    SenderReader,
}

impl Limit {
    /// The short name used in JSON (`rate-cap`, `path`, `startup`,
    /// `receiver-window`, `receiver-drops`, `receiver-disk`,
    /// `receiver-cpu`, `sender-cpu`, `sender-reader`).
    pub fn name(self) -> &'static str {
        match self {
            Limit::RateCap => "rate-cap",
            Limit::Path => "path",
            Limit::Startup => "startup",
            Limit::ReceiverWindow => "receiver-window",
            Limit::ReceiverDrops => "receiver-drops",
            Limit::ReceiverDisk => "receiver-disk",
            Limit::ReceiverCpu => "receiver-cpu",
            Limit::SenderCpu => "sender-cpu",
            Limit::SenderReader => "sender-reader",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The verdict on one transfer: what limited it, in a sentence for people,
/// and the figures that decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Diagnosis {
    /// The limit (serialized as its short name, e.g. `"rate-cap"`).
    pub limit: Limit,
    /// One sentence, e.g. "limited by the path: ~96 Mb/s estimated
    /// bottleneck, 100 ms RTT, 1.0 % loss treated as noise".
    pub message: String,
    /// The measurements behind the verdict, by name (rates in bits/s,
    /// times in milliseconds, fractions 0..1).
    pub figures: BTreeMap<&'static str, f64>,
    /// The setting the message names, that held the transfer there or
    /// whose change avoids the limit, when it names one: for a program (a
    /// tool names its own option for it, F25). In the JSON form as its
    /// stable code ([`LimitSetting::code`]: `"rate"`, `"fixed_rate"`, ...),
    /// left out when `None` (F26).
    #[serde(
        serialize_with = "setting_code",
        skip_serializing_if = "Option::is_none"
    )]
    pub setting: Option<LimitSetting>,
}

fn setting_code<S: serde::Serializer>(
    setting: &Option<LimitSetting>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match setting {
        Some(x) => s.serialize_some(x.code()),
        None => s.serialize_none(),
    }
}

/// A setting a [`Diagnosis`] names ([`Diagnosis::setting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitSetting {
    /// The rate cap: [`SendOptions::rate`](crate::SendOptions::rate) (or
    /// the receiving end's maximum).
    Rate,
    /// The fixed policy ([`Policy::Fixed`](crate::Policy)) at its rate.
    FixedRate,
    /// The maximum set while the transfer ran
    /// ([`RateControl::set_max_rate`](crate::RateControl::set_max_rate)).
    LiveRate,
    /// Larger buffers
    /// ([`TransferParams::buffer_size`](crate::proto::TransferParams)).
    BufferSize,
    /// More or larger buffers (`TransferParams::max_buffers`,
    /// `buffer_size`).
    Buffers,
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Everything [`diagnose`] looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LimitInputs {
    /// This end sent the data.
    pub(crate) sender: bool,
    /// The data sender ran RFC 998's fixed rate (no controller).
    pub(crate) fixed: bool,
    /// The most the sender could pace: the negotiated burst rate (`--rate`).
    pub(crate) cap_bps: f64,
    /// The cap the application set while the transfer ran (`--rate-file`,
    /// R27), the last one, when below `cap_bps`.
    pub(crate) live_cap_bps: Option<f64>,
    /// RFC 1030's steady throughput.
    pub(crate) achieved_bps: f64,
    /// Where the loop's time went.
    pub(crate) times: LoopTimes,
    /// The controller's bottleneck estimate at the end.
    pub(crate) bottleneck_bps: Option<f64>,
    /// The controller's minimum round trip, else the control round trip.
    pub(crate) rtt_ms: Option<f64>,
    /// Loss the controller treated as noise (0..1).
    pub(crate) noise_loss: f64,
    /// The controller's backoffs for congestion.
    pub(crate) congestion_events: u64,
    /// Data sender: new DATA packets sent, and packets resent.
    pub(crate) packets_sent: u64,
    pub(crate) retransmitted: u64,
    /// Data receiver: packets accepted, and found missing.
    pub(crate) packets_received: u64,
    pub(crate) packets_lost: u64,
    /// Data receiver: the rate the sender last announced (burst size and
    /// interval of its latest NULL-ACK, RFC 998 §4).
    pub(crate) peer_rate_bps: Option<f64>,
    /// Datagrams the kernel dropped at this end's socket.
    pub(crate) socket_drops: u64,
    /// Seconds the loop's thread waited for a CPU (runnable, not running)
    /// over the whole run, when the kernel says; and that run's wall time.
    pub(crate) cpu_wait_s: Option<f64>,
    pub(crate) wall_s: f64,
    /// Seconds a CPU quota (its cgroup's, or an ancestor's) held the whole
    /// process back over the run, when the kernel says.
    pub(crate) quota_throttled_s: Option<f64>,
    /// The window: buffers outstanding × bytes per buffer.
    pub(crate) buffers: u16,
    pub(crate) buffer_size: u32,
    /// Data bytes per DATA packet.
    pub(crate) packet_size: u16,
    /// Data sender: seconds from the last new DATA packet to the end (the
    /// last buffers' OKs), which the loop's data phase leaves out.
    pub(crate) tail_s: f64,
}

/// A cause must hold the sender back this share of the data phase to be
/// named (the rest of the time something else did).
const DOMINANT: f64 = 0.3;
/// A sender's loop awake this share of the data phase, while the pacer
/// allowed more than went out, was the limit (its CPU).
const BUSY: f64 = 0.5;
/// A receiver's loop awake this share of the time was saturated.
const SATURATED: f64 = 0.85;
/// The controller's reason must hold this share of the time to be named.
const MOSTLY: f64 = 0.5;
/// A loop that waited for a core this share of its run, and longer than it
/// ran, was denied the CPU (a quota, or other processes): its CPU is named
/// before anything it seemed to wait for, since the reader and writer
/// threads of the process share the same starvation and their waits are
/// its consequences.
const DENIED: f64 = 0.5;
/// A loop that waited for a core at least this many times as long as it
/// ran got less than a quarter of a core whenever it wanted one: a CPU
/// quota, or a machine with several runnable threads per core. Measured on
/// loopback: 9-60 under a 2 % quota; 1.4-3 on this project's 2-core
/// machine running four builds; under 1.1 unloaded.
const STARVED_RATIO: f64 = 3.0;
/// ... and that starvation must cost a tenth of the run to be named.
const STARVED_SHARE: f64 = 0.1;
/// A CPU quota that held the process back this share of the run names the
/// CPU before anything: it starves every thread (loop, reader, writer).
const THROTTLED: f64 = 0.3;
/// A fixed rate not reached with at least this share of its packets resent
/// met a path slower than the rate (RFC 998 has no other way to slow down
/// than losing what does not fit).
const LOSSY: f64 = 0.01;
/// With little loss, the largest of the sender's own holds is named when it
/// holds it back at least this share of the data phase.
const NAMED: f64 = 0.1;

impl LimitInputs {
    /// Gathers the inputs of an active end's finished transfer.
    pub(crate) fn gather(
        report: &TransferReport,
        conn: &netblt_proto::Connection,
        times: LoopTimes,
        socket_drops: Option<u64>,
        cpu_wait_s: Option<f64>,
        wall_s: f64,
        quota_throttled_s: Option<f64>,
    ) -> LimitInputs {
        let st = conn.stats();
        let rate = conn.rate_state();
        let sender = conn.role() == netblt_proto::Role::DataSender;
        let rtt = rate
            .and_then(|r| r.min_rtt)
            .or(st.srtt)
            .map(|d| d.as_secs_f64() * 1e3);
        let cap_bps = f64::from(report.burst_size) * f64::from(report.packet_size) * 8.0 * 1e3
            / f64::from(report.burst_interval_ms.max(1));
        LimitInputs {
            sender,
            fixed: sender && rate.is_none(),
            cap_bps,
            live_cap_bps: conn
                .rate_limits()
                .and_then(|l| l.max_bps)
                .map(|m| m as f64)
                .filter(|&m| m < cap_bps),
            // A receiver has no steady throughput (RFC 1030's SPEED is the
            // sender's): its real throughput, then.
            achieved_bps: report
                .steady_throughput_bps
                .or(report.real_throughput_bps)
                .unwrap_or(0.0),
            // `Connection::current_rate` gives a receiver the negotiated
            // values, not the sender's NULL-ACK updates: not known here.
            peer_rate_bps: None,
            times,
            bottleneck_bps: rate.and_then(|r| r.bottleneck_bps),
            rtt_ms: rtt,
            noise_loss: rate.map_or(0.0, |r| r.noise_loss),
            congestion_events: rate.map_or(0, |r| r.congestion_events),
            packets_sent: st.data_packets_sent,
            retransmitted: st.data_packets_retransmitted,
            packets_received: st.data_packets_received,
            packets_lost: st.data_packets_lost,
            socket_drops: socket_drops.unwrap_or(0),
            cpu_wait_s,
            wall_s,
            quota_throttled_s,
            buffers: report.buffers,
            buffer_size: report.buffer_size,
            packet_size: report.packet_size,
            tail_s: match (st.last_new_data_at, st.completed_at) {
                (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
                _ => 0.0,
            },
        }
    }
}

/// The end of a transfer took this share of the run, after every byte
/// had left, for the receiver's pace to be named from it.
const TAIL: f64 = 0.5;
/// ... and at least this many round trips (one is the last OK's own).
const TAIL_RTTS: f64 = 4.0;

/// Fewer DATA packets than this: too short a transfer to name a limit.
const MIN_PACKETS: u64 = 32;

/// Names what limited the transfer, or `None` when nothing was measured
/// (no data phase, or fewer than [`MIN_PACKETS`] packets). Pure: see the
/// module docs and decision D1.
pub(crate) fn diagnose(i: &LimitInputs) -> Option<Diagnosis> {
    let t = &i.times;
    let active = t.active();
    if active <= 0.0 {
        return None;
    }
    // A transfer of a few packets is over before any limit shows: its
    // time is the handshake's and the threads' start (a 3-byte file read
    // "limited by the sender's disk/reader: ... 99 % of the time").
    let packets = if i.sender {
        i.packets_sent
    } else {
        i.packets_received
    };
    if packets < MIN_PACKETS {
        return None;
    }
    let share = |x: f64| x / active;
    let mut d = Verdict::default();
    d.fig("achieved_bps", i.achieved_bps);
    d.fig("data_phase_ms", active * 1e3);
    // The share of the run the loop waited for a core (the scheduler's
    // count, `crate::cpu_wait`).
    let waited = i
        .cpu_wait_s
        .filter(|_| i.wall_s > 0.0)
        .map(|w| (w / i.wall_s).min(1.0));
    if let Some(w) = waited {
        d.fig("cpu_wait_share", w);
    }
    let wait_s = i.cpu_wait_s.unwrap_or(0.0);
    let share_waited = waited.unwrap_or(0.0);
    // Denied a core most of the run, and longer than it ran (tier 1); or
    // starved for one whenever it wanted one (tier 2). Decision Y1.
    let denied = share_waited >= DENIED && wait_s >= t.cpu_s;
    let starved = share_waited >= STARVED_SHARE && wait_s >= STARVED_RATIO * t.cpu_s;
    let throttled = i
        .quota_throttled_s
        .filter(|_| i.wall_s > 0.0)
        .map(|q| (q / i.wall_s).min(1.0));
    if let Some(q) = throttled {
        d.fig("quota_throttled_share", q);
    }
    let quota_held = throttled.is_some_and(|q| q >= THROTTLED);
    let denied = denied || quota_held;
    if !i.sender {
        return Some(receiver_side(i, share, (denied, starved), waited, d));
    }
    if let Some(v) = slow_tail(i, &mut d) {
        return Some(v);
    }
    let mean_pacing = t.paced_bits / active;
    // The pacer allowed more than went out.
    let pacer_binding = i.achieved_bps >= 0.9 * mean_pacing;
    let reasons: f64 = t.reasons.iter().map(|(_, s)| s).sum();
    let reason = |name: &str| {
        t.reasons
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, s)| s / reasons.max(1e-12))
    };
    let (startup, cap, rx) = (reason("startup"), reason("cap"), reason("receiver-limited"));
    // The rate the user allowed was reached: a CPU that kept up with it
    // did not limit.
    let reached = if i.fixed {
        pacer_binding
    } else {
        cap >= MOSTLY
    };
    if !reached && denied {
        return Some(sender_cpu(i, mean_pacing, waited, d));
    }
    // What the sender waited for, when it was not busy and not pacing.
    let waits = [
        (Limit::SenderReader, t.starved),
        (Limit::ReceiverDisk, t.no_go),
        (Limit::ReceiverWindow, t.window),
    ];
    let (which, longest) =
        waits
            .into_iter()
            .fold((Limit::Path, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    if share(longest) >= DOMINANT {
        // A quota starves the reader thread with the loop: the data came
        // late because the process had no CPU, even when what went out
        // went at the rate (the steady rate leaves the waits out).
        if which == Limit::SenderReader && quota_held {
            return Some(sender_cpu(i, mean_pacing, waited, d));
        }
        // Nothing in flight while the controller never left start-up, over
        // a data phase of many round trips (or long without a round trip
        // measured): its start-up held the data, not a receiver slow to
        // grant buffers (F15).
        if which == Limit::ReceiverDisk && !i.fixed && startup >= MOSTLY {
            if let Some(rounds) = stuck_rounds(i) {
                return Some(stuck_startup(i, share(longest), startup, rounds, d));
            }
        }
        return Some(hold(i, which, share(longest), mean_pacing, waited, d));
    }
    // The loop was awake (working, or runnable and waiting for a core) or
    // woke late for the pacer more than it slept on schedule: the sender's
    // CPU could not keep the pacing rate.
    let cpu = share(t.busy + t.lateness);
    if !pacer_binding && cpu >= BUSY {
        return Some(sender_cpu(i, mean_pacing, waited, d));
    }
    // Starved for a core (tier 2) names the CPU instead of the path, when
    // the path showed no sign of limiting: nothing resent, no congestion
    // backoff. (An adaptive controller settles on what a starved loop
    // delivers, and then looks like a path; across a real path a loop on a
    // loaded machine can wait as long, and the path's loss says it is the
    // path.)
    let resent = ratio(i.retransmitted, i.packets_sent);
    let clean_path = resent < LOSSY && i.congestion_events == 0;
    if i.fixed {
        d.fig("cap_bps", i.cap_bps);
        if pacer_binding {
            return Some(
                d.say(
                    Limit::RateCap,
                    format!(
                        "limited by the fixed policy at its rate: {} paced (in whole-packet bursts), {} achieved",
                        rate(i.cap_bps),
                        rate(i.achieved_bps)
                    ),
                )
                .naming(Some(LimitSetting::FixedRate)),
            );
        }
        let loss = resent;
        if loss >= LOSSY {
            d.fig("loss", loss);
            return Some(path(i, Some(loss), d));
        }
        if starved {
            return Some(sender_cpu(i, mean_pacing, waited, d));
        }
        // The rate was not reached and almost nothing was lost: the path
        // did not hold it back; the largest of the sender's own holds did.
        let holds = [
            (Limit::SenderCpu, cpu),
            (Limit::SenderReader, share(t.starved)),
            (Limit::ReceiverDisk, share(t.no_go)),
            (Limit::ReceiverWindow, share(t.window)),
        ];
        let (which, most) =
            holds
                .into_iter()
                .fold((Limit::Path, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        d.fig("loss", loss);
        if most >= NAMED {
            return Some(hold(i, which, most, mean_pacing, waited, d));
        }
        return Some(path(i, Some(loss), d));
    }
    if startup >= MOSTLY {
        d.fig("startup_share", startup);
        return Some(d.say(
            Limit::Startup,
            format!(
                "limited by start-up: the transfer ended before the rate controller reached the path's rate ({} of the time in startup{})",
                pct(startup),
                i.rtt_ms.map_or(String::new(), |r| format!(", {} RTT", ms(r)))
            ),
        ));
    }
    if cap >= MOSTLY {
        d.fig("cap_share", cap);
        let (what, setting) = match i.live_cap_bps {
            Some(live) => {
                d.fig("cap_bps", live);
                (
                    format!("the rate limit set while it ran (the last: {})", rate(live)),
                    LimitSetting::LiveRate,
                )
            }
            None => {
                d.fig("cap_bps", i.cap_bps);
                (
                    format!("the rate cap ({})", rate(i.cap_bps)),
                    LimitSetting::Rate,
                )
            }
        };
        return Some(
            d.say(
                Limit::RateCap,
                format!(
                    "limited by {what}: the rate controller was held there {} of the time",
                    pct(cap)
                ),
            )
            .naming(Some(setting)),
        );
    }
    if rx >= MOSTLY {
        return Some(window(i, rx, mean_pacing, d));
    }
    if starved && clean_path {
        return Some(sender_cpu(i, mean_pacing, waited, d));
    }
    Some(path(i, None, d))
}

/// Round trips of data phase beyond which a start-up that never ended is
/// stuck, not short: FAST's start-up takes about ten.
const STUCK_ROUNDS: f64 = 100.0;

/// A data phase long enough for a start-up that never ended to be stuck,
/// not short: more than [`STUCK_ROUNDS`] round trips, `Some((round trip
/// in ms, round trips))`; or, with no round trip measured at all, longer
/// than [`STUCK_UNMEASURED_S`], `Some(None)`.
fn stuck_rounds(i: &LimitInputs) -> Option<Option<(f64, f64)>> {
    match i.rtt_ms.filter(|&r| r > 0.0) {
        Some(rtt) => {
            let rounds = i.times.active() * 1e3 / rtt;
            (rounds >= STUCK_ROUNDS).then_some(Some((rtt, rounds)))
        }
        None => (i.times.active() >= STUCK_UNMEASURED_S).then_some(None),
    }
}

/// Seconds of data phase without one round trip measured after which a
/// start-up is stuck.
const STUCK_UNMEASURED_S: f64 = 0.2;

/// The rate controller stayed in start-up over a data phase of more than
/// [`STUCK_ROUNDS`] round trips while the sender, with nothing in flight,
/// held its data: the engine's meter reads that hold as a missing GO
/// (`Wait::NoGo`), but the receiver granted buffers all along. Seen on
/// loopback with buffers of 1, 2, 4 or 8 packets of 1400 bytes (28.8 Mb/s;
/// 636 Mb/s with the same buffers and `--policy fixed`), which the "why"
/// line had blamed on the receiver's disk (F14, F15). That cause is fixed
/// (R69: FEEDBACK echoes of buffers already OK'd gave the controller no
/// sample); the verdict stays for any other that holds start-up so long.
fn stuck_startup(
    i: &LimitInputs,
    held: f64,
    startup: f64,
    rounds: Option<(f64, f64)>,
    mut d: Verdict,
) -> Diagnosis {
    d.fig("startup_share", startup);
    d.fig("waiting_share", held);
    let over = match rounds {
        Some((rtt, n)) => {
            d.fig("rtt_ms", rtt);
            format!("{n:.0} round trips of {}", ms(rtt))
        }
        None => format!("{:.2} s without a round trip measured", i.times.active()),
    };
    let estimate = match i.bottleneck_bps {
        Some(b) => {
            d.fig("bottleneck_bps", b);
            format!(", its path estimate {}", rate(b))
        }
        None => String::new(),
    };
    // Buffers of a few packets: the case seen, and what avoids it.
    let few = few_packets(i);
    let packets = few.map_or(String::new(), |p| {
        format!(
            "; with buffers of {p} packet{}, larger buffers avoid it",
            if p == 1.0 { "" } else { "s" }
        )
    });
    d.say(
        Limit::Startup,
        format!(
            "limited by start-up: the rate controller never left it ({} of the time, {over}{estimate}) and held the data back with nothing in flight {} of the time, not the receiver{packets}",
            pct(startup),
            pct(held)
        ),
    )
    .naming(few.map(|_| LimitSetting::BufferSize))
}

/// Packets per buffer, when a buffer is at most eight packets (the
/// smallest pacing group, R69): small enough that per-buffer exchanges,
/// not the data, set the pace.
fn few_packets(i: &LimitInputs) -> Option<f64> {
    (i.packet_size > 0)
        .then(|| (f64::from(i.buffer_size) / f64::from(i.packet_size)).ceil())
        .filter(|&p| p <= 8.0)
}

/// Names one of the sender's holds, with the share of the data phase it
/// held the sender back.
fn hold(
    i: &LimitInputs,
    which: Limit,
    s: f64,
    mean_pacing: f64,
    waited: Option<f64>,
    mut d: Verdict,
) -> Diagnosis {
    match which {
        Limit::SenderCpu => sender_cpu(i, mean_pacing, waited, d),
        Limit::SenderReader => {
            d.fig("waiting_share", s);
            d.say(
                Limit::SenderReader,
                format!(
                    "limited by the sender's data source (its disk or application): the engine waited for data {} of the time",
                    pct(s)
                ),
            )
        }
        Limit::ReceiverDisk => {
            d.fig("waiting_share", s);
            // Buffers of a few packets each wait for their own GO, so the
            // receiver's turnaround per buffer, not its disk, sets the pace
            // (R69: 1400-byte buffers on loopback waited 38 % of the time
            // for a GO from `recv --sink`, which has no disk).
            if let Some(p) = few_packets(i) {
                return d
                    .say(
                        Limit::ReceiverDisk,
                        format!(
                            "limited by the receiver's buffer grants: with buffers of {p} packet{}, each waits for its own GO, and none was granted {} of the time while data was ready; larger buffers avoid it",
                            if p == 1.0 { "" } else { "s" },
                            pct(s)
                        ),
                    )
                    .naming(Some(LimitSetting::BufferSize));
            }
            d.say(
                Limit::ReceiverDisk,
                format!(
                    "limited by the receiver's disk/application: it granted no buffer (GO) {} of the time while data was ready",
                    pct(s)
                ),
            )
        }
        _ => {
            d.fig("waiting_share", s);
            window(i, s, mean_pacing, d)
        }
    }
}

/// The whole transfer fitted the window, left quickly, and the receiver
/// then took most of the run to take it (its disk, or a slow
/// `DataHandler`), with little to resend: the data phase saw none of that
/// and blamed the sender's CPU (F17: 30 MB to a handler taking 10 MB/s,
/// 3 s in all, "limited by the sender's CPU" from a 0.2 s data phase).
fn slow_tail(i: &LimitInputs, d: &mut Verdict) -> Option<Diagnosis> {
    let rtt_s = i.rtt_ms.unwrap_or(0.0) / 1e3;
    let resent = ratio(i.retransmitted, i.packets_sent);
    if i.wall_s <= 0.0
        || i.tail_s < TAIL * i.wall_s
        || i.tail_s < TAIL_RTTS * rtt_s
        || resent >= LOSSY
    {
        return None;
    }
    d.fig("tail_s", i.tail_s);
    d.fig("tail_share", i.tail_s / i.wall_s);
    d.fig("loss", resent);
    Some(std::mem::take(d).say(
        Limit::ReceiverDisk,
        format!(
            "limited by the receiver's disk/application: every byte had left {} s into the run (the window, {} buffers of {}, held it all), and the receiver took {:.2} s more to take them ({} of the run)",
            secs(i.wall_s - i.tail_s),
            i.buffers,
            bytes(f64::from(i.buffer_size)),
            i.tail_s,
            pct(i.tail_s / i.wall_s)
        ),
    ))
}

fn secs(x: f64) -> String {
    format!("{:.2}", x.max(0.0))
}

/// The sender's CPU: its loop was awake, late, or waited a core, and sent
/// less than its pacer allowed.
fn sender_cpu(i: &LimitInputs, mean_pacing: f64, waited: Option<f64>, mut d: Verdict) -> Diagnosis {
    let t = &i.times;
    let active = t.active().max(1e-9);
    let (busy, late) = (t.busy / active, t.lateness / active);
    d.fig("busy_share", busy);
    d.fig("loop_cpu_cores", t.cpu_s / active);
    d.fig("pacing_bps", mean_pacing);
    d.fig("lateness_ms", t.lateness * 1e3);
    let mut msg = format!(
        "limited by the sender's CPU: its event loop was awake {} of the time",
        pct(busy)
    );
    if late >= 0.05 {
        msg += &format!(" and woke late for the pacer {} of it", pct(late));
    }
    if let Some(q) = i.quota_throttled_s.map(|q| q / i.wall_s.max(1e-9)) {
        if q >= 0.05 {
            msg += &format!(
                ", its CPU quota (cgroup) held it back {} of the run",
                pct(q.min(1.0))
            );
        }
    }
    match waited {
        Some(w) if w >= 0.05 => {
            msg += &format!(
                ", waited for a core {} of the run (a CPU quota or other processes) and ran {:.2} of one",
                pct(w),
                t.cpu_s / i.wall_s.max(1e-9)
            );
        }
        _ => msg += &format!(" ({:.2} of a core running)", t.cpu_s / active),
    }
    msg += &format!(
        "; it sent {} of the {} paced",
        rate(i.achieved_bps),
        rate(mean_pacing)
    );
    d.say(Limit::SenderCpu, msg)
}

/// The data receiver's view: its writer, its socket, its CPU, else the
/// sender's pace over the path.
fn receiver_side(
    i: &LimitInputs,
    share: impl Fn(f64) -> f64,
    (denied, starved): (bool, bool),
    waited: Option<f64>,
    mut d: Verdict,
) -> Diagnosis {
    let t = &i.times;
    let behind = share(t.writer_behind);
    if denied || (behind < DOMINANT && starved) {
        let w = waited.unwrap_or(0.0);
        // Datagrams that overflowed the socket meanwhile are a symptom.
        d.fig("socket_drops", i.socket_drops as f64);
        d.fig("loop_cpu_cores", t.cpu_s / i.wall_s.max(1e-9));
        let quota = match i.quota_throttled_s.map(|q| q / i.wall_s.max(1e-9)) {
            Some(q) if q >= 0.05 => format!(
                "its CPU quota (cgroup) held it back {} of the run, ",
                pct(q.min(1.0))
            ),
            _ => String::new(),
        };
        let dropped = if i.socket_drops > 0 {
            format!(
                "; its socket dropped {} datagrams meanwhile",
                i.socket_drops
            )
        } else {
            String::new()
        };
        return d.say(
            Limit::ReceiverCpu,
            format!(
                "limited by the receiver's CPU: {quota}its event loop waited for a core {} of the run (a CPU quota or other processes) and ran {:.2} of one{dropped}",
                pct(w),
                t.cpu_s / i.wall_s.max(1e-9)
            ),
        );
    }
    if behind >= DOMINANT {
        d.fig("waiting_share", behind);
        return d.say(
            Limit::ReceiverDisk,
            format!(
                "limited by the receiver's disk: its writer was behind {} of the time",
                pct(behind)
            ),
        );
    }
    let drops = ratio(i.socket_drops, i.packets_received + i.socket_drops);
    if i.socket_drops >= 10 && drops >= 0.005 {
        d.fig("socket_drops", i.socket_drops as f64);
        d.fig("drop_share", drops);
        return d.say(
            Limit::ReceiverDrops,
            format!(
                "limited by receiver socket drops: the kernel dropped {} datagrams ({} of the data) with its receive buffer full",
                i.socket_drops,
                pct(drops)
            ),
        );
    }
    let busy = share(t.busy);
    if busy >= SATURATED {
        d.fig("busy_share", busy);
        d.fig("loop_cpu_cores", t.cpu_s / t.active().max(1e-9));
        return d.say(
            Limit::ReceiverCpu,
            format!(
                "limited by the receiver's CPU: its event loop was busy {} of the time",
                pct(busy)
            ),
        );
    }
    let loss = ratio(i.packets_lost, i.packets_received);
    d.fig("loss", loss);
    if let Some(r) = i.rtt_ms {
        d.fig("rtt_ms", r);
    }
    let announced = match i.peer_rate_bps {
        Some(p) => {
            d.fig("sender_rate_bps", p);
            format!(" (it last announced {})", rate(p))
        }
        None => String::new(),
    };
    d.say(
        Limit::Path,
        format!(
            "limited by the sender's pace over the path: {} received{announced}, {} RTT, {}",
            rate(i.achieved_bps),
            i.rtt_ms.map_or("-".into(), ms),
            loss_phrase(loss, "")
        ),
    )
}

/// The receiver's window: what it allows per round trip.
fn window(i: &LimitInputs, s: f64, mean_pacing: f64, mut d: Verdict) -> Diagnosis {
    let w = f64::from(i.buffers) * f64::from(i.buffer_size);
    d.fig("window_bytes", w);
    let per_rtt = i.rtt_ms.filter(|&r| r > 0.0).map(|r| w * 8.0 / (r / 1e3));
    let bw = if i.fixed {
        i.cap_bps
    } else {
        i.bottleneck_bps.unwrap_or(0.0).max(mean_pacing)
    };
    let mut msg = format!(
        "limited by the receiver's window: {} buffer{} x {} = {}",
        i.buffers,
        if i.buffers == 1 { "" } else { "s" },
        bytes(f64::from(i.buffer_size)),
        bytes(w)
    );
    if let Some(r) = i.rtt_ms {
        d.fig("rtt_ms", r);
        let bdp = bw * r / 1e3 / 8.0;
        if bdp > w {
            d.fig("bdp_bytes", bdp);
            msg += &format!(
                " < bandwidth x RTT ({} x {} = {})",
                rate(bw),
                ms(r),
                bytes(bdp)
            );
        }
    }
    if let Some(m) = per_rtt {
        d.fig("window_bps", m);
        msg += &format!(", allowing at most {}", rate(m));
    }
    msg += &format!(
        "; the sender waited for its OKs {} of the time: more or larger buffers avoid it",
        pct(s)
    );
    d.say(Limit::ReceiverWindow, msg)
        .naming(Some(LimitSetting::Buffers))
}

/// The path as the controller measured it (or, at a fixed rate, the loss).
fn path(i: &LimitInputs, fixed_loss: Option<f64>, mut d: Verdict) -> Diagnosis {
    let mut parts = Vec::new();
    if let Some(b) = i.bottleneck_bps {
        d.fig("bottleneck_bps", b);
        parts.push(format!("~{} estimated bottleneck", rate(b)));
    }
    if let Some(r) = i.rtt_ms {
        d.fig("rtt_ms", r);
        parts.push(format!("{} RTT", ms(r)));
    }
    match fixed_loss {
        Some(l) => parts.push(format!(
            "{} of the packets resent, {} of the fixed {} achieved",
            pct1(l),
            rate(i.achieved_bps),
            rate(i.cap_bps)
        )),
        None => {
            d.fig("noise_loss", i.noise_loss);
            // The controller's noise estimate is not the path's loss: it
            // leaves out rounds with a queue, and a start-up's overflow.
            // "1.4 % loss treated as noise" on a path with none (its 2,619
            // queue drops), "3.2 %" on a 5 % path (F16 walkthrough): when
            // the packets resent differ from it, say both.
            let resent = ratio(i.retransmitted, i.packets_sent);
            if resent >= 0.0005 && resent > 1.2 * i.noise_loss + 0.001 {
                d.fig("resent", resent);
                parts.push(format!(
                    "{} of the packets resent, {}",
                    pct1(resent),
                    if i.noise_loss < 0.0005 {
                        "none of it taken for noise".to_string()
                    } else {
                        format!("{} taken for noise", pct1(i.noise_loss))
                    }
                ));
            } else {
                parts.push(loss_phrase(i.noise_loss, " treated as noise"));
            }
            if i.congestion_events > 0 {
                d.fig("congestion_events", i.congestion_events as f64);
                parts.push(format!(
                    "{} congestion backoff{}",
                    i.congestion_events,
                    if i.congestion_events == 1 { "" } else { "s" }
                ));
            }
        }
    }
    d.say(
        Limit::Path,
        format!("limited by the path: {}", parts.join(", ")),
    )
}

#[derive(Default)]
struct Verdict {
    figures: BTreeMap<&'static str, f64>,
}

impl Verdict {
    fn fig(&mut self, name: &'static str, v: f64) {
        if v.is_finite() {
            self.figures.insert(name, v);
        }
    }
    fn say(self, limit: Limit, message: String) -> Diagnosis {
        Diagnosis {
            limit,
            message,
            figures: self.figures,
            setting: None,
        }
    }
}

impl Diagnosis {
    /// The same, naming `setting` (its words are in the message).
    fn naming(self, setting: Option<LimitSetting>) -> Diagnosis {
        Diagnosis { setting, ..self }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// "1.0 % loss" (and `what`), or "no loss" where that would read "0.0 %",
/// which sounds as if some had been seen.
fn loss_phrase(x: f64, what: &str) -> String {
    if x < 0.0005 {
        "no loss".into()
    } else {
        format!("{} loss{what}", pct1(x))
    }
}

fn pct1(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn ms(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0} ms")
    } else if x >= 1.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.2} ms")
    }
}

/// Bits per second in the tool's units (decimal, 3 significant digits).
fn rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gb/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mb/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kb/s")
    } else {
        (bps, "b/s")
    };
    sig3(v, unit)
}

/// Bytes in binary units (the tool's --buffer-size spelling).
fn bytes(b: f64) -> String {
    let (v, unit) = if b >= (1u64 << 30) as f64 {
        (b / (1u64 << 30) as f64, "GiB")
    } else if b >= (1u64 << 20) as f64 {
        (b / (1u64 << 20) as f64, "MiB")
    } else if b >= 1024.0 {
        (b / 1024.0, "KiB")
    } else {
        (b, "B")
    };
    sig3(v, unit)
}

fn sig3(v: f64, unit: &str) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender's inputs: 2 s of data phase, 100 Mb/s cap, 40 ms RTT.
    fn sender() -> LimitInputs {
        LimitInputs {
            sender: true,
            cap_bps: 100e6,
            achieved_bps: 50e6,
            rtt_ms: Some(40.0),
            packets_sent: 10_000,
            buffers: 8,
            buffer_size: 1 << 20,
            ..LimitInputs::default()
        }
    }

    fn times(f: impl FnOnce(&mut LoopTimes)) -> LoopTimes {
        let mut t = LoopTimes::default();
        f(&mut t);
        t
    }

    fn limit(i: &LimitInputs) -> Diagnosis {
        diagnose(i).expect("a diagnosis")
    }

    /// F17: the whole transfer in the window, sent in 0.2 s of a busy
    /// loop, then 2.8 s of waiting for a slow handler's OKs: the receiver,
    /// not the sender's CPU. With the tail spent resending, or as short as
    /// a few round trips, the data phase decides as before.
    #[test]
    fn a_receiver_slow_after_the_last_byte_left_is_named() {
        let slow = LimitInputs {
            times: times(|t| t.busy = 0.2),
            achieved_bps: 1.4e9,
            packets_sent: 21_429,
            buffers: 128,
            wall_s: 3.0,
            tail_s: 2.8,
            ..sender()
        };
        let d = limit(&slow);
        assert_eq!(d.limit, Limit::ReceiverDisk, "{d}");
        assert!(d.message.contains("took 2.80 s more"), "{d}");
        let lossy = LimitInputs {
            retransmitted: 2_000,
            ..slow.clone()
        };
        assert_ne!(limit(&lossy).limit, Limit::ReceiverDisk);
        let short = LimitInputs {
            wall_s: 0.4,
            tail_s: 0.2,
            rtt_ms: Some(100.0),
            ..slow.clone()
        };
        assert_ne!(limit(&short).limit, Limit::ReceiverDisk);
    }

    #[test]
    fn nothing_measured_names_nothing() {
        assert_eq!(diagnose(&sender()), None);
        // Nor a transfer of a few packets, whatever its loop waited for.
        let few = |sending: bool| LimitInputs {
            packets_sent: if sending { 3 } else { 0 },
            packets_received: if sending { 0 } else { 3 },
            times: times(|t| {
                t.starved = 0.9;
                t.writer_behind = 0.9;
                t.paced = 0.1;
            }),
            ..if sending { sender() } else { receiver() }
        };
        assert_eq!(diagnose(&few(true)), None);
        assert_eq!(diagnose(&few(false)), None);
        let many = LimitInputs {
            packets_sent: 32,
            ..few(true)
        };
        assert!(diagnose(&many).is_some());
    }

    #[test]
    fn fixed_policy_at_its_rate_is_the_rate_cap() {
        let i = LimitInputs {
            fixed: true,
            cap_bps: 20e6,
            achieved_bps: 19.6e6,
            times: times(|t| {
                t.paced = 1.8;
                t.busy = 0.2;
                t.paced_bits = 20e6 * 2.0;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::RateCap);
        assert!(
            d.message
                .contains("the fixed policy at its rate: 20 Mb/s paced"),
            "{d}"
        );
        assert_eq!(d.setting, Some(LimitSetting::FixedRate));
        assert_eq!(d.figures["cap_bps"], 20e6);
    }

    #[test]
    fn an_adaptive_sender_held_at_its_cap_is_the_rate_cap() {
        let i = LimitInputs {
            cap_bps: 50e6,
            times: times(|t| {
                t.paced = 1.8;
                t.busy = 0.2;
                t.reasons = vec![("startup", 0.2), ("cap", 1.8)];
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::RateCap);
        assert!(
            d.message.starts_with("limited by the rate cap (50 Mb/s)"),
            "{d}"
        );
        assert_eq!(d.setting, Some(LimitSetting::Rate));
        // The same under a cap set while it ran (R27): that cap is named.
        let live = LimitInputs {
            live_cap_bps: Some(8e6),
            ..i
        };
        let d = limit(&live);
        assert_eq!(d.limit, Limit::RateCap);
        assert!(
            d.message
                .contains("the rate limit set while it ran (the last: 8 Mb/s)"),
            "{d}"
        );
        assert_eq!(d.setting, Some(LimitSetting::LiveRate));
        assert_eq!(d.figures["cap_bps"], 8e6);
    }

    #[test]
    fn a_steady_controller_names_the_path() {
        let i = LimitInputs {
            bottleneck_bps: Some(96e6),
            rtt_ms: Some(100.0),
            noise_loss: 0.01,
            times: times(|t| {
                t.paced = 9.0;
                t.busy = 1.0;
                t.reasons = vec![("startup", 1.0), ("steady", 6.0), ("noise", 3.0)];
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::Path);
        assert_eq!(
            d.message,
            "limited by the path: ~96 Mb/s estimated bottleneck, 100 ms RTT, 1.0 % loss treated as noise"
        );
        let i = LimitInputs {
            congestion_events: 3,
            ..i
        };
        assert!(limit(&i).message.ends_with(", 3 congestion backoffs"));
        // More resent than the noise estimate explains: both are said.
        let overflowed = LimitInputs {
            noise_loss: 0.0,
            retransmitted: 160,
            packets_sent: 10_000,
            congestion_events: 0,
            ..i.clone()
        };
        assert!(
            limit(&overflowed)
                .message
                .ends_with(", 1.6 % of the packets resent, none of it taken for noise"),
            "{}",
            limit(&overflowed).message
        );
        let lossy = LimitInputs {
            noise_loss: 0.036,
            retransmitted: 500,
            packets_sent: 10_000,
            congestion_events: 0,
            ..i.clone()
        };
        assert!(
            limit(&lossy)
                .message
                .ends_with(", 5.0 % of the packets resent, 3.6 % taken for noise"),
            "{}",
            limit(&lossy).message
        );
        let i = LimitInputs {
            noise_loss: 0.0,
            congestion_events: 0,
            ..i
        };
        assert!(
            limit(&i).message.ends_with("100 ms RTT, no loss"),
            "{}",
            limit(&i)
        );
    }

    #[test]
    fn a_fixed_rate_with_heavy_loss_names_the_path() {
        let i = LimitInputs {
            fixed: true,
            cap_bps: 100e6,
            achieved_bps: 40e6,
            retransmitted: 2_000,
            times: times(|t| {
                t.paced = 2.0;
                t.paced_bits = 100e6 * 2.0;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::Path);
        assert!(d.message.contains("20.0 % of the packets resent"), "{d}");
    }

    #[test]
    fn waiting_for_oks_with_every_buffer_out_is_the_window() {
        let i = LimitInputs {
            fixed: true,
            buffers: 1,
            buffer_size: 64 << 10,
            achieved_bps: 12e6,
            times: times(|t| {
                t.window = 1.7;
                t.paced = 0.2;
                t.busy = 0.1;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverWindow);
        assert!(
            d.message.starts_with(
                "limited by the receiver's window: 1 buffer x 64 KiB = 64 KiB < bandwidth x RTT (100 Mb/s x 40 ms = 488 KiB), allowing at most 13.1 Mb/s"
            ),
            "{d}"
        );
        assert!(
            d.message.ends_with(": more or larger buffers avoid it"),
            "{d}"
        );
        assert_eq!(d.setting, Some(LimitSetting::Buffers));
        assert_eq!(d.figures["window_bytes"], 65_536.0);
    }

    #[test]
    fn a_receiver_limited_controller_is_the_window() {
        let i = LimitInputs {
            times: times(|t| {
                t.paced = 2.0;
                t.reasons = vec![("receiver-limited", 1.5), ("steady", 0.5)];
            }),
            ..sender()
        };
        assert_eq!(limit(&i).limit, Limit::ReceiverWindow);
    }

    #[test]
    fn no_go_with_data_ready_is_the_receivers_disk() {
        let i = LimitInputs {
            times: times(|t| {
                t.no_go = 1.5;
                t.paced = 0.4;
                t.busy = 0.1;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverDisk);
        assert!(d.message.contains("granted no buffer (GO) 75 %"), "{d}");
    }

    #[test]
    fn no_go_while_start_up_never_ended_is_start_up_not_the_receiver() {
        // Loopback, buffers of one 1400-byte packet: the controller stayed
        // in start-up for 1.4 s (17,000 round trips) and the sender held
        // its data with nothing in flight, which reads as no GO (F15).
        let stuck = |rtt_ms: f64| LimitInputs {
            rtt_ms: Some(rtt_ms),
            buffer_size: 1400,
            packet_size: 1400,
            bottleneck_bps: Some(27_700.0),
            times: times(|t| {
                t.no_go = 1.33;
                t.paced = 0.05;
                t.busy = 0.02;
                t.reasons = vec![("startup", 1.4)];
            }),
            ..sender()
        };
        let d = limit(&stuck(0.084));
        assert_eq!(d.limit, Limit::Startup, "{d}");
        assert!(
            d.message.contains("never left it (100 % of the time"),
            "{d}"
        );
        assert!(d.message.contains("not the receiver"), "{d}");
        assert!(
            d.message
                .contains("buffers of 1 packet, larger buffers avoid it"),
            "{d}"
        );
        assert_eq!(d.setting, Some(LimitSetting::BufferSize));
        assert_eq!(d.figures["waiting_share"], 0.95);
        // A start-up of a few round trips is short, not stuck: the missing
        // GOs are the receiver's, as before.
        assert_eq!(limit(&stuck(40.0)).limit, Limit::ReceiverDisk);
        // No round trip measured in 1.4 s is stuck too (seen on a loaded
        // machine).
        let d = limit(&LimitInputs {
            rtt_ms: None,
            ..stuck(1.0)
        });
        assert_eq!(d.limit, Limit::Startup, "{d}");
        assert!(
            d.message.contains("1.40 s without a round trip measured"),
            "{d}"
        );
    }

    #[test]
    fn an_engine_waiting_for_the_application_is_the_senders_reader() {
        let i = LimitInputs {
            times: times(|t| {
                t.starved = 1.6;
                t.paced = 0.3;
                t.busy = 0.1;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::SenderReader);
        assert!(d.message.contains("80 % of the time"), "{d}");
    }

    #[test]
    fn a_saturated_loop_below_its_pacing_rate_is_the_senders_cpu() {
        let i = LimitInputs {
            fixed: true,
            cap_bps: 10e9,
            achieved_bps: 3e9,
            times: times(|t| {
                t.busy = 1.9;
                t.paced = 0.1;
                t.cpu_s = 1.9;
                t.paced_bits = 10e9 * 2.0;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::SenderCpu);
        assert!(d.message.contains("awake 95 %"), "{d}");
        // Busy but sending at the pacing rate: the rate, not the CPU.
        let i = LimitInputs {
            achieved_bps: 9.9e9,
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::RateCap);
    }

    #[test]
    fn a_short_transfer_in_startup_is_start_up() {
        let i = LimitInputs {
            times: times(|t| {
                t.paced = 0.5;
                t.reasons = vec![("startup", 0.4), ("steady", 0.1)];
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::Startup);
        assert!(
            d.message.contains("80 % of the time in startup, 40 ms RTT"),
            "{d}"
        );
    }

    #[test]
    fn a_loop_denied_a_core_most_of_the_run_is_the_cpu_not_what_it_waited_for() {
        // A process under a CPU quota: its reader thread starves too, so
        // the loop also waits for data; but it waited for a core 60 % of
        // the run, far longer than it ran.
        let i = LimitInputs {
            wall_s: 2.0,
            cpu_wait_s: Some(1.2),
            times: times(|t| {
                t.starved = 0.8;
                t.paced = 1.0;
                t.busy = 0.2;
                t.cpu_s = 0.02;
                t.paced_bits = 200e6 * 2.0;
                t.reasons = vec![("steady", 2.0)];
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::SenderCpu, "{d}");
        assert!(
            d.message.contains("waited for a core 60 % of the run"),
            "{d}"
        );
        // Running longer than it waited (the whole run counts), it was not
        // denied a core: the reader.
        let i = LimitInputs {
            times: LoopTimes {
                cpu_s: 1.5,
                ..i.times.clone()
            },
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::SenderReader);
    }

    #[test]
    fn a_process_held_back_by_its_cpu_quota_is_the_cpu_not_its_slow_reader() {
        // The quota starved the reader thread; the loop itself waited for a
        // core only 20 % of the run.
        let i = LimitInputs {
            fixed: true,
            cap_bps: 200e6,
            achieved_bps: 100e6,
            wall_s: 1.0,
            cpu_wait_s: Some(0.2),
            quota_throttled_s: Some(0.5),
            times: times(|t| {
                t.starved = 0.45;
                t.paced = 0.5;
                t.busy = 0.05;
                t.cpu_s = 0.01;
                t.paced_bits = 200e6;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::SenderCpu, "{d}");
        assert!(
            d.message
                .contains("its CPU quota (cgroup) held it back 50 % of the run"),
            "{d}"
        );
        // No quota: the reader, as measured.
        let i = LimitInputs {
            quota_throttled_s: Some(0.0),
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::SenderReader);
    }

    #[test]
    fn a_quota_that_starved_the_reader_is_the_cpu_even_at_the_fixed_rate() {
        // CI's run: 8 MB at --rate 1G under a 2 % quota. The reader was
        // throttled for most of the run, then the data went out at the
        // rate, so the steady rate reached the cap.
        let i = LimitInputs {
            fixed: true,
            cap_bps: 992e6,
            achieved_bps: 999.6e6,
            wall_s: 0.366,
            cpu_wait_s: Some(0.1),
            quota_throttled_s: Some(0.295),
            times: times(|t| {
                t.starved = 0.25;
                t.paced = 0.063;
                t.busy = 0.001;
                t.cpu_s = 0.002;
                t.paced_bits = 311.5e6;
                t.reasons = vec![("fixed", 0.314)];
            }),
            ..sender()
        };
        assert_eq!(limit(&i).limit, Limit::SenderCpu);
        // Without the quota, the engine waited for its reader.
        let i = LimitInputs {
            quota_throttled_s: Some(0.0),
            cpu_wait_s: Some(0.0),
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::SenderReader);
    }

    #[test]
    fn a_loop_starved_for_a_core_is_the_cpu_even_when_its_controller_settled() {
        // An adaptive controller settles on what a starved loop delivers:
        // its pacer looks binding. The loop waited 25x as long as it ran.
        let i = LimitInputs {
            achieved_bps: 30e6,
            bottleneck_bps: Some(31e6),
            wall_s: 1.0,
            cpu_wait_s: Some(0.25),
            times: times(|t| {
                t.paced = 0.9;
                t.busy = 0.1;
                t.cpu_s = 0.01;
                t.paced_bits = 31e6;
                t.reasons = vec![("steady", 1.0)];
            }),
            ..sender()
        };
        assert_eq!(limit(&i).limit, Limit::SenderCpu);
        // A loaded machine, a loop that waited twice as long as it ran: not
        // starved, the path as measured.
        let loaded = LimitInputs {
            cpu_wait_s: Some(0.02),
            ..i.clone()
        };
        assert_eq!(limit(&loaded).limit, Limit::Path);
        // Starved, but the path lost packets and made the controller back
        // off: the path is named (a loaded machine across a real path).
        let lossy = LimitInputs {
            congestion_events: 3,
            retransmitted: 150,
            ..i.clone()
        };
        assert_eq!(limit(&lossy).limit, Limit::Path);
        // Held at its --rate, the CPU kept up with what was allowed.
        let capped = LimitInputs {
            times: LoopTimes {
                reasons: vec![("cap", 1.0)],
                ..i.times.clone()
            },
            ..i
        };
        assert_eq!(limit(&capped).limit, Limit::RateCap);
    }

    #[test]
    fn a_fixed_rate_far_short_with_little_loss_names_the_senders_largest_hold() {
        // Issue 10: this was "path". 40 of 100 Mb/s, 0.1 % resent, nothing
        // dominant: the window held it back most (25 %).
        let i = LimitInputs {
            fixed: true,
            cap_bps: 100e6,
            achieved_bps: 40e6,
            retransmitted: 10,
            times: times(|t| {
                t.paced = 1.2;
                t.window = 0.5;
                t.busy = 0.3;
                t.paced_bits = 100e6 * 2.0;
            }),
            ..sender()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverWindow, "{d}");
        assert!(d.message.contains("waited for its OKs 25 %"), "{d}");
        // Late for the pacer most of all: the CPU.
        let late = LimitInputs {
            times: LoopTimes {
                lateness: 0.6,
                ..i.times.clone()
            },
            ..i.clone()
        };
        assert_eq!(limit(&late).limit, Limit::SenderCpu);
        // Nothing held it back measurably: the path, with its loss.
        let none = LimitInputs {
            times: times(|t| {
                t.paced = 1.9;
                t.busy = 0.1;
                t.paced_bits = 100e6 * 2.0;
            }),
            ..i
        };
        let d = limit(&none);
        assert_eq!(d.limit, Limit::Path, "{d}");
        assert!(d.message.contains("0.1 % of the packets resent"), "{d}");
    }

    fn receiver() -> LimitInputs {
        LimitInputs {
            sender: false,
            achieved_bps: 80e6,
            packets_received: 10_000,
            rtt_ms: Some(20.0),
            ..LimitInputs::default()
        }
    }

    #[test]
    fn a_receiver_whose_writer_is_behind_names_its_disk() {
        let i = LimitInputs {
            times: times(|t| {
                t.writer_behind = 1.2;
                t.receiving = 0.8;
            }),
            ..receiver()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverDisk);
        assert!(d.message.contains("writer was behind 60 %"), "{d}");
    }

    #[test]
    fn a_receiver_with_socket_drops_names_them() {
        let i = LimitInputs {
            socket_drops: 500,
            times: times(|t| t.receiving = 2.0),
            ..receiver()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverDrops);
        assert!(d.message.contains("dropped 500 datagrams (5 %"), "{d}");
        // A handful is noise.
        let i = LimitInputs {
            socket_drops: 3,
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::Path);
    }

    #[test]
    fn a_saturated_receiver_names_its_cpu() {
        let i = LimitInputs {
            times: times(|t| {
                t.busy = 1.9;
                t.receiving = 0.1;
            }),
            ..receiver()
        };
        assert_eq!(limit(&i).limit, Limit::ReceiverCpu);
    }

    #[test]
    fn a_receiver_starved_for_a_core_names_its_cpu_and_its_drops_as_a_symptom() {
        let i = LimitInputs {
            socket_drops: 500,
            wall_s: 1.0,
            cpu_wait_s: Some(0.3),
            times: times(|t| {
                t.receiving = 1.9;
                t.busy = 0.1;
                t.cpu_s = 0.01;
            }),
            ..receiver()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::ReceiverCpu, "{d}");
        assert!(
            d.message.contains("waited for a core 30 % of the run")
                && d.message
                    .ends_with("its socket dropped 500 datagrams meanwhile"),
            "{d}"
        );
        // A loop that got the core when it wanted one: the buffer.
        let i = LimitInputs {
            cpu_wait_s: Some(0.005),
            ..i
        };
        assert_eq!(limit(&i).limit, Limit::ReceiverDrops);
    }

    #[test]
    fn an_idle_receiver_names_the_senders_pace_and_the_path() {
        let i = LimitInputs {
            packets_lost: 100,
            times: times(|t| t.receiving = 2.0),
            ..receiver()
        };
        let d = limit(&i);
        assert_eq!(d.limit, Limit::Path);
        assert!(
            d.message
                .contains("80 Mb/s received, 20 ms RTT, 1.0 % loss"),
            "{d}"
        );
        let i = LimitInputs {
            peer_rate_bps: Some(90e6),
            ..i
        };
        assert!(
            limit(&i)
                .message
                .contains("received (it last announced 90 Mb/s), 20 ms"),
            "{}",
            limit(&i)
        );
    }

    #[test]
    fn limits_serialize_as_short_names() {
        // The setting named is in the JSON as its code (F26), after the
        // fields F25 had; left out when there is none.
        let d = Verdict::default()
            .say(Limit::ReceiverWindow, "x".into())
            .naming(Some(LimitSetting::Buffers));
        let j = serde_json::to_string(&d).unwrap();
        assert_eq!(
            j,
            r#"{"limit":"receiver-window","message":"x","figures":{},"setting":"buffers"}"#
        );
        let d = Verdict::default().say(Limit::Path, "y".into()).naming(None);
        let j = serde_json::to_string(&d).unwrap();
        assert_eq!(j, r#"{"limit":"path","message":"y","figures":{}}"#);
    }
}
