//! What the tool adds around a library call: a progress bar on a terminal,
//! Ctrl-C, and a quiet death on a closed stdout.

use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

use indicatif::{ProgressBar, ProgressStyle};

/// Set by Ctrl-C (the handler is installed once per process).
pub fn stop_flag() -> Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || f.store(true, std::sync::atomic::Ordering::Relaxed));
        flag
    })
    .clone()
}

/// Dies quietly on a closed stdout (`netblt ... | head`) like other Unix
/// tools, instead of panicking in `println!`.
pub fn default_sigpipe() {
    // SAFETY: restores the default disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A progress bar on stderr, drawn from the library's progress callback.
/// Only on a terminal and when not `quiet`; cleared by [`Bar::finish`].
#[derive(Clone, Default)]
pub struct Bar {
    bar: Option<Arc<Mutex<Option<ProgressBar>>>>,
}

impl Bar {
    /// A bar if stderr is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> Bar {
        Bar {
            bar: (!quiet && std::io::stderr().is_terminal()).then(Default::default),
        }
    }

    /// Puts the bar into `opts`' progress callback.
    pub fn attach(&self, opts: &mut netblt::SendOptions) {
        let Some(slot) = self.bar.clone() else {
            return;
        };
        opts.progress = Some(Arc::new(move |p: &netblt::Progress| {
            let Ok(mut g) = slot.lock() else {
                return;
            };
            let pb = g.get_or_insert_with(|| {
                let pb = ProgressBar::new(p.total.unwrap_or(0));
                pb.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                pb
            });
            if let Some(s) = p.total {
                pb.set_length(s);
            }
            pb.set_position(p.bytes);
            let rate = match (p.rate_bps, p.rate_reason) {
                (Some(r), Some(why)) => format!(" rate {:.1} Mb/s ({why})", r as f64 / 1e6),
                _ => String::new(),
            };
            pb.set_message(format!("{} rxm {}{rate}", p.name, p.retransmitted));
        }));
    }

    /// Clears the bar (the transfer ended).
    pub fn finish(&self) {
        if let Some(slot) = &self.bar {
            if let Ok(mut g) = slot.lock() {
                if let Some(pb) = g.take() {
                    pb.finish_and_clear();
                }
            }
        }
    }
}
