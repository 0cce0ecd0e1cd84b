#!/usr/bin/env bash
# Simulator speed (a benchmark, not a test): simulated packets per wall-clock
# second with toy nodes, and a 100 MB NETBLT transfer over the Wideband
# profile (1.8 s round trip), which should take seconds, not the 16 simulated
# minutes it represents. Prints a JSON summary last.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -q -p netblt-cli -p netblt-sim --example sim_speed --bin netblt
target=${CARGO_TARGET_DIR:-target}

echo "== toy nodes: 1e6 packets"
toy=$("$target/release/examples/sim_speed" 1000000 | tee /dev/stderr | tail -1)

echo "== NETBLT: 100 MB over wideband"
json=$("$target/release/netblt" sim --profile wideband --burst-interval 55 --packet-size 1432 \
  --buffer-size 14320 --buffers 22 --size 100MB --json)
echo "$json" | grep -E '"(sim_time_s|wall_time_s|sim_events|verified)"'
wall=$(echo "$json" | sed -n 's/.*"wall_time_s": *\([0-9.e+-]*\).*/\1/p')
sim=$(echo "$json" | sed -n 's/.*"sim_time_s": *\([0-9.e+-]*\).*/\1/p')
events=$(echo "$json" | sed -n 's/.*"sim_events": *\([0-9]*\).*/\1/p')
ratio=$(awk -v s="$sim" -v w="$wall" 'BEGIN { printf "%.0f", s / w }')
echo "simulated ${sim} s in ${wall} s of wall time: ${ratio}x faster than real time"
printf '{"toy_summary": "%s", "wideband_100MB": {"sim_time_s": %s, "wall_time_s": %s, "events": %s, "speedup": %s}}\n' \
  "$(echo "$toy" | tr -d '"')" "$sim" "$wall" "$events" "$ratio"
