//! The engine configuration for real networks.
//!
//! Defaults suit a modern LAN: 1400-byte data segments (a 1424-byte NETBLT
//! DATA packet, inside a 1500-byte MTU with IPv4 or IPv6 and UDP), 1 MiB
//! buffers, 8 outstanding, and a rate of [`DEFAULT_RATE`] (10 Gb/s: 893
//! packets per 1 ms burst), i.e. "as fast as the hosts go" on anything but a
//! fast LAN. NETBLT has no congestion control: on a slower or shared path,
//! set a rate.

use netblt_proto::{Config, Duration, PacingClock, Policy, RateConfig, TransferParams};

/// Rate used when none is given, in bits per second of data.
pub const DEFAULT_RATE: u64 = 10_000_000_000;
/// Packets released together within a burst: one GSO train.
pub(crate) const PACING_QUANTUM: u16 = 32;

/// Largest data segment that fits one UDP datagram with its NETBLT header.
pub const MAX_UDP_PACKET_SIZE: u64 = 65_507 - 24 - 3;

/// Engine configuration for a real network: the FEEDBACK extension offered
/// and accepted, rate control as `rate` says (an adaptive policy by default).
pub(crate) fn config(
    params: TransferParams,
    death_timer_s: u16,
    v6: bool,
    rate: RateConfig,
) -> Config {
    Config {
        params,
        rate_feedback: true,
        rate,
        death_timeout: Duration::from_secs(u64::from(death_timer_s.max(1))),
        pacing_quantum: Some(PACING_QUANTUM),
        pacing_clock: PacingClock::Virtual,
        confirm_last_buffer: true,
        max_datagram: if v6 { 1452 } else { 1472 },
        ..Config::default()
    }
}

/// A passive end's rate control when it sends (READ mode, `get`): adaptive.
pub(crate) fn passive_rate() -> RateConfig {
    RateConfig {
        policy: Policy::Fair,
        ..RateConfig::default()
    }
}

/// The passive end's limits: the least restrictive values it accepts (an
/// offer is only ever restricted down to these).
pub(crate) fn passive_limits() -> TransferParams {
    TransferParams {
        packet_size: MAX_UDP_PACKET_SIZE as u16,
        buffer_size: 16 << 20,
        burst_size: u16::MAX,
        burst_interval_ms: 1,
        max_buffers: 64,
        // The checksum may only be switched on by the passive end; leave the
        // active end's choice.
        checksum_data: false,
    }
}
