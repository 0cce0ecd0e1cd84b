//! The three control messages carried in a CONTROL packet: GO, OK and RESEND.
//!
//! ```text
//! common start of every message:        GO (type 0), 8 bytes:
//! +-------+-------+---------------+     +-------+-------+---------------+
//! | Type  |  pad  |  Sequence No  |     |   0   |  pad  |  Sequence No  |
//! +-------+-------+---------------+     +-------+-------+---------------+
//!                                       |         Buffer Number         |
//!                                       +-------------------------------+
//! OK (type 1), 16 bytes:                RESEND (type 2), 12 + 2n bytes, padded to 4:
//! +-------+-------+---------------+     +-------+-------+---------------+
//! |   1   |  pad  |  Sequence No  |     |   2   |  pad  |  Sequence No  |
//! +-------+-------+---------------+     +-------+-------+---------------+
//! |         Buffer Number         |     |         Buffer Number         |
//! +---------------+---------------+     +---------------+---------------+
//! | New Burst Size| New Burst Rate|     |  n (missing)  |    padding    |
//! +---------------+---------------+     +---------------+---------------+
//! | Control Timer |    padding    |     | packet numbers, 2 bytes each  |
//! +---------------+---------------+     | ... then 0 or 2 bytes padding |
//!                                       +-------------------------------+
//! ```
//!
//! RFC 998 §8: "Sequence numbers must be monotonically increasing, starting from 1." The
//! sequence number is carried as given; ordering is the engine's business.

use core::fmt;

use crate::field::{self, Field};
use crate::{round_up4, Error};

/// Message type codes: "message type (GO = 0, OK = 1, RESEND = 2)".
pub(crate) const TYPE_GO: u8 = 0;
pub(crate) const TYPE_OK: u8 = 1;
pub(crate) const TYPE_RESEND: u8 = 2;

/// "GO messages are 8 bytes long, and OK messages are 16 bytes long" (RFC 998 §5.2.1).
pub(crate) const GO_LEN: usize = 8;
pub(crate) const OK_LEN: usize = 16;
/// A RESEND before its packet-number list.
pub(crate) const RESEND_FIXED_LEN: usize = 12;

/// Byte ranges relative to the start of a message.
mod fields {
    use super::Field;
    pub(super) const TYPE: usize = 0;
    pub(super) const WORD_PADDING: Field = 1..2;
    pub(super) const SEQ: Field = 2..4;
    pub(super) const BUFFER: Field = 4..8;
    pub(super) const OK_BURST_SIZE: Field = 8..10;
    pub(super) const OK_BURST_RATE: Field = 10..12;
    pub(super) const OK_CONTROL_TIMER: Field = 12..14;
    pub(super) const OK_PADDING: Field = 14..16;
    pub(super) const RESEND_COUNT: Field = 8..10;
    pub(super) const RESEND_PADDING: Field = 10..12;
    pub(super) const RESEND_LIST: usize = 12;
}

/// The wire length of a RESEND listing `n` packets.
pub(crate) fn resend_len(n: usize) -> usize {
    round_up4(n.saturating_mul(2).saturating_add(RESEND_FIXED_LEN))
}

/// An owned control message, used to build CONTROL packets (see
/// [`ControlWriter`](crate::ControlWriter)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlMessage {
    /// GO: the data sender may start sending `buffer`.
    Go {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
    },
    /// OK: `buffer` was received completely; carries new offered rate values.
    Ok {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
        /// "New Offered Burst Size".
        burst_size: u16,
        /// "New Offered Burst Rate", milliseconds per burst.
        burst_interval_ms: u16,
        /// "Receiving NETBLT's control timer value in milliseconds".
        control_timer_ms: u16,
    },
    /// RESEND: the listed packets of `buffer` are missing.
    Resend {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
        /// Packet Numbers of the missing packets (at most 65535).
        packets: Vec<u16>,
    },
}

impl ControlMessage {
    /// The message sequence number.
    pub fn seq(&self) -> u16 {
        match self {
            ControlMessage::Go { seq, .. }
            | ControlMessage::Ok { seq, .. }
            | ControlMessage::Resend { seq, .. } => *seq,
        }
    }

