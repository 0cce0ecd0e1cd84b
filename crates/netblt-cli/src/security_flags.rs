//! Encryption flags (issue 11): `--insecure`, `--code`, `--accept-any`.
//!
//! Encrypted and authenticated is the default: the first transfer creates
//! this host's key pair in the key directory (`$NETBLT_HOME`, else
//! `$XDG_CONFIG_HOME/netblt`, else `~/.config/netblt`).

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;
use netblt::crypto::{OneTimeCode, OsRandom};
use netblt::{Encryption, Security};

use crate::exit::CliError;

/// The active end's flags (send, get, bench).
#[derive(Debug, Clone, Args)]
pub struct SecurityFlags {
    /// Plain RFC 998: no encryption, no authentication. The receiver must
    /// run with --insecure too.
    #[arg(long)]
    pub insecure: bool,
    /// Authenticate with a one-time code instead of keys (strangers, fresh
    /// machines): prints a code, and the command the other end types
    /// (`netblt recv --code CODE`; `recv --serve --code` for get, `recv
    /// --sink --code` for bench).
    #[arg(long, conflicts_with = "insecure")]
    pub code: bool,
}

impl SecurityFlags {
    /// Plain RFC 998, for in-process pairs (the demo, `load --netblt`)
    /// whose receiver is the library's plain default.
    pub fn plain() -> SecurityFlags {
        SecurityFlags {
            insecure: true,
            code: false,
        }
    }

    /// The library's setting; with --code, a new code printed on stderr
    /// with the command to run at the other end (`recv_flags`: what that
    /// `netblt recv` needs besides the code, e.g. `--serve` for a `get`).
    pub fn security(&self, recv_flags: &str) -> Security {
        if self.insecure {
            return Security::Insecure;
        }
        let mut e = Encryption::default();
        if self.code {
            let code = OneTimeCode::generate(&mut OsRandom).to_string();
            eprintln!("netblt: one-time code: {code}");
            eprintln!("netblt: on the other end, run: netblt recv{recv_flags} --code {code}");
            e.code = Some(code);
        }
        Security::Encrypted(e)
    }
}

/// The passive end's flags (recv).
#[derive(Debug, Clone, Args)]
pub struct RecvSecurityFlags {
    /// Plain RFC 998: no encryption, no authentication. Senders must run
    /// with --insecure too.
    #[arg(long)]
    pub insecure: bool,
    /// Accept any sender's key, not only those in authorized_keys.
    #[arg(long, conflicts_with = "insecure")]
    pub accept_any: bool,
    /// Accept exactly one transfer from a sender who has this one-time
    /// code (`netblt send FILE HOST --code` prints it); without a value,
    /// asks for it.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "CODE", conflicts_with_all = ["insecure", "accept_any"])]
    pub code: Option<String>,
}

impl RecvSecurityFlags {
    /// The library's setting; prompts for the code if asked to.
    pub fn security(&self) -> Result<Security, CliError> {
        if self.insecure {
            return Ok(Security::Insecure);
        }
        let mut e = Encryption::default();
        e.accept_any = self.accept_any;
        if let Some(c) = &self.code {
            let c = if c.is_empty() {
                prompt_code()?
            } else {
                c.clone()
            };
            OneTimeCode::parse(&c)
                .map_err(|err| CliError::usage(format!("one-time code: {err}")))?;
            e.code = Some(c);
        }
        Ok(Security::Encrypted(e))
    }
}

fn prompt_code() -> Result<String, CliError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("netblt: one-time code (from the sender): ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::usage(format!("reading the code: {e}")))?;
    let line = line.trim().to_string();
    if line.is_empty() {
        return Err(CliError::usage("no one-time code given"));
    }
    Ok(line)
}
