//! Rate control: how fast the data sender paces DATA packets.
//!
//! RFC 998 fixes the rate at OPEN (burst size and burst interval) and lets
//! the receiver restrict it in each OK. RFC 1030 §8 names what is missing:
//! "A series of algorithms need to be developed to allow dynamic selection
//! and control of NETBLT's transmission parameters (burst size, burst
//! interval, and number of outstanding buffers) ... NETBLT processes will use
//! end-to-end information in order to make transmission rate decisions in
//! the face of noisy channels and network congestion."
//!
//! A [`RateController`] is that algorithm, behind a small interface: the
//! sender feeds it one [`RateSample`] per FEEDBACK packet (see
//! `netblt_wire::FeedbackRepr`) and asks it for a pacing rate and a cap on
//! the bytes in flight. Two implementations:
//!
//! * [`Fixed`](fixed::Fixed): RFC 998's behaviour, the negotiated burst
//!   values and nothing else (`--policy fixed`, and the simulator's
//!   reproductions of the 1987 measurements);
//! * [`Model`](model::Model): a model-based controller in the style of BBR
//!   (it estimates the bottleneck rate and the base round trip and paces at
//!   their product), which tells random loss (noise: no queue grew) from
//!   congestion (loss while the queue grew), and in the `background` policy
//!   yields whenever a queue builds, like LEDBAT. Decision R1 in
//!   docs/decisions.md gives the design and its sources.
//!
//! Rates are in bits per second of DATA payload.

mod filter;
pub mod fixed;
pub mod model;
pub mod recent;

use core::fmt;

use crate::time::{Duration, Instant};

/// Which rate controller the data sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// RFC 998: the negotiated burst size and interval, never changed by the
    /// sender itself (the receiver may still restrict them in OKs).
    #[default]
    Fixed,
    /// Find the path's rate, keep it on noisy links, share fairly.
    Fair,
    /// Like `Fair` when alone, but yield to other traffic as soon as a queue
    /// builds (LEDBAT-style scavenger).
    Background,
}

impl Policy {
    /// The policy's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fixed => "fixed",
            Policy::Fair => "fair",
            Policy::Background => "background",
        }
    }
}

impl core::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fixed" => Ok(Policy::Fixed),
            "fair" => Ok(Policy::Fair),
            "background" => Ok(Policy::Background),
            _ => Err(format!(
                "unknown policy '{s}' (expected fixed, fair or background)"
            )),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rate-control settings of a data sender (part of [`Config`](crate::Config)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    /// The controller. Default [`Policy::Fixed`] (plain RFC 998).
    pub policy: Policy,
    /// Never pace faster than this (bits/s of payload). With `Fixed`, the
    /// negotiated burst values rule instead. Default: no cap but the
    /// negotiated burst values.
    pub max_bps: Option<u64>,
    /// Never pace slower than this, whatever the path says. Default 0.
    pub min_bps: u64,
    /// The first rate before anything is measured. Default 10 Mb/s, about
    /// what TCP's initial window of ten packets gives over a 10 ms path.
    pub initial_bps: u64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            policy: Policy::Fixed,
            max_bps: None,
            min_bps: 0,
            initial_bps: 10_000_000,
        }
    }
}

/// What one FEEDBACK told the data sender, ready for a controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// When the FEEDBACK arrived.
    pub now: Instant,
    /// Round trip of the echoed packet, the receiver's hold time taken out;
    /// `None` when the echoed packet's send time is unknown.
    pub rtt: Option<Duration>,
    /// When the echoed packet was sent (rounds are counted with it).
    pub echoed_sent_at: Option<Instant>,
    /// Delivery rate (bits/s of payload that arrived), BBR-style: bytes
    /// delivered since the echoed packet was sent, over the longer of the
    /// send and acknowledgment intervals.
    pub delivery_bps: Option<f64>,
    /// As `delivery_bps`, with the packets found lost over the same interval
    /// counted as if delivered: what went through the path, noise losses
    /// included.
    pub transmit_bps: Option<f64>,
    /// The same two rates over only the last few FEEDBACKs (about an eighth
    /// of a round trip): they follow a rate that changes within a round,
    /// which the one-round-trip sample averages away (see [`recent`]).
    pub recent: Option<recent::RecentSample>,
    /// The sample was taken while the sender had nothing to send for part of
    /// the interval, so it may understate the path.
    pub app_limited: bool,
    /// Data packets that arrived since the previous FEEDBACK.
    pub arrived: u64,
    /// Data packets found missing since the previous FEEDBACK.
    pub lost: u64,
    /// Data packets reported missing earlier that arrived since the
    /// previous FEEDBACK (overtaken by later ones, not lost).
    pub found: u64,
    /// Payload bytes in flight (sent, neither reported arrived nor lost).
    pub inflight_bytes: u64,
    /// Payload bytes per packet.
    pub packet_bytes: u32,
    /// Packets the pacer releases back to back (its group): they reach the
    /// bottleneck together and queue there briefly whatever the rate.
    pub group_packets: u32,
}

