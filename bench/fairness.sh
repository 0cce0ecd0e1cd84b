#!/usr/bin/env bash
# Flows sharing one emulated bottleneck: NETBLT against NETBLT and kernel TCP
# (issue 9), in one run.
#
#   bench/fairness.sh [--quick]
#
# One `netblt emu` path (RATE, RTT ms, drop-tail queue of QUEUE_BDP BDP) per scenario
# and run; all flows of a scenario cross it together, each to its own port:
#   netblt-netblt    two NETBLT flows, the second STAGGER s after the first;
#   netblt-cubic     NETBLT, then TCP CUBIC (iperf3 -C cubic) STAGGER s later;
#   netblt-bbr       the same with TCP BBR;
#   netblt-x4        four NETBLT flows started STAGGER4 s apart; Jain's index
#                    over the window starting 10 s after the last start;
#   cubic-solo       CUBIC alone (the reference for the next one);
#   background-cubic CUBIC, then NETBLT `--policy background` STAGGER s later;
#                    CUBIC's throughput as a share of cubic-solo's.
# Flows with different RTTs are not run: `netblt emu` has one delay per
# direction, not per flow (--delay-fwd/--delay-rev), and this kernel has no
# netem to add one per flow.
#
# Throughput per flow comes from tcpdump on the receiving side's TUN device
# (headers only), binned per 0.5 s, the same way for NETBLT and TCP, over the
# overlap window [last start + CONVERGE, + WINDOW] (netblt-x4: last start +
# 10 s). Each NETBLT flow moves more than it can in that time and is stopped
# at the end (timeout); iperf3 runs for its span. Reports the median over
# REPS runs of each flow's Mb/s, the ratio first/second flow (target
# 0.5x-2x), Jain's index (x4: target >= 0.95), and for background CUBIC's
# share of its solo throughput (target >= 90 %); per-bin series in OUT_JSON.
#
# Modes: --quick: 1 run, STAGGER 2, STAGGER4 2, CONVERGE 15, WINDOW 8 (about
#        4 minutes); full (default): REPS 3, STAGGER 5, STAGGER4 5,
#        CONVERGE 10, WINDOW 20 (about 15 minutes). The quick window starts 15 s
#        after the last start because CUBIC's window takes 10-15 s to reach the
#        path at 50 ms: with CONVERGE 5 the quick runs measured NETBLT beside a
#        CUBIC still growing and showed 1.1-1.8x where the full runs show 0.26x
#        (decision R62).
# Environment: RATE (100M), RTT (50), QUEUE_BDP (1; at least 150 kB), SCENARIOS, NETBLT_ARGS (extra flags of
# every NETBLT flow, e.g. "--rate 45M"), NETBLT_BG_ARGS (default
# "--policy background" when the binary has it; otherwise the flow runs with
# NETBLT_ARGS only and the table says so), REPS, STAGGER, STAGGER4,
# CONVERGE, WINDOW, OUT_JSON, KEEP, NETBLT.
# Needs root; installs iperf3, ping and tcpdump if missing. Sysctls: only
# tcp_rmem/tcp_wmem inside each run's namespaces (gone with them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
lib="$here/lib"
# shellcheck source=lib/wan_common.sh
. "$lib/wan_common.sh"

wan_mode "$0" "$@"
if [ "$MODE" = quick ]; then
    REPS="${REPS:-1}"; STAGGER="${STAGGER:-2}"; STAGGER4="${STAGGER4:-2}"; CONVERGE="${CONVERGE:-15}"; WINDOW="${WINDOW:-8}"
else
    REPS="${REPS:-3}"; STAGGER="${STAGGER:-5}"; STAGGER4="${STAGGER4:-5}"; CONVERGE="${CONVERGE:-10}"; WINDOW="${WINDOW:-20}"
fi
RATE="${RATE:-100M}"
RTT="${RTT:-50}"
SCENARIOS="${SCENARIOS:-netblt-netblt netblt-cubic netblt-bbr netblt-x4 cubic-solo background-cubic}"
NETBLT_ARGS="${NETBLT_ARGS:-}"
KEEP="${KEEP:-0}"
mkdir -p "$root/bench/results"
OUT_JSON="${OUT_JSON:-$root/bench/results/fairness-$MODE-$(date +%Y%m%d-%H%M%S).json}"

