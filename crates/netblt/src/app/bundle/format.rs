//! The bundle's framing: a POSIX tar stream (ustar headers with pax
//! extended headers, POSIX.1-2001 "pax interchange format"), written and
//! read here a block at a time. The header fields are encoded and decoded
//! with the `tar` crate's [`tar::Header`]; what we add is the streaming (no
//! `Read` or `Write` in the way: the writer side fills NETBLT buffers, the
//! reader side is fed whole received buffers) and the policy of which entry
//! types we accept (decision M1).
//!
//! An entry is a 512-byte header, then its data padded with zeros to a
//! multiple of 512 bytes. We write:
//! * a directory: type `5`, name ending in `/`, no data;
//! * a regular file: type `0`, its bytes;
//! * before either, when needed, a pax header (type `x`) whose records
//!   override the next header's fields: `path` (a name that does not fit
//!   ustar's 100 + 155 bytes), `mtime` with nanoseconds (whenever they are
//!   not zero, or the time is before 1970), `size` (8 GiB or more);
//! * for a directory served to `get` (decision M15), when the sender left
//!   entries out, a pax global header (type `g`) just before the end, whose
//!   vendor records tell the client what ([`write_unsent`]);
//! * at the end, two zero blocks.
//!
//! We read those, and GNU tar's long names (type `L`) and global pax headers
//! (type `g`: only our own records are read, as [`Unsent`]), so `tar c dir | netblt send - HOST --tar` works too.
//! Every other type (symbolic and hard links, devices, FIFOs, sparse files)
//! is passed to the visitor as refused; its data are skipped.

use std::borrow::Cow;

use super::{FileFailure, FilesReport};

/// Bytes per tar block.
pub(crate) const BLOCK: usize = 512;
/// The largest pax or GNU long-name header we accept (a hostile stream
/// must not make us buffer without end).
const MAX_EXT: u64 = 1 << 20;
/// Largest size ustar's 11 octal digits hold (8 GiB - 1).
const USTAR_MAX_SIZE: u64 = (1 << 33) - 1;

/// Zero bytes that pad `n` bytes of data to a whole block.
pub(crate) fn padding(n: u64) -> usize {
    ((BLOCK as u64 - n % BLOCK as u64) % BLOCK as u64) as usize
}

/// A modification time: seconds and nanoseconds since 1970 (nanoseconds
/// always 0..1e9, seconds negative before 1970).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Mtime {
    pub(crate) secs: i64,
    pub(crate) nanos: u32,
}

impl Mtime {
    /// From nanoseconds since 1970.
    pub(crate) fn from_ns(ns: i64) -> Mtime {
        Mtime {
            secs: ns.div_euclid(1_000_000_000),
            nanos: ns.rem_euclid(1_000_000_000) as u32,
        }
    }

    /// As a pax `mtime` value: `S` or `S.NNNNNNNNN`, the exact decimal
    /// (`-1.5` for 1.5 s before 1970).
    fn pax(self) -> String {
        if self.nanos == 0 {
            return self.secs.to_string();
        }
        if self.secs >= 0 {
            format!("{}.{:09}", self.secs, self.nanos)
        } else {
            // secs + nanos/1e9 with secs < 0: e.g. -2 s + 0.5 s = -1.5 s.
            let total = i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos);
            let a = total.unsigned_abs();
            format!("-{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
        }
    }

    /// Parses a pax `mtime` value (decimal seconds, optional fraction).
    fn parse_pax(v: &str) -> Option<Mtime> {
        let (neg, v) = match v.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, v),
        };
        let (int, frac) = v.split_once('.').unwrap_or((v, ""));
        if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let secs: i64 = int.parse().ok()?;
        // Nanoseconds from the first 9 fraction digits.
        let mut nanos: u32 = 0;
        for i in 0..9 {
            let d = frac.as_bytes().get(i).map_or(0, |b| u32::from(b - b'0'));
            nanos = nanos * 10 + d;
        }
        if !neg {
            return Some(Mtime { secs, nanos });
        }
        let total = -(i128::from(secs) * 1_000_000_000 + i128::from(nanos));
        let ns = i64::try_from(total).ok()?;
        Some(Mtime::from_ns(ns))
    }
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
}

/// One entry's metadata, as written or as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryMeta {
    /// The name as in the stream (relative, `/`-separated, raw bytes;
    /// a directory's trailing `/` removed).
    pub(crate) name: Vec<u8>,
    pub(crate) kind: EntryKind,
    pub(crate) size: u64,
    /// Permission bits (`& 0o7777`).
    pub(crate) mode: u32,
    pub(crate) mtime: Mtime,
}

