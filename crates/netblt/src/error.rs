//! Errors: the public [`Error`] enum, and the application's internal form
//! that also carries the short reason sent to the peer.

use crate::report::TransferReport;

/// Why an operation failed. Every variant displays as one line for people.
///
/// The first five say what kind of failure it was (the `netblt` tool maps
/// them to its exit codes); [`Error::Transfer`] wraps one of them together
/// with the report of the transfer that failed, so that its counters are not
/// lost.
///
/// For a program, [`Error::kind`] says why, in a form to match on (set where
/// the failure was found, never read back from the message), looking
/// through [`Error::Transfer`]; [`Error::is_timeout`],
/// [`Error::is_cancelled`] and [`Error::partial_kept`] answer the usual
/// questions:
///
/// ```no_run
/// use netblt::{ErrorKind, PeerReason};
///
/// # fn main() {
/// let opts = netblt::SendOptions::new();
/// let addr: std::net::SocketAddr = "192.0.2.1:2998".parse().unwrap();
/// match netblt::send_file("data.bin", addr, &opts) {
///     Ok(report) => println!("sent {} bytes", report.bytes),
///     Err(e) => match e.kind() {
///         ErrorKind::RefusedByPeer(PeerReason::FileExists) => {
///             eprintln!("already there; the receiver needs ReceiverOptions::overwrite")
///         }
///         ErrorKind::NothingListening | ErrorKind::ConnectTimeout => {
///             eprintln!("no receiver: {e}")
///         }
///         _ if e.is_cancelled() => eprintln!("stopped"),
///         _ if e.partial_kept() => eprintln!("interrupted: SendOptions::resume sends the rest"),
///         other => eprintln!("failed ({other:?}): {e}"),
///     },
/// }
/// # }
/// ```
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

    /// Why it failed, to match on: for [`Error::Transfer`] its cause's kind
    /// as found during the transfer ([`TransferReport::error_kind`]). An
    /// error built outside this crate, and one returned before a transfer
    /// started, has the kind its variant says: `InvalidOptions`,
    /// `Local { io: None }`, `Network`, `NothingListening` (for
    /// [`Error::Refused`]) or `Other` (for [`Error::Failed`]); except an
    /// [`Error::Local`] whose message says its I/O error's kind, which is
    /// `Local { io: Some(..) }`: one ending in ": file exists" (this
    /// crate's words for a file it does not replace without
    /// [`SendOptions::overwrite`](crate::SendOptions::overwrite), as
    /// [`get`](crate::get) returns before asking anyone) is
    /// `AlreadyExists`, and so on for this crate's other words of an I/O
    /// error ("no such file", "permission denied", "disk full (ENOSPC)",
    /// ...); one ending in an OS error as the standard library displays it,
    /// `"... (os error N)"` (`format!("{path}: {e}")` of an
    /// [`std::io::Error`] from the system), has the kind of errno `N`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Transfer(r) => r.error_kind().unwrap_or(ErrorKind::Other),
            Error::InvalidOptions(_) => ErrorKind::InvalidOptions,
            // F25: the variant holds a bare String, and a field or a new
            // variant would break every caller that builds or matches
            // `Error::Local(m)`; the crate's own ending for this one failure
            // is its side channel (a caller's error in the same words means
            // the same thing).
            // F27: every ending `io_reason` writes ("PATH: no such file",
            // "PATH: permission denied", ...) reads back as its I/O kind,
            // from the one table both use.
            // F28: so does an OS message passed through ("... (os error
            // N)", std's form of an OS error), by its errno.
            Error::Local(m) => ErrorKind::Local {
                io: io_kind_of_message(m),
            },
            Error::Network(_) => ErrorKind::Network,
            Error::Refused(_) => ErrorKind::NothingListening,
            Error::Failed(_) => ErrorKind::Other,
        }
    }

    /// A timer gave up: no answer to the OPEN ([`ErrorKind::ConnectTimeout`])
    /// or the peer went silent ([`ErrorKind::PeerSilent`]).
    pub fn is_timeout(&self) -> bool {
        self.kind().is_timeout()
    }

    /// Stopped at this end: the stop flag
    /// ([`SendOptions::stop`](crate::SendOptions::stop)) or a dropped
    /// [`netblt::tokio`](crate) future ([`ErrorKind::Cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.kind() == ErrorKind::Cancelled
    }

    /// Whether the receiving end kept its partial copy (decision F4, as
    /// this crate's receiver does), so that a resumed transfer
    /// ([`SendOptions::resume`](crate::SendOptions::resume)) sends only the
    /// rest: see [`ErrorKind::partial_kept`].
    pub fn partial_kept(&self) -> bool {
        self.kind().partial_kept()
    }
}

