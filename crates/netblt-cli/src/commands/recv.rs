//! `netblt recv`: the passive end. Serves many senders at once; stores
//! files under `--dir`, discards with `--sink`, lets peers fetch files with
//! `--serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use std::io::Write;

use netblt::{
    DataHandler, IncomingTransfer, JunkCounts, Receiver, ReceiverOptions, TransferReport,
};

use crate::exit::{self, CliError};
use crate::output::line;
use crate::progress::{default_sigpipe, stop_flag};

#[derive(Debug, Args)]
pub struct RecvArgs {
    /// Address and port to listen on: ADDRESS:PORT, a PORT alone (on
    /// every address) or an ADDRESS alone (port 9998). Default `[::]:9998`:
    /// UDP over IPv6 and IPv4 both (`0.0.0.0:9998` where the host has no
    /// IPv6, or with --raw-ip, whose port is the NETBLT port); `[::]:PORT`
    /// takes both families, any other address only its own.
    #[arg(long, short = 'l', value_parser = parse_listen, value_name = "[ADDRESS:]PORT|ADDRESS")]
    pub listen: Option<Listen>,
    /// Directory received files go to (and --serve reads from). A bundle
    /// (`netblt send DIR`) is unpacked below it: nothing is written
    /// outside, links are never followed, files appear only once the whole
    /// bundle is verified, and a file that cannot be stored is reported
    /// while the others arrive.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Discard all received data (memory-to-memory tests; `netblt bench`).
    #[arg(long)]
    pub sink: bool,
    /// Exit after one transfer, with its result as exit code.
    #[arg(long)]
    pub once: bool,
    /// Write one transfer's data to standard output, in order, then exit
    /// (implies --once; reports go to stderr). The bytes are written before
    /// the end-to-end digest is checked: the exit status says whether they
    /// verified, e.g. `netblt recv --stdout | tar x`. A bundle of files
    /// arrives as its tar stream.
    #[arg(long, conflicts_with_all = ["sink", "serve", "dir"])]
    pub stdout: bool,
    /// Let peers fetch files and directories under --dir (`netblt get`,
    /// READ mode; a directory goes in one connection as a bundle, links in
    /// it never followed nor sent). Files sent to it are still received
    /// into --dir, as without --serve.
    #[arg(long)]
    pub serve: bool,
    /// Limit all the transfers running together, shared fairly among
    /// them: files served to `get` (--serve) and data received (the
    /// maximum is offered to each sender in its OKs, RFC 998 §4), from a
    /// file holding `MAX [MIN]` (`20M`; `none`), re-read whenever it
    /// changes; see `netblt send --help`
    #[arg(long, value_name = "FILE")]
    pub rate_file: Option<std::path::PathBuf>,
    /// Overwrite existing files (a bundle's too; an existing directory is
    /// never replaced).
    #[arg(long)]
    pub force: bool,
    /// Seconds of silence after which a sender is declared dead.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub death_timer: u16,
    /// Print one JSON object per transfer instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Run over IP protocol 30 instead of UDP (root or CAP_NET_RAW).
    #[arg(long)]
    pub raw_ip: bool,
    #[command(flatten)]
    pub security: crate::security_flags::RecvSecurityFlags,
}

/// Prints one finished transfer: a line, or a JSON object with the junk
/// counters; on stderr when stdout carries the data.
fn print_report(report: &TransferReport, junk: &JunkCounts, json: bool, to_stderr: bool) {
    let text = if json {
        let mut v = serde_json::to_value(report).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "junk".into(),
                serde_json::to_value(junk).unwrap_or_default(),
            );
        }
        v.to_string()
    } else {
        // The name and a failure's reason come from the peer.
        crate::output::shown(&line(report)).into_owned()
    };
    if to_stderr {
        eprintln!("netblt: {text}");
    } else {
        println!("{text}");
    }
    // A bundle's entries that could not be stored: one line each.
    if let Some(f) = &report.files {
        crate::output::print_failed(
            f,
            "",
            "entries failed",
            Some(" (use --force on the receiver)"),
        );
    }
}

