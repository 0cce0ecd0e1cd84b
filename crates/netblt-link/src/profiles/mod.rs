//! Named paths built from the physical parameters the NETBLT papers give.

use core::time::Duration;
use serde::{Deserialize, Serialize};

use crate::config::LinkConfig;

/// Cost model of one host: its CPU and its network interface.
///
/// Interpreted by the simulator only; the emulator runs real hosts and ignores
/// it. The default is a modern host: free CPU, an infinitely fast interface
/// with unlimited buffers, no input loss.
///
/// Per-byte costs apply to the NETBLT datagram the node produces or consumes
/// (header included), not to the wire overhead. An interface buffer holds a
/// received packet until the CPU has copied it out, and a packet to send from
/// when the CPU starts copying it in until its last bit is out; the copy is
/// taken as half of the per-byte cost (see `netblt-sim`'s `host.rs`).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostModel {
    /// CPU time per packet sent, independent of size.
    pub send_fixed: Duration,
    /// CPU time per byte sent, in nanoseconds.
    pub send_per_byte_ns: f64,
    /// CPU time per packet received, independent of size.
    pub recv_fixed: Duration,
    /// CPU time per byte received, in nanoseconds.
    pub recv_per_byte_ns: f64,
    /// Rate at which the interface serializes onto the LAN; `None` = infinite.
    pub nic_rate_bps: Option<u64>,
    /// Hardware packet buffers on the interface; `None` = unlimited.
    pub nic_buffers: Option<usize>,
    /// The interface cannot receive while it transmits.
    pub half_duplex: bool,
    /// Fraction of arriving packets the host's input path loses.
    pub nic_loss: f64,
    /// Time the interface stays deaf after each transmission ends and after
    /// each received packet has been copied out of it, before input is
    /// enabled again. RFC 1030 §7 on the 3COM 3C500: it "would not have time
    /// to re-enable input before another packet would arrive", its "long
    /// interface re-enable time". No seed gives a figure, so every profile
    /// has zero; `netblt report` sweeps it to show what appendix III needs.
    pub nic_reenable: Duration,
}

/// Transfer parameters the paper used on this path (or, where it gives none,
/// ones derived from the path; see [`Profile::sources`]).
///
/// The integer types mirror `netblt_proto::TransferParams`, so converting is
/// lossless; this crate does not depend on the protocol engine.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransferDefaults {
    /// Data bytes per DATA packet (RFC 1030's "data packet size", PSZ), not
    /// counting the 24-byte DATA header.
    pub packet_size: u16,
    /// Bytes per buffer (BFSZ).
    pub buffer_size: u32,
    /// DATA packets per burst (BS).
    pub burst_size: u16,
    /// Milliseconds from the start of one burst to the start of the next (BI).
    pub burst_interval_ms: u16,
    /// Outstanding buffers (NBUFS).
    pub buffers: u16,
}

/// A named path: both directions, both hosts and the paper's settings.
///
/// Serializes (for reports), but is not read back: profiles are code, so
/// every number sits next to the comment that justifies it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// Name, as accepted by [`profile`].
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Data direction, host A to host B.
    pub forward: LinkConfig,
    /// Control direction, host B to host A.
    pub reverse: LinkConfig,
    /// The sending host.
    pub host_a: HostModel,
    /// The receiving host.
    pub host_b: HostModel,
    /// Bytes added to each NETBLT packet on the wire (IP, UDP, link framing).
    pub wire_overhead: usize,
    /// The shared CSMA/CD segment both hosts transmit on, if the path is one
    /// Ethernet (simulator only); `None`: each host's interface has the
    /// medium to itself.
    pub segment: Option<EthernetSegment>,
    /// The transfer parameters the paper used here.
    pub defaults: TransferDefaults,
    /// Where each number comes from.
    pub sources: &'static str,
}

mod historic;
mod modern;
mod segment;

pub use historic::SUBNET_26_LOAD;
pub use segment::{CrossTraffic, EthernetSegment};
/// The Ethernet specification's constants the segment model uses.
pub mod ethernet {
    pub use super::segment::{
        ATTEMPT_LIMIT, BACKOFF_LIMIT, INTER_FRAME_GAP, JAM_BITS, MAX_FRAME, MIN_FRAME,
        PREAMBLE_BYTES, SEGMENT_PROPAGATION, SLOT_TIME,
    };
}

