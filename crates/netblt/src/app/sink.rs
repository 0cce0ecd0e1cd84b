//! The data receiver's writer thread: buffers into a partial file (or a
//! writer, a handler, or nowhere for `--sink`), hashed on the way; the
//! trailing 32 bytes are the sender's digest, compared when the last buffer
//! arrives. The data's length need not be known: the last 32 bytes of the
//! stream are held back until the last buffer says they are the digest.

use std::io::Write;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::bundle::tally::Tally;
use super::bundle::unpack::Unpacker;
use super::bundle::FilesReport;
use super::have::Upload;
use super::meta::OFFSET_LEN;
use super::partial::PartFile;
use super::tree::TreeHasher;
use super::{AppError, Kind, DIGEST_LEN};
use crate::driver::Waker;
use crate::handler::{IncomingTransfer, SharedHandler};

/// Buffers queued for the disk before the network loop holds back.
const DEPTH: usize = 4;

/// Where received bytes go.
pub(crate) enum Target {
    /// Hashed and dropped (`--sink`).
    Discard,
    File(PartFile),
    /// Written in order to a writer (standard output).
    Writer(Box<dyn Write + Send>),
    /// Handed to the user's handler as they come.
    Handler(SharedHandler, IncomingTransfer),
    /// A bundle's tar stream, unpacked into a directory.
    Bundle(Box<Unpacker>),
    /// A fetched directory's tar stream, written in order to a writer and
    /// counted on the way (`get DIR -o -`, decision M15).
    Tar(Box<dyn Write + Send>, Box<Tally>),
    /// A `get` client's list of what it has, kept by a serving receiver
    /// once verified (decision M17).
    Have(Box<Upload>),
}

impl Target {
    /// Tells a handler how its transfer ended.
    fn end(&self, verified: bool) {
        if let Target::Handler(h, t) = self {
            // Too late to fail the transfer: a panic in `end` is dropped.
            let _ = crate::handler::call(h, |h| {
                h.end(t, verified);
                Ok(())
            });
        }
    }
}

/// What the writer thread tells the network loop.
pub(crate) enum Output {
    /// A buffer's storage, for `Connection::recycle`.
    Storage(Vec<u8>),
    /// The last buffer was checked (and the file committed): the digest, or
    /// why not.
    /// With the data's length.
    /// No digest when the transfer carried none (K16).
    Verdict(Result<(Option<[u8; DIGEST_LEN]>, u64), AppError>),
    /// A resumed transfer starts at this offset (the sender's choice).
    From(u64),
    /// A bundle was unpacked: what was stored and what failed (before its
    /// verdict).
    Files(FilesReport),
}

/// Handle on a running writer thread.
pub(crate) struct Sink {
    input: Option<SyncSender<(Vec<u8>, bool)>>,
    output: Receiver<Output>,
    handle: Option<JoinHandle<()>>,
}

