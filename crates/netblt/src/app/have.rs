//! What a `get` client already has (decision M17): before it fetches a
//! directory again, the client uploads (op `have`, a WRITE transfer) the
//! keyed digests of (name, size, mtime) of the files below its destination
//! ([`super::same::digests_below`], M14's digest), under a token it draws;
//! the server keeps them here a minute, and the `get` that names the token
//! (`"skip"`) is sent without those files (rsync's quick check, the other
//! way round). With `--checksum` (decision M18) the digests are of (name,
//! size, contents) and the request says `"content":true`: the server then
//! hashes its files' contents on the walk's thread to compare.
//!
//! The lists are network input: the store is bounded in bytes (lists kept
//! and uploads under way together) and in lists, the oldest list going
//! first when room is needed; a list serves one `get`, from the address it
//! came from, within [`LIFETIME`].

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bundle::walk::Item;
use super::same::{item_digest, Quick, DIGEST, MAX_REPLY};
use super::{AppError, Kind};

/// Bytes of a token.
pub(crate) const TOKEN: usize = 16;
/// A list's name, drawn by the client.
pub(crate) type Token = [u8; TOKEN];

/// Digest bytes the store holds at most, kept and being uploaded: one
/// list as long as the longest `same` reply (4,000,000 files).
const MAX_BYTES: usize = MAX_REPLY;
/// Lists kept at most (each waits for one `get`, a round trip away).
const MAX_LISTS: usize = 32;
/// How long a list waits for its `get`.
pub(crate) const LIFETIME: Duration = Duration::from_secs(60);

/// The reason of every refusal of a list (the client then fetches
/// everything, as from a server older than M17).
pub(crate) const NOT_KEPT: &str = "the server cannot keep the list of what the client has";

/// The RESPONSE's note when a `get` names a list the server does not have.
pub(crate) const LIST_LOST: &str = "the server no longer had the list of the files here \
     (expired, used, or sent from another address): everything was sent, and files with \
     the same bytes were left as they were";

/// One client's list.
struct List {
    token: Token,
    key: [u8; 32],
    /// What the client's digests cover (M18).
    quick: Quick,
    peer: IpAddr,
    /// Sorted: looked up by binary search, 16 bytes a file and no more.
    digests: Vec<[u8; DIGEST]>,
    expires: Instant,
}

impl List {
    fn bytes(&self) -> usize {
        self.digests.len() * DIGEST
    }
}

/// The lists, and the bytes they and the uploads under way hold.
#[derive(Default)]
struct Lists {
    /// Oldest first.
    lists: VecDeque<List>,
    stored: usize,
    reserved: usize,
}

impl Lists {
    fn expire(&mut self, now: Instant) {
        while let Some(i) = self.lists.iter().position(|l| l.expires <= now) {
            self.remove(i);
        }
    }

    fn remove(&mut self, i: usize) -> Option<List> {
        let l = self.lists.remove(i)?;
        self.stored -= l.bytes();
        Some(l)
    }

    /// Room for `n` more bytes of an upload, the oldest lists dropped for
    /// it if need be; false if the uploads under way hold the rest.
    fn reserve(&mut self, n: usize, now: Instant) -> bool {
        self.expire(now);
        while self.stored + self.reserved + n > MAX_BYTES {
            if self.remove(0).is_none() {
                return false;
            }
        }
        self.reserved += n;
        true
    }

    /// A finished upload of `reserved` bytes becomes a list.
    fn insert(&mut self, list: List, reserved: usize) {
        self.reserved -= reserved.min(self.reserved);
        if let Some(i) = self.lists.iter().position(|l| l.token == list.token) {
            self.remove(i);
        }
        self.stored += list.bytes();
        self.lists.push_back(list);
        while self.lists.len() > MAX_LISTS {
            self.remove(0);
        }
    }

    /// The list `token` from `peer`, taken (one use); a list asked for from
    /// another address stays for its own client.
    fn take(&mut self, token: &Token, peer: IpAddr, now: Instant) -> Option<Skip> {
        self.expire(now);
        let i = self
            .lists
            .iter()
            .position(|l| &l.token == token && l.peer == peer)?;
        let l = self.remove(i)?;
        Some(Skip {
            key: l.key,
            quick: l.quick,
            digests: l.digests,
        })
    }
}

/// A serving receiver's lists (shared with the writer threads that
/// receive them).
#[derive(Clone, Default)]
pub(crate) struct HaveStore(Arc<Mutex<Lists>>);

impl HaveStore {
    fn with<T>(&self, f: impl FnOnce(&mut Lists) -> T) -> Option<T> {
        self.0.lock().ok().map(|mut l| f(&mut l))
    }