/// A transfer refused before it began: one line, as its sender gets one
/// (a JSON object with `--json`); stderr unless `--json` (stdout carries
/// the data with `--stdout`).
fn print_refusal(r: &netblt::Refusal, json: bool, to_stderr: bool) {
    if json && !to_stderr {
        let v = serde_json::json!({
            "refused": {
                "peer": r.peer.to_string(),
                "name": r.name,
                "reason": r.reason,
                // The reason's stable code, as a sender's report carries it
                // in `peer_reason` (F26).
                "reason_code": netblt::PeerReason::from_wire(&r.reason).code(),
                "failed": !r.benign,
            }
        });
        println!("{v}");
    } else {
        // The name comes from the peer (a refused one may be any string).
        let what = if r.benign { "" } else { "refused: " };
        // The library's reason names no flag (F20); this receiver's is,
        // or for a `get` the client's (F25).
        let advice = match netblt::PeerReason::from_wire(&r.reason) {
            netblt::PeerReason::FileExists if r.read => " (get --force replaces the client's copy)",
            netblt::PeerReason::FileExists => " (use --force on the receiver)",
            _ => "",
        };
        let text = format!("{} <- {}: {what}{}{advice}", r.name, r.peer, r.reason);
        eprintln!("netblt: {}", crate::output::shown(&text));
    }
}

/// `--stdout`: the data, in order, to standard output.
struct Stdout(std::io::BufWriter<std::io::Stdout>);

impl DataHandler for Stdout {
    fn accept(&mut self, t: &IncomingTransfer) -> Result<(), String> {
        if t.bundle {
            eprintln!("netblt: {} is a bundle of files: its tar stream goes to standard output (pipe it to `tar x`)", t.name);
        }
        Ok(())
    }

    fn data(&mut self, _: &IncomingTransfer, _: u64, bytes: &[u8]) -> Result<(), String> {
        self.0
            .write_all(bytes)
            .map_err(|e| format!("writing standard output: {e}"))
    }

    fn end(&mut self, _: &IncomingTransfer, _: bool) {
        let _ = self.0.flush();
    }
}

/// What `--listen` was given (iperf3 users type a port, others an
/// address; both are as good as ADDRESS:PORT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    Both(SocketAddr),
    Port(u16),
    Address(std::net::IpAddr),
}

fn parse_listen(s: &str) -> Result<Listen, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(Listen::Both(a));
    }
    if let Ok(p) = s.parse::<u16>() {
        return Ok(Listen::Port(p));
    }
    // `[::1]` as well as `::1`.
    let bare = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(s);
    bare.parse::<std::net::IpAddr>()
        .map(Listen::Address)
        .map_err(|_| {
            "expected ADDRESS:PORT, a PORT or an ADDRESS (e.g. 0.0.0.0:9998, 9998, [::1]:9998)"
                .to_string()
        })
}

impl Listen {
    fn resolve(self, raw_ip: bool) -> SocketAddr {
        match self {
            Listen::Both(a) => a,
            Listen::Port(p) => SocketAddr::new(default_listen(raw_ip).ip(), p),
            Listen::Address(ip) => SocketAddr::new(ip, netblt::DEFAULT_PORT),
        }
    }
}

/// `[::]:9998` (dual-stack over UDP) where the host has IPv6, else
/// `0.0.0.0:9998`; always IPv4 over raw IP (RFC 998's protocol 30 is an
/// IPv4 protocol number, and a raw IPv6 socket sees no IPv4 traffic).
fn default_listen(raw_ip: bool) -> SocketAddr {
    let port = netblt::DEFAULT_PORT;
    let any6 = SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
    let v6 = !raw_ip && std::net::UdpSocket::bind((std::net::Ipv6Addr::UNSPECIFIED, 0)).is_ok();
    if v6 {
        any6
    } else {
        SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port))
    }
}

