//! What interrupted bundles left behind, said once (decision F13).
//!
//! A bundle's files and new directories are written under temporary names,
//! `.<name>.<tag>.netblt-bundle`, and renamed into place once the whole
//! stream is verified (M3, M11). A transfer that fails or is interrupted
//! (SIGINT) removes them; one whose process was killed (SIGKILL, a crash,
//! a reboot) cannot, and nothing else does: another receiver sharing the
//! directory may be writing under such names right now, and telling its
//! live entries from dead ones needs a lock no transfer takes yet. So the
//! tool only says that they are there, where a user can remove them.

use std::path::Path;

/// The suffix of a bundle's temporary names.
const SUFFIX: &str = ".netblt-bundle";

/// Whether `name` is a bundle's temporary name: `.<name>.<8 hex>` then the
/// suffix.
fn is_leftover(name: &str) -> bool {
    let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(SUFFIX)) else {
        return false;
    };
    match stem.rsplit_once('.') {
        Some((base, tag)) => {
            !base.is_empty() && tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// The bundle temporary entries directly in `dir` (not below: a walk of a
/// large tree costs more than the warning is worth), sorted.
pub fn leftovers(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_leftover(n))
        .collect();
    found.sort();
    found
}

/// One line on standard error if `dir` holds bundle temporary entries.
pub fn warn(dir: &Path) {
    let found = leftovers(dir);
    let Some(first) = found.first() else {
        return;
    };
    let more = match found.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    // The full path: "." would name nothing a user can act on.
    let shown = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    eprintln!(
        "netblt: {}: {first}{more}: left by an interrupted bundle (a process killed while \
         unpacking); remove them once no transfer into this directory is running",
        shown.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bundle_temporary_names_are_leftovers() {
        assert!(is_leftover(".photos.90a8b28c.netblt-bundle"));
        assert!(is_leftover(".a.b.0123abcd.netblt-bundle"));
        for n in [
            "photos",
            ".photos.netblt-bundle",
            ".photos.90a8b28.netblt-bundle",
            ".photos.90a8b28g.netblt-bundle",
            "..90a8b28c.netblt-bundle",
            ".x.netblt-part",
            "photos.90a8b28c.netblt-bundle",
        ] {
            assert!(!is_leftover(n), "{n}");
        }
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".t.90a8b28c.netblt-bundle")).unwrap();
        std::fs::write(t.path().join(".f.0000ffff.netblt-bundle"), b"x").unwrap();
        std::fs::write(t.path().join("t"), b"x").unwrap();
        assert_eq!(
            leftovers(t.path()),
            [".f.0000ffff.netblt-bundle", ".t.90a8b28c.netblt-bundle"]
        );
        assert!(leftovers(&t.path().join("missing")).is_empty());
    }
}
