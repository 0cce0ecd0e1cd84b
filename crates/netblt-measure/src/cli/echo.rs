//! `netblt echo`.

use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::{print_json, EchoArgs};
use crate::server::{EchoServer, EchoServerConfig};

#[derive(Serialize)]
struct Listening {
    tcp: Option<String>,
    udp: Option<String>,
    services: [&'static str; 2],
}

/// Runs the echo/sink server until interrupted, or for `--duration` seconds.
///
/// # Errors
/// When a listener cannot be bound.
pub fn run_echo(args: EchoArgs) -> anyhow::Result<()> {
    let mut config = EchoServerConfig::new(args.listen);
    config.tcp = !args.udp;
    config.udp = !args.tcp;
    config.max_connections = args.max_connections as usize;
    let server = EchoServer::start(config)?;
    let info = Listening {
        tcp: server.tcp_addr().map(|a| a.to_string()),
        udp: server.udp_addr().map(|a| a.to_string()),
        services: ["echo", "sink"],
    };
    if args.json {
        print_json(&info)?;
    } else {
        let mut parts = Vec::new();
        if let Some(t) = &info.tcp {
            parts.push(format!("tcp {t}"));
        }
        if let Some(u) = &info.udp {
            parts.push(format!("udp {u}"));
        }
        println!(
            "netblt echo: serving echo and sink on {}{}",
            parts.join(" and "),
            if args.duration.is_some() {
                ""
            } else {
                "; Ctrl-C to stop"
            }
        );
    }
    // A script waiting for this line must see it now, not when a pipe's buffer fills.
    std::io::stdout().flush()?;
    match args.duration {
        Some(secs) => {
            std::thread::sleep(Duration::from_secs_f64(secs));
            let stats = server.shutdown();
            if !args.json {
                println!(
                    "netblt echo: done: {} tcp connections, {} messages echoed, {} bytes sunk, {} malformed",
                    stats.tcp_connections, stats.echoed, stats.sunk_bytes, stats.malformed
                );
            }
        }
        None => loop {
            // The server threads do the work; this thread only keeps the process alive.
            std::thread::park();
        },
    }
    Ok(())
}
