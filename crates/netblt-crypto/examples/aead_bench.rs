//! Throughput of packet protection, for docs/security.md. Run in release:
//!
//! ```text
//! cargo run --release -p netblt-crypto --example aead_bench [seconds per case]
//! ```
//!
//! Seals a GSO-train-sized batch (about 64 KiB of packets) in place, then opens it, over
//! and over, and reports seal, open and seal+open rates in GB/s (10^9 bytes of plaintext per
//! second) and picoseconds per byte, for 1400- and 16000-byte packets and both suites; and
//! BLAKE3 hashing of the same bytes, the end-to-end digest's cost, for comparison.

use std::time::{Duration, Instant};

use netblt_crypto::{has_aes_hardware, Datagram, PacketProtection, Suite, OVERHEAD};

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let budget = Duration::from_secs_f64(secs);
    println!("AES instructions: {}", has_aes_hardware());
    println!(
        "{:<18} {:>6} {:>6} {:>10} {:>10} {:>14} {:>12}",
        "suite", "packet", "batch", "seal GB/s", "open GB/s", "seal+open GB/s", "ps/byte s+o"
    );
    for suite in [Suite::Aes256Gcm, Suite::ChaCha20Poly1305] {
        for size in [1400usize, 16_000] {
            bench(suite, size, budget);
        }
    }
    for size in [1400usize, 16_000] {
        let data = vec![0x5au8; size * (65_536 / size)];
        let mut bytes = 0u64;
        let start = Instant::now();
        let mut h = blake3::Hasher::new();
        while start.elapsed() < budget {
            for p in data.chunks(size) {
                h.update(p);
            }
            bytes += data.len() as u64;
        }
        std::hint::black_box(h.finalize());
        let gbs = bytes as f64 / start.elapsed().as_secs_f64() / 1e9;
        println!(
            "{:<18} {size:>6} {:>6} {:>10} {:>10} {gbs:>14.2} {:>12.0}",
            "BLAKE3 (update)",
            "",
            "",
            "",
            1000.0 / gbs
        );
    }
}

fn bench(suite: Suite, size: usize, budget: Duration) {
    let mut tx = PacketProtection::from_secrets(suite, [1; 32], [2; 32]);
    let mut rx = PacketProtection::from_secrets(suite, [2; 32], [1; 32]);
    let count = (65_536 / size).max(1);
    let stride = size + OVERHEAD;
    let mut train = vec![0x5au8; stride * count];
    let (mut seal_t, mut open_t, mut bytes) = (Duration::ZERO, Duration::ZERO, 0u64);
    let start = Instant::now();
    while start.elapsed() < budget {
        let t0 = Instant::now();
        {
            let mut batch: Vec<Datagram<'_>> = train
                .chunks_mut(stride)
                .map(|buf| Datagram { buf, len: size })
                .collect();
            tx.seal_batch(&mut batch).expect("seal");
        }
        let t1 = Instant::now();
        {
            let mut batch: Vec<Datagram<'_>> = train
                .chunks_mut(stride)
                .map(|buf| Datagram { buf, len: stride })
                .collect();
            assert_eq!(rx.open_batch(&mut batch), 0);
        }
        let t2 = Instant::now();
        seal_t += t1 - t0;
        open_t += t2 - t1;
        bytes += (size * count) as u64;
    }
    let gb = bytes as f64 / 1e9;
    let (s, o) = (gb / seal_t.as_secs_f64(), gb / open_t.as_secs_f64());
    let both = gb / (seal_t + open_t).as_secs_f64();
    println!(
        "{:<18} {size:>6} {count:>6} {s:>10.2} {o:>10.2} {both:>14.2} {:>12.0}",
        suite.name(),
        1000.0 / both
    );
}
