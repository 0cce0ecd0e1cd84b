//! Writing a file forward from a stream of bytes, leaving holes where
//! whole blocks are zero (as `cp --sparse=auto`, GNU tar's `--sparse` and
//! rsync's `--sparse` do). A bundle carries a sparse file as its zeros (its
//! format has no sparse entries: [`super::bundle::format`]), and so does a
//! single file's transfer; written out they took the disk's whole size: a
//! 4 GiB sparse file in a bundle filled a CI machine's disk (decision M10).
//! Reading the file back gives the same bytes either way.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Pieces are cut at multiples of this (the page size, and most file
/// systems' block): a hole is made of whole blocks only.
const BLOCK: u64 = 4096;

/// Writes `bytes` at `*pos` and moves `*pos` past them; a block-aligned
/// piece that is all zeros is not written, and the pieces between such
/// pieces go in one write each (one per call when there are none: the
/// receiver's write path, which wrote each call whole before). Callers write
/// a file only forward from a point where it ends (new, or just truncated
/// there), so what is never written reads back as zeros, whether the file
/// system makes a hole of it (a whole block) or zero-fills the rest of a
/// block that holds data. The file's length must then be set to `*pos` when
/// it is complete ([`set_length`]): a hole at the end is made by no write.
pub(crate) fn write_forward(file: &File, pos: &mut u64, bytes: &[u8]) -> std::io::Result<()> {
    let start = *pos;
    // The bytes not yet written, from `run` up to the piece being judged.
    let mut run = 0;
    let mut at = 0;
    while at < bytes.len() {
        let to_boundary = (BLOCK - (start + at as u64) % BLOCK) as usize;
        let end = (at + to_boundary).min(bytes.len());
        if bytes[at..end].iter().all(|&b| b == 0) {
            if run < at {
                file.write_all_at(&bytes[run..at], start + run as u64)?;
            }
            run = end;
        }
        at = end;
    }
    if run < bytes.len() {
        file.write_all_at(&bytes[run..], start + run as u64)?;
    }
    *pos = start + bytes.len() as u64;
    Ok(())
}

/// Lengthens `file` to `len` if the writes left it shorter (trailing zeros).
pub(crate) fn set_length(file: &File, len: u64) -> std::io::Result<()> {
    if file.metadata()?.len() < len {
        file.set_len(len)?;
    }
    Ok(())
}

/// A new file written from its first byte on, zero blocks skipped.
#[derive(Debug)]
pub(crate) struct HoleWriter {
    file: File,
    /// Bytes of the stream so far (the file's length once finished).
    pos: u64,
    /// The stream's last byte so far was zero (maybe not written).
    zero_end: bool,
}

impl HoleWriter {
    pub(crate) fn new(file: File) -> Self {
        HoleWriter {
            file,
            pos: 0,
            zero_end: false,
        }
    }

    /// The next bytes of the file ([`write_forward`]).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(&b) = bytes.last() {
            self.zero_end = b == 0;
        }
        write_forward(&self.file, &mut self.pos, bytes)
    }

    /// The file, its length set to the bytes written.
    pub(crate) fn finish(self) -> std::io::Result<File> {
        // A stream that ends in a non-zero byte ended with a write there:
        // the file has its length (no `fstat` per file of a bundle).
        if self.zero_end {
            set_length(&self.file, self.pos)?;
        }
        Ok(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn written(chunks: &[&[u8]]) -> (Vec<u8>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut w = HoleWriter::new(File::create(&p).unwrap());
        for c in chunks {
            w.write(c).unwrap();
        }
        drop(w.finish().unwrap());
        let blocks = std::fs::metadata(&p).unwrap().blocks();
        (std::fs::read(&p).unwrap(), blocks)
    }

    #[test]
    fn the_bytes_read_back_whatever_the_pieces() {
        let mut data = vec![0u8; 5 * BLOCK as usize + 123];
        data[BLOCK as usize + 7] = 1;
        data[4 * BLOCK as usize] = 2;
        *data.last_mut().unwrap() = 3;
        for piece in [1usize, 100, 4096, 5000, 9000, data.len()] {
            let chunks: Vec<&[u8]> = data.chunks(piece).collect();
            let (back, _) = written(&chunks);
            assert_eq!(back, data, "pieces of {piece}");
        }
    }

    #[test]
    fn zeros_at_the_end_keep_the_length() {
        let mut data = vec![7u8; 10];
        data.resize(3 * BLOCK as usize + 1, 0);
        let (back, _) = written(&[&data]);
        assert_eq!(back, data);
        let (back, _) = written(&[&[0u8; 3 * BLOCK as usize]]);
        assert_eq!(back.len(), 3 * BLOCK as usize);
        assert!(back.iter().all(|&b| b == 0));
    }

    /// 64 MiB of zeros take (almost) no disk. Checked only where the
    /// file system makes holes (tmpfs, ext4, xfs, btrfs do): a file
    /// lengthened by `set_len` alone has no blocks there.
    #[test]
    fn zero_blocks_become_holes() {
        let dir = tempfile::tempdir().unwrap();
        let probe = File::create(dir.path().join("probe")).unwrap();
        probe.set_len(1 << 20).unwrap();
        if probe.metadata().unwrap().blocks() > 0 {
            eprintln!("this file system makes no holes: not checked");
            return;
        }
        let zeros = vec![0u8; 1 << 20];
        let chunks: Vec<&[u8]> = (0..64).map(|_| &zeros[..]).collect();
        let (back, blocks) = written(&chunks);
        assert_eq!(back.len(), 64 << 20);
        // st_blocks counts 512-byte units: under 1 MiB allocated.
        assert!(blocks * 512 < 1 << 20, "{blocks} blocks allocated");
    }
}
