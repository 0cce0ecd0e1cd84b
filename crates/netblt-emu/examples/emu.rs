//! Stand-alone `netblt emu` (the same code the `netblt` binary wires in):
//! `cargo run --release -p netblt-emu --example emu -- --profile lan-1g -- iperf3 -c 198.18.0.2`.

use clap::Parser;

/// User-space link emulator: TUN devices between two network namespaces.
#[derive(Parser)]
#[command(name = "emu")]
struct Cli {
    #[command(flatten)]
    args: netblt_emu::cli::EmuArgs,
}

fn main() {
    let cli = Cli::parse();
    match netblt_emu::cli::run(cli.args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("netblt emu: {e:#}");
            std::process::exit(1);
        }
    }
}
