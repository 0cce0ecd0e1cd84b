//! `netblt id`: prints this host's public key and its fingerprint (the
//! line to add to a receiver's `authorized_keys`), creating the key pair on
//! first use.

use clap::Args;
use netblt::crypto::OsRandom;

use crate::exit::{self, CliError};

#[derive(Debug, Args)]
pub struct IdArgs {
    /// Print only the fingerprint.
    #[arg(long, conflicts_with = "json")]
    pub fingerprint: bool,
    /// Print `{"key": ..., "fingerprint": ..., "key_dir": ...}` instead.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: IdArgs) -> anyhow::Result<i32> {
    let dir = super::keygen::key_dir()?;
    let (id, created) = dir
        .load_or_create_identity(&mut OsRandom)
        .map_err(|e| CliError::new(exit::LOCAL, format!("key files: {e}")))?;
    if created {
        eprintln!("netblt: created a key pair in {}", dir.path().display());
    }
    let key = id.public();
    if a.json {
        let v = serde_json::json!({
            "key": key.to_string(),
            "fingerprint": key.fingerprint().to_string(),
            "key_dir": dir.path().display().to_string(),
        });
        println!("{v}");
    } else if a.fingerprint {
        println!("{}", key.fingerprint());
    } else {
        // The authorized_keys line: key, then the fingerprint as comment.
        println!("{key} {}", key.fingerprint());
    }
    Ok(exit::OK)
}
