//! An async adapter for Tokio (feature `tokio`): the blocking API run on
//! Tokio's blocking thread pool, with progress and reports on Tokio
//! channels and cancellation when dropped.
//!
//! ```no_run
//! # async fn demo() -> Result<(), netblt::Error> {
//! use netblt::{ReceiverOptions, SendOptions};
//!
//! let rx = netblt::tokio::serve_dir("127.0.0.1:0".parse().unwrap(), "incoming", ReceiverOptions::new())?;
//! let mut tx = netblt::tokio::send_file("big.iso", rx.local_addr(), SendOptions::new());
//! let mut progress = tx.progress().expect("taken once");
//! tokio::spawn(async move {
//!     while let Some(p) = progress.recv().await {
//!         println!("{} of {:?} bytes", p.bytes, p.total);
//!     }
//! });
//! let report = tx.await?; // Ok: the receiver verified and stored the file
//! let summary = rx.shutdown().await?;
//! # let _ = (report, summary);
//! # Ok(())
//! # }
//! ```
//!
//! Why an adapter and not an async driver: a transfer's loop paces bursts
//! to the microsecond with `ppoll` and its own timers (docs/architecture.md,
//! the driver), which a shared async reactor would delay; one blocking
//! thread per transfer is what the loop needs anyway. So each call starts
//! the blocking function at once on [`spawn_blocking`](::tokio::task::spawn_blocking)
//! and returns a handle; the engine and driver know nothing of Tokio.
//!
//! Cancellation uses the blocking API's stop flag ([`SendOptions::stop`],
//! [`ReceiverOptions::stop`], which these functions replace with their
//! own): dropping a [`Transfer`] before it ends aborts the transfer (the
//! loop sees the flag within 200 ms and tells the peer), and dropping a
//! [`ReceiverHandle`] stops the receiver. The blocking thread finishes in
//! the background either way.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use ::tokio::runtime::Handle;
use ::tokio::sync::mpsc;
use ::tokio::task::JoinHandle;

use crate::{
    DataHandler, Error, Progress, Receiver, ReceiverOptions, ReceiverSummary, SendOptions,
    TransferReport,
};

/// Progress updates queued for a slow reader of the channel; later ones are
/// dropped until it catches up (the transfer never waits for it).
const PROGRESS_QUEUE: usize = 16;
/// Transfer reports queued for a slow reader of a receiver's channel.
const REPORT_QUEUE: usize = 256;

/// A transfer running on the blocking pool: a future of its report.
///
/// Dropping it before it completes aborts the transfer.
#[derive(Debug)]
#[must_use = "dropping a Transfer aborts it"]
pub struct Transfer {
    job: Result<JoinHandle<Result<TransferReport, Error>>, Option<Error>>,
    stop: Arc<AtomicBool>,
    progress: Option<mpsc::Receiver<Progress>>,
}

impl Transfer {
    /// The progress channel (once: later calls return `None`). It yields a
    /// [`Progress`] about ten times a second and closes when the transfer
    /// ends.
    pub fn progress(&mut self) -> Option<mpsc::Receiver<Progress>> {
        self.progress.take()
    }

    /// Aborts the transfer; the future then resolves to its error.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Future for Transfer {
    type Output = Result<TransferReport, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.job {
            Ok(job) => Pin::new(job)
                .poll(cx)
                .map(|r| r.unwrap_or_else(|e| Err(joined(e)))),
            Err(e) => Poll::Ready(Err(e.take().unwrap_or_else(no_runtime))),
        }
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        // Harmless once the transfer has ended.
        self.cancel();
    }
}

/// Starts `run` on the blocking pool with this adapter's progress channel
/// and stop flag in `opts`.
fn start(
    mut opts: SendOptions,
    run: impl FnOnce(&SendOptions) -> Result<TransferReport, Error> + Send + 'static,
) -> Transfer {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
    let theirs = opts.progress.take();
    opts.progress = Some(Arc::new(move |p: &Progress| {
        if let Some(f) = &theirs {
            f(p);
        }
        let _ = tx.try_send(p.clone());
    }));
    opts.stop = Some(Arc::clone(&stop));
    // The options (and with them the channel's sender) are dropped when
    // `run` returns, which closes the progress channel.
    let job = Handle::try_current()
        .map(|h| h.spawn_blocking(move || run(&opts)))
        .map_err(|_| Some(no_runtime()));
    Transfer {
        job,
        stop,
        progress: Some(rx),
    }
}

fn no_runtime() -> Error {
    Error::InvalidOptions("netblt::tokio must be called from within a Tokio runtime".into())
}

fn joined(e: ::tokio::task::JoinError) -> Error {
    Error::Local(format!("the transfer's thread failed: {e}"))
}

/// [`crate::send_file`] on the blocking pool.
pub fn send_file(path: impl Into<PathBuf>, addr: SocketAddr, opts: SendOptions) -> Transfer {
    let path = path.into();
    start(opts, move |o| crate::send_file(&path, addr, o))
}

/// [`crate::send_file_as`] on the blocking pool.
pub fn send_file_as(
    path: impl Into<PathBuf>,
    name: impl Into<String>,
    addr: SocketAddr,
    opts: SendOptions,
) -> Transfer {
    let (path, name) = (path.into(), name.into());
    start(opts, move |o| crate::send_file_as(&path, &name, addr, o))
}

/// [`crate::send_bundle`] on the blocking pool (a directory in one
/// transfer; [`Bundle::walk`](crate::Bundle::walk) makes the bundle).
pub fn send_bundle(bundle: crate::Bundle, addr: SocketAddr, opts: SendOptions) -> Transfer {
    start(opts, move |o| crate::send_bundle(&bundle, addr, o))
}

