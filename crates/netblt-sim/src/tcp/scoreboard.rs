//! The sender's record of every segment between `snd_una` and `snd_max`:
//! what was SACKed, what is deemed lost, what was retransmitted. RFC 6675's
//! scoreboard, also used without SACK (NewReno marks the head segment lost
//! on three duplicate ACKs and on partial ACKs; a timeout marks everything).
//!
//! The counters are kept as Linux keeps them, so that RFC 6675's `pipe` is
//! `outstanding - sacked - lost + retransmitted` in constant time.

use std::collections::VecDeque;

use netblt_proto::Instant;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub(crate) seq: u64,
    pub(crate) len: u32,
    /// Last (re)transmission.
    pub(crate) sent_at: Instant,
    /// Retransmitted at least once (Karn: no RTT sample from it).
    pub(crate) ever_retx: bool,
    pub(crate) sacked: bool,
    /// Deemed lost (and not SACKed since).
    pub(crate) lost: bool,
    /// A retransmission of it is in flight.
    pub(crate) retx_out: bool,
}

impl Seg {
    fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<Seg>,
    pub(crate) sacked_bytes: u64,
    pub(crate) lost_bytes: u64,
    pub(crate) retx_bytes: u64,
    /// Highest SACKed byte + 1 (RFC 6675's HighSACKed, exclusive).
    pub(crate) high_sacked: u64,
    /// Every unSACKed segment below this has been marked lost.
    lost_upto: u64,
    /// NextSeg's scan position: no retransmission is due below it.
    retx_scan: u64,
}

/// What a cumulative ACK removed.
#[derive(Default)]
pub(crate) struct Acked {
    pub(crate) bytes: u64,
    pub(crate) segments: u64,
    /// Send time of the newest fully acknowledged never-retransmitted
    /// segment (Karn's rule).
    pub(crate) rtt_from: Option<Instant>,
}

impl Scoreboard {
    pub(crate) fn push(&mut self, seq: u64, len: u32, now: Instant) {
        self.segs.push_back(Seg {
            seq,
            len,
            sent_at: now,
            ever_retx: false,
            sacked: false,
            lost: false,
            retx_out: false,
        });
    }

    fn forget(&mut self, s: &Seg) {
        let len = u64::from(s.len);
        if s.sacked {
            self.sacked_bytes -= len;
        }
        if s.lost {
            self.lost_bytes -= len;
        }
        if s.retx_out {
            self.retx_bytes -= len;
        }
    }

    /// Removes every segment that ends at or below `ack`.
    pub(crate) fn ack(&mut self, ack: u64) -> Acked {
        let mut out = Acked::default();
        while let Some(front) = self.segs.front().copied() {
            if front.end() > ack {
                break;
            }
            self.segs.pop_front();
            self.forget(&front);
            out.bytes += u64::from(front.len);
            out.segments += 1;
            if !front.ever_retx {
                out.rtt_from = Some(front.sent_at);
            }
        }
        self.lost_upto = self.lost_upto.max(ack);
        self.retx_scan = self.retx_scan.max(ack);
        out
    }

