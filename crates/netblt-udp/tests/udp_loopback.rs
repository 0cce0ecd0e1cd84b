//! Loopback round trips: IPv4, IPv6, GSO with and without GRO, batches, truncation, wait().

mod common;

use std::{
    io::{ErrorKind, IoSliceMut},
    net::SocketAddr,
    time::{Duration, Instant},
};

use common::{fast_path, pattern, recv_n};
use netblt_udp::{
    DatagramSocket, RecvMeta, SocketConfig, Transmit, UdpSocket, BATCH, MAX_SEGMENTS,
};

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("test address")
}

fn pair(local: &str, rx_cfg: &SocketConfig) -> (UdpSocket, UdpSocket) {
    let rx = UdpSocket::bind(addr(local), rx_cfg).expect("bind receiver");
    let tx = UdpSocket::bind(addr(local), &SocketConfig::default()).expect("bind sender");
    (tx, rx)
}

fn no_gro() -> SocketConfig {
    SocketConfig {
        gro: false,
        ..SocketConfig::default()
    }
}

/// Generic over the trait, so the same story runs on UDP and raw sockets.
fn round_trip<S: DatagramSocket>(tx: &S, rx: &S) {
    let dst = rx.local_addr().expect("local addr");
    let msgs: Vec<Vec<u8>> = (0..5u8)
        .map(|i| pattern(i, 100 + usize::from(i) * 37))
        .collect();
    for m in &msgs {
        tx.send(&Transmit {
            destination: dst,
            contents: m,
            segment_size: None,
            src_ip: None,
        })
        .expect("send");
    }
    let got = recv_n(rx, msgs.len());
    assert_eq!(got.datagrams, msgs);
    let from = tx.local_addr().expect("tx addr");
    assert!(got.metas.iter().all(|m| m.addr == from && !m.truncated));
    assert_eq!(tx.stats().datagrams_sent, 5);
    assert_eq!(rx.stats().datagrams_received, 5);
}

#[test]
fn ipv4_round_trip() {
    let (tx, rx) = pair("127.0.0.1:0", &SocketConfig::default());
    round_trip(&tx, &rx);
}

#[test]
fn ipv6_round_trip() {
    let (tx, rx) = pair("[::1]:0", &SocketConfig::default());
    assert!(rx.local_addr().expect("addr").is_ipv6());
    round_trip(&tx, &rx);
}

#[test]
fn dual_stack_takes_both_families_and_shows_ipv4_as_ipv4() {
    let dual = SocketConfig {
        dual_stack: true,
        ..SocketConfig::default()
    };
    let rx = UdpSocket::bind(addr("[::]:0"), &dual).expect("bind dual");
    let port = rx.local_addr().expect("addr").port();
    let v4 = UdpSocket::bind(addr("127.0.0.1:0"), &SocketConfig::default()).expect("v4");
    let v6 = UdpSocket::bind(addr("[::1]:0"), &SocketConfig::default()).expect("v6");
    for (tx, to) in [(&v4, "127.0.0.1"), (&v6, "::1")] {
        let dst = SocketAddr::new(to.parse().expect("ip"), port);
        let data = train();
        tx.send(&Transmit {
            destination: dst,
            contents: &data,
            segment_size: Some(1000),
            src_ip: None,
        })
        .expect("send");
        let got = recv_n(&rx, 11);
        assert_eq!(got.datagrams, expected_segments(&data, 1000));
        // The peer as it knows itself: 127.0.0.1, not ::ffff:127.0.0.1.
        let from = tx.local_addr().expect("tx addr");
        assert!(got.metas.iter().all(|m| m.addr == from), "{:?}", got.metas);
        // And the answer goes back to that address, a GSO train included.
        rx.send(&Transmit {
            destination: from,
            contents: &data,
            segment_size: Some(1000),
            src_ip: None,
        })
        .expect("answer");
        let back = recv_n(tx, 11);
        assert_eq!(back.datagrams, expected_segments(&data, 1000));
        assert!(back.metas.iter().all(|m| m.addr.port() == port));
    }
    // Without the option, or on another address, IPv6 stays IPv6 only.
    let only = UdpSocket::bind(addr("[::]:0"), &SocketConfig::default()).expect("bind v6");
    let err = only
        .send(&Transmit {
            destination: addr("127.0.0.1:9"),
            contents: b"x",
            segment_size: None,
            src_ip: None,
        })
        .expect_err("an IPv4 destination on an IPv6-only socket");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let specific = UdpSocket::bind(addr("[::1]:0"), &dual).expect("bind ::1");
    assert!(specific
        .send(&Transmit {
            destination: addr("127.0.0.1:9"),
            contents: b"x",
            segment_size: None,
            src_ip: None,
        })
        .is_err());
}

