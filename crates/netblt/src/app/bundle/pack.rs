//! The sender's side of a bundle: a [`Read`] that produces the tar stream
//! on the fly, file after file, for the stream path (`Input::Stream`) to cut
//! into NETBLT buffers and hash. Nothing is staged on disk.
//!
//! A file is opened when its turn comes, with `O_NOFOLLOW` (a file replaced
//! by a link since the walk is skipped, not followed), and its size, mode
//! and time are read then (`fstat`). Files up to [`WHOLE`] bytes are read
//! whole before their header is written, so the header's size is what was
//! read even if the file changes meanwhile; a larger file is streamed from
//! the size at open: it may grow (we send the first `size` bytes), but if
//! it shrinks the transfer fails, as for a single file (decision F5). A
//! file that cannot be opened or read is skipped and reported.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::{Arc, Mutex};

use super::format::{padding, write_header, write_unsent, EntryKind, EntryMeta, Mtime, END};
use super::walk::{Bundle, Item};
use super::{FileFailure, FilesReport};
use crate::app::io_reason;

/// Files up to this size are read whole before their header goes out.
pub(crate) const WHOLE: u64 = 1 << 20;

/// What is being handed out.
enum Body {
    /// Nothing: take the next entry.
    None,
    /// The file's bytes, read whole (`body[pos..]`).
    Memory,
    /// A large file, `left` bytes still to read from it.
    Stream { file: File, left: u64, name: String },
}

/// See the module docs.
pub(crate) struct Packer {
    items: std::vec::IntoIter<Item>,
    /// Header bytes not yet handed out (`head[head_pos..]`).
    head: Vec<u8>,
    head_pos: usize,
    body: Body,
    mem: Vec<u8>,
    mem_pos: usize,
    /// Zero bytes still due after the body.
    pad: usize,
    ended: bool,
    report: Arc<Mutex<FilesReport>>,
    /// The stream ends by telling its reader what was left out (a
    /// directory served to `get`, M15).
    tell_unsent: bool,
}

impl Packer {
    /// A packer for `bundle`; `report` counts what was sent and skipped.
    pub(crate) fn new(bundle: Bundle, report: Arc<Mutex<FilesReport>>) -> Packer {
        if let Ok(mut r) = report.lock() {
            for s in &bundle.skipped {
                r.fail(s.clone());
            }
            r.not_regular += bundle.not_regular;
            r.unchanged += bundle.left_out.0;
            r.unchanged_bytes += bundle.left_out.1;
        }
        Packer {
            items: bundle.items.into_iter(),
            head: Vec::with_capacity(4096),
            head_pos: 0,
            body: Body::None,
            mem: Vec::new(),
            mem_pos: 0,
            pad: 0,
            ended: false,
            report,
            tell_unsent: false,
        }
    }

    /// Ends the stream with what was left out ([`write_unsent`]): a server
    /// sending a directory to `get` tells the client, which cannot see the
    /// server's walk (M15). `send DIR` does not: its sender reports its own
    /// skips, and the receiver would count them as its failures.
    pub(crate) fn telling_unsent(mut self) -> Packer {
        self.tell_unsent = true;
        self
    }

    fn note(&self, f: impl FnOnce(&mut FilesReport)) {
        if let Ok(mut r) = self.report.lock() {
            f(&mut r);
        }
    }

    /// Queues the next entry's header (and, for a small file, its bytes),
    /// or, when a small file and its header fit in `room`, puts them there
    /// whole: [`Next`].
    fn next_entry(&mut self, room: &mut [u8]) -> Next {
        self.head.clear();
        self.head_pos = 0;
        self.mem.clear();
        self.mem_pos = 0;
        while let Some(it) = self.items.next() {
            let name = String::from_utf8_lossy(&it.name).into_owned();
            if it.kind == EntryKind::Dir {
                let meta = EntryMeta {
                    name: it.name,
                    kind: EntryKind::Dir,
                    size: 0,
                    mode: it.mode,
                    mtime: it.mtime,
                };
                write_header(&meta, &mut self.head);
                self.note(|r| r.dirs += 1);
                return Next::Queued;
            }
            match open_file(&it) {
                Err(e) => {
                    self.note(|r| r.fail(FileFailure::io(name, &e)));
                    continue;
                }
                Ok((mut file, meta)) => {
                    let size = meta.size;
                    if size <= WHOLE {
                        match self.direct(&mut file, meta.clone(), room) {
                            Ok(Some(k)) => return Next::Direct(k),
                            Ok(None) => {}
                            Err(e) => {
                                self.head.clear();
                                self.note(|r| r.fail(FileFailure::io(name, &e)));
                                continue;
                            }
                        }
                        // Read it whole (one more byte to see the end); the
                        // header then says what was read.
                        let mut take = (&mut file).take(size);
                        if let Err(e) = take.read_to_end(&mut self.mem) {
                            self.mem.clear();
                            self.note(|r| r.fail(FileFailure::io(name, &e)));
                            continue;
                        }
                        let n = self.mem.len() as u64;
                        write_header(&EntryMeta { size: n, ..meta }, &mut self.head);
                        self.body = Body::Memory;
                        self.pad = padding(n);
                        self.note(|r| {
                            r.files += 1;
                            r.bytes += n;
                        });
                    } else {
                        write_header(&meta, &mut self.head);
                        self.body = Body::Stream {
                            file,
                            left: size,
                            name,
                        };
                        self.pad = padding(size);
                        self.note(|r| {
                            r.files += 1;
                            r.bytes += size;
                        });
                    }
                    return Next::Queued;
                }
            }
        }
        if self.ended {
            return Next::End;
        }
        self.ended = true;
        if self.tell_unsent {
            if let Ok(r) = self.report.lock() {
                write_unsent(&r, &mut self.head);
            }
        }
        self.head.extend_from_slice(&END);
        Next::Queued
    }

