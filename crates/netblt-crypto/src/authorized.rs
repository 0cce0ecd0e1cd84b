//! `authorized_keys`: the senders a receiver (passive end) accepts.
//!
//! One public key per line, optionally followed by a comment; `#` starts a comment line;
//! blank lines are ignored:
//!
//! ```text
//! # laptop
//! netblt:hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo= alice@laptop
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::keydir::{self, FileError};
use crate::keys::PublicKey;

/// The set of accepted keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizedKeys {
    keys: HashSet<PublicKey>,
}

impl AuthorizedKeys {
    /// Parses the file's text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, FileError> {
        let mut keys = HashSet::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let token = line.split_whitespace().next().unwrap_or_default();
            let key = PublicKey::parse(token)
                .map_err(|e| FileError::parse(path, i + 1, format!("bad key: {e}")))?;
            keys.insert(key);
        }
        Ok(AuthorizedKeys { keys })
    }

    /// Reads and parses a file; a missing file is an empty list.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        Self::parse(&keydir::read_optional(path)?, path)
    }

    /// A list of the given keys.
    pub fn from_keys(keys: impl IntoIterator<Item = PublicKey>) -> Self {
        AuthorizedKeys {
            keys: keys.into_iter().collect(),
        }
    }

    /// Whether `key` is listed.
    pub fn contains(&self, key: &PublicKey) -> bool {
        self.keys.contains(key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is listed.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Appends a key (with a comment) to the file at `path`.
    pub fn append(path: &Path, key: &PublicKey, comment: &str) -> Result<(), FileError> {
        keydir::append_line(path, format!("{key} {}", one_line(comment)).trim_end())
    }
}

/// Whom a responder accepts in key mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// Only the listed keys.
    Keys(AuthorizedKeys),
    /// Anyone who completes the handshake (the peer's key is still reported).
    AcceptAny,
}

impl Authorization {
    /// Whether `key` may connect.
    pub fn allows(&self, key: &PublicKey) -> bool {
        match self {
            Authorization::Keys(k) => k.contains(key),
            Authorization::AcceptAny => true,
        }
    }
}

pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Default path of the file in a key directory.
pub fn default_path(dir: &keydir::KeyDir) -> PathBuf {
    dir.file(keydir::AUTHORIZED_KEYS_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Identity;
    use crate::rng::SeededRandom;

    #[test]
    fn parses_keys_comments_blanks() {
        let a = Identity::generate(&mut SeededRandom::from_u64(1)).public();
        let b = Identity::generate(&mut SeededRandom::from_u64(2)).public();
        let c = Identity::generate(&mut SeededRandom::from_u64(3)).public();
        let text = format!("# receivers\n\n{a} alice laptop\n   {b}\n# {c}\n");
        let keys = AuthorizedKeys::parse(&text, Path::new("ak")).unwrap();
        assert!(keys.contains(&a) && keys.contains(&b) && !keys.contains(&c));
        assert_eq!(keys.len(), 2);
    }

    #[test]
    fn bad_line_is_named() {
        let err = AuthorizedKeys::parse("# ok\nnetblt:short\n", Path::new("/k/authorized_keys"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/k/authorized_keys:2: bad key"), "{err}");
    }

    #[test]
    fn append_then_load() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("authorized_keys");
        assert!(AuthorizedKeys::load(&path).unwrap().is_empty());
        let a = Identity::generate(&mut SeededRandom::from_u64(1)).public();
        AuthorizedKeys::append(&path, &a, "bob\nevil").unwrap();
        assert!(AuthorizedKeys::load(&path).unwrap().contains(&a));
    }
}
