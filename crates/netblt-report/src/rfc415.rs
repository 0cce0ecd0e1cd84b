//! RFC 415's table for our time: kernel TCP over loopback, message sizes like
//! the paper's 8-bit-byte rows, with CPU baud = bits per CPU-second.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context as _;
use netblt_measure::cpu::{measure_cpu, CpuConfig, CpuRow};
use netblt_measure::{EchoServer, EchoServerConfig, Transport};
use serde::{Deserialize, Serialize};

use super::fmt::{num, table};

/// RFC 415, BIN/BOUT buffered mode, 8-bit bytes: bytes, real baud, CPU baud, CPU needed (%).
pub const PAPER: &[(usize, f64, f64, f64)] = &[
    (50, 22.0e3, 70e3, 31.0),
    (100, 26.7e3, 76e3, 35.0),
    (200, 29.0e3, 79e3, 36.0),
    (400, 30.0e3, 81e3, 37.0),
    (800, 31.9e3, 78e3, 40.0),
    (1600, 38.1e3, 64e3, 59.0),
    (3200, 41.8e3, 59e3, 70.0),
];

/// Runs `netblt cpu`'s measurement against an echo server of our own on
/// 127.0.0.1 (TCP), `bytes` per size.
pub fn run(bytes: u64) -> anyhow::Result<Vec<CpuRow>> {
    let mut cfg = EchoServerConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    cfg.udp = false;
    let server = EchoServer::start(cfg)?;
    let addr = server
        .tcp_addr()
        .ok_or_else(|| anyhow::anyhow!("echo server has no TCP address"))?;
    let mut c = CpuConfig::new(addr, Transport::Tcp);
    c.sizes = PAPER.iter().map(|p| p.0).collect();
    c.bytes = bytes;
    let report = measure_cpu(&c, None, &mut |_| {});
    server.shutdown();
    Ok(report?.rows)
}

/// A measurement of this host kept in a file (`docs/rfc415-host.json`), so
/// that the report is the same every time it is made (issue 13: "the report
/// stays deterministic"); `netblt report --measure-host` measures again and
/// rewrites it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// When it was measured (UTC, RFC 3339), as the measuring run saw it.
    pub measured_at: String,
    /// The 1-, 5- and 15-minute load averages just before it.
    pub load_before: Option<[f64; 3]>,
    /// Bytes per message size.
    pub bytes: u64,
    /// One row per size of the paper's.
    pub rows: Vec<CpuRow>,
}

/// Reads a kept measurement.
pub fn load(path: &Path) -> anyhow::Result<HostRecord> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a host measurement", path.display()))
}

/// Measures this host (`run`) and keeps the result in `path`, written to a
/// temporary file first and renamed, so a failed run leaves the old one.
pub fn measure_and_keep(path: &Path, bytes: u64) -> anyhow::Result<HostRecord> {
    let measured_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let load_before = netblt_measure::loadavg::read_loadavg().map(|(a, b, c)| [a, b, c]);
    let rows = run(bytes)?;
    let rec = HostRecord {
        measured_at,
        load_before,
        bytes,
        rows,
    };
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(&rec)? + "\n";
    std::fs::write(&tmp, text).with_context(|| format!("{}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}", path.display()))?;
    Ok(rec)
}

/// Where the table's figures came from, one line of Markdown.
pub fn provenance(rec: &HostRecord) -> String {
    let load = rec.load_before.map_or(String::new(), |l| {
        format!(
            ", load average {:.2} {:.2} {:.2} before it",
            l[0], l[1], l[2]
        )
    });
    format!(
        "Measured on this project's machine at {}{load}, {} bytes per size, kept in \
         the host file (`--host-file`, by default `docs/rfc415-host.json`; `netblt report \
         --measure-host` measures again; without it the report reuses the kept figures, so that it comes out the same every \
         time).\n",
        rec.measured_at, rec.bytes
    )
}

/// RFC 415's table beside ours, as Markdown.
pub fn markdown(rows: &[CpuRow]) -> String {
    let body: Vec<Vec<String>> = PAPER
        .iter()
        .map(|&(size, real, cpu, needed)| {
            let ours = rows.iter().find(|r| r.size == size);
            let o = |f: fn(&CpuRow) -> f64, scale: f64, d: usize| {
                ours.map_or("-".into(), |r| num(f(r) / scale, d))
            };
            vec![
                format!("{size}/8"),
                num(real / 1e3, 1),
                o(|r| r.real_baud, 1e6, 0),
                num(cpu / 1e3, 0),
                o(|r| r.rfc415_cpu_baud, 1e6, 0),
                num(needed, 0),
                o(|r| r.client_cpu_pct + r.server_cpu_pct, 1.0, 0),
            ]
        })
        .collect();
    table(
        &[
            "bytes/size",
            "real baud paper (kb/s)",
            "ours (Mb/s)",
            "CPU baud paper (kb/s)",
            "ours (Mb/s)",
            "CPU needed paper (%)",
            "ours (%, both ends)",
        ],
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_foreign_host_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = format!("{:#}", load(&missing).unwrap_err());
        assert!(e.contains("none.json"), "{e}");
        let foreign = dir.path().join("foreign.json");
        std::fs::write(&foreign, "{\"rows\": 3}").unwrap();
        let e = format!("{:#}", load(&foreign).unwrap_err());
        assert!(e.contains("not a host measurement"), "{e}");
    }

    #[test]
    fn a_kept_record_reads_back_and_names_its_time_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host.json");
        let rec = HostRecord {
            measured_at: "2026-11-27T23:00:00Z".into(),
            load_before: Some([0.5, 0.25, 0.125]),
            bytes: 1 << 20,
            rows: Vec::new(),
        };
        std::fs::write(&path, serde_json::to_string(&rec).unwrap()).unwrap();
        assert_eq!(load(&path).unwrap(), rec);
        let line = provenance(&rec);
        assert!(line.contains("2026-11-27T23:00:00Z"), "{line}");
        assert!(line.contains("0.50 0.25 0.12"), "{line}");
        assert!(line.contains("1048576 bytes"), "{line}");
    }
}
