//! Options of either end, and the progress callback.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use netblt_proto::{Policy, RateConfig, TransferParams};

use crate::app::params::DEFAULT_RATE;
use crate::driver::passive::JunkCounts;
#[allow(unused_imports)] // doc links
use crate::report::TransferReport;

/// How far a transfer got, handed to a [`ProgressFn`] about ten times a
/// second.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// The transfer's name.
    pub name: String,
    /// Data bytes moved so far (sent and acknowledged, or received).
    pub bytes: u64,
    /// The data's size, once known (a `get` learns it from the RESPONSE).
    pub total: Option<u64>,
    /// DATA packets sent again so far.
    pub retransmitted: u64,
    /// The data sender's current pacing rate (bits/s of data), when this end
    /// sends with rate control on.
    pub rate_bps: Option<u64>,
    /// Why the rate is what it is (`startup`, `steady`, `congestion`,
    /// `noise`, `cap`, ...), likewise.
    pub rate_reason: Option<&'static str>,
    /// Time since the transfer started (before its OPEN).
    pub elapsed: Duration,
    /// Data receiver: packets found missing so far; data sender: packets
    /// it was asked to resend (as in [`TransferReport::lost`]).
    pub lost: u64,
    /// Smoothed round trip, once measured (see [`TransferReport::srtt_ms`](crate::TransferReport::srtt_ms)).
    pub srtt: Option<Duration>,
    /// The rate controller's estimate of the bottleneck (bits/s of data).
    pub bottleneck_bps: Option<u64>,
    /// The rate controller's smallest round trip seen (the path without
    /// queues).
    pub min_rtt: Option<Duration>,
    /// A resumed transfer: bytes that were already at the receiver (counted
    /// in `bytes`).
    pub resumed_from: Option<u64>,
}

/// Called with a transfer's [`Progress`] from the thread running it.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Called by a [`Receiver`](crate::Receiver) with the report of each
/// transfer that ended, and the endpoint's junk counters so far.
pub type ReportFn = Arc<dyn Fn(&TransferReport, &JunkCounts) + Send + Sync>;

/// A transfer a [`Receiver`](crate::Receiver) refused before it began (the
/// file exists, the directory cannot be written, the name is busy): what
/// its sender was told.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// The sender's (or `get` client's) address.
    pub peer: std::net::SocketAddr,
    /// The file or directory asked for or offered.
    pub name: String,
    /// The reason sent to the peer.
    pub reason: String,
    /// Not a failure: the `get --resume` client has the whole file
    /// already (it reports success).
    pub benign: bool,
    /// The peer asked to read ([`get`](crate::get)): this end would have
    /// sent. A [`PeerReason::FileExists`](crate::PeerReason) is then about
    /// the client's copy, which the client's `overwrite` replaces.
    pub read: bool,
}

/// Called by a [`Receiver`](crate::Receiver) with each transfer it refused.
pub type RefusalFn = Arc<dyn Fn(&Refusal) + Send + Sync>;

/// Which transfer parameters the active end chooses itself when it
/// connects, from what the kernel reports for the path (decision G3),
/// instead of offering [`SendOptions::params`]' values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutoSize {
    /// The packet size from the path MTU of the connected UDP socket
    /// (`IP_MTU` / `IPV6_MTU`): the largest multiple of 4 that fits one IP
    /// packet with the UDP, NETBLT and (encrypted) AEAD overhead, at most
    /// 16,000 bytes; 1400 on a path of 1500 bytes or less. Loopback (65535)
    /// and jumbo-frame LANs thus get large packets. The burst is
    /// recomputed so that the offered rate stays the same. Without an MTU
    /// (raw IP) the offer is left alone. The passive end may still lower
    /// the packet size in its RESPONSE (RFC 998 §4).
    pub packet: bool,
    /// The buffer size from the packet size: 1 MiB up to 2048-byte packets,
    /// else 512 packets.
    pub buffer: bool,
    /// The rate ceiling: [`DEFAULT_RATE`](crate::DEFAULT_RATE) (10 Gb/s)
    /// raised to [`AUTO_RATE`](crate::AUTO_RATE) (40 Gb/s) when the packet
    /// size chosen from the path is larger than 1400 bytes (loopback,
    /// jumbo frames): 10 Gb/s capped a loopback copy at a quarter of what
    /// the hosts do. An adaptive policy still finds the path's rate below
    /// it.
    pub rate: bool,
    /// The buffers outstanding: as many as keep 32 MiB in flight, at least
    /// 4, when the buffer size grew
    /// with the packet size. Fewer, larger buffers in flight cost fewer
    /// fresh pages: 32 of 8 MB faulted in 256 MB at each end for a 1 GiB
    /// copy (G3).
    pub buffers: bool,
}