#[test]
fn buffers_are_reported() {
    let s = UdpSocket::bind(addr("127.0.0.1:0"), &SocketConfig::default()).expect("bind");
    let (r, w) = s.granted_buffers();
    assert!(r > 0 && w > 0, "granted {r}/{w}");
    let small = SocketConfig {
        recv_buffer: 0,
        send_buffer: 0,
        ..SocketConfig::default()
    };
    let k = UdpSocket::bind(addr("127.0.0.1:0"), &small).expect("bind");
    assert!(k.granted_buffers().0 > 0, "0 keeps the kernel default");
}

/// 10 full segments and a short tail, so the "last may be shorter" rule is exercised.
fn train() -> Vec<u8> {
    pattern(9, 10 * 1000 + 321)
}

fn expected_segments(data: &[u8], seg: usize) -> Vec<Vec<u8>> {
    data.chunks(seg).map(<[u8]>::to_vec).collect()
}

#[test]
fn gso_train_arrives_as_separate_datagrams_without_gro() {
    let (tx, rx) = pair("127.0.0.1:0", &no_gro());
    assert_eq!(rx.gro_segments(), 1);
    let data = train();
    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: &data,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send");
    let got = recv_n(&rx, 11);
    assert_eq!(got.datagrams, expected_segments(&data, 1000));
    assert_eq!(got.metas.len(), 11, "one datagram per buffer without GRO");
    assert!(got.metas.iter().all(|m| m.stride == m.len));
    let st = tx.stats();
    assert_eq!(st.datagrams_sent, 11);
    if fast_path() {
        assert!(tx.max_gso_segments() > 1, "loopback supports GSO");
        assert_eq!(st.send_syscalls, 1, "one sendmsg for the whole train");
    }
}

#[test]
fn gso_train_arrives_coalesced_with_gro() {
    let (tx, rx) = pair("127.0.0.1:0", &SocketConfig::default());
    let data = train();
    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: &data,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send");
    let got = recv_n(&rx, 11);
    assert_eq!(got.datagrams, expected_segments(&data, 1000));
    assert_eq!(rx.stats().datagrams_received, 11);
    if fast_path() {
        assert!(rx.gro_segments() > 1, "kernel supports UDP_GRO");
        // On loopback a GSO train reaches a GRO socket unsplit: one buffer, stride 1000.
        assert_eq!(got.metas.len(), 1, "{:?}", got.metas);
        assert_eq!(got.metas[0].len, data.len());
        assert_eq!(got.metas[0].stride, 1000);
        assert_eq!(rx.stats().recv_syscalls, 1);
    }
}

#[test]
fn ipv6_gso_with_gro() {
    let (tx, rx) = pair("[::1]:0", &SocketConfig::default());
    let data = pattern(3, 64 * 1000);
    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: &data,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send");
    let got = recv_n(&rx, 64);
    assert_eq!(got.datagrams, expected_segments(&data, 1000));
}

#[test]
fn gso_off_by_config_still_sends_every_segment() {
    let cfg = SocketConfig {
        gso: false,
        ..SocketConfig::default()
    };
    let tx = UdpSocket::bind(addr("127.0.0.1:0"), &cfg).expect("bind");
    let rx = UdpSocket::bind(addr("127.0.0.1:0"), &no_gro()).expect("bind");
    assert_eq!(tx.max_gso_segments(), 1);
    let data = pattern(1, 40 * 500);
    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: &data,
        segment_size: Some(500),
        src_ip: None,
    })
    .expect("send");
    let got = recv_n(&rx, 40);
    assert_eq!(got.datagrams, expected_segments(&data, 500));
    let st = tx.stats();
    assert_eq!(st.datagrams_sent, 40);
    assert_eq!(st.gso_fallbacks, 0);
    if fast_path() {
        // 40 datagrams = one sendmmsg of BATCH (32) + one of 8.
        assert_eq!(st.send_syscalls, 2);
    }
}

