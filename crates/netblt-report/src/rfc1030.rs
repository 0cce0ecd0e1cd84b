//! RFC 1030 appendices II (Proteon ring), III (Ethernet) and IV (Wideband):
//! every row's inputs (BS/BI, PSZ, BFSZ, XFSZ, NBUFS) run through
//! `run_transfer` on the matching profile.

use netblt_link::profiles;
use netblt_proto::{DataTimerPolicy, PacingClock, TransferParams};
use netblt_sim::transfer::{run_transfer, TransferSpec};
use netblt_sim::PathConfig;
use serde::Serialize;

use super::fmt::{error_pct, fmt_error, mean, num, table};

/// One row of an appendix: inputs, then the paper's #LOSS, #RXM, DTMOS, SPEED.
#[derive(Clone, Copy, Debug)]
pub struct PaperRow {
    /// Packets per burst (BS).
    pub bs: u16,
    /// Burst interval in milliseconds (BI).
    pub bi: u16,
    /// Data bytes per packet (PSZ).
    pub psz: u16,
    /// Bytes per buffer (BFSZ).
    pub bfsz: u32,
    /// Transfer size in units of 1000 bytes (XFSZ).
    pub xfsz_kb: u64,
    /// Outstanding buffers (NBUFS).
    pub nbufs: u16,
    /// Data packets lost (#LOSS).
    pub loss: u32,
    /// Data packets retransmitted (#RXM).
    pub rxm: u32,
    /// Data timeouts at the receiver (DTMOS); appendix IV has no such column.
    pub dtmos: Option<u32>,
    /// Steady-state throughput in Mb/s (SPEED).
    pub speed: f64,
}

/// A row's inputs (BS, BI, PSZ, BFSZ, XFSZ, NBUFS): rows the paper repeated share one run.
type RowInputs = (u16, u16, u16, u32, u64, u16);

#[allow(clippy::too_many_arguments)] // one argument per column of the paper's table
const fn r(
    bi: u16,
    psz: u16,
    xfsz_kb: u64,
    nbufs: u16,
    loss: u32,
    rxm: u32,
    dtmos: Option<u32>,
    speed: f64,
) -> PaperRow {
    PaperRow {
        bs: 5,
        bi,
        psz,
        bfsz: psz as u32 * 10,
        xfsz_kb,
        nbufs,
        loss,
        rxm,
        dtmos,
        speed,
    }
}

