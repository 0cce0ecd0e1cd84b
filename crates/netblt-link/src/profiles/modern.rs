//! Modern paths for the emulator (and the simulator): round numbers, ideal hosts.
//!
//! Common to all of them: hosts cost nothing and have unlimited interface
//! buffers (the brief); a 1500-byte IP MTU with Ethernet framing, so 46 bytes
//! of overhead (Ethernet 18 + IP 20 + UDP 8); a drop-tail queue of one
//! bandwidth-delay product, at least 64 KiB (an assumption: the usual rule of
//! thumb); transfer defaults derived from rate and round trip with 1400-byte
//! packets (see `derived_defaults`).

use core::time::Duration;

use super::historic::bdp_queue;
use super::{derived_defaults, HostModel, Profile, ETHERNET_FRAMING, IP_HEADER, UDP_HEADER};
use crate::config::{LinkConfig, LossModel};

const OVERHEAD: usize = IP_HEADER + UDP_HEADER + ETHERNET_FRAMING;
const PACKET: u16 = 1400;

fn path(rate: u64, one_way: Duration) -> LinkConfig {
    LinkConfig {
        rate_bps: Some(rate),
        delay: one_way,
        mtu: Some(1500 + ETHERNET_FRAMING),
        queue_limit_bytes: Some(bdp_queue(rate, one_way * 2)),
        ..LinkConfig::default()
    }
}

fn modern(
    name: &'static str,
    summary: &'static str,
    link: LinkConfig,
    sources: &'static str,
) -> Profile {
    let rate = link.rate_bps.unwrap_or(1);
    let rtt = link.delay * 2;
    Profile {
        name,
        summary,
        forward: link.clone(),
        reverse: link,
        host_a: HostModel::default(),
        host_b: HostModel::default(),
        wire_overhead: OVERHEAD,
        segment: None,
        defaults: derived_defaults(PACKET, OVERHEAD, rate, rtt),
        sources,
    }
}

pub(super) fn lan_1g() -> Profile {
    modern(
        "lan-1g",
        "1 Gb/s LAN, 0.05 ms one way",
        path(1_000_000_000, Duration::from_micros(50)),
        "1 Gb/s each way, 0.05 ms one way (the brief). Queue 64 KiB (the BDP, 12.5 KB, is \
below the floor). Ideal hosts, 46 bytes of overhead, derived defaults.",
    )
}

pub(super) fn continental() -> Profile {
    modern(
        "continental",
        "100 Mb/s, 100 ms round trip",
        path(100_000_000, Duration::from_millis(50)),
        "100 Mb/s each way, 100 ms round trip => 50 ms one way (the brief). Queue 1.25 MB \
(one BDP). Ideal hosts, 46 bytes of overhead, derived defaults.",
    )
}

pub(super) fn geo_satellite() -> Profile {
    modern(
        "geo-satellite",
        "50 Mb/s geostationary satellite, 600 ms round trip",
        path(50_000_000, Duration::from_millis(300)),
        "50 Mb/s each way, 600 ms round trip => 300 ms one way (the brief). Queue 3.75 MB \
(one BDP). No bit errors (modern FEC). Ideal hosts, 46 bytes of overhead, derived defaults.",
    )
}

pub(super) fn wireless() -> Profile {
    let mut link = path(54_000_000, Duration::from_millis(5));
    // Mean bad run of 10 packets (p_bad_to_good = 0.1), half of them lost;
    // p_good_to_bad = 0.002 => pi_bad = 0.0196 => mean loss 0.98%.
    link.loss = LossModel::GilbertElliott {
        p_good_to_bad: 0.002,
        p_bad_to_good: 0.1,
        loss_good: 0.0,
        loss_bad: 0.5,
    };
    link.jitter = Duration::from_millis(2);
    modern(
        "wireless",
        "54 Mb/s wireless hop, 5 ms one way, bursty ~1% loss, 2 ms jitter",
        link,
        "54 Mb/s (802.11a/g signalling rate), 5 ms one way (the brief). Loss: Gilbert-Elliott \
with p_good_to_bad 0.002, p_bad_to_good 0.1 (bad runs of 10 packets on average), loss 0 when \
good and 0.5 when bad: mean loss 0.002/0.102 x 0.5 = 0.98%, the brief's ~1%; the burst shape is \
ASSUMED. Jitter 0-2 ms uniform, FIFO kept: ASSUMED. Queue one BDP (64 KiB floor). Ideal hosts, \
46 bytes of overhead (802.11 framing approximated by Ethernet's), derived defaults.",
    )
}
