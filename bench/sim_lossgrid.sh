#!/usr/bin/env bash
# One `fair` flow alone in the simulator over a grid of round trips, random
# loss and queue sizes (decision R70): 100 MB with the tool's buffers (1 MiB,
# 32 to 128 outstanding, quantum 16), 100 Mb/s, drop-tail. Deterministic and a
# second or so per run, for trying a rate-control change on long and lossy
# paths before the emulator.
#
#   bench/sim_lossgrid.sh
#   NETBLT_B=/tmp/old/netblt RTTS="300 600" LOSSES="0.01 0.05" bench/sim_lossgrid.sh
#
# Environment: RTTS (ms, "100 300 600"), LOSSES ("0 0.01 0.05"), QUEUES
# ("bdp 1250000": one bandwidth-delay product, or bytes), SIZE (bytes,
# 100000000), NETBLT (default: cargo build --release), NETBLT_B (a second
# build, run on the same scenarios). Prints one row per scenario and build:
# when the transfer ended, its goodput, packets resent and queue drops.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

RTTS="${RTTS:-100 300 600}"
LOSSES="${LOSSES:-0 0.01 0.05}"
QUEUES="${QUEUES:-bdp 1250000}"
SIZE="${SIZE:-100000000}"
if [ -z "${NETBLT:-}" ]; then
    (cd "$root" && cargo build --release -q --bin netblt)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi
work="$(mktemp -d /tmp/netblt-lossgrid.XXXXXX)"
trap 'rm -rf "$work"' EXIT

builds="A=$NETBLT"
[ -n "${NETBLT_B:-}" ] && builds="$builds B=$NETBLT_B"
echo "| RTT ms | loss | queue B | build | ended s | goodput Mb/s | resent | queue drops |"
echo "|---|---|---|---|---|---|---|---|"
for rtt in $RTTS; do
    for loss in $LOSSES; do
        for q in $QUEUES; do
            if [ "$q" = bdp ]; then qb=$((100000000 / 8 * rtt / 1000)); else qb=$q; fi
            if [ "$loss" = 0 ]; then lm='"None"'; else lm="{ \"Bernoulli\": { \"p\": $loss } }"; fi
            cat >"$work/s.json" <<EOF
{ "name": "loss grid", "seed": 1, "duration_s": 60,
  "bottleneck": { "rate_bps": 100000000, "delay_ms": 5, "queue_bytes": $qb, "loss": $lm },
  "flows": [ { "name": "netblt", "kind": { "netblt": { "policy": "fair", "max_buffers": 128,
    "min_buffers": 32, "pacing_quantum": 16, "tool_recovery": true } },
    "rtt_ms": $rtt, "size_bytes": $SIZE } ] }
EOF
            for b in $builds; do
                name="${b%%=*}"
                bin="${b#*=}"
                "$bin" sim --scenario "$work/s.json" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
f = r["flows"][0]
d = f["bottleneck_drops"]
print("| %s | %s | %s | %s | %s | %.2f | %d | %d |" % (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
      "%.2f" % f["completed_at_s"] if f.get("completed_at_s") else "-",
      f["goodput_bps"] / 1e6, f["retransmissions"], d["queue"]))' "$rtt" "$loss" "$qb" "$name"
            done
        done
    done
done