impl AutoSize {
    /// Sizes and ceiling chosen from the path (what the `netblt` tool does
    /// unless `--packet-size`, `--buffer-size` or `--rate` is given).
    pub fn all() -> AutoSize {
        AutoSize {
            packet: true,
            buffer: true,
            rate: true,
            buffers: true,
        }
    }

    /// As given: the packet size if `packet`, the buffer size if `buffer`,
    /// the rate ceiling if `rate`; not the buffer count (set
    /// [`buffers`](Self::buffers) for that).
    pub fn new(packet: bool, buffer: bool, rate: bool) -> AutoSize {
        AutoSize {
            packet,
            buffer,
            rate,
            buffers: false,
        }
    }
}

/// The slowest rate a transfer may be given, in bits per second: one
/// 1400-byte packet a second. Below it a packet waits longer than a
/// second for its turn, and the tool's timers (RFC 998's control and data
/// timers, the death timer) are not made for that.
pub const MIN_RATE: u64 = 11_200;

/// The active end's options: [`send_file`](crate::send_file),
/// [`send_dir`](crate::send_dir), [`send_reader`](crate::send_reader),
/// [`get`](crate::get), [`bench()`](crate::bench).
///
/// RFC 998 §4: the active end proposes the transfer parameters and the
/// passive end may only make them more restrictive; the negotiated values
/// are in the [`TransferReport`].
#[derive(Clone)]
#[non_exhaustive]
pub struct SendOptions {
    /// The parameters offered: packet size, buffer size, buffers
    /// outstanding, burst size and interval, data checksum. Default: 1400-byte
    /// packets (a 1500-byte MTU), 1 MiB buffers,
    /// [`DEFAULT_BUFFERS`](crate::DEFAULT_BUFFERS) (128) outstanding, the
    /// burst for [`DEFAULT_RATE`](crate::DEFAULT_RATE), no data checksum.
    pub params: TransferParams,
    /// A data rate in bits per second: replaces `params`' burst size and
    /// interval by a burst per 1 ms (or longer, for slow rates) for this
    /// rate at `params.packet_size`. With an adaptive [`policy`](Self::policy)
    /// it is the maximum; with [`Policy::Fixed`] the rate itself. At least
    /// [`MIN_RATE`] (a transfer is refused with [`Error::InvalidOptions`]
    /// below it). Default: `None` (use `params`).
    ///
    /// [`Error::InvalidOptions`]: crate::Error::InvalidOptions
    pub rate: Option<u64>,
    /// The rate controller (docs/decisions.md, R1): [`Policy::Fair`] finds
    /// the path's rate and shares it, [`Policy::Background`] yields to other
    /// traffic, [`Policy::Fixed`] is RFC 998's fixed rate. Default `Fair`.
    pub policy: Policy,
    /// Never pace slower than this (bits/s; adaptive policies); not above
    /// [`rate`](Self::rate). Default none.
    pub min_rate: Option<u64>,
    /// Silence after which the peer is declared dead (RFC 998's death
    /// timer; whole seconds, sent to the peer in OPEN; at least 1 s).
    /// Default 10 s.
    pub death_timer: Duration,
    /// How long to wait for the peer's first answer before giving up
    /// ("no answer after N OPEN packets"). OPENs go out after 1, 2, then
    /// every 4 s (RFC 998 §5.1's retransmitted OPEN), as many as fit this
    /// time, at least one; "nothing listening" (ICMP port unreachable) ends
    /// it at once anyway. Default 27 s (8 OPENs).
    pub connect_timeout: Duration,
    /// Run directly over IP protocol 30 (RFC 998) instead of UDP: needs root
    /// or `CAP_NET_RAW`. Default: off.
    pub raw_ip: bool,
    /// [`get`](crate::get): replace an existing destination file. Default:
    /// off.
    pub overwrite: bool,
    /// Continue an interrupted transfer ([`send_file`](crate::send_file),
    /// [`send_dir`](crate::send_dir), [`get`](crate::get)): the receiving end
    /// keeps a partial file and a journal of its 1 MiB units' BLAKE3 hashes;
    /// when the file's name, size and modification time match and the
    /// prefix's hash agrees with the sender's file, only the rest is sent.
    /// The digest still covers the whole file. Default: off.
    pub resume: bool,
    /// Called about ten times a second while a transfer runs.
    pub progress: Option<ProgressFn>,
    /// Setting this flag aborts the transfer (a Ctrl-C handler's job).
    pub stop: Option<Arc<AtomicBool>>,
    /// Rate limits to change while the transfer runs (decision R27): keep
    /// a clone and call [`RateControl::set`](crate::RateControl::set).
    /// They apply to this end as a data sender ([`send_file`](crate::send_file),
    /// [`send_dir`](crate::send_dir), [`bench`](crate::bench), ...), never
    /// above the rate negotiated at OPEN; as a data receiver
    /// ([`get`](crate::get)) the maximum goes to the sender in the burst
    /// values of each OK (RFC 998 §4, decision R31) and holds it from the
    /// next buffer on. Default none.
    pub rate_control: Option<crate::RateControl>,
    /// Encryption and authentication (issue 11). Default
    /// [`Security::Insecure`](crate::Security::Insecure) in the library
    /// (decision K14); the `netblt` tool encrypts by default.
    pub security: crate::Security,
    /// [`bench`](crate::bench) only: hash the test data end to end
    /// (BLAKE3) even in an encrypted session. Files, streams and plain
    /// (`Insecure`) sessions always carry the digest; an encrypted bench by
    /// default does not, since every packet's AEAD already authenticates
    /// each byte and its place (decision K16). Default: off.
    pub verify: bool,
    /// Choose the packet and/or buffer size from the path when connecting
    /// ([`AutoSize`], decision G3). Default: neither (`params` is offered
    /// as it is); the `netblt` tool chooses both unless told a size.
    pub auto_size: AutoSize,
    /// [`get`](crate::get) of a directory already at the destination:
    /// fetch every file, even those here with the same name, size and
    /// modification time (rsync's `--ignore-times`). By default the client
    /// first tells the server which files it has (decision M17) and those
    /// are not sent; with this set they are, and compared byte for byte as
    /// they arrive (M13). ([`send_bundle`](crate::send_bundle) leaves out
    /// what the receiver has only when asked, with
    /// [`skip_same`](crate::skip_same).) Default: off.
    pub ignore_times: bool,
    /// The check of what the other end has ([`skip_same`](crate::skip_same)
    /// before a bundle, M14; [`get`](crate::get) of a directory fetched
    /// again, M17) compares each file's contents (a BLAKE3 hash) instead of
    /// its modification time, as `rsync --checksum` does (decision M18): a
    /// file changed without changing its size and time then travels too.
    /// It costs reading every file at both ends before the transfer. A
    /// peer older than M18 answers with times, which match no contents:
    /// everything travels. Nothing to do without a check
    /// ([`ignore_times`](SendOptions::ignore_times)). Default: off.
    pub checksum: bool,
    /// A directory sent as a bundle (the tool's `send DIR`, decision F19):
    /// regular files of at least this many bytes leave the bundle and
    /// travel after it, each as its own transfer
    /// ([`send_walked_file`](crate::send_walked_file)), so that an interrupted one
    /// leaves its partial copy at the receiver and [`resume`](Self::resume)
    /// continues it, where an interrupted bundle keeps nothing (M3).
    /// `Some(0)`: every file on its own; `None`: every file in the bundle.
    /// Give it to [`Bundle::split_resumable`](crate::Bundle::split_resumable):
    /// [`send_bundle`](crate::send_bundle) itself sends every file it is
    /// given. Default [`DEFAULT_RESUMABLE_MIN`] (500 MB).
    pub resumable_min: Option<u64>,
}

