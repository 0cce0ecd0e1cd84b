//! The data sender's reader thread: file, stream (or pattern) bytes into
//! NETBLT buffers, hashed on the way, with the digest appended after the
//! data. A resumed transfer starts with the offset the data start at
//! (`meta`), after this end checked the peer's prefix against its own.

use std::io::{Read, Seek, SeekFrom};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::tree::{prefix_hash, unit_cv, TreeHasher, UNIT};
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
    shared: Arc<Mutex<Shared>>,
    handle: Option<JoinHandle<()>>,
    /// The last chunk was taken.
    pub(crate) done: bool,
}

/// What the reader thread tells the loop besides buffers.
#[derive(Default)]
struct Shared {
    digest: Option<[u8; DIGEST_LEN]>,
    /// A resumed transfer: the offset the data start at.
    from: Option<u64>,
    /// Data bytes read (the resumed prefix excluded).
    read: u64,
}

/// Where a sender's bytes come from.
pub(crate) enum Input {
    /// A file (or any reader) of the size announced.
    Read(Box<dyn Read + Send>),
    /// A file that may resume: `offer` is the peer's partial copy (its
    /// length and prefix hash), checked against the file before sending.
    File {
        file: std::fs::File,
        offer: Option<(u64, [u8; DIGEST_LEN])>,
    },
    /// A stream of unknown length (standard input): read to its end.
    Stream(Box<dyn Read + Send>),
    /// The memory-to-memory test's generated data.
    Pattern(Pattern),
}