/// Appends one pax record (`"LEN key=value\n"`, LEN counting itself).
fn pax_record(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    let rest = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    out.extend_from_slice(len.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// A ustar header block with the fields we use set, checksummed.
fn ustar_block(
    name: &[u8],
    kind: tar::EntryType,
    size: u64,
    mode: u32,
    mtime_s: u64,
) -> [u8; BLOCK] {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode & 0o7777);
    h.set_mtime(mtime_s);
    h.set_uid(0);
    h.set_gid(0);
    if !set_ustar_name(&mut h, name) {
        // Readers take the name from the pax header; this one is for
        // readers without pax (a truncated hint, as GNU tar writes).
        let old = h.as_old_mut();
        let n = name.len().min(old.name.len() - 1);
        old.name[..n].copy_from_slice(&name[..n]);
    }
    h.set_cksum();
    *h.as_bytes()
}

/// Puts `name` in ustar's name (100) and prefix (155) fields if it fits,
/// split at a `/`.
fn set_ustar_name(h: &mut tar::Header, name: &[u8]) -> bool {
    let Some(u) = h.as_ustar_mut() else {
        return false;
    };
    if name.len() <= u.name.len() {
        u.name[..name.len()].copy_from_slice(name);
        return true;
    }
    // The prefix is everything before some '/', the name what follows it.
    for (i, &b) in name.iter().enumerate().rev() {
        if b != b'/' {
            continue;
        }
        let (pre, rest) = (&name[..i], &name[i + 1..]);
        if rest.len() > u.name.len() || rest.is_empty() {
            return false;
        }
        if pre.len() <= u.prefix.len() {
            u.prefix[..pre.len()].copy_from_slice(pre);
            u.name[..rest.len()].copy_from_slice(rest);
            return true;
        }
    }
    false
}

/// Writes an entry's header (with a pax header before it when needed) to
/// `out`. The data and [`padding`] follow, written by the caller.
pub(crate) fn write_header(e: &EntryMeta, out: &mut Vec<u8>) {
    let mut name = e.name.clone();
    let kind = match e.kind {
        EntryKind::Dir => {
            name.push(b'/');
            tar::EntryType::Directory
        }
        EntryKind::File => tar::EntryType::Regular,
    };
    let mut pax = Vec::new();
    let mut probe = tar::Header::new_ustar();
    if !set_ustar_name(&mut probe, &name) {
        pax_record(&mut pax, "path", &name);
    }
    if e.mtime.nanos != 0 || e.mtime.secs < 0 {
        pax_record(&mut pax, "mtime", e.mtime.pax().as_bytes());
    }
    if e.size > USTAR_MAX_SIZE {
        pax_record(&mut pax, "size", e.size.to_string().as_bytes());
    }
    if !pax.is_empty() {
        // The pax header's own name is only a hint for readers without
        // pax; GNU tar uses "./PaxHeaders/NAME".
        let hint = b"PaxHeader";
        out.extend_from_slice(&ustar_block(
            hint,
            tar::EntryType::XHeader,
            pax.len() as u64,
            0o644,
            0,
        ));
        out.extend_from_slice(&pax);
        out.resize(out.len() + padding(pax.len() as u64), 0);
    }
    let secs = u64::try_from(e.mtime.secs).unwrap_or(0);
    out.extend_from_slice(&ustar_block(&name, kind, e.size, e.mode, secs));
}

/// Bytes [`write_header`] writes for `e`, its data and padding included.
pub(crate) fn entry_len(e: &EntryMeta) -> u64 {
    let mut v = Vec::with_capacity(3 * BLOCK);
    write_header(e, &mut v);
    let data = if e.kind == EntryKind::File { e.size } else { 0 };
    v.len() as u64 + data + padding(data) as u64
}

/// The end of the stream: two zero blocks.
pub(crate) const END: [u8; 2 * BLOCK] = [0; 2 * BLOCK];

/// Pax keys of the records telling a fetching client what the sender left
/// out (vendor-prefixed, as POSIX asks: other readers ignore them).
const NOT_REGULAR_KEY: &str = "NETBLT.not_regular";
const UNSENT_KEY: &str = "NETBLT.unsent";
const MORE_UNSENT_KEY: &str = "NETBLT.more_unsent";
const UNCHANGED_KEY: &str = "NETBLT.unchanged";

/// What the sender of a fetched tree left out (decision M15), as read from
/// the stream's global header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unsent {
    /// Symbolic links, devices, sockets and FIFOs, never sent.
    NotRegular(u64),
    /// An entry the sender could not read.
    Failed(FileFailure),
    /// Failures beyond those listed.
    More(u64),
    /// Files left out because the client has them (M17): how many, and
    /// their bytes.
    Unchanged(u64, u64),
}

