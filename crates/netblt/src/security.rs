//! How a transfer is protected (issue 11): the options and the key files.
//!
//! [`Security::Encrypted`] runs the Noise handshake of `netblt-crypto` in
//! OPEN/RESPONSE and seals every other packet (docs/security.md); the
//! driver does it around the engine (`driver/secure/`), so the engine still
//! sees plain RFC 998 packets. [`Security::Insecure`] is plain RFC 998, for
//! interoperation and measurements.
//!
//! The library's default is [`Security::Insecure`] (decision K14: the API
//! and its tests predate encryption, and a library must not create key
//! files in `$HOME` behind its caller's back); the `netblt` tool encrypts by
//! default and asks for `--insecure`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::budget::Budget;
use netblt_crypto::{
    AuthorizedKeys, FileError, Identity, KeyDir, KnownHosts, LimitConfig, OneTimeCode, OsRandom,
};

use crate::error::{AppError, Kind};

/// Whether and how a transfer is encrypted and authenticated.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Security {
    /// Plain RFC 998: no handshake, no protection (Version 1 packets).
    #[default]
    Insecure,
    /// The handshake in OPEN/RESPONSE and AEAD on every packet (Version 2).
    Encrypted(Encryption),
}

impl Security {
    /// Encrypted with the key directory from the environment and default
    /// settings.
    pub fn encrypted() -> Security {
        Security::Encrypted(Encryption::default())
    }

    /// Whether packets are protected.
    pub fn is_encrypted(&self) -> bool {
        matches!(self, Security::Encrypted(_))
    }
}

/// The settings of an encrypted transfer.
///
/// Both ends need it. A receiver accepts a sender whose public key is in
/// its `authorized_keys` (or any, with `accept_any`); a sender pins the
/// receiver's key in its `known_hosts` on first contact, as ssh does:
///
/// ```no_run
/// use netblt::{Encryption, Security};
///
/// # fn main() -> Result<(), netblt::Error> {
/// let mut sender = Encryption::default();
/// sender.key_dir = Some("/srv/sender-keys".into());
/// let mut receiver = Encryption::default();
/// receiver.key_dir = Some("/srv/receiver-keys".into());
/// // What `netblt id` prints at the sender, added to the receiver's
/// // authorized_keys (what appending that line by hand does).
/// receiver.authorize(&sender.public_key()?, "backup job")?;
/// let (s, r) = (Security::Encrypted(sender), Security::Encrypted(receiver));
/// // ... s in SendOptions::security, r in ReceiverOptions::security.
/// # let _ = (s, r);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Encryption {
    /// The key directory (`id_netblt`, `authorized_keys`, `known_hosts`);
    /// `None`: `$NETBLT_HOME`, else `$XDG_CONFIG_HOME/netblt`, else
    /// `~/.config/netblt`. Created, with a new key pair, on first use.
    pub key_dir: Option<PathBuf>,
    /// Receiver: accept any sender's key, not only those in
    /// `authorized_keys`. Default off.
    pub accept_any: bool,
    /// A one-time code (`crossword-puppy-orbit`): both ends authenticate
    /// by it instead of by keys (SPAKE2 + Noise XXpsk2). A receiver with a
    /// code accepts only code-mode senders and burns the code after one
    /// attempt.
    pub code: Option<String>,
    /// Receiver: connection limits and the cookie threshold.
    pub limits: LimitConfig,
}

impl std::fmt::Debug for Encryption {
    // The one-time code is a secret until it is used: not in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryption")
            .field("key_dir", &self.key_dir)
            .field("accept_any", &self.accept_any)
            .field("code", &self.code.as_ref().map(|_| "<secret>"))
            .field("limits", &self.limits)
            .finish()
    }
}

impl Encryption {
    /// This end's public key (what `netblt id` prints), from its key
    /// directory; the key pair is made there on first use.
    pub fn public_key(&self) -> Result<netblt_crypto::PublicKey, crate::Error> {
        Ok(Keys::load_identity(self)?.1.public())
    }

    /// Adds a peer's public key to this end's `authorized_keys` (a
    /// receiver then accepts that sender; a running one sees it within a
    /// second), with `comment` after it on its line.
    pub fn authorize(
        &self,
        key: &netblt_crypto::PublicKey,
        comment: &str,
    ) -> Result<(), crate::Error> {
        let (dir, _) = Keys::load_identity(self)?;
        AuthorizedKeys::append(&netblt_crypto::authorized::default_path(&dir), key, comment)
            .map_err(|e| crate::Error::Local(format!("key files: {e}")))
    }
}