    /// The buffer number the message is about.
    pub fn buffer(&self) -> u32 {
        match self {
            ControlMessage::Go { buffer, .. }
            | ControlMessage::Ok { buffer, .. }
            | ControlMessage::Resend { buffer, .. } => *buffer,
        }
    }

    /// The message's length on the wire: 8 (GO), 16 (OK) or 12 + 2n rounded up to 4 (RESEND).
    pub fn buffer_len(&self) -> usize {
        match self {
            ControlMessage::Go { .. } => GO_LEN,
            ControlMessage::Ok { .. } => OK_LEN,
            ControlMessage::Resend { packets, .. } => resend_len(packets.len()),
        }
    }

    /// Writes the message into the start of `buf`; returns [`buffer_len`](Self::buffer_len).
    ///
    /// Fails with [`Error::BadControl`] for a RESEND of more than 65535 packets (the count
    /// field is 16 bits) and [`Error::BufferTooSmall`] if `buf` is too short. Never panics.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        match self {
            ControlMessage::Go { seq, buffer } => emit_go(buf, *seq, *buffer),
            ControlMessage::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            } => emit_ok(
                buf,
                *seq,
                *buffer,
                *burst_size,
                *burst_interval_ms,
                *control_timer_ms,
            ),
            ControlMessage::Resend {
                seq,
                buffer,
                packets,
            } => emit_resend(buf, *seq, *buffer, packets.len(), |list| {
                for (dst, p) in list.chunks_exact_mut(2).zip(packets) {
                    dst.copy_from_slice(&p.to_be_bytes());
                }
            }),
        }
    }
}

impl fmt::Display for ControlMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlMessage::Go { seq, buffer } => fmt_go(f, *seq, *buffer),
            ControlMessage::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            } => fmt_ok(
                f,
                *seq,
                *buffer,
                *burst_size,
                *burst_interval_ms,
                *control_timer_ms,
            ),
            ControlMessage::Resend {
                seq,
                buffer,
                packets,
            } => fmt_resend(f, *seq, *buffer, packets.len(), packets.iter().copied()),
        }
    }
}

/// A borrowed RESEND packet-number list: the raw big-endian bytes from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketList<'a> {
    /// Exactly 2n bytes; the alignment padding is not included.
    raw: &'a [u8],
}

impl<'a> PacketList<'a> {
    /// The number of packet numbers.
    pub fn len(&self) -> usize {
        self.raw.len() / 2
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.len() < 2
    }

    /// The `i`th packet number, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<u16> {
        let at = i.checked_mul(2)?;
        let b = self.raw.get(at..at.checked_add(2)?)?;
        <[u8; 2]>::try_from(b).ok().map(u16::from_be_bytes)
    }

    /// The packet numbers in order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + 'a {
        self.raw
            .chunks_exact(2)
            .filter_map(|c| <[u8; 2]>::try_from(c).ok())
            .map(u16::from_be_bytes)
    }

    /// The raw big-endian bytes (2 per packet number).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
}

/// A control message borrowed from a parsed CONTROL packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlMessageRef<'a> {
    /// GO: the data sender may start sending `buffer`.
    Go {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
    },
    /// OK: `buffer` was received completely; carries new offered rate values.
    Ok {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
        /// "New Offered Burst Size".
        burst_size: u16,
        /// "New Offered Burst Rate", milliseconds per burst.
        burst_interval_ms: u16,
        /// "Receiving NETBLT's control timer value in milliseconds".
        control_timer_ms: u16,
    },
    /// RESEND: the listed packets of `buffer` are missing.
    Resend {
        /// Control message sequence number.
        seq: u16,
        /// Buffer Number.
        buffer: u32,
        /// Packet Numbers of the missing packets.
        packets: PacketList<'a>,
    },
}

