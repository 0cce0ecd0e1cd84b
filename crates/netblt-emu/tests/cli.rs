//! The `emu` example binary (the same `cli::run` the `netblt` binary wires
//! in), run as a separate process: exit statuses, `--right`, `up`/`down`/
//! `list`, signals, and that no namespace survives any of it.
//!
//! Root-only, like the library tests; skipped with a notice otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use netblt_emu::{check_environment, EmuStats};

fn can_run(test: &str) -> bool {
    match check_environment() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            false
        }
    }
}

/// `cargo test` builds the examples next to the test binaries' `deps/` directory.
fn emu_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    dir.join("examples").join("emu")
}

fn name(tag: &str) -> String {
    format!("c{}{tag}", std::process::id())
}

fn ns_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

fn emu(args: &[&str]) -> Output {
    Command::new(emu_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run emu example")
}

#[test]
fn run_form_returns_the_command_status_and_cleans_up() {
    if !can_run("run_form_returns_the_command_status_and_cleans_up") {
        return;
    }
    let n = name("st");
    let out = emu(&["--name", &n, "--delay", "1", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reachable at 198.18.0.2"), "{stderr}");
    assert!(!ns_exists(&format!("nb-{n}-l")) && !ns_exists(&format!("nb-{n}-r")));
}

/// `netblt emu --name N [EXTRA] --right RIGHT -- sh -c true`.
fn with_right(n: &str, right: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--name", n];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "--right",
        right,
        "--right-wait",
        "200",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    emu(&args)
}

#[test]
fn right_command_runs_first_and_is_killed_at_the_end() {
    if !can_run("right_command_runs_first_and_is_killed_at_the_end") {
        return;
    }
    let n = name("rt");
    let marker = std::env::temp_dir().join(format!("{n}.pid"));
    let right = format!("echo $$ > {}; exec sleep 60", marker.display());
    let out = with_right(&n, &right, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stats: EmuStats = serde_json::from_slice(&out.stdout).expect("JSON counters on stdout");
    assert_eq!(stats.name, n);
    assert!(!stats.failed, "{:?}", stats.failure);
    let pid: i32 = std::fs::read_to_string(&marker)
        .expect("the right command ran")
        .trim()
        .parse()
        .unwrap();
    let _ = std::fs::remove_file(&marker);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the right command survived"
    );
    assert!(!ns_exists(&format!("nb-{n}-r")));
}

/// The right command's shell dies at SIGTERM at once; what it started gets
/// its second to finish (a `netblt recv` printing its report) before the
/// group is killed.
#[test]
fn the_right_commands_processes_get_time_to_finish() {
    if !can_run("the_right_commands_processes_get_time_to_finish") {
        return;
    }
    let n = name("gr");
    let marker = std::env::temp_dir().join(format!("{n}.done"));
    let _ = std::fs::remove_file(&marker);
    let right = format!(
        "(trap 'sleep 0.2; touch {}; exit 0' TERM; while true; do sleep 0.05; done) & wait",
        marker.display()
    );
    let out = with_right(&n, &right, &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        marker.exists(),
        "the right side was killed before it finished"
    );
    let _ = std::fs::remove_file(&marker);
}

#[test]
fn sigterm_stops_the_command_and_removes_the_namespaces() {
    if !can_run("sigterm_stops_the_command_and_removes_the_namespaces") {
        return;
    }
    let n = name("sg");
    let mut child = Command::new(emu_bin())
        .args(["--name", &n, "--", "sleep", "60"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let left = format!("nb-{n}-l");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ns_exists(&left) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ns_exists(&left), "the emulation never came up");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill with our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    // sleep was ended by the forwarded SIGTERM: 128 + 15.
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(!ns_exists(&left) && !ns_exists(&format!("nb-{n}-r")));
}

#[test]
fn up_list_down() {
    if !can_run("up_list_down") {
        return;
    }
    let n = name("ud");
    let out = emu(&["up", &n, "--delay", "2", "--rate", "50M"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(ns_exists(&format!("nb-{n}-l")) && ns_exists(&format!("nb-{n}-r")));
    let again = emu(&["up", &n]);
    assert_ne!(
        again.status.code(),
        Some(0),
        "a second `up` of the same name must fail"
    );

    let list = emu(&["list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    let line = text.lines().find(|l| l.starts_with(&n)).unwrap_or_default();
    assert!(line.contains("running"), "{text}");

    let down = emu(&["down", &n, "--json"]);
    assert_eq!(down.status.code(), Some(0), "{down:?}");
    let stats: EmuStats = serde_json::from_slice(&down.stdout).expect("final counters");
    assert_eq!(stats.tx_dropped.map(|t| t.left + t.right), Some(0));
    assert!(!ns_exists(&format!("nb-{n}-l")) && !ns_exists(&format!("nb-{n}-r")));
    assert!(!Path::new(&format!("/run/netblt/{n}.pid")).exists());

    let gone = emu(&["down", &n]);
    assert_ne!(gone.status.code(), Some(0));
}

#[test]
fn down_removes_what_a_killed_forwarder_left() {
    if !can_run("down_removes_what_a_killed_forwarder_left") {
        return;
    }
    let n = name("kl");
    assert_eq!(emu(&["up", &n]).status.code(), Some(0));
    let pid: i32 = std::fs::read_to_string(format!("/run/netblt/{n}.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: the forwarder this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(200));
    assert!(ns_exists(&format!("nb-{n}-l")), "SIGKILL cannot clean up");
    let down = emu(&["down", &n]);
    assert_eq!(down.status.code(), Some(0), "{down:?}");
    assert!(!ns_exists(&format!("nb-{n}-l")) && !ns_exists(&format!("nb-{n}-r")));
}

#[test]
fn without_root_one_line_and_status_2() {
    if !can_run("without_root_one_line_and_status_2") {
        return;
    }
    let bin = emu_bin();
    // The example must be reachable by an unprivileged user for this to say anything.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(["--", "true"])
        .output();
    let Ok(out) = out else {
        eprintln!("skipping: setpriv not available");
        return;
    };
    if String::from_utf8_lossy(&out.stderr).contains("Permission denied") {
        eprintln!("skipping: {} is not accessible to nobody", bin.display());
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(netblt_emu::cli::EXIT_ENVIRONMENT),
        "{out:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
}
