//! Raw IP protocol 30 over loopback (needs root / CAP_NET_RAW; CI is root), and the clear error
//! when the capability is missing.

mod common;

use std::{
    io::{self, ErrorKind, IoSliceMut},
    net::{IpAddr, SocketAddr},
    time::Duration,
};

use common::{pattern, recv_filtered};
use netblt_udp::{DatagramSocket, RawIpSocket, RecvMeta, SocketConfig, Transmit, NETBLT_PROTOCOL};

// Addresses away from 127.0.0.1, where other programs on this host may speak protocol 30;
// a raw socket sees every packet of its protocol sent to its address.
const RX4: &str = "127.77.30.1";
const TX4: &str = "127.77.30.2";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

fn assert_permission_error(e: &io::Error) {
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("CAP_NET_RAW") && msg.contains("root"), "{msg}");
}

/// Raw protocol-30 sockets can see each other's packets (a v4 raw socket
/// bound to one loopback address was seen receiving a packet of the
/// round-trip test sent to another, once in a few runs): the tests take
/// turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens a raw socket, or checks the error is the documented PermissionDenied and returns None.
fn open(addr: &str) -> Option<RawIpSocket> {
    match RawIpSocket::bind(ip(addr), NETBLT_PROTOCOL, &SocketConfig::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            assert_permission_error(&e);
            eprintln!("not root: raw IP round trip skipped after checking the error ({e})");
            None
        }
    }
}

/// A tag unique to this process and test, so stray protocol-30 packets are ignored.
fn tag(test: u8) -> Vec<u8> {
    let mut t = b"NBT".to_vec();
    t.extend_from_slice(&std::process::id().to_be_bytes());
    t.push(test);
    t
}

fn tagged(tag: &[u8], n: u8, len: usize) -> Vec<u8> {
    let mut v = tag.to_vec();
    v.push(n);
    v.extend(pattern(n, len));
    v
}

fn round_trip(rx: &RawIpSocket, tx: &RawIpSocket, test: u8) {
    let dst = rx.local_addr().expect("addr");
    assert_eq!(dst.port(), 0);
    let t = tag(test);
    let singles: Vec<Vec<u8>> = (0..3)
        .map(|n| tagged(&t, n, 50 + usize::from(n) * 300))
        .collect();
    for m in &singles {
        tx.send(&Transmit {
            destination: dst,
            contents: m,
            segment_size: None,
            src_ip: None,
        })
        .expect("send");
    }
    // A "train" on a raw socket goes out as separate datagrams; each segment carries the tag.
    let seg = 200;
    let mut train = Vec::new();
    for n in 3..6 {
        let mut s = tagged(&t, n, seg - t.len() - 1);
        s.truncate(seg);
        train.extend(s);
    }
    tx.send(&Transmit {
        destination: dst,
        contents: &train,
        segment_size: Some(seg),
        src_ip: None,
    })
    .expect("send train");

    let got = recv_filtered(rx, 6, 2048, |p| p.starts_with(&t));
    let mut want = singles.clone();
    want.extend(train.chunks(seg).map(<[u8]>::to_vec));
    assert_eq!(got.datagrams, want, "payloads arrive without IP header");
    let from = SocketAddr::new(tx.local_addr().expect("addr").ip(), 0);
    assert!(got
        .metas
        .iter()
        .all(|m| m.addr == from && m.stride == m.len && !m.truncated));
    assert_eq!(tx.stats().datagrams_sent, 6);
    assert_eq!(tx.max_gso_segments(), 1);
    assert_eq!(DatagramSocket::gro_segments(tx), 1);
}

#[test]
fn raw_ipv4_protocol_30_round_trip() {
    let _turn = serial();
    let (Some(rx), Some(tx)) = (open(RX4), open(TX4)) else {
        return;
    };
    assert_eq!(rx.protocol(), 30);
    round_trip(&rx, &tx, 4);
}

#[test]
fn raw_ipv6_protocol_30_round_trip() {
    let _turn = serial();
    // Only ::1 exists on v6 loopback, so the sender also hears itself; the tag filter copes.
    let (Some(rx), Some(tx)) = (open("::1"), open("::1")) else {
        return;
    };
    round_trip(&rx, &tx, 6);
}

#[test]
fn raw_ipv4_truncation_is_reported() {
    let _turn = serial();
    const RX: &str = "127.77.30.3";
    let (Some(rx), Some(tx)) = (open(RX), open(TX4)) else {
        return;
    };
    let t = tag(7);
    let data = tagged(&t, 0, 200);
    let dst = rx.local_addr().expect("addr");
    for _ in 0..2 {
        tx.send(&Transmit {
            destination: dst,
            contents: &data,
            segment_size: None,
            src_ip: None,
        })
        .expect("send");
    }
    // 20-byte header + 12 payload bytes fit in 32.
    let mut meta = [RecvMeta::default()];
    let mut small = [0u8; 32];
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    let n = rx
        .recv(&mut [IoSliceMut::new(&mut small)], &mut meta)
        .expect("recv");
    assert_eq!(n, 1);
    assert!(meta[0].truncated);
    assert_eq!(meta[0].len, 12);
    assert_eq!(&small[..12], &data[..12]);
    // A buffer shorter than the IP header: nothing usable, reported, no panic.
    let mut tiny = [0u8; 10];
    rx.wait(true, false, Some(Duration::from_secs(5)))
        .expect("wait");
    let n = rx
        .recv(&mut [IoSliceMut::new(&mut tiny)], &mut meta)
        .expect("recv");
    assert_eq!(n, 1);
    assert_eq!(meta[0].len, 0);
    assert!(meta[0].truncated);
    assert_eq!(rx.stats().truncated, 2);
}

/// Capabilities are per thread on Linux: drop CAP_NET_RAW from this thread's effective set with
/// the raw capset syscall (glibc does not propagate it to other threads), so the error path is
/// tested even when the suite runs as root.
#[cfg(target_os = "linux")]
fn drop_cap_net_raw_in_this_thread() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_NET_RAW: u32 = 13;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset with a v3 header and two data structs, as capget(2) specifies.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()),
            0
        );
        data[0].effective &= !(1 << CAP_NET_RAW);
        assert_eq!(libc::syscall(libc::SYS_capset, &header, data.as_ptr()), 0);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn raw_without_cap_net_raw_is_a_clear_permission_error() {
    let r = std::thread::spawn(|| {
        drop_cap_net_raw_in_this_thread();
        RawIpSocket::bind(ip(RX4), NETBLT_PROTOCOL, &SocketConfig::default()).map(|_| ())
    })
    .join()
    .expect("thread");
    let e = r.expect_err("raw socket must be refused without CAP_NET_RAW");
    assert_permission_error(&e);
}