wan_need_root bench/fairness.sh
wan_install_tools tcpdump
wan_build_netblt "$root"
wan_need_cc bbr cubic
BG_NOTE=""
if [ -z "${NETBLT_BG_ARGS+x}" ]; then
    if wan_has_policy; then
        NETBLT_BG_ARGS="--policy background"
    else
        NETBLT_BG_ARGS=""
        BG_NOTE="this netblt has no --policy: the 'background' flow ran with NETBLT_ARGS only"
    fi
fi

rate_bps="$(python3 -c "
t='$RATE'; m={'k':1e3,'K':1e3,'M':1e6,'G':1e9}
print(int(float(t[:-1])*m[t[-1]]) if t[-1] in m else int(float(t)))")"
delay="$(awk -v r="$RTT" 'BEGIN {printf "%.6g", r / 2}')"
QUEUE_BDP="${QUEUE_BDP:-1}"
queue="$(awk -v c="$rate_bps" -v r="$RTT" -v q="$QUEUE_BDP" 'BEGIN {x = c / 8 * r / 1000 * q; if (x < 150000) x = 150000; printf "%d", x}')"

work="$(mktemp -d /tmp/netblt-fair.XXXXXX)"
results="$work/results.jsonl"
: >"$results"
finish() {
    wan_restore_sysctls
    if [ "$KEEP" = 1 ]; then echo "== raw runs kept in $work" >&2; else rm -rf "$work"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

load_before="$(wan_load)"
started="$(date -Is)"
echo "== fairness.sh $MODE: $RATE, RTT $RTT ms, queue $queue B; NETBLT_ARGS='$NETBLT_ARGS'; load $load_before" >&2
EMU_NAME="fair$$"
run_no=0

# Runs one scenario. Flows: "label kind start" words (kind: netblt, bg,
# cubic, bbr); window: "a b" seconds after t0; all flows stop at b + 1.
run_scenario() {
    local name="$1" rep="$2" window="$3"
    shift 3
    run_no=$((run_no + 1))
    local d="$work/run$run_no"
    mkdir -p "$d"
    local a b stop
    read -r a b <<<"$window"
    stop=$((b + 1))
    local left="$d/left.sh" right="$d/right.sh" spec="[" port_n=9998 port_t=5201
    {
        echo "$(wan_tcp_sysctls)"
        echo "date +%s.%N >$d/t0"
    } >"$left"
    {
        echo "$(wan_tcp_sysctls)"
        echo "tcpdump -i nbtun0 -n -s 96 -U -B 8192 -w $d/cap.pcap 'dst host $WAN_RIGHT' 2>$d/tcpdump.err &"
    } >"$right"
    local flow label kind start port span args sep=""
    for flow in "$@"; do
        read -r label kind start <<<"$flow"
        span=$((stop - start))
        case "$kind" in
            netblt|bg)
                port=$port_n; port_n=$((port_n + 1))
                args="$NETBLT_ARGS"
                [ "$kind" = bg ] && args="$NETBLT_BG_ARGS $NETBLT_ARGS"
                echo "$NETBLT recv --listen 0.0.0.0:$port --sink --json $NETBLT_RECV_FLAGS >$d/$label.recv.json 2>$d/$label.recv.err &" >>"$right"
                # More than the link could carry in the span; stopped by timeout.
                echo "(sleep $start; timeout -s INT $span $NETBLT bench $WAN_RIGHT:$port --size 100G $args $NETBLT_SEND_FLAGS --json >$d/$label.json 2>$d/$label.err) &" >>"$left"
                ;;
            cubic|bbr)
                port=$port_t; port_t=$((port_t + 1))
                args="-C $kind"
                echo "iperf3 -s -p $port -J >$d/$label.srv.json 2>&1 &" >>"$right"
                echo "(sleep $start; iperf3 -c $WAN_RIGHT -p $port -C $kind -t $span -J >$d/$label.json 2>&1) &" >>"$left"
                ;;
        esac
        spec+="$sep{\"label\": \"$label\", \"kind\": \"$kind\", \"port\": $port, \"start\": $start, \"stop\": $stop, \"args\": \"$args\"}"
        sep=", "
    done
    echo "wait" >>"$left"
    echo "wait" >>"$right"
    spec+="]"
    echo "{\"name\": \"$name\", \"rep\": $rep, \"flows\": $spec, \"window\": [$a, $b], \"bin\": 0.5}" >"$d/spec.json"
    printf "== %-17s run %s: %s; window %s-%s s (load %s)\n" "$name" "$rep" "$*" "$a" "$b" "$(wan_load)" >&2
    "$NETBLT" emu --name "$EMU_NAME" --rate "$RATE" --delay "$delay" --queue "$queue" --seed "$run_no" \
        --right-wait 1000 --json --right "bash $right" -- bash "$left" >"$d/emu.json" 2>"$d/emu.err" || true
    tcpdump -r "$d/cap.pcap" -tt -n -q 2>/dev/null >"$d/cap.txt" || true
    python3 "$lib/fairstats.py" scenario "$d" "$d/spec.json" | python3 -c "
