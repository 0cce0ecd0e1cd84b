//! [`TcpReceiver`]: the data receiver; its application reads at once.

use netblt_proto::Instant;
use serde::{Deserialize, Serialize};

use super::config::{Recovery, TcpConfig, WindowOption};
use super::segment::{big_window, Nak, SegKind, Segment, MAX_SACK_BLOCKS};

/// What the receiver saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TcpReceiverStats {
    /// Data segments received.
    pub segments: u64,
    /// Segments that brought no new byte (already received).
    pub duplicate_segments: u64,
    /// Segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// RFC 1106 NAKs sent (on ACKs).
    pub naks_sent: u64,
}

/// A TCP receiver for the model's bulk transfers.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    cfg: TcpConfig,
    syn_seen: bool,
    synack_due: bool,
    rcv_nxt: u64,
    /// Out-of-order data held, as disjoint sorted `[start, end)` ranges.
    ooo: Vec<(u64, u64)>,
    /// Starts of recently received out-of-order segments, newest first, to
    /// order the SACK blocks (RFC 2018 §4: the first block reports the most
    /// recent segment, then the most recently reported others).
    recent: Vec<u64>,
    ack_due: bool,
    /// Full-sized segments received since the last ACK.
    unacked: u32,
    delack_at: Option<Instant>,
    ts_recent: u64,
    /// RFC 1106 §2.1: "The receiver will keep track of the last nak sent so
    /// that it will not repeat the same nak."
    last_nak: Option<Nak>,
    stats: TcpReceiverStats,
}

impl TcpReceiver {
    /// A receiver with the same variant as its sender (SACK is permitted
    /// when the sender's recovery uses it, as the SYN options would agree).
    pub fn new(cfg: TcpConfig) -> Self {
        TcpReceiver {
            cfg,
            syn_seen: false,
            synack_due: false,
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            ack_due: false,
            unacked: 0,
            delack_at: None,
            ts_recent: 0,
            last_nak: None,
            stats: TcpReceiverStats::default(),
        }
    }

    /// Bytes delivered in order to the application.
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Counters so far.
    pub fn stats(&self) -> &TcpReceiverStats {
        &self.stats
    }