/// Writes, when `r` says the sender left something out, the global header
/// that tells the client what: its links and special files (a count), and
/// each entry it could not read ("reason<TAB>name": the `tar` crate's pax
/// reader splits records at newlines, so a name's newlines are written as
/// `\n`), and the files it left out because the client has them ("N B":
/// files and bytes, M17). Kept under [`MAX_EXT`]; what does not fit is
/// counted.
pub(crate) fn write_unsent(r: &FilesReport, out: &mut Vec<u8>) {
    let mut pax = Vec::new();
    if r.unchanged > 0 {
        let value = format!("{} {}", r.unchanged, r.unchanged_bytes);
        pax_record(&mut pax, UNCHANGED_KEY, value.as_bytes());
    }
    if r.not_regular > 0 {
        pax_record(
            &mut pax,
            NOT_REGULAR_KEY,
            r.not_regular.to_string().as_bytes(),
        );
    }
    let mut more = r.more_failed;
    for f in &r.failed {
        let reason = f.reason.replace(['\t', '\n'], " ");
        let value = format!("{reason}\t{}", f.name.replace('\n', "\\n"));
        // Room for the count record that may follow.
        if pax.len() + value.len() + UNSENT_KEY.len() + 64 > MAX_EXT as usize {
            more += 1;
            continue;
        }
        pax_record(&mut pax, UNSENT_KEY, value.as_bytes());
    }
    if more > 0 {
        pax_record(&mut pax, MORE_UNSENT_KEY, more.to_string().as_bytes());
    }
    if pax.is_empty() {
        return;
    }
    let hint = b"NetbltGlobalHead";
    let kind = tar::EntryType::XGlobalHeader;
    out.extend_from_slice(&ustar_block(hint, kind, pax.len() as u64, 0o644, 0));
    out.extend_from_slice(&pax);
    out.resize(out.len() + padding(pax.len() as u64), 0);
}

/// One of our global header's records, or `None` (another's key, or a
/// value that does not parse: a global header is informative, never a
/// reason to refuse the stream).
fn unsent_record(key: &[u8], value: &[u8]) -> Option<Unsent> {
    let count = || std::str::from_utf8(value).ok()?.parse().ok();
    if key == NOT_REGULAR_KEY.as_bytes() {
        return count().map(Unsent::NotRegular);
    }
    if key == MORE_UNSENT_KEY.as_bytes() {
        return count().map(Unsent::More);
    }
    if key == UNCHANGED_KEY.as_bytes() {
        let (n, bytes) = std::str::from_utf8(value).ok()?.split_once(' ')?;
        return Some(Unsent::Unchanged(n.parse().ok()?, bytes.parse().ok()?));
    }
    if key != UNSENT_KEY.as_bytes() {
        return None;
    }
    let value = String::from_utf8_lossy(value);
    let (reason, name) = value.split_once('\t')?;
    Some(Unsent::Failed(FileFailure::new(name, reason)))
}

/// One whole entry, header, `data` and padding, as the sender writes it
/// (tests and the fuzz targets make streams with it; `e.size` may lie
/// about `data`, as a hostile stream's does).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn append_entry(out: &mut Vec<u8>, e: &EntryMeta, data: &[u8]) {
    write_header(e, out);
    out.extend_from_slice(data);
    out.resize(out.len() + padding(data.len() as u64), 0);
}

/// Why an entry of the stream is not accepted (its data are skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The entry's name as given (lossy), for the failure line.
    pub(crate) name: String,
    pub(crate) reason: &'static str,
}

/// Receives the entries of a stream as [`Parser::push`] finds them.
pub(crate) trait Visitor {
    /// A directory.
    fn dir(&mut self, meta: &EntryMeta);
    /// A regular file starts; `data` calls follow with exactly `meta.size`
    /// bytes, then `file_end`.
    fn file_start(&mut self, meta: &EntryMeta);
    fn data(&mut self, bytes: &[u8]) -> Result<(), String>;
    fn file_end(&mut self);
    /// An entry we do not take (a link, a device...).
    fn refused(&mut self, r: Refusal);
    /// What the sender of a fetched tree says it left out (M15): only a
    /// client that asked for that tree takes it in.
    fn unsent(&mut self, _u: Unsent) {}
}

