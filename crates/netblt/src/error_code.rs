//! Stable machine-readable codes of failures, for the JSON form of reports
//! (decision F26): one snake_case string per [`ErrorKind`], per
//! [`PeerReason`] and per I/O error kind that matters here, so that a
//! script matches `"error_kind": "refused_by_peer"` and
//! `"peer_reason": "file_exists"` instead of English text.
//!
//! The codes are a promise: once released, a code is never renamed nor
//! given to another failure. The matches below have no `_` arm on this
//! crate's own enums, so a new variant does not compile until it has its
//! code; only `std::io::ErrorKind`, which grows on its own, has an
//! `"other"` arm.

use serde::Serialize;

use crate::diagnosis::LimitSetting;
use crate::error::{ErrorKind, PeerReason};

impl ErrorKind {
    /// Its stable code in the JSON form of a report (`error_kind`):
    /// `invalid_options`, `local`, `network`, `packet_too_large`,
    /// `nothing_listening`, `connect_timeout`, `peer_silent`, `cancelled`,
    /// `refused_by_peer`, `aborted_by_peer`, `host_key_changed`,
    /// `handshake`, `integrity`, `other`. The peer's reason and the I/O
    /// error's kind have codes of their own ([`PeerReason::code`],
    /// [`io_kind_code`]).
    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::InvalidOptions => "invalid_options",
            ErrorKind::Local { .. } => "local",
            ErrorKind::Network => "network",
            ErrorKind::PacketTooLarge => "packet_too_large",
            ErrorKind::NothingListening => "nothing_listening",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::PeerSilent => "peer_silent",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::RefusedByPeer(_) => "refused_by_peer",
            ErrorKind::AbortedByPeer(_) => "aborted_by_peer",
            ErrorKind::HostKeyChanged => "host_key_changed",
            ErrorKind::Handshake => "handshake",
            ErrorKind::Integrity => "integrity",
            ErrorKind::Other => "other",
        }
    }

    /// The peer's reason, for [`RefusedByPeer`](Self::RefusedByPeer) and
    /// [`AbortedByPeer`](Self::AbortedByPeer).
    pub fn peer_reason(&self) -> Option<&PeerReason> {
        match self {
            ErrorKind::RefusedByPeer(r) | ErrorKind::AbortedByPeer(r) => Some(r),
            _ => None,
        }
    }

    /// The I/O error's code ([`io_kind_code`]) of a
    /// [`Local`](Self::Local) failure whose I/O kind is known.
    pub fn io_code(&self) -> Option<&'static str> {
        match self {
            ErrorKind::Local { io: Some(k) } => Some(io_kind_code(*k)),
            _ => None,
        }
    }
}

impl PeerReason {
    /// Its stable code in the JSON form of a report (`peer_reason`):
    /// `file_exists`, `already_there`, `not_authorized`,
    /// `encryption_required`, `peer_insecure`, `code_mismatch`,
    /// `code_required`, `code_not_expected`, `reading_not_enabled`,
    /// `name_not_allowed`, `busy`, `shutting_down`, `unknown_operation`,
    /// `cancelled`, `disk_full`, `integrity`, `entries_not_stored`,
    /// `other`. The text of [`Other`](Self::Other) and the operation of
    /// [`UnknownOperation`](Self::UnknownOperation) are the peer's words,
    /// left in the message, not in the code; the operation, and
    /// [`EntriesNotStored`](Self::EntriesNotStored)'s flag, are in
    /// [`detail`](Self::detail) (F28).
    pub fn code(&self) -> &'static str {
        match self {
            PeerReason::FileExists => "file_exists",
            PeerReason::AlreadyThere => "already_there",
            PeerReason::NotAuthorized => "not_authorized",
            PeerReason::EncryptionRequired => "encryption_required",
            PeerReason::PeerInsecure => "peer_insecure",
            PeerReason::CodeMismatch => "code_mismatch",
            PeerReason::CodeRequired => "code_required",
            PeerReason::CodeNotExpected => "code_not_expected",
            PeerReason::ReadingNotEnabled => "reading_not_enabled",
            PeerReason::NameNotAllowed => "name_not_allowed",
            PeerReason::Busy => "busy",
            PeerReason::ShuttingDown => "shutting_down",
            PeerReason::UnknownOperation(_) => "unknown_operation",
            PeerReason::Cancelled => "cancelled",
            PeerReason::DiskFull => "disk_full",
            PeerReason::Integrity => "integrity",
            PeerReason::EntriesNotStored { .. } => "entries_not_stored",
            PeerReason::Other(_) => "other",
        }
    }
}

