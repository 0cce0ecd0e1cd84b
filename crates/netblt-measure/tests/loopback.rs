//! End-to-end tests on loopback: a real `EchoServer` and the real clients.
//!
//! Every server binds 127.0.0.1 port 0, so tests run in parallel without clashing. No test
//! asserts on speed; timeouts are generous so a loaded CI machine does not turn into losses.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use netblt_measure::client::{EchoClient, SinkConnection};
use netblt_measure::cpu::{measure_cpu, CpuConfig};
use netblt_measure::load::{run_load, run_sweep, LoadConfig};
use netblt_measure::protocol::{MAX_UDP_PAYLOAD, UDP_HEADER_LEN};
use netblt_measure::rtt::{measure_rtt, RttConfig};
use netblt_measure::{EchoServer, EchoServerConfig, MeasureError, Transport};

fn server() -> EchoServer {
    EchoServer::start(EchoServerConfig::new("127.0.0.1:0".parse().unwrap())).expect("bind loopback")
}

fn addr(s: &EchoServer, t: Transport) -> SocketAddr {
    match t {
        Transport::Tcp => s.tcp_addr().unwrap(),
        _ => s.udp_addr().unwrap(),
    }
}

fn rtt_3_sizes_20_reps(transport: Transport) {
    let srv = server();
    let mut c = RttConfig::new(addr(&srv, transport), transport);
    c.sizes = vec![1, 1024, 1025];
    c.count = 20;
    c.timeout = Duration::from_secs(5);
    let mut progress_calls = 0;
    let report = measure_rtt(&c, &mut |_| progress_calls += 1).expect("rtt run");
    assert!(progress_calls > 0);
    assert_eq!(report.sizes.len(), 3);
    for (s, want) in report.sizes.iter().zip([1, 1024, 1025]) {
        assert_eq!(s.size, want);
        assert_eq!(s.sent, 20);
        assert_eq!(
            s.lost, 0,
            "{transport} size {want} lost messages on loopback"
        );
        let r = s.rtt_us.as_ref().expect("some round trips");
        assert_eq!(r.n, 20);
        assert!(r.min > 0.0);
        assert!(r.min <= r.mean && r.mean <= r.max, "{r:?}");
        assert!(r.min <= r.p50 && r.p50 <= r.p90 && r.p90 <= r.p99 && r.p99 <= r.max);
        assert!(s.end_s >= s.start_s);
    }
    // The JSON form is one object with the per-size statistics.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["sizes"][0]["rtt_us"]["n"], 20);
    assert_eq!(json["transport"], transport.name());
    let stats = srv.shutdown();
    assert!(stats.echoed >= 63, "{stats:?}"); // 3 x (20 + 1 warm-up)
}

#[test]
fn rtt_udp_three_sizes() {
    rtt_3_sizes_20_reps(Transport::Udp);
}

#[test]
fn rtt_tcp_three_sizes() {
    rtt_3_sizes_20_reps(Transport::Tcp);
}

#[test]
fn load_two_procs_moves_exact_byte_count() {
    let srv = server();
    let mut c = LoadConfig::new(srv.tcp_addr().unwrap(), Transport::Tcp);
    c.procs = 2;
    c.bytes_per_proc = (1 << 20) + 17; // not a multiple of the write size, on purpose
    c.rtt_count = 20;
    let run = run_load(&c, None).expect("load run");
    assert_eq!(run.procs, 2);
    assert_eq!(run.transfers.len(), 2);
    for t in &run.transfers {
        assert_eq!(t.report.bytes_sent, c.bytes_per_proc);
        assert_eq!(t.report.bytes_received, c.bytes_per_proc);
        assert_eq!(t.report.writes, 1025); // 1024 full writes of 1 KiB + one of 17 bytes
        assert!(t.report.end_s >= t.report.write_end_s && t.report.write_end_s >= t.report.start_s);
        assert!(t.throughput > 0.0);
    }
    assert_eq!(run.bytes_sent, 2 * c.bytes_per_proc);
    assert_eq!(run.bytes_received, 2 * c.bytes_per_proc);
    assert!((run.overall - run.transfers.iter().map(|t| t.throughput).sum::<f64>()).abs() < 1e-6);
    assert!(run.rtt_sent <= 20);
    let stats = srv.shutdown();
    assert_eq!(stats.sunk_bytes, 2 * c.bytes_per_proc);
}

#[test]
fn load_zero_procs_is_the_unloaded_baseline() {
    let srv = server();
    let mut c = LoadConfig::new(srv.tcp_addr().unwrap(), Transport::Tcp);
    c.procs = 0;
    c.rtt_count = 10;
    let run = run_load(&c, None).expect("baseline");
    assert_eq!(run.rtt_sent, 10);
    assert_eq!(run.rtt_us.as_ref().map(|s| s.n), Some(10));
    assert!(run.transfers.is_empty());
}

#[test]
fn load_sweep_and_udp_sink() {
    let srv = server();
    let mut c = LoadConfig::new(srv.udp_addr().unwrap(), Transport::Udp);
    c.bytes_per_proc = 64 * 1024;
    c.rtt_size = 0; // no probe
    let mut seen = Vec::new();
    let runs = run_sweep(&c, 1..=2, &mut |r| seen.push(r.procs)).expect("sweep");
    assert_eq!(seen, vec![1, 2]);
    for r in &runs {
        assert_eq!(r.transfers.len(), r.procs);
        assert_eq!(r.bytes_sent, r.procs as u64 * c.bytes_per_proc);
        // UDP is unpaced: the sink may miss some, but never counts more than was sent.
        assert!(r.bytes_received <= r.bytes_sent);
        assert_eq!(r.rtt_sent, 0);
    }
}