/// The stream is not a tar stream we can read: the whole transfer fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormatError(pub(crate) String);

/// What a pax or GNU long-name header said about the next entry.
#[derive(Debug, Default)]
struct Overrides {
    path: Option<Vec<u8>>,
    mtime: Option<Mtime>,
    size: Option<u64>,
}

enum State {
    /// Collecting a header block.
    Header,
    /// An extended header's data (`kind` b'x', b'L', b'g' or b'K'), `left` bytes
    /// still to come, then padding.
    Ext { kind: u8, left: u64, pad: usize },
    /// A file's data going to the visitor.
    Data { left: u64, pad: usize },
    /// Data (and padding) dropped: a refused entry's.
    Skip { left: u64 },
    /// One zero block seen: the end, if another follows.
    Zero,
    /// Both zero blocks seen; anything after is ignored.
    End,
    /// A data error: nothing more is taken.
    Broken,
}

/// A push parser: feed it the stream in pieces of any size.
pub(crate) struct Parser {
    state: State,
    block: [u8; BLOCK],
    have: usize,
    ext: Vec<u8>,
    over: Overrides,
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

fn malformed(what: impl Into<String>) -> FormatError {
    FormatError(format!("malformed bundle: {}", what.into()))
}

impl Parser {
    pub(crate) fn new() -> Parser {
        Parser {
            state: State::Header,
            block: [0; BLOCK],
            have: 0,
            ext: Vec::new(),
            over: Overrides::default(),
        }
    }

    /// The stream ended here: `Ok` if that is between entries.
    pub(crate) fn finish(&self) -> Result<(), FormatError> {
        match self.state {
            State::End | State::Zero => Ok(()),
            State::Header if self.have == 0 => Ok(()),
            State::Broken => Err(malformed("after an error")),
            _ => Err(malformed("the stream ends inside an entry")),
        }
    }

