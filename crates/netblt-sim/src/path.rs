//! [`PathConfig`]: everything the simulator needs to know about a path.

use netblt_link::config::MAX_DURATION;
use netblt_link::profiles::{EthernetSegment, HostModel, Profile};
use netblt_link::{ConfigError, LinkConfig};
use serde::{Deserialize, Serialize};

/// Which host (or, for a link, which sender).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// Host A, the data sender in the profiles; sends on the forward link.
    A,
    /// Host B; sends on the reverse link.
    B,
}

impl Side {
    /// The other host.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// Both links, both host models and the per-packet wire overhead.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PathConfig {
    /// A to B.
    pub forward: LinkConfig,
    /// B to A.
    pub reverse: LinkConfig,
    /// Host A's CPU and interface.
    pub host_a: HostModel,
    /// Host B's CPU and interface.
    pub host_b: HostModel,
    /// Bytes added to every datagram on the wire (headers, link framing):
    /// interfaces serialize and links carry `len + wire_overhead` bytes.
    pub wire_overhead: usize,
    /// A shared CSMA/CD segment both hosts transmit on (see the `ethernet`
    /// module); `None`: each interface serializes onto its own link at once.
    pub segment: Option<EthernetSegment>,
}

impl PathConfig {
    /// An ideal path: infinitely fast, no delay, free hosts.
    pub fn ideal() -> Self {
        PathConfig::default()
    }

    /// The links, hosts and overhead of a profile.
    pub fn from_profile(profile: &Profile) -> Self {
        PathConfig {
            forward: profile.forward.clone(),
            reverse: profile.reverse.clone(),
            host_a: profile.host_a.clone(),
            host_b: profile.host_b.clone(),
            wire_overhead: profile.wire_overhead,
            segment: profile.segment.clone(),
        }
    }

    /// The host model of `side`.
    pub fn host(&self, side: Side) -> &HostModel {
        match side {
            Side::A => &self.host_a,
            Side::B => &self.host_b,
        }
    }

    /// Checks both links and both hosts.
    pub fn validate(&self) -> Result<(), SimError> {
        self.forward.validate().map_err(|source| SimError::Link {
            sender: Side::A,
            source,
        })?;
        self.reverse.validate().map_err(|source| SimError::Link {
            sender: Side::B,
            source,
        })?;
        if let Some(seg) = &self.segment {
            seg.validate().map_err(|reason| SimError::Host {
                side: Side::A,
                reason,
            })?;
        }
        for side in [Side::A, Side::B] {
            validate_host(self.host(side)).map_err(|reason| SimError::Host { side, reason })?;
        }
        Ok(())
    }
}

impl From<&Profile> for PathConfig {
    fn from(profile: &Profile) -> Self {
        PathConfig::from_profile(profile)
    }
}

fn validate_host(h: &HostModel) -> Result<(), &'static str> {
    let per_byte_ok = |v: f64| v.is_finite() && (0.0..=1e9).contains(&v);
    if !per_byte_ok(h.send_per_byte_ns) || !per_byte_ok(h.recv_per_byte_ns) {
        return Err("per-byte costs must be finite, non-negative and at most 1 s");
    }
    if h.send_fixed > MAX_DURATION || h.recv_fixed > MAX_DURATION {
        return Err("fixed costs must be at most one day");
    }
    if h.nic_rate_bps == Some(0) {
        return Err("nic_rate_bps must be positive");
    }
    if h.nic_buffers == Some(0) {
        return Err("nic_buffers must be at least 1");
    }
    if !(0.0..=1.0).contains(&h.nic_loss) {
        return Err("nic_loss must be a probability in [0, 1]");
    }
    Ok(())
}

/// Why a simulation could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A link configuration was rejected.
    #[error("link sent by host {sender:?}: {source}")]
    Link {
        /// Host that sends on the bad link.
        sender: Side,
        /// What was wrong.
        source: ConfigError,
    },
    /// A host model was rejected.
    #[error("host {side:?}: {reason}")]
    Host {
        /// The bad host.
        side: Side,
        /// What was wrong.
        reason: &'static str,
    },
}