/// Why an operation failed, without the message: what [`Error::kind`]
/// returns. New kinds may be added; match with a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Options or parameters that cannot work ([`Error::InvalidOptions`]).
    InvalidOptions,
    /// A local failure ([`Error::Local`]): a file, a permission, a full
    /// disk, a thread. `io` is the I/O error's kind when the failure was
    /// one (`StorageFull` for a full disk, `PermissionDenied`,
    /// `AlreadyExists` for a file this end will not replace without
    /// `overwrite`, `NotFound`, `ResourceBusy` for a name another transfer
    /// holds).
    Local {
        /// The I/O error's kind, when known.
        io: Option<std::io::ErrorKind>,
    },
    /// The network: a socket that cannot be opened, a host unreachable, a
    /// peer gone ([`Error::Network`]).
    Network,
    /// The kernel refused datagrams larger than the path allows (its MTU,
    /// `EMSGSIZE`; an [`Error::Network`]): a smaller
    /// [`TransferParams::packet_size`](crate::proto::TransferParams) fits (1400
    /// bytes on a 1500-byte path).
    PacketTooLarge,
    /// Nothing listens at the address: "port unreachable" before any
    /// answer ([`Error::Refused`]).
    NothingListening,
    /// No answer to the OPEN: the host is down, a firewall drops UDP, or no
    /// receiver (of this handshake version) listens.
    ConnectTimeout,
    /// The peer went silent for the death timer during the transfer.
    PeerSilent,
    /// Stopped at this end: the stop flag, a cancelled or dropped
    /// [`netblt::tokio`](crate) transfer.
    Cancelled,
    /// The peer refused the transfer (REFUSED, before any data), for this
    /// reason.
    RefusedByPeer(PeerReason),
    /// The peer aborted the transfer (ABORT), for this reason; or its
    /// receiver ended it with a QUIT listing a bundle's entries it could not
    /// store ([`PeerReason::EntriesNotStored`]).
    AbortedByPeer(PeerReason),
    /// The receiver's key is not the one pinned for its address in
    /// `known_hosts`: someone may be in the middle, or the receiver's key
    /// was replaced.
    HostKeyChanged,
    /// The encrypted handshake failed: a one-time code that does not match,
    /// a malformed or unauthentic answer.
    Handshake,
    /// The data did not check: a digest or a size that does not match.
    Integrity,
    /// Anything else; the message says what.
    Other,
}

impl ErrorKind {
    /// [`ConnectTimeout`](Self::ConnectTimeout) or
    /// [`PeerSilent`](Self::PeerSilent).
    pub fn is_timeout(&self) -> bool {
        matches!(self, ErrorKind::ConnectTimeout | ErrorKind::PeerSilent)
    }

    /// Whether the receiving end keeps its partial copy after a failure of
    /// this kind (decision F4, as this crate's receiver does): an
    /// interruption at either end, the peer gone silent, or a network
    /// error keep it, and a resumed transfer sends only the rest; an
    /// integrity failure, a full disk or a write error remove it, and a
    /// refusal made none.
    pub fn partial_kept(&self) -> bool {
        matches!(
            self,
            ErrorKind::Network
                | ErrorKind::PacketTooLarge
                | ErrorKind::Cancelled
                | ErrorKind::PeerSilent
                | ErrorKind::AbortedByPeer(PeerReason::Cancelled)
        )
    }
}

/// Why the peer refused or aborted a transfer: its reason on the wire
/// (RFC 998's REFUSED and ABORT carry a short text), read as one of the
/// reasons this crate's own receiver and sender give
/// ([`PeerReason::from_wire`]); anything else is
/// [`Other`](Self::Other) with the text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerReason {
    /// The file exists at the receiver, which does not replace files
    /// ([`ReceiverOptions::overwrite`](crate::ReceiverOptions::overwrite)
    /// is off), or exists there and differs.
    FileExists,
    /// The receiver already has the whole file (same size and modification
    /// time): a resumed transfer has nothing to send.
    AlreadyThere,
    /// The sender's key is not in the receiver's `authorized_keys`.
    NotAuthorized,
    /// The receiver requires encryption and this end sent plain RFC 998
    /// ([`Security::Insecure`](crate::Security)).
    EncryptionRequired,
    /// The receiver runs plain RFC 998 and this end requires encryption.
    PeerInsecure,
    /// A one-time code that does not match the receiver's.
    CodeMismatch,
    /// The receiver waits for a one-time code and this end gave none
    /// ([`Encryption::code`](crate::Encryption)).
    CodeRequired,
    /// This end gave a one-time code and the receiver waits for none: it
    /// authenticates by keys.
    CodeNotExpected,
    /// A `get` from a receiver that does not serve files
    /// ([`ReceiverOptions::serve`](crate::ReceiverOptions)).
    ReadingNotEnabled,
    /// A name the receiver does not take (absolute, `..`, too long).
    NameNotAllowed,
    /// Another transfer of the same name is in progress at the receiver.
    Busy,
    /// The receiver is shutting down.
    ShuttingDown,
    /// The peer does not know the operation asked for (`"bundle"`,
    /// `"same"`, `"have"`): a version older than the one that brought it.
    UnknownOperation(String),
    /// The peer's user or program stopped the transfer.
    Cancelled,
    /// The receiver's disk (or quota) is full.
    DiskFull,
    /// The data did not check at the peer.
    Integrity,
    /// The receiver of a bundle could not store some of its entries (a
    /// QUIT listing them, one per line, in the error's message); the
    /// others are in place. `exists`: one or more of them because a file
    /// of that name is there and differs, which a receiver replaces only
    /// with [`ReceiverOptions::overwrite`](crate::ReceiverOptions::overwrite).
    EntriesNotStored {
        /// Some entries exist at the receiver (and differ).
        exists: bool,
    },
    /// Another reason (a [`DataHandler`](crate::DataHandler)'s own words,
    /// an older or another implementation's): its text.
    Other(String),
}

