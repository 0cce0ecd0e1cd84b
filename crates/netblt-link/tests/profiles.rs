//! The named profiles: every number traceable, every config valid.

use std::time::Duration;

use netblt_link::profiles::{self, HostModel, DATA_HEADER_LEN};
use netblt_link::{Link, LinkConfig};

fn cost(fixed: Duration, per_byte_ns: f64, len: usize) -> Duration {
    fixed + Duration::from_nanos((per_byte_ns * len as f64).round() as u64)
}

fn send_cost(h: &HostModel, data: usize) -> Duration {
    cost(h.send_fixed, h.send_per_byte_ns, data + DATA_HEADER_LEN)
}

fn recv_cost(h: &HostModel, data: usize) -> Duration {
    cost(h.recv_fixed, h.recv_per_byte_ns, data + DATA_HEADER_LEN)
}

#[test]
fn every_name_resolves_to_a_valid_profile() {
    let names = profiles::names();
    assert_eq!(names.len(), 9);
    let all = profiles::all();
    assert_eq!(all.len(), names.len());
    for (p, &name) in all.iter().zip(names) {
        assert_eq!(p.name, name);
        assert!(!p.summary.is_empty() && !p.sources.is_empty());
        p.forward.validate().unwrap();
        p.reverse.validate().unwrap();
        Link::new(p.forward.clone(), 1).unwrap();
        let d = &p.defaults;
        assert!(d.packet_size > 0 && d.burst_size > 0 && d.burst_interval_ms > 0 && d.buffers > 0);
        assert_eq!(d.buffer_size % u32::from(d.packet_size), 0, "{name}");
        // The default packet fits the path's MTU.
        let wire = usize::from(d.packet_size) + DATA_HEADER_LEN + p.wire_overhead;
        if let Some(mtu) = p.forward.mtu {
            assert!(wire <= mtu, "{name}: {wire} > {mtu}");
        }
    }
    assert!(profiles::profile("no-such-path").is_none());
    for (name, paper) in [
        ("proteon-ring", true),
        ("ethernet-3c500", true),
        ("wideband", true),
        ("t1-satellite", true),
        ("xunet", true),
        ("lan-1g", false),
        ("continental", false),
        ("geo-satellite", false),
        ("wireless", false),
    ] {
        assert!(profiles::profile(name).is_some(), "{name}");
        let _ = paper;
    }
}

#[test]
fn proteon_pc_at_takes_8_ms_per_maximum_packet() {
    let p = profiles::profile("proteon-ring").unwrap();
    for h in [&p.host_a, &p.host_b] {
        assert_eq!(h.send_fixed, Duration::from_micros(2500));
        let send = send_cost(h, 1990).as_secs_f64();
        let recv = recv_cost(h, 1990).as_secs_f64();
        assert!((send - 0.008).abs() < 1e-9 && (recv - 0.008).abs() < 1e-9);
        assert!(!h.half_duplex);
    }
    assert_eq!(p.forward.mtu, Some(2046 + 4));
    assert_eq!(
        (p.defaults.packet_size, p.defaults.burst_interval_ms),
        (1990, 43)
    );
}

#[test]
fn ethernet_pc_at_takes_6_0_and_6_1_ms() {
    let p = profiles::profile("ethernet-3c500").unwrap();
    let h = &p.host_a;
    assert!((send_cost(h, 1438).as_secs_f64() - 0.0060).abs() < 1e-9);
    assert!((recv_cost(h, 1438).as_secs_f64() - 0.0061).abs() < 1e-9);
    assert_eq!(h.nic_buffers, Some(1));
    assert!(h.half_duplex);
    assert_eq!(h.nic_rate_bps, Some(10_000_000));
    // Subnet 26's noise is the other hosts' traffic on the shared segment
    // (RFC 1030 §6), with the Ethernet specification's access rules.
    let seg = p.segment.as_ref().expect("a shared segment");
    assert!(seg.cross.load > 0.0);
    assert_eq!(seg.slot_time, Duration::from_nanos(51_200));
    assert_eq!(seg.attempt_limit, 16);
    assert_eq!(seg.rate_bps, 10_000_000);
    assert!(seg.validate().is_ok());
}

#[test]
fn wideband_frames_hold_two_maximum_ethernet_packets() {
    let p = profiles::profile("wideband").unwrap();
    let frames = p.forward.frames.clone().unwrap();
    assert_eq!(frames.bytes_per_frame, 3006);
    assert_eq!(frames.interval, Duration::from_micros(21_220));
    let max_wire = 1500 + 18;
    let paper_wire = 1438 + DATA_HEADER_LEN + p.wire_overhead;
    assert!(paper_wire <= max_wire);
    assert_eq!(frames.bytes_per_frame / paper_wire, 2);
    // Mean one-way delay: half a frame of waiting + delay = 0.9 s.
    let mean = p.forward.delay + frames.interval / 2;
    assert_eq!(mean, Duration::from_millis(900));
    assert_eq!(p.host_b.nic_loss, 0.005);
    assert_eq!(p.defaults.packet_size, 1432);
}

#[test]
fn satellite_and_xunet_parameters() {
    let t1 = profiles::profile("t1-satellite").unwrap();
    assert_eq!(t1.forward.rate_bps, Some(1_544_000));
    assert_eq!(t1.forward.delay * 2, Duration::from_millis(580));
    assert_eq!(t1.host_a, HostModel::default());

    let x = profiles::profile("xunet").unwrap();
    assert_eq!(x.forward.rate_bps, Some(1_344_000));
    assert_eq!(x.forward.delay, Duration::from_micros(24_150));
    // eq. 6: 0.004 ms/byte per host for one receive plus one send.
    assert_eq!(
        x.host_a.send_per_byte_ns + x.host_a.recv_per_byte_ns,
        4_000.0
    );
}

#[test]
fn derived_pacing_never_exceeds_the_bottleneck() {
    for p in profiles::all() {
        let Some(rate) = p.forward.rate_bps else {
            continue;
        };
        let d = &p.defaults;
        let wire_bits =
            ((usize::from(d.packet_size) + DATA_HEADER_LEN + p.wire_overhead) * 8) as f64;
        let paced = f64::from(d.burst_size) * wire_bits * 1000.0 / f64::from(d.burst_interval_ms);
        assert!(paced <= rate as f64, "{}: {paced} > {rate}", p.name);
    }
}

#[test]
fn wireless_loses_about_one_percent() {
    let p = profiles::profile("wireless").unwrap();
    let mean = p.forward.loss.mean_loss();
    assert!((0.009..0.011).contains(&mean), "{mean}");
    assert!(p.forward.jitter > Duration::ZERO);
}

#[test]
fn configs_round_trip_through_json() {
    for p in profiles::all() {
        let json = serde_json::to_string(&p.forward).unwrap();
        let back: LinkConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p.forward, "{}", p.name);
        let json = serde_json::to_string(&p.host_a).unwrap();
        let back: HostModel = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p.host_a);
    }
    // Missing fields take the ideal defaults.
    let cfg: LinkConfig = serde_json::from_str(r#"{"rate_bps": 1000}"#).unwrap();
    assert_eq!(
        cfg,
        LinkConfig {
            rate_bps: Some(1000),
            ..LinkConfig::default()
        }
    );
    assert!(serde_json::from_str::<LinkConfig>(r#"{"rate": 1}"#).is_err());
}
