//! `netblt keygen`: creates this host's key pair (the first transfer does
//! it too), never overwriting one.

use clap::Args;
use netblt::crypto::{KeyDir, OsRandom};

use crate::exit::{self, CliError};

#[derive(Debug, Args)]
pub struct KeygenArgs {}

/// The key directory from the environment, as one-line errors.
pub fn key_dir() -> Result<KeyDir, CliError> {
    KeyDir::from_env().map_err(|e| CliError::new(exit::LOCAL, format!("key directory: {e}")))
}

pub fn run(_a: KeygenArgs) -> anyhow::Result<i32> {
    let dir = key_dir()?;
    let (id, created) = dir
        .load_or_create_identity(&mut OsRandom)
        .map_err(|e| CliError::new(exit::LOCAL, format!("key files: {e}")))?;
    let key = id.public();
    if created {
        eprintln!("netblt: created a key pair in {}", dir.path().display());
    } else {
        eprintln!(
            "netblt: a key pair already exists in {} (kept; delete id_netblt to replace it)",
            dir.path().display()
        );
    }
    println!("{key} {}", key.fingerprint());
    Ok(exit::OK)
}
