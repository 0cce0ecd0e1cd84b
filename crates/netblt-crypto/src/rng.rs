//! Randomness comes in from the caller, so that tests are deterministic and the crate never
//! reaches for a global RNG on its own (sans-IO, like the engine's seeded `Config`).

use zeroize::Zeroize;

/// A source of cryptographically secure random bytes, supplied by the caller.
///
/// Production code passes [`OsRandom`]; tests pass [`SeededRandom`] so that every key, nonce
/// and cookie secret is reproducible.
pub trait SecureRandom {
    /// Fills `dest` with random bytes. Implementations that can fail must abort the handshake
    /// (return an error upstream) rather than hand out predictable bytes; [`OsRandom`] panics
    /// only if the operating system has no entropy source at all.
    fn fill(&mut self, dest: &mut [u8]);
}

/// The operating system's generator (`getrandom`).
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl SecureRandom for OsRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        // A machine without an entropy source cannot run this protocol safely: stopping is the
        // only correct answer, and it is not reachable from network input.
        getrandom::fill(dest).expect("the operating system has no random number generator");
    }
}

/// A deterministic generator for tests and simulations: the BLAKE3 extendable output keyed by
/// a 32-byte seed. Not for production keys (the seed is the whole secret).
#[derive(Clone)]
pub struct SeededRandom {
    reader: blake3::OutputReader,
}

impl SeededRandom {
    /// A stream determined by `seed`.
    pub fn new(seed: [u8; 32]) -> Self {
        let reader = blake3::Hasher::new_keyed(&seed).finalize_xof();
        SeededRandom { reader }
    }

    /// A stream determined by a small integer, for tests.
    pub fn from_u64(seed: u64) -> Self {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        Self::new(s)
    }

    /// A new independent stream seeded from `rng` (32 bytes drawn from it).
    pub fn from_rng(rng: &mut dyn SecureRandom) -> Self {
        let mut seed = [0u8; 32];
        rng.fill(&mut seed);
        let r = Self::new(seed);
        seed.zeroize();
        r
    }
}

impl core::fmt::Debug for SeededRandom {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SeededRandom(..)")
    }
}

impl SecureRandom for SeededRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        self.reader.fill(dest);
    }
}

/// Lets `spake2` (which wants a `rand_core` 0.6 generator) draw from our trait.
pub(crate) struct RandCoreAdapter<'a>(pub(crate) &'a mut dyn SecureRandom);

impl rand_core06::RngCore for RandCoreAdapter<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.0.fill(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.0.fill(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core06::Error> {
        self.0.fill(dest);
        Ok(())
    }
}

impl rand_core06::CryptoRng for RandCoreAdapter<'_> {}

/// Lets `snow` draw its ephemeral keys from a stream seeded by the caller's RNG.
pub(crate) struct SnowRandom(pub(crate) SeededRandom);

impl snow::types::Random for SnowRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill(dest);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_seed_dependent() {
        let (mut a, mut b, mut c) = (
            SeededRandom::from_u64(1),
            SeededRandom::from_u64(1),
            SeededRandom::from_u64(2),
        );
        let (mut x, mut y, mut z) = ([0u8; 40], [0u8; 40], [0u8; 40]);
        a.fill(&mut x);
        b.fill(&mut y);
        c.fill(&mut z);
        assert_eq!(x, y);
        assert_ne!(x, z);
    }
}