/// What a peer's reason carries beyond its code ([`PeerReason::detail`]):
/// `peer_detail` in the JSON form of a report, beside `peer_reason`
/// (decision F28). One object for every reason that has data, each field
/// named after the reason's own field and present only with that reason,
/// so that a new reason with data adds a field here, never a new
/// top-level one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PeerDetail<'a> {
    /// [`PeerReason::EntriesNotStored`]: some entries were not stored
    /// because a file of that name is there and differs (`recv --force`
    /// replaces it); `false`: for other reasons only (the error's lines say
    /// which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// [`PeerReason::UnknownOperation`]: the operation the peer does not
    /// know, as it named it (`bundle`, `same`, `have`, ...): the peer's
    /// words, not a code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<&'a str>,
}

impl PeerReason {
    /// What this reason carries beyond its [`code`](Self::code), for the
    /// JSON's `peer_detail`: `{"exists": BOOL}` for
    /// [`EntriesNotStored`](Self::EntriesNotStored), `{"operation": OP}`
    /// for [`UnknownOperation`](Self::UnknownOperation); `None` for the
    /// reasons without data (and for [`Other`](Self::Other), whose text
    /// is in the message).
    pub fn detail(&self) -> Option<PeerDetail<'_>> {
        let none = PeerDetail {
            exists: None,
            operation: None,
        };
        match self {
            PeerReason::EntriesNotStored { exists } => Some(PeerDetail {
                exists: Some(*exists),
                ..none
            }),
            PeerReason::UnknownOperation(op) => Some(PeerDetail {
                operation: Some(op),
                ..none
            }),
            // No `_` arm: a new reason says here whether it has data.
            PeerReason::FileExists
            | PeerReason::AlreadyThere
            | PeerReason::NotAuthorized
            | PeerReason::EncryptionRequired
            | PeerReason::PeerInsecure
            | PeerReason::CodeMismatch
            | PeerReason::CodeRequired
            | PeerReason::CodeNotExpected
            | PeerReason::ReadingNotEnabled
            | PeerReason::NameNotAllowed
            | PeerReason::Busy
            | PeerReason::ShuttingDown
            | PeerReason::Cancelled
            | PeerReason::DiskFull
            | PeerReason::Integrity
            | PeerReason::Other(_) => None,
        }
    }
}

impl LimitSetting {
    /// Its stable code in the JSON form of a [`Diagnosis`](crate::Diagnosis)
    /// (`setting`): `rate`, `fixed_rate`, `live_rate`, `buffer_size`,
    /// `buffers` (the report's own field names where it has them).
    pub fn code(self) -> &'static str {
        match self {
            LimitSetting::Rate => "rate",
            LimitSetting::FixedRate => "fixed_rate",
            LimitSetting::LiveRate => "live_rate",
            LimitSetting::BufferSize => "buffer_size",
            LimitSetting::Buffers => "buffers",
        }
    }
}

/// The stable code of an I/O error's kind (`io_kind` in the JSON form of a
/// report and of a bundle's [`FileFailure`](crate::FileFailure)): the
/// kinds a file transfer meets by name, every other one `"other"` (the
/// message says which). `std`'s kinds grow; a new one is `"other"` until a
/// code is added here, and a code once given is kept.
pub fn io_kind_code(kind: std::io::ErrorKind) -> &'static str {
    use std::io::ErrorKind as K;
    match kind {
        K::NotFound => "not_found",
        K::PermissionDenied => "permission_denied",
        K::AlreadyExists => "already_exists",
        K::StorageFull => "storage_full",
        K::QuotaExceeded => "quota_exceeded",
        K::ReadOnlyFilesystem => "read_only_filesystem",
        K::IsADirectory => "is_a_directory",
        K::NotADirectory => "not_a_directory",
        K::DirectoryNotEmpty => "directory_not_empty",
        K::ResourceBusy => "resource_busy",
        K::FileTooLarge => "file_too_large",
        K::InvalidInput => "invalid_input",
        K::InvalidData => "invalid_data",
        K::UnexpectedEof => "unexpected_eof",
        K::Interrupted => "interrupted",
        K::TimedOut => "timed_out",
        K::OutOfMemory => "out_of_memory",
        // F28: a receiver's port taken, an address not this host's.
        K::AddrInUse => "address_in_use",
        K::AddrNotAvailable => "address_not_available",
        _ => "other",
    }
}

/// The codes of a failure as a report's JSON form carries them beside its
/// `error` (flattened into it): `error_kind` always (null on success),
/// `peer_reason`, `peer_detail` and `io_kind` when the kind has one.
#[derive(Serialize)]
pub(crate) struct ErrorCodes<'a> {
    pub(crate) error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peer_reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peer_detail: Option<PeerDetail<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) io_kind: Option<&'static str>,
}