    /// An upload of a list under `token` from `peer`, of digests keyed
    /// with `key` that cover what `quick` says.
    pub(crate) fn upload(&self, token: Token, key: [u8; 32], quick: Quick, peer: IpAddr) -> Upload {
        Upload {
            store: self.clone(),
            token,
            key,
            quick,
            peer,
            digests: Vec::new(),
            partial: Vec::with_capacity(DIGEST),
            reserved: 0,
        }
    }

    /// What a `get` naming `token` leaves out, if the list is here, fresh,
    /// unused and from `peer`.
    pub(crate) fn take(&self, token: &Token, peer: IpAddr, now: Instant) -> Option<Skip> {
        self.with(|l| l.take(token, peer, now)).flatten()
    }

    /// The list a `get` names (`token`), if any, taken.
    pub(crate) fn look_up(&self, token: Option<Token>, peer: IpAddr, now: Instant) -> Listed {
        match token {
            None => Listed::NotNamed,
            Some(t) => self.take(&t, peer, now).map_or(Listed::Lost, Listed::Found),
        }
    }

    fn reserve(&self, n: usize, now: Instant) -> bool {
        self.with(|l| l.reserve(n, now)).unwrap_or(false)
    }

    fn release(&self, n: usize) {
        self.with(|l| l.reserved -= n.min(l.reserved));
    }
}

/// A list arriving (the `have` transfer's target): digests kept as they
/// come, each byte counted against the store's room first.
pub(crate) struct Upload {
    store: HaveStore,
    token: Token,
    key: [u8; 32],
    quick: Quick,
    peer: IpAddr,
    digests: Vec<[u8; DIGEST]>,
    /// A digest's first bytes, split across buffers.
    partial: Vec<u8>,
    reserved: usize,
}

impl Upload {
    /// More of the list; fails the transfer when the store has no room.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Result<(), AppError> {
        if !self.store.reserve(bytes.len(), Instant::now()) {
            return Err(AppError::new(
                Kind::Failed,
                format!("{NOT_KEPT}: too many digests"),
                NOT_KEPT,
            ));
        }
        self.reserved += bytes.len();
        while !bytes.is_empty() {
            let n = (DIGEST - self.partial.len()).min(bytes.len());
            self.partial.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if let Ok(d) = <[u8; DIGEST]>::try_from(&self.partial[..]) {
                self.digests.push(d);
                self.partial.clear();
            }
        }
        Ok(())
    }

    /// The whole list arrived, verified: kept for [`LIFETIME`] (a piece of
    /// a digest at the end is dropped: no file has it).
    pub(crate) fn commit(mut self) {
        self.keep(Instant::now());
    }

    fn keep(&mut self, now: Instant) {
        let mut digests = std::mem::take(&mut self.digests);
        digests.sort_unstable();
        digests.dedup();
        let list = List {
            token: self.token,
            key: self.key,
            quick: self.quick,
            peer: self.peer,
            digests,
            expires: now + LIFETIME,
        };
        let reserved = std::mem::take(&mut self.reserved);
        self.store.with(|l| l.insert(list, reserved));
    }
}

impl Drop for Upload {
    /// An upload that failed or was committed gives its room back (a
    /// committed one has none left: its list holds it).
    fn drop(&mut self) {
        self.store.release(self.reserved);
    }
}

/// What a `get` said of the client's list, looked up.
pub(crate) enum Listed {
    /// No list named (an older client, a first fetch, `--ignore-times`).
    NotNamed,
    Found(Skip),
    /// Named but not here (expired, used, another address): everything is
    /// sent, and the RESPONSE says why ([`LIST_LOST`]).
    Lost,
}

impl Listed {
    /// What to leave out, and the RESPONSE's note.
    pub(crate) fn into_parts(self) -> (Option<Skip>, Option<String>) {
        match self {
            Listed::NotNamed => (None, None),
            Listed::Found(s) => (Some(s), None),
            Listed::Lost => (None, Some(LIST_LOST.into())),
        }
    }
}

/// The files a `get` leaves out: those whose keyed digest is in the
/// client's list.
pub(crate) struct Skip {
    key: [u8; 32],
    quick: Quick,
    digests: Vec<[u8; DIGEST]>,
}

