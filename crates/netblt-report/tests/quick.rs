//! A quick report into a temporary directory writes the file and every figure.

use netblt_report::{run, Options};

#[test]
fn quick_report_writes_file_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        out: dir.path().join("reproduction.md"),
        figures: dir.path().join("figures"),
        quick: true,
    };
    let rep = run(&opts, &mut |_, _, _| {}).unwrap();
    let md = std::fs::read_to_string(&opts.out).unwrap();
    for needle in [
        "Appendix II",
        "Appendix III",
        "Appendix IV",
        "Table I",
        "Table II",
        "Table III",
        "Table IV",
        "RFC 415",
    ] {
        assert!(md.contains(needle), "{needle} missing");
    }
    for stem in &rep.figures {
        for ext in ["png", "svg"] {
            assert!(
                opts.figures.join(format!("{stem}.{ext}")).exists(),
                "{stem}.{ext}"
            );
        }
    }
    assert_eq!(rep.figures.len(), 5);
}