impl ErrorCodes<'_> {
    /// The codes of `kind` (`None`: success).
    pub(crate) fn of(kind: Option<&ErrorKind>) -> ErrorCodes<'_> {
        let reason = kind.and_then(ErrorKind::peer_reason);
        ErrorCodes {
            error_kind: kind.map(ErrorKind::code),
            peer_reason: reason.map(PeerReason::code),
            peer_detail: reason.and_then(PeerReason::detail),
            io_kind: kind.and_then(ErrorKind::io_code),
        }
    }
}

/// Serializes an I/O kind as its code ([`io_kind_code`]).
pub(crate) fn io_kind_field<S: serde::Serializer>(
    kind: &Option<std::io::ErrorKind>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match kind {
        Some(k) => s.serialize_some(io_kind_code(*k)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A code is snake_case ASCII: what scripts and `jq` expect, and what
    /// the docs' table lists.
    fn snake(code: &str) -> bool {
        !code.is_empty()
            && code
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !code.starts_with('_')
            && !code.ends_with('_')
    }

    /// Every kind's code, as documented (README, "Error codes"): a rename
    /// fails here. The match in `code` has no `_` arm, so a new variant
    /// fails to compile there until it has one, and must then be added
    /// here to be documented.
    #[test]
    fn every_error_kind_has_its_documented_code() {
        use ErrorKind as K;
        let cases = [
            (K::InvalidOptions, "invalid_options"),
            (K::Local { io: None }, "local"),
            (K::Network, "network"),
            (K::PacketTooLarge, "packet_too_large"),
            (K::NothingListening, "nothing_listening"),
            (K::ConnectTimeout, "connect_timeout"),
            (K::PeerSilent, "peer_silent"),
            (K::Cancelled, "cancelled"),
            (K::RefusedByPeer(PeerReason::Busy), "refused_by_peer"),
            (K::AbortedByPeer(PeerReason::Busy), "aborted_by_peer"),
            (K::HostKeyChanged, "host_key_changed"),
            (K::Handshake, "handshake"),
            (K::Integrity, "integrity"),
            (K::Other, "other"),
        ];
        let mut seen = HashSet::new();
        for (k, code) in &cases {
            assert_eq!(k.code(), *code, "{k:?}");
            assert!(snake(code), "{code}");
            assert!(seen.insert(*code), "{code} given twice");
        }
    }

    #[test]
    fn every_peer_reason_has_its_documented_code() {
        use PeerReason as P;
        let cases = [
            (P::FileExists, "file_exists"),
            (P::AlreadyThere, "already_there"),
            (P::NotAuthorized, "not_authorized"),
            (P::EncryptionRequired, "encryption_required"),
            (P::PeerInsecure, "peer_insecure"),
            (P::CodeMismatch, "code_mismatch"),
            (P::CodeRequired, "code_required"),
            (P::CodeNotExpected, "code_not_expected"),
            (P::ReadingNotEnabled, "reading_not_enabled"),
            (P::NameNotAllowed, "name_not_allowed"),
            (P::Busy, "busy"),
            (P::ShuttingDown, "shutting_down"),
            (P::UnknownOperation("bundle".into()), "unknown_operation"),
            (P::Cancelled, "cancelled"),
            (P::DiskFull, "disk_full"),
            (P::Integrity, "integrity"),
            (P::EntriesNotStored { exists: true }, "entries_not_stored"),
            (P::EntriesNotStored { exists: false }, "entries_not_stored"),
            (P::Other("my handler says no".into()), "other"),
        ];
        let mut seen = HashSet::new();
        for (r, code) in &cases {
            assert_eq!(r.code(), *code, "{r:?}");
            assert!(snake(code), "{code}");
            seen.insert(*code);
        }
        // One code per variant (EntriesNotStored appears twice above).
        assert_eq!(seen.len(), cases.len() - 1);
        // The peer's words never become a code: scripts match a fixed set.
        assert_eq!(P::from_wire("\u{1b}[2J rm -rf").code(), "other");
    }

    #[test]
    fn io_kinds_have_fixed_codes_and_the_rest_is_other() {
        use std::io::ErrorKind as K;
        let cases = [
            (K::NotFound, "not_found"),
            (K::PermissionDenied, "permission_denied"),
            (K::AlreadyExists, "already_exists"),
            (K::StorageFull, "storage_full"),
            (K::QuotaExceeded, "quota_exceeded"),
            (K::ReadOnlyFilesystem, "read_only_filesystem"),
            (K::IsADirectory, "is_a_directory"),
            (K::NotADirectory, "not_a_directory"),
            (K::DirectoryNotEmpty, "directory_not_empty"),
            (K::ResourceBusy, "resource_busy"),
            (K::FileTooLarge, "file_too_large"),
            (K::InvalidInput, "invalid_input"),
            (K::InvalidData, "invalid_data"),
            (K::UnexpectedEof, "unexpected_eof"),
            (K::Interrupted, "interrupted"),
            (K::TimedOut, "timed_out"),
            (K::OutOfMemory, "out_of_memory"),
            (K::AddrInUse, "address_in_use"),
            (K::AddrNotAvailable, "address_not_available"),
            (K::BrokenPipe, "other"),
            (K::Other, "other"),
        ];
        let mut seen = HashSet::new();
        for (k, code) in cases {
            assert_eq!(io_kind_code(k), code, "{k:?}");
            assert!(snake(code), "{code}");
            assert!(seen.insert(code) || code == "other", "{code} given twice");
        }
        // The errno behind a full disk and a quota reach their codes.
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(io_kind_code(full.kind()), "storage_full");
        let quota = std::io::Error::from_raw_os_error(libc::EDQUOT);
        assert_eq!(io_kind_code(quota.kind()), "quota_exceeded");
    }

    #[test]
    fn limit_settings_have_codes() {
        use LimitSetting as S;
        for (s, code) in [
            (S::Rate, "rate"),
            (S::FixedRate, "fixed_rate"),
            (S::LiveRate, "live_rate"),
            (S::BufferSize, "buffer_size"),
            (S::Buffers, "buffers"),
        ] {
            assert_eq!(s.code(), code);
            assert!(snake(code));
        }
    }

    /// The codes a report carries: `peer_reason` only with a peer's
    /// refusal or abort, `io_kind` only with a local failure of known I/O
    /// kind, `error_kind` null on success.
    #[test]
    fn error_codes_carry_only_what_applies() {
        let json = |k: Option<ErrorKind>| serde_json::to_value(ErrorCodes::of(k.as_ref())).unwrap();
        assert_eq!(json(None), serde_json::json!({ "error_kind": null }));
        assert_eq!(
            json(Some(ErrorKind::RefusedByPeer(PeerReason::FileExists))),
            serde_json::json!({ "error_kind": "refused_by_peer", "peer_reason": "file_exists" })
        );
        assert_eq!(
            json(Some(ErrorKind::Local {
                io: Some(std::io::ErrorKind::PermissionDenied)
            })),
            serde_json::json!({ "error_kind": "local", "io_kind": "permission_denied" })
        );
        assert_eq!(
            json(Some(ErrorKind::Local { io: None })),
            serde_json::json!({ "error_kind": "local" })
        );
        assert_eq!(
            json(Some(ErrorKind::PeerSilent)),
            serde_json::json!({ "error_kind": "peer_silent" })
        );
        // F28: a reason's data in `peer_detail`, only with that reason.
        assert_eq!(
            json(Some(ErrorKind::AbortedByPeer(
                PeerReason::EntriesNotStored { exists: false }
            ))),
            serde_json::json!({
                "error_kind": "aborted_by_peer",
                "peer_reason": "entries_not_stored",
                "peer_detail": { "exists": false },
            })
        );
        assert_eq!(
            json(Some(ErrorKind::RefusedByPeer(
                PeerReason::UnknownOperation("bundle".into())
            ))),
            serde_json::json!({
                "error_kind": "refused_by_peer",
                "peer_reason": "unknown_operation",
                "peer_detail": { "operation": "bundle" },
            })
        );
    }

    /// F28: the reasons with data give it, one field each; the others
    /// (and `Other`, whose text is the message's) none. The peer's
    /// operation is kept as it sent it: JSON escapes what it must.
    #[test]
    fn peer_details_carry_only_the_reasons_data() {
        use PeerReason as P;
        let detail = |r: &P| serde_json::to_value(r.detail()).unwrap();
        assert_eq!(
            detail(&P::EntriesNotStored { exists: true }),
            serde_json::json!({ "exists": true })
        );
        assert_eq!(
            detail(&P::EntriesNotStored { exists: false }),
            serde_json::json!({ "exists": false })
        );
        assert_eq!(
            detail(&P::UnknownOperation("same".into())),
            serde_json::json!({ "operation": "same" })
        );
        let odd = P::from_wire("unknown operation '\u{1b}[2J\"x'");
        assert_eq!(odd.code(), "unknown_operation");
        assert_eq!(
            detail(&odd),
            serde_json::json!({ "operation": "\u{1b}[2J\"x" })
        );
        for r in [
            P::FileExists,
            P::Busy,
            P::Cancelled,
            P::Other("unknown operation".into()),
        ] {
            assert_eq!(r.detail(), None, "{r:?}");
        }
    }
}
