//! The anti-amplification rule of QUIC (RFC 9000 §8.1), for NETBLT's passive end:
//! "Prior to validating the client address, servers MUST NOT send more than three times as
//! many bytes as the number of bytes they have received."
//!
//! An address is validated when the peer proves it receives what we send there: a valid
//! cookie, or the handshake completing (its messages depend on ours).

/// The factor of RFC 9000 §8.1.
pub const AMPLIFICATION_FACTOR: u64 = 3;

/// Bytes received from and sent to one unvalidated address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AmplificationLimit {
    received: u64,
    sent: u64,
    validated: bool,
}

impl AmplificationLimit {
    /// Nothing received or sent yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a datagram received from the address (whole UDP payload).
    pub fn on_received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    /// The address proved it receives: no limit from now on.
    pub fn validate(&mut self) {
        self.validated = true;
    }

    /// Whether the address is validated.
    pub fn is_validated(&self) -> bool {
        self.validated
    }

    /// Bytes we may still send (`u64::MAX` once validated).
    pub fn allowance(&self) -> u64 {
        if self.validated {
            return u64::MAX;
        }
        self.received
            .saturating_mul(AMPLIFICATION_FACTOR)
            .saturating_sub(self.sent)
    }

    /// Records a datagram of `bytes` if the limit allows it and says whether to send it. A
    /// datagram that does not fit whole is not sent (never partly).
    pub fn try_send(&mut self, bytes: usize) -> bool {
        let bytes = bytes as u64;
        if bytes > self.allowance() {
            return false;
        }
        self.sent = self.sent.saturating_add(bytes);
        true
    }

    /// Bytes sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let mut l = AmplificationLimit::new();
        assert_eq!(l.allowance(), 0);
        assert!(!l.try_send(1));
        l.on_received(100);
        assert_eq!(l.allowance(), 300);
        assert!(l.try_send(200));
        assert!(!l.try_send(101), "would make 301 > 300");
        assert!(l.try_send(100));
        assert_eq!(l.allowance(), 0);
        assert!(l.try_send(0));
        l.on_received(1);
        assert_eq!(l.allowance(), 3);
        assert_eq!((l.received(), l.sent()), (101, 300));
        l.validate();
        assert!(l.try_send(1 << 40));
        assert_eq!(l.allowance(), u64::MAX);
    }

    #[test]
    fn saturates() {
        let mut l = AmplificationLimit::new();
        l.on_received(usize::MAX);
        l.on_received(usize::MAX);
        assert_eq!(l.allowance(), u64::MAX);
        assert!(l.try_send(usize::MAX));
    }
}