/// The loaded key material of one end.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub(crate) dir: KeyDir,
    pub(crate) identity: Identity,
    pub(crate) code: Option<OneTimeCode>,
}

fn file_error(e: FileError) -> AppError {
    // F28: a key file's I/O error keeps its kind (its message ends in the
    // OS error too, read back by `Error::kind` once it is an `Error`).
    let io = match &e {
        FileError::Io { source, .. } => Some(source.kind()),
        _ => None,
    };
    AppError::new(Kind::Local, format!("key files: {e}"), "")
        .because(crate::ErrorKind::Local { io })
}

impl Keys {
    /// Loads (or creates, on first use) this host's identity, and parses
    /// the code.
    pub(crate) fn load(enc: &Encryption) -> Result<Keys, AppError> {
        let (dir, identity) = Self::load_identity(enc)?;
        let code = enc
            .code
            .as_deref()
            .map(OneTimeCode::parse)
            .transpose()
            .map_err(|e| AppError::new(Kind::InvalidOptions, format!("one-time code: {e}"), ""))?;
        Ok(Keys {
            dir,
            identity,
            code,
        })
    }

    /// The key directory and this end's identity (made on first use).
    fn load_identity(enc: &Encryption) -> Result<(KeyDir, Identity), AppError> {
        let dir = match &enc.key_dir {
            Some(p) => KeyDir::at(p),
            None => KeyDir::from_env().map_err(file_error)?,
        };
        let (identity, created) = dir
            .load_or_create_identity(&mut OsRandom)
            .map_err(file_error)?;
        if created {
            tracing::info!(dir = %dir.path().display(), "created a new key pair");
        }
        Ok((dir, identity))
    }

    /// The receiver's `authorized_keys`, read now (a file that does not
    /// parse is an error: the receiver does not start) and followed while
    /// the receiver runs ([`AuthorizedKeysFile`]).
    pub(crate) fn authorized(&self, now: Instant) -> Result<AuthorizedKeysFile, AppError> {
        AuthorizedKeysFile::open(netblt_crypto::authorized::default_path(&self.dir), now)
            .map_err(file_error)
    }

    pub(crate) fn known_hosts(&self) -> Result<KnownHosts, AppError> {
        KnownHosts::load(&netblt_crypto::known_hosts::default_path(&self.dir)).map_err(file_error)
    }
}

/// Checks of `authorized_keys` allowed at once ([`AuthorizedKeysFile`]).
pub(crate) const CHECK_BURST: u32 = 4;
/// After a burst, one check of `authorized_keys` per this much time.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);
/// A file changed this recently when looked at may change again within the
/// same tick of the file system's clock and keep its size and times: it is
/// read again at the next check (git's "racy" index entries). 2 s covers
/// the coarsest clocks (FAT's); most file systems keep nanoseconds,
/// updated every few milliseconds.
const RACY: Duration = Duration::from_secs(2);

