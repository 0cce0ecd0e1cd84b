#!/usr/bin/env bash
# How faithful is the emulator? Rate and RTT through `netblt emu` at 1M..1G.
#
# For each rate it runs, each in a fresh emulation (namespaces nb-nbbench-l/-r):
#   1. RTT at idle: a ping-like ICMP echo probe (Python, kernel receive
#      timestamps, µs resolution: iputils ping prints 0.1 ms steps at 20 ms,
#      so its average is only a cross-check when it is installed); median
#      compared with the configured 2 * DELAY_MS plus the probe's own
#      serialization time at the link rate in both directions. An ideal
#      emulated link gives the floor (probe + forwarder wake-ups).
#   2. Kernel TCP (iperf3, cubic): steady-state goodput from the receiver's
#      intervals (slow start left out), converted to IP bytes on the wire
#      (full-size segments with timestamps: MTU / (MTU - 52)).
#   3. UDP (iperf3 -u, 1472-byte datagrams) offered 2 % above the link rate so
#      the link is the bottleneck; receiver's steady-state rate in wire bytes
#      (MTU / 1472).
# and prints configured vs achieved rate and error %, RTT median vs configured,
# what the forwarder itself wrote per second (the emulator's view, free of
# endpoint limits), the forwarder's lateness histogram (TCP run), and a JSON
# summary at the end.
# Targets: rate within 1 %, RTT within 0.5 ms.
#
# Needs root (namespaces, TUN), python3, and iperf3 (installed with apt-get if
# missing). Knobs (environment): RATES, DELAY_MS, DURATION, OMIT, EMU (path to
# an `emu` binary; default: build the netblt-emu example), OUT_JSON (file to
# also write the summary to). Traffic stays inside the namespaces it creates.
set -euo pipefail

RATES="${RATES:-1M 10M 100M 1G}"
DELAY_MS="${DELAY_MS:-10}"
DURATION="${DURATION:-10}"
OMIT="${OMIT:-2}"
MTU=1500
NAME=nbbench
RIGHT=198.18.0.2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

if [ "$(id -u)" != 0 ]; then
    echo "bench/emulator.sh: needs root (network namespaces and TUN devices)" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "bench/emulator.sh: needs python3" >&2; exit 2; }
if ! command -v iperf3 >/dev/null; then
    echo "== installing iperf3" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q iperf3 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q iperf3 >/dev/null; }
fi

if [ -z "${EMU:-}" ]; then
    echo "== building the emulator (release)" >&2
    (cd "$root" && cargo build --release -q -p netblt-emu --example emu)
    EMU="${CARGO_TARGET_DIR:-$root/target}/release/examples/emu"
fi
[ -x "$EMU" ] || { echo "bench/emulator.sh: no emulator binary at $EMU" >&2; exit 2; }

# The RTT probes run SCHED_FIFO at a priority below the forwarder's, so that
# on a shared machine the emulator is measured, not how long the scheduler
# takes to wake a probe. iperf3 only gets nice -15: as real-time tasks at
# 1 Gb/s they and the forwarder would fill both CPUs, and the kernel then
# stalls all real-time work for up to 50 ms a second to let others run.
rt=""
command -v chrt >/dev/null && rt="chrt -f 5"
boost="nice -n -15"

