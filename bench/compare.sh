#!/usr/bin/env bash
# NETBLT and the kernel's TCP side by side over ONE emulated path.
#
#   bench/compare.sh PROFILE [netblt emu knobs...]
#   e.g. bench/compare.sh continental --loss 0.1%
#        bench/compare.sh t1-satellite --mtu 1500 --ber 1e-7
#
# Brings up one emulation (`netblt emu up cmpPID --profile PROFILE KNOBS`,
# namespaces nb-cmpPID-l / nb-cmpPID-r, right side 198.18.0.2), runs one after
# the other on it:
#   * kernel TCP with iperf3, for every combination of
#       CCS      congestion control per socket (iperf3 -C)       "cubic bbr"
#       SACKS    net.ipv4.tcp_sack in both namespaces             "1 0"
#       WSCALES  net.ipv4.tcp_window_scaling in both namespaces  "1"
#       BUFS     socket buffer per run (iperf3 -w; "auto" = kernel
#                auto-tuning, tcp_rmem/tcp_wmem up to 32 MiB set
#                per namespace)                                    "auto"
#     (the kernel caps -w at net.core.rmem_max/wmem_max, which are global:
#     the script reports them and does not change them);
#   * NETBLT: `netblt bench 198.18.0.2 --size N` against `netblt recv --sink`
#     in the right namespace, data packets sized to the MTU (MTU - 52, at most
#     1448: the tool sends IPv4 datagrams of at most 1472 bytes) and
#     paced at NETBLT_RATE_FRACTION (0.98) of the link rate in IP bytes
#     (bench/lib/emupath.py picks --burst-size/--burst-interval, rounding down:
#     the tool's --rate rounds to whole packets per ms, which can exceed the link);
#     N is what that rate moves in DURATION seconds.
# and prints, for each, goodput (application bytes per second; TCP: iperf3's
# receiver figure after OMIT seconds of slow start; NETBLT: the tool's steady
# figure, and its real one) and utilization = goodput / (rate x (1 - loss)),
# with rate the configured link rate (IP bytes) and loss the configured loss
# of a full-size packet (random loss, then bit errors, as the link model
# applies them). Header overhead is part of "utilization": 1448 of 1500 bytes
# is the most TCP with timestamps can reach. Then the same as JSON on stdout
# (and in OUT_JSON if set).
#
# Environment: DURATION (20 s per TCP run), OMIT (5), CCS, SACKS, WSCALES,
# BUFS, NETBLT_RUNS (1; 0 skips NETBLT), NETBLT_BUFFER (buffer size, default
# 1 MiB or what holds 1/4 of the bandwidth-delay product if larger),
# NETBLT_BUFFERS (8), OUT_JSON, NETBLT (binary; default: cargo build
# --release -p netblt-cli in $CARGO_TARGET_DIR). Needs root; installs iperf3
# with apt-get if missing. Traffic stays inside the emulation it creates,
# which is always taken down (also on error and Ctrl-C).
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 2
fi
PROFILE="$1"
shift
KNOBS=("$@")

DURATION="${DURATION:-20}"
OMIT="${OMIT:-5}"
CCS="${CCS:-cubic bbr}"
SACKS="${SACKS:-1 0}"
WSCALES="${WSCALES:-1}"
BUFS="${BUFS:-auto}"
NETBLT_RUNS="${NETBLT_RUNS:-1}"
NETBLT_BUFFERS="${NETBLT_BUFFERS:-8}"
RIGHT=198.18.0.2
NAME="cmp$$"
LNS="nb-$NAME-l"
RNS="nb-$NAME-r"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
lib="$here/lib"

if [ "$(id -u)" != 0 ]; then
    echo "bench/compare.sh: needs root (network namespaces and TUN devices)" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "bench/compare.sh: needs python3" >&2; exit 2; }
if ! command -v iperf3 >/dev/null; then
    echo "== installing iperf3" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q iperf3 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q iperf3 >/dev/null; }
