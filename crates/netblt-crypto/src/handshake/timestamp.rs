//! The timestamp an IK initiation carries, encrypted, so that the passive end can refuse a
//! replayed initiation without answering it (decision K19).
//!
//! WireGuard's rule (whitepaper §5.1, "the responder keeps track of the greatest timestamp
//! received per peer and discards packets containing timestamps less than or equal to it"),
//! with two changes for NETBLT, where one sender key may open several connections at once
//! and a receiver is often a short-lived process:
//!
//! * **Reordering**: per key, the newest [`FreshnessConfig::recent_per_key`] accepted
//!   timestamps are remembered exactly, and a timestamp is accepted if it is above the key's
//!   floor (the greatest timestamp ever forgotten), is not among them, and, once they fill
//!   their slots, is newer than the oldest of them. Two connections that took their
//!   timestamps in one order and reached the receiver in the other both get in; no accepted
//!   timestamp is ever accepted again. With one slot this is WireGuard's rule exactly.
//! * **A freshness window**: a timestamp more than [`FreshnessConfig::max_age_secs`] behind
//!   the receiver's clock, or more than [`FreshnessConfig::max_ahead_secs`] ahead of it, is
//!   refused. The ordering alone protects nothing across a restart of the receiver (it
//!   starts with no memory, and `netblt recv` often runs for one transfer); the window
//!   bounds a replay to initiations captured within the last few minutes. Its price is that
//!   the two clocks must agree to within the window (the refusal says so).
//!
//! Memory is bounded: at most [`FreshnessConfig::max_keys`] keys are remembered. A key
//! whose newest timestamp fell out of the window is forgotten first (nothing it sent can
//! pass the window again); if all are recent, the least recently accepted key is. Either
//! way the forgotten key's greatest timestamp raises a global floor that every key without
//! an entry must exceed, so forgetting never reopens a replay.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::keys::PublicKey;

/// Length of an encoded [`Tai64n`].
pub const TIMESTAMP_LEN: usize = 12;

/// TAI64 label of the Unix epoch: 2^62 + 10 (TAI was 10 s ahead of UTC in 1970), as
/// WireGuard and djb's libtai write it.
const TAI64_EPOCH: u64 = (1 << 62) + 10;

/// A TAI64N timestamp: an 8-byte big-endian TAI64 label (2^62 + 10 + Unix seconds) and a
/// 4-byte big-endian count of nanoseconds, 12 bytes in all, as in WireGuard's handshake
/// initiation. Byte order is numeric order, so timestamps compare as their encodings do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tai64n {
    label: u64,
    nanos: u32,
}

impl Tai64n {
    /// From seconds and nanoseconds since the Unix epoch (nanoseconds above 999,999,999
    /// are clamped).
    pub fn from_unix(secs: u64, nanos: u32) -> Self {
        Tai64n {
            label: TAI64_EPOCH.saturating_add(secs),
            nanos: nanos.min(999_999_999),
        }
    }

    /// From a wall-clock time (the caller reads the clock: this crate has none). Times
    /// before 1970 map to the epoch.
    pub fn from_system_time(t: SystemTime) -> Self {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        Self::from_unix(d.as_secs(), d.subsec_nanos())
    }

    /// Seconds since the Unix epoch (0 for a label before it).
    pub fn unix_secs(self) -> u64 {
        self.label.saturating_sub(TAI64_EPOCH)
    }

    /// Nanoseconds since the Unix epoch, saturating.
    pub fn unix_nanos(self) -> u128 {
        u128::from(self.unix_secs()) * 1_000_000_000 + u128::from(self.nanos)
    }

    /// The next timestamp after this one (one nanosecond later).
    pub fn next(self) -> Self {
        if self.nanos < 999_999_999 {
            Tai64n {
                label: self.label,
                nanos: self.nanos + 1,
            }
        } else {
            Tai64n {
                label: self.label.saturating_add(1),
                nanos: 0,
            }
        }
    }

    /// This timestamp moved by `secs` seconds (saturating at both ends).
    fn shifted(self, secs: i64) -> Self {
        let label = if secs >= 0 {
            self.label.saturating_add(secs.unsigned_abs())
        } else {
            self.label.saturating_sub(secs.unsigned_abs())
        };
        Tai64n {
            label,
            nanos: self.nanos,
        }
    }

    /// The 12-byte encoding.
    pub fn to_bytes(self) -> [u8; TIMESTAMP_LEN] {
        let mut b = [0u8; TIMESTAMP_LEN];
        b[..8].copy_from_slice(&self.label.to_be_bytes());
        b[8..].copy_from_slice(&self.nanos.to_be_bytes());
        b
    }

