//! A shared 10 Mb/s CSMA/CD Ethernet segment: the medium both hosts of a
//! LAN profile transmit on, with the other stations' traffic on it too.
//!
//! Like [`super::HostModel`], this is a description the simulator interprets
//! (`netblt-sim`'s `ethernet` module); the emulator runs real hosts on real
//! links and ignores it. Every figure of the medium access rules comes from
//! the Ethernet specification (Ethernet v2 "Blue Book", 1982, and IEEE
//! 802.3-1985, which agree on them); what the seeds leave open (how much
//! traffic the other hosts offered) is a parameter, marked as an assumption
//! in the profile that sets it.

use core::time::Duration;
use serde::{Deserialize, Serialize};

/// IEEE 802.3 §4.4.2.1 (10 Mb/s): slot time 512 bit times = 51.2 us, the
/// unit of the backoff delay.
pub const SLOT_TIME: Duration = Duration::from_nanos(51_200);
/// IEEE 802.3 §4.4.2.1: interFrameGap 96 bit times = 9.6 us.
pub const INTER_FRAME_GAP: Duration = Duration::from_nanos(9_600);
/// IEEE 802.3 §4.4.2.1: jamSize 32 bits.
pub const JAM_BITS: u64 = 32;
/// IEEE 802.3 §4.4.2.1: attemptLimit 16 ("excessive collisions" after that).
pub const ATTEMPT_LIMIT: u32 = 16;
/// IEEE 802.3 §4.4.2.1: backoffLimit 10 (the backoff range stops doubling).
pub const BACKOFF_LIMIT: u32 = 10;
/// Preamble (7 bytes) and start-of-frame delimiter (1): sent before every
/// frame, so they occupy the medium though they are not part of the frame.
pub const PREAMBLE_BYTES: usize = 8;
/// One 10BASE5 coax segment is at most 500 m (IEEE 802.3 §8.6.1) and the
/// coax's minimum propagation velocity is 0.77 c (§8.4.1.3): 500 m /
/// (0.77 * 299,792,458 m/s) = 2.17 us end to end. We take that as the
/// window in which two stations can start without hearing each other.
pub const SEGMENT_PROPAGATION: Duration = Duration::from_nanos(2_166);
/// Smallest frame (64 bytes with the FCS, IEEE 802.3 §4.4.2.1 minFrameSize).
pub const MIN_FRAME: usize = 64;
/// Largest frame (1518 bytes with header and FCS, maxUntaggedFrameSize).
pub const MAX_FRAME: usize = 1518;

/// Traffic the other stations of the segment offer: frames arrive as a
/// Poisson process, each from a different station with its own backoff (on a
/// segment of ~150 hosts, rarely two frames from one station are queued).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrossTraffic {
    /// Offered load as a fraction of the segment's bit rate (frames and
    /// their preambles), e.g. `0.1` for 10 %.
    pub load: f64,
    /// Frame sizes in bytes (header and FCS included), drawn with equal
    /// probability for each new frame.
    pub frame_sizes: Vec<usize>,
    /// Broadcast frames per second (Poisson) that every interface on the
    /// segment takes in and its host must read and discard (address
    /// resolution, routing updates). RFC 1030 §6 gives no figure for
    /// Subnet 26 ("somewhat noisy"), so every profile has zero and `netblt
    /// report` sweeps it. Their share of the medium is taken as part of
    /// `load`.
    pub broadcasts_per_s: f64,
}

impl Default for CrossTraffic {
    fn default() -> Self {
        CrossTraffic {
            load: 0.0,
            frame_sizes: vec![MIN_FRAME, MAX_FRAME],
            broadcasts_per_s: 0.0,
        }
    }
}

impl CrossTraffic {
    /// Mean frame size, bytes (0 if there are none).
    pub fn mean_frame(&self) -> f64 {
        if self.frame_sizes.is_empty() {
            return 0.0;
        }
        self.frame_sizes.iter().sum::<usize>() as f64 / self.frame_sizes.len() as f64
    }
}

/// A shared CSMA/CD segment (1-persistent carrier sense, collision
/// detection with a jam, truncated binary exponential backoff).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EthernetSegment {
    /// Bit rate of the medium.
    pub rate_bps: u64,
    /// Backoff unit.
    pub slot_time: Duration,
    /// Quiet time a station leaves after the medium goes idle.
    pub inter_frame_gap: Duration,
    /// Bits of jam sent after detecting a collision.
    pub jam_bits: u64,
    /// Transmission attempts before a frame is discarded.
    pub attempt_limit: u32,
    /// Collisions after which the backoff range stops doubling.
    pub backoff_limit: u32,
    /// Bytes sent before each frame (preamble and delimiter).
    pub preamble_bytes: usize,
    /// End-to-end propagation: two stations starting less than this apart
    /// do not hear each other and collide.
    pub propagation: Duration,
    /// The other stations' traffic.
    pub cross: CrossTraffic,
}

impl Default for EthernetSegment {
    /// A 10 Mb/s segment with the specification's constants and no other
    /// traffic.
    fn default() -> Self {
        EthernetSegment {
            rate_bps: 10_000_000,
            slot_time: SLOT_TIME,
            inter_frame_gap: INTER_FRAME_GAP,
            jam_bits: JAM_BITS,
            attempt_limit: ATTEMPT_LIMIT,
            backoff_limit: BACKOFF_LIMIT,
            preamble_bytes: PREAMBLE_BYTES,
            propagation: SEGMENT_PROPAGATION,
            cross: CrossTraffic::default(),
        }
    }
}

impl EthernetSegment {
    /// Checks the values the simulator cannot honour.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.rate_bps == 0 {
            return Err("segment rate_bps must be positive");
        }
        if self.attempt_limit == 0 {
            return Err("segment attempt_limit must be at least 1");
        }
        if self.backoff_limit > 20 {
            return Err("segment backoff_limit must be at most 20");
        }
        let c = &self.cross;
        if !(c.load.is_finite() && (0.0..1.0).contains(&c.load)) {
            return Err("cross-traffic load must be in [0, 1)");
        }
        if !(c.broadcasts_per_s.is_finite() && (0.0..=1e5).contains(&c.broadcasts_per_s)) {
            return Err("broadcasts_per_s must be in [0, 100000]");
        }
        if c.load > 0.0 && (c.frame_sizes.is_empty() || c.frame_sizes.contains(&0)) {
            return Err("cross traffic needs non-zero frame sizes");
        }
        Ok(())
    }
}
