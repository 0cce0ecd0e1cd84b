//! NETBLT (RFC 998, as revised by RFC 1030) bulk data transfer over UDP or
//! raw IP, for your own programs: the library under the `netblt` tool, as
//! quinn sits on quinn-proto.
//!
//! # Sending and receiving
//!
//! ```no_run
//! use netblt::{Receiver, ReceiverOptions, SendOptions};
//!
//! # fn main() -> Result<(), netblt::Error> {
//! // A receiver storing files in ./incoming, on a thread of its own.
//! std::fs::create_dir_all("incoming").map_err(|e| netblt::Error::Local(e.to_string()))?;
//! let rx = Receiver::bind("127.0.0.1:9998".parse().unwrap(), ReceiverOptions::default())?;
//! let addr = rx.local_addr();
//! std::thread::spawn(move || {
//!     if let Err(e) = rx.serve_dir("incoming") {
//!         eprintln!("receiver: {e}");
//!     }
//! });
//!
//! // Send a file at (at most) 500 Mb/s; Ok means the receiver verified it.
//! let report = netblt::send_file("big.iso", addr, &SendOptions::new().with_rate(500_000_000))?;
//! println!("{} bytes, steady {:?} b/s", report.bytes, report.steady_throughput_bps);
//! # Ok(())
//! # }
//! ```
//!
//! # Encryption
//!
//! The library's transfers are **plain RFC 998 unless you ask**, unlike
//! the `netblt` tool, which encrypts unless `--insecure` (decision K14: a
//! library does not make key files in its caller's home unasked). Set
//! [`SendOptions::security`] and [`ReceiverOptions::security`] to
//! [`Security::encrypted()`] (keys in `$NETBLT_HOME` or
//! `~/.config/netblt`, as the tool's) or to a [`Security::Encrypted`] with
//! its own key directory; [`Encryption::public_key`] and
//! [`Encryption::authorize`] do what `netblt id` and editing
//! `authorized_keys` do. A plain end and an encrypted one refuse each other
//! with a line saying so.
//!
//! Every call is blocking and runs one transfer on the calling thread (plus
//! a reader or writer thread for the disk). The active end
//! ([`send_file`], [`send_bundle`], [`send_dir`], [`send_reader`], [`get`],
//! [`bench()`]) takes
//! [`SendOptions`]; the passive end is a [`Receiver`] with
//! [`ReceiverOptions`] that stores files ([`Receiver::serve_dir`]), discards
//! data ([`Receiver::sink`]) or hands it to a [`DataHandler`]
//! ([`Receiver::handle_with`]). Each transfer ends with a
//! [`TransferReport`]; failures are an [`Error`]. Progress comes through a
//! callback ([`SendOptions::progress`]); the library never prints and never
//! exits.
//!
//! # What travels
//!
//! A file of `size` bytes is sent as `size + 32` bytes: the data, then its
//! BLAKE3 digest. The receiver checks the digest, flushes the file to disk
//! and renames it into place before it acknowledges the last buffer, so the
//! sender's success means the receiver verified. The name, size and
//! operation ride in RFC 998's OPEN and RESPONSE client strings (compact
//! JSON), so a `netblt` tool at either end interoperates.
//!
//! # Many files
//!
//! [`send_bundle`] moves a [`Bundle`] (files and directories, walked with
//! [`Bundle::walk`]) in one transfer: a tar stream made while it is sent
//! and unpacked while it arrives by a receiver serving a directory, which
//! writes nothing outside it, keeps modification times and permission
//! bits, and moves the files into place only once the whole stream is
//! verified. [`TransferReport::files`] says what was stored and what
//! failed. An interrupted bundle keeps nothing, so the tool sends a
//! directory's large files on their own, resumable, after it
//! ([`Bundle::split_resumable`], [`SendOptions::resumable_min`]).
//!
//! # Layers
//!
//! Inside, a driver (one thread, one `ppoll` loop: `recvmmsg` with GRO,
//! `sendmmsg` with GSO trains gathered from the engine's buffers, precise
//! pacing) runs the sans-IO engine [`proto`] (`netblt-proto`) over the
//! sockets of `netblt-udp`, and knows the file-transfer application only
//! through a small trait. To drive the engine yourself (other sockets, a
//! simulator, an async runtime), use [`proto`] directly: see the
//! `in_memory_pair` example.
//!
//! # Async
//!
//! With the feature `tokio`, the module `tokio` runs these calls on
//! Tokio's blocking pool: futures of the reports, progress and reports on
//! Tokio channels, cancellation on drop (see the `tokio_send` example).

#![deny(missing_docs)]

mod app;
mod budget;
mod client;
mod cpu_wait;
mod diagnosis;
mod driver;
mod error;
mod error_code;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod options;
mod rate_control;
mod receiver;
mod report;
mod security;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use app::bundle::{Bundle, FileFailure, FilesReport};
pub use app::params::{
    AUTO_PACKET_MAX, AUTO_RATE, DEFAULT_BUFFERS, DEFAULT_RATE, LAN_PACKET_SIZE,
    MAX_UDP_PACKET_SIZE, MIN_QUEUED_BUFFERS,
};
pub use app::partial::partial_copy;
pub use client::{
    bench, files_to_send, get, get_to_writer, send_bundle, send_dir, send_file, send_file_as,
    send_reader, send_stream, send_tar, send_walked_file, skip_same,
};
pub use diagnosis::{Diagnosis, Limit, LimitSetting};
pub use driver::passive::JunkCounts;
pub use driver::secure::passive::FloodCounts;
pub use driver::socket::DEFAULT_PORT;
pub use error::{Error, ErrorKind, PeerReason};
pub use error_code::{io_kind_code, PeerDetail};
pub use handler::{DataHandler, IncomingTransfer};
/// The cryptographic core (`netblt-crypto`), re-exported: keys, key files, codes, limits.
pub use netblt_crypto as crypto;
pub use netblt_proto::{Policy, RateConfig, RateLimits};
pub use options::{
    AutoSize, Progress, ProgressFn, ReceiverOptions, Refusal, RefusalFn, ReportFn, SendOptions,
    DEFAULT_RESUMABLE_MIN, MIN_RATE,
};
pub use rate_control::RateControl;
pub use receiver::{Receiver, ReceiverSummary};
pub use report::{Direction, IoCounters, RateReport, TransferReport};
pub use security::{Encryption, Security, SecurityReport};

/// The sans-IO protocol engine (`netblt-proto`), re-exported: `Connection`,
/// `Endpoint`, `Config`, `TransferParams`, events and statistics.
pub use netblt_proto as proto;
