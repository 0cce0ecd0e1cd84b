//! `netblt completions SHELL` and `netblt man DIR`: generated from the
//! command-line definition, covering every subcommand.

mod common;

use common::output;

const SUBCOMMANDS: &[&str] = &[
    "sim",
    "profiles",
    "emu",
    "recv",
    "send",
    "get",
    "bench",
    "demo",
    "echo",
    "rtt",
    "load",
    "model",
    "cpu",
    "report",
    "completions",
    "man",
];

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = output(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.contains("netblt"), "{shell}");
        for sub in ["recv", "send", "bench"] {
            assert!(s.contains(sub), "{shell}: {sub} missing");
        }
    }
    let bash = String::from_utf8(output(&["completions", "bash"]).stdout).unwrap();
    assert!(bash.contains("complete -F _netblt") && bash.contains("--rate"));
    let o = output(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_pages_one_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = output(&["man", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let top = std::fs::read_to_string(out.join("netblt.1")).unwrap();
    assert!(top.starts_with(".ie") || top.contains(".TH"), "not roff");
    assert!(
        top.contains(".TH netblt 1"),
        "{}",
        &top[..200.min(top.len())]
    );
    for sub in SUBCOMMANDS {
        let page = out.join(format!("netblt-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        assert!(
            text.contains(".SH NAME"),
            "{} missing or empty",
            page.display()
        );
    }
    let send = std::fs::read_to_string(out.join("netblt-send.1")).unwrap();
    assert!(send.contains("death\\-timer") || send.contains("death-timer"));
}
