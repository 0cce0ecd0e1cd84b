//! Errors: the public [`Error`] enum, and the application's internal form
//! that also carries the short reason sent to the peer.

use crate::report::TransferReport;

/// Why an operation failed. Every variant displays as one line for people.
///
/// The first five say what kind of failure it was (the `netblt` tool maps
/// them to its exit codes); [`Error::Transfer`] wraps one of them together
/// with the report of the transfer that failed, so that its counters are not
/// lost.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Options or transfer parameters that cannot work (a zero packet size,
    /// a name with `..`).
    #[error("{0}")]
    InvalidOptions(String),
    /// A local failure: a file, a permission, a full disk, a thread.
    #[error("{0}")]
    Local(String),
    /// The network: a socket that cannot be opened, a peer unreachable or
    /// refusing datagrams.
    #[error("{0}")]
    Network(String),
    /// Nothing listens at the address: the peer's host answered the first
    /// packets with "port unreachable" before any answer came. Another
    /// address of the same host (its IPv4 or IPv6 one) may have a listener,
    /// and nothing was transferred, so trying it is safe.
    #[error("{0}")]
    Refused(String),
    /// The transfer failed: refused or aborted by the peer, the death timer,
    /// an integrity check, an interruption.
    #[error("{0}")]
    Failed(String),
    /// A transfer ran and did not succeed: its report, whose
    /// [`TransferReport::error`] says why (displayed as that error).
    #[error("{}", .0.error.as_ref().map_or_else(|| "transfer did not complete".to_string(), ToString::to_string))]
    Transfer(Box<TransferReport>),
}

impl std::fmt::Debug for Error {
    /// The variant and its message; for [`Error::Transfer`] the transfer's
    /// name, peer and error, not the whole report (`fn main() -> Result<(),
    /// netblt::Error>` prints this, and the report's counters buried the
    /// reason; [`Error::report`] still has them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidOptions(m) => f.debug_tuple("InvalidOptions").field(m).finish(),
            Error::Local(m) => f.debug_tuple("Local").field(m).finish(),
            Error::Network(m) => f.debug_tuple("Network").field(m).finish(),
            Error::Refused(m) => f.debug_tuple("Refused").field(m).finish(),
            Error::Failed(m) => f.debug_tuple("Failed").field(m).finish(),
            Error::Transfer(r) => f
                .debug_struct("Transfer")
                .field("name", &r.name)
                .field("peer", &r.peer)
                .field("error", &r.error)
                .finish_non_exhaustive(),
        }
    }
}

impl Error {
    /// The underlying error: for [`Error::Transfer`] the report's error,
    /// otherwise `self`.
    pub fn cause(&self) -> &Error {
        match self {
            Error::Transfer(r) => r.error.as_ref().map_or(self, Error::cause),
            other => other,
        }
    }

    /// The failed transfer's report, if the transfer started.
    pub fn report(&self) -> Option<&TransferReport> {
        match self {
            Error::Transfer(r) => Some(r),
            _ => None,
        }
    }
}

/// What kind of failure, without the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    InvalidOptions,
    Local,
    Network,
    Refused,
    Failed,
}

/// An application-level failure: its kind, a line for the user, and a short
/// reason for the peer (ABORT/REFUSED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppError {
    pub(crate) kind: Kind,
    pub(crate) message: String,
    pub(crate) peer_reason: String,
}

impl AppError {
    pub(crate) fn new(
        kind: Kind,
        message: impl Into<String>,
        peer_reason: impl Into<String>,
    ) -> Self {
        AppError {
            kind,
            message: message.into(),
            peer_reason: peer_reason.into(),
        }
    }

    /// A local I/O error on `what` (a path or an action).
    pub(crate) fn io(what: &str, e: &std::io::Error) -> Self {
        let reason = io_reason(e);
        AppError::new(Kind::Local, format!("{what}: {reason}"), reason)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<AppError> for Error {
    fn from(e: AppError) -> Error {
        match e.kind {
            Kind::InvalidOptions => Error::InvalidOptions(e.message),
            Kind::Local => Error::Local(e.message),
            Kind::Network => Error::Network(e.message),
            Kind::Refused => Error::Refused(e.message),
            Kind::Failed => Error::Failed(e.message),
        }
    }
}

/// A short human reason for an I/O error, naming the usual suspects.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "disk full (ENOSPC)".into(),
        Some(libc::EDQUOT) => "disk quota exceeded (EDQUOT)".into(),
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied".into(),
        Some(libc::ENOENT) => "no such file".into(),
        Some(libc::EEXIST) => "file exists (use --force on the receiver)".into(),
        Some(libc::EROFS) => "read-only file system".into(),
        Some(libc::EISDIR) => "is a directory".into(),
        Some(libc::ENAMETOOLONG) => "name too long for the receiver's file system".into(),
        _ => e.to_string(),
    }
}
