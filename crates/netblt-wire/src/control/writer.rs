//! [`ControlWriter`]: builds one CONTROL packet in place.

use super::ControlMessage;
use crate::header::{self, fields as hfields};
use crate::{checksum, field, Error, PacketType, HEADER_LEN, MAX_PACKET_LEN};

/// Builds one CONTROL packet in the caller's buffer: messages are appended after the 12-byte
/// header while they fit, and [`finish`](Self::finish) writes the header and checksum.
///
/// The engine typically pushes its pending messages in sequence order until
/// [`push`](Self::push) returns [`Error::BufferTooSmall`], then finishes and sends the packet.
/// The packet never grows past [`MAX_PACKET_LEN`], however large the buffer.
#[derive(Debug)]
pub struct ControlWriter<'b> {
    buf: &'b mut [u8],
    /// Bytes used so far, header included.
    used: usize,
    /// Messages pushed so far.
    count: usize,
}

impl<'b> ControlWriter<'b> {
    /// Starts a CONTROL packet in `buf`; [`Error::BufferTooSmall`] if it is under 12 bytes.
    pub fn new(buf: &'b mut [u8]) -> Result<Self, Error> {
        if buf.len() < HEADER_LEN {
            return Err(Error::BufferTooSmall);
        }
        Ok(ControlWriter {
            buf,
            used: HEADER_LEN,
            count: 0,
        })
    }

    /// Appends `msg`. If it does not fit in the buffer (or would make the packet longer than
    /// 65535 bytes) this returns [`Error::BufferTooSmall`] and writes nothing; a RESEND of more
    /// than 65535 packets is [`Error::BadControl`].
    pub fn push(&mut self, msg: &ControlMessage) -> Result<(), Error> {
        if let ControlMessage::Resend { packets, .. } = msg {
            if packets.len() > usize::from(u16::MAX) {
                return Err(Error::BadControl);
            }
        }
        let end = self
            .used
            .checked_add(msg.buffer_len())
            .ok_or(Error::BufferTooSmall)?;
        if end > self.capacity() {
            return Err(Error::BufferTooSmall);
        }
        let dst = self
            .buf
            .get_mut(self.used..end)
            .ok_or(Error::BufferTooSmall)?;
        let n = msg.emit(dst)?;
        self.used += n;
        self.count += 1;
        Ok(())
    }

    /// The number of messages pushed so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no message has been pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The packet length so far, header included.
    pub fn packet_len(&self) -> usize {
        self.used
    }

    /// How many more bytes of messages fit.
    pub fn remaining(&self) -> usize {
        self.capacity().saturating_sub(self.used)
    }

    fn capacity(&self) -> usize {
        self.buf.len().min(MAX_PACKET_LEN)
    }

    /// Writes the header and checksum and returns the packet length (a multiple of 4, so
    /// there is no trailing padding).
    pub fn finish(self, local_port: u16, foreign_port: u16) -> usize {
        let len = self.used;
        let Some(packet) = self.buf.get_mut(..len) else {
            // Unreachable: `used` never exceeds the buffer.
            return 0;
        };
        header::write(packet, PacketType::Control, len, local_port, foreign_port);
        let sum = checksum(packet.get(hfields::CHECKSUM.end..).unwrap_or(&[]));
        field::set_u16(packet, hfields::CHECKSUM, sum);
        len
    }
}
