#!/usr/bin/env bash
# bench/ratestep.sh's rate step in the simulator (issue 9, decision R45):
# the emulator's own delivery trace (100 Mb/s for 10 s, 20 for 10, then
# 100), a one-BDP queue, and jitter after the queue, for one `fair` flow;
# deterministic, a second of wall time per run instead of a minute of the
# emulator's, so a change to the rate controller can be tried on many
# seeds before the emulator's runs.
#
#   bench/sim_ratestep.sh
#   RTTS="100 300" JITTERS="0 1" SEEDS="1 2 3" NETBLT_B=/tmp/old/netblt bench/sim_ratestep.sh
#
# Environment: RTTS (ms, default "50 100 300"), JITTERS (ms, default
# "0 1 2"), SEEDS (default "1 2 3"), NETBLT (the build measured; default:
# cargo build --release --bin netblt), NETBLT_B (a second build, run on the
# same scenarios, e.g. the one before a change), OUT_JSON
# (bench/results/sim-ratestep-DATE.json). Prints a table of medians per
# build, RTT and jitter: the third phase's mean delivered rate, when the
# controller's pacing rate was back at 90 % of the path for a second (as
# `ratestep.sh` judges it) and when the path was 90 % busy; and for the step
# down (R48), when the pacing rate stayed within 110 % of the low path for a
# second and when the bottleneck's queue had drained (under max(10 ms, 0.1 x
# RTT) for a second).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="$root/bench/lib"
export PATH="$HOME/.cargo/bin:$PATH"

RTTS="${RTTS:-50 100 300}"
JITTERS="${JITTERS:-0 1 2}"
SEEDS="${SEEDS:-1 2 3}"
mkdir -p "$root/bench/results"
OUT_JSON="${OUT_JSON:-$root/bench/results/sim-ratestep-$(date +%Y%m%d-%H%M%S).json}"
if [ -z "${NETBLT:-}" ]; then
    (cd "$root" && cargo build --release -q --bin netblt)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi

work="$(mktemp -d /tmp/netblt-sim-ratestep.XXXXXX)"
trap 'rm -rf "$work"' EXIT
python3 "$lib/ratestep.py" trace 10 >"$work/step.trace"

builds="A=$NETBLT"
[ -n "${NETBLT_B:-}" ] && builds="$builds B=$NETBLT_B"
for rtt in $RTTS; do
    for j in $JITTERS; do
        for seed in $SEEDS; do
            python3 "$lib/sim_ratestep.py" scenario "$work" "$rtt" "$j" "$seed" >"$work/s.json"
            for b in $builds; do
                name="${b%%=*}"
                bin="${b#*=}"
                RUST_LOG=netblt_proto::rate=debug "$bin" sim --scenario "$work/s.json" --json \
                    >"$work/out.json" 2>"$work/rate.log" || true
                python3 "$lib/sim_ratestep.py" row "$work/out.json" "$work/rate.log" "$rtt" "$j" "$seed" |
                    python3 -c "import json,sys; r=json.load(sys.stdin); r['build']='$name'; print(json.dumps(r))" \
                        >>"$work/rows.jsonl"
            done
        done
    done
done
meta=$(printf '{"script": "bench/sim_ratestep.sh", "A": "%s", "B": "%s", "rtts": "%s", "jitters": "%s", "seeds": "%s"}' \
    "$NETBLT" "${NETBLT_B:-}" "$RTTS" "$JITTERS" "$SEEDS")
python3 "$lib/sim_ratestep.py" summary "$work/rows.jsonl" "$meta" "$OUT_JSON"
echo "JSON: $OUT_JSON"
