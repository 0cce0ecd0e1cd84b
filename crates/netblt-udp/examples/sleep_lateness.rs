//! Measures how late `sleep_until` returns, against `std::thread::sleep`, and how much CPU its
//! final yield loop costs (not a test: the figures depend on the host and its load).
//!
//! ```text
//! cargo run --release -p netblt-udp --example sleep_lateness -- [ROUNDS] [--slack-ns N]
//! ```
//!
//! `--slack-ns N` first sets this thread's timer slack (`PR_SET_TIMERSLACK`; Linux default 50 µs).

use std::time::{Duration, Instant};

use netblt_udp::sleep_until;

/// CPU time used by this thread so far (user + system).
#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    // SAFETY: getrusage writes one rusage struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu() -> Duration {
    Duration::ZERO
}

struct Summary {
    p50: f64,
    p99: f64,
    max: f64,
    cpu_pct: f64,
}

fn measure(interval: Duration, rounds: usize, precise: bool) -> Summary {
    let mut late_us = Vec::with_capacity(rounds);
    let cpu0 = thread_cpu();
    let wall0 = Instant::now();
    for _ in 0..rounds {
        let deadline = Instant::now() + interval;
        if precise {
            sleep_until(deadline);
        } else {
            std::thread::sleep(interval);
        }
        let late = Instant::now().saturating_duration_since(deadline);
        late_us.push(late.as_secs_f64() * 1e6);
    }
    let cpu = thread_cpu().saturating_sub(cpu0);
    let wall = wall0.elapsed();
    late_us.sort_by(f64::total_cmp);
    let pick = |q: f64| late_us[((late_us.len() - 1) as f64 * q) as usize];
    Summary {
        p50: pick(0.5),
        p99: pick(0.99),
        max: pick(1.0),
        cpu_pct: 100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000)
        .max(1);
    if let Some(ns) = args
        .iter()
        .position(|a| a == "--slack-ns")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
    {
        if let Err(e) = netblt_udp::set_thread_timer_slack(Duration::from_nanos(ns)) {
            eprintln!("could not set timer slack: {e}");
        }
    }
    println!(
        "lateness after the deadline in microseconds, {rounds} rounds per row, timer slack {:?}",
        netblt_udp::thread_timer_slack()
    );
    println!(
        "{:>9} {:<19} {:>8} {:>8} {:>9} {:>7}",
        "interval", "method", "p50", "p99", "max", "CPU %"
    );
    for us in [20u64, 100, 250, 500, 1000, 5000] {
        let interval = Duration::from_micros(us);
        let n = if us >= 1000 { rounds / 4 } else { rounds }.max(1);
        for (precise, name) in [(true, "sleep_until"), (false, "std::thread::sleep")] {
            let s = measure(interval, n, precise);
            println!(
                "{:>7}us {:<19} {:>8.1} {:>8.1} {:>9.1} {:>7.1}",
                us, name, s.p50, s.p99, s.max, s.cpu_pct
            );
        }
    }
}
