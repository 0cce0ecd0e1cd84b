//! sleep_until: never early, and past deadlines return. (Lateness is measured by
//! `examples/sleep_lateness.rs`, not asserted: tests never assert on speed.)

use std::time::{Duration, Instant};

use netblt_udp::{sleep_until, SPIN_MARGIN};

#[test]
fn never_returns_before_the_deadline() {
    for us in [0u64, 1, 10, 49, 50, 51, 120, 700, 2_000] {
        let deadline = Instant::now() + Duration::from_micros(us);
        sleep_until(deadline);
        assert!(Instant::now() >= deadline, "returned early for {us} us");
    }
}

#[test]
fn past_deadline_returns() {
    let past = Instant::now();
    std::thread::sleep(SPIN_MARGIN);
    sleep_until(past);
    // Reaching this line is the test.
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[test]
fn timer_slack_is_per_thread() {
    let outer = netblt_udp::thread_timer_slack();
    let inner = std::thread::spawn(|| {
        netblt_udp::set_thread_timer_slack(Duration::from_nanos(1)).expect("prctl");
        let got = netblt_udp::thread_timer_slack();
        // Sleeping still works and is still never early with the smallest slack.
        let deadline = Instant::now() + Duration::from_micros(300);
        sleep_until(deadline);
        assert!(Instant::now() >= deadline);
        got
    })
    .join()
    .expect("thread");
    assert_eq!(inner, Some(Duration::from_nanos(1)));
    assert_eq!(
        netblt_udp::thread_timer_slack(),
        outer,
        "other threads keep theirs"
    );
}
