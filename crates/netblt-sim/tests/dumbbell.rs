//! The dumbbell and the TCP model: congestion, sharing, AQM, rate changes,
//! and NETBLT's open-loop starvation of TCP (issue 9). Loose bounds: the
//! exact figures belong to the benchmarks.

use netblt_link::LossModel;
use netblt_sim::dumbbell::{
    run_dumbbell, AqmSpec, BottleneckSpec, DumbbellReport, FlowKind, FlowSpec, NetbltSpec,
    RateStepSpec, Scenario,
};
use netblt_sim::tcp::{CongestionControl, Recovery, TcpConfig};

fn bottleneck(rate_bps: u64, queue_bytes: usize) -> BottleneckSpec {
    BottleneckSpec {
        rate_bps: Some(rate_bps),
        rate_steps: Vec::new(),
        trace: None,
        trace_file: None,
        delay_ms: 5.0,
        jitter_ms: 0.0,
        queue_bytes,
        aqm: AqmSpec::DropTail,
        loss: LossModel::None,
        reorder: 0.0,
        reorder_delay_ms: 0.0,
        mtu: 1500,
    }
}

fn tcp(name: &str, cfg: TcpConfig, rtt_ms: f64, start_s: f64) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        kind: FlowKind::Tcp(cfg),
        rtt_ms,
        start_s,
        stop_s: None,
        size_bytes: None,
        limits: Vec::new(),
    }
}

fn scenario(duration_s: f64, bottleneck: BottleneckSpec, flows: Vec<FlowSpec>) -> Scenario {
    Scenario {
        name: "test".into(),
        seed: 1,
        duration_s,
        sample_interval_ms: 100.0,
        bottleneck,
        access_rate_bps: 10_000_000_000,
        reverse_loss: LossModel::None,
        flows,
    }
}

fn reno() -> TcpConfig {
    TcpConfig {
        cc: CongestionControl::Reno,
        recovery: Recovery::NewReno,
        ..TcpConfig::default()
    }
}

fn mbps(x: f64) -> f64 {
    x / 1e6
}

/// Utilization of the bottleneck over `[from_s, to_s)`.
fn utilization(r: &DumbbellReport, from_s: f64, to_s: f64) -> f64 {
    let iv = r.sample_interval_s;
    let s = &r.bottleneck.utilization_series;
    let (a, b) = ((from_s / iv) as usize, ((to_s / iv) as usize).min(s.len()));
    s[a..b].iter().sum::<f64>() / (b - a) as f64
}

/// 20 Mb/s, 40 ms, one BDP of queue: Reno's sawtooth keeps the link full
/// (the window halves to about one BDP, the queue buffers the rest).
#[test]
fn tcp_alone_fills_the_bottleneck_and_its_window_saws() {
    let s = scenario(
        30.0,
        bottleneck(20_000_000, 100_000),
        vec![tcp("reno", reno(), 40.0, 0.0)],
    );
    let r = run_dumbbell(&s).unwrap();
    let f = &r.flows[0];
    let u = utilization(&r, 5.0, 30.0);
    assert!(u > 0.9, "utilization {u}\n{}", r.table());
    // Payload share of 1500-byte packets with timestamps: 1448/1500.
    let g = f.goodput_between(r.sample_interval_s, 5.0, 30.0);
    assert!(g > 0.85 * 20e6 * 1448.0 / 1500.0, "{}", mbps(g));
    // Sawtooth: several reductions by about half after slow start.
    let cw = &f.cwnd_series;
    let cuts = cw[50..]
        .windows(2)
        .filter(|w| (w[1] as f64) < 0.7 * w[0] as f64)
        .count();
    let tcp = f.tcp.as_ref().unwrap();
    assert!(
        cuts >= 3 && tcp.fast_recoveries >= 3,
        "cuts {cuts}, {tcp:?}"
    );
    // At most the one timeout that ends slow start's overshoot: NewReno
    // repairs one hole per round trip and its "Impatient" timer (RFC 6582)
    // fires when hundreds were lost; the sawtooth itself needs none.
    assert!(tcp.timeouts <= 1, "{tcp:?}");
    // Every dropped segment was resent. Without SACK, the timeout's
    // go-back-N also resends what had arrived: at most one window (the
    // slow-start overshoot reached ~200 segments), once.
    let drops = f.bottleneck_drops.queue;
    assert!(drops > 0 && tcp.retransmissions >= drops, "{drops} {tcp:?}");
    assert!(tcp.retransmissions <= drops + 250, "{drops} {tcp:?}");
    // The queue fills: p95 queueing delay near the 40 ms a full queue holds.
    let q = f.queue_delay_ms.unwrap();
    assert!(q.max > 30.0 && q.max <= 41.0, "{q:?}");
}

