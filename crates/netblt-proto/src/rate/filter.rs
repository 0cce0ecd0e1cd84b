//! A windowed maximum over rounds (BBR's bottleneck-bandwidth filter):
//! the largest value seen in the last `window` rounds.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub(crate) struct MaxFilter {
    window: u64,
    /// (round, value), values decreasing from front to back.
    q: VecDeque<(u64, f64)>,
}

impl MaxFilter {
    pub(crate) fn new(window: u64) -> Self {
        MaxFilter {
            window,
            q: VecDeque::new(),
        }
    }

    pub(crate) fn update(&mut self, round: u64, v: f64) {
        while self.q.back().is_some_and(|&(_, b)| b <= v) {
            self.q.pop_back();
        }
        self.q.push_back((round, v));
        self.expire(round);
    }

    pub(crate) fn expire(&mut self, round: u64) {
        while self
            .q
            .front()
            .is_some_and(|&(r, _)| r + self.window <= round)
            && self.q.len() > 1
        {
            self.q.pop_front();
        }
    }

    pub(crate) fn get(&self) -> Option<f64> {
        self.q.front().map(|&(_, v)| v)
    }

    /// Forgets everything and starts from `v`.
    pub(crate) fn reset(&mut self, round: u64, v: f64) {
        self.q.clear();
        self.q.push_back((round, v));
    }
}

/// A windowed minimum over rounds: the smallest value seen in the last
/// `window` rounds (a [`MaxFilter`] of the negated values).
#[derive(Debug, Clone)]
pub(crate) struct MinFilter(MaxFilter);

impl MinFilter {
    pub(crate) fn new(window: u64) -> Self {
        MinFilter(MaxFilter::new(window))
    }

    pub(crate) fn update(&mut self, round: u64, v: f64) {
        self.0.update(round, -v);
    }

    /// The minimum of the window, if any value is still in it at `round`.
    pub(crate) fn get(&self, round: u64) -> Option<f64> {
        let (r, v) = *self.0.q.front()?;
        (r + self.0.window > round).then_some(-v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_max_of_the_window() {
        let mut f = MaxFilter::new(3);
        f.update(0, 5.0);
        f.update(1, 3.0);
        assert_eq!(f.get(), Some(5.0));
        f.update(2, 4.0);
        f.update(3, 1.0);
        // round 0 left the window
        assert_eq!(f.get(), Some(4.0));
        f.update(6, 2.0);
        assert_eq!(f.get(), Some(2.0));
        f.reset(7, 9.0);
        assert_eq!(f.get(), Some(9.0));
    }

    #[test]
    fn keeps_the_min_of_the_window_and_forgets_it_after() {
        let mut f = MinFilter::new(3);
        assert_eq!(f.get(0), None);
        f.update(0, 2.0);
        f.update(1, 5.0);
        assert_eq!(f.get(1), Some(2.0));
        f.update(3, 4.0);
        // round 0 left the window
        assert_eq!(f.get(3), Some(4.0));
        // nothing new for a whole window: nothing is known
        assert_eq!(f.get(6), None);
    }
}