    /// Parses the 12-byte encoding; `None` if the slice is not 12 bytes, the nanoseconds
    /// are not below 10^9, or the label's top bit is set (TAI64 reserves it).
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; TIMESTAMP_LEN] = b.try_into().ok()?;
        let mut l = [0u8; 8];
        l.copy_from_slice(&b[..8]);
        let mut n = [0u8; 4];
        n.copy_from_slice(&b[8..]);
        let (label, nanos) = (u64::from_be_bytes(l), u32::from_be_bytes(n));
        (nanos <= 999_999_999 && label >> 63 == 0).then_some(Tai64n { label, nanos })
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Tai64n) -> Duration {
        let d = self.unix_nanos().saturating_sub(earlier.unix_nanos());
        Duration::new(
            (d / 1_000_000_000).try_into().unwrap_or(u64::MAX),
            (d % 1_000_000_000) as u32,
        )
    }
}

/// The limits of an [`InitiationFreshness`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreshnessConfig {
    /// Keys remembered at most (memory: about 220 bytes each).
    pub max_keys: usize,
    /// Accepted timestamps remembered exactly per key (1 = WireGuard's rule).
    pub recent_per_key: usize,
    /// Refuse a timestamp this far behind the receiver's clock.
    pub max_age_secs: u64,
    /// Refuse a timestamp this far ahead of the receiver's clock.
    pub max_ahead_secs: u64,
}

impl Default for FreshnessConfig {
    /// 4096 keys (under 1 MB), 8 timestamps per key, a window of ±300 s (Kerberos' default
    /// clock skew).
    fn default() -> Self {
        FreshnessConfig {
            max_keys: 4096,
            recent_per_key: RECENT_MAX,
            max_age_secs: 300,
            max_ahead_secs: 300,
        }
    }
}

/// Upper bound on [`FreshnessConfig::recent_per_key`] (the remembered timestamps live in a
/// fixed array).
pub const RECENT_MAX: usize = 8;

/// Why an initiation's timestamp was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FreshnessError {
    /// Not newer than what this key already used: a replay (drop it, answer nothing).
    #[error("replayed initiation (timestamp not newer than one already accepted)")]
    Replayed,
    /// Older than the window: a replay of an old capture, or the sender's clock is behind.
    #[error("initiation timestamp {} s behind this host's clock", .0.as_secs())]
    TooOld(Duration),
    /// Ahead of the window: the sender's clock is ahead.
    #[error("initiation timestamp {} s ahead of this host's clock", .0.as_secs())]
    TooNew(Duration),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Everything at or below this is refused for this key.
    floor: Tai64n,
    /// Accepted timestamps above the floor, ascending; the first `len` are used.
    recent: [Tai64n; RECENT_MAX],
    len: u8,
}

impl Entry {
    fn newest(&self) -> Tai64n {
        match self.len {
            0 => self.floor,
            n => self.recent[usize::from(n) - 1],
        }
    }
}

/// Per-key memory of accepted IK initiation timestamps (see the module docs). Sans-IO: the
/// caller passes the receiver's clock as `now`.
#[derive(Debug)]
pub struct InitiationFreshness {
    cfg: FreshnessConfig,
    keys: HashMap<PublicKey, Entry>,
    /// Every key without an entry must be above this.
    floor: Tai64n,
}

impl InitiationFreshness {
    /// An empty memory with these limits (`recent_per_key` is clamped to 1..=8, `max_keys`
    /// to at least 1).
    pub fn new(cfg: FreshnessConfig) -> Self {
        let cfg = FreshnessConfig {
            max_keys: cfg.max_keys.max(1),
            recent_per_key: cfg.recent_per_key.clamp(1, RECENT_MAX),
            ..cfg
        };
        InitiationFreshness {
            cfg,
            keys: HashMap::new(),
            floor: Tai64n::default(),
        }
    }

    /// The limits in force (after clamping).
    pub fn config(&self) -> FreshnessConfig {
        self.cfg
    }

