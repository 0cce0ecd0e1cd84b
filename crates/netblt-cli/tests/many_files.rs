//! Many files: a directory sent with `--parallel` (one bundle per shard, or
//! one connection per file with `--per-file`), modification times and
//! permission bits kept, symlinks never followed, a failed file reported
//! while the others go on. (One bundle: tests/bundle.rs.)

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn a_directory_of_small_files_in_parallel(per_file: bool) {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("secret"), b"outside the tree");
    let root = src.path().join("tree");
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_234_567_890);
    for i in 0..200u64 {
        let p = root.join(format!("d{}/f{i}", i % 7));
        write(&p, &data(1 + (i as usize * 331) % 65_536, i));
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(t).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640 + (i % 2) as u32))
            .unwrap();
    }
    // Symlinks inside the tree, one pointing out of it: never followed.
    std::os::unix::fs::symlink(outside.path().join("secret"), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape_dir")).unwrap();
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let mut args = vec!["send", root.to_str().unwrap(), &r.addr, "--parallel", "8"];
    if per_file {
        args.push("--per-file");
    }
    let (code, out, err) = run(&args, T);
    assert_eq!(code, Some(0), "{err}");
    if per_file {
        assert_eq!(out.lines().count(), 200, "one line per file");
    } else {
        // 8 shards of files, then the directories.
        let lines: Vec<_> = out.lines().filter(|l| l.contains(" -> ")).collect();
        assert_eq!(lines.len(), 9, "{out}");
        assert!(
            lines[8].contains("(directories)") && lines[8].contains("0 files and 8 directories"),
            "{out}"
        );
    }
    for i in 0..200u64 {
        let rel = format!("tree/d{}/f{i}", i % 7);
        let (a, b) = (src.path().join(&rel), dst.path().join(&rel));
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{rel}"
        );
        let m = std::fs::metadata(&b).unwrap();
        assert_eq!(m.modified().unwrap(), t, "{rel}: mtime kept");
        assert_eq!(
            m.permissions().mode() & 0o777,
            0o640 + (i % 2) as u32,
            "{rel}: mode kept"
        );
    }
    assert!(!dst.path().join("tree/escape").exists());
    assert!(!dst.path().join("tree/escape_dir").exists());
    assert!(temp_files(dst.path()).is_empty());
}

#[test]
fn a_directory_of_small_files_one_connection_each() {
    a_directory_of_small_files_in_parallel(true);
}

#[test]
fn a_directory_of_small_files_in_parallel_bundles() {
    a_directory_of_small_files_in_parallel(false);
}

#[test]
fn one_failed_file_does_not_stop_the_others() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    for n in ["a", "b", "c"] {
        write(&src.path().join(n), n.as_bytes());
    }
    // "b" is already at the receiver: refused there (no --force).
    write(&dst.path().join("b"), b"old");
    let r = Recv::start(&["--dir", dst.path().to_str().unwrap()]);
    let files: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| src.path().join(n).display().to_string())
        .collect();
    for par in ["1", "3"] {
        let _ = std::fs::remove_file(dst.path().join("a"));
        let _ = std::fs::remove_file(dst.path().join("c"));
        let (code, out, err) = run(
            &[
                "send",
                &files[0],
                &files[1],
                &files[2],
                &r.addr,
                "--parallel",
                par,
                "--per-file",
            ],
            T,
        );
        assert_eq!(code, Some(1), "{out}\n{err}");
        assert!(
            err.contains("b: ") && err.contains("refused") && err.contains("file exists"),
            "{err}"
        );
        assert_eq!(std::fs::read(dst.path().join("a")).unwrap(), b"a");
        assert_eq!(std::fs::read(dst.path().join("c")).unwrap(), b"c");
        assert_eq!(std::fs::read(dst.path().join("b")).unwrap(), b"old");
    }
}