impl ControlMessageRef<'_> {
    /// The message sequence number.
    pub fn seq(&self) -> u16 {
        match self {
            ControlMessageRef::Go { seq, .. }
            | ControlMessageRef::Ok { seq, .. }
            | ControlMessageRef::Resend { seq, .. } => *seq,
        }
    }

    /// The buffer number the message is about.
    pub fn buffer(&self) -> u32 {
        match self {
            ControlMessageRef::Go { buffer, .. }
            | ControlMessageRef::Ok { buffer, .. }
            | ControlMessageRef::Resend { buffer, .. } => *buffer,
        }
    }

    /// Copies the message into an owned [`ControlMessage`].
    // The name is fixed by the engine's API; it shadows `ToOwned::to_owned` on purpose.
    #[allow(clippy::wrong_self_convention)]
    pub fn to_owned(&self) -> ControlMessage {
        match *self {
            ControlMessageRef::Go { seq, buffer } => ControlMessage::Go { seq, buffer },
            ControlMessageRef::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            } => ControlMessage::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            },
            ControlMessageRef::Resend {
                seq,
                buffer,
                packets,
            } => ControlMessage::Resend {
                seq,
                buffer,
                packets: packets.iter().collect(),
            },
        }
    }

    /// The message's length on the wire.
    pub fn buffer_len(&self) -> usize {
        match self {
            ControlMessageRef::Go { .. } => GO_LEN,
            ControlMessageRef::Ok { .. } => OK_LEN,
            ControlMessageRef::Resend { packets, .. } => resend_len(packets.len()),
        }
    }

    /// Writes the message, with zeroed padding, into the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        match *self {
            ControlMessageRef::Go { seq, buffer } => emit_go(buf, seq, buffer),
            ControlMessageRef::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            } => emit_ok(
                buf,
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            ),
            ControlMessageRef::Resend {
                seq,
                buffer,
                packets,
            } => emit_resend(buf, seq, buffer, packets.len(), |list| {
                // The raw list is already in wire order.
                if list.len() == packets.raw.len() {
                    list.copy_from_slice(packets.raw);
                }
            }),
        }
    }
}

impl fmt::Display for ControlMessageRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ControlMessageRef::Go { seq, buffer } => fmt_go(f, seq, buffer),
            ControlMessageRef::Ok {
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            } => fmt_ok(
                f,
                seq,
                buffer,
                burst_size,
                burst_interval_ms,
                control_timer_ms,
            ),
            ControlMessageRef::Resend {
                seq,
                buffer,
                packets,
            } => fmt_resend(f, seq, buffer, packets.len(), packets.iter()),
        }
    }
}

/// Parses the message at the start of `area`; returns it and its wire length.
///
/// [`Error::BadControl`] for an unknown type, a message running past the end of `area`, or a
/// RESEND whose list (plus padding) does not fit.
pub(crate) fn parse_one(area: &[u8]) -> Result<(ControlMessageRef<'_>, usize), Error> {
    let ty = *area.first().ok_or(Error::BadControl)?;
    let need = match ty {
        TYPE_GO => GO_LEN,
        TYPE_OK => OK_LEN,
        TYPE_RESEND => RESEND_FIXED_LEN,
        _ => return Err(Error::BadControl),
    };
    let msg = area.get(..need).ok_or(Error::BadControl)?;
    let seq = field::get_u16(msg, fields::SEQ);
    let buffer = field::get_u32(msg, fields::BUFFER);
    match ty {
        TYPE_GO => Ok((ControlMessageRef::Go { seq, buffer }, GO_LEN)),
        TYPE_OK => Ok((
            ControlMessageRef::Ok {
                seq,
                buffer,
                burst_size: field::get_u16(msg, fields::OK_BURST_SIZE),
                burst_interval_ms: field::get_u16(msg, fields::OK_BURST_RATE),
                control_timer_ms: field::get_u16(msg, fields::OK_CONTROL_TIMER),
            },
            OK_LEN,
        )),
        _ => {
            let n = usize::from(field::get_u16(msg, fields::RESEND_COUNT));
            let total = resend_len(n);
            // The whole message, padding included, must lie inside the area.
            if area.len() < total {
                return Err(Error::BadControl);
            }
            let list_end = fields::RESEND_LIST + 2 * n;
            let raw = area
                .get(fields::RESEND_LIST..list_end)
                .ok_or(Error::BadControl)?;
            Ok((
                ControlMessageRef::Resend {
                    seq,
                    buffer,
                    packets: PacketList { raw },
                },
                total,
            ))
        }
    }
}

