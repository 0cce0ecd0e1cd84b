//! The anti-replay sliding window over packet counters (RFC 6479, as WireGuard uses it).
//!
//! A 2048-bit ring of 32 words. The window is the 32 blocks of 64 counters ending with the
//! block of the highest counter accepted so far: a counter in an older block is "too old",
//! one whose bit is set is a replay. So at least 1985 and up to 2048 counters behind the
//! highest are remembered, whatever the reordering. Advancing clears whole words, so the
//! cost per packet is constant and there is no shifting (RFC 6479 §2).
//!
//! [`ReplayWindow::check`] runs before decryption (cheap rejection) and
//! [`ReplayWindow::commit`] only after the packet authenticated: a forged packet must never
//! move the window.

const WORDS: usize = 32;
/// Bits in the ring.
pub const WINDOW_BITS: u64 = (WORDS as u64) * 64;
/// Counters always remembered behind the highest one (one block less than the ring).
pub const GUARANTEED_WINDOW: u64 = WINDOW_BITS - 64;

/// Why a counter is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Seen before.
    #[error("replayed packet")]
    Replayed,
    /// Too far behind the highest counter to tell.
    #[error("packet too old for the replay window")]
    TooOld,
}

/// Remembers which recent counters were accepted.
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    top: Option<u64>,
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayWindow {
    /// An empty window.
    pub fn new() -> Self {
        ReplayWindow {
            top: None,
            bits: [0; WORDS],
        }
    }

    /// The highest counter accepted so far.
    pub fn highest(&self) -> Option<u64> {
        self.top
    }

    /// Whether `counter` may be accepted (does not change the window).
    pub fn check(&self, counter: u64) -> Result<(), ReplayError> {
        let Some(top) = self.top else { return Ok(()) };
        if counter > top {
            return Ok(());
        }
        if (top >> 6) - (counter >> 6) >= WORDS as u64 {
            return Err(ReplayError::TooOld);
        }
        let (w, b) = Self::slot(counter);
        if self.bits[w] & (1 << b) != 0 {
            return Err(ReplayError::Replayed);
        }
        Ok(())
    }

    /// Records `counter` as accepted; call only after [`check`](Self::check) passed and the
    /// packet authenticated.
    pub fn commit(&mut self, counter: u64) {
        match self.top {
            Some(top) if counter <= top => {}
            top => {
                // Clear the words of the blocks we move into: they hold bits of counters 2048
                // older, now outside the window.
                let from = top.map_or(0, |t| (t >> 6) + 1);
                let to = counter >> 6;
                if top.is_none() || to.saturating_sub(from) >= WORDS as u64 {
                    self.bits = [0; WORDS];
                } else if to >= from {
                    for block in from..=to {
                        self.bits[(block % WORDS as u64) as usize] = 0;
                    }
                }
                self.top = Some(counter);
            }
        }
        let (w, b) = Self::slot(counter);
        self.bits[w] |= 1 << b;
    }

    fn slot(counter: u64) -> (usize, u32) {
        (
            ((counter >> 6) % WORDS as u64) as usize,
            (counter & 63) as u32,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn accept(w: &mut ReplayWindow, c: u64) -> Result<(), ReplayError> {
        w.check(c)?;
        w.commit(c);
        Ok(())
    }

    #[test]
    fn in_order_and_duplicates() {
        let mut w = ReplayWindow::new();
        for c in 0..5000 {
            assert_eq!(accept(&mut w, c), Ok(()));
            assert_eq!(accept(&mut w, c), Err(ReplayError::Replayed));
        }
    }

    #[test]
    fn window_edges() {
        let mut w = ReplayWindow::new();
        // Highest 10_000 = block 156, position 16; the window starts at block 125 = 8000.
        accept(&mut w, 10_000).unwrap();
        assert_eq!(w.check(8000), Ok(()));
        assert_eq!(w.check(7999), Err(ReplayError::TooOld));
        assert_eq!(w.check(10_000 - GUARANTEED_WINDOW), Ok(()));
        assert_eq!(w.check(0), Err(ReplayError::TooOld));
        accept(&mut w, 8000).unwrap();
        assert_eq!(accept(&mut w, 8000), Err(ReplayError::Replayed));
        // Counter 0 first, then a jump far ahead: everything old is forgotten, not replayable.
        let mut w = ReplayWindow::new();
        accept(&mut w, 0).unwrap();
        accept(&mut w, u64::MAX - 1).unwrap();
        assert_eq!(w.check(0), Err(ReplayError::TooOld));
        assert_eq!(accept(&mut w, u64::MAX - 1), Err(ReplayError::Replayed));
        assert_eq!(accept(&mut w, u64::MAX), Ok(()));
    }

    #[test]
    fn advancing_clears_wrapped_words() {
        let mut w = ReplayWindow::new();
        accept(&mut w, 5).unwrap();
        // 5 + 2048 shares 5's word and bit; after moving there, 5 is too old, and the new
        // counter is not mistaken for a replay.
        assert_eq!(accept(&mut w, 5 + WINDOW_BITS), Ok(()));
        assert_eq!(w.check(5), Err(ReplayError::TooOld));
        // Every counter of the previous 31 blocks that was never seen is still acceptable.
        assert_eq!(w.check(5 + WINDOW_BITS - 1), Ok(()));
    }

    proptest! {
        /// Against a model that remembers everything: the window never accepts a counter twice
        /// and never refuses a fresh counter that is within the guaranteed window.
        #[test]
        fn matches_model(steps in proptest::collection::vec((0u64..4, 0u64..3000), 1..400)) {
            let mut w = ReplayWindow::new();
            let mut seen = std::collections::BTreeSet::new();
            let mut top = 0u64;
            for (kind, d) in steps {
                let c = match kind { 0 => top + d, _ => top.saturating_sub(d) };
                let r = accept(&mut w, c);
                let highest = w.highest().unwrap_or(0);
                if seen.contains(&c) {
                    prop_assert!(r.is_err());
                } else if r.is_ok() {
                    seen.insert(c);
                } else {
                    prop_assert!(highest - c > GUARANTEED_WINDOW - 1, "fresh {c} refused, top {highest}");
                }
                top = top.max(c);
            }
        }
    }
}