/// What `stat` says of the file: a change of any of these (or of its
/// presence) makes the next check read it again. The change time catches
/// a rewrite in place that kept the size and put the modification time
/// back (`touch -r`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    /// `None`: no file there (an empty list, as at start).
    fn of(path: &Path) -> std::io::Result<Option<Stamp>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(Stamp {
                len: m.len(),
                dev: m.dev(),
                ino: m.ino(),
                mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Modified or changed within [`RACY`] before `wall`, or after it.
    fn racy(&self, wall: SystemTime) -> bool {
        let now_ns = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        self.mtime_ns.max(self.ctime_ns) > now_ns - RACY.as_nanos() as i128
    }
}

/// The receiver's `authorized_keys`, followed while it runs (decision
/// K26), as ssh reads it for every connection: a key appended is accepted
/// from the next handshake on, a key removed refused from the next one
/// (sessions already running go on).
///
/// Read whole at start. Then [`refresh`](Self::refresh), called by the
/// secure layer for each key-mode initiation that passed the cheap checks
/// (envelope, cookie under load, connection limits), before its
/// Diffie-Hellman: at most [`CHECK_BURST`] checks at once and one per
/// [`CHECK_EVERY`] after that, whatever the rate of initiations; a check is
/// one `stat`, and the file is read and parsed again only when the stamp
/// differs from that of the last read (or the last read was racy). A file
/// that no longer reads or parses keeps the keys read before, with one log
/// line per distinct problem; a file that disappears is an empty list, as
/// at start.
#[derive(Debug)]
pub(crate) struct AuthorizedKeysFile {
    path: PathBuf,
    keys: AuthorizedKeys,
    /// The file as `stat` saw it just before the last read (`None`: no
    /// file). Taken before reading, so a change during the read shows as a
    /// difference at the next check.
    stamp: Option<Stamp>,
    /// The file had changed within [`RACY`] of that `stat`.
    racy: bool,
    /// Checks allowed: [`CHECK_BURST`], then one per [`CHECK_EVERY`].
    checks_left: Budget,
    /// The problem last logged, not repeated while it lasts.
    complaint: Option<String>,
    /// Checks made (`stat` calls after start).
    pub(crate) checks: u64,
    /// Reads after start.
    pub(crate) reads: u64,
}

impl AuthorizedKeysFile {
    /// Reads the file at `path` (missing: an empty list); an error if it
    /// cannot be read or does not parse.
    pub(crate) fn open(path: PathBuf, now: Instant) -> Result<AuthorizedKeysFile, FileError> {
        Self::open_at(path, now, SystemTime::now())
    }

    fn open_at(
        path: PathBuf,
        now: Instant,
        wall: SystemTime,
    ) -> Result<AuthorizedKeysFile, FileError> {
        let stamp = Stamp::of(&path).unwrap_or(None);
        let keys = AuthorizedKeys::load(&path)?;
        Ok(AuthorizedKeysFile {
            racy: stamp.is_some_and(|s| s.racy(wall)),
            path,
            keys,
            stamp,
            checks_left: Budget::new(now, CHECK_BURST, CHECK_EVERY),
            complaint: None,
            checks: 0,
            reads: 0,
        })
    }

    /// The keys in force.
    pub(crate) fn keys(&self) -> &AuthorizedKeys {
        &self.keys
    }

    /// Checks the file if the rate allows, and reads it again if it
    /// changed. Returns whether the keys in force changed.
    pub(crate) fn refresh(&mut self, now: Instant) -> bool {
        self.refresh_at(now, SystemTime::now())
    }

    /// [`refresh`](Self::refresh) with the wall clock's time given (for
    /// the racy rule).
    fn refresh_at(&mut self, now: Instant, wall: SystemTime) -> bool {
        if !self.checks_left.take(now) {
            return false;
        }
        self.checks += 1;
        let stamp = match Stamp::of(&self.path) {
            Ok(s) => s,
            Err(e) => {
                let kept = self.kept();
                self.complain(format!("{}: {e}; {kept}", self.path.display()));
                return false;
            }
        };
        if stamp == self.stamp && !self.racy {
            return false;
        }
        self.stamp = stamp;
        self.racy = stamp.is_some_and(|s| s.racy(wall));
        let keys = if stamp.is_some() {
            self.reads += 1;
            match AuthorizedKeys::load(&self.path) {
                Ok(k) => k,
                Err(e) => {
                    let kept = self.kept();
                    self.complain(format!("{e}; {kept}"));
                    return false;
                }
            }
        } else {
            AuthorizedKeys::default()
        };
        self.complaint = None;
        if keys == self.keys {
            return false;
        }
        tracing::info!(
            path = %self.path.display(),
            keys = keys.len(),
            before = self.keys.len(),
            "authorized_keys changed; new handshakes use it"
        );
        self.keys = keys;
        true
    }

    /// The end of a complaint: what the receiver does meanwhile.
    fn kept(&self) -> String {
        let n = self.keys.len();
        let keys = if n == 1 { "key" } else { "keys" };
        format!(
            "keeping the {n} {keys} read before until the file is fixed (it is read again when it changes)"
        )
    }

    fn complain(&mut self, line: String) {
        if self.complaint.as_deref() != Some(line.as_str()) {
            tracing::warn!("{line}");
            self.complaint = Some(line);
        }
    }
}

/// An empty string as JSON's null: "nothing negotiated" reads as absent,
/// not as a suite named "" (F15 #16).
fn empty_as_null<S: serde::Serializer>(s: &str, ser: S) -> Result<S::Ok, S::Error> {
    if s.is_empty() {
        ser.serialize_none()
    } else {
        ser.serialize_str(s)
    }
}

/// What the protection did on one end of a transfer (or, for a receiver,
/// all its sessions): in reports as `security`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SecurityReport {
    /// The packet AEAD (`AES-256-GCM`, `ChaCha20-Poly1305`); empty (null
    /// in JSON) when no handshake finished.
    #[serde(serialize_with = "empty_as_null")]
    pub suite: String,
    /// The handshake pattern (`IK`, `XX`, `XXpsk2`); empty (null in JSON)
    /// when no handshake finished.
    #[serde(serialize_with = "empty_as_null")]
    pub pattern: String,
    /// The peer's key fingerprint, once authenticated.
    pub peer: Option<String>,
    /// First contact: this transfer found no key for the peer's address in
    /// `known_hosts` and recorded the one it authenticated (trust on first
    /// use, as ssh's "Permanently added"); a different key from that
    /// address is refused from now on.
    pub pinned: bool,
    /// Packets that failed authentication (forged, modified, truncated).
    pub forged: u64,
    /// Replayed packets (counter seen before, or behind the window).
    pub replayed: u64,
    /// Plain (Version 1) packets dropped in an encrypted session.
    pub plaintext: u64,
    /// Other datagrams dropped (early, unexpected handshake messages).
    pub dropped: u64,
    /// Times a peer's authenticated packets came from a new address (a NAT
    /// that rebound its mapping, a host that changed networks) and its
    /// session moved there (docs/security.md, "Address changes").
    pub migrated: u64,
}

