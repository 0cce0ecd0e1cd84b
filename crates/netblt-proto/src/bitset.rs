//! A fixed-size bit set for per-buffer packet bookkeeping.

#[derive(Debug, Clone, Default)]
pub(crate) struct BitSet {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl BitSet {
    pub(crate) fn new(len: usize) -> Self {
        BitSet {
            words: vec![0; len.div_ceil(64)],
            len,
            ones: 0,
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.ones
    }

    pub(crate) fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Sets bit `i`; returns true if it was clear. Out-of-range is ignored.
    pub(crate) fn insert(&mut self, i: usize) -> bool {
        if i >= self.len {
            return false;
        }
        let Some(w) = self.words.get_mut(i / 64) else {
            return false;
        };
        let m = 1u64 << (i % 64);
        if *w & m != 0 {
            return false;
        }
        *w |= m;
        self.ones += 1;
        true
    }

    /// Clears bit `i`; returns true if it was set.
    pub(crate) fn remove(&mut self, i: usize) -> bool {
        let Some(w) = self.words.get_mut(i / 64) else {
            return false;
        };
        let m = 1u64 << (i % 64);
        if *w & m == 0 {
            return false;
        }
        *w &= !m;
        self.ones -= 1;
        true
    }

    /// The lowest set bit at or after `from`.
    pub(crate) fn next_set(&self, from: usize) -> Option<usize> {
        let mut wi = from / 64;
        let mut w = *self.words.get(wi)? & (!0u64 << (from % 64));
        loop {
            if w != 0 {
                let i = wi * 64 + w.trailing_zeros() as usize;
                return (i < self.len).then_some(i);
            }
            wi += 1;
            w = *self.words.get(wi)?;
        }
    }

    /// Indices below `limit` whose bit is clear, in order.
    pub(crate) fn clear_below(&self, limit: usize) -> impl Iterator<Item = usize> + '_ {
        (0..limit.min(self.len)).filter(move |&i| !self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic() {
        let mut b = BitSet::new(130);
        assert!(b.insert(0) && b.insert(64) && b.insert(129));
        assert!(!b.insert(64) && !b.insert(130));
        assert_eq!(b.count(), 3);
        assert_eq!(b.next_set(1), Some(64));
        assert_eq!(b.next_set(65), Some(129));
        assert!(b.remove(129));
        assert_eq!(b.next_set(65), None);
        assert_eq!(b.clear_below(3).collect::<Vec<_>>(), vec![1, 2]);
    }
}
