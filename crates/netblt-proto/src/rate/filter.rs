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
}