impl PeerReason {
    /// Reads a REFUSED's or ABORT's reason: the texts this crate sends
    /// (current and earlier wordings) as their kind, anything else as
    /// [`Other`](Self::Other). Never fails.
    pub fn from_wire(reason: &str) -> PeerReason {
        use crate::app::meta::{ALREADY_THERE, DIFFERS_THERE, DIFFERS_THERE_OLD};
        use crate::driver::secure::{IS_INSECURE, NEEDS_ENCRYPTION};
        let r = reason.trim();
        // Exact reasons first, then the families that carry a name, a key
        // or a count.
        match r {
            WIRE_FILE_EXISTS | WIRE_FILE_EXISTS_OLD | WIRE_DIFFERS | WIRE_DIFFERS_OLD => {
                return PeerReason::FileExists
            }
            ALREADY_THERE => return PeerReason::AlreadyThere,
            DIFFERS_THERE | DIFFERS_THERE_OLD => return PeerReason::FileExists,
            NEEDS_ENCRYPTION => return PeerReason::EncryptionRequired,
            IS_INSECURE => return PeerReason::PeerInsecure,
            crate::app::names::NOT_ALLOWED => return PeerReason::NameNotAllowed,
            WIRE_NOT_SERVING | WIRE_NOT_SERVING_OLD => return PeerReason::ReadingNotEnabled,
            WIRE_SHUTTING_DOWN => return PeerReason::ShuttingDown,
            WIRE_CODE_MISMATCH => return PeerReason::CodeMismatch,
            WIRE_WANTS_CODE | WIRE_WANTS_CODE_OLD => return PeerReason::CodeRequired,
            WIRE_TAKES_NO_CODE | WIRE_TAKES_NO_CODE_OLD => return PeerReason::CodeNotExpected,
            "interrupted" | "interrupted by the user" | "receiver interrupted" => {
                return PeerReason::Cancelled
            }
            "size mismatch" | "digest mismatch" => return PeerReason::Integrity,
            _ => {}
        }
        if let Some(exists) = not_stored(r) {
            return PeerReason::EntriesNotStored { exists };
        }
        if let Some(op) = r
            .strip_prefix("unknown operation '")
            .and_then(|o| o.strip_suffix('\''))
        {
            PeerReason::UnknownOperation(op.to_string())
        } else if r.starts_with("key ") && r.contains(" is not authorized") {
            PeerReason::NotAuthorized
        } else if r.starts_with("busy: ") {
            PeerReason::Busy
        } else if r.starts_with("disk full") || r.starts_with("disk quota exceeded") {
            PeerReason::DiskFull
        } else if r.starts_with("digest mismatch") {
            PeerReason::Integrity
        } else if r.starts_with("this receiver requires encryption") {
            PeerReason::EncryptionRequired
        } else if r.starts_with("this receiver runs --insecure") {
            // Before F20: "this receiver runs --insecure (plain RFC 998):
            // add --insecure on the sender, or drop it on the receiver".
            PeerReason::PeerInsecure
        } else {
            PeerReason::Other(r.to_string())
        }
    }
}

/// The reasons [`PeerReason::from_wire`] knows by their exact text, the
/// ones this version sends and (`..._OLD`) the wordings of versions before
/// F20 and F25, which named the tool's flags.
///
/// A put of a file that exists at a receiver without `overwrite`
/// ([`PeerReason::FileExists`]); also this end's word for a file it does
/// not replace (`get`, a bundle's entry: EEXIST).
pub(crate) const WIRE_FILE_EXISTS: &str = "file exists";
const WIRE_FILE_EXISTS_OLD: &str = "file exists (use --force on the receiver)";
/// A bundle's entry that exists and differs (a QUIT line, an ABORT).
pub(crate) const WIRE_DIFFERS: &str = "file exists and differs";
const WIRE_DIFFERS_OLD: &str = "file exists and differs (use --force on the receiver)";
/// The same two as a client fetching a directory said them before F25 (its
/// own `--force` meant), in its QUIT to the server.
const WIRE_FILE_EXISTS_FETCH_OLD: &str = "file exists (use --force)";
const WIRE_DIFFERS_FETCH_OLD: &str = "file exists and differs (use --force)";
/// A `get` from a receiver that serves nothing.
pub(crate) const WIRE_NOT_SERVING: &str = "reading not enabled";
const WIRE_NOT_SERVING_OLD: &str = "reading not enabled (start the receiver with --serve)";
/// A new transfer while the receiver stops.
pub(crate) const WIRE_SHUTTING_DOWN: &str = "receiver shutting down";
/// One-time codes (the driver's secure layer).
const WIRE_CODE_MISMATCH: &str = "the one-time code does not match";
pub(crate) const WIRE_WANTS_CODE: &str = "this receiver waits for a one-time code";
const WIRE_WANTS_CODE_OLD: &str = "this receiver waits for a one-time code: use send --code";
pub(crate) const WIRE_TAKES_NO_CODE: &str = "this receiver takes no one-time code";
const WIRE_TAKES_NO_CODE_OLD: &str = "this receiver takes no one-time code: run recv --code";
/// Before F20, a refused key's reason ended so.
const NOT_AUTHORIZED_OLD_TAIL: &str = " (add the sender's `netblt id` line to the receiver's \
     authorized_keys, or run recv --accept-any)";
