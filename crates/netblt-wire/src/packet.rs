//! [`Packet`] and [`Repr`]: whole-packet parse and emit, dispatching on the Type field.
//!
//! Parsing checks, in this order:
//! 1. the buffer holds the 12-byte header ([`Error::Truncated`]);
//! 2. Version is [`VERSION`] ([`Error::BadVersion`]) and Type is known
//!    ([`Error::UnknownType`]);
//! 3. Length is not beyond the buffer ([`Error::Truncated`]), the buffer is exactly Length
//!    rounded up to a multiple of 4, and Length suits the type ([`Error::BadLength`]);
//! 4. the header checksum ([`Error::BadChecksum`]): over bytes 0..Length for every type but
//!    DATA/LDATA, over the 24-byte header for DATA/LDATA;
//! 5. the body ([`Error::BadString`], [`Error::BadControl`]).
//!
//! Alignment padding, reserved bits and the bytes after a string's first NUL are ignored.
//! Emitting writes them as zero, so `parse(emit(p)) == p` for every packet `p` that emits, and
//! `emit(parse(b))` is the canonical form of `b`.
//!
//! Never-panic contract: [`Packet::parse`] never panics on any input, and [`Packet::emit`] never
//! panics on any buffer; both report problems as [`Error`]s.

use core::fmt;

use crate::data::{emit_data, DataRepr, NullAckRepr};
use crate::feedback::FeedbackRepr;
use crate::header::{self, fields as hfields, Header};
use crate::{
    checksum, field, round_up4, string, ControlRepr, Error, OpenRepr, PacketType, DATA_HEADER_LEN,
    HEADER_LEN, MAX_PACKET_LEN, VERSION,
};

/// The body of a packet, by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr<'a> {
    /// OPEN (type 0).
    Open(OpenRepr<'a>),
    /// RESPONSE (type 1).
    Response(OpenRepr<'a>),
    /// KEEPALIVE (type 2): header only.
    Keepalive,
    /// QUIT (type 3), with the client's reason.
    Quit {
        /// "Reason for QUIT", without NUL terminator or padding.
        reason: &'a [u8],
    },
    /// QUITACK (type 4): header only.
    QuitAck,
    /// ABORT (type 5), with a reason.
    Abort {
        /// "Reason for ABORT", without NUL terminator or padding.
        reason: &'a [u8],
    },
    /// DATA (type 6).
    Data(DataRepr<'a>),
    /// LDATA (type 7): the last DATA packet of a buffer.
    LData(DataRepr<'a>),
    /// NULL-ACK (type 8).
    NullAck(NullAckRepr),
    /// CONTROL (type 9).
    Control(ControlRepr<'a>),
    /// REFUSED (type 10), with a reason.
    Refused {
        /// "Reason for REFUSE", without NUL terminator or padding.
        reason: &'a [u8],
    },
    /// DONE (type 11): header only.
    Done,
    /// FEEDBACK (type 12, an extension negotiated at OPEN).
    Feedback(FeedbackRepr),
}

impl Repr<'_> {
    /// The packet type this body belongs to.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Repr::Open(_) => PacketType::Open,
            Repr::Response(_) => PacketType::Response,
            Repr::Keepalive => PacketType::Keepalive,
            Repr::Quit { .. } => PacketType::Quit,
            Repr::QuitAck => PacketType::QuitAck,
            Repr::Abort { .. } => PacketType::Abort,
            Repr::Data(_) => PacketType::Data,
            Repr::LData(_) => PacketType::LData,
            Repr::NullAck(_) => PacketType::NullAck,
            Repr::Control(_) => PacketType::Control,
            Repr::Refused { .. } => PacketType::Refused,
            Repr::Done => PacketType::Done,
            Repr::Feedback(_) => PacketType::Feedback,
        }
    }

    /// The value of the Length field: header plus body, without trailing alignment padding.
    pub fn packet_len(&self) -> usize {
        match self {
            Repr::Open(o) | Repr::Response(o) => o.buffer_len(),
            Repr::Keepalive | Repr::QuitAck | Repr::Done => HEADER_LEN,
            Repr::Quit { reason } | Repr::Abort { reason } | Repr::Refused { reason } => {
                HEADER_LEN.saturating_add(string::area_len(reason))
            }
            Repr::Data(d) | Repr::LData(d) => d.packet_len(),
            Repr::NullAck(_) => crate::NULL_ACK_LEN,
            Repr::Feedback(_) => crate::FEEDBACK_LEN,
            Repr::Control(c) => HEADER_LEN.saturating_add(c.area_len()),
        }
    }
}

/// A whole NETBLT packet: the header's ports plus the typed body.
///
/// Version, Type, Length and Checksum are not stored: parse checks them and emit computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Local Port: the port of the NETBLT sending the packet.
    pub local_port: u16,
    /// Foreign Port: the port of the NETBLT the packet is for.
    pub foreign_port: u16,
    /// The typed body.
    pub repr: Repr<'a>,
}