pub fn run(a: RecvArgs) -> anyhow::Result<i32> {
    default_sigpipe();
    if !a.sink && !a.stdout {
        Receiver::check_dir(&a.dir).map_err(CliError::from)?;
    }
    let mut opts = ReceiverOptions::default();
    opts.death_timer = std::time::Duration::from_secs(u64::from(a.death_timer));
    opts.raw_ip = a.raw_ip;
    opts.overwrite = a.force;
    opts.serve = a.serve;
    opts.rate_control = a
        .rate_file
        .as_deref()
        .map(crate::rate_file::watch)
        .transpose()?;
    opts.max_transfers = (a.once || a.stdout).then_some(1);
    opts.stop = Some(stop_flag());
    opts.security = a.security.security()?;
    if a.security.code.is_some() {
        // A code is good for one transfer.
        opts.max_transfers = Some(1);
    }
    let json = a.json;
    let to_stderr = a.stdout;
    opts.on_transfer = Some(std::sync::Arc::new(
        move |r: &TransferReport, j: &JunkCounts| print_report(r, j, json, to_stderr),
    ));
    opts.on_refused = Some(std::sync::Arc::new(move |r: &netblt::Refusal| {
        print_refusal(r, json, to_stderr)
    }));
    let listen = a
        .listen
        .map_or_else(|| default_listen(a.raw_ip), |l| l.resolve(a.raw_ip));
    let receiver = Receiver::bind(listen, opts).map_err(CliError::from)?;
    if !a.json {
        eprintln!(
            "netblt: listening on {}{} ({})",
            receiver.local_addr(),
            if a.raw_ip {
                " (IP protocol 30)"
            } else if listen.is_ipv6() && listen.ip().is_unspecified() {
                " (UDP, IPv6 and IPv4)"
            } else {
                " (UDP)"
            },
            if a.sink {
                "discarding data".to_string()
            } else if a.stdout {
                "one transfer to standard output".to_string()
            } else if a.serve {
                format!("files in {}, fetched and received", a.dir.display())
            } else {
                format!("files in {}", a.dir.display())
            }
        );
    }
    if !a.sink && !a.stdout {
        // After the "listening" line, which scripts wait for (F13).
        crate::leftovers::warn(&a.dir);
    }
    let summary = if a.sink {
        receiver.sink()
    } else if a.stdout {
        receiver.handle_with(Stdout(std::io::BufWriter::with_capacity(
            1 << 20,
            std::io::stdout(),
        )))
    } else {
        receiver.serve_dir(&a.dir)
    }
    .map_err(CliError::from)?;
    let junk = summary.junk;
    if !a.json && (junk.malformed + junk.stray + junk.rejected_uid) > 0 {
        eprintln!(
            "netblt: ignored {} malformed and {} stray datagrams, rejected {} duplicate OPENs",
            junk.malformed, junk.stray, junk.rejected_uid
        );
    }
    if !a.json && junk.migrated > 0 {
        eprintln!(
            "netblt: {} transfer(s) followed their peer to a new address (NAT rebinding)",
            junk.migrated
        );
    }
    Ok(match (&summary.last_error, a.once || a.stdout) {
        (Some(e), true) => exit::of(e),
        _ => exit::OK,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_a_port_an_address_or_both() {
        let both: SocketAddr = "127.0.0.1:19998".parse().unwrap();
        assert_eq!(parse_listen("127.0.0.1:19998"), Ok(Listen::Both(both)));
        assert_eq!(parse_listen("19998"), Ok(Listen::Port(19998)));
        let v6: std::net::IpAddr = "::1".parse().unwrap();
        assert_eq!(parse_listen("::1"), Ok(Listen::Address(v6)));
        assert_eq!(parse_listen("[::1]"), Ok(Listen::Address(v6)));
        assert_eq!(
            Listen::Address(v6).resolve(false),
            SocketAddr::new(v6, netblt::DEFAULT_PORT)
        );
        let p = Listen::Port(19998).resolve(true);
        assert_eq!((p.ip().is_unspecified(), p.port()), (true, 19998));
        assert!(parse_listen("99999").is_err());
        assert!(parse_listen("host.example:1").is_err());
    }
}
