//! The data sender's reader thread: file (or pattern) bytes into NETBLT
//! buffers, hashed on the way, with the digest appended after the data.

use std::io::Read;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{AppError, Kind, DIGEST_LEN};
use crate::driver::Waker;

/// Buffers read ahead of the engine.
const DEPTH: usize = 4;

/// One NETBLT buffer's worth of the stream.
pub(crate) type Chunk = Result<(Vec<u8>, bool), AppError>;

/// Handle on a running reader thread.
pub(crate) struct Source {
    chunks: Option<Receiver<Chunk>>,
    recycle: Sender<Vec<u8>>,
    digest: Arc<Mutex<Option<[u8; DIGEST_LEN]>>>,
    handle: Option<JoinHandle<()>>,
    /// The last chunk was taken.
    pub(crate) done: bool,
}

/// Where a sender's bytes come from.
pub(crate) enum Input {
    /// A file (or any reader).
    Read(Box<dyn Read + Send>),
    /// The memory-to-memory test's generated data.
    Pattern(Pattern),
}

/// A fixed pseudo-random pattern of [`Pattern::PERIOD`] bytes, repeated, for
/// memory-to-memory tests (`netblt bench`): the data a test application
/// keeps in memory, like iperf3's send buffer. Hashing and sending it cost
/// what they cost for any data.
pub(crate) struct Pattern {
    block: Vec<u8>,
}

impl Pattern {
    /// The pattern's length: it repeats every 64 KiB.
    pub(crate) const PERIOD: usize = 1 << 16;

    pub(crate) fn new(seed: u64) -> Pattern {
        // xorshift: cheap and good enough to defeat any compression.
        let mut x = seed | 1;
        let block = (0..Self::PERIOD)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Pattern { block }
    }

    /// Writes the stream's bytes from `offset` on into `buf`.
    pub(crate) fn fill_at(&self, buf: &mut [u8], offset: u64) {
        let mut pos = (offset % Self::PERIOD as u64) as usize;
        let mut n = 0;
        while n < buf.len() {
            let src = &self.block[pos..];
            let k = src.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&src[..k]);
            n += k;
            pos = 0;
        }
    }
}

impl Source {
    /// Starts reading `size` bytes from `reader` into buffers of
    /// `buffer_size` (the negotiated size), `label` naming it in errors.
    pub(crate) fn spawn(
        mut input: Input,
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
                    &mut input,
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
    pub(crate) fn try_next(&mut self) -> Option<Chunk> {
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
                        Kind::Local,
                        "reader thread ended early",
                        "sender read error",
                    )))
                }
            }
        }
    }

    /// Gives an acknowledged buffer's storage back for reuse.
    pub(crate) fn recycle(&self, v: Vec<u8>) {
        let _ = self.recycle.send(v);
    }

    pub(crate) fn digest(&self) -> Option<[u8; DIGEST_LEN]> {
        self.digest.lock().ok().and_then(|d| *d)
    }

    /// Stops the thread (if still running) and waits for it.
    pub(crate) fn stop(&mut self) {
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
    input: &mut Input,
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
        let reused = recycled.try_recv().ok();
        let fresh = reused.is_none();
        let mut buf = reused.unwrap_or_default();
        // Recycled buffers keep their length: no memset on the hot path.
        buf.resize(want, 0);
        let payload = (size.saturating_sub(emitted)).min(want as u64) as usize;
        let filled = match input {
            Input::Read(r) => fill(&mut **r, &mut buf[..payload]),
            Input::Pattern(p) => {
                // A recycled full buffer already holds the pattern from the
                // same phase when buffers are whole periods long (every full
                // buffer then starts at phase 0; only the last, partial one,
                // carries the digest, and it is never reused): rewriting it
                // would copy the same bytes over themselves. The digest is
                // computed below over what the buffer holds, whatever it is.
                let same_phase = buffer_size % Pattern::PERIOD == 0 && payload == buffer_size;
                if fresh || !same_phase {
                    p.fill_at(&mut buf[..payload], emitted);
                }
                Ok(())
            }
        };
        if let Err(e) = filled {
            let err = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                AppError::new(
                    Kind::Local,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a source to its end, recycling every buffer as soon as it is
    /// taken (as acknowledged buffers come back), and returns the stream.
    fn stream_of(input: Input, size: u64, bsz: usize) -> (Vec<u8>, Option<[u8; DIGEST_LEN]>) {
        let waker = Arc::new(Waker::new().unwrap());
        let mut src = Source::spawn(input, "test".into(), size, bsz, waker);
        let mut out = Vec::new();
        while !src.done {
            match src.try_next() {
                Some(Ok((buf, _))) => {
                    out.extend_from_slice(&buf);
                    src.recycle(buf);
                }
                Some(Err(e)) => panic!("{}", e.message),
                None => std::thread::yield_now(),
            }
        }
        src.stop();
        (out, src.digest())
    }

    #[test]
    fn pattern_stream_is_the_pattern_then_its_digest_with_reused_buffers() {
        let p = Pattern::new(7);
        // Whole-period buffers (refills skipped) and odd ones (refilled).
        for bsz in [Pattern::PERIOD * 2, 100_003] {
            let size = 1_000_000u64;
            let (out, digest) = stream_of(Input::Pattern(Pattern::new(7)), size, bsz);
            let mut want = vec![0u8; size as usize];
            p.fill_at(&mut want, 0);
            let d: [u8; DIGEST_LEN] = blake3::hash(&want).into();
            assert_eq!(digest, Some(d), "bsz {bsz}");
            want.extend_from_slice(&d);
            assert!(out == want, "bsz {bsz}: stream differs");
        }
    }

    #[test]
    fn reader_stream_matches_its_input() {
        let data: Vec<u8> = (0..300_001u32).map(|i| (i * 31) as u8).collect();
        let input = Input::Read(Box::new(std::io::Cursor::new(data.clone())));
        let (out, digest) = stream_of(input, data.len() as u64, 65_536);
        let d: [u8; DIGEST_LEN] = blake3::hash(&data).into();
        assert_eq!(digest, Some(d));
        assert!(out[..data.len()] == data[..] && out[data.len()..] == d);
    }
}