/// Forces the run-time fallback through the real kernel path: with SO_NO_CHECK (no UDP checksum)
/// Linux refuses GSO sends with EINVAL ("udp_send_skb": GSO needs checksum offload) while plain
/// sends still work, exactly the situation of a device without GSO.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[test]
fn gso_failure_at_run_time_falls_back_for_good() {
    use std::os::fd::AsRawFd;
    const SO_NO_CHECK: libc::c_int = 11;
    let (tx, rx) = pair("127.0.0.1:0", &no_gro());
    let one: libc::c_int = 1;
    // SAFETY: valid fd, pointer to a live c_int and its size.
    let r = unsafe {
        libc::setsockopt(
            tx.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NO_CHECK,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "set SO_NO_CHECK");
    assert!(tx.max_gso_segments() > 1);
    let dst = rx.local_addr().expect("addr");
    let data = train();
    tx.send(&Transmit {
        destination: dst,
        contents: &data,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send falls back instead of failing");
    assert_eq!(tx.max_gso_segments(), 1, "GSO is off for good");
    assert_eq!(tx.stats().gso_fallbacks, 1);
    let got = recv_n(&rx, 11);
    assert_eq!(
        got.datagrams,
        expected_segments(&data, 1000),
        "nothing lost or doubled"
    );

    // Later trains go straight to the split path; no second fallback.
    let more = pattern(77, 5 * 1000);
    tx.send(&Transmit {
        destination: dst,
        contents: &more,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send");
    let got = recv_n(&rx, 5);
    assert_eq!(got.datagrams, expected_segments(&more, 1000));
    let st = tx.stats();
    assert_eq!(st.gso_fallbacks, 1);
    assert_eq!(st.datagrams_sent, 16);
}

#[test]
fn caller_mistakes_are_invalid_input_and_keep_gso() {
    let tx = UdpSocket::bind(addr("127.0.0.1:0"), &SocketConfig::default()).expect("bind");
    let gso = tx.max_gso_segments();
    let data = vec![0u8; 70_000];
    let cases = [
        // Wrong address family for an IPv4 socket.
        Transmit {
            destination: addr("[::1]:9"),
            contents: &data[..10],
            segment_size: None,
            src_ip: None,
        },
        // More segments than any kernel accepts.
        Transmit {
            destination: addr("127.0.0.1:9"),
            contents: &data[..(MAX_SEGMENTS + 1) * 10],
            segment_size: Some(10),
            src_ip: None,
        },
        // A train longer than one UDP datagram.
        Transmit {
            destination: addr("127.0.0.1:9"),
            contents: &data[..65_508],
            segment_size: Some(1_500),
            src_ip: None,
        },
    ];
    for t in &cases {
        let e = tx.send(t).expect_err("must be refused");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(
        tx.max_gso_segments(),
        gso,
        "caller errors never disable GSO"
    );
    assert_eq!(tx.stats().send_syscalls, 0, "refused before any syscall");
}

#[test]
fn send_batch_puts_two_trains_in_one_syscall() {
    let (tx, rx) = pair("127.0.0.1:0", &no_gro());
    let dst = rx.local_addr().expect("addr");
    // 2 x 32 x 1400 = 89,600 bytes: more than one GSO send may carry.
    let a = pattern(1, 32 * 1400);
    let b = pattern(2, 32 * 1400);
    let ts = [
        Transmit {
            destination: dst,
            contents: &a,
            segment_size: Some(1400),
            src_ip: None,
        },
        Transmit {
            destination: dst,
            contents: &b,
            segment_size: Some(1400),
            src_ip: None,
        },
    ];
    let mut sent = 0;
    while sent < ts.len() {
        sent += tx.send_batch(&ts[sent..]).expect("send_batch");
    }
    let got = recv_n(&rx, 64);
    let mut want = expected_segments(&a, 1400);
    want.extend(expected_segments(&b, 1400));
    assert_eq!(got.datagrams, want);
    assert_eq!(tx.stats().datagrams_sent, 64);
    if fast_path() {
        assert_eq!(tx.stats().send_syscalls, 1);
    }
}

#[test]
fn too_small_buffers_report_truncation() {
    let (tx, rx) = pair("127.0.0.1:0", &no_gro());
    let dst = rx.local_addr().expect("addr");
    let data = pattern(5, 1000);
    tx.send(&Transmit {
        destination: dst,
        contents: &data,
        segment_size: None,
        src_ip: None,
    })
    .expect("send");
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    let mut small = [0u8; 100];
    let mut empty: [u8; 0] = [];
    let mut meta = [RecvMeta::default(); 2];
    {
        let mut bufs = [IoSliceMut::new(&mut small)];
        let n = rx.recv(&mut bufs, &mut meta).expect("recv");
        assert_eq!(n, 1);
    }
    assert_eq!(meta[0].len, 100);
    assert!(meta[0].truncated);
    assert_eq!(&small[..], &data[..100]);
    assert_eq!(rx.stats().truncated, 1);

    // A zero-length buffer and a zero-length slice of buffers do not panic either.
    tx.send(&Transmit {
        destination: dst,
        contents: &data,
        segment_size: None,
        src_ip: None,
    })
    .expect("send");
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    assert_eq!(rx.recv(&mut [], &mut meta).expect("no buffers"), 0);
    let mut bufs = [IoSliceMut::new(&mut empty)];
    assert_eq!(rx.recv(&mut bufs, &mut meta).expect("recv"), 1);
    assert_eq!(meta[0].len, 0);
    assert!(meta[0].truncated);
    assert_eq!(meta[0].segments(&bufs[0]).count(), 1);
}

#[test]
fn gro_train_into_small_buffer_is_truncated_not_a_panic() {
    let (tx, rx) = pair("127.0.0.1:0", &SocketConfig::default());
    let data = train();
    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: &data,
        segment_size: Some(1000),
        src_ip: None,
    })
    .expect("send");
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    let mut small = [0u8; 2500];
    let mut meta = [RecvMeta::default()];
    let mut bufs = [IoSliceMut::new(&mut small)];
    assert_eq!(rx.recv(&mut bufs, &mut meta).expect("recv"), 1);
    assert_eq!(meta[0].len, if fast_path() { 2500 } else { 1000 });
    let segs: Vec<usize> = meta[0].segments(&bufs[0]).map(<[u8]>::len).collect();
    if fast_path() {
        assert!(meta[0].truncated);
        assert_eq!(segs, [1000, 1000, 500]);
    }
}

#[test]
fn recv_on_empty_socket_would_block() {
    let rx = UdpSocket::bind(addr("127.0.0.1:0"), &SocketConfig::default()).expect("bind");
    let mut b = [0u8; 64];
    let mut bufs = [IoSliceMut::new(&mut b)];
    let mut meta = [RecvMeta::default()];
    let e = rx.recv(&mut bufs, &mut meta).expect_err("nothing queued");
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    assert_eq!(rx.stats().would_block, 1);
}

#[test]
fn wait_times_out_then_sees_data() {
    let (tx, rx) = pair("127.0.0.1:0", &SocketConfig::default());
    let timeout = Duration::from_millis(30);
    let start = Instant::now();
    let r = rx.wait(true, false, Some(timeout)).expect("wait");
    assert!(r.timed_out(), "{r:?}");
    // A lower bound is correctness (no early return), not speed.
    assert!(start.elapsed() >= timeout);

    let zero = rx.wait(true, false, Some(Duration::ZERO)).expect("wait");
    assert!(zero.timed_out());

    let w = tx
        .wait(false, true, Some(Duration::from_secs(5)))
        .expect("wait");
    assert!(w.writable && !w.readable);

    tx.send(&Transmit {
        destination: rx.local_addr().expect("addr"),
        contents: b"x",
        segment_size: None,
        src_ip: None,
    })
    .expect("send");
    let r = rx.wait(true, false, None).expect("wait");
    assert!(r.readable && !r.timed_out());
}

#[test]
fn reuse_port_lets_two_sockets_share_a_port() {
    let cfg = SocketConfig {
        reuse_port: true,
        ..SocketConfig::default()
    };
    let a = UdpSocket::bind(addr("127.0.0.1:0"), &cfg).expect("bind a");
    let b = UdpSocket::bind(a.local_addr().expect("addr"), &cfg).expect("bind b on the same port");
    assert_eq!(a.local_addr().ok(), b.local_addr().ok());
    let plain = UdpSocket::bind(a.local_addr().expect("addr"), &SocketConfig::default());
    assert_eq!(
        plain.map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::AddrInUse)
    );
}

#[test]
fn batch_constant_bounds_one_recv() {
    let (tx, rx) = pair("127.0.0.1:0", &no_gro());
    let dst = rx.local_addr().expect("addr");
    for i in 0..(BATCH + 8) {
        tx.send(&Transmit {
            destination: dst,
            contents: &pattern(i as u8, 10),
            segment_size: None,
            src_ip: None,
        })
        .expect("send");
    }
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    let mut storage = vec![[0u8; 64]; BATCH + 8];
    let mut bufs: Vec<IoSliceMut<'_>> = storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    let mut meta = vec![RecvMeta::default(); BATCH + 8];
    let n = rx.recv(&mut bufs, &mut meta).expect("recv");
    assert!(
        n >= 1 && n <= if fast_path() { BATCH } else { 1 },
        "n = {n}"
    );
}

/// A train given as parts (24-byte headers, payloads, a 2-byte pad on the
/// short last one), the shape a NETBLT driver gathers: the receiver sees
/// the concatenation cut at the segment size, with and without GSO.
#[test]
fn gathered_train_arrives_as_its_concatenation() {
    use netblt_udp::GatherTransmit;
    use std::io::IoSlice;
    for gso in [true, false] {
        let (rx, _) = pair("127.0.0.1:0", &no_gro());
        let tx = UdpSocket::bind(
            addr("127.0.0.1:0"),
            &SocketConfig {
                gso,
                ..SocketConfig::default()
            },
        )
        .expect("bind sender");
        let headers: Vec<Vec<u8>> = (0..4u8).map(|i| pattern(i, 24)).collect();
        let payloads: Vec<Vec<u8>> = (0..4u8)
            .map(|i| pattern(10 + i, if i == 3 { 500 } else { 976 }))
            .collect();
        let pad = [0u8; 2];
        let mut parts = Vec::new();
        let mut want = Vec::new();
        for (h, p) in headers.iter().zip(&payloads) {
            parts.push(IoSlice::new(h));
            parts.push(IoSlice::new(p));
            let mut d = h.clone();
            d.extend_from_slice(p);
            want.push(d);
        }
        parts.push(IoSlice::new(&pad));
        want[3].extend_from_slice(&pad);
        let t = GatherTransmit {
            destination: rx.local_addr().expect("addr"),
            parts: &parts,
            segment_size: Some(1000),
            src_ip: None,
        };
        assert_eq!(t.len(), 3 * 1000 + 526);
        assert_eq!(tx.send_batch_gather(&[t, t]).expect("send"), 2);
        let got = recv_n(&rx, 8);
        let mut twice = want.clone();
        twice.extend(want);
        assert_eq!(got.datagrams, twice, "gso {gso}");
        assert_eq!(tx.stats().datagrams_sent, 8);
        if fast_path() && gso {
            assert_eq!(tx.stats().send_syscalls, 1, "one sendmmsg for both trains");
        }
    }
}

#[test]
fn a_connected_socket_reports_the_routes_mtu() {
    let (tx, rx) = pair("127.0.0.1:0", &SocketConfig::default());
    if !fast_path() {
        assert!(tx.path_mtu().is_err(), "the portable path cannot tell");
        return;
    }
    // Not connected: no path, no MTU.
    assert!(tx.path_mtu().is_err());
    let dst = rx.local_addr().expect("local addr");
    socket2::SockRef::from(&tx)
        .connect(&dst.into())
        .expect("connect");
    let lo: usize = std::fs::read_to_string("/sys/class/net/lo/mtu")
        .expect("loopback's MTU")
        .trim()
        .parse()
        .expect("a number");
    // The interface's MTU, or IPv4's largest packet if smaller.
    assert_eq!(tx.path_mtu().expect("path MTU"), lo.min(65_535));
}
