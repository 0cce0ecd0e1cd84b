//! [`Node`]: what a simulated host runs.

use netblt_proto::Instant;

/// A sans-IO endpoint the simulator can drive, shaped like quinn-proto's
/// `Connection` (and netblt-proto's engine): inputs are `handle_*`, outputs
/// are `poll_*`, and time only ever comes in as `now`.
///
/// The simulator calls these only when the host's CPU is free, in the order
/// the host model gives (received packets, then due timers, then
/// transmission). `now` never decreases.
pub trait Node {
    /// A datagram arrived and the host finished its receive processing.
    fn handle_datagram(&mut self, now: Instant, data: &[u8]);
    /// The time from [`poll_timeout`](Self::poll_timeout) has come.
    /// Spurious or late calls must be harmless.
    fn handle_timeout(&mut self, now: Instant);
    /// Writes one datagram into `buf` (which arrives empty) and returns `true`,
    /// or returns `false` if there is nothing to send now.
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool;
    /// When [`handle_timeout`](Self::handle_timeout) should next be called.
    /// A node that is rate-paced returns its next send time here too: the
    /// simulator offers the CPU again only at events and timeouts.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The node is done; the run ends when both nodes are.
    fn is_finished(&self) -> bool;
}
