//! What the library's end-to-end tests share: test data and the encrypted
//! security setting.
#![allow(dead_code)] // each test binary uses its own part

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netblt::{Encryption, Security};

/// `n` bytes of an xorshift stream: different for each seed, the same
/// every run.
pub(crate) fn data(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Encrypted mode with the keys in `dir` (made on first use); with
/// `accept_any`, the passive end takes any sender's key.
pub(crate) fn encrypted(dir: &Path, accept_any: bool) -> Security {
    let mut e = Encryption::default();
    e.key_dir = Some(dir.to_path_buf());
    e.accept_any = accept_any;
    Security::Encrypted(e)
}

/// A UDP relay on loopback to `to`, on threads of its own: its own port
/// (not the receiver's: a port forward, Z25) takes the client's datagrams
/// and forwards both ways until the client has sent `n`, then drops
/// everything (a path gone dark). The threads end after 5 s of silence.
pub(crate) fn relay(to: SocketAddr, n: usize) -> SocketAddr {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let back = UdpSocket::bind("127.0.0.1:0").unwrap();
    back.connect(to).unwrap();
    for s in [&front, &back] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    }
    let addr = front.local_addr().unwrap();
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
    let sent = Arc::new(AtomicUsize::new(0));
    let (f2, b2, c2, s2) = (
        front.try_clone().unwrap(),
        back.try_clone().unwrap(),
        Arc::clone(&client),
        Arc::clone(&sent),
    );
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while let Ok((len, from)) = front.recv_from(&mut buf) {
            *client.lock().unwrap() = Some(from);
            if sent.fetch_add(1, Ordering::Relaxed) < n {
                let _ = back.send(&buf[..len]);
            }
        }
    });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while let Ok(len) = b2.recv(&mut buf) {
            let to = *c2.lock().unwrap();
            if let Some(to) = to.filter(|_| s2.load(Ordering::Relaxed) <= n) {
                let _ = f2.send_to(&buf[..len], to);
            }
        }
    });
    addr
}
