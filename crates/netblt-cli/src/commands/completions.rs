//! `netblt completions SHELL`: a completion script for the shell on stdout,
//! generated from the command-line definition (clap_complete), e.g.
//! `netblt completions bash > ~/.local/share/bash-completion/completions/netblt`.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

pub fn run(a: CompletionsArgs) -> anyhow::Result<()> {
    crate::progress::default_sigpipe();
    let mut cmd = crate::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "netblt", &mut std::io::stdout());
    Ok(())
}
