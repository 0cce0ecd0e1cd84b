//! Cleanup when the process is told to stop (Ctrl-C, SIGTERM, SIGHUP).
//!
//! Every namespace an [`crate::Emulation`] creates is recorded here the
//! moment it exists and forgotten the moment it is deleted. A signal handler
//! (installed with [`install_signal_cleanup`]) deletes whatever is recorded
//! and exits, so even an interrupted `start` leaves nothing behind. Code that
//! wants to finish its own teardown (the CLI waiting for COMMAND, the daemon)
//! holds a [`Graceful`] guard: the first signal then only raises a flag it
//! polls, and a second signal forces the immediate path.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::error::EmuError;
use crate::netns;

static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static GRACEFUL: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Exit status after a signal (128 + SIGINT, the shell convention).
const SIGNAL_EXIT: i32 = 130;

/// Records a namespace this process created.
pub(crate) fn register(ns: &str) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(ns.to_owned());
}

/// Forgets a namespace once it has been deleted.
pub(crate) fn unregister(ns: &str) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|n| n != ns);
}

/// Deletes every namespace this process created and has not deleted yet
/// (ending the processes inside). For a custom signal handler of an
/// application that cannot use [`install_signal_cleanup`].
pub fn cleanup_all() {
    let names: Vec<String> =
        std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    for ns in names {
        if let Err(e) = netns::delete(&ns) {
            eprintln!("netblt emu: cleanup of {ns}: {e}");
        }
    }
}

/// Installs a Ctrl-C / SIGTERM / SIGHUP handler that deletes this process's
/// emulation namespaces and exits with status 130. Idempotent; fails if the
/// application already installed its own `ctrlc` handler (then call
/// [`cleanup_all`] from it instead).
pub fn install_signal_cleanup() -> Result<(), EmuError> {
    let result = INSTALLED.get_or_init(|| {
        ctrlc::set_handler(|| {
            let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
            if first && GRACEFUL.load(Ordering::SeqCst) > 0 {
                return;
            }
            cleanup_all();
            std::process::exit(SIGNAL_EXIT);
        })
        .map_err(|e| e.to_string())
    });
    result
        .clone()
        .map_err(|e| EmuError::Failed(format!("cannot install the signal handler: {e}")))
}

/// Whether a stop signal has arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// While alive, the first stop signal only sets [`interrupted`]: the holder
/// promises to notice and tear down in order.
pub(crate) struct Graceful(());

impl Graceful {
    pub(crate) fn new() -> Self {
        GRACEFUL.fetch_add(1, Ordering::SeqCst);
        Graceful(())
    }
}

impl Drop for Graceful {
    fn drop(&mut self) {
        GRACEFUL.fetch_sub(1, Ordering::SeqCst);
    }
}
