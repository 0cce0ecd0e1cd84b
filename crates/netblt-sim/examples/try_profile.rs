use netblt_proto::TransferParams;
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::{profiles, PathConfig};
fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("proteon-ring");
    let bi: u16 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(40);
    let nb: u16 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let p = profiles::profile(name).expect("profile");
    let d = &p.defaults;
    let params = TransferParams {
        packet_size: d.packet_size,
        buffer_size: d.buffer_size,
        burst_size: d.burst_size,
        burst_interval_ms: bi,
        max_buffers: nb,
        checksum_data: true,
    };
    let size: u64 = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_990_000);
    let spec = TransferSpec::new(PathConfig::from_profile(&p), params, size);
    let t = std::time::Instant::now();
    let r = run_transfer(&spec).unwrap();
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
    eprintln!("wall {:?}", t.elapsed());
    if std::env::var("DUMP").is_ok() {
        eprintln!(
            "SENDER {:#?}\nRECEIVER {:#?}\nSIM {:#?}",
            r.sender, r.receiver, r.sim
        );
    }
}
#[allow(dead_code)]
fn unused() {}
