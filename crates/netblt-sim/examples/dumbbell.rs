//! Runs a dumbbell scenario file and prints a table, then the JSON report.
//!
//! ```text
//! cargo run --release -p netblt-sim --example dumbbell -- crates/netblt-sim/scenarios/tcp-alone.json
//! ```
//! `--table` prints only the table; `--json` only the JSON.

use std::process::ExitCode;
use std::time::Instant;

use netblt_sim::dumbbell::{run_dumbbell, Scenario};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let table_only = args.iter().any(|a| a == "--table");
    let json_only = args.iter().any(|a| a == "--json");
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: dumbbell SCENARIO.json [--table | --json]");
        return ExitCode::from(2);
    };
    let scenario = match Scenario::load(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let wall = Instant::now();
    let report = match run_dumbbell(&scenario) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let secs = wall.elapsed().as_secs_f64();
    if !json_only {
        println!(
            "{} ({} s simulated, seed {})",
            report.name, report.duration_s, report.seed
        );
        print!("{}", report.table());
        eprintln!(
            "{} events in {:.2} s wall: {:.2} M events/s",
            report.events,
            secs,
            report.events as f64 / secs / 1e6
        );
    }
    if !table_only {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
