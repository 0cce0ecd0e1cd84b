//! The active end as the commands use it: run one transfer with a progress
//! bar (on a terminal only) and build its report.

use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use indicatif::{ProgressBar, ProgressStyle};

use super::report::{cpu_times, Report};
use super::transfer::Transfer;
use super::AppError;
use crate::driver::active::{run_active, ActiveOptions, ActiveOutcome};
use crate::driver::Waker;
use crate::exit;

/// Set by Ctrl-C (installed once per process).
pub fn stop_flag() -> &'static AtomicBool {
    static STOP: OnceLock<&'static AtomicBool> = OnceLock::new();
    STOP.get_or_init(|| {
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::Relaxed));
        flag
    })
}

/// Dies quietly on a closed stdout (`netblt ... | head`) like other Unix
/// tools, instead of panicking in `println!`.
pub fn default_sigpipe() {
    // SAFETY: restores the default disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A new waker for one loop.
pub fn new_waker() -> Result<Arc<Waker>, AppError> {
    Waker::new()
        .map(Arc::new)
        .map_err(|e| AppError::new(exit::LOCAL, format!("eventfd: {e}"), ""))
}

/// Runs `transfer` as the active end; a progress bar on stderr if it is a
/// terminal and `quiet` is off.
pub fn run(
    opts: &ActiveOptions,
    mut transfer: Transfer,
    waker: &Arc<Waker>,
    quiet: bool,
) -> Result<(Report, ActiveOutcome), AppError> {
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let pb = ProgressBar::new(transfer.size.unwrap_or(0));
        pb.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb.set_message(transfer.name.clone());
        pb
    });
    let mut progress = |t: &Transfer, c: &netblt_proto::Connection| {
        if let Some(pb) = &bar {
            if let Some(s) = t.size {
                pb.set_length(s);
            }
            pb.set_position(t.progress());
            let st = c.stats();
            pb.set_message(format!("{} rxm {}", t.name, st.data_packets_retransmitted));
        }
    };
    let cpu0 = cpu_times();
    let out = run_active(opts, &mut transfer, waker, stop_flag(), &mut progress)?;
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    let cpu1 = cpu_times();
    let report = Report::new(
        &transfer,
        &out.conn,
        opts.remote.to_string(),
        out.wall,
        (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
    );
    Ok((report, out))
}
