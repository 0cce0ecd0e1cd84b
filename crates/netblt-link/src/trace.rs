//! Mahimahi-style delivery traces.
//!
//! A mahimahi trace file (`mm-link`) lists, one per line, the millisecond
//! offsets at which the link may deliver one MTU-sized packet. Several lines
//! with the same number mean several opportunities in that millisecond; the
//! list repeats forever with a period equal to its last offset. We use the
//! same text format so published cellular traces run unchanged, and, as
//! mahimahi does, we account in bytes: an opportunity carries up to
//! [`BYTES_PER_OPPORTUNITY`] bytes, several small packets may share one and a
//! large one may span several. Unused opportunities are lost, as on a real
//! radio link.

use serde::{Deserialize, Serialize};

use crate::config::MAX_DURATION;

/// Bytes one delivery opportunity carries.
pub const BYTES_PER_OPPORTUNITY: usize = 1500;

/// A cyclic list of delivery opportunities, in milliseconds from the cycle start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryTrace {
    /// Non-decreasing opportunity offsets (ms); the last one is the period.
    pub opportunities_ms: Vec<u64>,
}

/// Why a delivery trace was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace holds no opportunities.
    #[error("no delivery opportunities")]
    Empty,
    /// A line was not a non-negative integer.
    #[error("line {line}: not a millisecond count")]
    Parse {
        /// 1-based line number.
        line: usize,
    },
    /// Offsets went backwards.
    #[error("line {line}: offset {value} is smaller than the previous one")]
    Decreasing {
        /// 1-based position of the offset.
        line: usize,
        /// The offending offset.
        value: u64,
    },
    /// The last offset (the period) was zero.
    #[error("the last offset, which is the trace period, must be positive")]
    ZeroPeriod,
    /// An offset exceeded one day.
    #[error("offset {0} ms is longer than the supported period")]
    TooLong(u64),
}

impl DeliveryTrace {
    /// Builds and checks a trace from offsets in milliseconds.
    pub fn from_offsets(opportunities_ms: Vec<u64>) -> Result<Self, TraceError> {
        let trace = DeliveryTrace { opportunities_ms };
        trace.validate()?;
        Ok(trace)
    }

    /// Parses mahimahi trace text: one integer per line; blank lines and
    /// lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, TraceError> {
        let mut offsets = Vec::new();
        for (idx, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let value = line
                .parse::<u64>()
                .map_err(|_| TraceError::Parse { line: idx + 1 })?;
            if let Some(&prev) = offsets.last() {
                if value < prev {
                    return Err(TraceError::Decreasing {
                        line: idx + 1,
                        value,
                    });
                }
            }
            offsets.push(value);
        }
        Self::from_offsets(offsets)
    }

    /// Renders the trace in mahimahi's text format.
    pub fn to_mahimahi(&self) -> String {
        let mut out = String::new();
        for ms in &self.opportunities_ms {
            out.push_str(&ms.to_string());
            out.push('\n');
        }
        out
    }

    /// Period of the cycle in milliseconds (the last offset).
    pub fn period_ms(&self) -> u64 {
        self.opportunities_ms.last().copied().unwrap_or(0)
    }

    /// Long-run capacity of the trace in bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        let period = self.period_ms();
        if period == 0 {
            return 0.0;
        }
        (self.opportunities_ms.len() * BYTES_PER_OPPORTUNITY * 8) as f64 * 1000.0 / period as f64
    }

    /// Checks the invariants the transmitter relies on.
    pub fn validate(&self) -> Result<(), TraceError> {
        let Some(&last) = self.opportunities_ms.last() else {
            return Err(TraceError::Empty);
        };
        for (i, pair) in self.opportunities_ms.windows(2).enumerate() {
            if let [a, b] = *pair {
                if b < a {
                    return Err(TraceError::Decreasing {
                        line: i + 2,
                        value: b,
                    });
                }
            }
        }
        if last == 0 {
            return Err(TraceError::ZeroPeriod);
        }
        if u128::from(last) > MAX_DURATION.as_millis() {
            return Err(TraceError::TooLong(last));
        }
        Ok(())
    }
}
