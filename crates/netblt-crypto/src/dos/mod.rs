//! Denial-of-service helpers for the passive end, after QUIC (RFC 9000 §8) and WireGuard.
//!
//! * [`cookie`]: a stateless cookie the passive end returns instead of a RESPONSE when under
//!   load; an initiation that carries a valid one proves the source address can receive.
//! * [`amplification`]: before an address is validated, never send more than three times
//!   the bytes received from it (RFC 9000 §8.1).
//! * [`limits`]: per-source and total connection counts, with memory bounded by the total.
//!
//! None of them reads a clock or draws randomness by itself: the caller passes `now` (in
//! seconds) and an RNG.

pub mod amplification;
pub mod cookie;
pub mod limits;