/// Appendix II, Proteon ring (39 rows).
pub const PROTEON: &[PaperRow] = &[
    r(25, 1438, 1438, 1, 0, 0, Some(0), 1.45),
    r(25, 1438, 1438, 1, 0, 0, Some(0), 1.45),
    r(30, 1438, 1438, 1, 0, 0, Some(0), 1.45),
    r(30, 1438, 1438, 1, 0, 0, Some(0), 1.45),
    r(35, 1438, 1438, 1, 0, 0, Some(0), 1.40),
    r(35, 1438, 1438, 1, 0, 0, Some(0), 1.41),
    r(40, 1438, 1438, 1, 0, 0, Some(0), 1.33),
    r(40, 1438, 1438, 1, 0, 0, Some(0), 1.33),
    r(25, 1438, 1438, 2, 0, 0, Some(0), 1.62),
    r(25, 1438, 1438, 2, 0, 0, Some(0), 1.61),
    r(30, 1438, 1438, 2, 0, 0, Some(0), 1.60),
    r(30, 1438, 1438, 2, 0, 0, Some(0), 1.61),
    r(34, 1438, 1438, 2, 0, 0, Some(0), 1.59),
    r(35, 1438, 1438, 2, 0, 0, Some(0), 1.58),
    r(25, 1990, 1990, 1, 0, 0, Some(0), 1.48),
    r(25, 1990, 1990, 1, 0, 0, Some(0), 1.49),
    r(30, 1990, 1990, 1, 0, 0, Some(0), 1.48),
    r(30, 1990, 1990, 1, 0, 0, Some(0), 1.48),
    r(35, 1990, 1990, 1, 0, 0, Some(0), 1.49),
    r(35, 1990, 1990, 1, 0, 0, Some(0), 1.48),
    r(40, 1990, 1990, 1, 0, 0, Some(0), 1.49),
    r(40, 1990, 1990, 1, 0, 0, Some(0), 1.49),
    r(45, 1990, 1990, 1, 0, 0, Some(0), 1.45),
    r(45, 1990, 1990, 1, 0, 0, Some(0), 1.46),
    r(25, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(25, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(30, 1990, 1990, 2, 0, 0, Some(0), 1.74),
    r(30, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(35, 1990, 1990, 2, 0, 0, Some(0), 1.74),
    r(35, 1990, 1990, 2, 0, 0, Some(0), 1.74),
    r(40, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(40, 1990, 1990, 2, 0, 0, Some(0), 1.74),
    r(43, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(43, 1990, 1990, 2, 0, 0, Some(0), 1.74),
    r(43, 1990, 1990, 2, 0, 0, Some(0), 1.75),
    r(44, 1990, 1990, 2, 0, 0, Some(0), 1.73),
    r(44, 1990, 1990, 2, 0, 0, Some(0), 1.72),
    r(45, 1990, 1990, 2, 0, 0, Some(0), 1.70),
    r(45, 1990, 1990, 2, 0, 0, Some(0), 1.72),
];

/// Appendix III, Ethernet (29 rows). The 512-byte rows use 10240-byte buffers.
pub const ETHERNET: &[PaperRow] = &[
    r(30, 1438, 1438, 1, 9, 9, Some(6), 1.42),
    r(30, 1438, 1438, 1, 2, 2, Some(2), 1.45),
    r(30, 1438, 1438, 1, 5, 5, Some(4), 1.44),
    r(35, 1438, 1438, 1, 7, 7, Some(7), 1.38),
    r(35, 1438, 1438, 1, 6, 6, Some(5), 1.38),
    r(40, 1438, 1438, 1, 48, 48, Some(44), 1.15),
    r(40, 1438, 1438, 1, 50, 50, Some(38), 1.17),
    r(40, 1438, 1438, 1, 13, 13, Some(11), 1.28),
    r(40, 1438, 1438, 1, 7, 7, Some(5), 1.30),
    r(30, 1438, 1438, 2, 206, 206, Some(198), 0.995),
    r(30, 1438, 1438, 2, 213, 213, Some(198), 0.994),
    r(40, 1438, 1438, 2, 117, 121, Some(129), 1.05),
    r(40, 1438, 1438, 2, 178, 181, Some(166), 0.892),
    r(40, 1438, 1438, 2, 135, 138, Some(130), 1.03),
    r(45, 1438, 1438, 2, 57, 57, Some(52), 1.12),
    r(45, 1438, 1438, 2, 97, 97, Some(99), 1.02),
    r(45, 1438, 1438, 2, 62, 62, Some(51), 1.09),
    r512(15, 1, 6, 6, 4, 0.909),
    r512(15, 1, 10, 11, 7, 0.907),
    r512(18, 1, 11, 11, 8, 0.891),
    r512(18, 1, 5, 5, 9, 0.906),
    r512(19, 1, 3, 3, 3, 0.905),
    r512(19, 1, 8, 8, 7, 0.898),
    r512(20, 1, 7, 7, 4, 0.876),
    r512(20, 1, 11, 12, 5, 0.871),
    r512(20, 1, 8, 9, 5, 0.874),
    r512(30, 2, 113, 116, 84, 0.599),
    r512(30, 2, 20, 20, 14, 0.661),
    r512(30, 2, 49, 50, 40, 0.638),
];

const fn r512(bi: u16, nbufs: u16, loss: u32, rxm: u32, dtmos: u32, speed: f64) -> PaperRow {
    PaperRow {
        bs: 5,
        bi,
        psz: 512,
        bfsz: 10240,
        xfsz_kb: 2048,
        nbufs,
        loss,
        rxm,
        dtmos: Some(dtmos),
        speed,
    }
}

const fn w(
    bi: u16,
    psz: u16,
    xfsz_kb: u64,
    nbufs: u16,
    loss: u32,
    rxm: u32,
    speed: f64,
) -> PaperRow {
    r(bi, psz, xfsz_kb, nbufs, loss, rxm, None, speed)
}

/// Appendix IV, Wideband (28 rows; no DTMOS column).
pub const WIDEBAND: &[PaperRow] = &[
    w(90, 1400, 500, 22, 9, 10, 0.584),
    w(90, 1400, 500, 22, 12, 12, 0.576),
    w(90, 1400, 500, 22, 3, 3, 0.591),
    w(90, 1420, 500, 22, 12, 12, 0.591),
    w(90, 1420, 500, 22, 6, 6, 0.600),
    w(90, 1430, 500, 22, 9, 10, 0.600),
    w(90, 1430, 500, 22, 15, 15, 0.591),
    w(90, 1430, 500, 22, 12, 12, 0.590),
    w(90, 1432, 716, 22, 13, 16, 0.591),
    w(90, 1434, 717, 22, 33, 147, 0.483),
    w(90, 1436, 718, 22, 25, 122, 0.500),
    w(90, 1436, 718, 22, 25, 109, 0.512),
    w(90, 1436, 718, 22, 28, 153, 0.476),
    w(90, 1438, 719, 22, 6, 109, 0.533),
    w(80, 1432, 716, 22, 56, 68, 0.673),
    w(80, 1432, 716, 22, 14, 14, 0.666),
    w(80, 1432, 716, 22, 15, 16, 0.661),
    w(60, 1432, 716, 22, 19, 22, 0.856),
    w(60, 1432, 716, 22, 84, 95, 0.699),
    w(60, 1432, 716, 22, 18, 21, 0.871),
    w(60, 1432, 716, 30, 38, 40, 0.837),
    w(60, 1432, 716, 30, 25, 26, 0.869),
    w(55, 1432, 716, 22, 13, 13, 0.935),
    w(55, 1432, 716, 22, 25, 25, 0.926),
    w(55, 1432, 716, 22, 25, 25, 0.926),
    w(55, 1432, 716, 22, 20, 20, 0.932),
    w(55, 1432, 716, 22, 17, 19, 0.934),
    w(55, 1432, 716, 22, 13, 14, 0.942),
];

/// One appendix: its rows and the profile they run on.
pub struct Appendix {
    /// Appendix number, as in the RFC ("II", "III", "IV").
    pub id: &'static str,
    /// The network, as the report titles it.
    pub title: &'static str,
    /// The `netblt_link` profile the rows run on.
    pub profile: &'static str,
    /// The paper's rows, in the paper's order.
    pub rows: &'static [PaperRow],
    /// The profile draws random numbers (noise, spikes, host loss).
    pub random: bool,
}

/// The three appendices with measured tables.
pub const APPENDICES: [Appendix; 3] = [
    Appendix {
        id: "II",
        title: "Proteon ring",
        profile: "proteon-ring",
        rows: PROTEON,
        random: false,
    },
    Appendix {
        id: "III",
        title: "Ethernet (3COM 3C500)",
        profile: "ethernet-3c500",
        rows: ETHERNET,
        random: true,
    },
    Appendix {
        id: "IV",
        title: "Wideband satellite",
        profile: "wideband",
        rows: WIDEBAND,
        random: true,
    },
];

/// Our result for one set of inputs, averaged over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Ours {
    /// Seeds the row ran with.
    pub seeds: Vec<u64>,
    /// Mean data packets lost per run (#LOSS).
    pub loss: f64,
    /// Mean data packets retransmitted per run (#RXM).
    pub rxm: f64,
    /// Mean data timeouts per run (DTMOS).
    pub dtmos: f64,
    /// Mean steady-state throughput, Mb/s, over the runs that finished.
    pub speed: f64,
    /// Runs that did not complete and verify.
    pub failed: usize,
    /// Drops at the receiving interface (deaf + full), mean per run.
    pub nic_drops_receiver: f64,
}

/// Runs one appendix row's inputs on `profile` for each seed.
pub fn run_row(profile: &str, row: &PaperRow, seeds: &[u64]) -> anyhow::Result<Ours> {
    run_row_on(&path_of(profile)?, row, seeds)
}

/// The simulator path of a named profile.
pub fn path_of(profile: &str) -> anyhow::Result<PathConfig> {
    let p = profiles::profile(profile).ok_or_else(|| anyhow::anyhow!("no profile {profile}"))?;
    Ok(PathConfig::from_profile(&p))
}

/// The receiver's data timers in every appendix (II-IV): the engine's
/// adaptive timers (decision Q6). RFC 1030 §7 says the implementation that
/// ran appendix IV had moved to "an adaptive data timer value calculation
/// algorithm" keeping "an average inter-packet arrival value", and RFC 998
/// §5.2.2's literal rule (`DataTimerPolicy::Rfc998`, decision Q5) gives
/// appendix II data timeouts where the paper has none; the comparison table
/// (`rfc1030_timers`) shows both. One rule for all three appendices, never
/// one per row.
pub const DATA_TIMER: DataTimerPolicy = DataTimerPolicy::Adaptive;

/// Runs one appendix row's inputs on `path` for each seed (for the
/// sensitivity runs, which change one thing of a profile's path).
pub fn run_row_on(path: &PathConfig, row: &PaperRow, seeds: &[u64]) -> anyhow::Result<Ours> {
    run_row_with(path, row, seeds, DATA_TIMER)
}

/// [`run_row_on`] with the receiver's data timers set by `data_timer`.
pub fn run_row_with(
    path: &PathConfig,
    row: &PaperRow,
    seeds: &[u64],
    data_timer: DataTimerPolicy,
) -> anyhow::Result<Ours> {
    run_row_opts(path, row, seeds, data_timer, false)
}

/// [`run_row_with`], and with each control message in a CONTROL packet of
/// its own when `one_message_per_packet` (the 1987 implementation before RFC
/// 1030 §7's packing; `TransferSpec::one_control_message_per_packet`).
pub fn run_row_opts(
    path: &PathConfig,
    row: &PaperRow,
    seeds: &[u64],
    data_timer: DataTimerPolicy,
    one_message_per_packet: bool,
) -> anyhow::Result<Ours> {
    let params = TransferParams {
        packet_size: row.psz,
        buffer_size: row.bfsz,
        burst_size: row.bs,
        burst_interval_ms: row.bi,
        max_buffers: row.nbufs,
        checksum_data: true,
    };
    let (mut loss, mut rxm, mut dtmos, mut speed, mut drops) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut failed = 0;
    for &seed in seeds {
        let mut spec = TransferSpec::new(path.clone(), params, row.xfsz_kb * 1000);
        spec.seed = seed;
        spec.pacing_clock = PacingClock::FromActualStart;
        spec.data_timer = data_timer;
        spec.one_control_message_per_packet = one_message_per_packet;
        let rep = run_transfer(&spec)?;
        match (rep.verified, rep.steady_throughput_bps) {
            (true, Some(bps)) => speed.push(bps / 1e6),
            _ => failed += 1,
        }
        loss.push(rep.lost as f64);
        rxm.push(rep.retransmitted as f64);
        dtmos.push(rep.data_timeouts as f64);
        if let Some(s) = rep.sim {
            drops.push((s.host_b.nic_deaf_drops + s.host_b.nic_full_drops) as f64);
        }
    }
    Ok(Ours {
        seeds: seeds.to_vec(),
        loss: mean(&loss),
        rxm: mean(&rxm),
        dtmos: mean(&dtmos),
        speed: mean(&speed),
        failed,
        nic_drops_receiver: mean(&drops),
    })
}

/// A paper row with our result beside it.
#[derive(Clone, Debug, Serialize)]
pub struct RowResult {
    /// Packets per burst (BS).
    pub bs: u16,
    /// Burst interval, ms (BI).
    pub bi: u16,
    /// Data bytes per packet (PSZ).
    pub psz: u16,
    /// Bytes per buffer (BFSZ).
    pub bfsz: u32,
    /// Transfer size, units of 1000 bytes (XFSZ).
    pub xfsz_kb: u64,
    /// Outstanding buffers (NBUFS).
    pub nbufs: u16,
    /// The paper's #LOSS.
    pub paper_loss: u32,
    /// The paper's #RXM.
    pub paper_rxm: u32,
    /// The paper's DTMOS (none in appendix IV).
    pub paper_dtmos: Option<u32>,
    /// The paper's SPEED, Mb/s.
    pub paper_speed: f64,
    /// Ours for the same inputs.
    pub ours: Ours,
    /// (ours - paper) / paper of SPEED, %.
    pub speed_error_pct: Option<f64>,
}

/// Same inputs, so the same simulation: rows repeated in the paper share a run.
fn key(r: &PaperRow) -> (u16, u16, u16, u32, u64, u16) {
    (r.bs, r.bi, r.psz, r.bfsz, r.xfsz_kb, r.nbufs)
}

/// Runs every row of an appendix; `tick` is called after each distinct input set.
pub fn run_appendix(
    a: &Appendix,
    seeds: &[u64],
    tick: &mut dyn FnMut(),
) -> anyhow::Result<Vec<RowResult>> {
    run_appendix_on(a, &path_of(a.profile)?, seeds, tick)
}

/// Runs every row of an appendix on `path` (its profile's, or a variant).
pub fn run_appendix_on(
    a: &Appendix,
    path: &PathConfig,
    seeds: &[u64],
    tick: &mut dyn FnMut(),
) -> anyhow::Result<Vec<RowResult>> {
    run_appendix_by(a, seeds, tick, &mut |row, seeds| {
        run_row_on(path, row, seeds)
    })
}

/// Runs every row of an appendix with `run` (one row's inputs over seeds).
pub fn run_appendix_by(
    a: &Appendix,
    seeds: &[u64],
    tick: &mut dyn FnMut(),
    run: &mut dyn FnMut(&PaperRow, &[u64]) -> anyhow::Result<Ours>,
) -> anyhow::Result<Vec<RowResult>> {
    let seeds: &[u64] = if a.random {
        seeds
    } else {
        &seeds[..1.min(seeds.len())]
    };
    let mut cache: Vec<(RowInputs, Ours)> = Vec::new();
    let mut out = Vec::new();
    for row in a.rows {
        let k = key(row);
        let ours = match cache.iter().find(|(ck, _)| *ck == k) {
            Some((_, o)) => o.clone(),
            None => {
                let o = run(row, seeds)?;
                tick();
                cache.push((k, o.clone()));
                o
            }
        };
        out.push(RowResult {
            bs: row.bs,
            bi: row.bi,
            psz: row.psz,
            bfsz: row.bfsz,
            xfsz_kb: row.xfsz_kb,
            nbufs: row.nbufs,
            paper_loss: row.loss,
            paper_rxm: row.rxm,
            paper_dtmos: row.dtmos,
            paper_speed: row.speed,
            speed_error_pct: error_pct(row.speed, ours.speed),
            ours,
        });
    }
    Ok(out)
}

/// Distinct input sets of an appendix (for progress counting).
pub fn distinct_inputs(a: &Appendix) -> usize {
    let mut keys: Vec<_> = a.rows.iter().map(key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// The Markdown table: the paper's row beside ours.
pub fn markdown(rows: &[RowResult], with_dtmos: bool) -> String {
    let mut header = vec![
        "BS/BI",
        "PSZ",
        "BFSZ",
        "XFSZ",
        "NBUFS",
        "#LOSS paper",
        "ours",
        "#RXM paper",
        "ours",
    ];
    if with_dtmos {
        header.extend(["DTMOS paper", "ours"]);
    }
    header.extend(["SPEED paper", "ours", "error"]);
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = vec![
                format!("{}/{}", r.bs, r.bi),
                r.psz.to_string(),
                r.bfsz.to_string(),
                r.xfsz_kb.to_string(),
                r.nbufs.to_string(),
                r.paper_loss.to_string(),
                num(r.ours.loss, 1),
                r.paper_rxm.to_string(),
                num(r.ours.rxm, 1),
            ];
            if with_dtmos {
                v.push(r.paper_dtmos.map_or("-".into(), |d| d.to_string()));
                v.push(num(r.ours.dtmos, 1));
            }
            let speed = if r.ours.failed > 0 {
                format!("{} ({} failed)", num(r.ours.speed, 3), r.ours.failed)
            } else {
                num(r.ours.speed, 3)
            };
            v.extend([num(r.paper_speed, 3), speed, fmt_error(r.speed_error_pct)]);
            v
        })
        .collect();
    table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_every_row_of_the_appendices() {
        assert_eq!(PROTEON.len(), 39);
        assert_eq!(ETHERNET.len(), 29);
        assert_eq!(WIDEBAND.len(), 28);
        assert!(PROTEON.iter().all(|r| r.bfsz == u32::from(r.psz) * 10));
        assert!(ETHERNET
            .iter()
            .filter(|r| r.psz == 512)
            .all(|r| r.bfsz == 10240));
    }
}