    /// A small file straight into `room` (header, bytes, padding) when all
    /// of it fits: one copy fewer than through `mem` (the sender's reader
    /// spent 8 % of its time in that copy with 10,000 files of 1-64 KiB).
    /// `None`: it does not fit; nothing was read.
    fn direct(
        &mut self,
        file: &mut File,
        meta: EntryMeta,
        room: &mut [u8],
    ) -> io::Result<Option<usize>> {
        let size = meta.size;
        self.head.clear();
        write_header(&meta, &mut self.head);
        let h = self.head.len();
        let end = h as u64 + size + padding(size) as u64;
        if end > room.len() as u64 {
            self.head.clear();
            return Ok(None);
        }
        // At most `size` bytes, as the header says; fewer if it shrank.
        let data = &mut room[h..h + size as usize];
        let mut got = 0;
        while got < data.len() {
            match file.read(&mut data[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if got as u64 != size {
            // The header then says what was read (its length does not
            // depend on a size this small).
            self.head.clear();
            write_header(
                &EntryMeta {
                    size: got as u64,
                    ..meta
                },
                &mut self.head,
            );
            if self.head.len() != h {
                return Err(io::Error::other("header changed length"));
            }
        }
        room[..h].copy_from_slice(&self.head);
        self.head.clear();
        let pad = padding(got as u64);
        room[h + got..h + got + pad].fill(0);
        self.note(|r| {
            r.files += 1;
            r.bytes += got as u64;
        });
        Ok(Some(h + got + pad))
    }
}

/// What [`Packer::next_entry`] did.
enum Next {
    /// Queued a header (and maybe bytes) to hand out.
    Queued,
    /// Wrote a whole entry of this many bytes into the room given.
    Direct(usize),
    /// No more entries.
    End,
}

/// Opens a file a walk found, never through a link (`ELOOP` if one was put
/// in its place) and without waiting on a FIFO put there. Also for the
/// large files sent on their own (`send_walked_file`, F21).
pub(crate) fn open_walked(path: &std::path::Path) -> io::Result<File> {
    File::options()
        .read(true)
        // A FIFO put in the file's place must not block the open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Opens a file of the walk again ([`open_walked`]) and reads its
/// metadata from the open file.
fn open_file(it: &Item) -> io::Result<(File, EntryMeta)> {
    let file = open_walked(&it.path)?;
    let m = file.metadata()?;
    if !m.is_file() {
        return Err(io::Error::other("no longer a regular file"));
    }
    let meta = EntryMeta {
        name: it.name.clone(),
        kind: EntryKind::File,
        size: m.len(),
        mode: m.mode() & 0o7777,
        mtime: Mtime {
            secs: m.mtime(),
            nanos: u32::try_from(m.mtime_nsec()).unwrap_or(0),
        },
    };
    Ok((file, meta))
}

impl Read for Packer {
    /// Fills `buf` as far as the stream goes (0: the end).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.head_pos < self.head.len() {
                let k = (self.head.len() - self.head_pos).min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&self.head[self.head_pos..self.head_pos + k]);
                self.head_pos += k;
                n += k;
                continue;
            }
            match &mut self.body {
                Body::Memory => {
                    let k = (self.mem.len() - self.mem_pos).min(buf.len() - n);
                    buf[n..n + k].copy_from_slice(&self.mem[self.mem_pos..self.mem_pos + k]);
                    self.mem_pos += k;
                    n += k;
                    if self.mem_pos == self.mem.len() {
                        self.body = Body::None;
                    }
                    continue;
                }
                Body::Stream { file, left, name } => {
                    if *left > 0 {
                        let want = (*left).min((buf.len() - n) as u64) as usize;
                        let k = match file.read(&mut buf[n..n + want]) {
                            Ok(0) => {
                                return Err(io::Error::other(format!(
                                    "{name}: file shrank while being sent"
                                )))
                            }
                            Ok(k) => k,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                return Err(io::Error::other(format!("{name}: {}", io_reason(&e))))
                            }
                        };
                        *left -= k as u64;
                        n += k;
                        continue;
                    }
                    self.body = Body::None;
                    continue;
                }
                Body::None => {}
            }
            if self.pad > 0 {
                let k = self.pad.min(buf.len() - n);
                buf[n..n + k].fill(0);
                self.pad -= k;
                n += k;
                continue;
            }
            match self.next_entry(&mut buf[n..]) {
                Next::Queued => {}
                Next::Direct(k) => n += k,
                Next::End => break,
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{Parser, Refusal, Visitor};
    use super::*;

    #[derive(Default)]
    struct Names(Vec<(String, u64, Vec<u8>)>);
    impl Visitor for Names {
        fn dir(&mut self, m: &EntryMeta) {
            self.0
                .push((String::from_utf8_lossy(&m.name).into(), 0, vec![]));
        }
        fn file_start(&mut self, m: &EntryMeta) {
            self.0
                .push((String::from_utf8_lossy(&m.name).into(), m.size, vec![]));
        }
        fn data(&mut self, b: &[u8]) -> Result<(), String> {
            self.0.last_mut().unwrap().2.extend_from_slice(b);
            Ok(())
        }
        fn file_end(&mut self) {}
        fn refused(&mut self, r: Refusal) {
            panic!("{r:?}");
        }
    }

    /// Small files go straight into the reader's room when they fit, and
    /// through `mem` when not (a room of 1 byte never fits): the stream is
    /// the same bytes either way, whatever the pieces asked for.
    #[test]
    fn the_stream_is_the_same_whatever_the_read_sizes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        std::fs::create_dir_all(&root).unwrap();
        for (i, len) in [0usize, 1, 511, 512, 513, 5000, 65_536, 70_001]
            .iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..*len).map(|j| (j * 7 + i) as u8).collect();
            std::fs::write(root.join(format!("f{i}")), data).unwrap();
        }
        let stream = |piece: usize| {
            let b = Bundle::walk(std::slice::from_ref(&root)).unwrap();
            let report = Arc::new(Mutex::new(FilesReport::default()));
            let mut p = Packer::new(b, Arc::clone(&report));
            let (mut out, mut buf) = (Vec::new(), vec![0u8; piece]);
            loop {
                let n = p.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            let r = report.lock().unwrap();
            assert_eq!((r.files, r.bytes), (8, 142_074), "piece {piece}");
            out
        };
        let whole = stream(1);
        for piece in [700, 4096, 10_000, 80_000, 300_000] {
            assert!(stream(piece) == whole, "piece {piece}");
        }
        let mut v = Names::default();
        let mut parser = Parser::new();
        parser.push(&whole, &mut v).unwrap();
        parser.finish().unwrap();
        assert_eq!(v.0.len(), 9);
        assert_eq!(v.0[8].2.len(), 70_001);
    }

