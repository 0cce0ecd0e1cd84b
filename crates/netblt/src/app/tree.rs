//! The transfer's BLAKE3 digest, computed as a tree of 1 MiB units.
//!
//! BLAKE3 is itself a tree (its paper, §2.1): the digest of a file is the
//! root of a left-balanced binary tree over 1 KiB chunks. We hash the file
//! in fixed [`UNIT`]s of 1 MiB (a power-of-two number of chunks, so each unit
//! is a complete subtree, only the last may be short) and keep each unit's
//! chaining value (CV). The digest is then merged from the CVs, and is
//! exactly `blake3::hash(file)` (tested below against it for many sizes):
//! nothing changes on the wire.
//!
//! What this buys is resume (`--resume`): the receiver's journal is the list
//! of its units' CVs, so a resumed transfer hashes each byte once, at
//! either end. The unit CVs of what is already there are taken from the
//! journal (after re-reading the partial file to check them), the rest are
//! hashed as they arrive, and the digest still covers the whole file.
//!
//! We use the `blake3` crate's `hazmat` API, made for this (Bao-style
//! trees); no hashing is written here. Its doc: "choose some fixed
//! power-of-two subtree size … and divide your input up into slices of that
//! fixed length (with the final slice possibly short). This approach also
//! automatically satisfies the `max_subtree_len` bound".

use blake3::hazmat::{
    left_subtree_len, merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode,
};

use super::DIGEST_LEN;

/// Bytes per unit: 1 MiB = 1024 BLAKE3 chunks.
pub(crate) const UNIT: u64 = 1 << 20;

/// Hashes a byte stream (given in order, in any pieces) unit by unit.
pub(crate) struct TreeHasher {
    /// CVs of the units completed so far.
    cvs: Vec<ChainingValue>,
    /// The unit being filled, and its length.
    current: blake3::Hasher,
    current_len: u64,
}

impl Default for TreeHasher {
    fn default() -> Self {
        TreeHasher::new()
    }
}

impl TreeHasher {
    pub(crate) fn new() -> TreeHasher {
        TreeHasher {
            cvs: Vec::new(),
            current: blake3::Hasher::new(),
            current_len: 0,
        }
    }

    /// Starts after `cvs`, the chaining values of the first `cvs.len()`
    /// whole units (from a journal, already checked).
    pub(crate) fn resume(cvs: Vec<ChainingValue>) -> TreeHasher {
        let mut current = blake3::Hasher::new();
        current.set_input_offset(cvs.len() as u64 * UNIT);
        TreeHasher {
            cvs,
            current,
            current_len: 0,
        }
    }

    /// Bytes hashed so far (the resumed prefix included).
    pub(crate) fn len(&self) -> u64 {
        self.cvs.len() as u64 * UNIT + self.current_len
    }

    /// Units completed (their CVs are in [`cvs`](Self::cvs)). A full last
    /// unit counts only once a byte follows it.
    pub(crate) fn cvs(&self) -> &[ChainingValue] {
        &self.cvs
    }

    /// Hashes the next bytes.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.current_len == UNIT {
                // A byte follows a full unit: it is a complete, non-root
                // subtree (the file is longer than one unit).
                self.cvs.push(self.current.finalize_non_root());
                let mut h = blake3::Hasher::new();
                h.set_input_offset(self.cvs.len() as u64 * UNIT);
                self.current = h;
                self.current_len = 0;
            }
            let n = ((UNIT - self.current_len) as usize).min(bytes.len());
            self.current.update(&bytes[..n]);
            self.current_len += n as u64;
            bytes = &bytes[n..];
        }
    }

    /// The digest of everything hashed: `blake3::hash` of the stream.
    pub(crate) fn finalize(&self) -> [u8; DIGEST_LEN] {
        if self.cvs.is_empty() {
            // One unit (or none): the unit is the whole tree.
            return self.current.finalize().into();
        }
        let mut all = self.cvs.clone();
        all.push(self.current.finalize_non_root());
        let total = self.len();
        merge(&all, total, true)
    }
}

/// Root (or CV) of the subtree over `cvs`, the units of `len` bytes (the
/// last unit may be short). BLAKE3's left subtree holds the largest power of
/// two of bytes below `len`: a whole number of units when `len > UNIT`.
fn merge(cvs: &[ChainingValue], len: u64, root: bool) -> ChainingValue {
    if cvs.len() == 1 {
        return cvs[0];
    }
    let left_len = left_subtree_len(len);
    let k = ((left_len / UNIT) as usize).clamp(1, cvs.len() - 1);
    let l = merge(&cvs[..k], left_len, false);
    let r = merge(&cvs[k..], len - left_len, false);
    if root {
        *merge_subtrees_root(&l, &r, Mode::Hash).as_bytes()
    } else {
        merge_subtrees_non_root(&l, &r, Mode::Hash)
    }
}

/// A short fingerprint of a list of unit CVs: what the two ends compare
/// before resuming (the prefix they share).
pub(crate) fn prefix_hash(cvs: &[ChainingValue]) -> [u8; DIGEST_LEN] {
    let mut h = blake3::Hasher::new();
    for cv in cvs {
        h.update(cv);
    }
    h.finalize().into()
}

/// The CV of one whole unit `index` of a longer file.
pub(crate) fn unit_cv(index: u64, bytes: &[u8]) -> ChainingValue {
    let mut h = blake3::Hasher::new();
    h.set_input_offset(index * UNIT);
    h.update(bytes);
    h.finalize_non_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn equals_blake3_for_sizes_around_units() {
        let u = UNIT as usize;
        let big = data(5 * u + 3000);
        for n in [
            0,
            1,
            1024,
            u - 1,
            u,
            u + 1,
            2 * u,
            2 * u + 1,
            3 * u - 1,
            3 * u,
            3 * u + 7,
            4 * u,
            5 * u + 3000,
        ] {
            let input = &big[..n];
            // In odd pieces, as buffers arrive.
            let mut t = TreeHasher::new();
            for piece in input.chunks(100_003) {
                t.update(piece);
            }
            assert_eq!(t.finalize(), *blake3::hash(input).as_bytes(), "n = {n}");
            // Resumed after the whole units but the last.
            let whole = (n as u64).saturating_sub(1) / UNIT;
            let cvs: Vec<_> = (0..whole)
                .map(|i| unit_cv(i, &input[(i * UNIT) as usize..((i + 1) * UNIT) as usize]))
                .collect();
            if whole > 0 {
                assert_eq!(&cvs[..], t.cvs().get(..whole as usize).unwrap_or(&[]));
            }
            let mut r = TreeHasher::resume(cvs);
            r.update(&input[(whole * UNIT) as usize..]);
            assert_eq!(
                r.finalize(),
                *blake3::hash(input).as_bytes(),
                "resumed, n = {n}"
            );
        }
    }
}