/// Why the rate is what it is, for progress bars and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateReason {
    /// The fixed, negotiated rate.
    Fixed,
    /// Ramping up to find the path's rate.
    Startup,
    /// Holding the measured path rate.
    Steady,
    /// Probing for capacity that may have freed up.
    Probing,
    /// Draining a queue this flow built.
    Draining,
    /// Backed off: loss came with a growing queue.
    Congestion,
    /// Loss with no queue growth: random noise, rate kept.
    Noise,
    /// Yielding to other traffic (background policy).
    Yielding,
    /// Held at the maximum rate allowed (`--rate`).
    Cap,
    /// Held at the minimum rate allowed (`--min-rate`).
    Floor,
    /// The receiver's buffers or window limit the rate, not the path.
    ReceiverLimited,
}

impl RateReason {
    /// A short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            RateReason::Fixed => "fixed",
            RateReason::Startup => "startup",
            RateReason::Steady => "steady",
            RateReason::Probing => "probing",
            RateReason::Draining => "draining",
            RateReason::Congestion => "congestion",
            RateReason::Noise => "noise",
            RateReason::Yielding => "yielding",
            RateReason::Cap => "cap",
            RateReason::Floor => "floor",
            RateReason::ReceiverLimited => "receiver-limited",
        }
    }
}

impl fmt::Display for RateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A controller's view of the path, for reports.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RateState {
    /// The pacing rate in force (bits/s of payload).
    pub rate_bps: f64,
    /// Estimated bottleneck rate, once measured.
    pub bottleneck_bps: Option<f64>,
    /// Smallest round trip seen recently (the path without queues).
    pub min_rtt: Option<Duration>,
    /// Latest round-trip sample.
    pub last_rtt: Option<Duration>,
    /// Loss rate the controller treats as noise (0..1).
    pub noise_loss: f64,
    /// Why the rate is what it is.
    pub reason: RateReason,
    /// Rate reductions for congestion so far.
    pub congestion_events: u64,
    /// Payload bytes the data sender counts in flight: sent, and not yet
    /// known to have arrived or been lost (what the in-flight cap limits).
    pub inflight_bytes: u64,
}

/// A data sender's rate controller.
pub trait RateController: fmt::Debug + Send {
    /// One FEEDBACK's worth of measurements.
    fn on_sample(&mut self, sample: &RateSample);
    /// The rate to pace at now, bits/s of payload.
    fn pacing_bps(&self) -> f64;
    /// At most this many payload bytes in flight (`None`: no cap).
    fn inflight_cap(&self) -> Option<u64>;
    /// The sender went past the in-flight cap because the reports that would
    /// have made room stopped coming (FEEDBACKs lost; the sender's guard
    /// expired). Default: nothing to do.
    fn cap_gave_way(&mut self) {}
    /// The in-flight cap is the controller's first flight (R56's train),
    /// which holds the sender on purpose: what is sent after the hold is
    /// sampled as application-limited (R60). Default: no such flight.
    fn first_flight(&self) -> bool {
        false
    }
    /// How the cap grows while a FEEDBACK is overdue: `Some((after, bps))`
    /// allows `bps` bits more per second in flight from `after` past the
    /// latest FEEDBACK on (what the missing report would have shown
    /// delivered). Default: it does not grow.
    fn overdue_growth(&self) -> Option<(Duration, f64)> {
        None
    }
    /// What the controller believes, for reports.
    fn state(&self) -> RateState;
    /// New limits while the transfer runs (the user's knob, R27): pace at
    /// least `min_bps` and at most `max_bps`, both already held to the
    /// negotiated rate by the caller. Default: ignored.
    fn set_limits(&mut self, min_bps: f64, max_bps: f64) {
        let _ = (min_bps, max_bps);
    }
}

/// Rate limits the application sets while a transfer runs
/// ([`Connection::set_rate_limits`](crate::Connection::set_rate_limits)):
/// ascp's and rclone's "change the rate during a transfer". RFC 998 lets the
/// sender make the negotiated parameters "more restrictive" at any time, so
/// the limits move freely below the rate negotiated at OPEN and are held to
/// it above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimits {
    /// Never pace slower than this (bits/s of payload; adaptive policies
    /// only). 0: no floor.
    pub min_bps: u64,
    /// Never pace faster than this (bits/s of payload). `None`: the
    /// negotiated rate.
    pub max_bps: Option<u64>,
}

/// Builds the controller a policy names. `fixed_bps` is the negotiated
/// burst rate; `seed` varies the probing schedule between connections (the
/// connection UID), so that flows started together do not probe in step.
pub fn controller(config: &RateConfig, fixed_bps: f64, seed: u32) -> Box<dyn RateController> {
    match config.policy {
        Policy::Fixed => Box::new(fixed::Fixed::new(fixed_bps)),
        Policy::Fair => Box::new(model::Model::new(config, fixed_bps, false, seed)),
        Policy::Background => Box::new(model::Model::new(config, fixed_bps, true, seed)),
    }
}
