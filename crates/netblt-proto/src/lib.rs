//! netblt-proto: a deterministic, sans-IO implementation of NETBLT
//! (RFC 998, "NETBLT: A Bulk Data Transfer Protocol") with the revisions
//! RFC 1030 describes.
//!
//! This crate contains no networking code and reads no clock: every call
//! takes `now` (a [`time::Instant`] chosen by the driver), and randomness (the
//! connection unique ID) is passed in. The same engine therefore runs over UDP
//! sockets, raw IP, the discrete-event simulator and the link emulator, and a
//! simulated run is reproducible bit for bit.
//!
//! * [`Connection`]: one transfer, either end (active or passive), either
//!   direction (data sender or data receiver). Inputs are
//!   `handle_datagram` / `handle_timeout`; outputs are `poll_transmit`,
//!   `poll_timeout` and `poll_event`.
//! * [`Endpoint`]: the passive end's demultiplexer: routes datagrams to
//!   connections by (peer address, NETBLT port), hands new OPENs to the
//!   application to accept or refuse.
//! * [`Config`] / [`TransferParams`]: negotiated and local parameters.
//! * [`Stats`]: counters named after RFC 1030's tables (#LOSS, #RXM, DTMOS)
//!   and its two throughputs, real and steady-state.
//!
//! The wire format lives in `netblt-wire`; this crate depends on nothing else
//! but `thiserror` and `tracing`.

#![deny(missing_docs)]

mod bitset;
pub mod config;
mod connection;
mod endpoint;
mod event;
mod pacer;
pub mod rate;
mod rtt;
mod seq;
mod stats;
pub mod time;

pub use config::{Config, DataTimerPolicy, PacingClock, ParamError, TransferParams};
pub use connection::{Connection, Gathered, Payload, PushError, Role, Side, State};
pub use endpoint::{ConnectionHandle, DatagramEvent, Endpoint, Incoming};
pub use event::{ConnectionError, Event};
pub use netblt_wire::Mode;
pub use rate::{Policy, RateConfig, RateLimits, RateReason, RateState};
pub use stats::Stats;
pub use time::{Duration, Instant};