/// The default [`SendOptions::resumable_min`]: 500 MB, about 46 s of a
/// 100 Mb/s path, where sending such a file on its own cost 1.5 s more on a
/// 300 ms path (its connection, and the directories' times set again after
/// it): 3.4 % (decision F19).
pub const DEFAULT_RESUMABLE_MIN: u64 = 500_000_000;

impl Default for SendOptions {
    fn default() -> SendOptions {
        let packet_size = 1400;
        let (burst_size, burst_interval_ms) =
            TransferParams::burst_for_rate(DEFAULT_RATE, packet_size);
        SendOptions {
            params: TransferParams {
                packet_size,
                buffer_size: 1 << 20,
                burst_size,
                burst_interval_ms,
                // The ceiling: the sender queues 32 and more only as its
                // rate and the buffers' outstanding time need (R11).
                max_buffers: crate::app::params::DEFAULT_BUFFERS,
                checksum_data: false,
            },
            rate: None,
            policy: Policy::Fair,
            min_rate: None,
            death_timer: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(27),
            raw_ip: false,
            overwrite: false,
            resume: false,
            progress: None,
            stop: None,
            rate_control: None,
            security: crate::Security::Insecure,
            verify: false,
            auto_size: AutoSize::default(),
            ignore_times: false,
            checksum: false,
            resumable_min: Some(DEFAULT_RESUMABLE_MIN),
        }
    }
}