/// A fixed pseudo-random pattern of [`Pattern::PERIOD`] bytes, repeated, for
/// memory-to-memory tests (`netblt bench`): the data a test application
/// keeps in memory, like iperf3's send buffer. Hashing and sending it cost
/// what they cost for any data.
pub(crate) struct Pattern {
    block: Vec<u8>,
    /// Hash it and append the digest (decision K16: not when every packet
    /// is authenticated and the peer agreed).
    digest: bool,
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
        Pattern {
            block,
            digest: true,
        }
    }

    /// The same pattern, sent with no digest after it.
    pub(crate) fn without_digest(mut self) -> Pattern {
        self.digest = false;
        self
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
    /// Starts reading into buffers of `buffer_size` (the negotiated size):
    /// `size` bytes, or (`None`) to the stream's end. `label` names it in
    /// errors.
    pub(crate) fn spawn(
        input: Input,
        label: String,
        size: Option<u64>,
        buffer_size: usize,
        waker: Arc<Waker>,
    ) -> Source {
        let (tx, rx) = mpsc::sync_channel::<Chunk>(DEPTH);
        let (rtx, rrx) = mpsc::channel::<Vec<u8>>();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let s2 = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("netblt-read".into())
            .spawn(move || {
                let mut f = Framer {
                    bsz: buffer_size.max(1),
                    buf: Vec::new(),
                    filled: 0,
                    fresh: true,
                    tx: &tx,
                    recycled: &rrx,
                    waker: &waker,
                };
                f.next_buffer();
                if let Err(Stop::Failed(e)) = read_loop(input, &label, size, &mut f, &s2) {
                    let _ = tx.send(Err(e));
                    waker.wake();
                }
            })
            .ok();
        Source {
            chunks: Some(rx),
            recycle: rtx,
            shared,
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
        self.shared.lock().ok().and_then(|d| d.digest)
    }

    /// A resumed transfer's starting offset, once the reader chose it.
    pub(crate) fn resumed_from(&self) -> Option<u64> {
        self.shared.lock().ok().and_then(|d| d.from)
    }

    /// Data bytes read so far (a stream's size, once done).
    pub(crate) fn bytes_read(&self) -> u64 {
        self.shared.lock().map_or(0, |d| d.read)
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

/// Why the reader stopped early.
enum Stop {
    /// The transfer ended (the loop dropped its end of the channel).
    Ended,
    Failed(AppError),
}

/// Cuts the byte stream into NETBLT buffers: every buffer holds exactly
/// the buffer size but the last, and the last is known when the digest is
/// appended (it always ends the stream), so no read-ahead is needed to
/// mark it.
struct Framer<'a> {
    bsz: usize,
    buf: Vec<u8>,
    filled: usize,
    /// `buf` is new storage (not a recycled buffer).
    fresh: bool,
    tx: &'a SyncSender<Chunk>,
    recycled: &'a Receiver<Vec<u8>>,
    waker: &'a Waker,
}

impl Framer<'_> {
    fn next_buffer(&mut self) {
        let reused = self.recycled.try_recv().ok();
        self.fresh = reused.is_none();
        self.buf = reused.unwrap_or_default();
        // Recycled buffers keep their length: no memset on the hot path.
        self.buf.resize(self.bsz, 0);
        self.filled = 0;
    }

    fn emit(&mut self, last: bool) -> Result<(), Stop> {
        let mut b = std::mem::take(&mut self.buf);
        b.truncate(self.filled);
        self.tx.send(Ok((b, last))).map_err(|_| Stop::Ended)?;
        self.waker.wake();
        Ok(())
    }

    /// Room left in the current buffer (a full one goes first).
    fn space(&mut self) -> Result<&mut [u8], Stop> {
        if self.filled == self.bsz {
            self.emit(false)?;
            self.next_buffer();
        }
        Ok(&mut self.buf[self.filled..])
    }

    fn push(&mut self, mut bytes: &[u8]) -> Result<(), Stop> {
        while !bytes.is_empty() {
            let room = self.space()?;
            let n = room.len().min(bytes.len());
            room[..n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Appends the digest and sends the last buffer.
    fn finish(&mut self, digest: &[u8; DIGEST_LEN]) -> Result<(), Stop> {
        self.push(digest)?;
        self.emit(true)
    }
}

fn shrank() -> Stop {
    // Without the name: the report that carries this error names the
    // transfer, and the tool printed "f.bin: f.bin: file shrank" (F14).
    Stop::Failed(AppError::new(
        Kind::Local,
        "file shrank while being sent",
        "sender's file changed",
    ))
}

fn read_err(label: &str, e: &std::io::Error) -> Stop {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        shrank()
    } else {
        Stop::Failed(AppError::io(label, e))
    }
}

fn read_loop(
    input: Input,
    label: &str,
    size: Option<u64>,
    f: &mut Framer<'_>,
    shared: &Mutex<Shared>,
) -> Result<(), Stop> {
    let set = |g: &dyn Fn(&mut Shared)| {
        if let Ok(mut s) = shared.lock() {
            g(&mut s);
        }
    };
    let mut tree = TreeHasher::new();
    let mut reader: Box<dyn Read + Send> = match input {
        Input::Pattern(p) => {
            let size = size.unwrap_or(0);
            let mut emitted = 0u64;
            while emitted < size {
                let whole = f.filled == 0 && !f.fresh;
                let room = f.space()?;
                let n = (room.len() as u64).min(size - emitted) as usize;
                // A recycled full buffer already holds the pattern from the
                // same phase when buffers are whole periods long (every full
                // buffer then starts at phase 0; only the last, partial one,
                // carries the digest, and it is never reused): rewriting it
                // would copy the same bytes over themselves. The digest is
                // computed over what the buffer holds, whatever it is.
                let same_phase = whole && n == room.len() && room.len() % Pattern::PERIOD == 0;
                if !same_phase {
                    p.fill_at(&mut room[..n], emitted);
                }
                if p.digest {
                    tree.update(&room[..n]);
                }
                f.filled += n;
                emitted += n as u64;
            }
            if !p.digest {
                // The last buffer is the data's last (never empty: a
                // digest-less sink is only asked for with data, see
                // `client::bench`).
                return f.emit(true);
            }
            let d = tree.finalize();
            set(&|s| s.digest = Some(d));
            return f.finish(&d);
        }
        Input::Read(r) | Input::Stream(r) => r,
        Input::File {
            mut file,
            offer: Some((from, prefix)),
        } => {
            // The peer holds the first `from` bytes of a file like ours:
            // hash our own prefix unit by unit; if it matches, start there
            // (the digest still covers the whole file: the units' hashes
            // are the first level of its tree).
            let mut cvs = Vec::new();
            let mut unit = vec![0u8; UNIT as usize];
            for i in 0..from / UNIT {
                file.read_exact(&mut unit)
                    .map_err(|e| read_err(label, &e))?;
                cvs.push(unit_cv(i, &unit));
            }
            let start = if prefix_hash(&cvs) == prefix && from % UNIT == 0 {
                tree = TreeHasher::resume(cvs);
                from
            } else {
                file.seek(SeekFrom::Start(0))
                    .map_err(|e| read_err(label, &e))?;
                0
            };
            set(&|s| s.from = Some(start));
            f.push(&start.to_be_bytes())?;
            let left = size.map(|s| s.saturating_sub(start));
            return copy(Box::new(file), label, left, f, &mut tree, shared);
        }
        Input::File { file, offer: None } => Box::new(file),
    };
    copy(&mut reader, label, size, f, &mut tree, shared)
}

/// Reads `left` bytes (or to the end) into buffers, hashing them, then
/// appends the digest.
fn copy(
    mut r: impl Read,
    label: &str,
    left: Option<u64>,
    f: &mut Framer<'_>,
    tree: &mut TreeHasher,
    shared: &Mutex<Shared>,
) -> Result<(), Stop> {
    let mut read = 0u64;
    loop {
        if left.is_some_and(|l| read >= l) {
            break;
        }
        let room = f.space()?;
        let want = left.map_or(room.len(), |l| (room.len() as u64).min(l - read) as usize);
        // Read a piece at a time and hash it while it is in the cache
        // (decision G4): one 8 MB read then one 8 MB hash went to memory
        // twice.
        let want = want.min(super::sink::CACHE_PIECE);
        let n = match r.read(&mut room[..want]) {
            Ok(0) if left.is_some() => return Err(shrank()),
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(label, &e)),
        };
        tree.update(&room[..n]);
        f.filled += n;
        read += n as u64;
        if let Ok(mut s) = shared.lock() {
            s.read = read;
        }
    }
    let d = tree.finalize();
    if let Ok(mut s) = shared.lock() {
        s.digest = Some(d);
    }
    f.finish(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a source to its end, recycling every buffer as soon as it is
    /// taken (as acknowledged buffers come back), and returns the stream.
    fn stream_of(
        input: Input,
        size: Option<u64>,
        bsz: usize,
    ) -> (Vec<u8>, Option<[u8; DIGEST_LEN]>) {
        let waker = Arc::new(Waker::new().unwrap());
        let mut src = Source::spawn(input, "test".into(), size, bsz, waker);
        let mut out = Vec::new();
        while !src.done {
            match src.try_next() {
                Some(Ok((buf, last))) => {
                    // Every buffer but the last is whole (the engine's rule).
                    assert!(last || buf.len() == bsz, "short buffer {}", buf.len());
                    assert!(!buf.is_empty());
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
            let (out, digest) = stream_of(Input::Pattern(Pattern::new(7)), Some(size), bsz);
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
        let (out, digest) = stream_of(input, Some(data.len() as u64), 65_536);
        let d: [u8; DIGEST_LEN] = blake3::hash(&data).into();
        assert_eq!(digest, Some(d));
        assert!(out[..data.len()] == data[..] && out[data.len()..] == d);
    }

    #[test]
    fn stream_of_unknown_length_ends_with_its_digest() {
        // Lengths where the digest fills, splits or starts a buffer.
        for n in [0usize, 1, 1000 - 32, 1000 - 31, 1000, 5000, 12_345] {
            let data: Vec<u8> = (0..n as u32).map(|i| (i * 7) as u8).collect();
            let input = Input::Stream(Box::new(std::io::Cursor::new(data.clone())));
            let (out, digest) = stream_of(input, None, 1000);
            let d: [u8; DIGEST_LEN] = blake3::hash(&data).into();
            assert_eq!(digest, Some(d), "n = {n}");
            assert!(out[..n] == data[..] && out[n..] == d, "n = {n}");
        }
    }

    #[test]
    fn resume_offer_is_checked_against_the_file() {
        let n = 3 * UNIT as usize + 500;
        let data: Vec<u8> = (0..n as u32).map(|i| (i * 13 + i / 7) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        let cvs: Vec<_> = (0..2u64)
            .map(|i| unit_cv(i, &data[(i * UNIT) as usize..((i + 1) * UNIT) as usize]))
            .collect();
        let d: [u8; DIGEST_LEN] = blake3::hash(&data).into();
        // The right prefix: offset 2 MiB, then the rest, then the digest of
        // the whole file.
        let good = Input::File {
            file: std::fs::File::open(&path).unwrap(),
            offer: Some((2 * UNIT, prefix_hash(&cvs))),
        };
        let (out, digest) = stream_of(good, Some(n as u64), 65_536);
        assert_eq!(digest, Some(d));
        assert_eq!(out[..8], (2 * UNIT).to_be_bytes());
        assert!(out[8..out.len() - 32] == data[2 * UNIT as usize..]);
        // A prefix that differs: offset 0, the whole file.
        let bad = Input::File {
            file: std::fs::File::open(&path).unwrap(),
            offer: Some((2 * UNIT, [7; DIGEST_LEN])),
        };
        let (out, digest) = stream_of(bad, Some(n as u64), 65_536);
        assert_eq!(digest, Some(d));
        assert_eq!(out[..8], 0u64.to_be_bytes());
        assert!(out[8..out.len() - 32] == data[..]);
    }
}
