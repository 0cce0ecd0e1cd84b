//! A quick report into a temporary directory writes the file and every
//! figure, and a second one (reusing the kept host measurement) is the same.

use netblt_report::{run, Options};

#[test]
fn quick_report_writes_file_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        out: dir.path().join("reproduction.md"),
        figures: dir.path().join("figures"),
        quick: true,
        host_file: dir.path().join("rfc415-host.json"),
        measure_host: true,
    };
    let rep = run(&opts, &mut |_, _, _| {}).unwrap();
    let md = std::fs::read_to_string(&opts.out).unwrap();
    // Issue 13: "the report stays deterministic (same output twice)". The
    // host measurement (RFC 415's table) was kept; a second report reuses it
    // and comes out the same, byte for byte.
    let host = rep.rfc415.as_ref().expect("a host measurement");
    assert_eq!(host.rows.len(), netblt_report::rfc415::PAPER.len());
    assert!(md.contains(&host.measured_at), "no provenance line");
    let again = Options {
        measure_host: false,
        ..opts.clone()
    };
    run(&again, &mut |_, _, _| {}).unwrap();
    let md2 = std::fs::read_to_string(&opts.out).unwrap();
    assert!(md == md2, "the second report differs from the first");
    for needle in [
        "Appendix II",
        "Appendix III",
        "Appendix IV",
        "Table I",
        "Table II",
        "Table III",
        "Table IV",
        "RFC 415",
        "Appendix III against Subnet 26's load",
        "ten times the transfer size",
        "Appendix III against the 3C500's re-enable time",
        "Appendix III against Subnet 26's broadcasts",
        "one control message per packet",
        "Rows declared unmodellable",
        "against the bottleneck's queue",
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
    // The sensitivity runs: every load of the sweep, every BI-90 packet size.
    assert_eq!(
        rep.rfc1030_segment_sweep.len(),
        netblt_report::rfc1030_sensitivity::LOADS.len()
    );
    assert_eq!(rep.rfc1030_wideband_long.len(), 7);
    // RFC 1106's queue sweep: four columns at the quick sweep's two queues
    // (the profile's and no limit); no limit leaves no queue drop.
    assert_eq!(rep.rfc1106_queue.len(), 4 * 2);
    for r in rep.rfc1106_queue.iter().filter(|r| r.queue_bdp.is_none()) {
        assert_eq!(r.queue_drops, 0.0, "nak {} ber {}", r.nak, r.ber);
    }
    let trends = |table: &str| {
        rep.summary
            .iter()
            .find(|t| t.table == table)
            .map_or(0, |t| t.trends.len())
    };
    assert_eq!(trends("RFC 1030 Appendix III"), 3);
    assert_eq!(trends("RFC 1030 Appendix IV"), 2);
    // Every table counts its modelled rows; the declared ones carry a reason.
    for t in &rep.summary {
        assert_eq!(
            t.modelled_rows + t.unmodellable.len(),
            t.rows,
            "{}",
            t.table
        );
        for u in &t.unmodellable {
            assert!(u.reason.starts_with("unmodellable: "), "{}", u.reason);
        }
    }
    let declared = |table: &str| {
        rep.summary
            .iter()
            .find(|t| t.table == table)
            .map_or(0, |t| t.unmodellable.len())
    };
    // App. III's eleven two-buffer rows, App. IV's five fragmented ones.
    assert_eq!(declared("RFC 1030 Appendix III"), 11);
    assert_eq!(declared("RFC 1030 Appendix IV"), 5);
}
