//! The data sender's reader thread: file (or pattern) bytes into NETBLT
//! buffers, hashed on the way, with the digest appended after the data.

use std::io::Read;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{AppError, DIGEST_LEN};
use crate::driver::Waker;
use crate::exit;

/// Buffers read ahead of the engine.
const DEPTH: usize = 4;

/// One NETBLT buffer's worth of the stream.
pub type Chunk = Result<(Vec<u8>, bool), AppError>;

/// Handle on a running reader thread.
pub struct Source {
    chunks: Option<Receiver<Chunk>>,
    recycle: Sender<Vec<u8>>,
    digest: Arc<Mutex<Option<[u8; DIGEST_LEN]>>>,
    handle: Option<JoinHandle<()>>,
    /// The last chunk was taken.
    pub done: bool,
}

/// A reader producing a fixed pseudo-random pattern, for memory-to-memory
/// tests: copying it costs what copying data out of an application costs.
pub struct Pattern {
    block: Vec<u8>,
    pos: usize,
}

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        // xorshift: cheap and good enough to defeat any compression.
        let mut x = seed | 1;
        let block = (0..(1usize << 16))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Pattern { block, pos: 0 }
    }
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let src = &self.block[self.pos..];
            let k = src.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&src[..k]);
            n += k;
            self.pos = (self.pos + k) % self.block.len();
        }
        Ok(n)
    }
}

impl Source {
    /// Starts reading `size` bytes from `reader` into buffers of
    /// `buffer_size` (the negotiated size), `label` naming it in errors.
    pub fn spawn(
        mut reader: Box<dyn Read + Send>,
        label: String,
        size: u64,
        buffer_size: usize,
        waker: Arc<Waker>,
    ) -> Source {
        let (tx, rx) = mpsc::sync_channel::<Chunk>(DEPTH);
        let (rtx, rrx) = mpsc::channel::<Vec<u8>>();
        let digest = Arc::new(Mutex::new(None));
        let d2 = Arc::clone(&digest);
        let handle = std::thread::Builder::new()
            .name("netblt-read".into())
            .spawn(move || {
                read_loop(
                    &mut *reader,
                    &label,
                    size,
                    buffer_size.max(1),
                    &tx,
                    &rrx,
                    &d2,
                    &waker,
                );
            })
            .ok();
        Source {
            chunks: Some(rx),
            recycle: rtx,
            digest,
            handle,
            done: false,
        }
    }

    /// The next buffer if one is ready.
    pub fn try_next(&mut self) -> Option<Chunk> {
        match self.chunks.as_ref()?.try_recv() {
            Ok(c) => {
                if matches!(c, Ok((_, true)) | Err(_)) {
                    self.done = true;
                }
                Some(c)
            }
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                if self.done {
                    None
                } else {
                    self.done = true;
                    Some(Err(AppError::new(
                        exit::LOCAL,
                        "reader thread ended early",
                        "sender read error",
                    )))
                }
            }
        }
    }

    /// Gives an acknowledged buffer's storage back for reuse.
    pub fn recycle(&self, v: Vec<u8>) {
        let _ = self.recycle.send(v);
    }

    pub fn digest(&self) -> Option<[u8; DIGEST_LEN]> {
        self.digest.lock().ok().and_then(|d| *d)
    }

    /// Stops the thread (if still running) and waits for it.
    pub fn stop(&mut self) {
        self.chunks = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        self.stop();
    }
}

#[allow(clippy::too_many_arguments)]
fn read_loop(
    reader: &mut dyn Read,
    label: &str,
    size: u64,
    buffer_size: usize,
    tx: &SyncSender<Chunk>,
    recycled: &Receiver<Vec<u8>>,
    digest_out: &Mutex<Option<[u8; DIGEST_LEN]>>,
    waker: &Waker,
) {
    let total = size + DIGEST_LEN as u64;
    let mut hasher = blake3::Hasher::new();
    let mut digest: Option<[u8; DIGEST_LEN]> = None;
    let mut emitted = 0u64; // stream bytes handed out
    while emitted < total {
        let want = (total - emitted).min(buffer_size as u64) as usize;
        let mut buf = recycled.try_recv().unwrap_or_default();
        // Recycled buffers keep their length: no memset on the hot path.
        buf.resize(want, 0);
        let payload = (size.saturating_sub(emitted)).min(want as u64) as usize;
        if let Err(e) = fill(reader, &mut buf[..payload]) {
            let err = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                AppError::new(
                    exit::LOCAL,
                    format!("{label}: file shrank while being sent"),
                    "sender's file changed",
                )
            } else {
                AppError::io(label, &e)
            };
            let _ = tx.send(Err(err));
            waker.wake();
            return;
        }
        hasher.update(&buf[..payload]);
        if payload < want {
            let d = *digest.get_or_insert_with(|| {
                let d: [u8; DIGEST_LEN] = hasher.finalize().into();
                if let Ok(mut g) = digest_out.lock() {
                    *g = Some(d);
                }
                d
            });
            // Stream offset of this buffer's first digest byte.
            let from = (emitted + payload as u64 - size) as usize;
            let n = want - payload;
            buf[payload..].copy_from_slice(&d[from..from + n]);
        }
        emitted += want as u64;
        let last = emitted == total;
        if tx.send(Ok((buf, last))).is_err() {
            return; // the transfer ended
        }
        waker.wake();
    }
}

fn fill(r: &mut dyn Read, mut buf: &mut [u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match r.read(buf) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
