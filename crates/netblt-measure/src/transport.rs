//! Which transport a measurement runs over.

use std::fmt;

use serde::Serialize;

/// The transport under a measurement.
///
/// `Tcp` and `Udp` are the kernel's own and are implemented in this crate. `Netblt` runs the
/// NETBLT engine's UDP driver, which lives in the `netblt` binary (this crate must not
/// depend on it): the binary registers a [`BulkSender`] with [`register_netblt`], and the
/// load generator and CPU-cost meter use it through the same sink interface
/// ([`crate::client::SinkConnection`]). Without a registration the `Netblt` arms return
/// [`crate::MeasureError::TransportUnavailable`]. The echo path (RTT) has no NETBLT form:
/// NETBLT moves buffers one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Transport {
    /// Kernel TCP; messages are framed so that one message is one round trip.
    Tcp,
    /// Kernel UDP; one message is one datagram, and a lost one is counted, not retried.
    Udp,
    /// NETBLT (RFC 998) over UDP, one-way to a `netblt recv --sink` on
    /// [`NETBLT_SINK_PORT`] of the target host.
    Netblt,
}

/// The port of the NETBLT sink (`netblt recv --sink`) on the measured host.
pub const NETBLT_SINK_PORT: u16 = 9998;

/// What one NETBLT memory-to-memory transfer did.
#[derive(Clone, Debug, PartialEq)]
pub struct BulkOutcome {
    /// Bytes delivered and verified by the receiver.
    pub bytes: u64,
    /// Datagrams this end sent.
    pub datagrams: u64,
}

/// A one-way bulk transfer implementation provided by the binary (dependency inversion:
/// the measurement crate does not depend on the NETBLT driver).
pub trait BulkSender: Send + Sync {
    /// Moves `bytes` bytes to the sink at `peer` and returns once the receiver has them
    /// all (verified), or a one-line reason.
    fn send(&self, peer: std::net::SocketAddr, bytes: u64) -> Result<BulkOutcome, String>;
}

static NETBLT: std::sync::OnceLock<Box<dyn BulkSender>> = std::sync::OnceLock::new();

/// Registers the NETBLT implementation (once per process; later calls are ignored).
pub fn register_netblt(sender: Box<dyn BulkSender>) {
    let _ = NETBLT.set(sender);
}

/// The registered NETBLT implementation, if any.
pub fn netblt() -> Option<&'static dyn BulkSender> {
    NETBLT.get().map(|b| b.as_ref())
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
