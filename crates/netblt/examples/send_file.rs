//! Sends a file to a `netblt recv` (or any NETBLT receiver) with the library.
//!
//! ```sh
//! netblt recv --dir /tmp/in --accept-any &          # the receiver
//! cargo run -p netblt --example send_file -- big.iso 127.0.0.1:9998 800M
//! ```
//!
//! Encrypted as the tool is by default (the library's default is plain RFC
//! 998, decision K14), with this user's keys (`netblt id`); without
//! `--accept-any` the receiver must list that key in its `authorized_keys`.
//!
//! Arguments: FILE HOST:PORT [RATE in bits per second, e.g. 800M].

use std::process::ExitCode;

use netblt::SendOptions;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run(&args)
}

/// The example's work, from its arguments (the tests run it against a
/// `netblt recv`).
pub(crate) fn run(args: &[String]) -> ExitCode {
    let (Some(file), Some(addr)) = (args.first(), args.get(1)) else {
        eprintln!("usage: send_file FILE HOST:PORT [RATE]");
        return ExitCode::from(2);
    };
    let Ok(addr) = addr.parse() else {
        eprintln!("'{addr}' is not an address such as 127.0.0.1:9998");
        return ExitCode::from(2);
    };
    let mut opts = SendOptions::new().with_progress(|p| {
        eprint!("\r{}: {} of {:?} bytes", p.name, p.bytes, p.total);
    });
    opts.security = netblt::Security::encrypted();
    if let Some(rate) = args.get(2) {
        let (num, mult) = match rate.strip_suffix(['M', 'm']) {
            Some(n) => (n, 1e6),
            None => match rate.strip_suffix(['G', 'g']) {
                Some(n) => (n, 1e9),
                None => (rate.as_str(), 1.0),
            },
        };
        match num.parse::<f64>() {
            Ok(v) if v > 0.0 => opts.rate = Some((v * mult) as u64),
            _ => {
                eprintln!("'{rate}' is not a rate such as 800M");
                return ExitCode::from(2);
            }
        }
    }
    match netblt::send_file(file, addr, &opts) {
        Ok(r) => {
            eprintln!();
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
            eprintln!();
            eprintln!("send_file: {e}");
            ExitCode::FAILURE
        }
    }
}