    /// Keys remembered now (at most `max_keys`).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks the timestamp `t` of an authenticated initiation from `key` at the
    /// receiver's time `now`, and remembers it if it is accepted. Call it only after the
    /// initiation decrypted (the timestamp is then the key holder's own) and before
    /// answering or keeping any state for it.
    pub fn check(&mut self, key: &PublicKey, t: Tai64n, now: Tai64n) -> Result<(), FreshnessError> {
        let too_old = now.shifted(-(self.cfg.max_age_secs.min(i64::MAX as u64) as i64));
        let too_new = now.shifted(self.cfg.max_ahead_secs.min(i64::MAX as u64) as i64);
        if t < too_old {
            return Err(FreshnessError::TooOld(now.saturating_since(t)));
        }
        if t > too_new {
            return Err(FreshnessError::TooNew(t.saturating_since(now)));
        }
        if let Some(e) = self.keys.get_mut(key) {
            let n = usize::from(e.len);
            if t <= e.floor || e.recent[..n].contains(&t) {
                return Err(FreshnessError::Replayed);
            }
            let at = e.recent[..n].partition_point(|&x| x < t);
            if n == self.cfg.recent_per_key {
                if at == 0 {
                    // Older than every remembered one with no slot free: beyond
                    // the reordering we tolerate (with one slot, WireGuard's
                    // "not greater than the greatest").
                    return Err(FreshnessError::Replayed);
                }
                // Full: the oldest goes, and becomes the floor.
                e.floor = e.recent[0];
                e.recent.copy_within(1..at, 0);
                e.recent[at - 1] = t;
            } else {
                e.recent.copy_within(at..n, at + 1);
                e.recent[at] = t;
                e.len += 1;
            }
            return Ok(());
        }
        if t <= self.floor {
            return Err(FreshnessError::Replayed);
        }
        if self.keys.len() >= self.cfg.max_keys {
            self.make_room(too_old, now);
        }
        let mut recent = [Tai64n::default(); RECENT_MAX];
        recent[0] = t;
        self.keys.insert(
            *key,
            Entry {
                floor: self.floor,
                recent,
                len: 1,
            },
        );
        Ok(())
    }

