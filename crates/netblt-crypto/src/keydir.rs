//! The key directory and the identity files in it, ssh-style.
//!
//! ```text
//! $NETBLT_HOME, else $XDG_CONFIG_HOME/netblt, else $HOME/.config/netblt   (mode 0700)
//!   id_netblt          the private key, one line `netblt-private:<base64>`, mode 0600
//!   id_netblt.pub      the public key, one line `netblt:<base64> <comment>`
//!   authorized_keys    the senders a receiver accepts (see `authorized`)
//!   known_hosts        the receivers a sender has pinned (see `known_hosts`)
//! ```
//!
//! The functions here do file I/O (the only module that does); everything they parse goes
//! through pure functions that never panic, and every error names the file (and line).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::keys::{Identity, KeyParseError};
use crate::rng::SecureRandom;

/// File name of the private key.
pub const PRIVATE_KEY_FILE: &str = "id_netblt";
/// File name of the public key.
pub const PUBLIC_KEY_FILE: &str = "id_netblt.pub";
/// File name of the receiver's list of accepted senders.
pub const AUTHORIZED_KEYS_FILE: &str = "authorized_keys";
/// File name of the sender's pinned receiver keys.
pub const KNOWN_HOSTS_FILE: &str = "known_hosts";

/// A key-file problem, naming the file and, for parse errors, the line (1-based).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Reading, creating or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A line does not parse.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The private key file can be read by other users (ssh refuses such keys too).
    #[error("{path}: private key is accessible by others (mode {mode:o}); run `chmod 600` on it")]
    Permissions {
        /// The private key file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// None of `$NETBLT_HOME`, `$XDG_CONFIG_HOME`, `$HOME` is set.
    #[error("no key directory: set NETBLT_HOME (or XDG_CONFIG_HOME or HOME)")]
    NoDirectory,
}

impl FileError {
    pub(crate) fn parse(path: &Path, line: usize, reason: impl Into<String>) -> Self {
        FileError::Parse {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }
    fn io(path: &Path, source: std::io::Error) -> Self {
        FileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where the key files live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDir {
    path: PathBuf,
}

impl KeyDir {
    /// The documented search order, from explicit values (empty values count as unset), so
    /// that tests need not touch the process environment.
    pub fn resolve(
        netblt_home: Option<PathBuf>,
        xdg_config_home: Option<PathBuf>,
        home: Option<PathBuf>,
    ) -> Result<Self, FileError> {
        let set = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
        let path = if let Some(p) = set(netblt_home) {
            p
        } else if let Some(p) = set(xdg_config_home) {
            p.join("netblt")
        } else if let Some(p) = set(home) {
            p.join(".config").join("netblt")
        } else {
            return Err(FileError::NoDirectory);
        };
        Ok(KeyDir { path })
    }

    /// [`KeyDir::resolve`] from `$NETBLT_HOME`, `$XDG_CONFIG_HOME` and `$HOME`.
    pub fn from_env() -> Result<Self, FileError> {
        let var = |k| std::env::var_os(k).map(PathBuf::from);
        Self::resolve(var("NETBLT_HOME"), var("XDG_CONFIG_HOME"), var("HOME"))
    }

    /// A given directory.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        KeyDir { path: path.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path of a file in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Loads the identity, or creates it (and the directory) on first use. Returns whether it
    /// was created, so the tool can say so.
    pub fn load_or_create_identity(
        &self,
        rng: &mut dyn SecureRandom,
    ) -> Result<(Identity, bool), FileError> {
        match self.load_identity() {
            Ok(id) => Ok((id, false)),
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                let id = Identity::generate(rng);
                self.write_identity(&id)?;
                Ok((id, true))
            }
            Err(e) => Err(e),
        }
    }

    /// Loads the private key, refusing a file other users can read.
    pub fn load_identity(&self) -> Result<Identity, FileError> {
        let path = self.file(PRIVATE_KEY_FILE);
        let meta = fs::metadata(&path).map_err(|e| FileError::io(&path, e))?;
        check_private_mode(&path, &meta)?;
        let text = fs::read_to_string(&path).map_err(|e| FileError::io(&path, e))?;
        Identity::parse_private(&text)
            .map_err(|e: KeyParseError| FileError::parse(&path, 1, e.to_string()))
    }

    /// Writes a new identity: the private key with mode 0600 (created exclusively, never
    /// overwriting), then the public key.
    pub fn write_identity(&self, id: &Identity) -> Result<(), FileError> {
        create_private_dir(&self.path)?;
        let path = self.file(PRIVATE_KEY_FILE);
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.mode(0o600);
        }
        let mut f = opts.open(&path).map_err(|e| FileError::io(&path, e))?;
        f.write_all(id.private_text().as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| FileError::io(&path, e))?;
        let pub_path = self.file(PUBLIC_KEY_FILE);
        let line = format!("{} netblt@{}\n", id.public(), id.public().fingerprint());
        fs::write(&pub_path, line).map_err(|e| FileError::io(&pub_path, e))
    }
}

fn create_private_dir(path: &Path) -> Result<(), FileError> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        b.mode(0o700);
    }
    b.create(path).map_err(|e| FileError::io(path, e))
}

