use netblt_link::LossModel;
use netblt_proto::{Duration, TransferParams};
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::{profiles, PathConfig};
fn main() {
    let p = profiles::profile("proteon-ring").unwrap();
    let loss: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.05);
    let mut fails = 0;
    let only: Option<u64> = std::env::args().nth(2).and_then(|s| s.parse().ok());
    if only.is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .without_time()
            .with_ansi(false)
            .init();
    }
    for seed in 0..200u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut path = PathConfig::from_profile(&p);
        path.forward.loss = LossModel::Bernoulli { p: loss };
        path.reverse.loss = LossModel::Bernoulli { p: loss };
        let params = TransferParams {
            packet_size: 1990,
            buffer_size: 19_900,
            burst_size: 5,
            burst_interval_ms: 40,
            max_buffers: 2,
            checksum_data: true,
        };
        let mut spec = TransferSpec::new(path, params, 200_000);
        spec.seed = seed;
        spec.death_timeout = Duration::from_secs(10);
        spec.time_limit = Duration::from_secs(3600);
        let r = run_transfer(&spec).unwrap();
        if !r.verified {
            fails += 1;
            println!("seed {seed}: {:?} t={}", r.error, r.sim_time_s);
            if only.is_some() {
                println!("{:#?}", r.sim);
            }
        }
    }
    println!("fails {fails}");
}
