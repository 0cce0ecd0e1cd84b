//! File names from the network: sanitized before they touch the disk.
//!
//! A name is a relative path with `/` separators. We refuse absolute paths,
//! `..`, `.` and empty components, NUL bytes and backslashes, and names
//! longer than [`super::meta::MAX_NAME`]. The result is joined under the
//! receiver's `--dir`; the parent directory is then canonicalized and checked
//! to still lie inside it, which also defeats symlinks pointing outside on
//! the way. The last component may still be a link: its users open it with
//! `O_NOFOLLOW` (decision K25).

use std::path::{Component, Path, PathBuf};

/// Why a name is refused (sent in REFUSED).
pub(crate) const NOT_ALLOWED: &str = "name not allowed";

/// Checks a peer-supplied name; returns its components.
pub(crate) fn sanitize(name: &str) -> Result<Vec<&str>, &'static str> {
    if name.is_empty() || name.len() > super::meta::MAX_NAME || name.starts_with('/') {
        return Err(NOT_ALLOWED);
    }
    let parts: Vec<&str> = name.split('/').collect();
    for p in &parts {
        if p.is_empty() || *p == "." || *p == ".." || p.contains('\0') || p.contains('\\') {
            return Err(NOT_ALLOWED);
        }
    }
    Ok(parts)
}

/// `dir/name` for a sanitized name, checking that the real location of its
/// parent lies inside `dir`. With `create`, missing parent directories are
/// made.
pub(crate) fn resolve(dir: &Path, name: &str, create: bool) -> Result<PathBuf, String> {
    let parts = sanitize(name).map_err(str::to_string)?;
    let mut path = dir.to_path_buf();
    for p in &parts {
        path.push(p);
    }
    let parent = path.parent().unwrap_or(dir).to_path_buf();
    let root = dir.canonicalize().map_err(|e| super::io_reason(&e))?;
    if create {
        // The part of the parent that exists must lie inside before any
        // directory is made below it: a link on the way to a directory
        // outside would otherwise have the missing ones made out there,
        // and refused only afterwards.
        let there = parent.ancestors().find(|a| a.exists()).unwrap_or(dir);
        let real = there.canonicalize().map_err(|e| super::io_reason(&e))?;
        if !real.starts_with(&root) {
            return Err(NOT_ALLOWED.into());
        }
        std::fs::create_dir_all(&parent).map_err(|e| super::io_reason(&e))?;
    }
    let real_parent = match parent.canonicalize() {
        Ok(p) => p,
        Err(_) if !create => return Err("no such file".into()),
        Err(e) => return Err(super::io_reason(&e)),
    };
    if !real_parent.starts_with(&root) {
        return Err(NOT_ALLOWED.into());
    }
    match path.file_name() {
        Some(f) => Ok(real_parent.join(f)),
        None => Err(NOT_ALLOWED.into()),
    }
}

/// Names under which `paths` (files or directories) are sent: a file by its
/// file name, a directory's files as `dirname/rel/path`. An error comes with
/// the path it is about (the one the user named, or one inside a directory),
/// so the message can say which.
pub(crate) fn walk(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, (PathBuf, std::io::Error)> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| (p.clone(), e))?;
        let base = p
            .components()
            .rfind(|c| matches!(c, Component::Normal(_)))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        if meta.is_dir() {
            walk_dir(p, &base, &mut out)?;
        } else {
            out.push((p.clone(), base));
        }
    }
    Ok(out)
}

fn walk_dir(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(PathBuf, String)>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let at = |e| (dir.to_path_buf(), e);
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .and_then(|d| d.collect::<Result<_, _>>())
        .map_err(at)?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = format!("{prefix}/{}", e.file_name().to_string_lossy());
        let ft = e.file_type().map_err(|err| (e.path(), err))?;
        if ft.is_dir() {
            walk_dir(&e.path(), &name, out)?;
        } else if ft.is_file() {
            out.push((e.path(), name));
        }
        // Symlinks, devices, sockets and FIFOs inside a directory are skipped.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_out_makes_nothing_there() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("lnk")).unwrap();
        assert_eq!(resolve(&root, "lnk/new/f", true), Err(NOT_ALLOWED.into()));
        assert!(!outside.join("new").exists(), "made outside");
        // Inside, missing directories are still made.
        let p = resolve(&root, "a/b/f", true).unwrap();
        assert!(root.join("a/b").is_dir());
        assert_eq!(p, root.canonicalize().unwrap().join("a/b/f"));
    }

    #[test]
    fn refuses_escapes() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "a\\b",
            "a/.",
        ] {
            assert!(sanitize(bad).is_err(), "{bad}");
        }
        assert_eq!(sanitize("a/b.txt"), Ok(vec!["a", "b.txt"]));
        assert!(sanitize("..hidden").is_ok());
    }
}
