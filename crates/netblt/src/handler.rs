//! Handing received data to your own code: [`DataHandler`].

use std::net::SocketAddr;

/// One incoming transfer, as a [`DataHandler`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IncomingTransfer {
    /// The name the sender gave, or `sink` for a memory-to-memory test
    /// (`netblt bench`). It comes from the network, checked as a directory
    /// receiver checks it: a relative path with `/` between non-empty
    /// components, none `.` or `..`, no NUL or backslash (other names are
    /// refused before the handler is asked). A component may still name a
    /// link in your own directory: open what you join it to with care.
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
///
/// A handler that panics fails the transfer it was called for, like an
/// `Err` (the sender is told "the receiver's handler panicked"), and goes
/// on serving later transfers: do not leave its state half-changed across
/// a panic.
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

/// Runs `f` on the handler. A panic in it is caught while the lock is held
/// (so the mutex is not poisoned) and becomes an `Err` that fails only the
/// transfer: a panicking handler had hung its sender until the death timer
/// and, its mutex poisoned, refused every later transfer.
pub(crate) fn call<R>(
    h: &SharedHandler,
    f: impl FnOnce(&mut dyn DataHandler) -> Result<R, String>,
) -> Result<R, String> {
    // A poisoned lock can only come from a panic outside `f`; the handler
    // is the application's, and it is still the one to ask.
    let mut guard = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let handler: &mut dyn DataHandler = &mut *guard;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(handler))) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned());
            Err(match what {
                Some(m) => format!("the receiver's handler panicked: {m}"),
                None => "the receiver's handler panicked".to_string(),
            })
        }
    }
}
