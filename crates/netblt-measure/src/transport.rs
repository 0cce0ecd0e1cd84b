//! Which transport a measurement runs over.

use std::fmt;

use serde::Serialize;

/// The transport under a measurement.
///
/// `Tcp` and `Udp` are the kernel's own and are implemented in this crate. `Netblt` is the
/// slot for the NETBLT engine: the load generator and the CPU-cost meter will drive it
/// through the same sink interface ([`crate::client::SinkConnection`]) once the engine's
/// socket driver exists. Until then every entry point returns
/// [`crate::MeasureError::TransportUnavailable`] for it, so adding it means filling in the
/// `Netblt` arms that already exist (search for `Transport::Netblt`), not restructuring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Transport {
    /// Kernel TCP; messages are framed so that one message is one round trip.
    Tcp,
    /// Kernel UDP; one message is one datagram, and a lost one is counted, not retried.
    Udp,
    /// NETBLT (RFC 998) over UDP; not wired yet.
    Netblt,
}

impl Transport {
    /// Lower-case name as used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Netblt => "netblt",
        }
    }

    /// True if the transport itself guarantees delivery (no loss is ever reported).
    pub fn is_reliable(self) -> bool {
        !matches!(self, Transport::Udp)
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
