//! `RateControl` on a serving receiver (decision R27): the limit is for all
//! the files it serves together, split among the transfers running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netblt::{RateControl, Receiver, ReceiverOptions, SendOptions};

fn data(n: usize, seed: u32) -> Vec<u8> {
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

#[test]
fn a_serving_receivers_limit_is_shared_by_the_transfers_it_serves() {
    let src = tempfile::tempdir().unwrap();
    let files: Vec<Vec<u8>> = (0..2).map(|i| data(1_000_000, 11 + i)).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(src.path().join(format!("f{i}")), f).unwrap();
    }
    let control = RateControl::new();
    control.set_max_rate(Some(8_000_000));
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = ReceiverOptions::new();
    opts.serve = true;
    opts.stop = Some(Arc::clone(&stop));
    opts.rate_control = Some(control.clone());
    let rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), opts).unwrap();
    let addr = rx.local_addr();
    let dir = src.path().to_path_buf();
    let server = std::thread::spawn(move || rx.serve_dir(dir).unwrap());

    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let gets: Vec<_> = (0..2)
        .map(|i| {
            let dest = out.path().join(format!("got{i}"));
            std::thread::spawn(move || {
                let mut o = SendOptions::new().with_rate(200_000_000);
                o.params.buffer_size = 64 * 1024;
                netblt::get(addr, &format!("f{i}"), &dest, &o)
            })
        })
        .collect();
    let reports: Vec<_> = gets.into_iter().map(|g| g.join().unwrap()).collect();
    let took = started.elapsed();
    for (i, r) in reports.iter().enumerate() {
        let r = r.as_ref().expect("get");
        assert!(r.succeeded() && r.verified, "{r:?}");
        let got = std::fs::read(out.path().join(format!("got{i}"))).unwrap();
        assert!(got == files[i], "file {i} differs");
    }
    // 16 Mbit at 8 Mb/s in all: two seconds at least (each on its own
    // under the limit, side by side, would take one). A lower bound: a
    // loaded machine only makes it longer.
    assert!(
        took >= Duration::from_millis(1_800),
        "2 MB in {took:?} under an 8 Mb/s limit for both"
    );
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}
