//! The stable error codes of `--json` (decision F26): a script matches
//! `error_kind`, `peer_reason` and `io_kind`, not English text, in a
//! transfer's report, a bundle entry, and the object printed when a
//! command fails before any transfer.

mod common;

use common::*;

/// The JSON objects a run printed on stdout, one per line.
fn objects(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A file that exists at a receiver without `--force`: the sender's report
/// says `refused_by_peer` / `file_exists` (once: no error object after the
/// report), the receiver's refusal object `reason_code` `file_exists`.
#[test]
fn a_refusal_has_its_codes_at_both_ends() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("x.bin");
    write(&p, b"payload");
    write(&dst.path().join("x.bin"), b"other");
    let r = Recv::start(&["--once", "--json", "--dir", dst.path().to_str().unwrap()]);
    let (code, out, err) = run(&["send", p.to_str().unwrap(), &r.addr, "--json"], T);
    assert_eq!(code, Some(1), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "one object: {out}");
    assert_eq!(v[0]["error_kind"], "refused_by_peer", "{out}");
    assert_eq!(v[0]["peer_reason"], "file_exists", "{out}");
    assert!(v[0].get("io_kind").is_none(), "{out}");
    // The message is still there, unchanged.
    assert!(
        v[0]["error"].as_str().unwrap_or("").contains("file exists"),
        "{out}"
    );
    let (rcode, rout, rerr) = r.finish(T);
    assert_eq!(rcode, Some(3), "{rerr}");
    let rv = objects(&rout);
    assert_eq!(rv[0]["refused"]["reason_code"], "file_exists", "{rout}");
}

/// A successful transfer's report has `error_kind: null` beside
/// `error: null`, and no other code.
#[test]
fn a_success_has_a_null_error_kind() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let p = src.path().join("ok.bin");
    write(&p, &data(10_000, 26));
    let r = Recv::start(&["--once", "--dir", dst.path().to_str().unwrap()]);
    let (code, out, err) = run(&["send", p.to_str().unwrap(), &r.addr, "--json"], T);
    assert_eq!(code, Some(0), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    let o = v[0].as_object().expect("object");
    assert_eq!(o.get("error"), Some(&serde_json::Value::Null), "{out}");
    assert_eq!(o.get("error_kind"), Some(&serde_json::Value::Null), "{out}");
    assert!(
        !o.contains_key("peer_reason") && !o.contains_key("io_kind"),
        "{out}"
    );
    drop(r);
}

/// Nothing listening: the report (the OPEN went out) carries
/// `nothing_listening`, and no error object follows it (one per failure),
/// in `--json` and in `--json-stream`'s `end` event.
#[test]
fn nothing_listening_is_one_report_with_its_code() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    write(&p, b"x");
    let to = format!("127.0.0.1:{port}");
    let (code, out, err) = run(&["send", p.to_str().unwrap(), &to, "--json"], T);
    assert_eq!(code, Some(4), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["error_kind"], "nothing_listening", "{out}");
    assert!(
        v[0]["error"].as_str().unwrap_or("").contains("refused"),
        "{out}"
    );
    // The line on stderr is as before.
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for cmd in [
        vec!["send", p.to_str().unwrap(), &to, "--json-stream"],
        vec!["bench", &to, "--size", "1M", "--json-stream"],
    ] {
        let (code, out, err) = run(&cmd, T);
        assert_eq!(code, Some(4), "{err}");
        let v = objects(&out);
        assert_eq!(v.len(), 1, "{cmd:?}: {out}");
        assert_eq!(v[0]["event"], "end", "{out}");
        assert_eq!(v[0]["data"]["error_kind"], "nothing_listening", "{out}");
    }
}

/// A failure before any transfer has no report: `--json` prints one error
/// object, `--json-stream` an `error` event, where the report would be.
#[test]
fn a_failure_before_any_transfer_is_one_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.bin");
    let gone = gone.to_str().unwrap();
    let (code, out, err) = run(&["send", gone, "127.0.0.1:9", "--json"], T);
    assert_eq!(code, Some(3), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["error_kind"], "local", "{out}");
    assert!(
        v[0]["error"].as_str().unwrap_or("").contains("gone.bin"),
        "{out}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, out, err) = run(&["send", gone, "127.0.0.1:9", "--json-stream"], T);
    assert_eq!(code, Some(3), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["event"], "error", "{out}");
    assert_eq!(v[0]["data"]["error_kind"], "local", "{out}");
    // A usage error found after parsing is `invalid_options` (exit 2).
    let (code, out, err) = run(&["send", "-", "127.0.0.1:9", "--json"], T);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(objects(&out)[0]["error_kind"], "invalid_options", "{out}");
    // Without --json, standard output stays empty.
    let (code, out, _) = run(&["send", gone, "127.0.0.1:9"], T);
    assert_eq!(code, Some(3));
    assert!(out.is_empty(), "{out}");
}

/// `get` to a file that is here: refused before asking anyone, a local
/// failure whose I/O kind is `already_exists`.
#[test]
fn a_get_to_a_file_that_is_here_is_already_exists() {
    let served = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    write(&served.path().join("g.bin"), b"served");
    let mine = here.path().join("g.bin");
    write(&mine, b"mine");
    let r = Recv::start(&["--serve", "--dir", served.path().to_str().unwrap()]);
    let (code, out, err) = run(
        &[
            "get",
            &r.addr,
            "g.bin",
            "-o",
            mine.to_str().unwrap(),
            "--json",
        ],
        T,
    );
    assert_eq!(code, Some(3), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["error_kind"], "local", "{out}");
    assert_eq!(v[0]["io_kind"], "already_exists", "{out}");
    assert_eq!(std::fs::read(&mine).unwrap(), b"mine");
    drop(r);
}

