//! Prints the detail of one RFC 1030 appendix row's runs (host CPU, drops,
//! control packets), for finding which mechanism sets a row's figure.
//!
//! `cargo run -p netblt-report --example row_detail -- PROFILE BI PSZ NBUFS [XFSZ_KB] [SEEDS]`
//! (environment: IDEAL_NIC, NO_SEGMENT, REENABLE_US, ONE_MSG, BCAST; see below).

use netblt_proto::{PacingClock, TransferParams};
use netblt_report::rfc1030::{path_of, DATA_TIMER};
use netblt_sim::transfer::{run_transfer, TransferSpec};

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let get = |i: usize, d: &str| a.get(i).cloned().unwrap_or_else(|| d.to_string());
    let profile = get(0, "ethernet-3c500");
    let bi: u16 = get(1, "30").parse()?;
    let psz: u16 = get(2, "1438").parse()?;
    let nbufs: u16 = get(3, "2").parse()?;
    let xfsz: u64 = get(4, &(u64::from(psz)).to_string()).parse()?;
    let seeds: u64 = get(5, "3").parse()?;
    let bfsz = if psz == 512 {
        10240
    } else {
        u32::from(psz) * 10
    };
    let params = TransferParams {
        packet_size: psz,
        buffer_size: bfsz,
        burst_size: 5,
        burst_interval_ms: bi,
        max_buffers: nbufs,
        checksum_data: true,
    };
    let mut path = path_of(&profile)?;
    // Variations for finding the mechanism: IDEAL_NIC=1 gives both hosts
    // unlimited full-duplex interfaces; NO_SEGMENT=1 removes the shared Ethernet.
    if std::env::var("IDEAL_NIC").is_ok() {
        for h in [&mut path.host_a, &mut path.host_b] {
            h.nic_buffers = None;
            h.half_duplex = false;
        }
    }
    // REENABLE_US=n: both hosts' interfaces stay deaf n us after each
    // transmission and copy-out (`HostModel::nic_reenable`).
    if let Some(us) = std::env::var("REENABLE_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        for h in [&mut path.host_a, &mut path.host_b] {
            h.nic_reenable = std::time::Duration::from_micros(us);
        }
    }
    // BCAST=n: the other stations send n broadcasts a second that both
    // hosts take in (`CrossTraffic::broadcasts_per_s`).
    if let Some(b) = std::env::var("BCAST")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        if let Some(seg) = path.segment.as_mut() {
            seg.cross.broadcasts_per_s = b;
        }
    }
    if std::env::var("NO_SEGMENT").is_ok() {
        path.segment = None;
    }
    for seed in 1..=seeds {
        let mut spec = TransferSpec::new(path.clone(), params, xfsz * 1000);
        spec.seed = seed;
        spec.pacing_clock = PacingClock::FromActualStart;
        spec.data_timer = DATA_TIMER;
        // ONE_MSG=1: one control message per CONTROL packet (the 1987
        // implementation before RFC 1030 §7's packing).
        spec.one_control_message_per_packet = std::env::var("ONE_MSG").is_ok();
        let r = run_transfer(&spec)?;
        let s = r.sim.unwrap_or_default();
        println!(
            "seed {seed}: speed {:.3} real {:.3} t {:.2}s lost {} rxm {} dtmos {} ctl {} ctl_rxm {} nullack {} | \
             A cpu {:.2}s sent {} recv {} deaf {} full {} abort {} | B cpu {:.2}s sent {} recv {} deaf {} full {} | seg {:?}",
            r.steady_throughput_bps.unwrap_or(0.0) / 1e6,
            r.real_throughput_bps.unwrap_or(0.0) / 1e6,
            r.sim_time_s,
            r.lost,
            r.retransmitted,
            r.data_timeouts,
            r.control_packets,
            r.control_retransmissions,
            r.null_acks,
            s.host_a.cpu_busy.as_secs_f64(),
            s.host_a.packets_sent,
            s.host_a.packets_received,
            s.host_a.nic_deaf_drops,
            s.host_a.nic_full_drops,
            s.host_a.nic_tx_aborts,
            s.host_b.cpu_busy.as_secs_f64(),
            s.host_b.packets_sent,
            s.host_b.packets_received,
            s.host_b.nic_deaf_drops,
            s.host_b.nic_full_drops,
            s.segment,
        );
        println!(
            "   sender: ctl msgs dup {} dgrams rx {} | receiver: ctl msgs {} dgrams tx {}",
            r.sender.duplicate_control_messages,
            r.sender.datagrams_received,
            r.receiver.control_messages,
            r.receiver.datagrams_sent
        );
    }
    Ok(())
}
