//! What a connection tells its application.

use crate::config::TransferParams;
use crate::time::Duration;

/// An event for the application, from [`Connection::poll_event`](crate::Connection::poll_event).
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The connection is open with these negotiated parameters.
    Connected {
        /// The negotiated parameters.
        params: TransferParams,
        /// The peer's client string from OPEN or RESPONSE.
        peer_client: Vec<u8>,
        /// Transfer size announced in OPEN (0 = not given).
        transfer_size: u32,
    },
    /// Data receiver: a buffer arrived whole. `data.len()` is its size (every
    /// buffer but the last has the negotiated size). Buffers arrive in order.
    BufferReceived {
        /// Buffer number (from 1).
        number: u32,
        /// Its bytes.
        data: Vec<u8>,
        /// The last buffer of the transfer.
        last: bool,
    },
    /// Data sender: the receiver sent OK for this buffer; its storage is given
    /// back for reuse.
    BufferAcked {
        /// Buffer number.
        number: u32,
        /// The storage the application handed over.
        storage: Vec<u8>,
    },
    /// The transfer completed successfully.
    Finished,
    /// The peer's client asked to stop (QUIT); we acknowledged it.
    PeerQuit {
        /// The peer's reason.
        reason: String,
    },
    /// The connection is over without success.
    Closed(ConnectionError),
}

/// Why a connection ended without success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// Nothing heard from the peer for the death timer (RFC 998 §5.2.3).
    #[error("peer silent for {:.0} s: death timer expired", .timeout.as_secs_f64())]
    DeathTimeout {
        /// Our death timer.
        timeout: Duration,
    },
    /// The active end's OPENs went unanswered.
    #[error("no RESPONSE after {attempts} OPEN packets")]
    OpenTimeout {
        /// OPEN packets sent.
        attempts: u32,
    },
    /// The passive end sent REFUSED.
    #[error("connection refused by peer: {reason}")]
    Refused {
        /// Its reason.
        reason: String,
    },
    /// The peer sent ABORT.
    #[error("connection aborted by peer: {reason}")]
    PeerAborted {
        /// Its reason.
        reason: String,
    },
    /// Our application aborted.
    #[error("connection aborted locally: {reason}")]
    LocalAbort {
        /// The reason it gave.
        reason: String,
    },
    /// The peer's client sent QUIT.
    #[error("peer quit: {reason}")]
    PeerQuit {
        /// Its reason.
        reason: String,
    },
    /// Our application sent QUIT and it was acknowledged.
    #[error("transfer stopped by local QUIT: {reason}")]
    LocalQuit {
        /// The reason it gave.
        reason: String,
    },
    /// The RESPONSE broke RFC 998's negotiation rule.
    #[error("negotiation failed: {reason}")]
    Negotiation {
        /// What was wrong.
        reason: String,
    },
}