/// `send` of a tree `t` of two files, `a` and `b`, with `--json` to a
/// `recv --once --json` whose directory `prepare` filled first: the
/// receiver's directory, the sender's exit code, stdout and stderr, and the
/// receiver's.
#[allow(clippy::type_complexity)]
fn send_tree_against(
    prepare: impl FnOnce(&std::path::Path),
) -> (
    tempfile::TempDir,
    Option<i32>,
    String,
    String,
    (Option<i32>, String, String),
) {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    for n in ["a", "b"] {
        write(&src.path().join("t").join(n), n.repeat(100).as_bytes());
    }
    prepare(dst.path());
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap(), "--once", "--json"]);
    let (code, out, err) = run(
        &[
            "send",
            src.path().join("t").to_str().unwrap(),
            &r.addr,
            "--json",
        ],
        T,
    );
    let theirs = r.finish(T);
    (dst, code, out, err, theirs)
}

/// A bundle whose file differs at the receiver: the receiver's entry says
/// `io_kind: already_exists`, the sender's report `aborted_by_peer` /
/// `entries_not_stored`.
#[test]
fn a_bundle_entry_that_exists_has_its_io_kind() {
    let (dst, code, out, err, (rcode, rout, rerr)) =
        send_tree_against(|dst| write(&dst.join("t/b"), b"old"));
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(rcode, Some(1), "{rerr}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["error_kind"], "aborted_by_peer", "{out}");
    assert_eq!(v[0]["peer_reason"], "entries_not_stored", "{out}");
    // F28: the reason's flag, `exists`, in `peer_detail`.
    assert_eq!(
        v[0]["peer_detail"],
        serde_json::json!({ "exists": true }),
        "{out}"
    );
    let rv = objects(&rout);
    let failed = &rv[0]["files"]["failed"];
    assert_eq!(failed[0]["name"], "t/b", "{rout}");
    assert_eq!(failed[0]["io_kind"], "already_exists", "{rout}");
    assert_eq!(std::fs::read(dst.path().join("t/b")).unwrap(), b"old");
}

/// F28: a bundle entry not stored for another reason than a file that
/// exists (a directory in the way of a file): `peer_detail.exists` is
/// false, and the receiver's entry has no `already_exists`.
#[test]
fn a_bundle_entry_in_the_way_is_not_exists() {
    let (dst, code, out, err, (_, rout, rerr)) =
        send_tree_against(|dst| write(&dst.join("t/b/inside"), b"kept"));
    assert_eq!(code, Some(1), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["peer_reason"], "entries_not_stored", "{out}");
    assert_eq!(
        v[0]["peer_detail"],
        serde_json::json!({ "exists": false }),
        "{out}"
    );
    let rv = objects(&rout);
    let failed = &rv[0]["files"]["failed"];
    assert_eq!(failed[0]["name"], "t/b", "{rout}{rerr}");
    assert_ne!(failed[0]["io_kind"], "already_exists", "{rout}");
    assert_eq!(
        std::fs::read(dst.path().join("t/b/inside")).unwrap(),
        b"kept"
    );
}

/// F28: the commands with a JSON mode beside the transfers' print the same
/// one object when they fail without one: a scenario file that is not
/// there (`sim`, a local error with its I/O kind, exit 3 as `send`'s file
/// that is not there), an unknown profile (`profiles`, `invalid_options`),
/// a demo's bad option, a measurement's unreadable input (`model fit`,
/// exit 1, `other`: the measurement tools' errors carry no library kind).
#[test]
fn the_other_commands_json_failures_are_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.json");
    let gone = gone.to_str().unwrap();
    let (code, out, err) = run(&["sim", "--scenario", gone, "--json"], T);
    assert_eq!(code, Some(3), "{err}");
    let v = objects(&out);
    assert_eq!(v.len(), 1, "{out}");
    assert_eq!(v[0]["error_kind"], "local", "{out}");
    assert_eq!(v[0]["io_kind"], "not_found", "{out}");
    assert!(
        v[0]["error"].as_str().unwrap_or("").contains("gone.json"),
        "{out}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Without --json, standard output stays empty.
    let (code, out, _) = run(&["sim", "--scenario", gone], T);
    assert_eq!(code, Some(3));
    assert!(out.is_empty(), "{out}");
    let cases: [(&[&str], i32, &str); 3] = [
        (
            &["profiles", "no-such-path", "--json"],
            2,
            "invalid_options",
        ),
        (&["demo", "--loss", "2", "--json"], 2, "invalid_options"),
        (&["model", "fit", "--rtt-json", gone, "--json"], 1, "other"),
    ];
    for (args, want, kind) in cases {
        let (code, out, err) = run(args, T);
        assert_eq!(code, Some(want), "{args:?}: {err}");
        let v = objects(&out);
        assert_eq!(v.len(), 1, "{args:?}: {out}");
        assert_eq!(v[0]["error_kind"], kind, "{args:?}: {out}");
        assert!(v[0]["error"].is_string(), "{args:?}: {out}");
    }
}
