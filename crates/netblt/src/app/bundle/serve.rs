//! A directory asked for by `get`, sent as a bundle (decision M15): the
//! walk of `send DIR` ([`Bundle::walk_served`]: links inside never sent nor
//! followed, the directory itself never taken through one) and its
//! [`Packer`], which ends the stream by telling the client what it left
//! out.
//!
//! The walk runs on a thread of its own. The loop that serves every
//! transfer waits for it only [`WALK_BUDGET`]: a small tree (or a few large
//! files) is walked by then, so the RESPONSE can give the stream's length
//! for the client's progress bar and a directory that cannot be read is
//! refused at once; a large tree is walked while the transfer opens, and
//! the reader thread waits for it on its first read. The other transfers
//! are never held for a walk of a million entries.

use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::pack::Packer;
use super::{Bundle, FilesReport};
use crate::app::have::Skip;

/// How long the serving loop waits for a walk before it answers.
const WALK_BUDGET: Duration = Duration::from_millis(20);

/// A tree ready to be sent.
pub(crate) struct Served {
    /// The tar stream, as the transfer's reader.
    pub(crate) stream: Tree,
    /// The stream's expected length, when the walk ended in time (progress
    /// only: files may change before they are read).
    pub(crate) total: Option<u64>,
    /// What is sent and what is left out, as the packer counts it (the
    /// server's report).
    pub(crate) report: Arc<Mutex<FilesReport>>,
}

/// Starts sending the directory `path` (already opened and checked not to
/// be a link), without the files the client has (`skip`, M17: left out on
/// the walk's thread, counted unchanged, and said at the stream's end).
/// The error is a reason for the peer.
pub(crate) fn serve_tree(path: &Path, skip: Option<Skip>) -> Result<Served, String> {
    let (tx, rx) = mpsc::channel();
    let dir = path.to_path_buf();
    std::thread::Builder::new()
        .name("netblt-walk".into())
        .spawn(move || {
            let walked = Bundle::walk_served(&dir).map(|b| {
                let b = match &skip {
                    Some(s) => b.without(|i| s.has(i)),
                    None => b,
                };
                let total = b.stream_len();
                (b, total)
            });
            // The transfer may be gone by the end: nobody to tell.
            let _ = tx.send(walked);
        })
        .map_err(|e| format!("cannot start the walk: {e}"))?;
    let report = Arc::new(Mutex::new(FilesReport::default()));
    let (state, total) = match rx.recv_timeout(WALK_BUDGET) {
        Ok(walked) => {
            let (b, total) = walked?;
            (State::Packing(packer(b, &report)), Some(total))
        }
        Err(RecvTimeoutError::Timeout) => (State::Walking(rx), None),
        Err(RecvTimeoutError::Disconnected) => return Err("the walk failed".into()),
    };
    Ok(Served {
        stream: Tree {
            state,
            report: Arc::clone(&report),
        },
        total,
        report,
    })
}

fn packer(b: Bundle, report: &Arc<Mutex<FilesReport>>) -> Box<Packer> {
    Box::new(Packer::new(b, Arc::clone(report)).telling_unsent())
}

enum State {
    /// The walk has not ended yet.
    Walking(Receiver<Result<(Bundle, u64), String>>),
    Packing(Box<Packer>),
}

/// The stream of a served tree: waits for the walk on its first read (on
/// the transfer's reader thread), then packs.
pub(crate) struct Tree {
    state: State,
    report: Arc<Mutex<FilesReport>>,
}

impl Read for Tree {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let State::Walking(rx) = &self.state {
            let (b, _) = rx
                .recv()
                .map_err(|_| io::Error::other("the walk failed"))?
                .map_err(io::Error::other)?;
            self.state = State::Packing(packer(b, &self.report));
        }
        match &mut self.state {
            State::Packing(p) => p.read(buf),
            State::Walking(_) => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{EntryMeta, Parser, Refusal, Unsent, Visitor};
    use super::*;

    /// Names and what the stream says was left out.
    #[derive(Default)]
    struct Seen(Vec<String>, Vec<Unsent>);
    impl Visitor for Seen {
        fn dir(&mut self, m: &EntryMeta) {
            self.0.push(String::from_utf8_lossy(&m.name).into());
        }
        fn file_start(&mut self, m: &EntryMeta) {
            self.0.push(String::from_utf8_lossy(&m.name).into());
        }
        fn data(&mut self, _: &[u8]) -> Result<(), String> {
            Ok(())
        }
        fn file_end(&mut self) {}
        fn refused(&mut self, r: Refusal) {
            panic!("{r:?}");
        }
        fn unsent(&mut self, u: Unsent) {
            self.1.push(u);
        }
    }

    fn read_all(mut r: impl Read) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        out
    }