impl Skip {
    /// Whether the client has `i` (a regular file with that name, size and
    /// modification time, or contents with [`Quick::Content`]: then the
    /// file is read, so this runs on the walk's thread, never on the loop).
    pub(crate) fn has(&self, i: &Item) -> bool {
        item_digest(&self.key, self.quick, i)
            .is_some_and(|d| self.digests.binary_search(&d).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::super::bundle::format::{EntryKind, Mtime};
    use super::super::same::digest;
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const THERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    fn file(name: &str, size: u64) -> Item {
        Item {
            path: name.into(),
            name: name.as_bytes().to_vec(),
            kind: EntryKind::File,
            size,
            mode: 0o644,
            mtime: Mtime { secs: 7, nanos: 9 },
        }
    }

    /// An upload of `digests`, pushed in pieces that split digests, kept
    /// at `now`.
    fn upload(s: &HaveStore, token: u8, digests: &[[u8; DIGEST]], now: Instant) {
        let mut u = s.upload([token; TOKEN], [token; 32], Quick::Times, HERE);
        let bytes: Vec<u8> = digests.concat();
        for piece in bytes.chunks(7) {
            u.push(piece).unwrap();
        }
        u.keep(now);
    }

    fn lists(s: &HaveStore) -> (usize, usize, usize) {
        s.with(|l| (l.lists.len(), l.stored, l.reserved)).unwrap()
    }

    #[test]
    fn a_list_serves_one_get_from_its_address_while_fresh() {
        let s = HaveStore::default();
        let now = Instant::now();
        let key = [1u8; 32];
        let a = file("tree/a", 3);
        let d = digest(&key, Quick::Times, b"tree/a", 3, a.mtime, &a.path).unwrap();
        upload(&s, 1, &[d, [0; DIGEST]], now);
        assert_eq!(lists(&s), (1, 2 * DIGEST, 0));
        // Another address does not get it, nor use it up.
        assert!(s.take(&[1; TOKEN], THERE, now).is_none());
        let skip = s.take(&[1; TOKEN], HERE, now).unwrap();
        assert!(skip.has(&a));
        // Another size or name: another digest.
        assert!(!skip.has(&file("tree/a", 4)) && !skip.has(&file("tree/b", 3)));
        // One use.
        assert!(s.take(&[1; TOKEN], HERE, now).is_none());
        assert_eq!(lists(&s), (0, 0, 0));
        // Expired after its lifetime; an unknown token is nothing.
        upload(&s, 2, &[d], now);
        assert!(s.take(&[9; TOKEN], HERE, now).is_none());
        assert!(s.take(&[2; TOKEN], HERE, now + LIFETIME).is_none());
        assert_eq!(lists(&s), (0, 0, 0));
    }

    #[test]
    fn the_store_is_bounded_in_lists_and_bytes_the_oldest_going_first() {
        let s = HaveStore::default();
        let now = Instant::now();
        for t in 0..=MAX_LISTS as u8 {
            upload(&s, t, &[[t; DIGEST]], now);
        }
        assert_eq!(lists(&s), (MAX_LISTS, MAX_LISTS * DIGEST, 0));
        assert!(s.take(&[0; TOKEN], HERE, now).is_none());
        assert!(s.take(&[1; TOKEN], HERE, now).is_some());
        // A long upload drops the oldest lists to make room.
        let mut u = s.upload([200; TOKEN], [0; 32], Quick::Times, HERE);
        u.push(&vec![5u8; MAX_BYTES - DIGEST]).unwrap();
        let (n, stored, reserved) = lists(&s);
        assert_eq!((n, stored + reserved), (1, MAX_BYTES));
        // A second upload finds no room while the first holds it: refused,
        // not grown.
        let mut v = s.upload([201; TOKEN], [0; 32], Quick::Times, HERE);
        v.push(&[1; DIGEST]).unwrap();
        let e = v.push(&[1; 1]).unwrap_err();
        assert_eq!(e.peer_reason, NOT_KEPT);
        // Uploads that end without a commit give their room back.
        drop((u, v));
        assert_eq!(lists(&s), (0, 0, 0));
    }

    /// M18: a list of content digests is compared by contents: the file
    /// here with other bytes of the same size and time is not the client's,
    /// the one with the client's bytes and another time is.
    #[test]
    fn a_content_list_compares_contents_not_times() {
        let t = tempfile::tempdir().unwrap();
        let key = [4u8; 32];
        let at = |name: &str, bytes: &[u8], secs| {
            let path = t.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            Item {
                path,
                mtime: Mtime { secs, nanos: 0 },
                ..file(&format!("tree/{name}"), bytes.len() as u64)
            }
        };
        // The client's file: "abc", at 7 s.
        let theirs = at("a", b"abc", 7);
        let d = digest(
            &key,
            Quick::Content,
            b"tree/a",
            3,
            theirs.mtime,
            &theirs.path,
        );
        let s = HaveStore::default();
        let mut u = s.upload([1; TOKEN], key, Quick::Content, HERE);
        u.push(&d.unwrap()).unwrap();
        u.commit();
        let skip = s.take(&[1; TOKEN], HERE, Instant::now()).unwrap();
        assert!(skip.has(&at("a", b"abc", 99)));
        assert!(!skip.has(&at("a", b"xyz", 7)));
    }
}
