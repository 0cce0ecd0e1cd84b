//! What a dumbbell run reports: per flow, per bottleneck, all serde.

use netblt_link::DropCounts;
use serde::{Deserialize, Serialize};

use crate::metrics::{jain_index, Summary};
use crate::tcp::TcpSenderStats;

/// Drops of one flow's packets at the bottleneck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowDrops {
    /// Queue full (drop-tail limit).
    pub queue: u64,
    /// CoDel.
    pub aqm: u64,
    /// Random loss ("noise").
    pub loss: u64,
}

/// One flow's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowReport {
    /// Label.
    pub name: String,
    /// `tcp-<cc>-<recovery>` or `netblt`.
    pub kind: String,
    /// Base (propagation) round trip, ms.
    pub base_rtt_ms: f64,
    /// Start and end of its activity, s (end: stop time, completion or the
    /// end of the run).
    pub start_s: f64,
    /// See `start_s`.
    pub end_s: f64,
    /// Data bytes received in order (TCP) or accepted into buffers (NETBLT,
    /// unique DATA packets times the packet size) by the receiver.
    pub delivered_bytes: u64,
    /// `delivered_bytes` over the flow's active time, bit/s.
    pub goodput_bps: f64,
    /// Delivered bytes per sample interval, as bit/s, from the run's start.
    pub goodput_series_bps: Vec<f64>,
    /// TCP: congestion window (bytes) at each sample.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub cwnd_series: Vec<u64>,
    /// Data packets the sender put on the wire (first sends and resends).
    pub data_packets_sent: u64,
    /// Data packets sent again.
    pub retransmissions: u64,
    /// Its data packets dropped at the bottleneck.
    pub bottleneck_drops: FlowDrops,
    /// Queueing delay its data packets met at the bottleneck, ms.
    pub queue_delay_ms: Option<Summary>,
    /// Round trips: the TCP sender's own samples; for NETBLT, base RTT plus
    /// each data packet's bottleneck queueing delay. ms.
    pub rtt_ms: Option<Summary>,
    /// TCP sender counters.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tcp: Option<TcpSenderStats>,
    /// A sized transfer finished at this time, s.
    pub completed_at_s: Option<f64>,
    /// NETBLT: every delivered byte matched what was sent (and, if the
    /// transfer finished, the digests agree).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub verified: Option<bool>,
    /// NETBLT: why the connection closed with an error, if it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// When each data packet left the sender, s; only after
    /// `Dumbbell::record_send_times`.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub data_send_times_s: Vec<f64>,
}

impl FlowReport {
    /// Mean goodput in bit/s over the sample intervals that lie wholly in
    /// `[from_s, to_s)`, given the interval width.
    pub fn goodput_between(&self, interval_s: f64, from_s: f64, to_s: f64) -> f64 {
        let first = (from_s / interval_s).ceil().max(0.0) as usize;
        let last = ((to_s / interval_s).floor() as usize).min(self.goodput_series_bps.len());
        if last <= first {
            return 0.0;
        }
        let sum: f64 = self.goodput_series_bps[first..last].iter().sum();
        sum / (last - first) as f64
    }
}

/// The shared link's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BottleneckReport {
    /// Bytes delivered over the bottleneck / its capacity over the run.
    pub utilization: f64,
    /// Packets and bytes it delivered.
    pub delivered_packets: u64,
    /// See `delivered_packets`.
    pub delivered_bytes: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Queue occupancy each arriving packet found, bytes.
    pub queue_bytes: Option<Summary>,
    /// Queueing delay of every packet it transmitted, ms.
    pub queue_delay_ms: Option<Summary>,
    /// Utilization per sample interval.
    pub utilization_series: Vec<f64>,
    /// Queue occupancy at each sample, bytes.
    pub queue_series_bytes: Vec<u64>,
}

/// Everything a dumbbell run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DumbbellReport {
    /// The scenario's name.
    pub name: String,
    /// Its seed.
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Width of every time series' intervals, s.
    pub sample_interval_s: f64,
    /// Per flow, in scenario order.
    pub flows: Vec<FlowReport>,
    /// The shared link.
    pub bottleneck: BottleneckReport,
    /// Jain's index of the flows' goodputs over the last half of the time
    /// all of them were active together (if there was such a time).
    pub fairness: Option<f64>,
    /// Events the simulator processed.
    pub events: u64,
}

impl DumbbellReport {
    /// Jain's fairness index of the flows' mean goodputs over `[from_s,
    /// to_s)` (flows given by index; all when `flows` is empty).
    pub fn jain(&self, flows: &[usize], from_s: f64, to_s: f64) -> Option<f64> {
        let pick: Vec<&FlowReport> = if flows.is_empty() {
            self.flows.iter().collect()
        } else {
            flows.iter().filter_map(|&i| self.flows.get(i)).collect()
        };
        let x: Vec<f64> = pick
            .iter()
            .map(|f| f.goodput_between(self.sample_interval_s, from_s, to_s))
            .collect();
        jain_index(&x)
    }

    /// A plain-text table of the flows and the bottleneck.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<12} {:<18} {:>7} {:>7} {:>7} {:>10} {:>8} {:>7} {:>9} {:>9}",
            "flow",
            "kind",
            "rtt ms",
            "start",
            "end",
            "goodput",
            "resent",
            "drops",
            "qdel p50",
            "qdel p95"
        );
        for f in &self.flows {
            let d = f.bottleneck_drops;
            let (p50, p95) = f
                .queue_delay_ms
                .map_or((f64::NAN, f64::NAN), |s| (s.p50, s.p95));
            let _ = writeln!(
                out,
                "{:<12} {:<18} {:>7.1} {:>7.2} {:>7.2} {:>6.2} Mb/s {:>8} {:>7} {:>6.1} ms {:>6.1} ms",
                f.name,
                f.kind,
                f.base_rtt_ms,
                f.start_s,
                f.end_s,
                f.goodput_bps / 1e6,
                f.retransmissions,
                d.queue + d.aqm + d.loss,
                p50,
                p95
            );
        }
        let b = &self.bottleneck;
        let (q50, q95, qmax) = b
            .queue_bytes
            .map_or((f64::NAN, f64::NAN, f64::NAN), |s| (s.p50, s.p95, s.max));
        let _ = writeln!(
            out,
            "bottleneck: utilization {:.1} %, drops {} (queue {}, aqm {}, loss {}), queue p50/p95/max {:.0}/{:.0}/{:.0} bytes",
            b.utilization * 100.0,
            b.drops.total(),
            b.drops.queue,
            b.drops.aqm,
            b.drops.loss,
            q50,
            q95,
            qmax
        );
        if let Some(j) = self.fairness {
            let _ = writeln!(out, "Jain's index (flows together, second half): {j:.3}");
        }
        out
    }
}
