//! Transfer parameters from the command line (the library's `SendOptions`
//! and `ReceiverOptions` are built from these).
//!
//! Defaults suit a modern LAN: 1400-byte data segments (a 1424-byte NETBLT
//! DATA packet, inside a 1500-byte MTU with IPv4 or IPv6 and UDP), 1 MiB
//! buffers, 32 outstanding; on a path with a larger MTU (jumbo frames,
//! loopback) the packet and buffer sizes not given are chosen from it when
//! the socket connects (decision G3); without `--rate` or `--burst-size`, a ceiling of
//! [`DEFAULT_RATE`] (10 Gb/s: 893 packets per 1 ms burst), i.e. "as fast as
//! the hosts go"; the `fair` rate controller finds the path's rate below it.

use clap::Args;
use netblt::{DEFAULT_RATE, MAX_UDP_PACKET_SIZE};
use netblt_proto::TransferParams;

use crate::exit::CliError;
use crate::units::{parse_rate, parse_size};

/// The offer an active end makes (RFC 998 §4: the active end proposes, the
/// passive end may only make values more restrictive).
#[derive(Debug, Clone, Args)]
pub struct ParamFlags {
    /// Maximum data rate in bits per second (e.g. 800M, 2.5G); with
    /// `--policy fixed`, the rate itself (turned into a burst size per 1 ms
    /// burst interval, or a longer interval for slow rates). Default 10G,
    /// or 40G when the path takes packets larger than 1400 bytes (loopback,
    /// jumbo frames) and --packet-size is not given: the adaptive controller
    /// finds the path's rate below it.
    #[arg(long, value_parser = parse_rate, allow_negative_numbers = true, conflicts_with_all = ["burst_size", "burst_interval"])]
    pub rate: Option<u64>,
    /// DATA packets per burst (RFC 998's burst size); needs --burst-interval.
    #[arg(long, requires = "burst_interval")]
    pub burst_size: Option<u16>,
    /// Milliseconds from the start of one burst to the next (RFC 998's burst
    /// rate); needs --burst-size.
    #[arg(long, requires = "burst_size")]
    pub burst_interval: Option<u16>,
    /// Data bytes per DATA packet. Default: from the path MTU the kernel
    /// reports for the peer: 1400 on a 1500-byte path, what fits a larger
    /// one (jumbo frames, loopback's 65535) up to 16000; 1400 over raw IP.
    /// Larger values than the path's need IP fragmentation.
    #[arg(long, value_parser = parse_size, allow_negative_numbers = true)]
    pub packet_size: Option<u64>,
    /// Bytes per NETBLT buffer (e.g. 1MiB, 256k). Default: 1 MiB for
    /// packets up to 2048 bytes, else 512 packets (8,192,000 bytes at 16000).
    #[arg(long, value_parser = parse_size, allow_negative_numbers = true)]
    pub buffer_size: Option<u64>,
    /// Buffers outstanding at most (NBUFS). The sender queues 32 (or all,
    /// if fewer) and more only when its rate times the time a buffer stays
    /// outstanding needs them: a buffer with a lost packet waits two or
    /// three round trips for its RESEND, so a long lossy path needs many.
    /// Default 128 (a passive end accepts up to 128), or as many as keep 32
    /// MiB in flight (at least 4) when the buffer size is chosen from a
    /// large packet size.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub buffers: Option<u16>,
    /// Checksum DATA packet data (RFC 998's C flag): on or off. Default:
    /// off over UDP, whose own checksum already covers every datagram (and
    /// the BLAKE3 digest the whole transfer); on over raw IP, where nothing
    /// else covers the data.
    #[arg(long, value_parser = ["on", "off"])]
    pub data_checksum: Option<String>,
}

