//! A receiver bound to a wildcard address on a host with several addresses
//! (decision Z26): it must answer from the address it was called on, or
//! the sender's connected socket drops every answer and the sender gives
//! up after eight OPENs. On loopback every 127.0.0.0/8 address is local and
//! the kernel's routing answers from 127.0.0.1, so a sender calling
//! 127.0.0.2 is the multi-homed case. Both directions (`send_file`, and
//! `get`, where the receiver sends the data), plain and encrypted.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use common::{data, encrypted};
use netblt::{Receiver, ReceiverOptions, ReceiverSummary, Security, SendOptions};

fn send_options(security: Security) -> SendOptions {
    let mut o = SendOptions::new().with_rate(200_000_000);
    o.params.buffer_size = 64 * 1024;
    o.death_timer = Duration::from_secs(2);
    o.security = security;
    o
}

/// A receiver bound to `bind`, serving `dir` on a thread.
fn serve(
    bind: &str,
    dir: &Path,
    security: Security,
) -> (u16, Arc<AtomicBool>, JoinHandle<ReceiverSummary>) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = ReceiverOptions::new();
    opts.serve = true;
    opts.stop = Some(Arc::clone(&stop));
    opts.security = security;
    opts.death_timer = Duration::from_secs(2);
    let rx = Receiver::bind(bind.parse().unwrap(), opts).unwrap();
    let port = rx.local_addr().port();
    let dir = dir.to_path_buf();
    let h = std::thread::spawn(move || rx.serve_dir(dir).unwrap());
    (port, stop, h)
}

/// For each mode, a file sent to `called` on a receiver bound to `bind`,
/// then fetched back from there; every byte checked.
fn transfers_through(bind: &str, called: &str) {
    let keys = tempfile::tempdir().unwrap();
    let (rk, sk) = (keys.path().join("r"), keys.path().join("s"));
    let src = tempfile::tempdir().unwrap();
    let bytes = data(300_001, 26);
    let file = src.path().join("f.bin");
    std::fs::write(&file, &bytes).unwrap();
    for (recv, send) in [
        (Security::Insecure, Security::Insecure),
        (encrypted(&rk, true), encrypted(&sk, false)),
    ] {
        let out = tempfile::tempdir().unwrap();
        let (port, stop, h) = serve(bind, out.path(), recv);
        let to = SocketAddr::new(called.parse().unwrap(), port);
        let opts = send_options(send);
        let r = netblt::send_file(&file, to, &opts)
            .unwrap_or_else(|e| panic!("send to {to} (receiver on {bind}): {e}"));
        assert!(r.succeeded() && r.verified, "{r:?}");
        assert!(std::fs::read(out.path().join("f.bin")).unwrap() == bytes);
        // READ mode: the receiver's DATA trains leave from the address too.
        let back = tempfile::tempdir().unwrap();
        let r = netblt::get(to, "f.bin", back.path(), &opts)
            .unwrap_or_else(|e| panic!("get from {to} (receiver on {bind}): {e}"));
        assert!(r.verified);
        assert!(std::fs::read(back.path().join("f.bin")).unwrap() == bytes);
        stop.store(true, Ordering::Relaxed);
        let s = h.join().unwrap();
        assert_eq!((s.transfers, s.failed), (2, 0), "{bind} -> {to}");
    }
}

#[test]
fn a_receiver_on_0_0_0_0_answers_from_the_address_called() {
    transfers_through("0.0.0.0:0", "127.0.0.2");
}

#[test]
fn a_dual_stack_receiver_answers_ipv4_senders_from_the_address_called() {
    // The default listening address is [::]: IPv4 senders reach it as
    // v4-mapped traffic, and the answers need IPv4's control message.
    transfers_through("[::]:0", "127.0.0.2");
}

#[test]
fn a_dual_stack_receiver_still_answers_ipv6_senders() {
    transfers_through("[::]:0", "::1");
}
