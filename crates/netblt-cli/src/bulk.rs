//! NETBLT as a transport for the measurement commands (`netblt load
//! --netblt`, `netblt cpu --netblt`). The measurement crate defines the
//! trait and must not depend on the library, so the tool registers it.

use std::net::SocketAddr;

use netblt_measure::transport::{BulkOutcome, BulkSender};
use netblt_proto::TransferParams;

use crate::flags::CommonFlags;
use netblt::DEFAULT_RATE;

struct NetbltBulk;

impl BulkSender for NetbltBulk {
    fn send(&self, peer: SocketAddr, bytes: u64) -> Result<BulkOutcome, String> {
        let packet_size = 1400;
        let (burst_size, burst_interval_ms) =
            TransferParams::burst_for_rate(DEFAULT_RATE, packet_size);
        let params = TransferParams {
            packet_size,
            buffer_size: 1 << 20,
            burst_size,
            burst_interval_ms,
            max_buffers: 8,
            checksum_data: false,
        };
        // A load generator sends at the rate it was given.
        let common = CommonFlags {
            death_timer: 10,
            raw_ip: false,
            json: false,
            policy: "fixed".into(),
            min_rate: None,
            rate_file: None,
            json_stream: false,
            interval: 1.0,
            security: crate::security_flags::SecurityFlags::plain(),
        };
        let report = crate::commands::bench::bench(
            &crate::remote::Remote::one(peer),
            bytes,
            params,
            &common,
            true,
            false,
            netblt::AutoSize::default(),
        )
        .map_err(|e| e.to_string())?;
        if !report.verified {
            return Err(report
                .error
                .map_or_else(|| "transfer not verified".into(), |e| e.to_string()));
        }
        Ok(BulkOutcome {
            bytes: report.bytes,
            datagrams: report.datagrams_sent,
        })
    }
}

/// Makes `--netblt` available to `netblt load` and `netblt cpu`.
pub fn register() {
    netblt_measure::transport::register_netblt(Box::new(NetbltBulk));
}