impl SecurityReport {
    pub(crate) fn add_protection(&mut self, s: &netblt_crypto::ProtectionStats) {
        self.forged += s.forged + s.too_short + s.out_of_range;
        self.replayed += s.replayed + s.too_old;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netblt_crypto::{PublicKey, SecureRandom, SeededRandom};
    use std::io::Write;

    fn key(seed: u64) -> PublicKey {
        Identity::generate(&mut SeededRandom::from_u64(seed)).public()
    }

    /// The wall clock as seen an hour from now: every file written by the
    /// test is then out of the racy window, so a check reads only when the
    /// stamp changed (what we want to watch), whatever the file system's
    /// clock granularity.
    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(3600)
    }

    fn append(path: &Path, line: &str) {
        let mut w = std::fs::File::options().append(true).open(path).unwrap();
        writeln!(w, "{line}").unwrap();
    }

    #[test]
    fn nothing_negotiated_is_null_in_json() {
        let v = serde_json::to_value(SecurityReport::default()).unwrap();
        assert!(v["suite"].is_null() && v["pattern"].is_null(), "{v}");
        let r = SecurityReport {
            suite: "AES-256-GCM".into(),
            ..SecurityReport::default()
        };
        assert_eq!(serde_json::to_value(r).unwrap()["suite"], "AES-256-GCM");
    }

