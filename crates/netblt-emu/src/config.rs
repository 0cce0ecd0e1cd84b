//! What an emulation is: a name, one link model per direction, the device MTU.

use std::net::{Ipv4Addr, Ipv6Addr};

use netblt_link::profiles::{self, Profile};
use netblt_link::LinkConfig;
use serde::{Deserialize, Serialize};

use crate::error::EmuError;

/// Address of the left side (198.18.0.0/15 is reserved for benchmarking by
/// RFC 2544, so it never collides with a real network).
pub const LEFT_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// Address of the right side: the right side is reachable at 198.18.0.2.
pub const RIGHT_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// IPv6 address of the left side with `ipv6` on (unique local, RFC 4193).
pub const LEFT_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x6e62, 0, 0, 0, 0, 0, 1);
/// IPv6 address of the right side with `ipv6` on.
pub const RIGHT_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x6e62, 0, 0, 0, 0, 0, 2);

/// Device MTU when neither the profile nor the caller gives one (Ethernet's).
pub const DEFAULT_MTU: usize = 1500;

/// Smallest MTU the kernel accepts for an IPv4 TUN device.
pub const MIN_MTU: usize = 68;
/// Largest MTU of a TUN device.
pub const MAX_MTU: usize = 65_535;

/// Longest emulation name: namespace names stay short and readable.
pub const MAX_NAME: usize = 24;

/// Salt mixed into the seed of the reverse direction's link model so the two
/// directions draw independent random numbers from one user-visible seed.
const REVERSE_SEED_SALT: u64 = 0x5265_7665_7273_6521; // "Reverse!"

/// Configuration of one emulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmuConfig {
    /// Name: the namespaces are `nb-<name>-l` and `nb-<name>-r`.
    pub name: String,
    /// Left to right (a profile's data direction, host A to host B).
    pub forward: LinkConfig,
    /// Right to left.
    pub reverse: LinkConfig,
    /// MTU of both TUN devices.
    pub mtu: usize,
    /// Give the devices IPv6 addresses ([`LEFT_V6`], [`RIGHT_V6`]); when
    /// false, IPv6 is disabled inside the namespaces so no router
    /// solicitations or MLD reports cross the emulated link.
    pub ipv6: bool,
    /// Seed of the forward link model (the reverse one derives its own).
    pub seed: u64,
    /// Run the forwarding threads SCHED_FIFO so they wake on time on a busy
    /// host (otherwise nice -20). See the crate documentation.
    pub realtime: bool,
    /// A NAT at the left edge that gives the left side's UDP flows new
    /// source ports every this often, dropping what comes back to the old
    /// ones (`--nat-rebind`; module `nat`). `None`: no NAT.
    pub nat_rebind: Option<std::time::Duration>,
}

impl EmuConfig {
    /// An ideal link (no rate limit, no delay) with MTU 1500.
    pub fn new(name: impl Into<String>) -> Self {
        EmuConfig {
            name: name.into(),
            forward: LinkConfig::default(),
            reverse: LinkConfig::default(),
            mtu: DEFAULT_MTU,
            ipv6: false,
            seed: 1,
            realtime: true,
            nat_rebind: None,
        }
    }

    /// The links of `profile`; the device MTU is the profile's (the larger of
    /// the two directions), or 1500. Host models and wire overhead are for the
    /// simulator: here real hosts and real headers take their place.
    pub fn from_profile(name: impl Into<String>, profile: &Profile) -> Self {
        let mtu = profile
            .forward
            .mtu
            .into_iter()
            .chain(profile.reverse.mtu)
            .max()
            .unwrap_or(DEFAULT_MTU)
            .clamp(MIN_MTU, MAX_MTU);
        EmuConfig {
            forward: profile.forward.clone(),
            reverse: profile.reverse.clone(),
            mtu,
            ..EmuConfig::new(name)
        }
    }

    /// Like [`from_profile`](Self::from_profile), by profile name.
    pub fn from_profile_name(name: impl Into<String>, profile: &str) -> Result<Self, EmuError> {
        let p = profiles::profile(profile).ok_or_else(|| EmuError::UnknownProfile {
            name: profile.to_owned(),
            known: profiles::names().join(", "),
        })?;
        Ok(Self::from_profile(name, &p))
    }

    /// Name of the left namespace.
    pub fn left_ns(&self) -> String {
        format!("nb-{}-l", self.name)
    }

    /// Name of the right namespace.
    pub fn right_ns(&self) -> String {
        format!("nb-{}-r", self.name)
    }

    /// Seed of the reverse link model.
    pub fn reverse_seed(&self) -> u64 {
        self.seed ^ REVERSE_SEED_SALT
    }

    /// Checks what the system calls would otherwise reject half-way.
    pub fn validate(&self) -> Result<(), EmuError> {
        check_name(&self.name)?;
        if !(MIN_MTU..=MAX_MTU).contains(&self.mtu) {
            return Err(EmuError::Knob(format!(
                "mtu {} is outside {MIN_MTU}..={MAX_MTU}",
                self.mtu
            )));
        }
        self.forward.validate()?;
        self.reverse.validate()?;
        Ok(())
    }
}

/// Accepts names made of `[A-Za-z0-9_-]`, 1 to [`MAX_NAME`] long: they become
/// namespace and file names, so nothing that could escape a path.
pub fn check_name(name: &str) -> Result<(), EmuError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(EmuError::BadName(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("bench-1_a").is_ok());
        for bad in ["", "a/b", "../x", "a b", "x".repeat(MAX_NAME + 1).as_str()] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let cfg = EmuConfig::new("t");
        assert_eq!(cfg.left_ns(), "nb-t-l");
        assert_eq!(cfg.right_ns(), "nb-t-r");
        assert_ne!(cfg.seed, cfg.reverse_seed());
    }

    #[test]
    fn validate_mtu() {
        let mut cfg = EmuConfig::new("t");
        assert!(cfg.validate().is_ok());
        cfg.mtu = 60;
        assert!(cfg.validate().is_err());
    }
}
