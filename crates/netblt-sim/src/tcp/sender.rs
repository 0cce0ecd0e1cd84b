//! [`TcpSender`]: the data sender of a bulk transfer.

use netblt_proto::{Duration, Instant};
use serde::{Deserialize, Serialize};

use super::cc::Window;
use super::config::{Recovery, RttTiming, TcpConfig, WindowOption};
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::segment::{big_window, SegKind, Segment};
use crate::metrics::Histogram;

/// What the sender did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TcpSenderStats {
    /// Data segments sent, first transmissions and retransmissions.
    pub segments_sent: u64,
    /// Data segments retransmitted.
    pub retransmissions: u64,
    /// Payload bytes retransmitted.
    pub retransmitted_bytes: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// RFC 1106 NAKs received that named data not yet resent.
    pub naks_received: u64,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// When the last byte was acknowledged (a sized transfer), in seconds
    /// since the run's start.
    pub completed_at_s: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// SYN sent, waiting for the SYN-ACK.
    SynSent,
    /// Normal transmission.
    Open,
    /// Fast recovery until `recover` is acknowledged.
    FastRecovery,
    /// After a timeout: every unSACKed segment resent in slow start until
    /// `recover` is acknowledged; no fast retransmit meanwhile (RFC 6582
    /// §3.2 step 1's guard).
    Loss,
}