#[test]
fn cpu_rows_for_tcp_and_udp() {
    let srv = server();
    for transport in [Transport::Tcp, Transport::Udp] {
        let mut c = CpuConfig::new(addr(&srv, transport), transport);
        c.sizes = vec![1024, 128 * 1024];
        c.bytes = 1 << 20;
        let mut rows_seen = 0;
        let report = measure_cpu(&c, None, &mut |_| rows_seen += 1).expect("cpu run");
        assert_eq!(rows_seen, 2);
        assert_eq!(report.rows.len(), 2);
        for row in &report.rows {
            assert_eq!(row.bytes_sent, 1 << 20);
            assert!(row.bytes_received <= row.bytes_sent);
            if transport == Transport::Tcp {
                assert_eq!(row.bytes_received, row.bytes_sent);
                assert_eq!(row.write_size, row.size);
            }
            assert!(row.elapsed_s > 0.0 && row.real_baud > 0.0);
            assert!(row.client_cpu_s >= 0.0 && row.server_cpu_s >= 0.0);
        }
        if transport == Transport::Udp {
            // 128 KiB cannot be one datagram: the row says what was really sent.
            assert_eq!(report.rows[1].write_size, MAX_UDP_PAYLOAD);
        }
    }
}

#[test]
fn late_udp_echo_is_discarded_not_mistaken() {
    // A fake echo server that holds the first message until the second arrives, then echoes
    // both: the client must count the first lost and time the second correctly.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer = sock.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let mut a = [0u8; 2048];
        let mut b = [0u8; 2048];
        let (na, from) = sock.recv_from(&mut a).unwrap();
        let (nb, _) = sock.recv_from(&mut b).unwrap();
        sock.send_to(&a[..na], from).unwrap();
        sock.send_to(&b[..nb], from).unwrap();
    });
    let mut c = EchoClient::connect(peer, Transport::Udp, Duration::from_millis(300)).unwrap();
    assert_eq!(
        c.round_trip(100).unwrap(),
        None,
        "first message must time out"
    );
    let second = c.round_trip(100).unwrap();
    assert!(
        second.is_some(),
        "second message must be matched despite the stale echo"
    );
    fake.join().unwrap();
}

#[test]
fn server_survives_garbage_and_keeps_serving() {
    let srv = server();
    // UDP junk of every short length and a wrong magic.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    for len in 0..40usize {
        let junk: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
        u.send_to(&junk, srv.udp_addr().unwrap()).unwrap();
    }
    // TCP: bad hello; a frame announcing 4 GiB; a connection that closes mid-frame.
    let t = srv.tcp_addr().unwrap();
    let mut s = TcpStream::connect(t).unwrap();
    s.write_all(b"HELLO WORLD").unwrap();
    let mut buf = [0u8; 16];
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(
        s.read(&mut buf).unwrap_or(0),
        0,
        "server closes on a bad hello"
    );
    let mut s = TcpStream::connect(t).unwrap();
    s.write_all(b"NBM1E").unwrap();
    s.read_exact(&mut [0u8; 5]).unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(
        s.read(&mut buf).unwrap_or(0),
        0,
        "server closes on an oversized frame"
    );
    let mut s = TcpStream::connect(t).unwrap();
    s.write_all(b"NBM1E\x00\x00\x00\x10abc").unwrap();
    drop(s);
    // Still serving both transports.
    for transport in [Transport::Tcp, Transport::Udp] {
        let mut c =
            EchoClient::connect(addr(&srv, transport), transport, Duration::from_secs(5)).unwrap();
        assert!(c.round_trip(64).unwrap().is_some());
    }
    let stats = srv.shutdown();
    assert!(stats.malformed >= 3, "{stats:?}");
}

#[test]
fn clear_errors_for_bad_peers_and_sizes() {
    // Nothing listening: refused, promptly, for both transports.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let t0 = Instant::now();
    assert!(matches!(
        EchoClient::connect(dead, Transport::Tcp, Duration::from_secs(2)),
        Err(MeasureError::Io { .. })
    ));
    let mut c = RttConfig::new(dead, Transport::Udp);
    c.sizes = vec![1];
    c.count = 3;
    assert!(measure_rtt(&c, &mut |_| {}).is_err());
    assert!(t0.elapsed() < Duration::from_secs(30));

    // A TCP peer that is not `netblt echo`.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    let impostor = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(b"SSH-2.0-OpenSSH\r\n");
        std::thread::sleep(Duration::from_millis(200));
    });
    assert!(matches!(
        EchoClient::connect(a, Transport::Tcp, Duration::from_secs(2)),
        Err(MeasureError::Protocol { .. })
    ));
    impostor.join().unwrap();

    // Sizes the transport cannot carry, and the transport not wired yet.
    let srv = server();
    let mut c = RttConfig::new(srv.udp_addr().unwrap(), Transport::Udp);
    c.sizes = vec![1, MAX_UDP_PAYLOAD + 1];
    assert!(matches!(
        measure_rtt(&c, &mut |_| {}),
        Err(MeasureError::SizeOutOfRange { .. })
    ));
    let mut e = EchoClient::connect(
        srv.udp_addr().unwrap(),
        Transport::Udp,
        Duration::from_secs(1),
    )
    .unwrap();
    assert!(e.round_trip(MAX_UDP_PAYLOAD).unwrap().is_some());
    assert_eq!(MAX_UDP_PAYLOAD + UDP_HEADER_LEN, 65_507);
    assert!(matches!(
        SinkConnection::connect(
            srv.tcp_addr().unwrap(),
            Transport::Netblt,
            Duration::from_secs(1)
        ),
        Err(MeasureError::TransportUnavailable(Transport::Netblt))
    ));
}
