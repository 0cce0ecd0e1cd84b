//! Stateless cookies (WireGuard's cookie reply, QUIC's Retry token).
//!
//! ```text
//! cookie = bucket (4 bytes, big-endian: now / 60 s) ‖ MAC (16 bytes)
//! MAC    = BLAKE3-keyed(secret of that bucket, address (16 bytes, IPv4 mapped) ‖ port ‖ bucket)[..16]
//! ```
//!
//! The secret changes every bucket (a fresh random one each time, from the caller's RNG),
//! and only the current and previous buckets' secrets are kept: a cookie is valid for 60 to
//! 120 s, for the address and UDP port it was issued to only, and a secret leaked from
//! memory later does not forge old cookies. Verifying is one keyed hash: cheaper than the
//! Diffie-Hellman work it guards.

use std::net::{IpAddr, SocketAddr};

use subtle::ConstantTimeEq as _;
use zeroize::Zeroize;

use crate::rng::SecureRandom;

/// Bytes of a cookie.
pub const COOKIE_LEN: usize = 20;
/// Seconds per secret (and per bucket).
pub const BUCKET_SECS: u64 = 60;
const MAC_LEN: usize = 16;

/// A cookie as carried in the handshake envelope.
pub type Cookie = [u8; COOKIE_LEN];

/// Why a cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CookieError {
    /// Not 20 bytes.
    #[error("malformed cookie")]
    Malformed,
    /// Older than the previous bucket (or its secret is gone).
    #[error("expired cookie")]
    Expired,
    /// The MAC does not match this address and port, or the bucket is in the future.
    #[error("forged cookie")]
    Forged,
}

struct BucketSecret {
    bucket: u64,
    key: [u8; 32],
}

impl Drop for BucketSecret {
    fn drop(&mut self) {
        self.key.zeroize();
    }
}

/// Issues and checks cookies.
pub struct CookieGenerator {
    current: BucketSecret,
    previous: Option<BucketSecret>,
}

impl core::fmt::Debug for CookieGenerator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CookieGenerator(bucket {})", self.current.bucket)
    }
}

fn bucket_of(now_secs: u64) -> u64 {
    now_secs / BUCKET_SECS
}

fn mac(key: &[u8; 32], addr: SocketAddr, bucket: u32) -> [u8; MAC_LEN] {
    let ip = match addr.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(&ip.octets());
    h.update(&addr.port().to_be_bytes());
    h.update(&bucket.to_be_bytes());
    let mut out = [0u8; MAC_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..MAC_LEN]);
    out
}

impl CookieGenerator {
    /// A generator with a fresh secret for the bucket of `now_secs`.
    pub fn new(now_secs: u64, rng: &mut dyn SecureRandom) -> Self {
        let mut key = [0u8; 32];
        rng.fill(&mut key);
        CookieGenerator {
            current: BucketSecret {
                bucket: bucket_of(now_secs),
                key,
            },
            previous: None,
        }
    }

    /// Moves to a new secret if the bucket changed (called by [`issue`](Self::issue); call it
    /// from a timer too so that old secrets are forgotten on time).
    pub fn rotate(&mut self, now_secs: u64, rng: &mut dyn SecureRandom) {
        let bucket = bucket_of(now_secs);
        if bucket <= self.current.bucket {
            return;
        }
        let mut key = [0u8; 32];
        rng.fill(&mut key);
        let old = core::mem::replace(&mut self.current, BucketSecret { bucket, key });
        self.previous = (old.bucket + 1 == bucket).then_some(old);
    }

    /// A cookie for `addr`, valid until the end of the next bucket.
    pub fn issue(&mut self, now_secs: u64, addr: SocketAddr, rng: &mut dyn SecureRandom) -> Cookie {
        self.rotate(now_secs, rng);
        // Buckets of 60 s fit u32 for 8000 years.
        let bucket = self.current.bucket as u32;
        let mut c = [0u8; COOKIE_LEN];
        c[..4].copy_from_slice(&bucket.to_be_bytes());
        c[4..].copy_from_slice(&mac(&self.current.key, addr, bucket));
        c
    }

    /// Checks a cookie presented by `addr` at `now_secs`.
    pub fn verify(
        &self,
        now_secs: u64,
        addr: SocketAddr,
        cookie: &[u8],
    ) -> Result<(), CookieError> {
        let cookie: &Cookie = cookie.try_into().map_err(|_| CookieError::Malformed)?;
        let bucket = u32::from_be_bytes([cookie[0], cookie[1], cookie[2], cookie[3]]);
        let now = bucket_of(now_secs);
        let b = u64::from(bucket);
        if b > now {
            return Err(CookieError::Forged);
        }
        if now - b > 1 {
            return Err(CookieError::Expired);
        }
        let secret = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|s| s.bucket == b)
            .ok_or(CookieError::Expired)?;
        let expected = mac(&secret.key, addr, bucket);
        if bool::from(expected.ct_eq(&cookie[4..])) {
            Ok(())
        } else {
            Err(CookieError::Forged)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeededRandom;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn valid_expired_forged() {
        let mut rng = SeededRandom::from_u64(1);
        let mut g = CookieGenerator::new(1000, &mut rng);
        let a = addr("192.0.2.1:4000");
        let c = g.issue(1000, a, &mut rng);
        assert_eq!(g.verify(1000, a, &c), Ok(()));
        // Valid through the next bucket (1000 s is in bucket 16: up to 1079 s).
        assert_eq!(g.verify(1079, a, &c), Ok(()));
        g.rotate(1079, &mut rng);
        assert_eq!(g.verify(1079, a, &c), Ok(()));
        assert_eq!(g.verify(1080, a, &c), Err(CookieError::Expired));
        // Another port or address, or any flipped bit: forged.
        assert_eq!(
            g.verify(1000, addr("192.0.2.1:4001"), &c),
            Err(CookieError::Forged)
        );
        assert_eq!(
            g.verify(1000, addr("192.0.2.2:4000"), &c),
            Err(CookieError::Forged)
        );
        for bit in 32..COOKIE_LEN * 8 {
            let mut f = c;
            f[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(g.verify(1000, a, &f), Err(CookieError::Forged), "bit {bit}");
        }
        // A bucket in the future, or a wrong length.
        let mut f = c;
        f[3] = f[3].wrapping_add(1);
        assert_eq!(g.verify(1000, a, &f), Err(CookieError::Forged));
        assert_eq!(g.verify(1000, a, &c[..19]), Err(CookieError::Malformed));
    }

    #[test]
    fn secrets_are_forgotten() {
        let mut rng = SeededRandom::from_u64(2);
        let mut g = CookieGenerator::new(0, &mut rng);
        let a = addr("[2001:db8::1]:9998");
        let c = g.issue(59, a, &mut rng);
        // A generator that skipped a bucket keeps no old secret.
        g.rotate(200, &mut rng);
        assert_eq!(g.verify(61, a, &c), Err(CookieError::Expired));
        // Another generator (another secret) does not accept it either.
        let g2 = CookieGenerator::new(0, &mut SeededRandom::from_u64(3));
        assert_eq!(g2.verify(59, a, &c), Err(CookieError::Forged));
    }
}
