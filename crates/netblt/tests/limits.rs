//! "Why was it slow?" end to end on loopback: runs built so that one limit
//! is really the cause, and the report's `limit` must name it.
//!
//! Each run lasts well under a second or two; the assertions are on which
//! limit is named, never on a speed.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use netblt::{IncomingTransfer, Limit, Policy, Receiver, ReceiverOptions, SendOptions};

/// A receiving application's handler, as a closure.
type Handler = Box<dyn FnMut(&IncomingTransfer, u64, &[u8]) -> Result<(), String> + Send>;

/// A receiver on a thread: discards data, or hands it to `handler`.
fn receiver(handler: Option<Handler>) -> (SocketAddr, Arc<AtomicBool>, JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = ReceiverOptions::new();
    opts.stop = Some(Arc::clone(&stop));
    let rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), opts).unwrap();
    let addr = rx.local_addr();
    let h = std::thread::spawn(move || {
        match handler {
            Some(mut f) => rx.handle_with(move |t: &IncomingTransfer, o: u64, b: &[u8]| f(t, o, b)),
            None => rx.sink(),
        }
        .unwrap();
    });
    (addr, stop, h)
}

fn stop(stop: Arc<AtomicBool>, h: JoinHandle<()>) {
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

/// 64 KiB buffers, so that a megabyte is many NETBLT buffers.
fn options() -> SendOptions {
    let mut o = SendOptions::new();
    o.params.buffer_size = 64 * 1024;
    o
}

#[test]
fn a_fixed_rate_is_named_as_the_limit() {
    let (addr, flag, h) = receiver(None);
    let mut o = options().with_rate(20_000_000);
    o.policy = Policy::Fixed;
    // 1 MB at 20 Mb/s: about 0.4 s.
    let r = netblt::bench(addr, 1_000_000, &o).unwrap();
    stop(flag, h);
    let d = r.limit.expect("a diagnosis");
    eprintln!("why: {d}");
    assert_eq!(d.limit, Limit::RateCap, "{d:?}");
    // The library names its own settings, not the tool's flags (F25).
    assert!(
        d.message.contains("the fixed policy at its rate"),
        "{}",
        d.message
    );
    assert_eq!(d.setting, Some(netblt::LimitSetting::FixedRate));
    assert!(d.figures["cap_bps"] > 19e6 && d.figures["cap_bps"] <= 20e6);
}

#[test]
fn an_adaptive_sender_at_its_cap_is_named_as_the_rate_cap() {
    let (addr, flag, h) = receiver(None);
    // Loopback carries gigabits: 20 Mb/s is the cap, whatever the
    // controller finds.
    let o = options().with_rate(20_000_000);
    let r = netblt::bench(addr, 2_000_000, &o).unwrap();
    stop(flag, h);
    let d = r.limit.expect("a diagnosis");
    eprintln!("why: {d}");
    assert_eq!(d.limit, Limit::RateCap, "{d:?}");
    assert!(
        d.message.starts_with("limited by the rate cap ("),
        "{}",
        d.message
    );
    assert_eq!(d.setting, Some(netblt::LimitSetting::Rate));
}

/// A reader that hands out `chunk` bytes per read, sleeping before each:
/// a slow disk.
struct SlowReader {
    left: usize,
    chunk: usize,
    pause: Duration,
}

impl Read for SlowReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        std::thread::sleep(self.pause);
        let n = buf.len().min(self.chunk).min(self.left);
        buf[..n].fill(0x5a);
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn a_slow_reader_is_named_as_the_senders_disk() {
    let (addr, flag, h) = receiver(None);
    let size = 600_000;
    // 16 KiB per 10 ms: about 1.6 MB/s, far below what loopback carries.
    let reader = SlowReader {
        left: size,
        chunk: 16 * 1024,
        pause: Duration::from_millis(10),
    };
    let r = netblt::send_reader(reader, size as u64, "slow", addr, &options()).unwrap();
    stop(flag, h);
    let d = r.limit.expect("a diagnosis");
    eprintln!("why: {d}");
    assert_eq!(d.limit, Limit::SenderReader, "{d:?}");
    assert!(d.figures["waiting_share"] >= 0.3, "{d:?}");
}

#[test]
fn a_slow_receiving_application_is_named_as_the_receivers_disk() {
    // The receiver's handler takes 64 KiB per 10 ms (6.5 MB/s): its writer
    // falls behind, the receiver stops granting buffers (no GO) once its
    // queues (about 1 MB) are full, and the sender waits with data ready.
    let (addr, flag, h) = receiver(Some(Box::new(|_: &IncomingTransfer, _, b: &[u8]| {
        std::thread::sleep(Duration::from_micros(b.len() as u64 * 10_000 / 65_536));
        Ok(())
    })));
    let size = 4_000_000usize;
    let data = vec![7u8; size];
    let mut o = options();
    // Few buffers, so that the receiver's queue fills at once.
    o.params.max_buffers = 2;
    let r =
        netblt::send_reader(std::io::Cursor::new(data), size as u64, "to-slow", addr, &o).unwrap();
    stop(flag, h);
    let d = r.limit.expect("a diagnosis");
    eprintln!("why: {d}");
    assert_eq!(d.limit, Limit::ReceiverDisk, "{d:?}");
}
