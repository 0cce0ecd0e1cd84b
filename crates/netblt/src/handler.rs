//! Handing received data to your own code: [`DataHandler`].

use std::net::SocketAddr;

/// One incoming transfer, as a [`DataHandler`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IncomingTransfer {
    /// The name the sender gave (a relative path), or `sink` for a
    /// memory-to-memory test (`netblt bench`).
    pub name: String,
    /// Bytes that will arrive (without the trailing digest); 0 for a
    /// stream of unknown length (see `stream`).
    pub size: u64,
    /// The sender streams data of unknown length (`netblt send -`): the
    /// transfer ends with its last buffer.
    pub stream: bool,
    /// The data are a bundle of files (`netblt send DIR`): a POSIX tar
    /// stream (pax format) that a directory receiver would unpack. Refuse
    /// it in [`accept`](DataHandler::accept) if you cannot use it.
    pub bundle: bool,
    /// The sender's address.
    pub peer: SocketAddr,
}

/// Takes the data of a [`Receiver`](crate::Receiver)'s transfers.
///
/// One handler serves every transfer; transfers may run at once, each on
/// its own writer thread, so calls for different transfers interleave
/// (never two calls at the same time: the receiver holds the handler in a
/// mutex). Within one transfer, `data` sees the bytes in order, before the
/// digest is checked: only [`end`](DataHandler::end) with `verified = true`
/// says they are the sender's bytes.
///
/// A closure `FnMut(&IncomingTransfer, u64, &[u8]) -> Result<(), String>`
/// is a handler that accepts everything and ignores `end`.
pub trait DataHandler: Send + 'static {
    /// A sender offers a transfer: `Ok` takes it, `Err(reason)` refuses it
    /// (the reason reaches the sender in RFC 998's REFUSED). Takes all by
    /// default.
    fn accept(&mut self, transfer: &IncomingTransfer) -> Result<(), String> {
        let _ = transfer;
        Ok(())
    }

    /// The next `bytes` of `transfer`, starting at byte `offset`. An `Err`
    /// aborts the transfer with that reason.
    fn data(
        &mut self,
        transfer: &IncomingTransfer,
        offset: u64,
        bytes: &[u8],
    ) -> Result<(), String>;

    /// The transfer ended: `verified` is true when every byte arrived and
    /// the BLAKE3 digest matched. Does nothing by default.
    fn end(&mut self, transfer: &IncomingTransfer, verified: bool) {
        let _ = (transfer, verified);
    }
}

impl<F> DataHandler for F
where
    F: FnMut(&IncomingTransfer, u64, &[u8]) -> Result<(), String> + Send + 'static,
{
    fn data(
        &mut self,
        transfer: &IncomingTransfer,
        offset: u64,
        bytes: &[u8],
    ) -> Result<(), String> {
        self(transfer, offset, bytes)
    }
}

/// The handler as the writer threads share it.
pub(crate) type SharedHandler = std::sync::Arc<std::sync::Mutex<dyn DataHandler>>;
