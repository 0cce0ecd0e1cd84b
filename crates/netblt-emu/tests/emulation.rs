//! Real emulations: namespaces, TUN devices and traffic across them.
//!
//! These need root and /dev/net/tun (CI runs as root); without them each
//! test prints a notice and passes. Traffic stays inside the namespaces the
//! tests create. Timing bounds are deliberately loose: they catch a broken
//! emulator, not a slow machine.

use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netblt_emu::{check_environment, EmuConfig, EmuError, Emulation};
use netblt_link::LossModel;

fn can_run(test: &str) -> bool {
    match check_environment() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            false
        }
    }
}

/// A name unique to this test process, so parallel runs do not collide.
fn name(tag: &str) -> String {
    format!("t{}{tag}", std::process::id())
}

fn ns_exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Echo server on the right side; stops when `stop` is set.
fn echo_server(emu: &Emulation, port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let addr = SocketAddr::new(emu.right_addr(), port);
    let sock = emu
        .enter_right(|| UdpSocket::bind(addr))
        .expect("bind echo server");
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(&buf[..n], from);
            }
        }
    })
}

#[test]
fn round_trip_with_20ms_delay_each_way() {
    if !can_run("round_trip_with_20ms_delay_each_way") {
        return;
    }
    let mut cfg = EmuConfig::new(name("rtt"));
    cfg.forward.delay = Duration::from_millis(20);
    cfg.reverse.delay = Duration::from_millis(20);
    let emu = Emulation::start(cfg).expect("start");
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(&emu, 7001, stop.clone());
    let client = emu
        .enter_left(|| UdpSocket::bind((emu.left_addr(), 0)))
        .expect("bind client");
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let target = SocketAddr::new(emu.right_addr(), 7001);
    let mut rtts = Vec::new();
    for i in 0u32..20 {
        let t0 = Instant::now();
        client.send_to(&i.to_be_bytes(), target).unwrap();
        let mut buf = [0u8; 64];
        let (n, _) = client.recv_from(&mut buf).expect("echo reply");
        rtts.push(t0.elapsed());
        assert_eq!(&buf[..n], &i.to_be_bytes());
    }
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    drop(client);
    let stats = emu.stop();
    rtts.sort();
    eprintln!(
        "RTTs: min {:?} median {:?} max {:?}",
        rtts[0], rtts[10], rtts[19]
    );
    // Never early: the model's delay is a floor. The median, not every
    // sample, must be within 5 ms of it: the echo threads here are ordinary
    // processes, and a busy test machine can be slow to wake one.
    assert!(
        rtts[0] >= Duration::from_millis(40),
        "RTT {:?} below 40 ms",
        rtts[0]
    );
    let median = rtts[10];
    assert!(
        median < Duration::from_millis(45),
        "median RTT {median:?} not below 45 ms"
    );
    assert_eq!(stats.forward.written_packets, 20);
    assert_eq!(stats.reverse.written_packets, 20);
    assert!(!stats.failed, "{:?}", stats.failure);
    assert!(stats.tx_dropped.is_some());
}

#[test]
fn rate_limit_10mbps_paces_a_udp_blast() {
    if !can_run("rate_limit_10mbps_paces_a_udp_blast") {
        return;
    }
    const PACKETS: usize = 600;
    // 1222 bytes of payload + 28 of UDP/IPv4 headers = 1250 bytes = 1 ms at 10 Mb/s.
    const PAYLOAD: usize = 1222;
    let mut cfg = EmuConfig::new(name("rate"));
    cfg.forward.rate_bps = Some(10_000_000);
    let emu = Emulation::start(cfg).expect("start");
    let receiver = emu
        .enter_right(|| UdpSocket::bind((emu.right_addr(), 7002)))
        .expect("bind receiver");
    receiver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let counter = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut times = Vec::new();
        while let Ok(n) = receiver.recv(&mut buf) {
            assert_eq!(n, PAYLOAD);
            times.push(Instant::now());
        }
        times
    });
    let sender = emu
        .enter_left(|| UdpSocket::bind((emu.left_addr(), 0)))
        .expect("bind sender");
    let target = SocketAddr::new(emu.right_addr(), 7002);
    let payload = [0x5au8; PAYLOAD];
    for _ in 0..PACKETS {
        sender.send_to(&payload, target).unwrap();
    }
    let times = counter.join().unwrap();
    let stats = emu.stop();
    assert_eq!(times.len(), PACKETS, "a packet went missing");
    let span = times[PACKETS - 1] - times[0];
    let expected = Duration::from_millis(PACKETS as u64 - 1);
    eprintln!("{PACKETS} packets over {span:?}, expected {expected:?}");
    let ratio = span.as_secs_f64() / expected.as_secs_f64();
    assert!((0.9..1.1).contains(&ratio), "span {span:?} vs {expected:?}");
    assert!(!stats.failed, "{:?}", stats.failure);
}

