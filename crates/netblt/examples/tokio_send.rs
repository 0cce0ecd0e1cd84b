//! Sends a file with the async adapter (feature `tokio`): progress from a
//! Tokio channel, and a time limit: the transfer future dropped by
//! `select!` aborts the transfer.
//!
//! ```sh
//! netblt recv --dir /tmp/in --insecure &          # the receiver
//! cargo run -p netblt --features tokio --example tokio_send -- big.iso 127.0.0.1:9998
//! ```
//!
//! Arguments: FILE HOST:PORT [SECONDS: give up after this long].

use std::process::ExitCode;
use std::time::Duration;

use netblt::SendOptions;

#[tokio::main(flavor = "current_thread")] // the transfer runs on the blocking pool
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(file), Some(addr)) = (args.first(), args.get(1)) else {
        eprintln!("usage: tokio_send FILE HOST:PORT [SECONDS]");
        return ExitCode::from(2);
    };
    let Ok(addr) = addr.parse() else {
        eprintln!("'{addr}' is not an address such as 127.0.0.1:9998");
        return ExitCode::from(2);
    };
    let limit = match args.get(2).map(|s| s.parse::<f64>()) {
        // A year: no limit.
        None => Duration::from_secs(365 * 86_400),
        Some(Ok(s)) if s > 0.0 => Duration::from_secs_f64(s),
        Some(_) => {
            eprintln!("'{}' is not a number of seconds", args[2]);
            return ExitCode::from(2);
        }
    };
    let mut transfer = netblt::tokio::send_file(file, addr, SendOptions::new());
    let mut progress = transfer.progress().expect("taken once");
    tokio::spawn(async move {
        while let Some(p) = progress.recv().await {
            eprint!("\r{}: {} of {:?} bytes", p.name, p.bytes, p.total);
        }
    });
    // Leaving the select drops the transfer: past the limit, that aborts it.
    let result = tokio::select! {
        r = &mut transfer => r,
        _ = tokio::time::sleep(limit) => Err(netblt::Error::Failed(format!("gave up after {limit:?}"))),
    };
    eprintln!();
    match result {
        Ok(r) => {
            println!(
                "{}: {} bytes in {:.2} s, verified by the receiver (blake3 {})",
                r.name,
                r.bytes,
                r.wall_time_s,
                r.digest.as_deref().unwrap_or("-")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tokio_send: {e}");
            ExitCode::FAILURE
        }
    }
}
