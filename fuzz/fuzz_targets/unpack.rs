//! A bundle's tar stream, as a hostile sender could make it, unpacked into a
//! directory that already holds files, a subdirectory and a link pointing
//! outside it (`netblt::fuzzing::unpack`, the receiver's `Unpacker`).
//!
//! The input is read as a list of entries (so that most inputs get past the
//! tar headers' checksums): per entry a kind, a name made of components
//! that matter here (`..`, `.`, the names already there, the link), a
//! header size that may lie, and data; raw blocks may be mixed in. It must
//! never panic, never write or change anything outside the directory (the
//! file the link points to keeps its bytes; nothing else appears beside
//! it), never change a file that was there without `force`, and leave no
//! temporary file after the commit or the abandon. Now and then the stream
//! is unpacked as a client fetching the directory `sub` into `new` does
//! (`get`, decision M15): then nothing but `new` may appear or change.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

const PARTS: [&[u8]; 10] = [
    b"exists", b"link", b"sub", b"f", b"..", b".", b"", b"new", b"sub/f", b"\\x",
];

/// Takes `n` bytes from the front of `data` (fewer if it runs out).
fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (a, b) = data.split_at(n.min(data.len()));
    *data = b;
    a
}

fn byte(data: &mut &[u8]) -> u8 {
    take(data, 1).first().copied().unwrap_or(0)
}

fn stream(mut data: &[u8]) -> (Vec<u8>, usize, bool, bool, bool) {
    let flags = byte(&mut data);
    let piece = 1 + usize::from(byte(&mut data)) * 97;
    let mut out = Vec::new();
    while !data.is_empty() && out.len() < 1 << 20 {
        let op = byte(&mut data);
        if op % 8 == 7 {
            // A raw block: whatever the input says, 512 bytes.
            let mut b = take(&mut data, 512).to_vec();
            b.resize(512, 0);
            out.extend_from_slice(&b);
            continue;
        }
        let mut name = Vec::new();
        for _ in 0..(op >> 4) % 4 + 1 {
            if !name.is_empty() {
                name.push(b'/');
            }
            name.extend_from_slice(PARTS[usize::from(byte(&mut data)) % PARTS.len()]);
        }
        let len = usize::from(byte(&mut data)) * 7;
        let body = take(&mut data, len).to_vec();
        // Mostly the truth about the length; now and then a lie.
        let size = if op & 8 != 0 {
            u64::from(byte(&mut data)) * 13
        } else {
            body.len() as u64
        };
        let mode = u32::from(byte(&mut data)) << 4;
        netblt::fuzzing::tar_entry(&mut out, &name, op % 8 == 1, &body, size, mode);
    }
    if flags & 1 == 0 {
        netblt::fuzzing::tar_end(&mut out);
    }
    (out, piece, flags & 2 != 0, flags & 4 == 0, flags & 8 != 0)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn temp_files(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.ends_with(".netblt-bundle") {
            out.push(n);
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            temp_files(&e.path(), out);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (s, piece, force, commit, fetched) = stream(data);
    let base = tempfile::tempdir().expect("tempdir");
    let outside = base.path().join("outside");
    let dst = base.path().join("dst");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir_all(dst.join("sub")).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::fs::write(dst.join("exists"), b"abc").unwrap();
    std::fs::write(dst.join("sub/f"), b"abc").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), dst.join("link")).unwrap();
    std::os::unix::fs::symlink(&outside, dst.join("sub/out")).unwrap();

    if fetched {
        let _ = netblt::fuzzing::unpack_fetched(&dst, &s, piece, force, commit, (b"sub", b"new"));
        // Only the destination: what was beside it is as it was.
        assert_eq!(std::fs::read(dst.join("exists")).unwrap(), b"abc");
        assert_eq!(std::fs::read(dst.join("sub/f")).unwrap(), b"abc");
        let mut top = names(&dst);
        top.retain(|n| n != "new");
        assert_eq!(top, ["exists", "link", "sub"]);
    } else {
        let _ = netblt::fuzzing::unpack(&dst, &s, piece, force, commit);
    }

    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(names(&outside), ["secret"]);
    assert_eq!(names(base.path()), ["dst", "outside"]);
    if !force {
        assert_eq!(std::fs::read(dst.join("exists")).unwrap(), b"abc");
    }
    let mut left = Vec::new();
    temp_files(&dst, &mut left);
    assert!(left.is_empty(), "temporary files left: {left:?}");
});