impl std::fmt::Debug for SendOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendOptions")
            .field("params", &self.params)
            .field("rate", &self.rate)
            .field("policy", &self.policy)
            .field("min_rate", &self.min_rate)
            .field("death_timer", &self.death_timer)
            .field("connect_timeout", &self.connect_timeout)
            .field("raw_ip", &self.raw_ip)
            .field("overwrite", &self.overwrite)
            .field("resume", &self.resume)
            .field("progress", &self.progress.is_some())
            .field("stop", &self.stop)
            .field("rate_control", &self.rate_control)
            .field("auto_size", &self.auto_size)
            .field("ignore_times", &self.ignore_times)
            .field("checksum", &self.checksum)
            .field("resumable_min", &self.resumable_min)
            .field("security", &self.security)
            .field("verify", &self.verify)
            .finish()
    }
}

impl SendOptions {
    /// The defaults (see the fields).
    pub fn new() -> SendOptions {
        SendOptions::default()
    }

    /// Sets [`rate`](Self::rate), in bits per second.
    pub fn with_rate(mut self, bps: u64) -> SendOptions {
        self.rate = Some(bps);
        self
    }

    /// Sets the [`progress`](Self::progress) callback.
    pub fn with_progress(mut self, f: impl Fn(&Progress) + Send + Sync + 'static) -> SendOptions {
        self.progress = Some(Arc::new(f));
        self
    }

    /// The rate controller's settings: the policy, [`rate`](Self::rate) as
    /// its maximum and [`min_rate`](Self::min_rate) as its minimum.
    pub fn rate_config(&self) -> RateConfig {
        RateConfig {
            policy: self.policy,
            max_bps: self.rate,
            min_bps: self.min_rate.unwrap_or(0),
            ..RateConfig::default()
        }
    }

    /// Options that cannot work, said before anything is sent: a rate below
    /// [`MIN_RATE`] (zero had waited forever, sending nothing), a minimum
    /// above the maximum, a death timer under a second, parameters RFC 998
    /// cannot carry.
    pub fn check(&self) -> Result<(), crate::Error> {
        let bad = |m: String| Err(crate::Error::InvalidOptions(m));
        if let Some(r) = self.rate.filter(|&r| r < MIN_RATE) {
            return bad(format!(
                "a rate of {r} b/s is below the minimum, {MIN_RATE} b/s (one 1400-byte packet a second)"
            ));
        }
        if let (Some(min), Some(max)) = (self.min_rate, self.rate) {
            if min > max {
                return bad(format!(
                    "the minimum rate ({min} b/s) is above the maximum ({max} b/s)"
                ));
            }
        }
        if self.death_timer < Duration::from_secs(1) {
            return bad(format!(
                "a death timer of {:?} is under the protocol's one second",
                self.death_timer
            ));
        }
        self.offer()
            .validate()
            .map_err(|e| crate::Error::InvalidOptions(format!("invalid parameters: {e}")))
    }

