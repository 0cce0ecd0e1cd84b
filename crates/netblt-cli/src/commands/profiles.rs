//! `netblt profiles`: the named network paths of the simulator and emulator.

use clap::Args;

#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Print one profile in full (links, hosts, where each number comes from).
    pub name: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ProfilesArgs) -> anyhow::Result<()> {
    use netblt_link::profiles;
    match args.name {
        Some(name) => {
            let p = profiles::profile(&name).ok_or_else(|| {
                crate::exit::CliError::usage(format!(
                    "unknown profile '{name}' (known: {})",
                    profiles::names().join(", ")
                ))
            })?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&in_ms(&p)?)?);
            } else {
                println!("{}: {}\n", p.name, p.summary);
                if p.forward == p.reverse {
                    println!("links (each way):   {}", describe_link(&p.forward));
                } else {
                    println!("link A to B:        {}", describe_link(&p.forward));
                    println!("link B to A:        {}", describe_link(&p.reverse));
                }
                println!("host A (sender):    {}", describe_host(&p.host_a));
                println!("host B (receiver):  {}", describe_host(&p.host_b));
                println!("wire overhead:      {} bytes per packet", p.wire_overhead);
                let d = &p.defaults;
                println!(
                    "defaults:           packet {} B, buffer {} B, burst {}/{} ms, {} buffers\n",
                    d.packet_size, d.buffer_size, d.burst_size, d.burst_interval_ms, d.buffers
                );
                println!("Sources: {}", p.sources);
            }
        }
        None => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&in_ms(&profiles::all())?)?
                );
            } else {
                for p in profiles::all() {
                    println!("{:<16} {}", p.name, p.summary);
                }
            }
        }
    }
    Ok(())
}

/// `v` as JSON with every duration a number of milliseconds under its
/// name with `_ms` added, as the tool's other JSON has them (serde writes a
/// `Duration` as `{"secs", "nanos"}`; the library's own form, which
/// scenario files are read in, stays so).
fn in_ms(v: &impl serde::Serialize) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(v)?;
    durations_to_ms(&mut v);
    Ok(v)
}

fn durations_to_ms(v: &mut serde_json::Value) {
    use serde_json::Value;
    let as_ms = |v: &Value| -> Option<f64> {
        let o = v.as_object().filter(|o| o.len() == 2)?;
        let secs = o.get("secs")?.as_u64()?;
        let nanos = o.get("nanos")?.as_u64()?;
        Some(secs as f64 * 1e3 + nanos as f64 / 1e6)
    };
    match v {
        Value::Object(o) => {
            let keys: Vec<String> = o
                .iter()
                .filter(|(_, x)| as_ms(x).is_some())
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if let Some(ms) = o.remove(&k).as_ref().and_then(as_ms) {
                    o.insert(format!("{k}_ms"), ms.into());
                }
            }
            o.values_mut().for_each(durations_to_ms);
        }
        Value::Array(a) => a.iter_mut().for_each(durations_to_ms),
        _ => {}
    }
}

fn describe_link(l: &netblt_link::LinkConfig) -> String {
    use netblt_link::LossModel;
    let mut parts = vec![match l.rate_bps {
        Some(r) => crate::units::fmt_rate(r as f64),
        None => "unlimited rate".to_string(),
    }];
    parts.push(format!("{:.3} ms one way", l.delay.as_secs_f64() * 1e3));
    if !l.jitter.is_zero() {
        parts.push(format!("jitter {:.3} ms", l.jitter.as_secs_f64() * 1e3));
    }
    match &l.loss {
        LossModel::None => {}
        LossModel::Bernoulli { p } => parts.push(format!("loss {:.3} %", p * 100.0)),
        other => parts.push(format!("burst loss {other:?}")),
    }
    if l.ber > 0.0 {
        parts.push(format!("bit-error rate {:e}", l.ber));
    }
    for (name, p) in [
        ("reorder", l.reorder),
        ("duplicate", l.duplicate),
        ("corrupt", l.corrupt),
    ] {
        if p > 0.0 {
            parts.push(format!("{name} {:.3} %", p * 100.0));
        }
    }
    if let Some(s) = &l.delay_spike {
        parts.push(format!(
            "delay spikes {:.1} % of packets, {} x {:.0} ms at most",
            s.prob * 100.0,
            s.max_multiple,
            s.quantum.as_secs_f64() * 1e3
        ));
    }
    if let Some(f) = &l.frames {
        parts.push(format!(
            "frames of {} B every {:.2} ms",
            f.bytes_per_frame,
            f.interval.as_secs_f64() * 1e3
        ));
    }
    if let Some(m) = l.mtu {
        parts.push(format!("MTU {m} B"));
    }
    if let Some(q) = l.queue_limit_bytes {
        parts.push(format!("queue {q} B"));
    }
    if l.trace.is_some() {
        parts.push("delivery trace".to_string());
    }
    parts.join(", ")
}

fn describe_host(h: &netblt_link::profiles::HostModel) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let cpu = if h.send_fixed.is_zero()
        && h.recv_fixed.is_zero()
        && h.send_per_byte_ns == 0.0
        && h.recv_per_byte_ns == 0.0
    {
        "free CPU".to_string()
    } else {
        format!(
            "send {:.2} ms + {:.0} ns/B, receive {:.2} ms + {:.0} ns/B",
            ms(h.send_fixed),
            h.send_per_byte_ns,
            ms(h.recv_fixed),
            h.recv_per_byte_ns
        )
    };
    let nic = format!(
        "{}, {} buffers{}{}",
        h.nic_rate_bps.map_or_else(
            || "unlimited interface".to_string(),
            |r| format!("{} interface", crate::units::fmt_rate(r as f64))
        ),
        h.nic_buffers
            .map_or_else(|| "unlimited".to_string(), |b| b.to_string()),
        if h.half_duplex { ", half-duplex" } else { "" },
        if h.nic_loss > 0.0 {
            format!(", input loss {:.1} %", h.nic_loss * 100.0)
        } else {
            String::new()
        }
    );
    format!("{cpu}; {nic}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn profiles_json_gives_durations_in_milliseconds() {
        let v = super::in_ms(&netblt_link::profiles::all()).unwrap();
        let s = v.to_string();
        assert!(!s.contains("\"secs\"") && !s.contains("\"nanos\""), "{s}");
        let first = &v[0]["forward"];
        assert!(first["delay_ms"].is_f64(), "{first}");
        assert!(first.get("delay").is_none(), "{first}");
    }
}