/// Flags every network command shares.
#[derive(Debug, Clone, Args)]
pub struct CommonFlags {
    /// Seconds of silence after which the peer is declared dead (RFC 998's
    /// death timer; sent to the peer in OPEN/RESPONSE).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub death_timer: u16,
    /// Run NETBLT directly over IP protocol 30 (RFC 998) instead of UDP.
    /// Needs root or CAP_NET_RAW.
    #[arg(long)]
    pub raw_ip: bool,
    /// Print one JSON object per transfer instead of text.
    #[arg(long)]
    pub json: bool,
    /// Rate control when this end sends: `fair` finds the path's rate,
    /// keeps it on noisy links and shares it with other flows; `background`
    /// yields to other traffic as soon as a queue builds (LEDBAT-style);
    /// `fixed` sends at --rate, as RFC 998 does (only for paths you own).
    #[arg(long, default_value = "fair", value_parser = ["fair", "background", "fixed"])]
    pub policy: String,
    /// Never send slower than this (bits/s, e.g. 5M), whatever the path
    /// says (adaptive policies).
    #[arg(long, value_parser = parse_rate, allow_negative_numbers = true)]
    pub min_rate: Option<u64>,
    /// Change the rate limits while the transfer runs: a file holding
    /// `MAX [MIN]` in --rate's units (`20M`, `1.5G 100M`; `none`: no
    /// maximum), read at the start and whenever it changes (every 0.25 s),
    /// e.g. `echo 20M > FILE`. Never above the rate negotiated at OPEN
    /// (--rate, or the default ceiling). On `get`, the maximum limits the
    /// sending server: it goes in each OK (RFC 998 §4), a buffer later
    #[arg(long, value_name = "FILE")]
    pub rate_file: Option<std::path::PathBuf>,
    /// Print newline-delimited JSON while the transfer runs: one
    /// `{"event":"interval",...}` object every --interval seconds (bytes,
    /// interval and total rate, retransmitted, lost, srtt, the rate
    /// controller's rate, reason, bottleneck and min RTT), then
    /// `{"event":"end","data":REPORT}` (like iperf3 --json-stream).
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,
    /// Seconds between --json-stream objects (with --json-stream only: the
    /// text output has no interval lines).
    #[arg(short = 'i', long, default_value_t = 1.0, value_parser = parse_interval, allow_negative_numbers = true, requires = "json_stream")]
    pub interval: f64,
    #[command(flatten)]
    pub security: crate::security_flags::SecurityFlags,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.1 && v.is_finite() => Ok(v),
        _ => Err(format!("'{s}': give seconds, at least 0.1")),
    }
}

impl ParamFlags {
    /// The offer; `raw_ip` picks the data checksum's default.
    pub fn params(&self, raw_ip: bool) -> Result<TransferParams, CliError> {
        let psz = self
            .packet_size
            .unwrap_or(u64::from(netblt::LAN_PACKET_SIZE));
        if psz == 0 || psz > MAX_UDP_PACKET_SIZE {
            return Err(CliError::usage(format!(
                "--packet-size must be between 1 and {MAX_UDP_PACKET_SIZE}, got {psz}"
            )));
        }
        let psz = psz as u16;
        let bsz = self.buffer_size.unwrap_or(1 << 20);
        if bsz == 0 {
            return Err(CliError::usage("--buffer-size must be at least 1 byte"));
        }
        let buffer_size = u32::try_from(bsz)
            .map_err(|_| CliError::usage(format!("--buffer-size {bsz} is too large")))?;
        let (burst_size, burst_interval_ms) =
            match (self.rate, self.burst_size, self.burst_interval) {
                (Some(0), _, _) => return Err(CliError::usage("--rate must be positive")),
                (Some(r), _, _) => TransferParams::burst_for_rate_exact(r, psz),
                (None, Some(b), Some(i)) => (b, i),
                _ => TransferParams::burst_for_rate(DEFAULT_RATE, psz),
            };
        let p = TransferParams {
            packet_size: psz,
            buffer_size,
            burst_size,
            burst_interval_ms,
            max_buffers: self.buffers.unwrap_or(netblt::DEFAULT_BUFFERS),
            checksum_data: self.data_checksum.as_deref().map_or(raw_ip, |c| c == "on"),
        };
        p.validate()
            .map_err(|e| CliError::usage(format!("invalid parameters: {e}")))?;
        Ok(p)
    }
}

