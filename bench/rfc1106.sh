#!/usr/bin/env bash
# RFC 1106's experiment, repeated on the user-space link emulator.
#
#   bench/rfc1106.sh            run the grid (resumes: finished runs are kept),
#                               then write docs/rfc1106.md
#   bench/rfc1106.sh report     only rewrite docs/rfc1106.md from the results
#
# The path: profile t1-satellite (1.544 Mb/s each way, 290 ms each way, drop-
# tail queue of one bandwidth-delay product), MTU 1500 (`--mtu 1500`: the
# profile's 1508 counts 8 bytes of HDLC framing the TUN device does not
# carry), bit-error rate 0, 1e-7 or 1e-6 in both directions (`--ber`: a packet
# with any bit error is dropped, as a link CRC would).
#
# TCP: the kernel's, congestion control cubic per socket, memory to memory
# with bench/lib/tcpbulk.py. The receive window is pinned to each of
# RFC 1106's sizes (K = 1024 bytes) with TCP_WINDOW_CLAMP on the receiving
# socket (its buffer is set large enough never to limit), and verified on the
# sender: tcpi_snd_wnd, the window the receiver advertised, sampled every
# 250 ms (see tcpbulk.py for why SO_RCVBUF alone cannot pin it on this kernel).
# SACK off in both namespaces (net.ipv4.tcp_sack=0) for the paper's Figure 1,
# on for Figure 2 (SACK standing in for RFC 1106's NAK option); window
# scaling and timestamps on (the kernel defaults) in both.
# NETBLT: `netblt bench` against `netblt recv --sink`, paced just under the
# link rate (bench/lib/emupath.py), same path, one run per bit-error rate.
#
# Each TCP run measures DURATION seconds from the first byte; the figure
# reported is the receiver's goodput after the first OMIT seconds (slow start
# left out), and the whole-run figure is kept too. Runs go PARALLEL at a time,
# each on its own emulated path (namespaces nb-r11-N-PID-l/-r). The link model
# of run N uses seed SEED + N, with the same N for SACK off and on, so both
# figures see the same sequence of bit-error draws per packet offered.
#
# Environment: WINDOWS (in K, default the paper's nine), BERS ("0 1e-7 1e-6"),
# SACKS ("0 1"), DURATION (90), OMIT (10), PARALLEL (6), NETBLT_SIZE (10MiB),
# NETBLT_RUNS (1 per BER; 0 to skip), SEED (1106), RESULTS (raw JSON;
# default $TMPDIR/netblt-rfc1106), DOC (docs/rfc1106.md), NETBLT (the netblt
# binary; default: cargo build --release -p netblt-cli in $CARGO_TARGET_DIR).
# Needs root, python3, /dev/net/tun. Traffic stays inside the namespaces it
# creates, and each is removed when its run ends.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
lib="$here/lib"

WINDOWS="${WINDOWS:-64 72 80 92 100 112 124 136 156}"
BERS="${BERS:-0 1e-7 1e-6}"
SACKS="${SACKS:-0 1}"
DURATION="${DURATION:-90}"
OMIT="${OMIT:-10}"
PARALLEL="${PARALLEL:-6}"
NETBLT_SIZE="${NETBLT_SIZE:-10MiB}"
NETBLT_RUNS="${NETBLT_RUNS:-1}"
SEED="${SEED:-1106}"
RESULTS="${RESULTS:-${TMPDIR:-/tmp}/netblt-rfc1106}"
DOC="${DOC:-$root/docs/rfc1106.md}"
RIGHT=198.18.0.2
PROFILE=t1-satellite
MTU=1500

mode="${1:-run}"
mkdir -p "$RESULTS"

render() {
    python3 "$lib/rfc1106_report.py" "$RESULTS" "$DOC" "$DURATION" "$OMIT"
    echo "== wrote $DOC (results in $RESULTS)" >&2
}
if [ "$mode" = report ]; then
    render
    exit 0
fi
if [ "$mode" != run ]; then
    echo "usage: bench/rfc1106.sh [run|report]" >&2
    exit 2
fi

if [ "$(id -u)" != 0 ]; then
    echo "bench/rfc1106.sh: needs root (network namespaces and TUN devices)" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "bench/rfc1106.sh: needs python3" >&2; exit 2; }
if [ -z "${NETBLT:-}" ]; then
    echo "== building netblt (release)" >&2
    (cd "$root" && cargo build --release -q -p netblt-cli)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi
[ -x "$NETBLT" ] || { echo "bench/rfc1106.sh: no netblt binary at $NETBLT" >&2; exit 2; }
have_bench=0
"$NETBLT" bench --help >/dev/null 2>&1 && have_bench=1

# Path facts and NETBLT pacing for the report and the NETBLT runs.
"$NETBLT" profiles "$PROFILE" --json >"$RESULTS/profile.json"
python3 "$lib/emupath.py" "$RESULTS/profile.json" --mtu "$MTU" >"$RESULTS/path.json"
nb_flags="$(python3 -c "
import json; n = json.load(open('$RESULTS/path.json'))['netblt']
print('--packet-size %d --burst-size %d --burst-interval %d' % (n['packet_size'], n['burst_size'], n['burst_interval_ms']))")"