    /// The parameters offered in OPEN.
    pub fn offer(&self) -> TransferParams {
        let mut p = self.params;
        if let Some(r) = self.rate.filter(|&r| r > 0) {
            (p.burst_size, p.burst_interval_ms) =
                TransferParams::burst_for_rate_exact(r, p.packet_size);
        }
        p
    }
}

/// The passive end's options: [`Receiver::bind`](crate::Receiver::bind).
#[derive(Clone)]
#[non_exhaustive]
pub struct ReceiverOptions {
    /// Silence after which a sender is declared dead (whole seconds).
    /// Default 10 s.
    pub death_timer: Duration,
    /// Listen on IP protocol 30 instead of UDP (root or `CAP_NET_RAW`); the
    /// bound address's port is then the NETBLT port. Default: off.
    pub raw_ip: bool,
    /// [`serve_dir`](crate::Receiver::serve_dir): replace existing files.
    /// Default: off (an existing file is refused, never overwritten).
    pub overwrite: bool,
    /// [`serve_dir`](crate::Receiver::serve_dir): also let peers fetch the
    /// directory's files and directories (READ mode, [`get`](crate::get);
    /// a directory goes as a bundle, links in it never sent). Default: off.
    pub serve: bool,
    /// Stop after this many transfers (ended well or not, or refused: see
    /// [`on_refused`](Self::on_refused)). Default: `None`, serve until
    /// [`stop`](Self::stop).
    pub max_transfers: Option<u64>,
    /// Setting this flag aborts the transfers in progress and ends serving.
    pub stop: Option<Arc<AtomicBool>>,
    /// Called with each finished transfer's report.
    pub on_transfer: Option<ReportFn>,
    /// Called with each transfer refused before it began (a file that
    /// exists, a directory it may not write, a busy name; not the checks
    /// a sender makes before a bundle). Such a refusal counts towards
    /// [`max_transfers`](Self::max_transfers); unless
    /// [`benign`](Refusal::benign), as a failure
    /// ([`ReceiverSummary::last_error`](crate::ReceiverSummary::last_error)).
    pub on_refused: Option<RefusalFn>,
    /// Encryption and authentication (issue 11); see
    /// [`SendOptions::security`].
    pub security: crate::Security,
    /// Rate limits for all the transfers this end runs together, files it
    /// serves to `get` (decision R27) and files or data it receives (its
    /// maximum offered to each sender in its OKs, RFC 998 §4, decision
    /// R31): split max-min fairly among the transfers running, changeable
    /// while they run. Default none.
    pub rate_control: Option<crate::RateControl>,
}

impl Default for ReceiverOptions {
    fn default() -> ReceiverOptions {
        ReceiverOptions {
            death_timer: Duration::from_secs(10),
            raw_ip: false,
            overwrite: false,
            serve: false,
            max_transfers: None,
            stop: None,
            on_transfer: None,
            on_refused: None,
            security: crate::Security::Insecure,
            rate_control: None,
        }
    }
}

impl std::fmt::Debug for ReceiverOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiverOptions")
            .field("death_timer", &self.death_timer)
            .field("raw_ip", &self.raw_ip)
            .field("overwrite", &self.overwrite)
            .field("serve", &self.serve)
            .field("max_transfers", &self.max_transfers)
            .field("stop", &self.stop)
            .field("on_transfer", &self.on_transfer.is_some())
            .field("on_refused", &self.on_refused.is_some())
            .field("rate_control", &self.rate_control)
            .field("security", &self.security)
            .finish()
    }
}

impl ReceiverOptions {
    /// The defaults (see the fields).
    pub fn new() -> ReceiverOptions {
        ReceiverOptions::default()
    }

    /// Sets [`max_transfers`](Self::max_transfers).
    pub fn with_max_transfers(mut self, n: u64) -> ReceiverOptions {
        self.max_transfers = Some(n);
        self
    }

    /// Sets the [`on_transfer`](Self::on_transfer) callback.
    pub fn with_on_transfer(
        mut self,
        f: impl Fn(&TransferReport, &JunkCounts) + Send + Sync + 'static,
    ) -> ReceiverOptions {
        self.on_transfer = Some(Arc::new(f));
        self
    }
}

/// A death timer as the engine carries it: whole seconds, at least 1.
pub(crate) fn death_secs(d: Duration) -> u16 {
    u16::try_from(d.as_secs().max(1)).unwrap_or(u16::MAX)
}