/// The first line of a bundle receiver's QUIT: "N of M entries could not be
/// stored at the receiver" (`FilesReport::quit_reason`).
const NOT_STORED_TAIL: &str = " entries could not be stored at the receiver";

/// A bundle receiver's QUIT list: `Some(exists)` when `r` is one, `exists`
/// when an entry's line (`NAME: REASON`) says the file exists there, in
/// this version's words or an older one's.
fn not_stored(r: &str) -> Option<bool> {
    let mut lines = r.lines();
    let (n, m) = lines
        .next()?
        .strip_suffix(NOT_STORED_TAIL)?
        .split_once(" of ")?;
    if n.parse::<u64>().is_err() || m.parse::<u64>().is_err() {
        return None;
    }
    let exists = lines.any(|l| {
        let l = l.trim_end();
        let said = |w: &str| l.strip_suffix(w).is_some_and(|name| name.ends_with(": "));
        said(WIRE_FILE_EXISTS) || said(WIRE_DIFFERS) || ENTRY_OLD.iter().any(|(o, _)| said(o))
    });
    Some(exists)
}

/// An entry's reasons that said its file exists at the receiver before F25,
/// and what this version says ([`neutral`]).
const ENTRY_OLD: [(&str, &str); 4] = [
    (WIRE_FILE_EXISTS_OLD, WIRE_FILE_EXISTS),
    (WIRE_DIFFERS_OLD, WIRE_DIFFERS),
    (WIRE_FILE_EXISTS_FETCH_OLD, WIRE_FILE_EXISTS),
    (WIRE_DIFFERS_FETCH_OLD, WIRE_DIFFERS),
];

/// A peer's reason as this end says it: the tool's advice the wordings
/// before F20 and F25 carried (see [`WIRE_FILE_EXISTS`]) left out, for the
/// program that knows the [`PeerReason`] to give its own. A reason of many
/// lines (a bundle receiver's QUIT list) is read line by line, an entry's
/// `NAME: REASON` by its reason.
pub(crate) fn neutral(reason: &str) -> String {
    // Split on '\n' alone: the peer's other characters stay as sent.
    reason
        .trim()
        .split('\n')
        .map(neutral_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn neutral_line(r: &str) -> String {
    let old = [
        (WIRE_NOT_SERVING_OLD, WIRE_NOT_SERVING),
        (WIRE_WANTS_CODE_OLD, WIRE_WANTS_CODE),
        (WIRE_TAKES_NO_CODE_OLD, WIRE_TAKES_NO_CODE),
        (
            crate::app::meta::DIFFERS_THERE_OLD,
            crate::app::meta::DIFFERS_THERE,
        ),
        (
            "this receiver requires encryption: run the sender without --insecure",
            crate::driver::secure::NEEDS_ENCRYPTION,
        ),
        (
            "this receiver runs --insecure (plain RFC 998): add --insecure on the sender, or \
             drop it on the receiver",
            crate::driver::secure::IS_INSECURE,
        ),
    ];
    if let Some((_, new)) = old.iter().chain(&ENTRY_OLD).find(|(o, _)| *o == r) {
        return (*new).to_string();
    }
    // A bundle's entry: "NAME: REASON" (the name is the peer's, any text).
    for (o, new) in &ENTRY_OLD {
        if let Some(name) = r.strip_suffix(o).and_then(|n| n.strip_suffix(": ")) {
            return format!("{name}: {new}");
        }
    }
    r.strip_suffix(NOT_AUTHORIZED_OLD_TAIL)
        .unwrap_or(r)
        .to_string()
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
    /// What the program is told ([`Error::kind`]): by default the one
    /// `kind` implies, set by [`AppError::because`] where more is known.
    pub(crate) reason: ErrorKind,
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
            reason: kind.default_reason(),
            message: message.into(),
            peer_reason: peer_reason.into(),
        }
    }

    /// The same failure, with what the program is told.
    pub(crate) fn because(mut self, reason: ErrorKind) -> Self {
        self.reason = reason;
        self
    }

    /// A local I/O error on `what` (a path or an action).
    pub(crate) fn io(what: &str, e: &std::io::Error) -> Self {
        let reason = io_reason(e);
        AppError::new(Kind::Local, format!("{what}: {reason}"), reason)
            .because(ErrorKind::Local { io: Some(e.kind()) })
    }
}

