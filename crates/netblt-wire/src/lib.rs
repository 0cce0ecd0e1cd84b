//! # netblt-wire: the NETBLT (RFC 998) packet formats
//!
//! This crate turns bytes into NETBLT packets and back. It knows nothing of connections, timers
//! or sockets; the sans-IO engine in `netblt-proto` sits on top of it, and the UDP driver, the
//! simulator and the emulator move the bytes.
//!
//! ## Shape
//!
//! We follow smoltcp's `wire` module. Each packet family has its own file with a `mod fields`
//! table of byte ranges, a *Repr* (the validated, high-level form: [`OpenRepr`], [`DataRepr`],
//! [`NullAckRepr`], [`ControlRepr`]) and byte-exact tests:
//!
//! | file | holds |
//! |---|---|
//! | `header.rs` | the 12-byte common header ([`Header`] view) and [`PacketType`] |
//! | `checksum.rs` | the Internet checksum ([`checksum`]) and [`round_up4`] |
//! | `open.rs` | OPEN and RESPONSE ([`OpenRepr`], [`Mode`]) |
//! | `data.rs` | DATA, LDATA and NULL-ACK ([`DataRepr`], [`emit_data`], [`NullAckRepr`]) |
//! | `control.rs` | CONTROL, its GO/OK/RESEND messages and [`ControlWriter`] |
//! | `string.rs` | NUL-terminated strings (client string; QUIT/ABORT/REFUSED reasons) |
//! | `feedback.rs` | FEEDBACK, the negotiated rate-feedback extension ([`FeedbackRepr`]) |
//! | `packet.rs` | [`Packet`] / [`Repr`]: dispatch on the Type field |
//!
//! [`Packet::parse`] validates a whole datagram and borrows from it (zero-copy: strings, data
//! and control messages are slices of the input). [`Packet::emit`] writes one back.
//! [`emit_data`] is the hot path for DATA/LDATA: it writes header and data without building a
//! [`Packet`]. [`ControlWriter`] packs as many control messages as fit into one CONTROL packet.
//!
//! ## Decisions where RFC 998 is silent
//!
//! - Byte order is big-endian throughout. The Version byte is [`VERSION`] = 1; a packet with any
//!   other version is rejected ([`Error::BadVersion`]).
//! - The Length field is the real packet length (header plus body) *without* trailing alignment
//!   padding. RFC 998 §8 requires "all packets are a multiple of 4 bytes in length", so every
//!   datagram is padded with zeros to a multiple of 4, and parse requires the datagram to be
//!   exactly Length rounded up to 4. Only DATA/LDATA can need padding: their data segment may be
//!   any size, and this is how the receiver learns the size of a short last segment.
//! - Checksums are the Internet checksum with no pseudo-header. Every packet but DATA/LDATA is
//!   covered in full (Length bytes). For DATA/LDATA the header Checksum covers the 24-byte header
//!   and the "Data Area Checksum Value" covers the data when the connection negotiated C = 1.
//!   This crate does not know C, so it carries that value as a plain field
//!   ([`DataRepr::data_checksum`], [`DataRepr::data_checksum_ok`]).
//! - Strings are NUL-terminated, NUL-padded to a multiple of 4 and counted in Length. Their
//!   value is the bytes before the first NUL.
//! - Reserved (MBZ) bits and padding are written as zero and ignored on parse.
//! - A CONTROL packet is validated whole, up front: an unknown message type or a message area
//!   that does not tile exactly rejects the packet, so iterating a parsed one cannot fail.
//!
//! ## Never panic
//!
//! Input comes from the network, so [`Packet::parse`] must never panic, whatever the bytes, and
//! the emit functions must never panic whatever the buffer. All field access goes through
//! bounds-checked helpers (`get`, not indexing) after an up-front length check, all arithmetic
//! on lengths is bounded by 16-bit fields or saturating, and errors are [`Error`] values. A
//! proptest and a cargo-fuzz target (`fuzz/`) check this and the round trip
//! `parse(emit(p)) == p`.
//!
//! ## Example
//!
//! ```
//! use netblt_wire::{Packet, Repr, NullAckRepr};
//!
//! let pkt = Packet {
//!     local_port: 1000,
//!     foreign_port: 2000,
//!     repr: Repr::NullAck(NullAckRepr { high_ack: 3, burst_size: 5, burst_interval_ms: 100 }),
//! };
//! let mut buf = [0u8; 64];
//! let n = pkt.emit(&mut buf).unwrap();
//! assert_eq!(n, pkt.buffer_len());
//! assert_eq!(Packet::parse(&buf[..n]), Ok(pkt));
//! assert_eq!(pkt.to_string(), "NULL-ACK 1000>2000 hack=3 burst=5/100ms");
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod checksum;
mod control;
mod data;
mod error;
mod feedback;
mod field;
mod header;
mod open;
mod packet;
mod string;
#[cfg(test)]
mod test_util;

pub use checksum::{checksum, round_up4};
pub use control::{
    ControlIter, ControlMessage, ControlMessageRef, ControlRepr, ControlWriter, PacketList,
};
pub use data::{emit_data, emit_data_header, DataRepr, NullAckRepr};
pub use error::Error;
pub use feedback::FeedbackRepr;
pub use header::{Header, PacketType};
pub use open::{Mode, OpenRepr};
pub use packet::{Packet, Repr};

/// The NETBLT version this crate speaks. RFC 998 gives no number (notes §Z1); we use 1 and
/// reject packets carrying any other.
pub const VERSION: u8 = 1;
/// "NETBLT runs directly on IP, with protocol number 30" (RFC 998 §6).
pub const IP_PROTOCOL: u8 = 30;
/// The common header: Checksum, Version, Type, Length, Local Port, Foreign Port, padding.
pub const HEADER_LEN: usize = 12;
/// The DATA/LDATA header, before the data segment.
pub const DATA_HEADER_LEN: usize = 24;
/// OPEN/RESPONSE before the client string.
pub const OPEN_FIXED_LEN: usize = 36;
/// A NULL-ACK packet.
pub const NULL_ACK_LEN: usize = 20;
/// Length of a FEEDBACK packet (type 12, not in RFC 998).
pub const FEEDBACK_LEN: usize = 40;
/// The largest Length field (16 bits).
pub const MAX_PACKET_LEN: usize = 65535;
