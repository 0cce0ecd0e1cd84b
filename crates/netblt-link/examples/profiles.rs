//! Prints every profile as JSON-ish text: `cargo run -p netblt-link --example profiles`.

fn main() {
    for p in netblt_link::profiles::all() {
        println!("== {}: {}", p.name, p.summary);
        println!("forward: {:?}", p.forward);
        println!("host_a: {:?}", p.host_a);
        println!("host_b: {:?}", p.host_b);
        println!(
            "wire_overhead: {}  defaults: {:?}",
            p.wire_overhead, p.defaults
        );
        println!("sources: {}\n", p.sources);
    }
}
