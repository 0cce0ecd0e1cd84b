//! Changing a running transfer's rate limits from another thread (decision
//! R27): what ascp's and rclone's users do when a long transfer should give
//! way to other work, or may take more at night.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use netblt_proto::RateLimits;

use crate::driver::Waker;

/// A handle on the rate limits of the transfers it is given to
/// ([`SendOptions::rate_control`](crate::SendOptions::rate_control),
/// [`ReceiverOptions::rate_control`](crate::ReceiverOptions::rate_control)):
/// clone it, hand one clone to the transfer and keep the other; every
/// [`set`](Self::set) reaches the running transfers within a loop
/// iteration (the driver is woken).
///
/// The limits bind this end as a data sender: the maximum holds the pacing
/// rate under it (under [`Policy::Fixed`](crate::Policy::Fixed) it is the
/// rate, when below the negotiated one), the minimum is the adaptive
/// policies' floor. Neither goes above the rate negotiated at OPEN (RFC 998
/// lets a sender make the parameters "more restrictive", never less), so
/// leave [`SendOptions::rate`](crate::SendOptions::rate) unset to keep
/// headroom. As a data receiver ([`get`](crate::get)) the maximum goes
/// to the sender in the burst values of each OK (RFC 998 §4, decision
/// R31) and holds it from the next buffer on; the minimum does nothing
/// there. A serving
/// [`Receiver`](crate::Receiver) splits them among all the transfers it
/// serves, max-min fairly (each gets what it can use, the rest shared
/// equally, split again four times a second).
///
/// ```
/// let control = netblt::RateControl::new();
/// let mut opts = netblt::SendOptions::new();
/// opts.rate_control = Some(control.clone());
/// // ... start the transfer on another thread, then:
/// control.set_max_rate(Some(20_000_000)); // 20 Mb/s from now on
/// control.set_max_rate(None); // back to the path's rate
/// ```
#[derive(Clone, Default)]
pub struct RateControl {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// One more per change: a driver applies the limits when it sees a
    /// value it has not seen (0: never set, nothing to apply).
    generation: AtomicU64,
    limits: Mutex<RateLimits>,
    /// The loops of the transfers running with this handle.
    wakers: Mutex<Vec<Weak<Waker>>>,
}

impl std::fmt::Debug for RateControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateControl")
            .field("limits", &self.limits())
            .finish()
    }
}

impl RateControl {
    /// No limits yet (the transfer's own rate and policy decide).
    pub fn new() -> RateControl {
        RateControl::default()
    }

    /// Sets both limits.
    pub fn set(&self, limits: RateLimits) {
        if let Ok(mut l) = self.inner.limits.lock() {
            *l = limits;
        }
        self.inner.generation.fetch_add(1, Ordering::Release);
        if let Ok(mut ws) = self.inner.wakers.lock() {
            ws.retain(|w| match w.upgrade() {
                Some(w) => {
                    w.wake();
                    true
                }
                None => false,
            });
        }
    }

    /// Sets the maximum (bits/s of data; `None`: the negotiated rate),
    /// keeping the minimum.
    pub fn set_max_rate(&self, bps: Option<u64>) {
        let mut l = self.limits();
        l.max_bps = bps;
        self.set(l);
    }

    /// Sets the minimum (bits/s of data; 0: none), keeping the maximum.
    pub fn set_min_rate(&self, bps: u64) {
        let mut l = self.limits();
        l.min_bps = bps;
        self.set(l);
    }

    /// The limits last set.
    pub fn limits(&self) -> RateLimits {
        self.inner.limits.lock().map(|l| *l).unwrap_or_default()
    }

    /// Wakes `waker`'s loop on every change from now on.
    pub(crate) fn attach(&self, waker: &Arc<Waker>) {
        if let Ok(mut ws) = self.inner.wakers.lock() {
            ws.retain(|w| w.strong_count() > 0);
            ws.push(Arc::downgrade(waker));
        }
    }

    /// The limits, if they changed since `seen` (which is then updated).
    /// One atomic load when they did not: called on every loop iteration.
    pub(crate) fn changed(&self, seen: &mut u64) -> Option<RateLimits> {
        let g = self.inner.generation.load(Ordering::Acquire);
        if g == *seen {
            return None;
        }
        *seen = g;
        Some(self.limits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_seen_once_and_wakes_the_attached_loop() {
        let c = RateControl::new();
        let mut seen = 0;
        assert_eq!(c.changed(&mut seen), None, "never set: nothing to apply");
        let waker = Arc::new(Waker::new().unwrap());
        c.clone().attach(&waker);
        c.set_max_rate(Some(5_000_000));
        c.set_min_rate(1_000_000);
        let want = RateLimits {
            min_bps: 1_000_000,
            max_bps: Some(5_000_000),
        };
        assert_eq!(c.changed(&mut seen), Some(want));
        assert_eq!(c.changed(&mut seen), None);
        assert!(waker.take(), "the loop was not woken");
        drop(waker);
        c.set_max_rate(None);
        assert_eq!(c.inner.wakers.lock().unwrap().len(), 0, "a dead loop kept");
    }
}
