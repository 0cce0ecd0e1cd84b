//! netblt-link: one model of a network path, shared by the simulator and the
//! emulator.
//!
//! A [`Link`] is one direction of a path. It contains no clock, no sockets
//! and no global random number generator: the caller says "these `len`
//! bytes reached the transmitter at `now`" ([`Link::offer`]) and gets back
//! the packet's whole [`Fate`]: dropped (and why), or delivered at one or two
//! instants, possibly with one bit flipped. `now` is a [`std::time::Duration`]
//! since the start of the caller's run. The discrete-event simulator
//! (`netblt-sim`) turns deliveries into events on its virtual clock; the
//! user-space emulator (`netblt-emu`) sleeps until them on the wall clock.
//! Because both run this same code, a result seen in the simulator can be
//! checked on real sockets through the same impairments.
//!
//! # What a packet goes through
//!
//! In this order (see [`LinkConfig`] for each knob):
//!
//! 1. **MTU**: larger packets are dropped ([`DropReason::Mtu`]).
//! 2. **Queue**: a drop-tail limit on bytes accepted but not yet fully
//!    transmitted ([`DropReason::Queue`]), and optionally CoDel (RFC 8289,
//!    [`Aqm`], [`DropReason::Aqm`]), decided when the packet is offered from
//!    the sojourn time it will have (see the `codel` module).
//! 3. **Transmitter**: a constant bit rate, a slotted channel of fixed-size
//!    frames (the Wideband satellite network of RFC 1030), or a mahimahi
//!    delivery-opportunity trace. Departure times come from the
//!    transmitter's own "busy until" clock (the rate may step over time,
//!    [`RateStep`]), never from when the caller
//!    happened to call, so a late caller cannot turn into rate error; the
//!    rate clock keeps the fractional nanosecond, so a million back-to-back
//!    packets end exactly where `N * len * 8 / rate` says.
//! 4. **Loss** (Bernoulli or Gilbert-Elliott) and **bit errors** (a packet of
//!    `L` bytes is hit with probability `1 - (1 - ber)^(8L)` and discarded,
//!    as a link CRC would). Lost packets still used the transmitter.
//! 5. **Corruption** (one random bit flipped, for end-to-end checksum tests),
//!    **duplication**, **reordering** (held back, so later packets overtake),
//!    **delay spikes** (whole multiples of a quantum: Wideband's 600 ms),
//!    then **propagation delay** and **jitter**. Jitter keeps FIFO order, as
//!    Linux netem does when a rate is set.
//!
//! Every random choice comes from one `ChaCha8Rng` seeded by the caller, and
//! a knob set to zero draws nothing, so the same config and seed always give
//! the same fates.
//!
//! # Profiles
//!
//! [`profiles`] holds named paths built only from physical figures the
//! NETBLT-era documents give (RFC 1030's Proteon ring, 3C500 Ethernet and
//! Wideband satellite network; RFC 1106's T1 satellite; the XUNET Datakit
//! report) plus round-number modern paths. Each carries host cost models
//! (used by the simulator only) and a `sources` text that says where every
//! number comes from and which ones are assumptions.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use netblt_link::{Link, LinkConfig};
//!
//! // 8 Mb/s (1 us per byte), 20 ms one way.
//! let mut link = Link::new(LinkConfig::with_rate_delay(8_000_000, Duration::from_millis(20)), 1)?;
//! let fate = link.offer(Duration::ZERO, 1000);
//! assert_eq!(fate.tx_end, Duration::from_millis(1));
//! assert_eq!(fate.deliveries[0].map(|d| d.at), Some(Duration::from_millis(21)));
//! # Ok::<(), netblt_link::ConfigError>(())
//! ```

#![deny(missing_docs)]
mod codel;
pub mod config;
mod link;
pub mod profiles;
mod stats;
pub mod trace;
mod transmitter;

pub use config::{
    Aqm, ConfigError, DelaySpike, Fragmentation, FrameConfig, LinkConfig, LossModel, RateStep,
};
pub use link::{packet_error_rate, Delivery, DropReason, Fate, Link};
pub use stats::{DropCounts, LinkStats};
pub use trace::{DeliveryTrace, TraceError};