impl<'a> Packet<'a> {
    /// Parses and validates one packet; `buf` is the whole datagram (the IP or UDP payload).
    ///
    /// Never panics, for any input. Checks, in this order:
    /// 1. the buffer holds the 12-byte header ([`Error::Truncated`]);
    /// 2. Version is [`VERSION`] ([`Error::BadVersion`]) and Type is known
    ///    ([`Error::UnknownType`]);
    /// 3. Length is not beyond the buffer ([`Error::Truncated`]), the buffer is exactly Length
    ///    rounded up to a multiple of 4, and Length suits the type ([`Error::BadLength`]): exact
    ///    for KEEPALIVE, QUITACK, DONE (12), NULL-ACK (20) and FEEDBACK (40); a multiple of 4 and at least the
    ///    minimum for string and CONTROL packets; at least 24 for DATA/LDATA;
    /// 4. the header checksum ([`Error::BadChecksum`]);
    /// 5. the body ([`Error::BadString`], [`Error::BadControl`]).
    ///
    /// # Fuzzing
    ///
    /// When built with `--cfg fuzzing` (cargo-fuzz), the header checksum is not verified.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, Error> {
        let h = Header::new_checked(buf)?;
        if h.version() != VERSION {
            return Err(Error::BadVersion(h.version()));
        }
        let ty = h.packet_type()?;
        let len = usize::from(h.length());
        if len > buf.len() {
            return Err(Error::Truncated);
        }
        // RFC 998 §8: "all packets are a multiple of 4 bytes in length". Length leaves out the
        // padding, so the datagram must be exactly Length rounded up to 4.
        if buf.len() != round_up4(len) || !ty.length_ok(len) {
            return Err(Error::BadLength);
        }
        let packet = buf.get(..len).ok_or(Error::Truncated)?;

        let covered_end = match ty {
            // The header checksum covers only the DATA header; the data has its own field.
            PacketType::Data | PacketType::LData => DATA_HEADER_LEN,
            _ => len,
        };
        let covered = packet
            .get(hfields::CHECKSUM.end..covered_end)
            .ok_or(Error::BadLength)?;
        // Under cargo-fuzz we skip this check so that random inputs reach the body parsers
        // (as smoltcp does); the fuzz target still checks that emit writes valid checksums.
        if !cfg!(fuzzing) && checksum(covered) != h.checksum() {
            return Err(Error::BadChecksum);
        }

