//! What a connection tells its application.

use crate::config::TransferParams;
use crate::time::Duration;

/// An event for the application, from [`Connection::poll_event`](crate::Connection::poll_event).
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The connection is open with these negotiated parameters.
    Connected {
        params: TransferParams,
        /// The peer's client string from OPEN or RESPONSE.
        peer_client: Vec<u8>,
        /// Transfer size announced in OPEN (0 = not given).
        transfer_size: u32,
    },
    /// Data receiver: a buffer arrived whole. `data.len()` is its size (every
    /// buffer but the last has the negotiated size). Buffers arrive in order.
    BufferReceived {
        number: u32,
        data: Vec<u8>,
        last: bool,
    },
    /// Data sender: the receiver sent OK for this buffer; its storage is given
    /// back for reuse.
    BufferAcked { number: u32, storage: Vec<u8> },
    /// The transfer completed successfully.
    Finished,
    /// The peer's client asked to stop (QUIT); we acknowledged it.
    PeerQuit { reason: String },
    /// The connection is over without success.
    Closed(ConnectionError),
}

/// Why a connection ended without success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    #[error("peer silent for {:.0} s: death timer expired", .timeout.as_secs_f64())]
    DeathTimeout { timeout: Duration },
    #[error("no RESPONSE after {attempts} OPEN packets")]
    OpenTimeout { attempts: u32 },
    #[error("connection refused by peer: {reason}")]
    Refused { reason: String },
    #[error("connection aborted by peer: {reason}")]
    PeerAborted { reason: String },
    #[error("connection aborted locally: {reason}")]
    LocalAbort { reason: String },
    #[error("peer quit: {reason}")]
    PeerQuit { reason: String },
    #[error("transfer stopped by local QUIT: {reason}")]
    LocalQuit { reason: String },
    #[error("negotiation failed: {reason}")]
    Negotiation { reason: String },
}
