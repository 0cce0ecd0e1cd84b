//! The virtual transmitter: when does a packet's first and last bit go out?
//!
//! All three kinds keep their own clock of when the medium is next free
//! (`busy_until`), so a departure time depends only on the offer times and the
//! packet sizes, never on how late the caller got round to calling. Times are
//! `u64` nanoseconds; every sum saturates, so no input can panic.

use crate::config::{FrameConfig, LinkConfig};
use crate::trace::{DeliveryTrace, BYTES_PER_OPPORTUNITY};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Serialization start and end of one packet, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

#[derive(Clone, Debug)]
pub(crate) enum Transmitter {
    /// Infinitely fast: a packet is gone the moment it is offered.
    Infinite,
    /// A constant bit rate.
    ///
    /// `busy_until` is kept exactly, as `busy_ns + busy_rem / rate` with
    /// `busy_rem < rate`, so a long run of back-to-back packets ends at exactly
    /// `N * len * 8 / rate` instead of drifting by a rounding error per packet.
    Rate {
        rate: u64,
        busy_ns: u64,
        busy_rem: u64,
        /// Future rate changes, (time ns, rate), in time order; `next_step`
        /// is the first not yet in force.
        steps: Vec<(u64, u64)>,
        next_step: usize,
    },
    /// Slotted channel (see [`FrameConfig`]).
    Frames {
        interval_ns: u64,
        bytes_per_frame: usize,
        /// Index of the last frame that received a packet.
        frame: u64,
        /// Bytes already placed in `frame`.
        used: usize,
    },
    /// Delivery-opportunity trace (see [`DeliveryTrace`]).
    Trace {
        offsets_ns: Vec<u64>,
        period_ns: u64,
        /// Cycle and index of the current opportunity.
        cycle: u64,
        idx: usize,
        /// Bytes still free in the current opportunity.
        left: usize,
    },
}

fn ceil_ns(ns: u64, rem: u64) -> u64 {
    ns.saturating_add(u64::from(rem > 0))
}

impl Transmitter {
    /// Builds the transmitter for an already validated config.
    pub(crate) fn new(cfg: &LinkConfig) -> Self {
        if let Some(FrameConfig {
            interval,
            bytes_per_frame,
        }) = &cfg.frames
        {
            return Transmitter::Frames {
                interval_ns: u64::try_from(interval.as_nanos())
                    .unwrap_or(u64::MAX)
                    .max(1),
                bytes_per_frame: (*bytes_per_frame).max(1),
                frame: 0,
                used: 0,
            };
        }
        if let Some(DeliveryTrace { opportunities_ms }) = &cfg.trace {
            let offsets_ns: Vec<u64> = opportunities_ms
                .iter()
                .map(|ms| ms.saturating_mul(1_000_000))
                .collect();
            let period_ns = offsets_ns.last().copied().unwrap_or(1).max(1);
            // Start at the first opportunity, untouched; the first packet
            // skips forward from there if it is offered later.
            return Transmitter::Trace {
                offsets_ns,
                period_ns,
                cycle: 0,
                idx: 0,
                left: BYTES_PER_OPPORTUNITY,
            };
        }
        match cfg.rate_bps {
            Some(rate) => Transmitter::Rate {
                rate: rate.max(1),
                busy_ns: 0,
                busy_rem: 0,
                steps: cfg
                    .rate_steps
                    .iter()
                    .map(|s| {
                        (
                            u64::try_from(s.at.as_nanos()).unwrap_or(u64::MAX),
                            s.rate_bps.max(1),
                        )
                    })
                    .collect(),
                next_step: 0,
            },
            None => Transmitter::Infinite,
        }
    }

    /// When a packet offered at `now` would start to go out, without placing
    /// it (the AQM needs the sojourn time before deciding). Exact for the
    /// rate transmitter; for frames and traces the start of the next frame or
    /// opportunity with room, as [`transmit`](Self::transmit) would pick for a
    /// packet that fits.
    pub(crate) fn peek_start(&self, now: u64) -> u64 {
        match self {
            Transmitter::Infinite => now,
            Transmitter::Rate {
                busy_ns, busy_rem, ..
            } => {
                if now > *busy_ns || (now == *busy_ns && *busy_rem == 0) {
                    now
                } else {
                    ceil_ns(*busy_ns, *busy_rem)
                }
            }
            Transmitter::Frames {
                interval_ns,
                bytes_per_frame,
                frame,
                used,
            } => {
                let now_frame = now / *interval_ns;
                if now_frame > *frame || *used < *bytes_per_frame {
                    now_frame.max(*frame).saturating_mul(*interval_ns).max(now)
                } else {
                    frame.saturating_add(1).saturating_mul(*interval_ns)
                }
            }
            Transmitter::Trace {
                offsets_ns,
                period_ns,
                cycle,
                idx,
                left,
            } => {
                let n = offsets_ns.len().max(1);
                let opp_time = |cycle: u64, idx: usize| -> u64 {
                    cycle
                        .saturating_mul(*period_ns)
                        .saturating_add(offsets_ns.get(idx).copied().unwrap_or(0))
                };
                let (mut c, mut i) = (*cycle, *idx + usize::from(*left == 0));
                if i >= n {
                    c = c.saturating_add(1);
                    i = 0;
                }
                if opp_time(c, i) < now {
                    c = now / *period_ns;
                    i = offsets_ns.partition_point(|&o| o < now % *period_ns);
                    if i >= n {
                        c = c.saturating_add(1);
                        i = 0;
                    }
                }
                opp_time(c, i)
            }
        }
    }