/// NETBLT DATA header length (RFC 998 §8); the simulator charges per-byte CPU
/// costs on the NETBLT datagram, header included.
pub const DATA_HEADER_LEN: usize = 24;
/// IPv4 header without options.
pub const IP_HEADER: usize = 20;
/// UDP header.
pub const UDP_HEADER: usize = 8;
/// Ethernet II header (14) plus frame check sequence (4). The preamble and
/// inter-frame gap (20 byte times) are left out: RFC 1030 appendix I counts a
/// "maximum-sized (1500 bytes) Ethernet packet" as 1500 bytes of channel.
pub const ETHERNET_FRAMING: usize = 18;

const NAMES: &[&str] = &[
    "proteon-ring",
    "ethernet-3c500",
    "wideband",
    "t1-satellite",
    "xunet",
    "lan-1g",
    "continental",
    "geo-satellite",
    "wireless",
];

/// Names of all profiles, in a stable order: the historical paths of the
/// NETBLT papers first, then modern paths for the emulator.
pub fn names() -> &'static [&'static str] {
    NAMES
}

/// All profiles, in the order of [`names`].
pub fn all() -> Vec<Profile> {
    names().iter().filter_map(|n| profile(n)).collect()
}

/// The profile called `name`, if there is one.
pub fn profile(name: &str) -> Option<Profile> {
    Some(match name {
        "proteon-ring" => historic::proteon_ring(),
        "ethernet-3c500" => historic::ethernet_3c500(),
        "wideband" => historic::wideband(),
        "t1-satellite" => historic::t1_satellite(),
        "xunet" => historic::xunet(),
        "lan-1g" => modern::lan_1g(),
        "continental" => modern::continental(),
        "geo-satellite" => modern::geo_satellite(),
        "wireless" => modern::wireless(),
        _ => return None,
    })
}

/// CPU cost per byte (ns) such that a packet of `datagram_len` bytes costs
/// `total` with a fixed part of `fixed`: `(total - fixed) / datagram_len`.
pub(crate) fn per_byte_ns(total: Duration, fixed: Duration, datagram_len: usize) -> f64 {
    total.saturating_sub(fixed).as_nanos() as f64 / datagram_len.max(1) as f64
}

/// Transfer parameters derived from a path when no paper gives them.
///
/// * burst interval: the shortest whole number of milliseconds (at least 1)
///   in which the bottleneck carries 5 packets; burst size: as many whole
///   packets as the bottleneck carries in that interval. The paced rate thus
///   never exceeds the bottleneck.
/// * buffer: a quarter of the bandwidth-delay product, but at least 4 bursts
///   and 10 packets (RFC 1030's tests used 10 packets per buffer) and at most
///   1024 packets.
/// * buffers: enough to cover a round trip, plus two (one being filled, one
///   being acknowledged): `ceil(rtt / buffer_time) + 2`.
pub fn derived_defaults(
    packet_size: u16,
    wire_overhead: usize,
    rate_bps: u64,
    rtt: Duration,
) -> TransferDefaults {
    let wire_bits = ((usize::from(packet_size) + DATA_HEADER_LEN + wire_overhead) * 8) as f64;
    let rate = rate_bps.max(1) as f64;
    let interval_ms = ((5.0 * wire_bits * 1000.0 / rate).ceil()).max(1.0);
    let burst = (rate * interval_ms / (1000.0 * wire_bits)).floor().max(1.0);
    let bdp_packets = rate * rtt.as_secs_f64() / wire_bits;
    let per_buffer = (bdp_packets / 4.0)
        .max(4.0 * burst)
        .clamp(10.0, 1024.0)
        .floor();
    let buffer_time_ms = per_buffer / burst * interval_ms;
    let buffers = (rtt.as_secs_f64() * 1000.0 / buffer_time_ms).ceil() + 2.0;
    TransferDefaults {
        packet_size,
        buffer_size: (per_buffer as u32) * u32::from(packet_size),
        burst_size: burst.min(f64::from(u16::MAX)) as u16,
        burst_interval_ms: interval_ms.min(f64::from(u16::MAX)) as u16,
        buffers: buffers.min(f64::from(u16::MAX)) as u16,
    }
}