    /// Forgets keys until one more fits: first every key whose newest timestamp fell out
    /// of the window, else the key accepted least recently. Each forgotten key's newest
    /// timestamp raises the global floor.
    fn make_room(&mut self, too_old: Tai64n, now: Tai64n) {
        let before = self.keys.len();
        let mut floor = self.floor;
        self.keys.retain(|_, e| {
            let keep = e.newest() >= too_old;
            if !keep {
                floor = floor.max(e.newest());
            }
            keep
        });
        self.floor = floor;
        if self.keys.len() < before {
            return;
        }
        if let Some((k, newest)) = self
            .keys
            .iter()
            .map(|(k, e)| (*k, e.newest()))
            .min_by_key(|&(_, n)| n)
        {
            self.keys.remove(&k);
            // Never above our own clock: a flood of throwaway keys dated up
            // to the window ahead would otherwise lift the floor into the
            // future and silently refuse every new key's fresh initiation
            // until our clock caught up. What this leaves open is a replay
            // of an evicted key's initiation dated ahead of our clock, and
            // only after 4096 keys pushed it out.
            self.floor = self.floor.max(newest.min(now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Identity;
    use crate::rng::SeededRandom;

    fn key(i: u64) -> PublicKey {
        Identity::generate(&mut SeededRandom::from_u64(i)).public()
    }

    fn at(secs: u64, nanos: u32) -> Tai64n {
        Tai64n::from_unix(1_800_000_000 + secs, nanos)
    }

    #[test]
    fn encoding_round_trips_and_orders_like_its_bytes() {
        let a = Tai64n::from_unix(1_700_000_000, 999_999_999);
        let b = a.next();
        assert_eq!(b, Tai64n::from_unix(1_700_000_001, 0));
        assert!(a < b && a.to_bytes() < b.to_bytes());
        assert_eq!(Tai64n::from_bytes(&a.to_bytes()), Some(a));
        // WireGuard's label for the Unix epoch.
        assert_eq!(
            Tai64n::from_unix(0, 0).to_bytes()[..8],
            0x4000_0000_0000_000a_u64.to_be_bytes()
        );
        let mut bad = a.to_bytes();
        bad[8..].copy_from_slice(&1_000_000_000u32.to_be_bytes());
        assert_eq!(Tai64n::from_bytes(&bad), None);
        assert_eq!(Tai64n::from_bytes(&[0; 11]), None);
        assert_eq!(Tai64n::from_bytes(&[0xff; 12]), None);
        assert_eq!(b.saturating_since(a), Duration::from_nanos(1));
        assert_eq!(a.saturating_since(b), Duration::ZERO);
    }

    #[test]
    fn one_remembered_timestamp_is_wireguards_rule() {
        let mut f = InitiationFreshness::new(FreshnessConfig {
            recent_per_key: 1,
            ..FreshnessConfig::default()
        });
        let (k, now) = (key(1), at(0, 0));
        assert_eq!(f.check(&k, at(0, 10), now), Ok(()));
        assert_eq!(f.check(&k, at(0, 10), now), Err(FreshnessError::Replayed));
        assert_eq!(f.check(&k, at(0, 9), now), Err(FreshnessError::Replayed));
        assert_eq!(f.check(&k, at(0, 11), now), Ok(()));
        assert_eq!(f.check(&k, at(0, 10), now), Err(FreshnessError::Replayed));
        // Another key has its own order.
        assert_eq!(f.check(&key(2), at(0, 5), now), Ok(()));
    }

    #[test]
    fn reordered_initiations_of_one_key_pass_once_each() {
        let mut f = InitiationFreshness::new(FreshnessConfig::default());
        let (k, now) = (key(1), at(0, 0));
        // Taken as 1, 2, 3 by three threads; arrived as 3, 1, 2; then all replayed.
        for t in [3, 1, 2] {
            assert_eq!(f.check(&k, at(0, t), now), Ok(()), "{t}");
        }
        for t in [1, 2, 3] {
            assert_eq!(f.check(&k, at(0, t), now), Err(FreshnessError::Replayed));
        }
        // Twenty more: the oldest are forgotten into the floor, never accepted again.
        for t in 10..30 {
            assert_eq!(f.check(&k, at(0, t), now), Ok(()));
        }
        for t in (0..30).chain([4, 5]) {
            assert_eq!(
                f.check(&k, at(0, t), now),
                Err(FreshnessError::Replayed),
                "{t}"
            );
        }
        // Below the floor even if never seen.
        assert_eq!(f.check(&k, at(0, 15), now), Err(FreshnessError::Replayed));
        assert_eq!(f.check(&k, at(0, 30), now), Ok(()));
    }

    #[test]
    fn reordering_is_tolerated_only_as_deep_as_the_slots() {
        let mut f = InitiationFreshness::new(FreshnessConfig {
            recent_per_key: 2,
            ..FreshnessConfig::default()
        });
        let (k, now) = (key(1), at(0, 0));
        assert_eq!(f.check(&k, at(0, 10), now), Ok(()));
        assert_eq!(f.check(&k, at(0, 5), now), Ok(())); // one slot was free
        assert_eq!(f.check(&k, at(0, 20), now), Ok(())); // 5 becomes the floor
        for t in [3, 5, 7, 10, 20] {
            assert_eq!(
                f.check(&k, at(0, t), now),
                Err(FreshnessError::Replayed),
                "{t}"
            );
        }
        assert_eq!(f.check(&k, at(0, 15), now), Ok(())); // between the two kept
        assert_eq!(f.check(&k, at(0, 12), now), Err(FreshnessError::Replayed));
    }

    #[test]
    fn the_window_refuses_old_and_future_timestamps() {
        let mut f = InitiationFreshness::new(FreshnessConfig::default());
        let (k, now) = (key(1), at(1000, 0));
        assert_eq!(
            f.check(&k, at(699, 0), now),
            Err(FreshnessError::TooOld(Duration::from_secs(301)))
        );
        assert_eq!(
            f.check(&k, at(1301, 0), now),
            Err(FreshnessError::TooNew(Duration::from_secs(301)))
        );
        assert_eq!(f.check(&k, at(700, 0), now), Ok(()));
        assert_eq!(f.check(&k, at(1300, 0), now), Ok(()));
        assert!(!f.is_empty() && f.len() == 1);
    }

    /// Keys dated ahead of our clock (within the window) that fill the
    /// table do not lock out a new key's initiation dated now.
    #[test]
    fn a_flood_of_future_keys_does_not_lock_out_new_ones() {
        let mut f = InitiationFreshness::new(FreshnessConfig {
            max_keys: 16,
            ..FreshnessConfig::default()
        });
        let now = at(1000, 0);
        for i in 0..64u64 {
            assert_eq!(f.check(&key(i), at(1299, i as u32), now), Ok(()));
        }
        assert_eq!(f.check(&key(10_000), at(1000, 1), now), Ok(()));
    }

    #[test]
    fn memory_is_bounded_and_forgetting_never_reopens_a_replay() {
        let mut f = InitiationFreshness::new(FreshnessConfig {
            max_keys: 16,
            ..FreshnessConfig::default()
        });
        let now = at(1000, 0);
        for i in 0..1000u64 {
            assert_eq!(f.check(&key(i), at(900, i as u32), now), Ok(()));
            assert!(f.len() <= 16);
        }
        // Key 0 was forgotten long ago: its initiation is still refused (global floor).
        assert_eq!(
            f.check(&key(0), at(900, 0), now),
            Err(FreshnessError::Replayed)
        );
        // Every remembered or forgotten one is refused; a newer one of key 0 gets in.
        for i in (0..1000u64).step_by(97) {
            assert_eq!(
                f.check(&key(i), at(900, i as u32), now),
                Err(FreshnessError::Replayed),
                "{i}"
            );
        }
        assert_eq!(f.check(&key(0), at(901, 0), now), Ok(()));
        // Keys out of the window are forgotten first, as the clock moves on.
        let later = at(1300, 0);
        assert_eq!(f.check(&key(5000), at(1299, 0), later), Ok(()));
        assert!(f.len() <= 2, "{}", f.len());
    }
}
