#!/usr/bin/env bash
# A long path with a shallow queue on the emulator (decision R70): how many
# packets NETBLT's start-up loses at the bottleneck's queue, and what the
# "why" line says of them, for one build or two alternating.
#
#   bench/shallow_queue.sh
#   NETBLT_B=/tmp/old/netblt REPS=3 LOSS=0.01 bench/shallow_queue.sh
#
# One `netblt send` of SIZE random bytes from a file, no rate flag, through
# `netblt emu --rate RATE --delay DELAY --loss LOSS --queue QUEUE` to a
# `recv --once` on the far side (RTT = 2 x DELAY). The defaults are the
# walkthrough's: 100 Mb/s, 600 ms, a 100 ms (1.25 MB) drop-tail queue, a
# sixth of the bandwidth-delay product. Per run: the transfer's time and
# rate, the packets the queue dropped (the emulator's forward counters) and
# the sender's "why" line. Prints a table and writes JSON (OUT_JSON).
# Environment: NETBLT (the build measured; default: cargo build --release),
# NETBLT_B (a second build, alternating with the first), REPS (3), SIZE
# (100M), RATE (100M), DELAY (300, ms one way), LOSS (0), QUEUE (1250000).
# Needs root and /dev/net/tun (the emulator).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

REPS="${REPS:-3}"
SIZE="${SIZE:-100M}"
RATE="${RATE:-100M}"
DELAY="${DELAY:-300}"
LOSS="${LOSS:-0}"
QUEUE="${QUEUE:-1250000}"
mkdir -p "$root/bench/results"
OUT_JSON="${OUT_JSON:-$root/bench/results/shallow-queue-$(date +%Y%m%d-%H%M%S).json}"
if [ -z "${NETBLT:-}" ]; then
    (cd "$root" && cargo build --release -q --bin netblt)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi

work="$(mktemp -d /tmp/netblt-shallow.XXXXXX)"
trap 'rm -rf "$work"' EXIT
bytes=$(python3 -c "import sys; s=sys.argv[1]; m={'K':10**3,'M':10**6,'G':10**9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$SIZE")
head -c "$bytes" /dev/urandom >"$work/a.bin"

builds="A=$NETBLT"
[ -n "${NETBLT_B:-}" ] && builds="$builds B=$NETBLT_B"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$work/rows.jsonl"
for rep in $(seq 1 "$REPS"); do
    for b in $builds; do
        name="${b%%=*}"
        bin="${b#*=}"
        rm -rf "$work/rx" && mkdir -p "$work/rx"
        out=$("$bin" emu --rate "$RATE" --delay "$DELAY" --loss "$LOSS" --queue "$QUEUE" \
            --right "NETBLT_HOME=$work/hr $bin recv --listen 0.0.0.0:9998 --dir $work/rx --accept-any --once >/dev/null 2>&1" \
            -- env NETBLT_HOME="$work/hs" "$bin" send "$work/a.bin" 198.18.0.2:9998 --json 2>&1) || true
        printf '%s\n' "$out" | python3 -c '
import json, re, sys
name, rep = sys.argv[1], int(sys.argv[2])
text = sys.stdin.read()
report = None
for line in text.splitlines():
    line = line.strip()
    if line.startswith("{"):
        try:
            report = json.loads(line)
        except ValueError:
            pass
fwd = re.search(r"forward \(left->right\): offered (\d+) pkts.*drops mtu=\d+ queue=(\d+) loss=(\d+)", text)
row = {"build": name, "rep": rep,
       "wall_s": report.get("wall_time_s") if report else None,
       "real_mbps": (report.get("real_throughput_bps") or 0) / 1e6 if report else None,
       "lost": report.get("lost") if report else None,
       "why": ((report.get("limit") or {}).get("message")) if report else None,
       "offered_pkts": int(fwd.group(1)) if fwd else None,
       "queue_drops": int(fwd.group(2)) if fwd else None,
       "random_drops": int(fwd.group(3)) if fwd else None,
       "error": report.get("error") if report else "no report"}
print(json.dumps(row))' "$name" "$rep" >>"$work/rows.jsonl"
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$work/rows.jsonl" "$OUT_JSON" "$load_before" "$load_after" "$NETBLT" "${NETBLT_B:-}" \
    "$RATE" "$DELAY" "$LOSS" "$QUEUE" "$SIZE" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
meta = dict(zip(["load_before", "load_after", "A", "B", "rate", "delay_ms", "loss", "queue_bytes", "size"], sys.argv[3:]))
print("| build | rep | wall s | Mb/s | queue drops | lost | why |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %d | %s | %s | %s | %s | %s |" % (r["build"], r["rep"],
          "%.2f" % r["wall_s"] if r["wall_s"] else "-", "%.2f" % r["real_mbps"] if r["real_mbps"] else "-",
          r["queue_drops"], r["lost"], r["why"] or r["error"]))
for b in sorted({r["build"] for r in rows}):
    d = [r["queue_drops"] for r in rows if r["build"] == b and r["queue_drops"] is not None]
    w = [r["wall_s"] for r in rows if r["build"] == b and r["wall_s"]]
    if d and w:
        print("%s: median queue drops %s (%d of %d runs with any), median wall %.2f s" %
              (b, statistics.median(d), sum(1 for x in d if x > 0), len(d), statistics.median(w)))
print("load average: %s -> %s" % (meta["load_before"], meta["load_after"]))
json.dump({"script": "bench/shallow_queue.sh", **meta, "rows": rows}, open(sys.argv[2], "w"), indent=1)
print("JSON: " + sys.argv[2])
EOF