/// [`crate::send_stream`] on the blocking pool: a reader of unknown
/// length (the reader runs on a blocking thread too).
pub fn send_stream(
    reader: impl std::io::Read + Send + 'static,
    name: impl Into<String>,
    addr: SocketAddr,
    opts: SendOptions,
) -> Transfer {
    let name = name.into();
    start(opts, move |o| crate::send_stream(reader, &name, addr, o))
}

/// [`crate::send_tar`] on the blocking pool: a tar stream for the
/// receiver to unpack.
pub fn send_tar(
    reader: impl std::io::Read + Send + 'static,
    name: impl Into<String>,
    addr: SocketAddr,
    opts: SendOptions,
) -> Transfer {
    let name = name.into();
    start(opts, move |o| crate::send_tar(reader, &name, addr, o))
}

/// [`crate::get_to_writer`] on the blocking pool (the writer runs on a
/// blocking thread too).
pub fn get_to_writer(
    addr: SocketAddr,
    name: impl Into<String>,
    writer: impl std::io::Write + Send + 'static,
    opts: SendOptions,
) -> Transfer {
    let name = name.into();
    start(opts, move |o| crate::get_to_writer(addr, &name, writer, o))
}

/// [`crate::send_reader`] on the blocking pool (the reader runs on a
/// blocking thread too).
pub fn send_reader(
    reader: impl std::io::Read + Send + 'static,
    size: u64,
    name: impl Into<String>,
    addr: SocketAddr,
    opts: SendOptions,
) -> Transfer {
    let name = name.into();
    start(opts, move |o| {
        crate::send_reader(reader, size, &name, addr, o)
    })
}

/// [`crate::get`] on the blocking pool.
pub fn get(
    addr: SocketAddr,
    name: impl Into<String>,
    dest: impl Into<PathBuf>,
    opts: SendOptions,
) -> Transfer {
    let (name, dest) = (name.into(), dest.into());
    start(opts, move |o| crate::get(addr, &name, &dest, o))
}

/// [`crate::bench`] on the blocking pool.
pub fn bench(addr: SocketAddr, size: u64, opts: SendOptions) -> Transfer {
    start(opts, move |o| crate::bench(addr, size, o))
}

/// A [`Receiver`] serving on the blocking pool.
///
/// Dropping it stops the receiver (in the background); [`shutdown`](Self::shutdown)
/// stops it and waits for its summary.
#[derive(Debug)]
#[must_use = "dropping a ReceiverHandle stops the receiver"]
pub struct ReceiverHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    job: Option<JoinHandle<Result<ReceiverSummary, Error>>>,
    reports: Option<mpsc::Receiver<TransferReport>>,
}

impl ReceiverHandle {
    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The channel of finished transfers' reports (once: later calls return
    /// `None`). It closes when the receiver stops.
    pub fn reports(&mut self) -> Option<mpsc::Receiver<TransferReport>> {
        self.reports.take()
    }

    /// Stops serving (transfers under way are aborted) and waits for the
    /// summary.
    pub async fn shutdown(mut self) -> Result<ReceiverSummary, Error> {
        self.stop.store(true, Ordering::Relaxed);
        self.finished().await
    }

    /// Waits until the receiver stops by itself
    /// ([`ReceiverOptions::max_transfers`]), and returns its summary.
    pub async fn finished(&mut self) -> Result<ReceiverSummary, Error> {
        match self.job.take() {
            Some(job) => job.await.unwrap_or_else(|e| Err(joined(e))),
            None => Err(Error::InvalidOptions(
                "the receiver was already waited for".into(),
            )),
        }
    }
}

impl Drop for ReceiverHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Binds a receiver at once (so that its address is known) and serves with
/// `serve` on the blocking pool.
fn receive(
    addr: SocketAddr,
    mut opts: ReceiverOptions,
    serve: impl FnOnce(Receiver) -> Result<ReceiverSummary, Error> + Send + 'static,
) -> Result<ReceiverHandle, Error> {
    let handle = Handle::try_current().map_err(|_| no_runtime())?;
    let stop = Arc::new(AtomicBool::new(false));
    opts.stop = Some(Arc::clone(&stop));
    let (tx, rx) = mpsc::channel(REPORT_QUEUE);
    let theirs = opts.on_transfer.take();
    opts.on_transfer = Some(Arc::new(
        move |r: &TransferReport, j: &crate::JunkCounts| {
            if let Some(f) = &theirs {
                f(r, j);
            }
            let _ = tx.try_send(r.clone());
        },
    ));
    let rx_end = Receiver::bind(addr, opts)?;
    let addr = rx_end.local_addr();
    Ok(ReceiverHandle {
        addr,
        stop,
        job: Some(handle.spawn_blocking(move || serve(rx_end))),
        reports: Some(rx),
    })
}

/// [`Receiver::serve_dir`] on the blocking pool.
pub fn serve_dir(
    addr: SocketAddr,
    dir: impl Into<PathBuf>,
    opts: ReceiverOptions,
) -> Result<ReceiverHandle, Error> {
    let dir = dir.into();
    receive(addr, opts, move |r| r.serve_dir(dir))
}

/// [`Receiver::sink`] on the blocking pool.
pub fn sink(addr: SocketAddr, opts: ReceiverOptions) -> Result<ReceiverHandle, Error> {
    receive(addr, opts, Receiver::sink)
}

/// [`Receiver::handle_with`] on the blocking pool: `handler` runs on the
/// receiver's blocking threads (hand data to async code through a channel
/// of your own).
pub fn handle_with(
    addr: SocketAddr,
    opts: ReceiverOptions,
    handler: impl DataHandler,
) -> Result<ReceiverHandle, Error> {
    receive(addr, opts, move |r| r.handle_with(handler))
}
