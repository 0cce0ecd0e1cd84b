//! `netblt man DIR`: manual pages generated from the command-line definition
//! (clap_mangen), `netblt.1` and one `netblt-COMMAND.1` per subcommand, e.g.
//! `netblt man /usr/local/share/man/man1`.

use std::path::PathBuf;

use clap::{Args, CommandFactory};

use crate::exit::{self, CliError};

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    pub dir: PathBuf,
}

pub fn run(a: ManArgs) -> anyhow::Result<()> {
    let local = |e: std::io::Error| CliError::new(exit::LOCAL, format!("{}: {e}", a.dir.display()));
    std::fs::create_dir_all(&a.dir).map_err(local)?;
    clap_mangen::generate_to(crate::Cli::command(), &a.dir).map_err(local)?;
    let n = std::fs::read_dir(&a.dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
                .count()
        })
        .unwrap_or(0);
    println!("wrote {n} manual pages to {}", a.dir.display());
    Ok(())
}