    /// Places a packet of `len` bytes offered at `now` and returns its slot.
    pub(crate) fn transmit(&mut self, now: u64, len: usize) -> Slot {
        match self {
            Transmitter::Infinite => Slot {
                start: now,
                end: now,
            },
            Transmitter::Rate {
                rate,
                busy_ns,
                busy_rem,
                steps,
                next_step,
            } => {
                if now > *busy_ns || (now == *busy_ns && *busy_rem == 0) {
                    // The medium is idle: start now, with no fractional carry.
                    *busy_ns = now;
                    *busy_rem = 0;
                }
                let start = ceil_ns(*busy_ns, *busy_rem);
                // Work left in bit-nanoseconds (bits * 1e9): dividing by the
                // rate gives nanoseconds, whatever the rate in force.
                let mut work = (len as u128) * 8 * NANOS_PER_SEC;
                loop {
                    let step = steps.get(*next_step).copied();
                    if let Some((at, new_rate)) = step {
                        if at <= *busy_ns {
                            // A step takes effect: round the clock up to the
                            // next whole nanosecond (the carry is in units of
                            // the old rate) and go on at the new rate.
                            *busy_ns = ceil_ns(*busy_ns, *busy_rem);
                            *busy_rem = 0;
                            *rate = new_rate;
                            *next_step += 1;
                            continue;
                        }
                    }
                    let r = u128::from(*rate);
                    let total = work + u128::from(*busy_rem);
                    let end_ns = u128::from(*busy_ns) + total / r;
                    let end_rem = total % r;
                    if let Some((at, _)) = step {
                        let at = u128::from(at);
                        if end_ns > at || (end_ns == at && end_rem > 0) {
                            // The packet is still going out when the rate
                            // changes: send what fits before the step.
                            let done = (at - u128::from(*busy_ns)) * r - u128::from(*busy_rem);
                            work = work.saturating_sub(done);
                            *busy_ns = u64::try_from(at).unwrap_or(u64::MAX);
                            *busy_rem = 0;
                            continue;
                        }
                    }
                    *busy_ns = u64::try_from(end_ns).unwrap_or(u64::MAX);
                    // The remainder is < rate, so it fits in u64.
                    *busy_rem = u64::try_from(end_rem).unwrap_or(0);
                    break;
                }
                Slot {
                    start,
                    end: ceil_ns(*busy_ns, *busy_rem),
                }
            }
            Transmitter::Frames {
                interval_ns,
                bytes_per_frame,
                frame,
                used,
            } => {
                let now_frame = now / *interval_ns;
                if now_frame > *frame {
                    *frame = now_frame;
                    *used = 0;
                }
                let (first, last);
                if used.saturating_add(len) <= *bytes_per_frame {
                    first = *frame;
                    last = *frame;
                    *used += len;
                } else {
                    // Does not fit in what is left: start a fresh frame, and
                    // take as many whole frames as the packet needs.
                    first = frame.saturating_add(u64::from(*used > 0));
                    let frames_needed = len.div_ceil(*bytes_per_frame).max(1);
                    let extra = u64::try_from(frames_needed - 1).unwrap_or(u64::MAX);
                    last = first.saturating_add(extra);
                    *frame = last;
                    *used = len - (frames_needed - 1) * *bytes_per_frame;
                }
                Slot {
                    start: first.saturating_mul(*interval_ns).max(now),
                    end: last.saturating_add(1).saturating_mul(*interval_ns),
                }
            }
            Transmitter::Trace {
                offsets_ns,
                period_ns,
                cycle,
                idx,
                left,
            } => {
                let n = offsets_ns.len().max(1);
                let opp_time = |cycle: u64, idx: usize| -> u64 {
                    cycle
                        .saturating_mul(*period_ns)
                        .saturating_add(offsets_ns.get(idx).copied().unwrap_or(0))
                };
                if *left == 0 || opp_time(*cycle, *idx) < now {
                    // Opportunities before `now` (or used up) are lost: jump
                    // to the first one at or after `now`.
                    let (mut c, mut i) = (*cycle, *idx + usize::from(*left == 0));
                    if i >= n {
                        c = c.saturating_add(1);
                        i = 0;
                    }
                    if opp_time(c, i) < now {
                        c = now / *period_ns;
                        let rel = now % *period_ns;
                        i = offsets_ns.partition_point(|&o| o < rel);
                        if i >= n {
                            c = c.saturating_add(1);
                            i = 0;
                        }
                    }
                    *cycle = c;
                    *idx = i;
                    *left = BYTES_PER_OPPORTUNITY;
                }
                let start = opp_time(*cycle, *idx);
                if len <= *left {
                    *left -= len;
                } else {
                    // The rest needs `more` further opportunities; the last
                    // one keeps what the packet does not fill.
                    // u128: `more * BYTES_PER_OPPORTUNITY` can exceed usize.
                    let rest = (len - *left) as u128;
                    let per = BYTES_PER_OPPORTUNITY as u128;
                    let more = rest.div_ceil(per);
                    *left = usize::try_from(more * per - rest).unwrap_or(0);
                    let pos = (*idx as u128) + more;
                    *cycle =
                        cycle.saturating_add(u64::try_from(pos / n as u128).unwrap_or(u64::MAX));
                    *idx = usize::try_from(pos % n as u128).unwrap_or(0);
                }
                Slot {
                    start,
                    end: opp_time(*cycle, *idx),
                }
            }
        }
    }
}
