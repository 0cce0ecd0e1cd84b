//! Properties of the error kinds read from text: a peer's reason (a
//! REFUSED's or an ABORT's string, whatever the network brings) and an
//! `Error::Local`'s message never panic and always give a documented code;
//! an OS error passed through keeps its errno's kind (decisions F20, F26,
//! F27, F28).

use netblt::{Error, ErrorKind, PeerReason};
use proptest::prelude::*;

proptest! {
    /// Any text a peer sends as its reason is read into a `PeerReason`
    /// with a code of snake_case letters, and its detail, if any, is
    /// serializable.
    #[test]
    fn any_reason_text_reads_into_a_coded_reason(text in any::<String>()) {
        let r = PeerReason::from_wire(&text);
        let code = r.code();
        prop_assert!(!code.is_empty());
        prop_assert!(code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{}", code);
        if let Some(d) = r.detail() {
            prop_assert!(serde_json::to_value(d).is_ok());
        }
    }

    /// The same for the reason texts the library itself recognises, with
    /// anything around them: still no panic, still a code.
    #[test]
    fn reason_families_with_noise_read(
        head in prop::sample::select(vec![
            "unknown operation '", "key ", "busy: ", "disk full", "digest mismatch",
            "entries not stored", "interrupted",
        ]),
        tail in any::<String>(),
    ) {
        let r = PeerReason::from_wire(&format!("{head}{tail}"));
        prop_assert!(!r.code().is_empty());
    }

    /// Any message of an `Error::Local` has the kind `local`, and its
    /// `io_kind`, when read, has a code.
    #[test]
    fn any_local_message_is_local(text in any::<String>()) {
        let k = Error::Local(text).kind();
        prop_assert_eq!(k.code(), "local");
        if let Some(io) = k.io_code() {
            prop_assert!(!io.is_empty());
        }
    }

    /// F28: whatever comes before it, a message ending in an OS error as
    /// the standard library displays one has that errno's kind.
    #[test]
    fn an_os_error_at_the_end_gives_its_kind(errno in 1i32..4096, before in "[^:]{0,40}") {
        let io = std::io::Error::from_raw_os_error(errno);
        let e = Error::Local(format!("{before}: {io}"));
        prop_assert_eq!(e.kind(), ErrorKind::Local { io: Some(io.kind()) });
    }
}