impl ParamFlags {
    /// The sizes the library chooses from the path when it connects: those
    /// not given on the command line (decision G3).
    pub fn auto_size(&self) -> netblt::AutoSize {
        let rate_given = self.rate.is_some() || self.burst_size.is_some();
        let mut a = netblt::AutoSize::new(
            self.packet_size.is_none(),
            self.buffer_size.is_none(),
            !rate_given,
        );
        a.buffers = self.buffer_size.is_none() && self.buffers.is_none();
        a
    }
}

impl CommonFlags {
    /// Machine-readable output (`--json` or `--json-stream`): no bar.
    pub fn machine(&self) -> bool {
        self.json || self.json_stream
    }

    /// Where an error without a report goes as JSON (F26), as the
    /// reports go: `--json` on standard output, `--json-stream` as an
    /// `error` event.
    pub fn json_sink(&self) -> Option<crate::json_error::Sink> {
        use crate::json_error::Sink;
        if self.json_stream {
            Some(Sink::Stream)
        } else {
            self.json.then_some(Sink::Stdout)
        }
    }

    /// The progress bar and/or JSON stream these flags ask for.
    pub fn live(&self) -> crate::progress::Bar {
        let stream = self.json_stream.then_some(crate::progress::Stream {
            interval: self.interval,
        });
        crate::progress::Bar::with_stream(self.json, stream)
    }

    /// Prints a finished transfer's report as JSON (`--json`: the report;
    /// `--json-stream`: the final `end` object). False if neither.
    pub fn print_json(&self, report: &serde_json::Value) -> bool {
        if self.json_stream {
            println!("{}", crate::progress::end_object(report));
        } else if self.json {
            println!("{report}");
        } else {
            return false;
        }
        true
    }

    /// `--min-rate` above `--rate` is a contradiction, not a floor: the
    /// controller would be asked to stay above its own ceiling.
    pub fn check_min_rate(&self, p: &ParamFlags) -> Result<(), CliError> {
        match (self.min_rate, p.rate) {
            (Some(min), Some(max)) if min > max => Err(CliError::usage(format!(
                "--min-rate {} is above --rate {}: the floor must not be above the ceiling",
                crate::units::fmt_rate(min as f64),
                crate::units::fmt_rate(max as f64)
            ))),
            _ => Ok(()),
        }
    }

    /// `--rate-file`'s live limits, read once now (a bad file: one line,
    /// exit 2) and followed from then on.
    pub fn rate_control(&self) -> Result<Option<netblt::RateControl>, CliError> {
        self.rate_file
            .as_deref()
            .map(crate::rate_file::watch)
            .transpose()
    }

    /// The library's options for the active end, with the offer `params`.
    /// Ctrl-C aborts the transfer. `recv_flags`: what the other end's
    /// `netblt recv` needs (for the one-time code's hint).
    pub fn send_options(&self, params: TransferParams, recv_flags: &str) -> netblt::SendOptions {
        let mut o = netblt::SendOptions::default();
        o.params = params;
        o.policy = self.policy.parse().unwrap_or(netblt::Policy::Fair);
        o.min_rate = self.min_rate;
        // The offered burst rate is the ceiling (RFC 998: the passive end
        // may only lower it).
        o.rate = Some(params.rate_bps() as u64);
        o.death_timer = std::time::Duration::from_secs(u64::from(self.death_timer));
        o.raw_ip = self.raw_ip;
        o.stop = Some(crate::progress::stop_flag());
        o.security = self.security.security(recv_flags);
        o
    }
}
