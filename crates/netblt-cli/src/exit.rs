//! Exit codes, documented in the README ("Exit codes").
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the transfer or measurement failed (peer error, integrity check, death timer) |
//! | 2 | bad command line or arguments |
//! | 3 | local error: file, permission, disk full |
//! | 4 | network error: unreachable, refused |
//! | 5 | the emulator could not be set up (needs root and /dev/net/tun) |

pub const OK: i32 = 0;
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;
pub const LOCAL: i32 = 3;
pub const NETWORK: i32 = 4;
pub const EMULATOR: i32 = 5;

/// An error that knows its exit code; displayed as one line.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
    /// The library's kind of the failure, when it came from one: the
    /// `--json` error object's codes (F26).
    pub kind: Option<netblt::ErrorKind>,
    /// Its transfer's report was printed (with `--json`, as JSON with the
    /// error and its codes): no error object after it (F26).
    pub reported: bool,
}

impl CliError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        CliError {
            code,
            message: message.into(),
            kind: None,
            reported: false,
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        CliError::new(USAGE, message)
    }
    /// The same, with the library's kind of the failure.
    pub fn with_kind(mut self, kind: Option<netblt::ErrorKind>) -> Self {
        self.kind = kind;
        self
    }
    /// The same, for a failure whose transfer's report was printed (as
    /// JSON when JSON was asked for, with the error's codes).
    pub fn reported(mut self) -> Self {
        self.reported = true;
        self
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The exit code for a library error: its kind's.
pub fn of(e: &netblt::Error) -> i32 {
    match e.cause() {
        netblt::Error::InvalidOptions(_) => USAGE,
        netblt::Error::Local(_) => LOCAL,
        netblt::Error::Network(_) | netblt::Error::Refused(_) => NETWORK,
        _ => FAILED,
    }
}

impl From<netblt::Error> for CliError {
    fn from(e: netblt::Error) -> CliError {
        CliError::new(of(&e), crate::output::told(&e, Some(e.kind()))).with_kind(Some(e.kind()))
    }
}

/// The exit code for any error: a `CliError`'s own, a library error's kind,
/// else 1.
pub fn code_of(e: &anyhow::Error) -> i32 {
    if let Some(c) = e.downcast_ref::<CliError>() {
        return c.code;
    }
    e.downcast_ref::<netblt::Error>().map_or(FAILED, of)
}