    /// Takes the next bytes of the stream. A visitor's data error (a
    /// write that failed) is its own business: it gets the rest of the
    /// file's bytes anyway and may drop them.
    pub(crate) fn push(
        &mut self,
        mut bytes: &[u8],
        v: &mut dyn Visitor,
    ) -> Result<(), FormatError> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Broken => return Err(malformed("after an error")),
                State::End => return Ok(()),
                State::Data { left, pad } => {
                    if *left > 0 {
                        let n = (*left).min(bytes.len() as u64) as usize;
                        let _ = v.data(&bytes[..n]);
                        *left -= n as u64;
                        bytes = &bytes[n..];
                        if *left == 0 {
                            v.file_end();
                        }
                    } else {
                        let n = (*pad).min(bytes.len());
                        *pad -= n;
                        bytes = &bytes[n..];
                    }
                    if let State::Data { left: 0, pad: 0 } = self.state {
                        self.state = State::Header;
                    }
                }
                State::Skip { left } => {
                    let n = (*left).min(bytes.len() as u64) as usize;
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        self.state = State::Header;
                    }
                }
                State::Ext { left, pad, .. } => {
                    if *left > 0 {
                        let n = (*left).min(bytes.len() as u64) as usize;
                        self.ext.extend_from_slice(&bytes[..n]);
                        *left -= n as u64;
                        bytes = &bytes[n..];
                    } else {
                        let n = (*pad).min(bytes.len());
                        *pad -= n;
                        bytes = &bytes[n..];
                    }
                    if let State::Ext {
                        kind,
                        left: 0,
                        pad: 0,
                    } = self.state
                    {
                        let r = self.end_ext(kind, v);
                        self.state = State::Header;
                        r?;
                    }
                }
                State::Header | State::Zero => {
                    let n = (BLOCK - self.have).min(bytes.len());
                    self.block[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                    self.have += n;
                    bytes = &bytes[n..];
                    if self.have == BLOCK {
                        self.have = 0;
                        if let Err(e) = self.header(v) {
                            self.state = State::Broken;
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// An extended header's data are complete. Long names (up to
    /// `MAX_EXT`) are kept only one byte past the longest name accepted:
    /// enough to be refused as too long, and no more in memory or in the
    /// failure list for a hostile stream of megabyte names.
    fn end_ext(&mut self, kind: u8, v: &mut dyn Visitor) -> Result<(), FormatError> {
        let data = std::mem::take(&mut self.ext);
        match kind {
            b'L' => {
                // GNU long name: the name, NUL-terminated.
                let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                self.over.path = Some(capped_name(&data[..end]));
            }
            b'x' => {
                for rec in tar::PaxExtensions::new(&data) {
                    let rec = rec.map_err(|_| malformed("bad pax record"))?;
                    match rec.key_bytes() {
                        b"path" => self.over.path = Some(capped_name(rec.value_bytes())),
                        b"mtime" => {
                            self.over.mtime = rec.value().ok().and_then(Mtime::parse_pax);
                        }
                        b"size" => {
                            let s = rec.value().ok().and_then(|s| s.parse().ok());
                            self.over.size = Some(s.ok_or_else(|| malformed("bad pax size"))?);
                        }
                        // Owners, atime, xattrs, charset: not kept.
                        _ => {}
                    }
                }
            }
            b'g' => {
                // Records of other writers (python's tarfile, pax's
                // defaults) are ignored, as they always were.
                for rec in tar::PaxExtensions::new(&data).map_while(Result::ok) {
                    if let Some(u) = unsent_record(rec.key_bytes(), rec.value_bytes()) {
                        v.unsent(u);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A whole header block is in `self.block`.
    fn header(&mut self, v: &mut dyn Visitor) -> Result<(), FormatError> {
        if self.block.iter().all(|&b| b == 0) {
            self.state = match self.state {
                State::Zero => State::End,
                _ => State::Zero,
            };
            return Ok(());
        }
        if matches!(self.state, State::Zero) {
            // A lone zero block inside the stream (some writers pad).
            self.state = State::Header;
        }
        let h = tar::Header::from_byte_slice(&self.block);
        let want = h
            .cksum()
            .map_err(|_| malformed("unreadable header checksum"))?;
        if want != checksum(&self.block) {
            return Err(malformed("header checksum mismatch"));
        }
        let typ = self.block[156];
        let over = std::mem::take(&mut self.over);
        let size = match over.size {
            Some(s) => s,
            None => h
                .entry_size()
                .map_err(|_| malformed("unreadable entry size"))?,
        };
        let pad = padding(size);
        if matches!(typ, b'x' | b'L' | b'g' | b'K') {
            if size > MAX_EXT {
                return Err(malformed("extended header too long"));
            }
            // A pax header's overrides apply to the next entry only; keep
            // any that came before it (an `L` then an `x`).
            self.over = over;
            // A GNU long link name (`K`) is read and dropped: links are
            // never made, and its data must not pass for a global header's
            // records (M15 reads those).
            let kind = typ;
            self.state = State::Ext {
                kind,
                left: size,
                pad,
            };
            if size == 0 && pad == 0 {
                let r = self.end_ext(kind, v);
                self.state = State::Header;
                r?;
            }
            return Ok(());
        }
        let raw: Cow<'_, [u8]> = match over.path {
            Some(p) => Cow::Owned(p),
            None => h.path_bytes(),
        };
        let mut name = raw.into_owned();
        let kind = match typ {
            b'0' | 0 | b'7' => Some(EntryKind::File),
            b'5' => Some(EntryKind::Dir),
            _ => None,
        };
        // A directory's name ends with '/'; so may an old-style one.
        if kind == Some(EntryKind::Dir) || name.ends_with(b"/") {
            while name.len() > 1 && name.ends_with(b"/") {
                name.pop();
            }
        }
        let skip = |p: &mut Parser| {
            let left = size.saturating_add(pad as u64);
            p.state = if left == 0 {
                State::Header
            } else {
                State::Skip { left }
            };
        };
        let Some(kind) = kind else {
            v.refused(Refusal {
                name: String::from_utf8_lossy(&name).into_owned(),
                reason: match typ {
                    b'1' => "hard links are not accepted",
                    b'2' => "symbolic links are not accepted",
                    b'3' | b'4' => "devices are not accepted",
                    b'6' => "FIFOs are not accepted",
                    b'S' => "sparse entries are not accepted",
                    _ => "entry type not accepted",
                },
            });
            skip(self);
            return Ok(());
        };
        let mtime = over.mtime.unwrap_or(Mtime {
            secs: h
                .mtime()
                .map_or(0, |s| i64::try_from(s).unwrap_or(i64::MAX)),
            nanos: 0,
        });
        let meta = EntryMeta {
            name,
            kind,
            size: if kind == EntryKind::File { size } else { 0 },
            mode: h.mode().unwrap_or(0o644) & 0o7777,
            mtime,
        };
        match kind {
            EntryKind::Dir => {
                v.dir(&meta);
                // A directory with data (not ours, but legal): dropped.
                skip(self);
            }
            EntryKind::File => {
                v.file_start(&meta);
                if size == 0 {
                    v.file_end();
                    self.state = State::Header;
                } else {
                    self.state = State::Data { left: size, pad };
                }
            }
        }
        Ok(())
    }
}

/// The header checksum: the sum of its bytes with the checksum field
/// counted as spaces (POSIX ustar).
fn checksum(block: &[u8; BLOCK]) -> u32 {
    block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                u32::from(b' ')
            } else {
                u32::from(b)
            }
        })
        .sum()
}

/// `name`, cut one byte past the longest accepted name (it is then refused
/// as too long, per entry, by the name check).
fn capped_name(name: &[u8]) -> Vec<u8> {
    name[..name.len().min(crate::app::meta::MAX_NAME + 1)].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A megabyte name is kept only one byte past the longest accepted.
    #[test]
    fn long_names_are_capped() {
        let max = crate::app::meta::MAX_NAME;
        assert_eq!(capped_name(&vec![b'a'; 1 << 20]).len(), max + 1);
        assert_eq!(capped_name(b"short"), b"short".to_vec());
    }

    #[derive(Default)]
    struct Collect {
        entries: Vec<(EntryMeta, Vec<u8>)>,
        refused: Vec<Refusal>,
        open: bool,
        unsent: Vec<Unsent>,
    }

    impl Visitor for Collect {
        fn dir(&mut self, meta: &EntryMeta) {
            self.entries.push((meta.clone(), Vec::new()));
        }
        fn file_start(&mut self, meta: &EntryMeta) {
            assert!(!self.open);
            self.open = true;
            self.entries.push((meta.clone(), Vec::new()));
        }
        fn data(&mut self, bytes: &[u8]) -> Result<(), String> {
            assert!(self.open);
            self.entries.last_mut().unwrap().1.extend_from_slice(bytes);
            Ok(())
        }
        fn file_end(&mut self) {
            assert!(self.open);
            self.open = false;
        }
        fn refused(&mut self, r: Refusal) {
            self.refused.push(r);
        }
        fn unsent(&mut self, u: Unsent) {
            self.unsent.push(u);
        }
    }

    /// M15: what a server left out rides in a global header at the end,
    /// kept under the parser's limit however long the list (the rest
    /// counted), read back as written, and passed over without a word by
    /// GNU tar (`get DIR -o - | tar x`); with it, the files left out
    /// because the client has them (M17).
    #[test]
    fn what_was_left_out_is_bounded_read_back_and_quiet_for_tar() {
        let mut r = FilesReport {
            not_regular: 2,
            more_failed: 5,
            unchanged: 3,
            unchanged_bytes: 4096,
            ..FilesReport::default()
        };
        r.fail(FileFailure::new("top/a\tb", "permission denied"));
        for i in 0..300 {
            // Longer than `FileFailure::new` keeps: only a list built by
            // hand can pass the limit.
            r.failed.push(FileFailure {
                name: format!("{i}{}", "n".repeat(5000)),
                reason: "r".repeat(100),
                io: None,
            });
        }
        let mut s = stream(&sample()[..2]);
        s.truncate(s.len() - END.len());
        write_unsent(&r, &mut s);
        s.extend_from_slice(&END);
        let mut c = Collect::default();
        let mut p = Parser::new();
        p.push(&s, &mut c).unwrap();
        p.finish().unwrap();
        assert_eq!(c.entries.len(), 2);
        let listed = c
            .unsent
            .iter()
            .filter(|u| matches!(u, Unsent::Failed(_)))
            .count();
        let more: u64 = c
            .unsent
            .iter()
            .map(|u| if let Unsent::More(n) = u { *n } else { 0 })
            .sum();
        assert!(listed > 100 && listed < 301, "{listed}");
        assert_eq!(listed as u64 + more, 306);
        assert_eq!(c.unsent[0], Unsent::Unchanged(3, 4096));
        assert_eq!(c.unsent[1], Unsent::NotRegular(2));
        assert_eq!(
            c.unsent[2],
            Unsent::Failed(FileFailure::new("top/a\tb", "permission denied"))
        );
        let t = tempfile::tempdir().unwrap();
        let Ok(mut child) = std::process::Command::new("tar")
            .args(["xf", "-", "-C"])
            .arg(t.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        else {
            return;
        };
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&s).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{err}");
        assert!(t.path().join("top").is_dir());
        assert!(!t.path().join("NetbltGlobalHead").exists());
    }

    /// A GNU long link name (`K`) is dropped, its data never read as a
    /// global header's records, whatever they look like.
    #[test]
    fn a_long_link_name_is_not_a_global_header() {
        let mut r = FilesReport {
            not_regular: 3,
            ..FilesReport::default()
        };
        r.fail(FileFailure::new("x", "permission denied"));
        let mut g = Vec::new();
        write_unsent(&r, &mut g);
        // The same records under a `K` header instead of a `g` one.
        let len = tar::Header::from_byte_slice(&g[..BLOCK])
            .entry_size()
            .unwrap();
        let records = &g[BLOCK..BLOCK + len as usize];
        let kind = tar::EntryType::GNULongLink;
        let mut s = ustar_block(b"././@LongLink", kind, len, 0o644, 0).to_vec();
        s.extend_from_slice(records);
        s.resize(s.len() + padding(len), 0);
        s.extend_from_slice(&stream(&sample()[..1]));
        let mut c = Collect::default();
        let mut p = Parser::new();
        p.push(&s, &mut c).unwrap();
        p.finish().unwrap();
        assert_eq!(c.entries.len(), 1);
        assert!(c.unsent.is_empty(), "{:?}", c.unsent);
        // Under a `g` header they are read.
        let mut s = g;
        s.extend_from_slice(&stream(&sample()[..1]));
        let mut c = Collect::default();
        Parser::new().push(&s, &mut c).unwrap();
        assert_eq!(c.unsent.len(), 2, "{:?}", c.unsent);
    }

    fn stream(entries: &[(EntryMeta, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (m, d) in entries {
            let before = out.len();
            write_header(m, &mut out);
            out.extend_from_slice(d);
            out.resize(out.len() + padding(d.len() as u64), 0);
            assert_eq!((out.len() - before) as u64, entry_len(m));
        }
        out.extend_from_slice(&END);
        out
    }

    fn meta(name: &[u8], kind: EntryKind, size: u64, mtime_ns: i64) -> EntryMeta {
        EntryMeta {
            name: name.to_vec(),
            kind,
            size,
            mode: 0o640,
            mtime: Mtime::from_ns(mtime_ns),
        }
    }

    fn sample() -> Vec<(EntryMeta, Vec<u8>)> {
        let long_dir = "d".repeat(120);
        let long_file = format!("{long_dir}/{}", "f".repeat(140));
        let deep = (0..40)
            .map(|i| format!("s{i}"))
            .collect::<Vec<_>>()
            .join("/");
        vec![
            (
                meta(b"top", EntryKind::Dir, 0, 1_234_567_890_000_000_000),
                vec![],
            ),
            (meta(b"top/empty", EntryKind::File, 0, 5), vec![]),
            (
                meta(b"top/one", EntryKind::File, 1, -1_500_000_000),
                vec![7],
            ),
            (meta(b"top/block", EntryKind::File, 512, 0), vec![1; 512]),
            (
                meta("top/odd name \n é".as_bytes(), EntryKind::File, 1000, 42),
                (0..1000u32).map(|i| i as u8).collect(),
            ),
            (meta(long_dir.as_bytes(), EntryKind::Dir, 0, 9), vec![]),
            (
                meta(long_file.as_bytes(), EntryKind::File, 3, 1),
                vec![1, 2, 3],
            ),
            (
                meta(deep.as_bytes(), EntryKind::File, 2, 999_999_999),
                vec![4, 5],
            ),
            (meta(b"\xff\xfe raw", EntryKind::File, 1, 0), vec![9]),
        ]
    }

    #[test]
    fn round_trip_in_pieces_of_every_size() {
        let entries = sample();
        let s = stream(&entries);
        for piece in [1, 7, 511, 512, 513, 4096, s.len()] {
            let mut p = Parser::new();
            let mut c = Collect::default();
            for chunk in s.chunks(piece) {
                p.push(chunk, &mut c).unwrap();
            }
            p.finish().unwrap();
            assert!(c.refused.is_empty());
            assert_eq!(c.entries, entries, "pieces of {piece}");
        }
    }

    #[test]
    fn sizes_past_ustar_travel_in_pax() {
        // 10 GiB: past ustar's 11 octal digits; the header alone is parsed
        // (the data would follow).
        let m = meta(b"huge", EntryKind::File, 10 << 30, 0);
        let mut out = Vec::new();
        write_header(&m, &mut out);
        assert_eq!(out.len(), 3 * BLOCK, "pax header, its records, the entry");
        let mut p = Parser::new();
        let mut c = Collect::default();
        p.push(&out, &mut c).unwrap();
        assert_eq!(c.entries[0].0.size, 10 << 30);
        assert!(p.finish().is_err(), "its data are still due");
    }

    #[test]
    fn pax_mtime_and_records() {
        for ns in [
            0i64,
            1,
            999_999_999,
            1_000_000_000,
            -1,
            -1_000_000_000,
            -1_500_000_000,
        ] {
            let m = Mtime::from_ns(ns);
            assert_eq!(Mtime::parse_pax(&m.pax()), Some(m), "{ns}: {}", m.pax());
        }
        assert_eq!(
            Mtime::parse_pax("-1.5").map(|m| (m.secs, m.nanos)),
            Some((-2, 500_000_000))
        );
        assert_eq!(Mtime::parse_pax("12.3").map(|m| m.nanos), Some(300_000_000));
        assert_eq!(Mtime::parse_pax("x"), None);
        // Record lengths count their own digits (9 -> 10 boundary).
        for vlen in 0..120 {
            let mut out = Vec::new();
            pax_record(&mut out, "path", &vec![b'a'; vlen]);
            let sp = out.iter().position(|&b| b == b' ').unwrap();
            let n: usize = std::str::from_utf8(&out[..sp]).unwrap().parse().unwrap();
            assert_eq!(n, out.len());
        }
    }

    #[test]
    fn system_tar_reads_our_stream() {
        // Interoperability: GNU tar (if installed) lists what we wrote.
        let Ok(mut child) = std::process::Command::new("tar")
            .args(["tvf", "-", "--full-time"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            return;
        };
        let s = stream(&sample()[..5]);
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&s).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("top/block") && text.contains("top/odd name"),
            "{text}"
        );
        assert!(text.contains("2009-02-13 23:31:30"), "{text}");
    }

    #[test]
    fn links_devices_and_bad_headers() {
        let mut out = Vec::new();
        for (name, typ) in [
            ("ln", tar::EntryType::Symlink),
            ("hard", tar::EntryType::Link),
            ("fifo", tar::EntryType::Fifo),
        ] {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(typ);
            h.set_path(name).unwrap();
            h.set_size(if typ == tar::EntryType::Fifo { 3 } else { 0 });
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            if typ == tar::EntryType::Fifo {
                out.extend_from_slice(&[1; 512]);
            }
        }
        let ok = meta(b"after", EntryKind::File, 2, 0);
        write_header(&ok, &mut out);
        out.extend_from_slice(&[5, 6]);
        out.resize(out.len() + padding(2), 0);
        out.extend_from_slice(&END);
        let mut p = Parser::new();
        let mut c = Collect::default();
        p.push(&out, &mut c).unwrap();
        let reasons: Vec<_> = c
            .refused
            .iter()
            .map(|r| (r.name.as_str(), r.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("ln", "symbolic links are not accepted"),
                ("hard", "hard links are not accepted"),
                ("fifo", "FIFOs are not accepted")
            ]
        );
        assert_eq!(c.entries, [(ok, vec![5, 6])]);
        // A flipped bit in a header: the stream is refused, not guessed at.
        let mut bad = stream(&sample());
        bad[3] ^= 1;
        let mut p = Parser::new();
        assert!(p.push(&bad, &mut Collect::default()).is_err());
        // Cut inside an entry: finish says so.
        let s = stream(&sample());
        let mut p = Parser::new();
        p.push(&s[..BLOCK * 3 + 10], &mut Collect::default())
            .unwrap();
        assert!(p.finish().is_err());
        // A refused entry claiming the largest size base-256 can say: its
        // data are skipped without overflow (and never come).
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_path("huge").unwrap();
        h.set_size(u64::MAX);
        h.set_cksum();
        let mut p = Parser::new();
        let mut c = Collect::default();
        p.push(h.as_bytes(), &mut c).unwrap();
        p.push(&[0; 4096], &mut c).unwrap();
        assert_eq!(c.refused.len(), 1);
        assert!(p.finish().is_err());
        // Junk never panics.
        let mut x = 1u32;
        for _ in 0..200 {
            let junk: Vec<u8> = (0..2048)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            let _ = Parser::new().push(&junk, &mut Collect::default());
        }
    }
}