    /// A segment from the sender.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        match seg.kind {
            SegKind::Syn => {
                self.syn_seen = true;
                self.synack_due = true;
                self.ts_recent = seg.ts_val;
            }
            SegKind::Data if self.syn_seen => self.on_data(now, seg),
            _ => {}
        }
    }

    fn on_data(&mut self, now: Instant, seg: &Segment) {
        self.stats.segments += 1;
        let start = seg.seq;
        let end = seg.seq + u64::from(seg.len);
        if end <= self.rcv_nxt || self.ooo.iter().any(|&(a, b)| a <= start && end <= b) {
            //# RFC 5681 §4.2: a duplicate or out-of-order segment is
            //# acknowledged at once.
            self.stats.duplicate_segments += 1;
            self.ack_due = true;
            return;
        }
        if start <= self.rcv_nxt {
            //# RFC 7323 §4.3: TS.Recent from a segment at the left edge.
            self.ts_recent = seg.ts_val;
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt = end;
            // Pull in what was held above.
            while let Some(&(a, b)) = self.ooo.first() {
                if a > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(b);
                self.ooo.remove(0);
            }
            if had_holes {
                //# RFC 5681 §4.2: "an immediate ACK ... when the segment
                //# fills in all or part of a gap".
                self.ack_due = true;
                return;
            }
            match self.cfg.delayed_ack {
                None => self.ack_due = true,
                Some(d) => {
                    if u64::from(seg.len) >= u64::from(self.cfg.mss) {
                        self.unacked += 1;
                    }
                    if self.unacked >= d.every {
                        self.ack_due = true;
                    } else if self.delack_at.is_none() {
                        self.delack_at = Some(if d.on_tick && !d.timeout.is_zero() {
                            // tcp_fasttimo: the next tick of the 200 ms clock.
                            let g = u64::try_from(d.timeout.as_nanos()).unwrap_or(u64::MAX);
                            Instant::from_nanos((now.as_nanos() / g + 1).saturating_mul(g))
                        } else {
                            now + d.timeout
                        });
                    }
                }
            }
            return;
        }
        // Above a hole: hold it and acknowledge at once (dupACK + SACK).
        self.stats.out_of_order_segments += 1;
        self.insert_ooo(start, end);
        self.recent.retain(|&s| s != start);
        self.recent.insert(0, start);
        self.recent.truncate(MAX_SACK_BLOCKS * 2);
        self.ack_due = true;
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let i = self.ooo.partition_point(|&(_, b)| b < start);
        let (mut s, mut e) = (start, end);
        let mut j = i;
        while let Some(&(a, b)) = self.ooo.get(j) {
            if a > e {
                break;
            }
            s = s.min(a);
            e = e.max(b);
            j += 1;
        }
        self.ooo.splice(i..j, std::iter::once((s, e)));
    }

    /// RFC 1106 §2.1: "When the receiver of data notices a gap between the
    /// expected sequence number and the actual sequence number of the packet
    /// received ... a nak should be sent in the TCP option field", naming
    /// "only the immediate data needed to move the left edge of the window":
    /// the hole at `rcv_nxt`, in segments of the MSS. A NAK equal to the last
    /// one sent is not repeated ("it will not repeat the same nak").
    fn next_nak(&mut self) -> Option<Nak> {
        let &(above, _) = self.ooo.first()?;
        let mss = u64::from(self.cfg.mss.max(1));
        let segments = (above - self.rcv_nxt).div_ceil(mss).min(255) as u8;
        let nak = Nak {
            seq: self.rcv_nxt,
            segments,
        };
        if self.last_nak == Some(nak) {
            return None;
        }
        self.last_nak = Some(nak);
        self.stats.naks_sent += 1;
        Some(nak)
    }

    /// Handles the delayed-ACK timer.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.ack_due = true;
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delack_at
    }

    /// The next ACK (or SYN-ACK) to send, if one is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let kind = if self.synack_due {
            self.synack_due = false;
            SegKind::SynAck
        } else if self.ack_due {
            SegKind::Ack
        } else {
            return None;
        };
        self.ack_due = false;
        self.unacked = 0;
        self.delack_at = None;
        let mut seg = Segment::new(kind);
        seg.ack = self.rcv_nxt;
        let wnd = self.cfg.rcv_wnd.min(self.cfg.max_window());
        match self.cfg.window {
            WindowOption::Scale => seg.wnd = wnd,
            //# RFC 1106 §3: "the SYN and SYN ACK segments will use the small
            //# windows, and once the big window option has been negotiated
            //# then the bigger windows will be used."
            WindowOption::Bits16 => seg.wnd = wnd.min(65_535),
            WindowOption::Rfc1106BigWindow if kind == SegKind::SynAck => seg.wnd = wnd.min(65_535),
            WindowOption::Rfc1106BigWindow => {
                let (field, upper) = big_window::split(wnd);
                seg.wnd = u64::from(field);
                seg.wnd_upper = Some(upper);
            }
        }
        if self.cfg.nak && kind == SegKind::Ack {
            seg.nak = self.next_nak();
        }
        if self.cfg.timestamps {
            seg.ts_val = now.as_nanos().max(1);
            seg.ts_ecr = self.ts_recent;
        }
        if self.cfg.recovery == Recovery::Sack && kind == SegKind::Ack {
            let max = if self.cfg.timestamps {
                MAX_SACK_BLOCKS - 1
            } else {
                MAX_SACK_BLOCKS
            };
            let mut n = 0;
            for &start in &self.recent {
                if n >= max {
                    break;
                }
                let Some(&block) = self.ooo.iter().find(|&&(a, b)| a <= start && start < b) else {
                    continue;
                };
                if seg.sack[..n].contains(&block) {
                    continue;
                }
                seg.sack[n] = block;
                n += 1;
            }
            // Fill the rest with the highest other blocks.
            for &block in self.ooo.iter().rev() {
                if n >= max {
                    break;
                }
                if !seg.sack[..n].contains(&block) {
                    seg.sack[n] = block;
                    n += 1;
                }
            }
            seg.sack_len = n as u8;
        }
        self.recent.retain(|&s| s >= self.rcv_nxt);
        self.stats.acks_sent += 1;
        Some(seg)
    }
}
