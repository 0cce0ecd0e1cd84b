//! A passive end's rate limit is for all its transfers together, those it
//! sends (decision R27) and those it receives (its share is offered to the
//! sender in each OK, R31): the total is split among the transfers max-min
//! fairly ("water-filling"),
//! each getting what it can use and the rest shared equally, and split
//! again four times a second as they speed up, slow down, start and end.

use std::time::{Duration, Instant};

use netblt_proto::{ConnectionHandle, Endpoint, RateLimits, RateReason};

use crate::RateControl;

/// How often the total is split again.
const RESPLIT: Duration = Duration::from_millis(250);

/// How much faster than its current rate a transfer may go before the next
/// split: its share must leave it room to show it wants more (a transfer
/// held at its share reports `cap` and is then given an equal share).
const HEADROOM: f64 = 1.25;

/// Max-min fair shares of `total`: `wants[i]` is what transfer `i` can use
/// (`None`: as much as it is given).
pub(crate) fn split(total: f64, wants: &[Option<f64>]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..wants.len()).collect();
    // Smallest demands first; the unbounded ones last.
    order.sort_by(|&a, &b| {
        let key = |i: usize| wants[i].unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    let mut out = vec![0.0; wants.len()];
    let mut left = total.max(0.0);
    for (k, &i) in order.iter().enumerate() {
        let equal = left / (order.len() - k) as f64;
        let give = wants[i].map_or(equal, |w| w.max(0.0).min(equal));
        out[i] = give;
        left -= give;
    }
    out
}

/// The open connections, sending or receiving.
fn limited(ep: &Endpoint) -> Vec<ConnectionHandle> {
    ep.handles()
        .into_iter()
        .filter(|&h| ep.connection(h).is_some_and(|c| !c.is_closed()))
        .collect()
}

/// The serving loop's side of a [`RateControl`].
#[derive(Debug)]
pub(crate) struct Share {
    control: RateControl,
    seen: u64,
    limits: Option<RateLimits>,
    next: Instant,
}

impl Share {
    pub(crate) fn new(control: RateControl) -> Share {
        Share {
            control,
            seen: 0,
            limits: None,
            next: Instant::now(),
        }
    }

    /// On every loop iteration: splits the limits again when they changed
    /// or a quarter second passed (one atomic load while none is set).
    pub(crate) fn update(&mut self, ep: &mut Endpoint) {
        let changed = self.control.changed(&mut self.seen);
        if let Some(l) = changed {
            self.limits = Some(l);
        }
        let Some(l) = self.limits else { return };
        let now = Instant::now();
        if changed.is_none() && now < self.next {
            return;
        }
        self.next = now + RESPLIT;
        let conns = limited(ep);
        let Some(total) = l.max_bps else {
            for &h in &conns {
                if let Some(c) = ep.connection_mut(h) {
                    c.set_rate_limits(l);
                }
            }
            return;
        };
        let wants: Vec<Option<f64>> = conns
            .iter()
            .map(|&h| {
                // A receiving transfer has no controller here: it gets an
                // equal share of what the others leave.
                let st = ep.connection(h)?.rate_state()?;
                // Held at its share, or still starting: as much as it gets.
                let open = matches!(st.reason, RateReason::Cap | RateReason::Startup);
                (!open).then_some(st.rate_bps * HEADROOM)
            })
            .collect();
        let shares = split(total as f64, &wants);
        for (&h, share) in conns.iter().zip(shares) {
            let share = share.max(1.0) as u64;
            if let Some(c) = ep.connection_mut(h) {
                c.set_rate_limits(RateLimits {
                    min_bps: l.min_bps.min(share),
                    max_bps: Some(share),
                });
            }
        }
    }

    /// A transfer just accepted: until the next split, an equal share.
    pub(crate) fn admit(&mut self, ep: &mut Endpoint, h: ConnectionHandle) {
        let Some(l) = self.limits else { return };
        let n = limited(ep).len().max(1);
        let each = l.max_bps.map(|m| (m / n as u64).max(1));
        if let Some(c) = ep.connection_mut(h) {
            c.set_rate_limits(RateLimits {
                min_bps: each.map_or(l.min_bps, |e| l.min_bps.min(e)),
                max_bps: each,
            });
        }
        // And everyone else's share at the next iteration.
        self.next = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn shares_are_max_min_fair() {
        // Two that want all they get: half each.
        assert_eq!(split(100.0, &[None, None]), vec![50.0, 50.0]);
        // One that can use only 10: the other gets the rest.
        assert_eq!(split(100.0, &[Some(10.0), None]), vec![10.0, 90.0]);
        // Demands above the equal share are cut to it.
        assert_eq!(
            split(90.0, &[Some(80.0), Some(5.0), Some(50.0)]),
            vec![42.5, 5.0, 42.5]
        );
        // Everyone satisfied: the rest is unused.
        assert_eq!(split(100.0, &[Some(10.0), Some(20.0)]), vec![10.0, 20.0]);
        assert!(split(100.0, &[]).is_empty());
    }
}
