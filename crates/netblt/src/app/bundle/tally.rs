//! A fetched directory's tar stream handed to a writer as it is (`netblt
//! get HOST DIR -o -`, decision M15), read on the way only to count: the
//! report then says how many files, directories and bytes the stream held
//! and what the server left out, as it does for a tree unpacked here.
//! Nothing is written to disk: whoever reads the writer (`tar x`) unpacks.

use super::format::{EntryMeta, Parser, Refusal, Unsent, Visitor};
use super::{FileFailure, FilesReport};
use crate::app::{AppError, Kind};

/// See the module docs.
#[derive(Default)]
pub(crate) struct Tally {
    parser: Parser,
    counts: Counts,
}

#[derive(Default)]
struct Counts(FilesReport);

impl Visitor for Counts {
    fn dir(&mut self, _: &EntryMeta) {
        self.0.dirs += 1;
    }

    fn file_start(&mut self, meta: &EntryMeta) {
        self.0.files += 1;
        self.0.bytes = self.0.bytes.saturating_add(meta.size);
    }

    fn data(&mut self, _: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn file_end(&mut self) {}

    /// An entry our servers never send (a hostile one's link): listed,
    /// since what the reader of the stream makes of it is not ours to say.
    fn refused(&mut self, r: Refusal) {
        self.0.fail(FileFailure::new(r.name, r.reason));
    }

    fn unsent(&mut self, u: Unsent) {
        self.0.left_out_by_sender(u);
    }
}

impl Tally {
    /// The next bytes of the stream. A stream that is not tar fails the
    /// transfer (its reader would fail too).
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), AppError> {
        self.parser
            .push(bytes, &mut self.counts)
            .map_err(|e| AppError::new(Kind::Failed, e.0.clone(), e.0))
    }

    /// The whole stream arrived: what it held, if it ended between entries.
    pub(crate) fn finish(self) -> Result<FilesReport, AppError> {
        self.parser
            .finish()
            .map_err(|e| AppError::new(Kind::Failed, e.0.clone(), e.0))?;
        Ok(self.counts.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{append_entry, write_unsent, EntryKind, Mtime, END};
    use super::*;

    fn entry(out: &mut Vec<u8>, name: &str, kind: EntryKind, data: &[u8]) {
        let m = EntryMeta {
            name: name.as_bytes().to_vec(),
            kind,
            size: data.len() as u64,
            mode: 0o644,
            mtime: Mtime::default(),
        };
        append_entry(out, &m, data);
    }

    #[test]
    fn counts_what_the_stream_holds_and_what_the_server_left_out() {
        let mut s = Vec::new();
        entry(&mut s, "t", EntryKind::Dir, b"");
        entry(&mut s, "t/a", EntryKind::File, b"alpha");
        entry(&mut s, "t/b", EntryKind::File, &[7; 3000]);
        let mut left = FilesReport {
            not_regular: 2,
            ..FilesReport::default()
        };
        left.fail(FileFailure::new("t/new\nline", "permission denied"));
        write_unsent(&left, &mut s);
        s.extend_from_slice(&END);
        let mut t = Tally::default();
        for piece in s.chunks(700) {
            t.push(piece).unwrap();
        }
        let r = t.finish().unwrap();
        assert_eq!((r.files, r.dirs, r.bytes, r.not_regular), (2, 1, 3005, 2));
        assert_eq!(
            r.failed,
            [FileFailure::new(
                "t/new\\nline",
                "not sent by the server: permission denied"
            )]
        );
        // Cut inside an entry: refused at the end.
        let mut t = Tally::default();
        t.push(&s[..1500]).unwrap();
        assert!(t.finish().is_err());
        // Not tar at all: refused at once.
        let mut t = Tally::default();
        assert!(t.push(&[b'x'; 512]).is_err());
    }
}