    fn index_of(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.end() <= seq)
    }

    /// Marks segments wholly inside `[start, end)` SACKed; returns the bytes
    /// newly SACKed.
    pub(crate) fn sack(&mut self, start: u64, end: u64) -> u64 {
        let mut newly = 0;
        let mut i = self.index_of(start);
        while let Some(s) = self.segs.get(i).copied() {
            if s.seq >= end {
                break;
            }
            if s.seq >= start && s.end() <= end && !s.sacked {
                self.forget(&s);
                let len = u64::from(s.len);
                self.sacked_bytes += len;
                newly += len;
                self.high_sacked = self.high_sacked.max(s.end());
                if let Some(m) = self.segs.get_mut(i) {
                    m.sacked = true;
                    m.lost = false;
                    m.retx_out = false;
                }
            }
            i += 1;
        }
        newly
    }

    fn mark_lost_at(&mut self, i: usize) {
        if let Some(s) = self.segs.get_mut(i) {
            if !s.sacked && !s.lost {
                s.lost = true;
                self.lost_bytes += u64::from(s.len);
            }
        }
    }

    /// RFC 6675 `IsLost`: a segment with at least `dup_thresh` SACKed
    /// segments above it is lost. Marks every such segment not yet marked.
    /// Returns whether the first outstanding segment is now lost.
    pub(crate) fn mark_lost_by_sack(&mut self, dup_thresh: u32) -> bool {
        if self.high_sacked <= self.lost_upto {
            return self.head_lost();
        }
        // Walk down from the highest SACKed segment to the dup_thresh-th
        // SACKed one: that is the new frontier.
        let stop = self.index_of(self.lost_upto);
        let mut i = self.index_of(self.high_sacked.saturating_sub(1));
        let mut seen = 0;
        let mut frontier = None;
        while i >= stop {
            let Some(s) = self.segs.get(i) else { break };
            if s.sacked {
                seen += 1;
                if seen >= dup_thresh {
                    frontier = Some(s.seq);
                    break;
                }
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
        if let Some(f) = frontier {
            let mut j = stop;
            while self.segs.get(j).is_some_and(|s| s.seq < f) {
                self.mark_lost_at(j);
                j += 1;
            }
            self.lost_upto = self.lost_upto.max(f);
        }
        self.head_lost()
    }

    /// Marks the first outstanding segment lost (NewReno, and RFC 6675's
    /// first retransmission on entering recovery).
    pub(crate) fn mark_head_lost(&mut self) {
        self.mark_lost_at(0);
    }

    /// RFC 1106 NAK: marks every unSACKed segment that starts in
    /// `[start, end)` and is neither lost nor being retransmitted; returns
    /// how many were newly marked.
    pub(crate) fn mark_lost_range(&mut self, start: u64, end: u64) -> u32 {
        let mut n = 0;
        let mut i = self.index_of(start);
        while let Some(s) = self.segs.get(i).copied() {
            if s.seq >= end {
                break;
            }
            if s.seq >= start && !s.sacked && !s.lost && !s.retx_out {
                self.mark_lost_at(i);
                n += 1;
            }
            i += 1;
        }
        // NextSeg scans from here.
        self.retx_scan = self.retx_scan.min(start);
        n
    }

    fn head_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.lost)
    }

    /// A retransmission timeout: every unSACKed segment is lost and no
    /// retransmission is in flight any more.
    pub(crate) fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.retx_out = false;
            if !s.sacked && !s.lost {
                s.lost = true;
                self.lost_bytes += u64::from(s.len);
            }
        }
        self.retx_bytes = 0;
        self.lost_upto = self.segs.back().map_or(self.lost_upto, |s| s.end());
        self.retx_scan = self.segs.front().map_or(self.retx_scan, |s| s.seq);
    }

    /// RFC 6675 `NextSeg` rule 1: the first segment deemed lost and not yet
    /// retransmitted. Marks it retransmitted at `now` and returns it.
    pub(crate) fn next_retransmission(&mut self, now: Instant) -> Option<(u64, u32)> {
        let mut i = self.index_of(self.retx_scan);
        while let Some(s) = self.segs.get_mut(i) {
            if s.lost && !s.retx_out {
                s.retx_out = true;
                s.ever_retx = true;
                s.sent_at = now;
                self.retx_bytes += u64::from(s.len);
                self.retx_scan = s.seq;
                return Some((s.seq, s.len));
            }
            if !s.sacked && !s.lost {
                // Not (yet) deemed lost: nothing above it is due either,
                // since losses are marked from the bottom up.
                self.retx_scan = s.seq;
                return None;
            }
            i += 1;
        }
        self.retx_scan = self.segs.back().map_or(self.retx_scan, |s| s.end());
        None
    }

    /// Outstanding segments.
    pub(crate) fn len(&self) -> usize {
        self.segs.len()
    }
}
