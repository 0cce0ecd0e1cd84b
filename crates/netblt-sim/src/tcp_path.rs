//! One [`crate::tcp`] connection over a two-way path of `netblt_link::Link`s:
//! the sender's segments cross `forward`, the receiver's ACKs cross
//! `reverse`. Hosts cost nothing. Used for RFC 1106's experiment (a bulk
//! transfer over the `t1-satellite` profile with bit errors).

use std::time::Duration;

use netblt_link::{Link, LinkConfig, LinkStats};
use netblt_proto::Instant;
use serde::Serialize;

use crate::event::EventQueue;
use crate::tcp::{Segment, TcpConfig, TcpReceiver, TcpReceiverStats, TcpSender, TcpSenderStats};

/// A run's settings.
#[derive(Clone, Debug)]
pub struct TcpPathConfig {
    /// Data direction.
    pub forward: LinkConfig,
    /// ACK direction.
    pub reverse: LinkConfig,
    /// Link-layer bytes added to every IP packet (HDLC framing on a T1).
    pub framing: usize,
    /// The TCP variant (both ends).
    pub tcp: TcpConfig,
    /// How long the (endless) transfer runs.
    pub duration: Duration,
    /// Deliveries before this are left out of `steady_rate`.
    pub warmup: Duration,
    /// Seeds both links (the reverse link gets `seed + 1`).
    pub seed: u64,
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct TcpPathResult {
    /// Bytes delivered in order to the receiving application.
    pub delivered: u64,
    /// Bytes per second over the whole run (from the SYN).
    pub rate: f64,
    /// Bytes per second after the warm-up.
    pub steady_rate: f64,
    /// The sender's counters.
    pub sender: TcpSenderStats,
    /// The receiver's counters.
    pub receiver: TcpReceiverStats,
    /// The data direction's counters (bit-error and queue drops).
    pub forward: LinkStats,
    /// The ACK direction's counters.
    pub reverse: LinkStats,
}

enum Ev {
    ToReceiver(Segment),
    ToSender(Segment),
}

fn dur(i: Instant) -> Duration {
    Duration::from_nanos(i.as_nanos())
}

fn inst(d: Duration) -> Instant {
    Instant::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Runs the transfer; errors only on an invalid link or TCP configuration.
pub fn run_tcp_path(cfg: &TcpPathConfig) -> Result<TcpPathResult, String> {
    cfg.tcp.validate().map_err(str::to_string)?;
    let mut fwd = Link::new(cfg.forward.clone(), cfg.seed).map_err(|e| e.to_string())?;
    let mut rev =
        Link::new(cfg.reverse.clone(), cfg.seed.wrapping_add(1)).map_err(|e| e.to_string())?;
    let mut snd = TcpSender::new(cfg.tcp, None);
    let mut rcv = TcpReceiver::new(cfg.tcp);
    let mut q: EventQueue<Ev> = EventQueue::default();
    let end = inst(cfg.duration);
    let warm = inst(cfg.warmup);
    let ts = cfg.tcp.timestamps;
    let mut at_warmup = None;
    let mut now = Instant::ZERO;
    loop {
        // Both ends send what they can at `now`.
        while let Some(seg) = snd.poll_transmit(now) {
            let fate = fwd.offer(dur(now), seg.wire_len(ts) + cfg.framing);
            for d in fate.iter() {
                q.push(inst(d.at), Ev::ToReceiver(seg));
            }
        }
        while let Some(seg) = rcv.poll_transmit(now) {
            let fate = rev.offer(dur(now), seg.wire_len(ts) + cfg.framing);
            for d in fate.iter() {
                q.push(inst(d.at), Ev::ToSender(seg));
            }
        }
        let next = [q.peek_time(), snd.poll_timeout(), rcv.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next.filter(|&t| t <= end) else {
            break;
        };
        if at_warmup.is_none() && next >= warm {
            at_warmup = Some(rcv.delivered());
        }
        now = next.max(now);
        while q.peek_time().is_some_and(|t| t <= now) {
            match q.pop() {
                Some((_, Ev::ToReceiver(seg))) => rcv.handle_segment(now, &seg),
                Some((_, Ev::ToSender(seg))) => snd.handle_segment(now, &seg),
                None => break,
            }
        }
        snd.handle_timeout(now);
        rcv.handle_timeout(now);
    }
    let delivered = rcv.delivered();
    let secs = cfg.duration.as_secs_f64().max(1e-9);
    let steady_secs = (cfg.duration.saturating_sub(cfg.warmup)).as_secs_f64();
    let steady_rate = if steady_secs > 0.0 {
        delivered.saturating_sub(at_warmup.unwrap_or(0)) as f64 / steady_secs
    } else {
        0.0
    };
    Ok(TcpPathResult {
        delivered,
        rate: delivered as f64 / secs,
        steady_rate,
        sender: snd.stats().clone(),
        receiver: rcv.stats().clone(),
        forward: *fwd.stats(),
        reverse: *rev.stats(),
    })
}
