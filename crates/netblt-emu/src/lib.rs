//! netblt-emu: a real, user-space link emulator built from TUN devices and
//! network namespaces.
//!
//! The simulator (`netblt-sim`) answers "what would NETBLT do on the 1988
//! Wideband channel" in virtual time. This crate answers the same question
//! for *real* programs — the `netblt` binary, kernel TCP, iperf3 — by putting
//! them on either side of an emulated path on this machine. The path is
//! shaped by [`netblt_link::Link`], the very model the simulator uses, so a
//! profile means the same thing in both worlds.
//!
//! # How it is put together
//!
//! ```text
//!   nb-NAME-l (198.18.0.1)                              nb-NAME-r (198.18.0.2)
//!   COMMAND --> nbtun0 ==fd==> [ forwarder thread: Link::offer, queue, write ] ==fd==> nbtun0 --> server
//!               nbtun0 <==fd== [ forwarder thread (reverse link)            ] <==fd== nbtun0
//! ```
//!
//! * [`Emulation::start`] creates two named network namespaces with
//!   iproute2, and in each a TUN device (`IFF_TUN | IFF_NO_PI`) opened by a
//!   thread that has joined the namespace, so the device lives there while
//!   the file descriptor stays with us. Addresses come from 198.18.0.0/15,
//!   which RFC 2544 reserves for benchmarking: the right side is reachable
//!   at 198.18.0.2. IPv6 is disabled unless asked for, so no router
//!   solicitations or MLD reports cross the link uninvited.
//! * The forwarder runs one thread per direction. Each reads every packet
//!   waiting on its TUN device, asks its [`netblt_link::Link`] for the
//!   packet's fate with `now` = time since the emulation started, and keeps
//!   the deliveries in a heap ordered by (time, arrival). It writes each one
//!   into the other device when due: twice for a duplicate, with the bit
//!   flipped for a corruption. There is no second copy of any loss, delay or
//!   rate logic here.
//! * The link model's transmitter has its own virtual clock: a packet starts
//!   transmission at `max(now, end of the previous one)`. A thread that wakes
//!   late therefore delivers late — a little jitter — but never slower: rate
//!   errors cannot accumulate.
//! * Waiting is `ppoll` on the input device with a nanosecond timeout
//!   (timer slack 1 ns), then a short, rationed spin before the deadline. The
//!   threads run SCHED_FIFO (see [`EmuConfig::realtime`]): on a loaded 2-core
//!   host an ordinary thread woke milliseconds late, a real-time one tens of
//!   microseconds. Every write records its lateness (actual minus scheduled)
//!   in a histogram ([`LatenessHistogram`]).
//! * The TUN transmit queue is raised from 500 to 10000: the kernel drops
//!   silently when it overflows. [`Emulation::stop`] reads both devices'
//!   `tx_dropped`; a run with drops outside the model is marked failed.
//!
//! # Cleanup
//!
//! Namespaces are removed on every way out: [`Emulation::stop`], `Drop`
//! (including unwinding from a panic), a failed [`Emulation::start`] (it
//! removes what it had created, and never touches a namespace it did not
//! create), and Ctrl-C/SIGTERM through [`install_signal_cleanup`]. Processes
//! left inside a namespace are ended (SIGTERM, then SIGKILL) before it goes.
//! Only SIGKILL of the forwarder leaves anything behind; `netblt emu down NAME`
//! removes it.
//!
//! # Using it
//!
//! From Rust: build an [`EmuConfig`] (from a profile with
//! [`EmuConfig::from_profile_name`], or by hand), [`Emulation::start`] it, and
//! use [`Emulation::spawn_left`]/[`Emulation::spawn_right`] for processes or
//! [`Emulation::enter_left`]/[`Emulation::enter_right`] to open sockets in a
//! namespace. From the shell: the [`cli`] module (`netblt emu`), whose knobs
//! override a profile (`--rate 10M --delay 20 --loss 1%`).
//!
//! Rates count IP bytes (what the TUN device carries; no Ethernet framing).
//! Everything here needs root and `/dev/net/tun`; [`check_environment`] says
//! which is missing.
//!
//! # Fidelity measured
//!
//! `bench/emulator.sh` runs kernel TCP, UDP and ping-like probes through the
//! emulator at 1 Mb/s to 1 Gb/s and reports rate and RTT errors and the
//! lateness histogram.

#![deny(missing_docs)]
pub mod cli;
mod config;
mod daemon;
mod emulation;
mod error;
mod forwarder;
mod knobs;
mod nat;
mod netns;
mod signals;
mod stats;
mod tun;

pub use config::{
    check_name, EmuConfig, DEFAULT_MTU, LEFT_V4, LEFT_V6, MAX_MTU, MAX_NAME, MIN_MTU, RIGHT_V4,
    RIGHT_V6,
};
pub use daemon::{down, list, up, Listed, RUN_DIR};
pub use emulation::{check_environment, Emulation};
pub use error::EmuError;
pub use knobs::{
    parse_bytes, parse_frames, parse_gilbert, parse_ms, parse_prob, parse_rate, LinkKnobs,
    DEFAULT_REORDER_DELAY,
};
pub use nat::NatStats;
pub use signals::{cleanup_all, install_signal_cleanup, interrupted};
pub use stats::{
    DirStats, EmuStats, LatenessHistogram, TxDropped, LATENESS_BOUNDS_NS, PER_SECOND_LIMIT,
    TENTH_MS,
};
pub use tun::DEVICE;