impl Kind {
    /// The [`ErrorKind`] an error of this kind has when nothing more is
    /// known.
    pub(crate) fn default_reason(self) -> ErrorKind {
        match self {
            Kind::InvalidOptions => ErrorKind::InvalidOptions,
            Kind::Local => ErrorKind::Local { io: None },
            Kind::Network => ErrorKind::Network,
            Kind::Refused => ErrorKind::NothingListening,
            Kind::Failed => ErrorKind::Other,
        }
    }
}

/// A connection's failure as the program is told it ([`Error::kind`]): the
/// peer's REFUSED and ABORT reasons read once, here.
pub(crate) fn connection_kind(e: &netblt_proto::ConnectionError) -> ErrorKind {
    use netblt_proto::ConnectionError as E;
    match e {
        E::DeathTimeout { .. } => ErrorKind::PeerSilent,
        E::OpenTimeout { .. } => ErrorKind::ConnectTimeout,
        E::Refused { reason } => ErrorKind::RefusedByPeer(PeerReason::from_wire(reason)),
        E::PeerAborted { reason } => ErrorKind::AbortedByPeer(PeerReason::from_wire(reason)),
        // A QUIT from this crate's receivers lists a bundle's entries it
        // could not store; another's QUIT is its own words.
        E::PeerQuit { reason } => match PeerReason::from_wire(reason) {
            r @ PeerReason::EntriesNotStored { .. } => ErrorKind::AbortedByPeer(r),
            _ => ErrorKind::Other,
        },
        _ => ErrorKind::Other,
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<AppError> for Error {
    /// The variant `kind` says (the `reason` is the report's:
    /// [`TransferReport::error_kind`]).
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

/// The words [`io_reason`] gives the usual suspects, by errno, and the I/O
/// kind each stands for. [`Error::kind`] reads an [`Error::Local`] ending
/// in ": WORDS" as that kind (F25 for "file exists", F27 for all): the
/// variant holds a bare `String`, and this crate's own words are the side
/// channel, so the words and the kinds live in this one table.
///
/// F28: a row without an errno is words this crate writes itself for a
/// failure it found without an I/O error ("no such directory" for a
/// destination's parent that is missing), read back all the same; and the
/// words may be followed by advice in parentheses ("no such directory
/// (create it first)").
const IO_WORDS: [(&[i32], &str, Option<std::io::ErrorKind>); 13] = {
    use std::io::ErrorKind as K;
    [
        (&[libc::ENOSPC], "disk full (ENOSPC)", Some(K::StorageFull)),
        (
            &[libc::EDQUOT],
            "disk quota exceeded (EDQUOT)",
            Some(K::QuotaExceeded),
        ),
        (
            &[libc::EACCES, libc::EPERM],
            "permission denied",
            Some(K::PermissionDenied),
        ),
        (&[libc::ENOENT], "no such file", Some(K::NotFound)),
        // No advice (F25): the tool gives its own from the kind.
        (&[libc::EEXIST], WIRE_FILE_EXISTS, Some(K::AlreadyExists)),
        (
            &[libc::EROFS],
            "read-only file system",
            Some(K::ReadOnlyFilesystem),
        ),
        (&[libc::EISDIR], "is a directory", Some(K::IsADirectory)),
        // F28: a receiver's port taken, an address that is not this
        // host's (the socket's errors, `driver::socket_error`).
        (
            &[libc::EADDRINUSE],
            "address already in use",
            Some(K::AddrInUse),
        ),
        (
            &[libc::EADDRNOTAVAIL],
            "address not available on this host",
            Some(K::AddrNotAvailable),
        ),
        // F28: this crate's words without an errno (`get`'s destination,
        // a receiver's directory).
        (&[], "no such directory", Some(K::NotFound)),
        (&[], "not a directory", Some(K::NotADirectory)),
        // A partial file another transfer holds (`PartFile::open`, whose
        // `AppError` says so for reports; a `get` returns it directly).
        (
            &[],
            "another transfer of this name is in progress",
            Some(K::ResourceBusy),
        ),
        (
            &[libc::ENAMETOOLONG],
            "name too long for the receiver's file system",
            None,
        ),
    ]
};

/// A direct [`Error::Local`] for an I/O error at `path`: "PATH: REASON" in
/// [`io_reason`]'s words, which [`Error::kind`] reads back as the io kind
/// (F27).
pub(crate) fn local_io(path: &std::path::Path, e: &std::io::Error) -> Error {
    Error::Local(format!("{}: {}", path.display(), io_reason(e)))
}

/// A short human reason for an I/O error, naming the usual suspects.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    let errno = e.raw_os_error();
    IO_WORDS
        .iter()
        .find(|(nos, _, _)| errno.is_some_and(|n| nos.contains(&n)))
        .map_or_else(|| e.to_string(), |(_, words, _)| (*words).to_string())
}

/// The I/O kind an [`Error::Local`]'s message says: its last
/// ": "-separated part in [`IO_WORDS`]' words (F27), else an OS error as
/// the standard library displays it at its end (F28).
fn io_kind_of_message(m: &str) -> Option<std::io::ErrorKind> {
    m.rsplit_once(": ")
        .and_then(|(_, words)| io_kind_of_words(words))
        .or_else(|| os_error_kind(m))
}

/// The I/O kind [`io_reason`]'s `words` stand for, if they are its own,
/// alone or followed by advice in parentheses.
fn io_kind_of_words(words: &str) -> Option<std::io::ErrorKind> {
    IO_WORDS
        .iter()
        .find(|(_, w, _)| {
            words
                .strip_prefix(w)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(" ("))
        })
        .and_then(|(_, _, k)| *k)
}

/// The kind of the OS error at the end of `m`, as `std::io::Error`
/// displays one from the system: "MESSAGE (os error N)" (the errno
/// passed through by [`io_reason`] and by `format!("{e}")`).
fn os_error_kind(m: &str) -> Option<std::io::ErrorKind> {
    let n = m
        .trim_end()
        .strip_suffix(')')?
        .rsplit_once(" (os error ")?
        .1
        .parse::<i32>()
        .ok()?;
    Some(std::io::Error::from_raw_os_error(n).kind())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason this crate sends, and the wordings before F20, read as
    /// its kind; anything else kept with its text.
    #[test]
    fn wire_reasons_read_as_their_kind() {
        use crate::driver::secure::{IS_INSECURE, NEEDS_ENCRYPTION};
        use PeerReason as P;
        let cases: &[(&str, PeerReason)] = &[
            (WIRE_FILE_EXISTS, P::FileExists),
            ("file exists (use --force on the receiver)", P::FileExists),
            (
                "file exists and differs (use --force on the receiver)",
                P::FileExists,
            ),
            (crate::app::meta::DIFFERS_THERE, P::FileExists),
            (crate::app::meta::ALREADY_THERE, P::AlreadyThere),
            ("key nbfp:abc is not authorized", P::NotAuthorized),
            (
                "key nbfp:abc is not authorized (add the sender's `netblt id` line to the \
                 receiver's authorized_keys, or run recv --accept-any)",
                P::NotAuthorized,
            ),
            (NEEDS_ENCRYPTION, P::EncryptionRequired),
            (
                "this receiver requires encryption: run the sender without --insecure",
                P::EncryptionRequired,
            ),
            (IS_INSECURE, P::PeerInsecure),
            (
                "this receiver runs --insecure (plain RFC 998): add --insecure on the sender, \
                 or drop it on the receiver",
                P::PeerInsecure,
            ),
            ("the one-time code does not match", P::CodeMismatch),
            (WIRE_WANTS_CODE, P::CodeRequired),
            (
                "this receiver waits for a one-time code: use send --code",
                P::CodeRequired,
            ),
            (WIRE_TAKES_NO_CODE, P::CodeNotExpected),
            (
                "this receiver takes no one-time code: run recv --code",
                P::CodeNotExpected,
            ),
            (
                "the complete copy at the client differs from the server's file (size or \
                 modification time): use --force to replace it",
                P::FileExists,
            ),
            (
                "2 of 9 entries could not be stored at the receiver\nt/a: permission denied\n\
                 t/b: file exists and differs",
                P::EntriesNotStored { exists: true },
            ),
            (
                "1 of 3 entries could not be stored at the receiver\nt/b: file exists and \
                 differs (use --force on the receiver)\n(and 4 more)",
                P::EntriesNotStored { exists: true },
            ),
            (
                "1 of 3 entries could not be stored at the receiver\nt/a: permission denied",
                P::EntriesNotStored { exists: false },
            ),
            (
                "x of 3 entries could not be stored at the receiver",
                P::Other("x of 3 entries could not be stored at the receiver".into()),
            ),
            (WIRE_NOT_SERVING, P::ReadingNotEnabled),
            (
                "reading not enabled (start the receiver with --serve)",
                P::ReadingNotEnabled,
            ),
            (crate::app::names::NOT_ALLOWED, P::NameNotAllowed),
            (
                "busy: another transfer of this name is in progress (...)",
                P::Busy,
            ),
            ("receiver shutting down", P::ShuttingDown),
            ("interrupted", P::Cancelled),
            ("interrupted by the user", P::Cancelled),
            ("receiver interrupted", P::Cancelled),
            ("disk full (ENOSPC)", P::DiskFull),
            ("disk quota exceeded (EDQUOT)", P::DiskFull),
            ("digest mismatch", P::Integrity),
            ("size mismatch", P::Integrity),
            (
                "unknown operation 'bundle'",
                P::UnknownOperation("bundle".into()),
            ),
            (
                "handler gave up at 2 MB",
                P::Other("handler gave up at 2 MB".into()),
            ),
            ("", P::Other(String::new())),
            (
                "unknown operation '",
                P::Other("unknown operation '".into()),
            ),
            ("\u{0}\u{ffff} key", P::Other("\u{0}\u{ffff} key".into())),
        ];
        for (wire, want) in cases {
            assert_eq!(&PeerReason::from_wire(wire), want, "{wire:?}");
        }
    }

    #[test]
    fn old_wordings_lose_the_tools_advice_and_new_ones_stay() {
        assert_eq!(
            neutral("file exists (use --force on the receiver)"),
            "file exists"
        );
        assert_eq!(
            neutral("reading not enabled (start the receiver with --serve)"),
            "reading not enabled"
        );
        assert_eq!(
            neutral(
                "key nbfp:x is not authorized (add the sender's `netblt id` line to the \
                 receiver's authorized_keys, or run recv --accept-any)"
            ),
            "key nbfp:x is not authorized"
        );
        assert_eq!(neutral("handler gave up"), "handler gave up");
        // F25: the code refusals, a `get --resume`'s differing copy.
        assert_eq!(
            neutral("this receiver waits for a one-time code: use send --code"),
            WIRE_WANTS_CODE
        );
        assert_eq!(
            neutral("this receiver takes no one-time code: run recv --code"),
            WIRE_TAKES_NO_CODE
        );
        assert_eq!(
            neutral(crate::app::meta::DIFFERS_THERE_OLD),
            crate::app::meta::DIFFERS_THERE
        );
        // A bundle's QUIT list, line by line; an entry's name is kept
        // whatever it says.
        assert_eq!(
            neutral(
                "2 of 5 entries could not be stored at the receiver\n\
                 t/b: file exists and differs (use --force on the receiver)\n\
                 t/x: y: file exists (use --force)\nt/c: permission denied"
            ),
            "2 of 5 entries could not be stored at the receiver\nt/b: file exists and differs\n\
             t/x: y: file exists\nt/c: permission denied"
        );
        for r in [
            WIRE_FILE_EXISTS,
            WIRE_NOT_SERVING,
            WIRE_SHUTTING_DOWN,
            WIRE_WANTS_CODE,
            WIRE_TAKES_NO_CODE,
            crate::app::meta::DIFFERS_THERE,
            "t/b: file exists and differs",
        ] {
            assert_eq!(neutral(r), r);
        }
        // No reason this version sends names a flag of the tool.
        for r in [
            WIRE_FILE_EXISTS,
            WIRE_DIFFERS,
            WIRE_NOT_SERVING,
            WIRE_WANTS_CODE,
            WIRE_TAKES_NO_CODE,
            crate::app::meta::DIFFERS_THERE,
            crate::receiver::DISCARDED,
        ] {
            assert!(!r.contains("--"), "{r}");
        }
    }

    /// F25: a `get` to a file that is there returns a direct
    /// `Error::Local`, whose kind its words carry; F27: so do the other
    /// words of `io_reason`, and no others.
    #[test]
    fn a_local_file_exists_is_already_exists() {
        let exists = ErrorKind::Local {
            io: Some(std::io::ErrorKind::AlreadyExists),
        };
        assert_eq!(Error::Local("/tmp/a b: file exists".into()).kind(), exists);
        let e: Error =
            AppError::io("/tmp/x", &std::io::Error::from_raw_os_error(libc::EEXIST)).into();
        assert_eq!(e.to_string(), "/tmp/x: file exists");
        assert_eq!(e.kind(), exists);
        // F27: every ending of `io_reason`'s table reads as its kind, from
        // the words `io_reason` writes for its errno.
        for (errno, kind) in [
            (libc::ENOENT, std::io::ErrorKind::NotFound),
            (libc::EACCES, std::io::ErrorKind::PermissionDenied),
            (libc::EPERM, std::io::ErrorKind::PermissionDenied),
            (libc::ENOSPC, std::io::ErrorKind::StorageFull),
            (libc::EDQUOT, std::io::ErrorKind::QuotaExceeded),
            (libc::EROFS, std::io::ErrorKind::ReadOnlyFilesystem),
            (libc::EISDIR, std::io::ErrorKind::IsADirectory),
            (libc::EEXIST, std::io::ErrorKind::AlreadyExists),
        ] {
            let words = io_reason(&std::io::Error::from_raw_os_error(errno));
            assert_eq!(
                Error::Local(format!("/tmp/a: b: {words}")).kind(),
                ErrorKind::Local { io: Some(kind) },
                "{words}"
            );
        }
        for other in [
            "/tmp/permission denied: x",
            "file exists",
            "/tmp/x: file exists and differs",
            "/tmp/x: name too long for the receiver's file system",
            "/tmp/x: something else",
        ] {
            assert_eq!(
                Error::Local(other.into()).kind(),
                ErrorKind::Local { io: None },
                "{other}"
            );
        }
        assert_eq!(
            Error::Failed("x: file exists".into()).kind(),
            ErrorKind::Other
        );
    }

    /// F28: an `Error::Local` whose message ends in an OS error as `std`
    /// displays it has that errno's kind, whatever the words before; this
    /// crate's words without an errno, and words followed by advice in
    /// parentheses, read as theirs.
    #[test]
    fn an_os_message_passed_through_keeps_its_kind() {
        use std::io::ErrorKind as K;
        let local = |m: &str| Error::Local(m.into()).kind();
        // std's form, which the reading relies on: a change fails here.
        let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
        assert!(
            e.to_string()
                .ends_with(&format!(" (os error {})", libc::ENOTDIR)),
            "{e}"
        );
        for (errno, kind) in [
            (libc::ENOTDIR, K::NotADirectory),
            (libc::ENOTEMPTY, K::DirectoryNotEmpty),
            (libc::EBUSY, K::ResourceBusy),
            (libc::EFBIG, K::FileTooLarge),
            (libc::ENOENT, K::NotFound),
        ] {
            let io = std::io::Error::from_raw_os_error(errno);
            // Through `local_io` (the words pass through when they are not
            // the table's) and through a caller's `format!("{e}")`.
            let via = local_io(std::path::Path::new("/tmp/a: b"), &io);
            assert_eq!(via.kind(), ErrorKind::Local { io: Some(kind) }, "{via}");
            let theirs = format!("thread: {io}");
            assert_eq!(
                local(&theirs),
                ErrorKind::Local { io: Some(kind) },
                "{theirs}"
            );
        }
        // A kind std does not name stably still comes through as std's.
        let eloop = std::io::Error::from_raw_os_error(libc::ELOOP);
        assert_eq!(
            local(&format!("x: {eloop}")),
            ErrorKind::Local {
                io: Some(eloop.kind())
            }
        );
        // The crate's words without an errno, and with advice after them.
        for (m, kind) in [
            ("/d/: no such directory", K::NotFound),
            ("/d: no such directory (create it first)", K::NotFound),
            ("/d: not a directory", K::NotADirectory),
            (
                "/d/x: is a directory (the server sends a file)",
                K::IsADirectory,
            ),
            ("0.0.0.0:2998: address already in use", K::AddrInUse),
            (
                "[::1]:9: address not available on this host",
                K::AddrNotAvailable,
            ),
            (
                "x: file exists (use --force on the receiver)",
                K::AlreadyExists,
            ),
            (
                "/d/f: another transfer of this name is in progress",
                K::ResourceBusy,
            ),
        ] {
            assert_eq!(local(m), ErrorKind::Local { io: Some(kind) }, "{m}");
        }
        for other in [
            "x: y (os error )",
            "x: y (os error two)",
            "x: (os error 2) and more",
            "x: not a directory, I think",
            "x: exists and is not a directory (the server sends one)",
        ] {
            assert_eq!(local(other), ErrorKind::Local { io: None }, "{other}");
        }
        // Only an `Error::Local` is read so.
        assert_eq!(Error::Network(format!("x: {e}")).kind(), ErrorKind::Network);
    }

    /// F28: real failures before any transfer, built where the I/O error
    /// is in hand, keep its kind: a path through a file, a receiver's
    /// directory that is a file or missing, a port already taken.
    #[test]
    fn local_failures_before_a_transfer_have_their_io_kind() {
        use std::io::ErrorKind as K;
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let addr: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
        let e = crate::send_file(file.join("x"), addr, &crate::SendOptions::new()).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Local {
                io: Some(K::NotADirectory)
            },
            "{e}"
        );
        let e = crate::Receiver::check_dir(&file).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Local {
                io: Some(K::NotADirectory)
            },
            "{e}"
        );
        let e = crate::Receiver::check_dir(&t.path().join("gone")).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Local {
                io: Some(K::NotFound)
            },
            "{e}"
        );
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = taken.local_addr().unwrap();
        match crate::Receiver::bind(at, crate::ReceiverOptions::new()) {
            Err(e) => {
                assert_eq!(
                    e.kind(),
                    ErrorKind::Local {
                        io: Some(K::AddrInUse)
                    },
                    "{e}"
                );
                assert_eq!(e.kind().io_code(), Some("address_in_use"));
            }
            Ok(_) => panic!("bound {at} twice"),
        }
    }

    #[test]
    fn connection_errors_read_as_their_kind() {
        use netblt_proto::ConnectionError as E;
        let silent = E::DeathTimeout {
            timeout: std::time::Duration::from_secs(3),
        };
        assert_eq!(connection_kind(&silent), ErrorKind::PeerSilent);
        assert_eq!(
            connection_kind(&E::OpenTimeout { attempts: 8 }),
            ErrorKind::ConnectTimeout
        );
        let aborted = E::PeerAborted {
            reason: "receiver interrupted".into(),
        };
        assert_eq!(
            connection_kind(&aborted),
            ErrorKind::AbortedByPeer(PeerReason::Cancelled)
        );
        assert!(connection_kind(&aborted).partial_kept());
        // A QUIT listing a bundle's entries (F25); another's QUIT is Other.
        let quit = |r: &str| E::PeerQuit { reason: r.into() };
        assert_eq!(
            connection_kind(&quit(
                "1 of 2 entries could not be stored at the receiver\nd/f: file exists"
            )),
            ErrorKind::AbortedByPeer(PeerReason::EntriesNotStored { exists: true })
        );
        assert_eq!(connection_kind(&quit("bored")), ErrorKind::Other);
        assert!(ErrorKind::PacketTooLarge.partial_kept());
        assert!(ErrorKind::PeerSilent.is_timeout() && ErrorKind::PeerSilent.partial_kept());
        // An error a program built itself has its variant's kind.
        assert_eq!(
            Error::Refused("x".into()).kind(),
            ErrorKind::NothingListening
        );
        assert_eq!(Error::Failed("interrupted".into()).kind(), ErrorKind::Other);
    }
}