fi
if [ -z "${NETBLT:-}" ]; then
    echo "== building netblt (release)" >&2
    (cd "$root" && cargo build --release -q -p netblt-cli)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi
[ -x "$NETBLT" ] || { echo "bench/compare.sh: no netblt binary at $NETBLT" >&2; exit 2; }

avail="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
for cc in $CCS; do
    if ! grep -qw "$cc" <<<"$avail"; then
        modprobe "tcp_$cc" 2>/dev/null || true
        avail="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
        grep -qw "$cc" <<<"$avail" || echo "== congestion control $cc is not available (have: $avail); its runs will fail" >&2
    fi
done

work="$(mktemp -d)"
up=0
cleanup() {
    if [ "$up" = 1 ]; then
        "$NETBLT" emu down "$NAME" --json >"$work/emu-final.json" 2>/dev/null || "$NETBLT" emu down "$NAME" >/dev/null 2>&1 || true
        up=0
    fi
}
finish() {
    cleanup
    rm -rf "$work"
}
trap finish EXIT
trap 'exit 130' INT TERM

"$NETBLT" profiles "$PROFILE" --json >"$work/profile.json"
python3 "$lib/emupath.py" "$work/profile.json" "${KNOBS[@]}" >"$work/path.json"
echo "== path: $(python3 -c "
import json; p = json.load(open('$work/path.json'))
print('%s %s: %.6g Mb/s, RTT %.1f ms, MTU %d, queue %s B, loss per full packet %.4g' % (
    p['profile'], ' '.join(p['knobs']), p['rate_bps'] / 1e6, p['rtt_s'] * 1e3, p['mtu'], p['queue_bytes'], p['loss']))")" >&2

"$NETBLT" emu up "$NAME" --profile "$PROFILE" "${KNOBS[@]}" 2>"$work/emu-up.log" || { cat "$work/emu-up.log" >&2; exit 1; }
up=1
L=(ip netns exec "$LNS")
R=(ip netns exec "$RNS")
for ns in "$LNS" "$RNS"; do
    # Per-namespace TCP memory: let auto-tuning reach 32 MiB (a 1 Gb/s x
    # 100 ms path needs 12.5 MB in flight plus queue).
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" net.ipv4.tcp_wmem="4096 16384 33554432"
done

results="$work/results.jsonl"
: >"$results"

# Samples the sender's view of the connection half-way through a run.
sample_ss() {
    sleep "$1"
    "${L[@]}" ss -tin dst "$RIGHT" 2>/dev/null | grep -v "^State" >"$2" || true
}