    #[test]
    fn an_appended_key_counts_and_a_removed_one_stops() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("authorized_keys");
        let (a, b) = (key(1), key(2));
        std::fs::write(&path, format!("{a} a\n")).unwrap();
        let t0 = Instant::now();
        let mut f = AuthorizedKeysFile::open_at(path.clone(), t0, later()).unwrap();
        assert!(f.keys().contains(&a) && !f.keys().contains(&b));
        // Unchanged: a stat, no read.
        assert!(!f.refresh_at(t0, later()));
        assert_eq!((f.checks, f.reads), (1, 0));
        // Appended (`netblt id >> authorized_keys`): read at the next check.
        append(&path, &format!("{b} b"));
        assert!(f.refresh_at(t0, later()));
        assert!(f.keys().contains(&a) && f.keys().contains(&b));
        assert_eq!((f.checks, f.reads), (2, 1));
        assert!(!f.refresh_at(t0, later()), "read once per change");
        assert_eq!(f.reads, 1);
        // Removed, by an editor that writes a new file and renames it.
        let new = tmp.path().join("authorized_keys.new");
        std::fs::write(&new, format!("# only b now\n{b} b\n")).unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert!(f.refresh_at(t0 + CHECK_EVERY * 3, later()));
        assert!(!f.keys().contains(&a) && f.keys().contains(&b));
        // Deleted: an empty list, as at start.
        std::fs::remove_file(&path).unwrap();
        assert!(f.refresh_at(t0 + CHECK_EVERY * 4, later()));
        assert!(f.keys().is_empty());
        assert_eq!(f.reads, 2);
    }

    #[test]
    fn checks_are_rate_limited() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("authorized_keys");
        std::fs::write(&path, format!("{}\n", key(1))).unwrap();
        let t0 = Instant::now();
        let mut f = AuthorizedKeysFile::open_at(path.clone(), t0, later()).unwrap();
        // A flood of 10,000 initiations within 10 ms: a burst of checks,
        // then none.
        for i in 0..10_000u64 {
            f.refresh_at(t0 + Duration::from_micros(i), later());
        }
        assert_eq!(f.checks, u64::from(CHECK_BURST));
        // A change now waits for the next allowed check: one per second.
        append(&path, &key(2).to_string());
        assert!(!f.refresh_at(t0 + CHECK_EVERY / 2, later()));
        assert!(!f.keys().contains(&key(2)));
        assert!(f.refresh_at(t0 + CHECK_EVERY, later()));
        assert!(f.keys().contains(&key(2)));
        // The flood goes on for 10 s more: 10 more checks, no read.
        for ms in 1000..=11_000u64 {
            f.refresh_at(
                t0 + Duration::from_millis(ms) + Duration::from_micros(1),
                later(),
            );
        }
        assert_eq!(f.checks, u64::from(CHECK_BURST) + 1 + 10);
        assert_eq!(f.reads, 1);
    }

    #[test]
    fn a_broken_file_keeps_the_last_good_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("authorized_keys");
        let (a, b) = (key(1), key(2));
        std::fs::write(&path, format!("{a}\n")).unwrap();
        let t0 = Instant::now();
        let mut f = AuthorizedKeysFile::open_at(path.clone(), t0, later()).unwrap();
        // Malformed: the keys read before stay, one complaint.
        append(&path, "netblt:short");
        assert!(!f.refresh_at(t0, later()));
        assert!(f.keys().contains(&a));
        let first = f.complaint.clone().unwrap();
        assert!(
            first.contains("authorized_keys:2: bad key") && first.contains("keeping the 1 key "),
            "{first}"
        );
        assert!(!f.refresh_at(t0, later()));
        assert_eq!(f.reads, 1, "not read again until it changes");
        // Not text.
        std::fs::write(&path, b"\xff\xfe\n").unwrap();
        assert!(!f.refresh_at(t0, later()));
        assert!(f.keys().contains(&a));
        assert!(f.complaint.as_deref().unwrap().contains("not UTF-8"));
        // Unreadable (a directory in its place: unreadable even for root).
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(!f.refresh_at(t0 + CHECK_EVERY * 4, later()));
        assert!(f.keys().contains(&a));
        assert!(f
            .complaint
            .as_deref()
            .unwrap()
            .contains("keeping the 1 key "));
        // Fixed: read, no complaint left.
        std::fs::remove_dir(&path).unwrap();
        std::fs::write(&path, format!("{b}\n")).unwrap();
        assert!(f.refresh_at(t0 + CHECK_EVERY * 5, later()));
        assert!(f.keys().contains(&b) && !f.keys().contains(&a));
        assert!(f.complaint.is_none());
        // Junk of every kind never panics, and never replaces good keys
        // (only a file of blanks and comments, a valid empty list, does).
        let mut junk = SeededRandom::from_u64(7);
        for i in 0..300u32 {
            let mut bytes = vec![0u8; (i % 97) as usize + 1];
            junk.fill(&mut bytes);
            std::fs::write(&path, &bytes).unwrap();
            f.refresh_at(t0 + CHECK_EVERY * (6 + i), SystemTime::now());
            assert!(f.keys().contains(&b) || f.keys().is_empty());
        }
    }

    #[test]
    fn a_file_changed_just_before_a_check_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("authorized_keys");
        let (a, b) = (key(1), key(2));
        std::fs::write(&path, format!("{a}\n")).unwrap();
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        let t0 = Instant::now();
        // Read just after a change (the real clock): within the same tick
        // of the file system's clock, another change could keep size and
        // times as they are.
        let mut f = AuthorizedKeysFile::open(path.clone(), t0).unwrap();
        // Such a change: the same length, in place, the modification time
        // put back. The next check reads the file whatever its stamp says.
        std::fs::write(&path, format!("{b}\n")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert!(f.refresh(t0));
        assert!(f.keys().contains(&b) && !f.keys().contains(&a));
        assert_eq!(f.reads, 1);
        // Still recent: read again at the next check (nothing new).
        assert!(!f.refresh(t0));
        assert_eq!(f.reads, 2);
        // Seen later, out of the window: a check is a stat again.
        assert!(!f.refresh_at(t0 + CHECK_EVERY * 3, later()));
        assert_eq!(f.reads, 3);
        assert!(!f.refresh_at(t0 + CHECK_EVERY * 4, later()));
        assert_eq!(f.reads, 3);
    }
}