#[cfg(unix)]
fn check_private_mode(path: &Path, meta: &fs::Metadata) -> Result<(), FileError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(FileError::Permissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private_mode(_: &Path, _: &fs::Metadata) -> Result<(), FileError> {
    Ok(())
}

/// Reads a text file whole, or an empty text if it does not exist (an absent
/// `authorized_keys` or `known_hosts` is an empty one).
pub(crate) fn read_optional(path: &Path) -> Result<String, FileError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| {
            let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            FileError::parse(path, line, "not UTF-8 text")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(FileError::io(path, e)),
    }
}

/// Appends one line to a text file, creating it (and its directory) if needed.
pub(crate) fn append_line(path: &Path, line: &str) -> Result<(), FileError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| FileError::io(path, e))?;
    // One write of the whole line: `writeln!` on a File issues one write per
    // formatted piece, so two processes or threads pinning at once (parallel
    // first contacts) could interleave into a line that no longer parses.
    // An O_APPEND write of a few dozen bytes lands whole.
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| FileError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeededRandom;

    #[test]
    fn concurrent_appends_keep_whole_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("known_hosts");
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        let line = format!("host{t}-{i}:9998 netblt:{}", "A".repeat(43) + "=");
                        append_line(&path, &line).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1600);
        let key = format!("netblt:{}=", "A".repeat(43));
        for l in text.lines() {
            let parts: Vec<&str> = l.split_whitespace().collect();
            assert!(
                parts.len() == 2 && parts[0].starts_with("host") && parts[1] == key,
                "{l}"
            );
        }
    }

    #[test]
    fn search_order() {
        let p = |s: &str| Some(PathBuf::from(s));
        let dir = |a, b, c| KeyDir::resolve(a, b, c).unwrap().path().to_path_buf();
        assert_eq!(dir(p("/n"), p("/x"), p("/h")), PathBuf::from("/n"));
        assert_eq!(dir(p(""), p("/x"), p("/h")), PathBuf::from("/x/netblt"));
        assert_eq!(dir(None, None, p("/h")), PathBuf::from("/h/.config/netblt"));
        assert!(matches!(
            KeyDir::resolve(None, p(""), None),
            Err(FileError::NoDirectory)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn identity_is_created_0600_then_loaded() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let dir = KeyDir::at(tmp.path().join("keys"));
        let (id, created) = dir
            .load_or_create_identity(&mut SeededRandom::from_u64(1))
            .unwrap();
        assert!(created);
        let mode = |p: PathBuf| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.file(PRIVATE_KEY_FILE)), 0o600);
        assert_eq!(mode(dir.path().to_path_buf()), 0o700);
        let pub_text = fs::read_to_string(dir.file(PUBLIC_KEY_FILE)).unwrap();
        assert!(pub_text.starts_with(&id.public().to_string()));
        let (again, created) = dir
            .load_or_create_identity(&mut SeededRandom::from_u64(2))
            .unwrap();
        assert!(!created);
        assert_eq!(again.public(), id.public());
    }

    #[cfg(unix)]
    #[test]
    fn readable_private_key_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let dir = KeyDir::at(tmp.path());
        dir.load_or_create_identity(&mut SeededRandom::from_u64(1))
            .unwrap();
        let path = dir.file(PRIVATE_KEY_FILE);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = dir.load_identity().unwrap_err();
        assert!(
            matches!(err, FileError::Permissions { mode: 0o644, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("id_netblt"));
    }

    #[test]
    fn junk_private_key_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = KeyDir::at(tmp.path());
        let path = dir.file(PRIVATE_KEY_FILE);
        fs::write(&path, "hello\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        }
        let err = dir.load_identity().unwrap_err().to_string();
        assert!(err.contains("id_netblt:1:"), "{err}");
    }
}