impl Sink {
    /// `size`: the data's length, if announced; `digest`: a BLAKE3 digest
    /// follows the data and is checked (always, but for a memory-to-memory
    /// test in an encrypted session whose sender asked for none, K16).
    pub(crate) fn spawn(
        size: Option<u64>,
        target: Target,
        digest: bool,
        waker: Arc<Waker>,
    ) -> Sink {
        let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, bool)>(DEPTH);
        let (otx, orx) = mpsc::channel::<Output>();
        let handle = std::thread::Builder::new()
            .name("netblt-write".into())
            .spawn(move || write_loop(size, target, digest, &rx, &otx, &waker))
            .ok();
        Sink {
            input: Some(tx),
            output: orx,
            handle,
        }
    }

    /// Hands over a received buffer; gives it back if the writer is behind.
    pub(crate) fn offer(&self, data: Vec<u8>, last: bool) -> Result<(), (Vec<u8>, bool)> {
        let Some(tx) = &self.input else {
            return Ok(()); // finished: drop it
        };
        match tx.try_send((data, last)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(v)) => Err(v),
            Err(TrySendError::Disconnected(_)) => Ok(()),
        }
    }

    pub(crate) fn poll(&self) -> Option<Output> {
        self.output.try_recv().ok()
    }

    /// Ends the thread: without a verdict given, the partial file is kept
    /// if a resume can use it, else removed. Waits for it.
    pub(crate) fn stop(&mut self) {
        self.input = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Bytes hashed and then written (receiver) or read and then hashed
/// (sender) at a time: well inside a core's L2 cache (1 MiB here), and a
/// whole number of BLAKE3's 1 KiB chunks (decision G4).
pub(crate) const CACHE_PIECE: usize = 256 << 10;

/// The writer's view of the stream: an optional offset (a resumed
/// transfer), then the data, then the 32-byte digest, held back until the
/// last buffer says where the stream ends.
struct Writer {
    target: Target,
    shown: String,
    /// The data's announced length.
    size: Option<u64>,
    tree: TreeHasher,
    /// Units already in the journal.
    recorded: usize,
    /// A digest follows the data (else every byte is data, unhashed).
    digest: bool,
    /// Where the data start in the file, and data bytes written since.
    from: u64,
    data: u64,
    /// The offset's bytes so far, while it is still expected.
    header: Option<Vec<u8>>,
    /// The stream's last bytes seen: the digest, if no more data follow.
    carry: Vec<u8>,
}

fn mismatch(shown: &str, what: &str) -> AppError {
    AppError::new(Kind::Failed, format!("{shown}: {what}"), "size mismatch")
        .because(crate::ErrorKind::Integrity)
}

impl Writer {
    /// The transfer starts at `from` (0: from scratch).
    fn start(&mut self, from: u64) -> Result<(), AppError> {
        if let Target::File(p) = &mut self.target {
            if from == 0 {
                p.start()?;
            } else {
                let cvs = p.resume(from)?;
                self.recorded = cvs.len();
                self.tree = TreeHasher::resume(cvs);
            }
        } else if from != 0 {
            return Err(mismatch(&self.shown, "unexpected resume offset"));
        }
        self.from = from;
        Ok(())
    }

    /// Data bytes, in order.
    fn data_out(&mut self, bytes: &[u8]) -> Result<(), AppError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let offset = self.data;
        self.data += bytes.len() as u64;
        if self.size.is_some_and(|s| self.from + self.data > s) {
            return Err(mismatch(&self.shown, "peer sent more data than announced"));
        }
        // A file is hashed and written piece by piece, so that the write
        // reads what the hash just read from the cache, not from memory
        // (decision G4); every other target gets the whole buffer.
        let piecewise = matches!(self.target, Target::File(_));
        if self.digest && !piecewise {
            self.tree.update(bytes);
        }
        match &mut self.target {
            Target::File(p) => {
                for piece in bytes.chunks(CACHE_PIECE) {
                    if self.digest {
                        self.tree.update(piece);
                    }
                    p.write(piece).map_err(|e| AppError::io(&self.shown, &e))?;
                }
                let cvs = self.tree.cvs();
                if cvs.len() > self.recorded {
                    p.record(&cvs[self.recorded..]);
                    self.recorded = cvs.len();
                }
            }
            Target::Writer(w) => w
                .write_all(bytes)
                .map_err(|e| AppError::io(&self.shown, &e))?,
            Target::Bundle(u) => u.push(bytes)?,
            Target::Have(u) => u.push(bytes)?,
            Target::Tar(w, t) => {
                // Counted first: a stream that is not tar goes no further.
                t.push(bytes)?;
                w.write_all(bytes)
                    .map_err(|e| AppError::io(&self.shown, &e))?;
            }
            Target::Handler(h, t) => {
                let r = crate::handler::call(h, |h| h.data(t, offset, bytes));
                if let Err(reason) = r {
                    return Err(AppError::new(
                        Kind::Failed,
                        format!("{}: {reason}", self.shown),
                        reason,
                    ));
                }
            }
            Target::Discard => {}
        }
        Ok(())
    }

    /// One buffer. `Ok(true)`: that was the last, and the digest is in
    /// `carry`.
    fn take(&mut self, buf: &[u8], last: bool, out: &dyn Fn(Output)) -> Result<bool, AppError> {
        let mut rest = buf;
        if let Some(h) = &mut self.header {
            let n = (OFFSET_LEN - h.len()).min(rest.len());
            h.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if h.len() == OFFSET_LEN {
                let mut b = [0u8; OFFSET_LEN];
                b.copy_from_slice(h);
                self.header = None;
                let from = u64::from_be_bytes(b);
                self.start(from)?;
                out(Output::From(from));
            } else if !last {
                return Ok(false);
            }
        }
        if !self.digest {
            self.data_out(rest)?;
            return Ok(last);
        }
        let n = self.carry.len() + rest.len();
        if !last && n <= DIGEST_LEN {
            self.carry.extend_from_slice(rest);
            return Ok(false);
        }
        if n < DIGEST_LEN || self.header.is_some() {
            return Err(mismatch(&self.shown, "transfer shorter than announced"));
        }
        // All but the stream's last 32 bytes are data.
        let emit = n - DIGEST_LEN;
        let from_carry = emit.min(self.carry.len());
        let head: Vec<u8> = self.carry.drain(..from_carry).collect();
        self.data_out(&head)?;
        let k = emit - from_carry;
        self.data_out(&rest[..k])?;
        self.carry.extend_from_slice(&rest[k..]);
        Ok(last)
    }
}