run_tcp() {
    local cc="$1" sack="$2" ws="$3" buf="$4"
    local label="tcp-$cc sack=$sack wscale=$ws buf=$buf"
    local port=$(( 5201 + $(wc -l <"$results") ))
    for ns in "$LNS" "$RNS"; do
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_sack="$sack" net.ipv4.tcp_window_scaling="$ws"
    done
    local wflag=()
    [ "$buf" = auto ] || wflag=(-w "$buf")
    echo "== $label (${DURATION}s)" >&2
    "${R[@]}" iperf3 -s -1 -p "$port" -J >"$work/srv.json" 2>/dev/null &
    local srv=$!
    sleep 0.5
    sample_ss $(( (DURATION + OMIT) / 2 + 1 )) "$work/ss.txt" &
    local ss=$!
    "${L[@]}" iperf3 -c "$RIGHT" -p "$port" -C "$cc" -t "$DURATION" -O "$OMIT" "${wflag[@]}" -J >"$work/cli.json" 2>&1 || true
    wait "$srv" 2>/dev/null || true
    wait "$ss" 2>/dev/null || true
    python3 - "$work/cli.json" "$work/ss.txt" "$work/path.json" "$label" "$cc" "$sack" "$ws" "$buf" >>"$results" <<'EOF'
import json, re, sys
cli, ssf, pathf, label, cc, sack, ws, buf = sys.argv[1:]
path = json.load(open(pathf))
row = {"name": label, "kind": "tcp", "cc": cc, "sack": int(sack), "wscale": int(ws), "buffer": buf}
try:
    d = json.load(open(cli))
    if "error" in d:
        row["error"] = d["error"]
    end = d.get("end", {})
    rx = end.get("sum_received", {})
    row["goodput_Bps"] = rx.get("bits_per_second", 0) / 8 if rx else None
    row["retransmits"] = end.get("sum_sent", {}).get("retransmits")
    st = (end.get("streams") or [{}])[0].get("sender", {})
    row["max_rtt_ms"] = st.get("max_rtt", 0) / 1e3 if st.get("max_rtt") else None
    row["mean_rtt_ms"] = st.get("mean_rtt", 0) / 1e3 if st.get("mean_rtt") else None
    row["cc_used"] = end.get("sender_tcp_congestion")
except Exception as e:
    row["error"] = "iperf3 output: %s" % e
# ss prints two lines per connection; iperf3 has a control connection too:
# keep the one that moved the most data.
text = open(ssf).read() if ssf else ""
conns, cur = [], ""
for line in text.splitlines():
    if line and not line[0].isspace():
        if cur:
            conns.append(cur)
        cur = line
    else:
        cur += " " + line
if cur:
    conns.append(cur)
def acked(c):
    m = re.search(r"bytes_acked:(\d+)", c)
    return int(m.group(1)) if m else 0
ss = max(conns, key=acked) if conns else ""
for key in ("snd_wnd", "cwnd", "wscale", "rwnd_limited", "sndbuf_limited"):
    m = re.search(r"\b%s:(\S+)" % key, ss)
    if m:
        row["ss_" + key] = m.group(1)
row["ss_sack"] = (" sack" in ss) if ss else None
rate, loss = path["rate_bps"], path["loss"]
g = row.get("goodput_Bps")
row["utilization"] = (g * 8 / (rate * (1 - loss))) if (g and rate) else None
print(json.dumps(row))
EOF
    sleep 1
}

run_netblt() {
    local i="$1"
    local flags size
    flags="$(python3 -c "
import json, os; p = json.load(open('$work/path.json')); n = p['netblt']
f = ['--packet-size', str(n['packet_size'])]
f += ['--burst-size', str(n['burst_size']), '--burst-interval', str(n['burst_interval_ms'])]
buf = os.environ.get('NETBLT_BUFFER') or str(max(1 << 20, int(p['bdp_bytes'] / 4)))
f += ['--buffer-size', buf, '--buffers', '$NETBLT_BUFFERS']
print(' '.join(f))")"
    size="$(python3 -c "
import json; n = json.load(open('$work/path.json'))['netblt']
print(max(1 << 20, int(n['data_rate_bps'] / 8 * $DURATION)))")"
    local label="netblt #$i"
    echo "== $label: bench --size $size $flags" >&2
    "${R[@]}" "$NETBLT" recv --sink --once --json --accept-any --listen 0.0.0.0:9998 >"$work/nbrecv.json" 2>"$work/nbrecv.log" &
    local srv=$!
    sleep 0.5
    # shellcheck disable=SC2086
    timeout $(( DURATION * 5 + 60 )) "${L[@]}" "$NETBLT" bench "$RIGHT" --size "$size" $flags --json >"$work/nbsend.json" 2>"$work/nbsend.log" || true
    sleep 1
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    python3 - "$work/nbsend.json" "$work/nbsend.log" "$work/path.json" "$label" "$flags" "$size" >>"$results" <<'EOF'
import json, sys
sendf, logf, pathf, label, flags, size = sys.argv[1:]
path = json.load(open(pathf))
row = {"name": label, "kind": "netblt", "flags": flags, "size": int(size)}
try:
    d = json.load(open(sendf))
    steady, real = d.get("steady_throughput_bps"), d.get("real_throughput_bps")
    row["goodput_Bps"] = (steady or real or 0) / 8 or None
    row["real_Bps"] = real / 8 if real else None
    for k in ("lost", "retransmitted", "data_timeouts", "control_retransmissions", "verified", "srtt_ms", "error", "wall_time_s"):
        row[k] = d.get(k)
    row["retransmits"] = d.get("retransmitted")
except Exception as e:
    row["error"] = "no report (%s): %s" % (e, open(logf).read().strip()[-300:])
rate, loss = path["rate_bps"], path["loss"]
g = row.get("goodput_Bps")
row["utilization"] = (g * 8 / (rate * (1 - loss))) if (g and rate) else None
print(json.dumps(row))
EOF
    sleep 1
}