import json, sys
r = json.load(sys.stdin); r['rep'] = $rep; r['load'] = '$(wan_load)'
print(json.dumps(r))" >>"$results"
    python3 - "$results" <<'EOF' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print("   " + ", ".join("%s %.1f Mb/s" % (f["label"], f["window_mbps"] or 0) for f in r["flows"]) +
      ("; Jain %.3f" % r["jain"] if r.get("jain") else "") + "; queue drops %s" % r.get("queue_drops"))
EOF
    rm -f "$d/cap.pcap"
}

S=$STAGGER
pair_window="$((S + CONVERGE)) $((S + CONVERGE + WINDOW))"
x4_last=$((3 * STAGGER4))
x4_window="$((x4_last + 10)) $((x4_last + 10 + WINDOW))"
for rep in $(seq 1 "$REPS"); do
    for sc in $SCENARIOS; do
        case "$sc" in
            netblt-netblt) run_scenario "$sc" "$rep" "$pair_window" "netblt1 netblt 0" "netblt2 netblt $S" ;;
            netblt-cubic) run_scenario "$sc" "$rep" "$pair_window" "netblt netblt 0" "cubic cubic $S" ;;
            netblt-bbr) run_scenario "$sc" "$rep" "$pair_window" "netblt netblt 0" "bbr bbr $S" ;;
            netblt-x4) run_scenario "$sc" "$rep" "$x4_window" "netblt1 netblt 0" "netblt2 netblt $STAGGER4" \
                "netblt3 netblt $((2 * STAGGER4))" "netblt4 netblt $x4_last" ;;
            cubic-solo) run_scenario "$sc" "$rep" "$pair_window" "cubic cubic 0" ;;
            background-cubic) run_scenario "$sc" "$rep" "$pair_window" "cubic cubic 0" "background bg $S" ;;
            *) echo "unknown scenario $sc" >&2 ;;
        esac
    done
done

load_after="$(wan_load)"
python3 - "$work/meta.json" "${WAN_SYSCTLS[@]}" <<EOF
import json, sys, platform
json.dump({"script": "bench/fairness.sh", "mode": "$MODE", "started": "$started", "finished": "$(date -Is)",
           "rate": "$RATE", "rtt_ms": $RTT, "queue_bytes": $queue, "queue_bdp": "$QUEUE_BDP", "reps": $REPS, "stagger_s": $STAGGER,
           "stagger4_s": $STAGGER4, "converge_s": $CONVERGE, "window_s": $WINDOW,
           "netblt_args": "$NETBLT_ARGS", "netblt_bg_args": "$NETBLT_BG_ARGS", "note": "$BG_NOTE",
           "different_rtts": "not run: netblt emu has one delay per direction, not per flow",
           "netblt": "$("$NETBLT" --version 2>/dev/null)", "iperf3": "$(iperf3 --version | head -1)",
           "kernel": platform.release(), "load_before": "$load_before", "load_after": "$load_after",
           "sysctls": sys.argv[2:]}, open(sys.argv[1], "w"), indent=1)
EOF
echo
echo "bench/fairness.sh $MODE  $RATE, RTT $RTT ms, queue $queue B ($QUEUE_BDP BDP)  NETBLT_ARGS='$NETBLT_ARGS'  $("$NETBLT" --version 2>/dev/null)"
python3 "$lib/fairstats.py" summary "$results" "$work/meta.json" "$OUT_JSON"
[ -n "$BG_NOTE" ] && echo "note: $BG_NOTE"
echo "not run: flows with different RTTs (netblt emu has one delay per direction, not per flow; no netem)"
echo "load average before: $load_before; after: $load_after ($(nproc) CPUs)"
echo "sysctls changed:"
for s in "${WAN_SYSCTLS[@]}"; do echo "  $s"; done
echo "JSON: $OUT_JSON"