/// Writes the 8 bytes common to all messages: type, word padding, sequence, buffer.
fn emit_start(msg: &mut [u8], ty: u8, seq: u16, buffer: u32) {
    field::set_u8(msg, fields::TYPE, ty);
    field::zero(msg, fields::WORD_PADDING);
    field::set_u16(msg, fields::SEQ, seq);
    field::set_u32(msg, fields::BUFFER, buffer);
}

fn emit_go(buf: &mut [u8], seq: u16, buffer: u32) -> Result<usize, Error> {
    let msg = buf.get_mut(..GO_LEN).ok_or(Error::BufferTooSmall)?;
    emit_start(msg, TYPE_GO, seq, buffer);
    Ok(GO_LEN)
}

fn emit_ok(
    buf: &mut [u8],
    seq: u16,
    buffer: u32,
    burst_size: u16,
    burst_interval_ms: u16,
    control_timer_ms: u16,
) -> Result<usize, Error> {
    let msg = buf.get_mut(..OK_LEN).ok_or(Error::BufferTooSmall)?;
    emit_start(msg, TYPE_OK, seq, buffer);
    field::set_u16(msg, fields::OK_BURST_SIZE, burst_size);
    field::set_u16(msg, fields::OK_BURST_RATE, burst_interval_ms);
    field::set_u16(msg, fields::OK_CONTROL_TIMER, control_timer_ms);
    field::zero(msg, fields::OK_PADDING);
    Ok(OK_LEN)
}

/// Writes a RESEND of `n` packets; `fill_list` writes the 2n-byte list it is handed.
fn emit_resend(
    buf: &mut [u8],
    seq: u16,
    buffer: u32,
    n: usize,
    fill_list: impl FnOnce(&mut [u8]),
) -> Result<usize, Error> {
    let count = u16::try_from(n).map_err(|_| Error::BadControl)?;
    let total = resend_len(n);
    let msg = buf.get_mut(..total).ok_or(Error::BufferTooSmall)?;
    emit_start(msg, TYPE_RESEND, seq, buffer);
    field::set_u16(msg, fields::RESEND_COUNT, count);
    field::zero(msg, fields::RESEND_PADDING);
    let list_end = fields::RESEND_LIST + 2 * n;
    if let Some(list) = msg.get_mut(fields::RESEND_LIST..list_end) {
        fill_list(list);
    }
    if let Some(pad) = msg.get_mut(list_end..) {
        pad.fill(0);
    }
    Ok(total)
}

fn fmt_go(f: &mut fmt::Formatter<'_>, seq: u16, buffer: u32) -> fmt::Result {
    write!(f, "GO(seq={seq} buf={buffer})")
}

fn fmt_ok(
    f: &mut fmt::Formatter<'_>,
    seq: u16,
    buffer: u32,
    burst_size: u16,
    burst_interval_ms: u16,
    control_timer_ms: u16,
) -> fmt::Result {
    write!(
        f,
        "OK(seq={seq} buf={buffer} burst={burst_size}/{burst_interval_ms}ms ctl={control_timer_ms}ms)"
    )
}

/// Lists at most this many packet numbers, so that a log line stays a line.
const FMT_MAX_PACKETS: usize = 8;

fn fmt_resend(
    f: &mut fmt::Formatter<'_>,
    seq: u16,
    buffer: u32,
    n: usize,
    packets: impl Iterator<Item = u16>,
) -> fmt::Result {
    write!(f, "RESEND(seq={seq} buf={buffer} pkts=[")?;
    for (i, p) in packets.take(FMT_MAX_PACKETS).enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{p}")?;
    }
    if n > FMT_MAX_PACKETS {
        write!(f, ",...+{}", n - FMT_MAX_PACKETS)?;
    }
    f.write_str("])")
}
