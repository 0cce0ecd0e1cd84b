//! The Tokio adapter (feature `tokio`): futures of the blocking API's
//! reports, progress and receiver reports on Tokio channels, cancellation
//! on drop.

use std::time::Duration;

use netblt::{ReceiverOptions, SendOptions};

fn local() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// 64 KiB buffers, at most 20 Mb/s: a megabyte takes about 0.4 s, long
/// enough for progress reports (about ten a second).
fn slow() -> SendOptions {
    let mut o = SendOptions::new().with_rate(20_000_000);
    o.params.buffer_size = 64 * 1024;
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sent_and_received_through_the_async_api() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let file = src.path().join("a.bin");
    std::fs::write(&file, &bytes).unwrap();

    let mut rx = netblt::tokio::serve_dir(local(), dst.path(), ReceiverOptions::new()).unwrap();
    let mut reports = rx.reports().unwrap();
    assert!(rx.reports().is_none(), "the channel is handed out once");

    let mut tx = netblt::tokio::send_file(&file, rx.local_addr(), slow());
    let mut progress = tx.progress().unwrap();
    let seen = tokio::spawn(async move {
        let mut last = None;
        while let Some(p) = progress.recv().await {
            last = Some(p);
        }
        // The channel closed: the transfer is over.
        last
    });
    let report = tx.await.unwrap();
    assert!(report.verified, "{report:?}");
    assert_eq!(std::fs::read(dst.path().join("a.bin")).unwrap(), bytes);
    let last = seen.await.unwrap().expect("at least one progress report");
    assert_eq!(last.name, "a.bin");
    assert!(
        last.bytes > 0 && last.bytes <= bytes.len() as u64,
        "{last:?}"
    );

    let at_receiver = tokio::time::timeout(Duration::from_secs(5), reports.recv())
        .await
        .expect("a report within 5 s")
        .expect("one report");
    assert_eq!(at_receiver.name, "a.bin");
    assert!(at_receiver.verified, "{at_receiver:?}");

    let summary = rx.shutdown().await.unwrap();
    assert_eq!((summary.transfers, summary.failed), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_transfer_aborts_it_and_cancel_fails_it() {
    let mut rx = netblt::tokio::sink(local(), ReceiverOptions::new()).unwrap();
    let mut reports = rx.reports().unwrap();
    // 100 MB at 20 Mb/s would take 40 s.
    let tx = netblt::tokio::bench(rx.local_addr(), 100_000_000, slow());
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(tx);
    let r = tokio::time::timeout(Duration::from_secs(5), reports.recv())
        .await
        .expect("the receiver saw the transfer end within 5 s")
        .expect("its report");
    // The sender told the receiver why (RFC 998's QUIT, with a reason).
    assert!(!r.verified, "{r:?}");
    assert!(
        r.error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("interrupted")),
        "{r:?}"
    );

    // cancel(): the future resolves to the transfer's error.
    let tx = netblt::tokio::bench(rx.local_addr(), 100_000_000, slow());
    tokio::time::sleep(Duration::from_millis(300)).await;
    tx.cancel();
    let e = tokio::time::timeout(Duration::from_secs(5), tx)
        .await
        .expect("ended within 5 s")
        .unwrap_err();
    assert!(e.to_string().contains("interrupted"), "{e}");
    let summary = rx.shutdown().await.unwrap();
    assert_eq!((summary.transfers, summary.failed), (2, 2));
}

#[test]
fn outside_a_runtime_the_calls_fail_instead_of_panicking() {
    let t = netblt::tokio::send_file("/nonexistent", local(), SendOptions::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let e = rt.block_on(t).unwrap_err();
    assert!(e.to_string().contains("Tokio runtime"), "{e}");
    assert!(netblt::tokio::sink(local(), ReceiverOptions::new()).is_err());
}