work="$(mktemp -d)"
cleanup() {
    # A run interrupted hard could leave the benchmark's namespaces behind.
    "$EMU" down "$NAME" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/icmp_rtt.py" <<'EOF'
# ping-like RTT probe with kernel receive timestamps (SO_TIMESTAMPNS) and
# microsecond output; iputils ping prints 0.1 ms steps at these RTTs. The far
# kernel answers the echo itself, so no process wake-up there adds noise.
import json, os, socket, struct, sys, time
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
addr, count = sys.argv[1], int(sys.argv[2])

def checksum(data):
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF

sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
sock.settimeout(3.0)
ident, payload, rtts, lost = os.getpid() & 0xFFFF, bytes(56), [], 0
for seq in range(count):
    body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload
    packet = struct.pack("!BBHHH", 8, 0, checksum(body), ident, seq) + payload
    sent = time.clock_gettime_ns(time.CLOCK_REALTIME)   # SO_TIMESTAMPNS's clock
    sock.sendto(packet, (addr, 0))
    while True:
        try:
            data, anc, _, _ = sock.recvmsg(2048, socket.CMSG_SPACE(16))
        except socket.timeout:
            lost += 1
            break
        ihl = (data[0] & 0x0F) * 4
        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ != 0 or rid != ident or rseq != seq:
            continue
        stamp = next((d for lvl, kind, d in anc if lvl == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS), None)
        if stamp:
            sec, nsec = struct.unpack("ll", stamp[:16])
            received = sec * 10**9 + nsec
        else:
            received = time.clock_gettime_ns(time.CLOCK_REALTIME)
        rtts.append((received - sent) / 1e6)
        break
    time.sleep(0.02)
print(json.dumps({"rtts_ms": rtts, "lost": lost, "probe_ip_bytes": 20 + 8 + len(payload),
                  "method": "icmp echo, kernel rx timestamps"}))
EOF

to_bps() { python3 -c "
import sys; t=sys.argv[1]; m={'k':1e3,'K':1e3,'M':1e6,'m':1e6,'G':1e9,'g':1e9}
print(int(float(t[:-1])*m[t[-1]]) if t[-1] in m else int(t))" "$1"; }

echo "== RTT floor: an ideal link (no delay, no rate limit)" >&2
"$EMU" --name "$NAME" --json -- sh -c "$rt python3 $work/icmp_rtt.py $RIGHT 100 > $work/rtt-floor.json" \
    >/dev/null 2>"$work/rtt-floor.log" || true

for rate in $RATES; do
    bps="$(to_bps "$rate")"
    # Drop-tail queue of twice the bandwidth-delay product (at least 30 kB):
    # enough for cubic to keep the link busy through its backoffs.
    queue=$(( bps / 8 * 2 * DELAY_MS / 1000 * 2 ))
    [ "$queue" -ge 30000 ] || queue=30000
    common=(--name "$NAME" --rate "$rate" --delay "$DELAY_MS" --queue "$queue" --mtu "$MTU" --json)
    echo "== $rate: RTT" >&2
    probe="$rt python3 $work/icmp_rtt.py $RIGHT 100 > $work/rtt-$rate.json"
    # iputils ping, when installed, as a cross-check (its average has µs digits).
    command -v ping >/dev/null && probe="$probe; $rt ping -n -q -c 50 -i 0.02 $RIGHT > $work/rtt-$rate.ping"
    "$EMU" "${common[@]}" -- sh -c "$probe" >"$work/rtt-$rate.emu.json" 2>"$work/rtt-$rate.log" || true
    echo "== $rate: TCP (iperf3, ${DURATION}s)" >&2
    # tcp_wmem is per namespace: let the sender's buffer cover BDP + queue at 1G.
    "$EMU" "${common[@]}" --right "exec $boost iperf3 -s -1 -J" \
        -- sh -c "sysctl -qw net.ipv4.tcp_wmem='4096 16384 33554432'; $boost iperf3 -c $RIGHT -C cubic -t $DURATION -O $OMIT -J --get-server-output > $work/tcp-$rate.json" \
        >"$work/tcp-$rate.emu.json" 2>"$work/tcp-$rate.log" || true
    echo "== $rate: UDP (iperf3 -u, ${DURATION}s)" >&2
    udp_bps=$(python3 -c "print(int($bps * 1472 / $MTU * 1.02))")
    # -w 4M: a receive buffer that rides out a scheduling hiccup at 1 Gb/s.
    # The right side also saves its UDP counters: RcvbufErrors are datagrams
    # the receiving socket dropped (an endpoint short of CPU, not the link).
    "$EMU" "${common[@]}" \
        --right "$boost iperf3 -s -1 -J; grep '^Udp:' /proc/net/snmp > $work/udp-$rate.snmp" \
        -- sh -c "$boost iperf3 -c $RIGHT -u -b $udp_bps -l 1472 -w 4M -t $DURATION -J --get-server-output > $work/udp-$rate.json; sleep 0.5" \
        >"$work/udp-$rate.emu.json" 2>"$work/udp-$rate.log" || true
done

python3 - "$work" "$RATES" "$DELAY_MS" "$MTU" "$OMIT" "$DURATION" "${OUT_JSON:-}" <<'EOF'
import json, os, re, statistics, sys

work, rates, delay_ms, mtu, omit, duration, out_json = sys.argv[1:8]
delay_ms, mtu, omit, duration = float(delay_ms), int(mtu), int(omit), int(duration)
TCP_FACTOR = mtu / (mtu - 52)      # IPv4 20 + TCP 20 + timestamps 12
UDP_FACTOR = mtu / 1472            # 1472-byte datagrams fill the MTU

def load(name):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def to_bps(t):
    m = {"k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "G": 1e9, "g": 1e9}
    return int(float(t[:-1]) * m[t[-1]]) if t[-1] in m else int(t)

def steady_rate(run, skip_first):
    """Receiver's payload rate over whole intervals, leaving out omitted or
    the first `skip_first` intervals and the last partial one."""
    if not run or "server_output_json" not in run:
        return None
    ivs = [i["sum"] for i in run["server_output_json"].get("intervals", [])]
    ivs = [i for i in ivs if not i.get("omitted")][skip_first:]
    ivs = [i for i in ivs if i["seconds"] > 0.9]
    secs = sum(i["seconds"] for i in ivs)
    return sum(i["bytes"] for i in ivs) * 8 / secs if secs > 0 else None

def forwarder_rate(emu):
    """What the forwarder delivered left to right, in bits/s: the mean of the
    whole seconds in which it ran at >= 90 % of its busiest second, leaving
    out the first and last of them (ramp-up, partial seconds)."""
    if not emu:
        return None
    bins = emu["forward"].get("per_second_bytes") or []
    if not bins:
        return None
    top = max(bins)
    busy = [b for b in bins if b >= 0.9 * top][1:-1]
    return sum(busy) * 8 / len(busy) if busy else None

def udp_rcvbuf_errors(rate):
    try:
        head, values = open(os.path.join(work, f"udp-{rate}.snmp")).read().split("\n")[:2]
        return int(dict(zip(head.split()[1:], values.split()[1:]))["RcvbufErrors"])
    except (OSError, ValueError, KeyError):
        return None

def quantile(h, q):
    if not h or h["samples"] == 0:
        return None
    rank, seen = max(1, int(q * h["samples"] + 0.999999)), 0
    for i, c in enumerate(h["counts"]):
        seen += c
        if seen >= rank:
            return min(h["le_ns"][i] if i < len(h["le_ns"]) else h["max_ns"], h["max_ns"]) / 1e3
    return h["max_ns"] / 1e3

def lateness(h):
    if not h:
        return None
    return {"samples": h["samples"], "mean_us": round(h["sum_ns"] / max(1, h["samples"]) / 1e3, 2),
            "p50_le_us": quantile(h, 0.5), "p99_le_us": quantile(h, 0.99),
            "p999_le_us": quantile(h, 0.999), "max_us": round(h["max_ns"] / 1e3, 1),
            "le_us": [b / 1e3 for b in h["le_ns"]], "counts": h["counts"]}

def pct(achieved, configured):
    return None if achieved is None else round((achieved - configured) / configured * 100, 3)

floor = load("rtt-floor.json")
floor_ms = round(statistics.median(floor["rtts_ms"]), 4) if floor and floor["rtts_ms"] else None

results = []
for rate in rates.split():
    bps = to_bps(rate)
    r = {"rate": rate, "rate_bps": bps}
    # RTT
    rtts, probe, method, lost = [], None, None, None
    echo = load(f"rtt-{rate}.json")
    if echo:
        rtts, probe, method, lost = echo["rtts_ms"], echo["probe_ip_bytes"], echo["method"], echo["lost"]
    ping_avg = None
    ping_path = os.path.join(work, f"rtt-{rate}.ping")
    if os.path.exists(ping_path):
        m = re.search(r"= [0-9.]+/([0-9.]+)/", open(ping_path).read())
        ping_avg = float(m.group(1)) if m else None
    configured = 2 * delay_ms
    # The probe is serialized at the link rate once in each direction.
    expected = configured + (2 * probe * 8 / bps * 1e3 if probe else 0)
    med = statistics.median(rtts) if rtts else None
    r["rtt"] = {"method": method, "samples": len(rtts), "lost": lost, "configured_ms": configured,
                "expected_ms": round(expected, 4), "median_ms": None if med is None else round(med, 4),
                "min_ms": round(min(rtts), 4) if rtts else None,
                "error_ms": None if med is None else round(med - expected, 4),
                "ping_avg_ms": ping_avg}
    # TCP
    tcp = load(f"tcp-{rate}.json")
    tcp_emu = load(f"tcp-{rate}.emu.json")
    good = steady_rate(tcp, 0)
    wire = None if good is None else good * TCP_FACTOR
    fwd = forwarder_rate(tcp_emu)
    r["tcp"] = {"goodput_bps": good, "wire_bps": wire, "error_pct": pct(wire, bps),
                "forwarder_bps": fwd, "forwarder_error_pct": pct(fwd, bps),
                "retransmits": tcp["end"]["sum_sent"].get("retransmits") if tcp else None,
                "emu_failed": None if tcp_emu is None else tcp_emu["failed"]}
    # UDP
    udp = load(f"udp-{rate}.json")
    udp_emu = load(f"udp-{rate}.emu.json")
    good = steady_rate(udp, 1)
    wire = None if good is None else good * UDP_FACTOR
    fwd = forwarder_rate(udp_emu)
    r["udp"] = {"goodput_bps": good, "wire_bps": wire, "error_pct": pct(wire, bps),
                "forwarder_bps": fwd, "forwarder_error_pct": pct(fwd, bps),
                "receiver_socket_drops": udp_rcvbuf_errors(rate),
                "emu_failed": None if udp_emu is None else udp_emu["failed"]}
    r["lateness_forward"] = lateness(tcp_emu["forward"]["lateness"]) if tcp_emu else None
    r["lateness_reverse"] = lateness(tcp_emu["reverse"]["lateness"]) if tcp_emu else None
    results.append(r)

def fmt_rate(v):
    return "-" if v is None else f"{v / 1e6:10.3f}"
def fmt(v, spec):
    return "-" if v is None else format(v, spec)

print()
print(f"emulator accuracy: one-way delay {delay_ms} ms each way, {duration} s runs, MTU {mtu}")
print(f"RTT floor (ideal emulated link, same probe): median {floor_ms} ms")
print(f"{'rate':>6} | {'TCP Mb/s':>10} {'err %':>6} {'fwd err':>7} | {'UDP Mb/s':>10} {'err %':>6} {'fwd err':>7} | "
      f"{'RTT cfg ms':>10} {'expect':>8} {'median':>8} {'err ms':>6} | lateness fwd p50/p99/max us")
for r in results:
    t, u, rt, lf = r["tcp"], r["udp"], r["rtt"], r["lateness_forward"] or {}
    print(f"{r['rate']:>6} | {fmt_rate(t['wire_bps'])} {fmt(t['error_pct'], '6.2f')} {fmt(t['forwarder_error_pct'], '7.2f')} | "
          f"{fmt_rate(u['wire_bps'])} {fmt(u['error_pct'], '6.2f')} {fmt(u['forwarder_error_pct'], '7.2f')} | "
          f"{rt['configured_ms']:10.2f} {fmt(rt['expected_ms'], '8.3f')} {fmt(rt['median_ms'], '8.3f')} "
          f"{fmt(rt['error_ms'], '6.3f')} | {lf.get('p50_le_us')}/{lf.get('p99_le_us')}/{lf.get('max_us')}")
print("(Mb/s = IP bytes on the wire at the receiving application; 'fwd err' = what the forwarder wrote, per whole second)")
for r in results:
    drops = r["udp"]["receiver_socket_drops"]
    if drops:
        print(f"note: at {r['rate']} the UDP receiver's socket dropped {drops} datagrams: the endpoint, not the link, fell short")
print()
for r in results:
    for key in ("lateness_forward", "lateness_reverse"):
        h = r[key]
        if h:
            buckets = " ".join(f"<={int(le) if le >= 1 else le}us:{c}" for le, c in zip(h["le_us"], h["counts"]) if c)
            over = h["counts"][-1]
            if over:
                buckets += f" >{int(h['le_us'][-1])}us:{over}"
            print(f"{r['rate']:>6} {key.split('_')[1]:>7} lateness: n={h['samples']} mean={h['mean_us']}us | {buckets}")

def within(r, key):
    t, u, rt = r["tcp"], r["udp"], r["rtt"]
    return (t[key] is not None and abs(t[key]) <= 1.0 and u[key] is not None and abs(u[key]) <= 1.0
            and rt["error_ms"] is not None and abs(rt["error_ms"]) <= 0.5
            and not t["emu_failed"] and not u["emu_failed"])
ok = all(within(r, "error_pct") for r in results)
ok_forwarder = all(within(r, "forwarder_error_pct") for r in results)
summary = {"rtt_floor_ms": floor_ms, "delay_ms_each_way": delay_ms, "duration_s": duration, "omit_s": omit, "mtu": mtu,
           "targets": {"rate_error_pct": 1.0, "rtt_error_ms": 0.5}, "all_within_targets": ok,
           "forwarder_within_targets": ok_forwarder,
           "results": results}
text = json.dumps(summary, indent=2)
print()
print(text)
if out_json:
    with open(out_json, "w") as f:
        f.write(text + "\n")
EOF
