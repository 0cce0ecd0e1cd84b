#!/usr/bin/env bash
# A rate step on the emulator, NETBLT against kernel TCP in one run (issue 9:
# "A rate step (100 -> 20 -> 100 Mb/s, a delivery trace): back within 10 % of
# the new rate within 2 s").
#
#   bench/ratestep.sh
#
# The path is a Mahimahi delivery trace (`netblt emu --trace`): 100 Mb/s for
# PHASE seconds, 20 Mb/s for PHASE seconds, then 100 Mb/s again, one 1500-byte
# delivery opportunity per packet, both directions; RTT ms of round trip and a
# one-BDP drop-tail queue (at 100 Mb/s, at least 150 kB). Each contender runs
# 3 x PHASE seconds on a fresh path, one after the other:
#   adaptive  `netblt bench --size 2G` with no rate flag, `--json-stream`
#             every 0.25 s (the rate controller's rate);
#   bbr, cubic  iperf3 -C bbr / -C cubic, intervals of 0.25 s.
# Per step it reports how long after it NETBLT's rate (its controller's, from
# --json-stream) stays within 10 % of the new path rate (the packet size its stream reports, 1424 payload bytes
# per 1500-byte opportunity, 1400 before R58) for a whole second: down, at most 1.1x; up, at
# least 0.9x. (iperf3's intervals count what was written into the socket
# buffer, not what TCP sent, so TCP is judged from the path's side only.)
# For all, from the emulator's side: how long after the up step the path
# delivers at least 90 % of 100 Mb/s in every 0.2 s window for a whole
# second (0.1 s bins; issue 9's step-up target is judged on this, the same
# yardstick for every contender: decision R67), the first whole second after
# the up step in which it delivered 90 % of its opportunities, the delivered
# share per phase, and the queueing delay (`ping -i 0.1` beside the flow)
# after each step, with the time after the down step from which it stays
# under max(10 ms, 0.1 x RTT) for a second (the queue drained). REPS runs
# each, medians. Load average before and after.
# Environment: RTT (50), PHASE (10), REPS (3), CONTENDERS ("adaptive bbr
# cubic"), NETBLT (binary; default: cargo build --release), OUT_JSON
# (bench/results/ratestep-DATE.json), KEEP (1 keeps the raw files).
# Needs root. Sysctls: only tcp_rmem/tcp_wmem inside each run's namespaces.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
lib="$here/lib"
# shellcheck source=lib/wan_common.sh
. "$lib/wan_common.sh"

wan_mode "$0" "$@"
RTT="${RTT:-50}"
PHASE="${PHASE:-10}"
REPS="${REPS:-3}"
CONTENDERS="${CONTENDERS:-adaptive bbr cubic}"
KEEP="${KEEP:-0}"
mkdir -p "$root/bench/results"
OUT_JSON="${OUT_JSON:-$root/bench/results/ratestep-$(date +%Y%m%d-%H%M%S).json}"

wan_need_root bench/ratestep.sh
wan_install_tools
wan_build_netblt "$root"
wan_need_cc bbr cubic

work="$(mktemp -d /tmp/netblt-ratestep.XXXXXX)"
finish() {
    wan_restore_sysctls
    if [ "$KEEP" = 1 ]; then echo "== raw runs kept in $work" >&2; else rm -rf "$work"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

# The trace: PHASE s at 100 Mb/s, PHASE s at 20, then 100 until well after
# the run (Mahimahi repeats a trace from its start).
python3 "$lib/ratestep.py" trace "$PHASE" >"$work/step.trace"
secs=$((3 * PHASE))
delay="$(awk -v r="$RTT" 'BEGIN {printf "%.6g", r / 2}')"
queue="$(awk -v r="$RTT" 'BEGIN {x = 100e6 / 8 * r / 1000; if (x < 150000) x = 150000; printf "%d", x}')"
load_before="$(wan_load)"
echo "== ratestep.sh: 100 -> 20 -> 100 Mb/s every ${PHASE} s, RTT $RTT ms, queue $queue B, $REPS run(s); load $load_before" >&2

n=0
for rep in $(seq 1 "$REPS"); do
    for who in $CONTENDERS; do
        n=$((n + 1))
        d="$work/run$n"
        mkdir -p "$d"
        ping="date +%s.%N >$d/t_ping; ping -n -D -i 0.1 $WAN_RIGHT >$d/ping.txt 2>&1 & P=\$!"
        case "$who" in
            adaptive)
                right="$NETBLT recv --listen 0.0.0.0:9998 --sink --once $NETBLT_RECV_FLAGS >/dev/null 2>$d/recv.err"
                left="$ping; sleep 0.2; date +%s.%N >$d/t_send; timeout -s INT $secs $NETBLT bench $WAN_RIGHT:9998 --size 2G $NETBLT_SEND_FLAGS --json-stream -i 0.25 >$d/send.jsonl 2>$d/send.err; kill \$P"
                ;;
            bbr|cubic)
                right="$(wan_tcp_sysctls); iperf3 -s -1 -p 5201 -J >$d/srv.json 2>&1"
                left="$(wan_tcp_sysctls); $ping; sleep 0.2; date +%s.%N >$d/t_send; timeout $((secs + 30)) iperf3 -c $WAN_RIGHT -p 5201 -C $who -t $secs -i 0.25 -J >$d/cli.json 2>&1; kill \$P"
                ;;
            *) echo "unknown contender $who" >&2; continue ;;
        esac
        printf "== %-9s run %s (load %s)\n" "$who" "$rep" "$(wan_load)" >&2
        "$NETBLT" emu --name "rs$$" --trace "$work/step.trace" --delay "$delay" --queue "$queue" \
            --right-wait 500 --json --right "$right" -- bash -c "$left" >"$d/emu.json" 2>"$d/emu.err" || true
        python3 "$lib/ratestep.py" row "$d" "$who" "$rep" "$PHASE" "$RTT" >>"$work/rows.jsonl"
        python3 - "$work/rows.jsonl" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
f = lambda v: "-" if v is None else "%.2f" % v
print("   down: within 10 %% after %s s; up: %s s (path delivers 90 %% after %s s, busy a whole second after %s s); delivered %s / %s / %s of the path%s%s" % (
    f(r.get("down_s")), f(r.get("up_s")), f(r.get("up_delivered_s")), f(r.get("up_path_s")),
    *[f(x) for x in (r.get("phase_share") or [None] * 3)],
    "; QUEUE STANDING AT THE STEP UP (%s ms): the up figures say nothing" % f(r.get("qdelay_at_up_ms")) if r.get("queue_at_up") else "",
    ", ERROR " + r["error"] if r.get("error") else ""))
EOF
    done
done
load_after="$(wan_load)"
python3 "$lib/ratestep.py" summary "$work/rows.jsonl" "$OUT_JSON" \
    "{\"script\": \"bench/ratestep.sh\", \"rtt_ms\": $RTT, \"phase_s\": $PHASE, \"reps\": $REPS, \"queue_bytes\": $queue, \"netblt\": \"$("$NETBLT" --version 2>/dev/null)\", \"iperf3\": \"$(iperf3 --version | head -1)\", \"load_before\": \"$load_before\", \"load_after\": \"$load_after\"}"
echo "load average before: $load_before; after: $load_after ($(nproc) CPUs)"
echo "JSON: $OUT_JSON"