fn share_of_two(a: TcpConfig, b: TcpConfig) -> (f64, f64, DumbbellReport) {
    let s = scenario(
        40.0,
        bottleneck(20_000_000, 100_000),
        vec![tcp("a", a, 40.0, 0.0), tcp("b", b, 40.0, 0.5)],
    );
    let r = run_dumbbell(&s).unwrap();
    let ga = r.flows[0].goodput_between(r.sample_interval_s, 10.0, 40.0);
    let gb = r.flows[1].goodput_between(r.sample_interval_s, 10.0, 40.0);
    (ga, gb, r)
}

#[test]
fn two_newreno_flows_of_equal_rtt_share_fairly() {
    let (a, b, r) = share_of_two(reno(), reno());
    let ratio = a / b;
    assert!((0.7..=1.4).contains(&ratio), "{ratio}\n{}", r.table());
    assert!(utilization(&r, 10.0, 40.0) > 0.9);
    assert!(r.jain(&[], 10.0, 40.0).unwrap() > 0.97);
}

#[test]
fn cubic_gets_at_least_newrenos_share() {
    let (cubic, newreno, r) = share_of_two(TcpConfig::cubic(), reno());
    assert!(
        cubic >= newreno,
        "{} vs {}\n{}",
        mbps(cubic),
        mbps(newreno),
        r.table()
    );
    assert!(utilization(&r, 10.0, 40.0) > 0.9);
}

#[test]
fn same_seed_same_report_other_seed_other_report() {
    let mut b = bottleneck(20_000_000, 60_000);
    b.loss = LossModel::Bernoulli { p: 0.002 };
    let mut s = scenario(
        8.0,
        b,
        vec![
            tcp("cubic", TcpConfig::cubic(), 30.0, 0.0),
            tcp("newreno", reno(), 60.0, 1.0),
            FlowSpec {
                size_bytes: Some(2_000_000),
                limits: Vec::new(),
                ..tcp("sized", TcpConfig::default(), 20.0, 0.5)
            },
        ],
    );
    let one = serde_json::to_string(&run_dumbbell(&s).unwrap()).unwrap();
    let two = serde_json::to_string(&run_dumbbell(&s).unwrap()).unwrap();
    assert_eq!(one, two);
    let r: DumbbellReport = serde_json::from_str(&one).unwrap();
    // The sized flow finished, every byte delivered, despite random loss.
    let sized = &r.flows[2];
    assert_eq!(sized.delivered_bytes, 2_000_000);
    assert!(sized.completed_at_s.is_some() && sized.bottleneck_drops.loss > 0);
    s.seed = 2;
    let three = serde_json::to_string(&run_dumbbell(&s).unwrap()).unwrap();
    assert_ne!(one, three);
}

/// Two CUBIC flows into 8 BDPs of queue: drop-tail lets the queue stand
/// near full (hundreds of ms); CoDel holds the standing queue near its
/// 5 ms target and the link stays busy.
#[test]
fn codel_keeps_queueing_delay_far_below_drop_tail() {
    let run = |aqm| {
        let mut b = bottleneck(20_000_000, 800_000);
        b.aqm = aqm;
        let s = scenario(
            20.0,
            b,
            vec![
                tcp("a", TcpConfig::cubic(), 40.0, 0.0),
                tcp("b", TcpConfig::cubic(), 40.0, 0.2),
            ],
        );
        run_dumbbell(&s).unwrap()
    };
    let tail = run(AqmSpec::DropTail);
    let codel = run(AqmSpec::Codel);
    let p95 = |r: &DumbbellReport| r.bottleneck.queue_delay_ms.unwrap().p95;
    assert!(p95(&tail) > 150.0, "{}", tail.table());
    assert!(p95(&codel) < 30.0, "{}", codel.table());
    assert!(p95(&codel) * 5.0 < p95(&tail));
    assert!(codel.bottleneck.drops.aqm > 0 && codel.bottleneck.drops.queue == 0);
    assert!(utilization(&codel, 5.0, 20.0) > 0.85, "{}", codel.table());
}

/// 50 -> 10 -> 50 Mb/s: TCP follows the capacity down and back up.
#[test]
fn tcp_follows_a_rate_step() {
    let mut b = bottleneck(50_000_000, 250_000);
    b.rate_steps = vec![
        RateStepSpec {
            at_s: 10.0,
            rate_bps: 10_000_000,
        },
        RateStepSpec {
            at_s: 20.0,
            rate_bps: 50_000_000,
        },
    ];
    let s = scenario(30.0, b, vec![tcp("cubic", TcpConfig::cubic(), 40.0, 0.0)]);
    let r = run_dumbbell(&s).unwrap();
    let f = &r.flows[0];
    let g = |a, b| f.goodput_between(r.sample_interval_s, a, b);
    let payload = 1448.0 / 1500.0;
    assert!(g(5.0, 10.0) > 0.85 * 50e6 * payload, "{}", r.table());
    let low = g(12.0, 20.0);
    assert!(low > 0.85 * 10e6 * payload && low < 10e6, "{}", mbps(low));
    // Back up within a few seconds (CUBIC's probing from its reduced W_max).
    let high = g(25.0, 30.0);
    assert!(high > 0.85 * 50e6 * payload, "{}", mbps(high));
    assert!(utilization(&r, 12.0, 20.0) > 0.9);
}

