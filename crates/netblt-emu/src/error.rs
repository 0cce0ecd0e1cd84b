//! Errors of the emulator.

use std::io;

/// Why an emulation could not be set up, configured or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// Network namespaces and TUN devices need root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
    #[error("needs root: it creates network namespaces and TUN devices")]
    NotRoot,
    /// The TUN driver is not available.
    #[error("/dev/net/tun is missing: the kernel's tun driver is needed (modprobe tun)")]
    NoTun,
    /// The emulation name cannot be used in namespace and file names.
    #[error("bad emulation name {0:?}: use 1 to 24 characters from A-Z a-z 0-9 _ -")]
    BadName(String),
    /// A namespace with the name we need is already there.
    #[error("network namespace {0} already exists (left over? `netblt emu down NAME` removes it)")]
    Exists(String),
    /// No emulation of that name is running.
    #[error("no emulation named {0}")]
    NotFound(String),
    /// An external command (iproute2) failed.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line, for the message.
        command: String,
        /// Exit status and what it printed on stderr.
        detail: String,
    },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The link configuration was rejected by `netblt_link`.
    #[error("link configuration: {0}")]
    Link(#[from] netblt_link::ConfigError),
    /// A knob's value could not be parsed or is out of range.
    #[error("{0}")]
    Knob(String),
    /// Something else went wrong; the text says what.
    #[error("{0}")]
    Failed(String),
    /// No profile of that name.
    #[error("unknown profile {name:?}; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Comma-separated list of the known names.
        known: String,
    },
}

impl EmuError {
    /// Wraps an I/O error with a description of what was being done.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> EmuError {
        EmuError::Io {
            what: what.into(),
            source,
        }
    }
}