        let body = packet.get(HEADER_LEN..).unwrap_or(&[]);
        let repr = match ty {
            PacketType::Open => Repr::Open(OpenRepr::parse(packet)?),
            PacketType::Response => Repr::Response(OpenRepr::parse(packet)?),
            PacketType::Keepalive => Repr::Keepalive,
            PacketType::Quit => Repr::Quit {
                reason: string::parse(body)?,
            },
            PacketType::QuitAck => Repr::QuitAck,
            PacketType::Abort => Repr::Abort {
                reason: string::parse(body)?,
            },
            PacketType::Data => Repr::Data(DataRepr::parse(packet)?),
            PacketType::LData => Repr::LData(DataRepr::parse(packet)?),
            PacketType::NullAck => Repr::NullAck(NullAckRepr::parse(packet)?),
            PacketType::Control => Repr::Control(ControlRepr::from_message_area(body)?),
            PacketType::Refused => Repr::Refused {
                reason: string::parse(body)?,
            },
            PacketType::Done => Repr::Done,
            PacketType::Feedback => Repr::Feedback(FeedbackRepr::parse(packet)?),
        };
        Ok(Packet {
            local_port: h.local_port(),
            foreign_port: h.foreign_port(),
            repr,
        })
    }

    /// The packet's length on the wire: the Length field rounded up to a multiple of 4.
    pub fn buffer_len(&self) -> usize {
        round_up4(self.repr.packet_len())
    }

    /// Writes the packet, checksums and zero padding included, into the start of `buf`;
    /// returns the bytes written, [`buffer_len`](Self::buffer_len).
    ///
    /// Fails with [`Error::BadLength`] if the packet would exceed 65535 bytes,
    /// [`Error::BadString`] if a string contains a NUL, and [`Error::BufferTooSmall`] if `buf`
    /// is shorter than `buffer_len()`. Never panics.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let (lp, fp) = (self.local_port, self.foreign_port);
        match &self.repr {
            Repr::Data(d) => return emit_data(buf, false, lp, fp, d),
            Repr::LData(d) => return emit_data(buf, true, lp, fp, d),
            Repr::Open(o) | Repr::Response(o) => string::check(o.client)?,
            Repr::Quit { reason } | Repr::Abort { reason } | Repr::Refused { reason } => {
                string::check(reason)?
            }
            _ => {}
        }
        let len = self.repr.packet_len();
        if len > MAX_PACKET_LEN {
            return Err(Error::BadLength);
        }
        // Everything but DATA/LDATA is a multiple of 4 long, so len is also the wire length.
        let out = buf.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        header::write(out, self.repr.packet_type(), len, lp, fp);
        match &self.repr {
            Repr::Open(o) | Repr::Response(o) => o.emit(out)?,
            Repr::Quit { reason } | Repr::Abort { reason } | Repr::Refused { reason } => {
                string::emit(reason, out.get_mut(HEADER_LEN..).unwrap_or(&mut []))?
            }
            Repr::NullAck(n) => n.emit(out)?,
            Repr::Feedback(b) => b.emit(out)?,
            Repr::Control(c) => c.emit(out.get_mut(HEADER_LEN..).unwrap_or(&mut []))?,
            Repr::Keepalive | Repr::QuitAck | Repr::Done | Repr::Data(_) | Repr::LData(_) => {}
        }
        let sum = checksum(out.get(hfields::CHECKSUM.end..).unwrap_or(&[]));
        field::set_u16(out, hfields::CHECKSUM, sum);
        Ok(len)
    }
}

impl fmt::Display for Packet<'_> {
    /// One tcpdump-style line, e.g. `DATA 1000>2000 buf=3 pkt=7 hack=2 len=1990 L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}>{}",
            self.repr.packet_type(),
            self.local_port,
            self.foreign_port
        )?;
        match &self.repr {
            Repr::Open(o) | Repr::Response(o) => write!(f, " {o}"),
            Repr::Keepalive | Repr::QuitAck | Repr::Done => Ok(()),
            Repr::Quit { reason } | Repr::Abort { reason } | Repr::Refused { reason } => {
                write!(f, " reason=\"{}\"", reason.escape_ascii())
            }
            Repr::Data(d) | Repr::LData(d) => {
                write!(
                    f,
                    " buf={} pkt={} hack={} len={}",
                    d.buffer,
                    d.packet,
                    d.high_ack,
                    d.data.len()
                )?;
                if d.last_buffer {
                    f.write_str(" L")?;
                }
                Ok(())
            }
            Repr::NullAck(n) => write!(
                f,
                " hack={} burst={}/{}ms",
                n.high_ack, n.burst_size, n.burst_interval_ms
            ),
            Repr::Feedback(b) => write!(
                f,
                " echo={}/{} hold={}us arrived={}/{}B lost={} seq={}",
                b.echo_buffer,
                b.echo_packet,
                b.hold_us,
                b.arrived_packets,
                b.arrived_bytes,
                b.lost_packets,
                b.seq
            ),
            Repr::Control(c) => {
                if c.is_empty() {
                    Ok(())
                } else {
                    write!(f, " {c}")
                }
            }
        }
    }
}
