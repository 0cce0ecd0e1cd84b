//! What the library's end-to-end tests share: test data and the encrypted
//! security setting.
#![allow(dead_code)] // each test binary uses its own part

use std::path::Path;

use netblt::{Encryption, Security};

/// `n` bytes of an xorshift stream: different for each seed, the same
/// every run.
pub(crate) fn data(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Encrypted mode with the keys in `dir` (made on first use); with
/// `accept_any`, the passive end takes any sender's key.
pub(crate) fn encrypted(dir: &Path, accept_any: bool) -> Security {
    let mut e = Encryption::default();
    e.key_dir = Some(dir.to_path_buf());
    e.accept_any = accept_any;
    Security::Encrypted(e)
}