/// A bulk-data TCP sender. Drive it like netblt-proto's `Connection`:
/// [`handle_segment`](Self::handle_segment), [`handle_timeout`](Self::handle_timeout),
/// then [`poll_transmit`](Self::poll_transmit) until `None`, and
/// [`poll_timeout`](Self::poll_timeout).
#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    state: State,
    /// Bytes the application has to send; `None` = unlimited.
    app_bytes: Option<u64>,
    snd_una: u64,
    snd_nxt: u64,
    peer_wnd: u64,
    window: Window,
    board: Scoreboard,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`.
    recover: u64,
    dupacks: u32,
    /// NewReno: duplicate ACKs counted as segments that left the network.
    reno_sacked: u64,
    /// Send one retransmission now, whatever the window (fast retransmit,
    /// NewReno's partial ACK).
    force_retx: bool,
    /// Partial ACKs seen in this fast recovery (NewReno).
    partial_acks: u32,
    syn_due: bool,
    /// RFC 1106 NAK: retransmissions owed at once, whatever the window.
    nak_due: u32,
    /// 4.3BSD's one timed segment: (end of the segment, or 0 for the SYN;
    /// when it was sent).
    timed: Option<(u64, Instant)>,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    rtt_samples: Histogram,
    stats: TcpSenderStats,
}

impl TcpSender {
    /// A sender that opens its connection on the first `poll_transmit`.
    /// `app_bytes`: bytes to send, or `None` for an endless source.
    pub fn new(cfg: TcpConfig, app_bytes: Option<u64>) -> Self {
        TcpSender {
            window: Window::new(cfg.cc, cfg.mss, cfg.initial_window),
            rtt: RttEstimator::new(cfg.rto),
            cfg,
            state: State::SynSent,
            app_bytes,
            snd_una: 0,
            snd_nxt: 0,
            peer_wnd: u64::from(cfg.mss),
            board: Scoreboard::default(),
            recover: 0,
            dupacks: 0,
            reno_sacked: 0,
            force_retx: false,
            partial_acks: 0,
            syn_due: true,
            nak_due: 0,
            timed: None,
            rto_at: None,
            rtt_samples: Histogram::default(),
            stats: TcpSenderStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> &TcpSenderStats {
        &self.stats
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd as u64
    }

    /// Slow-start threshold in bytes (`u64::MAX` before the first loss).
    pub fn ssthresh(&self) -> u64 {
        if self.window.ssthresh.is_finite() {
            self.window.ssthresh as u64
        } else {
            u64::MAX
        }
    }

    /// Smoothed round trip, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Smallest round trip measured.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.rtt.min_rtt()
    }

    /// Current retransmission timeout (before backoff).
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// Every round-trip sample, in microseconds.
    pub fn rtt_samples(&self) -> &Histogram {
        &self.rtt_samples
    }

    /// All data sent and acknowledged.
    pub fn is_finished(&self) -> bool {
        self.app_bytes.is_some_and(|n| self.snd_una >= n)
    }

    /// Bytes sent and not yet cumulatively acknowledged.
    fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// RFC 6675 `pipe`: bytes believed to be in the network.
    fn pipe(&self) -> u64 {
        let b = &self.board;
        let reno = self.reno_sacked * u64::from(self.cfg.mss);
        (self.outstanding() + b.retx_bytes).saturating_sub(b.sacked_bytes + b.lost_bytes + reno)
    }

    fn start_timer_if_idle(&mut self, now: Instant) {
        if self.rto_at.is_none() {
            self.rto_at = Some(self.rtt.deadline(now));
        }
    }

    /// An ACK (or the SYN-ACK) from the receiver.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        match seg.kind {
            SegKind::SynAck if self.state == State::SynSent => {
                self.state = State::Open;
                self.peer_wnd = seg.window();
                self.rto_at = None;
                // RFC 6298 (2.1)/Karn: the SYN's RTT is a valid first sample
                // unless the SYN was retransmitted.
                if self.stats.timeouts == 0 && seg.ts_ecr > 0 {
                    self.sample(now, Instant::from_nanos(seg.ts_ecr));
                } else if let Some((0, sent)) = self.timed.take() {
                    if self.stats.timeouts == 0 {
                        self.sample(now, sent);
                    }
                }
            }
            SegKind::Ack if self.state != State::SynSent => self.on_ack(now, seg),
            _ => {}
        }
    }

    fn sample(&mut self, now: Instant, sent: Instant) {
        let r = self.rtt.measure(sent, now);
        self.rtt.on_sample(r);
        self.rtt_samples.record(r / 1_000);
    }

    fn on_ack(&mut self, now: Instant, seg: &Segment) {
        //# RFC 1106 §3.1: "When the receiver processes the packet it must
        //# first reform the window and then process the packet as it would
        //# in the absence of the option."
        self.peer_wnd = seg.window();
        let sack_mode = self.cfg.recovery == Recovery::Sack;
        let mut newly_sacked = 0;
        if sack_mode {
            for &(start, end) in seg.sack_blocks() {
                if end > self.snd_una && start < self.snd_nxt {
                    newly_sacked += self.board.sack(start, end);
                }
            }
        }
        let ack = seg.ack.min(self.snd_nxt);
        if ack > self.snd_una {
            let acked = self.board.ack(ack);
            self.snd_una = ack;
            self.stats.bytes_acked = ack;
            self.dupacks = 0;
            if self.cfg.timestamps && seg.ts_ecr > 0 {
                //# RFC 7323 §4.1: RTT from the echoed timestamp on an ACK
                //# that acknowledges new data.
                self.sample(now, Instant::from_nanos(seg.ts_ecr));
            } else if self.cfg.rtt_timing == RttTiming::OneSegment {
                // 4.3BSD: "if (tp->t_rtt && SEQ_GT(ti->ti_ack, tp->t_rtseq))"
                // -- the timed segment is acknowledged.
                if let Some((end, sent)) = self.timed {
                    if ack >= end {
                        self.timed = None;
                        self.sample(now, sent);
                    }
                }
            } else if let Some(sent) = acked.rtt_from {
                self.sample(now, sent);
            }
            if self.state == State::FastRecovery && self.cfg.recovery == Recovery::NewReno {
                // Linux's tcp_remove_reno_sacks: the ACK covers the
                // retransmission and the segments the dupACKs stood for.
                self.reno_sacked = self
                    .reno_sacked
                    .saturating_sub(acked.segments.saturating_sub(1));
            } else {
                self.reno_sacked = 0;
            }
            //# RFC 6298 (5.2)/(5.3): stop the timer when all data is
            //# acknowledged, else restart it. RFC 6582 §3.2 step 5 (partial
            //# ACK): "For the first partial ACK that arrives during fast
            //# recovery, also reset the retransmit timer" -- the "Impatient"
            //# variant: later partial ACKs leave it running, so a window
            //# with many losses ends in a timeout instead of one repair per
            //# round trip for seconds.
            let later_partial = !sack_mode
                && self.state == State::FastRecovery
                && ack < self.recover
                && self.partial_acks > 0;
            if !later_partial || self.rto_at.is_none() {
                self.rto_at = (self.outstanding() > 0).then(|| self.rtt.deadline(now));
            }
            match self.state {
                State::FastRecovery if ack >= self.recover => {
                    self.window.on_recovery_end();
                    self.reno_sacked = 0;
                    self.state = State::Open;
                }
                State::FastRecovery => {
                    if !sack_mode {
                        //# RFC 6582 §3.2 step 5 (partial ACK): "retransmit
                        //# the first unacknowledged segment".
                        self.board.mark_head_lost();
                        self.force_retx = true;
                        self.partial_acks += 1;
                    }
                }
                State::Loss => {
                    self.window.on_ack(now, acked.bytes, self.rtt.srtt());
                    if ack >= self.recover {
                        self.state = State::Open;
                    }
                }
                State::Open => self.window.on_ack(now, acked.bytes, self.rtt.srtt()),
                State::SynSent => {}
            }
            if self.app_bytes.is_some_and(|n| self.snd_una >= n) {
                self.stats.completed_at_s.get_or_insert(now.as_secs_f64());
            }
        } else if ack == self.snd_una && self.outstanding() > 0 {
            let dup = if sack_mode {
                //# RFC 6675 §2: a duplicate ACK carries SACK information
                //# that newly acknowledges data.
                newly_sacked > 0
            } else {
                //# RFC 5681 §2: no data, same ACK, outstanding data.
                seg.len == 0
            };
            if dup {
                self.dupacks += 1;
                if !sack_mode {
                    let segs_out = self.board.len() as u64;
                    self.reno_sacked = (self.reno_sacked + 1).min(segs_out.saturating_sub(1));
                }
            }
        }
        if let Some(nak) = seg.nak.filter(|_| self.cfg.nak) {
            //# RFC 1106 §2.1: "When the sender of data receives the option it
            //# may either choose to do nothing or it will resend the missing
            //# data immediately and then continue sending data where it left
            //# off before receiving the nak." Its TCP "assumed that lost
            //# packets were the result of noise and not congestion" (§4.2):
            //# the window is left as it is.
            let end = nak
                .seq
                .saturating_add(u64::from(nak.segments) * u64::from(self.cfg.mss));
            let marked = self.board.mark_lost_range(nak.seq, end);
            if marked > 0 {
                self.stats.naks_received += 1;
                self.nak_due = self.nak_due.saturating_add(marked);
            }
        }
        if self.cfg.recovery == Recovery::Tahoe {
            //# RFC 1106 §4.3: with NAKs the duplicate-ACK rule "is no longer
            //# needed since the sender can use the reception of a nak as its
            //# indicator that a particular packet was dropped".
            if !self.cfg.nak
                && self.state == State::Open
                && self.outstanding() > 0
                && self.dupacks == self.cfg.dup_thresh
            {
                //# §4.3 (4.3BSD): "it then assumes that a packet has been lost
                //# and will resend the one packet assumed lost, and close its
                //# send window as if the network is congested and the slow
                //# start algorithm ... will be used to open the send window."
                self.window.on_timeout(self.outstanding());
                self.board.mark_head_lost();
                self.force_retx = true;
                self.timed = None;
                // tcp_input zeroes the timer; tcp_output restarts it.
                self.rto_at = Some(self.rtt.deadline(now));
                self.stats.fast_recoveries += 1;
            }
            return;
        }
        let head_lost = if sack_mode {
            self.board.mark_lost_by_sack(self.cfg.dup_thresh)
        } else {
            false
        };
        if self.state == State::Open
            && self.outstanding() > 0
            && (self.dupacks >= self.cfg.dup_thresh || head_lost)
        {
            //# RFC 6675 §5 / RFC 6582 §3.2 step 2: RecoveryPoint = HighData,
            //# ssthresh = cwnd = FlightSize / 2 (the CC's reduction),
            //# retransmit the first segment presumed dropped.
            self.recover = self.snd_nxt;
            self.window.on_congestion(self.outstanding());
            self.partial_acks = 0;
            self.board.mark_head_lost();
            self.force_retx = true;
            self.state = State::FastRecovery;
            self.stats.fast_recoveries += 1;
        }
    }

    /// Handles the retransmission timer (spurious calls are harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(at) = self.rto_at else { return };
        if now < at {
            return;
        }
        self.rto_at = None;
        self.stats.timeouts += 1;
        self.rtt.on_timeout();
        self.timed = None;
        self.nak_due = 0;
        if self.state == State::SynSent {
            self.syn_due = true;
            return;
        }
        if self.outstanding() == 0 {
            return;
        }
        //# RFC 5681 (4) and §3.1: ssthresh = max(FlightSize/2, 2*SMSS),
        //# cwnd = LW = 1 SMSS; RFC 6582 §3.2 step 4 / RFC 6675 §5.1: record
        //# the highest sequence sent and retransmit from the first hole.
        self.window.on_timeout(self.outstanding());
        self.recover = self.snd_nxt;
        self.board.mark_all_lost();
        self.dupacks = 0;
        self.reno_sacked = 0;
        self.state = State::Loss;
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.rto_at
    }

    fn stamp(&self, seg: &mut Segment, now: Instant) {
        if self.cfg.window == WindowOption::Rfc1106BigWindow && seg.kind == SegKind::Data {
            //# RFC 1106 §3.1: "every succeeding packet must contain the
            //# following option" -- the sender's own receive window.
            seg.wnd_upper = Some(big_window::split(self.cfg.rcv_wnd).1);
        }
        if self.cfg.timestamps {
            // TSval 0 means "none" to the receiver; the model's clock starts at 0.
            seg.ts_val = now.as_nanos().max(1);
        }
    }

    /// The next segment to send now, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.state == State::SynSent {
            if !self.syn_due {
                return None;
            }
            self.syn_due = false;
            self.start_timer_if_idle(now);
            if self.cfg.rtt_timing == RttTiming::OneSegment && self.stats.timeouts == 0 {
                self.timed = Some((0, now));
            }
            let mut syn = Segment::new(SegKind::Syn);
            self.stamp(&mut syn, now);
            return Some(syn);
        }
        let mss = u64::from(self.cfg.mss);
        let room = self.window.cwnd as u64 >= self.pipe() + mss;
        if self.force_retx || self.nak_due > 0 || room {
            if let Some((seq, len)) = self.board.next_retransmission(now) {
                if self.force_retx {
                    self.force_retx = false;
                } else {
                    self.nak_due = self.nak_due.saturating_sub(1);
                }
                // Karn: a retransmission ends 4.3BSD's timing.
                self.timed = None;
                self.stats.segments_sent += 1;
                self.stats.retransmissions += 1;
                self.stats.retransmitted_bytes += u64::from(len);
                self.start_timer_if_idle(now);
                let mut seg = Segment::new(SegKind::Data);
                seg.seq = seq;
                seg.len = len;
                seg.retransmission = true;
                self.stamp(&mut seg, now);
                return Some(seg);
            }
            self.force_retx = false;
            self.nak_due = 0;
        }
        if !room {
            return None;
        }
        // New data, within the peer's window and the application's supply.
        let limit = self.app_bytes.unwrap_or(u64::MAX);
        let wnd_end = self.snd_una.saturating_add(self.peer_wnd);
        let len = mss
            .min(limit.saturating_sub(self.snd_nxt))
            .min(wnd_end.saturating_sub(self.snd_nxt));
        if len == 0 || (len < mss && self.snd_nxt + len < limit) {
            // Nothing to send, or only a runt the window allows: wait (the
            // receiver's window is large; silly-window avoidance, RFC 1122).
            return None;
        }
        let len = len as u32;
        self.board.push(self.snd_nxt, len, now);
        let mut seg = Segment::new(SegKind::Data);
        seg.seq = self.snd_nxt;
        seg.len = len;
        self.snd_nxt += u64::from(len);
        if self.cfg.rtt_timing == RttTiming::OneSegment && self.timed.is_none() {
            self.timed = Some((self.snd_nxt, now));
        }
        self.stats.segments_sent += 1;
        self.start_timer_if_idle(now);
        self.stamp(&mut seg, now);
        Some(seg)
    }
}
