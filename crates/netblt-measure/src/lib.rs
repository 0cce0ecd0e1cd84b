//! netblt-measure: measurement tools in the tradition of XUNET (VandeWater, 1988) and
//! RFC 415 (Murray, 1972).
//!
//! NETBLT's claims are about throughput and delay, so the project needs instruments it can
//! trust before it measures NETBLT itself. This crate is those instruments, built over plain
//! kernel TCP and UDP sockets so that they measure the host and the path independently of the
//! NETBLT engine. The engine plugs in later as a third [`Transport`].
//!
//! # The instruments
//!
//! | XUNET / RFC 415 | here | module |
//! |---|---|---|
//! | dkbenchs (echo server), trafgens (sink) | `netblt echo` | [`server`] |
//! | dkbench: RTT per size, one packet outstanding | `netblt rtt` | [`rtt`], [`client::EchoClient`] |
//! | trafgen: N concurrent 1 MB transfers, RTT under load | `netblt load` | [`load`], [`client::SinkConnection`] |
//! | eqs. 2-9, Table II, the ZERO/LARGE method | `netblt model` | [`models`] |
//! | RFC 415: real baud, CPU baud, CPU needed | `netblt cpu` | [`cpu`], [`rusage`] |
//! | Figures 3-10 | `--plot STEM` | [`plot`] |
//!
//! One server does both XUNET server jobs. A 5-byte hello on TCP, or a 13-byte header on
//! every UDP datagram, says whether a client wants echo or sink ([`protocol`]). TCP echo
//! messages are framed (a 4-byte length), so that the echo side reads exactly one message
//! before replying, and one message is one round trip even on a byte stream.
//!
//! # Measurement rules we keep
//!
//! - **One message outstanding**, and the clock is read immediately around the send and the
//!   completed receive. Nothing else (no allocation, no setsockopt, no printing) sits
//!   between the two clock readings on the normal path.
//! - **Set-up is not timed**: connections and hellos happen before the clock starts, as
//!   XUNET's "virtual circuit connection established" before "read the clock".
//! - **Delivered, not buffered**: a transfer's end time is when the sink's report arrives,
//!   so a kernel buffer cannot make a short transfer look fast. trafgen's own end clock
//!   ("after the last packet is transmitted") is reported beside it.
//! - **Honest loss**: over UDP a message not echoed within the timeout is counted lost and
//!   never retried; late echoes are recognised by sequence number and discarded.
//! - **Watch the host**: the load average is sampled every 5 s and around every size, and a
//!   size whose 1-minute load moved by more than 0.5 is flagged ([`loadavg`]).
//! - **Every statistic**: n, min, mean, sample sd and nearest-rank p50/p90/p99, max
//!   ([`stats`]). XUNET argued from minima when idle and from means under load; we print both.
//!
//! # Threads and CPU accounting
//!
//! The server gives each TCP connection a thread and serves UDP from one thread. CPU time
//! comes from `getrusage(RUSAGE_THREAD)`, so a transfer's figure is that of the one thread
//! that moved its bytes, not of progress printers and samplers beside it.
//!
//! # Front ends
//!
//! [`cli`] holds one `clap::Args` struct and one `run_*` function per command, for the
//! `netblt` binary to mount. Everything prints a table, or one JSON object with `--json`.

#![deny(missing_docs)]
pub mod cli;
pub mod client;
pub mod cpu;
mod error;
pub mod load;
pub mod loadavg;
pub mod models;
pub mod plot;
pub mod protocol;
pub mod rtt;
pub mod rusage;
pub mod server;
pub mod stats;
pub mod transport;
pub mod units;

pub use error::MeasureError;
pub use server::{EchoServer, EchoServerConfig};
pub use transport::Transport;
