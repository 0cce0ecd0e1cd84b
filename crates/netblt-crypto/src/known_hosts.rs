//! `known_hosts`: receiver keys a sender pinned on first contact (trust on first use).
//!
//! One `host:port key [comment]` per line; IPv6 hosts in brackets (`[::1]:9998`), as ssh
//! writes them; `#` comment lines and blank lines are ignored. A host seen with a different
//! key than the one pinned is refused with [`HostKeyError::Changed`], which names the line to
//! delete, as ssh does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::authorized::one_line;
use crate::keydir::{self, FileError};
use crate::keys::PublicKey;

/// The pinned keys and where each came from.
#[derive(Debug, Clone, Default)]
pub struct KnownHosts {
    path: PathBuf,
    hosts: HashMap<String, (PublicKey, usize)>,
}

/// What is known about a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStatus {
    /// Pinned: use this key (Noise IK).
    Pinned(PublicKey),
    /// First contact: learn the key in the handshake (Noise XX), then [`KnownHosts::pin`].
    Unknown,
}

/// A host presented a key other than the pinned one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostKeyError {
    /// The key changed: possibly a machine-in-the-middle, possibly a reinstalled host.
    #[error(
        "the key of {host} has changed (pinned {} at {}:{line}, now {}); someone may be \
         intercepting the connection. If the host was re-keyed, delete that line",
        .expected.fingerprint(),
        .path.display(),
        .found.fingerprint()
    )]
    Changed {
        /// `host:port` as pinned.
        host: String,
        /// The pinned key.
        expected: PublicKey,
        /// The key the host presented.
        found: PublicKey,
        /// The known_hosts file.
        path: PathBuf,
        /// The pinning line, from 1.
        line: usize,
    },
}

impl KnownHosts {
    /// The name a host is filed under: `host:port`, or `[v6]:port`.
    pub fn host_id(host: &str, port: u16) -> String {
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }

    /// Parses the file's text; `path` names the file in errors and is where [`pin`] appends.
    ///
    /// [`pin`]: KnownHosts::pin
    pub fn parse(text: &str, path: &Path) -> Result<Self, FileError> {
        let mut hosts = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(host), Some(key)) = (words.next(), words.next()) else {
                return Err(FileError::parse(path, i + 1, "expected `host:port key`"));
            };
            if !valid_host_id(host) {
                return Err(FileError::parse(
                    path,
                    i + 1,
                    format!("bad host `{}`", one_line(host)),
                ));
            }
            let key = PublicKey::parse(key)
                .map_err(|e| FileError::parse(path, i + 1, format!("bad key: {e}")))?;
            // The first line for a host wins, so an appended line never overrides a pin.
            hosts.entry(host.to_string()).or_insert((key, i + 1));
        }
        Ok(KnownHosts {
            path: path.to_path_buf(),
            hosts,
        })
    }

    /// Reads and parses the file; a missing file knows no host.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        Self::parse(&keydir::read_optional(path)?, path)
    }

    /// What we know of `host_id` (see [`KnownHosts::host_id`]).
    pub fn status(&self, host_id: &str) -> HostStatus {
        match self.hosts.get(host_id) {
            Some((k, _)) => HostStatus::Pinned(*k),
            None => HostStatus::Unknown,
        }
    }

    /// Checks a key the host presented: `Ok(true)` if pinned and equal, `Ok(false)` if the
    /// host is unknown (pin it after the handshake), the typed error if it changed.
    pub fn check(&self, host_id: &str, found: &PublicKey) -> Result<bool, HostKeyError> {
        match self.hosts.get(host_id) {
            None => Ok(false),
            Some((k, _)) if k == found => Ok(true),
            Some((expected, line)) => Err(HostKeyError::Changed {
                host: host_id.to_string(),
                expected: *expected,
                found: *found,
                path: self.path.clone(),
                line: *line,
            }),
        }
    }

    /// Trust on first use: records an unknown host's key in memory and appends it to the
    /// file. A host already pinned is checked, never overwritten.
    pub fn pin(&mut self, host_id: &str, key: &PublicKey) -> Result<(), PinError> {
        if self.check(host_id, key)? {
            return Ok(());
        }
        if !valid_host_id(host_id) {
            return Err(PinError::File(FileError::parse(
                &self.path,
                0,
                "bad host name",
            )));
        }
        keydir::append_line(&self.path, &format!("{host_id} {key}"))?;
        let line = keydir::read_optional(&self.path)?.lines().count();
        self.hosts.insert(host_id.to_string(), (*key, line));
        Ok(())
    }
}

/// Why pinning failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The host already has another key.
    #[error(transparent)]
    Changed(#[from] HostKeyError),
    /// The file could not be written.
    #[error(transparent)]
    File(#[from] FileError),
}

fn valid_host_id(s: &str) -> bool {
    // `host:port` with a non-empty host, a decimal port, no control characters or blanks.
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && port.parse::<u16>().is_ok()
        && !s
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '#')
}

/// Default path of the file in a key directory.
pub fn default_path(dir: &keydir::KeyDir) -> PathBuf {
    dir.file(keydir::KNOWN_HOSTS_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Identity;
    use crate::rng::SeededRandom;

    fn key(n: u64) -> PublicKey {
        Identity::generate(&mut SeededRandom::from_u64(n)).public()
    }

    #[test]
    fn host_ids() {
        assert_eq!(KnownHosts::host_id("example.org", 9998), "example.org:9998");
        assert_eq!(KnownHosts::host_id("::1", 9998), "[::1]:9998");
        assert_eq!(KnownHosts::host_id("[::1]", 1), "[::1]:1");
    }

    #[test]
    fn tofu_then_changed_key_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("known_hosts");
        let mut kh = KnownHosts::load(&path).unwrap();
        let host = KnownHosts::host_id("10.0.0.1", 9998);
        assert_eq!(kh.status(&host), HostStatus::Unknown);
        kh.pin(&host, &key(1)).unwrap();
        assert_eq!(kh.status(&host), HostStatus::Pinned(key(1)));
        // Reloaded from disk, the pin holds.
        let kh = KnownHosts::load(&path).unwrap();
        assert_eq!(kh.check(&host, &key(1)), Ok(true));
        let err = kh.check(&host, &key(2)).unwrap_err();
        let HostKeyError::Changed {
            expected,
            found,
            line,
            ..
        } = &err;
        assert_eq!((*expected, *found, *line), (key(1), key(2), 1));
        let msg = err.to_string();
        assert!(
            msg.contains("known_hosts:1") && msg.contains("has changed"),
            "{msg}"
        );
        let mut kh = kh;
        assert!(matches!(kh.pin(&host, &key(2)), Err(PinError::Changed(_))));
    }

    #[test]
    fn bad_lines_are_named() {
        let p = Path::new("kh");
        let k = key(1);
        for (text, line) in [
            (format!("# c\nhost {k}\n"), 2),
            (format!("host:99999 {k}"), 1),
            ("a:1\n".to_string(), 1),
            ("a:1 netblt:xx".to_string(), 1),
        ] {
            let err = KnownHosts::parse(&text, p).unwrap_err().to_string();
            assert!(err.starts_with(&format!("kh:{line}:")), "{text:?}: {err}");
        }
        let ok = KnownHosts::parse(&format!("[::1]:9998 {k} comment\n\n"), p).unwrap();
        assert_eq!(ok.status("[::1]:9998"), HostStatus::Pinned(k));
    }
}