    /// The tree's stream ends with what the walk and the packer left out:
    /// the link (counted) and the file that went away (listed).
    #[test]
    fn a_served_tree_tells_what_it_left_out() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a"), b"alpha").unwrap();
        std::fs::write(root.join("sub/gone"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("sub/link")).unwrap();
        let report = Arc::new(Mutex::new(FilesReport::default()));
        let b = Bundle::walk_served(&root).unwrap();
        let tree = Tree {
            state: State::Packing(packer(b, &report)),
            report: Arc::clone(&report),
        };
        std::fs::remove_file(root.join("sub/gone")).unwrap();
        let stream = read_all(tree);
        let mut seen = Seen::default();
        let mut p = Parser::new();
        p.push(&stream, &mut seen).unwrap();
        p.finish().unwrap();
        assert_eq!(seen.0, ["tree", "tree/a", "tree/sub"]);
        let failed = super::super::FileFailure::new("tree/sub/gone", "no such file");
        assert_eq!(
            seen.1,
            [Unsent::NotRegular(1), Unsent::Failed(failed.clone())]
        );
        let r = report.lock().unwrap();
        assert_eq!((r.files, r.dirs, r.not_regular), (1, 2, 1));
        // Here the failure has its kind; the stream carries its words only.
        let here = super::super::FileFailure {
            io: Some(std::io::ErrorKind::NotFound),
            ..failed
        };
        assert_eq!(r.failed, [here]);
    }

    /// Whether the walk ends before the answer or after, the stream is the
    /// tree's, and a link asked for is refused (at once, or at the first
    /// read), never followed.
    #[test]
    fn a_tree_is_served_and_a_link_to_one_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink(&root, t.path().join("link")).unwrap();
        let served = serve_tree(&root, None).unwrap();
        let mut seen = Seen::default();
        Parser::new()
            .push(&read_all(served.stream), &mut seen)
            .unwrap();
        assert_eq!(seen.0, ["tree", "tree/sub", "tree/sub/f"]);
        assert_eq!(served.report.lock().unwrap().files, 1);
        let why = match serve_tree(&t.path().join("link"), None) {
            Err(why) => why,
            Ok(mut s) => s.stream.read(&mut [0u8; 512]).unwrap_err().to_string(),
        };
        assert!(why.contains("symbolic link"), "{why}");
    }

    /// A walk that ends after the answer is waited for by the first read.
    #[test]
    fn a_late_walk_is_waited_for_by_the_reader() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("f"), b"x").unwrap();
        let (tx, rx) = mpsc::channel();
        let report = Arc::new(Mutex::new(FilesReport::default()));
        let tree = Tree {
            state: State::Walking(rx),
            report: Arc::clone(&report),
        };
        let walked = Bundle::walk_served(&root).map(|b| (b, 0));
        let h = std::thread::spawn(move || read_all(tree));
        tx.send(walked).unwrap();
        let stream = h.join().unwrap();
        let mut seen = Seen::default();
        Parser::new().push(&stream, &mut seen).unwrap();
        assert_eq!(seen.0, ["tree", "tree/f"]);
        assert_eq!(report.lock().unwrap().files, 1);
        // A walk that failed fails the read, with its reason.
        let (tx, rx) = mpsc::channel();
        let mut tree = Tree {
            state: State::Walking(rx),
            report,
        };
        tx.send(Err("permission denied".into())).unwrap();
        let e = tree.read(&mut [0u8; 512]).unwrap_err();
        assert_eq!(e.to_string(), "permission denied");
    }
}