    #[test]
    fn packs_a_tree_that_parses_back_and_skips_the_unreadable() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let big: Vec<u8> = (0..(WHOLE as usize + 700))
            .map(|i| (i % 253) as u8)
            .collect();
        std::fs::write(root.join("big"), &big).unwrap();
        std::fs::write(root.join("sub/small"), b"hello").unwrap();
        std::fs::write(root.join("sub/gone"), b"x").unwrap();
        let b = Bundle::walk(std::slice::from_ref(&root)).unwrap();
        let total = b.stream_len();
        let gone = b.items.iter().find(|i| i.name == b"r/sub/gone").unwrap();
        let gone_len = super::super::format::entry_len(&gone.meta());
        // Removed after the walk: skipped and reported, the rest goes.
        std::fs::remove_file(root.join("sub/gone")).unwrap();
        let report = Arc::new(Mutex::new(FilesReport::default()));
        let mut p = Packer::new(b, Arc::clone(&report));
        let mut out = Vec::new();
        let mut buf = vec![0u8; 10_000];
        loop {
            let n = p.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out.len() % 512, 0);
        // The estimate counted the file that went away.
        assert_eq!(out.len() as u64, total - gone_len);
        let mut v = Names::default();
        let mut parser = Parser::new();
        parser.push(&out, &mut v).unwrap();
        parser.finish().unwrap();
        let got: Vec<_> = v.0.iter().map(|(n, s, _)| (n.as_str(), *s)).collect();
        assert_eq!(
            got,
            [
                ("r", 0),
                ("r/big", big.len() as u64),
                ("r/sub", 0),
                ("r/sub/small", 5)
            ]
        );
        assert!(v.0[1].2 == big);
        let r = report.lock().unwrap();
        assert_eq!((r.files, r.dirs, r.bytes), (2, 2, big.len() as u64 + 5));
        assert_eq!(
            r.failed,
            [FileFailure {
                io: Some(std::io::ErrorKind::NotFound),
                ..FileFailure::new("r/sub/gone", "no such file")
            }]
        );
    }
}
