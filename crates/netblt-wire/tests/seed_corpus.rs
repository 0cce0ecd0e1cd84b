//! Keeps the fuzz seed corpus (`fuzz/corpus/parse/seed-<type>`) in step with the encoder.
//!
//! Each seed is one valid packet of one type. The test fails if a seed is missing or differs
//! from what the encoder emits today; run it with `NETBLT_WRITE_SEEDS=1` to (re)write them.

mod common;

use std::path::PathBuf;

use common::samples;
use netblt_wire::Packet;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/parse")
}

#[test]
fn seed_corpus_matches_encoder() {
    let dir = corpus_dir();
    let write = std::env::var_os("NETBLT_WRITE_SEEDS").is_some();
    if write {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (ty, built) in samples() {
        let bytes = built.bytes();
        assert!(Packet::parse(&bytes).is_ok());
        let path = dir.join(format!("seed-{}", ty.name().to_ascii_lowercase()));
        if write {
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with NETBLT_WRITE_SEEDS=1 to create)",
                path.display()
            )
        });
        assert_eq!(on_disk, bytes, "{} is stale", path.display());
    }
}