/// A delivery trace replaces the rate: 4 opportunities per ms is 48 Mb/s.
#[test]
fn tcp_fills_a_mahimahi_trace() {
    let mut b = bottleneck(1, 150_000);
    b.rate_bps = None;
    b.trace = Some(vec![1, 1, 1, 1]);
    let s = scenario(10.0, b, vec![tcp("cubic", TcpConfig::cubic(), 30.0, 0.0)]);
    let r = run_dumbbell(&s).unwrap();
    let u = utilization(&r, 3.0, 10.0);
    assert!(u > 0.9 && u <= 1.01, "{u}\n{}", r.table());
}

/// Issue 9's problem in the simulator: NETBLT at a fixed rate above the
/// bottleneck (30 Mb/s into 20) takes nearly everything from a TCP flow
/// that had the link to itself, and its deliveries are still correct.
#[test]
fn netblt_at_a_fixed_rate_above_the_bottleneck_starves_tcp() {
    let netblt = FlowSpec {
        name: "netblt".into(),
        kind: FlowKind::Netblt(NetbltSpec {
            rate_bps: Some(30_000_000),
            buffer_size: 256 * 1024,
            ..NetbltSpec::default()
        }),
        rtt_ms: 40.0,
        start_s: 4.0,
        stop_s: None,
        size_bytes: None,
        limits: Vec::new(),
    };
    let s = scenario(
        12.0,
        bottleneck(20_000_000, 100_000),
        vec![tcp("cubic", TcpConfig::cubic(), 40.0, 0.0), netblt],
    );
    let r = run_dumbbell(&s).unwrap();
    let iv = r.sample_interval_s;
    let (tcp, nb) = (&r.flows[0], &r.flows[1]);
    let solo = tcp.goodput_between(iv, 2.0, 4.0);
    let shared = tcp.goodput_between(iv, 6.0, 12.0);
    let nb_rate = nb.goodput_between(iv, 6.0, 12.0);
    assert!(solo > 0.8 * 20e6 * 1448.0 / 1500.0, "{}", r.table());
    assert!(
        shared < 0.15 * solo,
        "{} of {}\n{}",
        mbps(shared),
        mbps(solo),
        r.table()
    );
    assert!(nb_rate > 0.8 * 20e6, "{}", r.table());
    // Open loop: NETBLT loses about a third of what it sends at the queue.
    assert!(
        nb.bottleneck_drops.queue * 5 > nb.data_packets_sent,
        "{}",
        r.table()
    );
    assert_eq!(nb.verified, Some(true), "{:?}", nb.error);
}

#[test]
fn a_sized_netblt_transfer_alone_completes_verified() {
    let netblt = FlowSpec {
        name: "netblt".into(),
        kind: FlowKind::Netblt(NetbltSpec {
            rate_bps: Some(15_000_000),
            buffer_size: 128 * 1024,
            ..NetbltSpec::default()
        }),
        rtt_ms: 40.0,
        start_s: 0.5,
        stop_s: None,
        size_bytes: Some(5_000_000),
        limits: Vec::new(),
    };
    let s = scenario(10.0, bottleneck(20_000_000, 100_000), vec![netblt]);
    let r = run_dumbbell(&s).unwrap();
    let f = &r.flows[0];
    assert_eq!(f.verified, Some(true), "{:?}", f.error);
    assert_eq!(f.delivered_bytes, 5_000_000);
    assert!(f.completed_at_s.is_some_and(|t| t < 5.0), "{}", r.table());
    assert_eq!(f.bottleneck_drops.queue, 0);
}

#[test]
fn shipped_scenarios_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let s = Scenario::load(&path).unwrap();
            s.validate()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 4);
}

#[test]
fn bad_scenarios_are_refused_with_a_reason() {
    let mut s = scenario(
        1.0,
        bottleneck(1_000_000, 10_000),
        vec![tcp("t", reno(), 4.0, 0.0)],
    );
    let e = run_dumbbell(&s).unwrap_err().to_string();
    assert!(e.contains("twice the bottleneck delay"), "{e}");
    s.flows[0].rtt_ms = 40.0;
    s.duration_s = f64::NAN;
    assert!(run_dumbbell(&s).is_err());
    s.duration_s = 1.0;
    s.bottleneck.rate_bps = None;
    assert!(run_dumbbell(&s)
        .unwrap_err()
        .to_string()
        .contains("rate_bps"));
    let json = r#"{"duration_s": 1, "bottleneck": {"queue_bytes": 1, "rate_bps": 1, "bogus": 1}, "flows": []}"#;
    assert!(serde_json::from_str::<Scenario>(json).is_err());
}
