//! Error types of the measurement tools.
//!
//! Everything that comes from the network or from the command line ends in one of these
//! variants instead of a panic. The `Display` text is written to stand alone on one line,
//! because the CLI prints exactly that line before exiting non-zero.

use std::io;
use std::net::SocketAddr;

use crate::protocol::ProtocolError;
use crate::transport::Transport;

/// What can go wrong while measuring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// A socket operation failed; `context` says which one and with whom. (Like every
    /// variant here, the cause is left to `source()` rather than repeated in the message, so
    /// `anyhow`'s `{:#}` prints it once.)
    #[error("{context}")]
    Io {
        /// What we were doing, e.g. "connect to 127.0.0.1:7007 (tcp)".
        context: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The peer answered with something our measurement protocol does not allow.
    #[error("protocol error from {peer}")]
    Protocol {
        /// The peer that sent the bad bytes.
        peer: SocketAddr,
        /// What was wrong with them.
        #[source]
        source: ProtocolError,
    },
    /// The echo came back, but not as sent (wrong length or content).
    #[error("echo from {peer} does not match what was sent: {detail}")]
    EchoMismatch {
        /// The peer that echoed.
        peer: SocketAddr,
        /// What differed.
        detail: String,
    },
    /// A message size is not possible on this transport.
    #[error("message size {size} B is not possible over {transport}: the limit is {max} B")]
    SizeOutOfRange {
        /// The size asked for.
        size: usize,
        /// The largest size the transport can carry in one message.
        max: usize,
        /// The transport.
        transport: Transport,
    },
    /// The transport exists in [`Transport`] but is not wired into this tool yet.
    #[error("transport {0} is not available in netblt-measure yet")]
    TransportUnavailable(Transport),
    /// A reliable exchange did not finish in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A configuration value is unusable.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl MeasureError {
    /// Wraps an I/O error with a short description of the operation.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        MeasureError::Io {
            context: context.into(),
            source,
        }
    }
}

/// True for the error kinds a socket read returns when its `SO_RCVTIMEO` expires.
///
/// Linux reports an expired receive timeout as `EAGAIN` (`WouldBlock`); other systems use
/// `ETIMEDOUT`. We treat both as "nothing arrived yet".
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