fn write_loop(
    size: Option<u64>,
    target: Target,
    digest: bool,
    input: &Receiver<(Vec<u8>, bool)>,
    output: &mpsc::Sender<Output>,
    waker: &Waker,
) {
    let shown = match &target {
        Target::File(t) => t.final_path.display().to_string(),
        Target::Discard => "sink".into(),
        Target::Writer(_) | Target::Tar(..) => "standard output".into(),
        Target::Handler(_, t) => t.name.clone(),
        Target::Bundle(u) => u.root_path().display().to_string(),
        Target::Have(_) => "(list of what the client has)".into(),
    };
    let send = |o: Output| {
        let _ = output.send(o);
        waker.wake();
    };
    // `keep`: leave a partial file a resume can use.
    let end = |target: Target, keep: bool| {
        target.end(false);
        match target {
            Target::File(t) => t.abandon(keep),
            Target::Bundle(u) => u.abandon(),
            _ => {}
        }
    };
    let resumable = matches!(&target, Target::File(p) if p.offer.is_some());
    let mut w = Writer {
        target,
        shown,
        size,
        tree: TreeHasher::new(),
        recorded: 0,
        digest,
        from: 0,
        data: 0,
        header: resumable.then(Vec::new),
        carry: Vec::with_capacity(2 * DIGEST_LEN),
    };
    if !resumable {
        if let Err(e) = w.start(0) {
            end(w.target, false);
            return send(Output::Verdict(Err(e)));
        }
    }
    while let Ok((buf, last)) = input.recv() {
        let r = w.take(&buf, last, &send);
        send(Output::Storage(buf));
        let done = match r {
            Ok(done) => done,
            Err(e) => {
                // Bad data or a local write error (a full disk): nothing
                // here is worth resuming from.
                end(w.target, false);
                return send(Output::Verdict(Err(e)));
            }
        };
        if !done {
            continue;
        }
        let shown = w.shown.clone();
        if w.size.is_some_and(|s| w.from + w.data != s) {
            end(w.target, false);
            let e = mismatch(&shown, "transfer shorter than announced");
            return send(Output::Verdict(Err(e)));
        }
        let digest = w.digest.then(|| w.tree.finalize());
        if digest.is_some_and(|d| d[..] != w.carry[..]) {
            end(w.target, false);
            let e = AppError::new(
                Kind::Failed,
                format!("{shown}: digest mismatch, data corrupted"),
                "digest mismatch",
            )
            .because(crate::ErrorKind::Integrity);
            return send(Output::Verdict(Err(e)));
        }
        let committed = match w.target {
            Target::File(t) => t.commit(),
            Target::Writer(mut o) => o.flush().map_err(|e| AppError::io(&shown, &e)),
            Target::Bundle(u) => u.commit().map(|r| send(Output::Files(r))),
            Target::Have(u) => {
                u.commit();
                Ok(())
            }
            Target::Tar(mut o, t) => o
                .flush()
                .map_err(|e| AppError::io(&shown, &e))
                .and_then(|()| t.finish())
                .map(|r| send(Output::Files(r))),
            other => {
                other.end(true);
                Ok(())
            }
        };
        let len = w.from + w.data;
        return send(Output::Verdict(committed.map(|()| (digest, len))));
    }
    // The connection ended before the last buffer: keep what a resume can
    // use.
    end(w.target, true);
}