for cc in $CCS; do
    for sack in $SACKS; do
        for ws in $WSCALES; do
            for buf in $BUFS; do
                run_tcp "$cc" "$sack" "$ws" "$buf"
            done
        done
    done
done
if [ "$NETBLT_RUNS" -gt 0 ]; then
    if "$NETBLT" bench --help >/dev/null 2>&1; then
        for i in $(seq 1 "$NETBLT_RUNS"); do run_netblt "$i"; done
    else
        echo "== $NETBLT has no 'bench' command: NETBLT skipped" >&2
    fi
fi
cleanup

python3 - "$results" "$work/path.json" "$work/emu-final.json" "${OUT_JSON:-}" "$(cat /proc/sys/net/core/rmem_max)" "$(cat /proc/sys/net/core/wmem_max)" <<'EOF'
import json, sys
resf, pathf, emuf, outf, rmem_max, wmem_max = sys.argv[1:]
rows = [json.loads(l) for l in open(resf) if l.strip()]
path = json.load(open(pathf))
try:
    emu = json.load(open(emuf))
except Exception:
    emu = None
def f(v, fmt):
    return fmt % v if v is not None else "-"
print("path: %s %s  rate %.6g Mb/s  RTT %.1f ms  MTU %d  loss/full packet %.4g  (net.core.rmem_max %s, wmem_max %s)" % (
    path["profile"], " ".join(path["knobs"]), path["rate_bps"] / 1e6, path["rtt_s"] * 1e3, path["mtu"],
    path["loss"], rmem_max, wmem_max))
print("%-36s %12s %11s %8s %9s %10s  %s" % ("run", "goodput", "Mb/s", "util", "retrans", "snd_wnd", "note"))
for r in rows:
    g = r.get("goodput_Bps")
    note = r.get("error") or ""
    if r["kind"] == "netblt" and not note:
        note = "real %s Mb/s, lost %s, verified %s" % (f(r.get("real_Bps") and r["real_Bps"] * 8 / 1e6, "%.3f"), r.get("lost"), r.get("verified"))
    if r["kind"] == "tcp" and not note:
        note = "rwnd_limited %s" % r.get("ss_rwnd_limited", "0")
    print("%-36s %10s/s %11s %7s %9s %10s  %s" % (
        r["name"], f(g and g / 1e3, "%.1f kB"), f(g and g * 8 / 1e6, "%.3f"),
        f(r.get("utilization") and 100 * r["utilization"], "%.1f%%"), f(r.get("retransmits"), "%s"),
        r.get("ss_snd_wnd", "-"), note))
if emu is not None:
    print("emulator: %s" % ("FAILED: %s" % emu.get("failure") if emu.get("failed") else "ok (tx_dropped 0)"))
out = {"path": path, "runs": rows, "emulator": emu,
       "net_core": {"rmem_max": int(rmem_max), "wmem_max": int(wmem_max)}}
print(json.dumps(out, indent=1))
if outf:
    json.dump(out, open(outf, "w"), indent=1)
EOF
