//! netblt-sim: a deterministic discrete-event simulator of two hosts and the
//! path between them.
//!
//! Built after quinn-proto's test `Pair` and smoltcp's `tests/netsim.rs`: a
//! virtual clock that jumps straight to the next event, an event heap
//! ordered by (time, insertion sequence) so ties break the same way every
//! run, seeded per-link randomness, and guards against runs that never end.
//! Nothing sleeps and nothing reads a real clock: a simulated transfer of
//! minutes over a satellite path takes milliseconds, and the same seed gives
//! byte-identical results.
//!
//! # The pieces
//!
//! * A [`Node`] is what a host runs: a sans-IO endpoint with `handle_*` and
//!   `poll_*` methods (netblt-proto's engine, adapted by the `transfer`
//!   module, or the toy nodes in the tests).
//! * Each host has **one CPU**, serving in order: received packets waiting in
//!   the interface (costing `recv_fixed + recv_per_byte * len`; the node sees
//!   the datagram when the cost has been paid), then due timers (free), then
//!   transmission (`poll_transmit`, costing `send_fixed + send_per_byte * len`;
//!   the datagram reaches the interface when the cost has been paid), except
//!   that a reply to the datagram just handled goes out before the next
//!   arrival is served (run to completion, as a single-threaded 1987
//!   implementation answered a packet). This is
//!   how RFC 1030's PC/ATs behave: a host busy copying a packet cannot look
//!   at its timers or at the next arrival.
//! * Each host has **one network interface** with `nic_buffers` hardware
//!   buffers shared by both directions. It serializes at `nic_rate_bps`, then
//!   offers `len + wire_overhead` bytes to the path's [`netblt_link::Link`].
//!   A packet arriving with every buffer busy is dropped; a half-duplex
//!   interface (the 3COM 3C500) is deaf while it transmits; a host may also
//!   lose a fraction of its input (`nic_loss`, the SUN-3's 0.5 %). Each kind of
//!   drop is counted separately in [`HostStats`].
//! * The **links** are netblt-link's, exactly as the emulator uses them: the
//!   simulator never re-implements loss or delay, it only turns each
//!   [`netblt_link::Fate`] into arrival events (flipping the indicated bit in a
//!   copy of the bytes; a flip that lands in the `wire_overhead` headers drops
//!   the packet, as their checksums would).
//!
//! A [`PathConfig`] gathers both links, both host models and the overhead;
//! `PathConfig::from(&profile)` takes them from a named
//! [`netblt_link::profiles::Profile`].
//!
//! # Running
//!
//! [`Simulation::run`] processes events until both nodes report
//! `is_finished`, nothing is scheduled, the next event is past the time
//! limit, the event budget is spent, or too many events happen at one
//! instant (a livelocked node): see [`Outcome`]. [`Simulation::step`] processes
//! one event, for tests that want to watch.
//!
//! Packet buffers are pooled, so a long run allocates nothing per packet once
//! it is in steady state; `examples/sim_speed.rs` measures simulated packets
//! per wall-clock second.

#![deny(missing_docs)]

pub mod dumbbell;
mod ethernet;
mod event;
mod host;
pub mod metrics;
mod netblt_nodes;
mod node;
mod path;
mod sim;
pub mod stream;
pub mod tcp;
pub mod tcp_path;
pub mod transfer;

pub use ethernet::SegmentStats;
pub use host::HostStats;
pub use netblt_link::profiles::{self, HostModel, Profile};
pub use netblt_link::{LinkConfig, LinkStats};
pub use netblt_proto::{Duration, Instant};
pub use node::Node;
pub use path::{PathConfig, Side, SimError};
pub use sim::{Outcome, SimStats, Simulation, DEFAULT_EVENT_LIMIT, DEFAULT_STALL_LIMIT};
