//! Benchmark (not a test): how many simulated packets per wall-clock second?
//!
//! `cargo run --release -p netblt-sim --example sim_speed [packets]`
//!
//! Host A blasts paced datagrams over a 1 Gb/s, 1 ms path with a little
//! loss and jitter to host B, which echoes every 16th one back, so both
//! directions, the CPU/NIC model, timers and the link model are all exercised.

use std::time::Instant as WallClock;

use netblt_sim::{Duration, HostModel, Instant, LinkConfig, Node, PathConfig, Simulation};

struct Source {
    left: u64,
    next: Instant,
    gap: Duration,
    echoes: u64,
}

impl Node for Source {
    fn handle_datagram(&mut self, _now: Instant, _data: &[u8]) {
        self.echoes += 1;
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.left == 0 || now < self.next {
            return false;
        }
        self.left -= 1;
        self.next = now + self.gap;
        buf.extend_from_slice(&self.left.to_be_bytes());
        buf.resize(1400, 0);
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (self.left > 0).then_some(self.next)
    }
    fn is_finished(&self) -> bool {
        self.left == 0
    }
}

#[derive(Default)]
struct Reflector {
    received: u64,
    owed: u32,
}

impl Node for Reflector {
    fn handle_datagram(&mut self, _now: Instant, _data: &[u8]) {
        self.received += 1;
        if self.received % 16 == 0 {
            self.owed += 1;
        }
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.owed == 0 {
            return false;
        }
        self.owed -= 1;
        buf.resize(64, 0);
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn is_finished(&self) -> bool {
        false
    }
}

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let link = LinkConfig {
        jitter: Duration::from_micros(50),
        loss: netblt_link::LossModel::Bernoulli { p: 0.001 },
        queue_limit_bytes: Some(1 << 20),
        ..LinkConfig::with_rate_delay(1_000_000_000, Duration::from_millis(1))
    };
    let host = HostModel {
        send_fixed: Duration::from_nanos(500),
        recv_fixed: Duration::from_nanos(500),
        nic_buffers: Some(64),
        ..HostModel::default()
    };
    let path = PathConfig {
        forward: link.clone(),
        reverse: link,
        host_a: host.clone(),
        host_b: host,
        wire_overhead: 46,
        segment: None,
    };
    let source = Source {
        left: packets,
        next: Instant::ZERO,
        gap: Duration::from_micros(12),
        echoes: 0,
    };
    let mut sim = Simulation::new(source, Reflector::default(), path, 1).expect("valid path");
    let start = WallClock::now();
    let outcome = sim.run(Instant::FAR_FUTURE);
    let wall = start.elapsed().as_secs_f64();
    let stats = sim.stats();
    let simulated = stats.host_a.packets_sent + stats.host_b.packets_sent;
    println!("outcome: {outcome:?} at simulated {}", sim.now());
    println!(
        "{simulated} packets ({} received by B, {} echoes back), {} events in {wall:.3} s wall",
        stats.host_b.packets_received,
        sim.node_a().echoes,
        stats.events
    );
    println!(
        "{:.0} simulated packets per wall-clock second, {:.0} events per second",
        simulated as f64 / wall,
        stats.events as f64 / wall
    );
}