names=()     # emulations started by this script, for the cleanup on exit
cleanup() {
    local n
    for n in "${names[@]}"; do
        "$NETBLT" emu down "$n" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One run in its own emulation; writes $RESULTS/$id.{send,recv,emu}.json + .log.
run_tcp() {
    local id="$1" win_k="$2" sack="$3" ber="$4" seed="$5" name="$6"
    local out="$RESULTS/$id" win=$(( $2 * 1024 ))
    local sysctls="sysctl -qw net.ipv4.tcp_sack=$sack net.ipv4.tcp_window_scaling=1 net.ipv4.tcp_timestamps=1"
    "$NETBLT" emu --name "$name" --profile "$PROFILE" --mtu "$MTU" --ber "$ber" --seed "$seed" --json \
        --right "$sysctls && exec python3 $lib/tcpbulk.py recv --window $win --duration $DURATION --omit $OMIT > $out.recv.json.tmp" \
        -- sh -c "$sysctls && exec python3 $lib/tcpbulk.py send $RIGHT --cc cubic --duration $(( DURATION + 120 )) > $out.send.json.tmp" \
        >"$out.emu.json.tmp" 2>"$out.log" || echo "run $id: exit status $?" >>"$out.log"
    python3 -c "
import json, sys
meta = dict(kind='tcp', id='$id', window=$win, window_k=$win_k, sack=$sack, ber=float('$ber'), seed=$seed,
            duration=$DURATION, omit=$OMIT)
for part in ('send', 'recv', 'emu'):
    try:
        meta[part] = json.load(open('$out.%s.json.tmp' % part))
    except Exception as e:
        meta[part] = None
        meta.setdefault('errors', []).append('%s: %s' % (part, e))
json.dump(meta, open('$out.json', 'w'))
"
    rm -f "$out".*.json.tmp
}

run_netblt() {
    local id="$1" ber="$2" seed="$3" name="$4"
    local out="$RESULTS/$id"
    "$NETBLT" emu --name "$name" --profile "$PROFILE" --mtu "$MTU" --ber "$ber" --seed "$seed" --json \
        --right "exec $NETBLT recv --sink --once --json --accept-any --listen 0.0.0.0:9998 > $out.recv.json.tmp" \
        -- sh -c "exec $NETBLT bench $RIGHT --size $NETBLT_SIZE $nb_flags --buffer-size 128KiB --buffers 8 --json > $out.send.json.tmp" \
        >"$out.emu.json.tmp" 2>"$out.log" || echo "run $id: exit status $?" >>"$out.log"
    python3 -c "
import json
meta = dict(kind='netblt', id='$id', ber=float('$ber'), seed=$seed, size='$NETBLT_SIZE', flags='$nb_flags --buffer-size 128KiB --buffers 8')
for part in ('send', 'recv', 'emu'):
    try:
        meta[part] = json.load(open('$out.%s.json.tmp' % part))
    except Exception as e:
        meta[part] = None
        meta.setdefault('errors', []).append('%s: %s' % (part, e))
json.dump(meta, open('$out.json', 'w'))
"
    rm -f "$out".*.json.tmp
}

# The job list: TCP for every (BER, SACK, window), then NETBLT per BER.
jobs=()
bi=0
for ber in $BERS; do
    wi=0
    for w in $WINDOWS; do
        for sack in $SACKS; do
            jobs+=("tcp $w $sack $ber $(( SEED + bi * 100 + wi ))")
        done
        wi=$(( wi + 1 ))
    done
    if [ "$have_bench" = 1 ]; then
        for r in $(seq 1 "$NETBLT_RUNS"); do
            jobs+=("netblt $r - $ber $(( SEED + bi * 100 + 50 + r ))")
        done
    fi
    bi=$(( bi + 1 ))
done
[ "$have_bench" = 1 ] || echo "== netblt bench is not available in $NETBLT: NETBLT runs skipped" >&2

total=${#jobs[@]}
n=0
running=0
for job in "${jobs[@]}"; do
    read -r kind a b ber seed <<<"$job"
    n=$(( n + 1 ))
    if [ "$kind" = tcp ]; then id="tcp-w${a}-sack${b}-ber${ber}"; else id="netblt-${a}-ber${ber}"; fi
    if [ -s "$RESULTS/$id.json" ] && python3 -c "
import json,sys; d=json.load(open('$RESULTS/$id.json')); sys.exit(0 if d.get('recv') else 1)" 2>/dev/null; then
        echo "== [$n/$total] $id: kept from an earlier run" >&2
        continue
    fi
    name="r11-$n-$$"
    names+=("$name")
    echo "== [$n/$total] $id (emulation $name)" >&2
    if [ "$kind" = tcp ]; then
        run_tcp "$id" "$a" "$b" "$ber" "$seed" "$name" &
    else
        run_netblt "$id" "$ber" "$seed" "$name" &
    fi
    running=$(( running + 1 ))
    if [ "$running" -ge "$PARALLEL" ]; then
        wait -n || true
        running=$(( running - 1 ))
    fi
done
wait || true
render