#[test]
fn loss_of_20_percent_within_binomial_bounds() {
    if !can_run("loss_of_20_percent_within_binomial_bounds") {
        return;
    }
    const PACKETS: u64 = 2000;
    let mut cfg = EmuConfig::new(name("loss"));
    cfg.forward.loss = LossModel::Bernoulli { p: 0.2 };
    // Pace the deliveries (500-byte packets at 20 Mb/s: 5000 a second) so
    // the receiving socket never overflows.
    cfg.forward.rate_bps = Some(20_000_000);
    cfg.seed = 7;
    let emu = Emulation::start(cfg).expect("start");
    let receiver = emu
        .enter_right(|| UdpSocket::bind((emu.right_addr(), 7003)))
        .expect("bind receiver");
    receiver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let counter = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0u64;
        while receiver.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    });
    let sender = emu
        .enter_left(|| UdpSocket::bind((emu.left_addr(), 0)))
        .expect("bind sender");
    let target = SocketAddr::new(emu.right_addr(), 7003);
    let mut payload = [0u8; 472];
    for i in 0..PACKETS {
        payload[..8].copy_from_slice(&i.to_be_bytes());
        sender.send_to(&payload, target).unwrap();
    }
    let received = counter.join().unwrap();
    let stats = emu.stop();
    // Mean 1600, standard deviation sqrt(2000 * 0.2 * 0.8) = 17.9: allow 5 sigma.
    eprintln!("received {received} of {PACKETS}");
    assert!((1510..=1690).contains(&received), "received {received}");
    assert_eq!(stats.forward.link.offered, PACKETS);
    assert_eq!(stats.forward.link.drops.loss + received, PACKETS);
    assert!(!stats.failed, "{:?}", stats.failure);
}

#[test]
fn commands_run_inside_the_namespaces() {
    if !can_run("commands_run_inside_the_namespaces") {
        return;
    }
    let emu = Emulation::start(EmuConfig::new(name("cmd"))).expect("start");
    // /proc/net/dev lists the devices of the reader's network namespace.
    let out = emu
        .spawn_left(
            Command::new("cat")
                .arg("/proc/net/dev")
                .stdout(std::process::Stdio::piped()),
        )
        .expect("spawn")
        .wait_with_output()
        .expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(netblt_emu::DEVICE), "{text}");
    assert!(!text.contains("eth0"), "{text}");
    drop(emu);
}

#[test]
fn namespaces_are_removed_on_drop_and_panic() {
    if !can_run("namespaces_are_removed_on_drop_and_panic") {
        return;
    }
    let emu = Emulation::start(EmuConfig::new(name("drop"))).expect("start");
    let (left, right) = (emu.left_ns().to_owned(), emu.right_ns().to_owned());
    assert!(ns_exists(&left) && ns_exists(&right));
    drop(emu);
    assert!(!ns_exists(&left) && !ns_exists(&right));

    let panicky = name("panic");
    let result = std::panic::catch_unwind(|| {
        let emu = Emulation::start(EmuConfig::new(panicky.clone())).expect("start");
        assert!(ns_exists(emu.left_ns()));
        panic!("deliberate");
    });
    assert!(result.is_err());
    let cfg = EmuConfig::new(panicky);
    assert!(!ns_exists(&cfg.left_ns()) && !ns_exists(&cfg.right_ns()));
}

#[test]
fn failed_start_leaves_nothing_behind() {
    if !can_run("failed_start_leaves_nothing_behind") {
        return;
    }
    let cfg = EmuConfig::new(name("fail"));
    let (left, right) = (cfg.left_ns(), cfg.right_ns());
    // Occupy the right namespace's name: start creates the left one, then fails.
    let status = Command::new("ip")
        .args(["netns", "add", &right])
        .status()
        .unwrap();
    assert!(status.success());
    let result = Emulation::start(cfg);
    let occupied_still_there = ns_exists(&right);
    let _ = Command::new("ip")
        .args(["netns", "delete", &right])
        .status();
    assert!(
        matches!(result, Err(EmuError::Exists(ref ns)) if *ns == right),
        "{result:?}"
    );
    assert!(
        !ns_exists(&left),
        "the half-built left namespace was left behind"
    );
    assert!(
        occupied_still_there,
        "start deleted a namespace it did not create"
    );
}
