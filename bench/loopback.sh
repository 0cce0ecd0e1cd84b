#!/usr/bin/env bash
# netblt against kernel TCP on loopback, in one run.
#
#   bench/loopback.sh
#
# 1. kernel TCP: iperf3 on 127.0.0.1, REPS runs of SECS seconds;
# 2. netblt memory to memory: `netblt bench` against `netblt recv --sink`,
#    REPS runs of SIZE bytes, each encrypted (the default: every packet
#    AEAD-authenticated, no end-to-end digest, decision K16) and --insecure
#    (data hashed with BLAKE3 at both ends), alternating;
# 3. netblt file to file: a FILE_SIZE file on /dev/shm sent to a receiver
#    writing to /dev/shm (read, hash, send, receive, hash, write, fsync,
#    rename);
# then the medians, the ratios encrypted/TCP (target >= 0.7, issue 11) and
# --insecure/TCP, the CPU seconds
# per GB of each (user + system of both ends, from GNU time), and a JSON
# summary on the last line.
#
# Installs iperf3 with apt-get if missing; builds netblt --release with
# CARGO_TARGET_DIR (default: target/). Traffic stays on 127.0.0.1.
# Knobs (environment): REPS (3), SECS (5), SIZE (2G), FILE_SIZE (1G),
# PORT (19998), EXTRA (flags for netblt bench and send). EXTRA defaults to
# none: the tool's defaults, which on loopback are loopback-sized since
# decision G3 (sizes from the path MTU: 16000-byte packets, 8,192,000-byte
# buffers, 5 outstanding, 40 Gb/s at most), like for like with kernel TCP,
# which uses 64 KB segments on loopback. Before G3 the script passed
# "--rate 40G --packet-size 16000 --buffer-size 8MiB" (give it as EXTRA to
# compare).
set -euo pipefail

REPS="${REPS:-3}"
SECS="${SECS:-5}"
SIZE="${SIZE:-2G}"
FILE_SIZE="${FILE_SIZE:-1G}"
PORT="${PORT:-19998}"
EXTRA="${EXTRA-}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
tmp="$(mktemp -d)"
shm="$(mktemp -d /dev/shm/netblt-bench.XXXXXX)"
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$tmp" "$shm"
}
trap cleanup EXIT

if ! command -v iperf3 >/dev/null; then
    echo "== installing iperf3" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3 >/dev/null
fi
[ -x /usr/bin/time ] || DEBIAN_FRONTEND=noninteractive apt-get install -y time >/dev/null

echo "== building netblt (release)" >&2
(cd "$root" && cargo build --release -p netblt-cli >&2)
NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# CPU seconds (user + sys) recorded by GNU time in file $1.
cpu_of() { awk '{s += $1 + $2} END {printf "%.3f", s}' "$1"; }
T() { /usr/bin/time -f "%U %S" -o "$1" "${@:2}"; }
# Bits per second as Gb/s with two decimals.
gbps() { awk -v b="$1" 'BEGIN {printf "%.2f", b / 1e9}'; }

echo "== kernel TCP (iperf3, $REPS x ${SECS}s)" >&2
tcp_bps=(); tcp_cpu=()
for i in $(seq "$REPS"); do
    T "$tmp/srv.time" iperf3 -s -1 -p "$PORT" -B 127.0.0.1 >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    T "$tmp/cli.time" iperf3 -c 127.0.0.1 -p "$PORT" -t "$SECS" -J >"$tmp/iperf.json"
    wait "$srv" || true
    bps=$(jq '.end.sum_received.bits_per_second' "$tmp/iperf.json")
    bytes=$(jq '.end.sum_received.bytes' "$tmp/iperf.json")
    cpu=$(awk -v a="$(cpu_of "$tmp/srv.time")" -v b="$(cpu_of "$tmp/cli.time")" -v n="$bytes" \
        'BEGIN {printf "%.3f", (a + b) / (n / 1e9)}')
    printf "  run %d: %s Gb/s, %s CPU s/GB\n" "$i" "$(gbps "$bps")" "$cpu" >&2
    tcp_bps+=("$bps"); tcp_cpu+=("$cpu")
done

# Encrypted (the default: Noise handshake, AES-256-GCM on every packet)
# and --insecure (plain RFC 998) runs alternate, so both see the same load.
# Throw-away key directories: the receiver accepts any key.
export NETBLT_HOME="$tmp/keys"
recv_flags() { if [ "$1" = insecure ]; then echo --insecure; else echo --accept-any; fi; }
send_flags() { if [ "$1" = insecure ]; then echo --insecure; fi; }
declare -A m_bps m_cpu m_rxm
for i in $(seq "$REPS"); do
  for mode in encrypted insecure; do
    echo "== netblt bench -> recv --sink, $mode, run $i ($SIZE)" >&2
    # shellcheck disable=SC2046
    T "$tmp/recv.time" "$NETBLT" recv --listen "127.0.0.1:$PORT" --sink --once --json $(recv_flags $mode) >"$tmp/recv.json" 2>/dev/null &
    rcv=$!
    sleep 0.5
    # shellcheck disable=SC2086,SC2046
    T "$tmp/bench.time" "$NETBLT" bench "127.0.0.1:$PORT" --size "$SIZE" --json $EXTRA $(send_flags $mode) >"$tmp/bench.json"
    wait "$rcv" || true
    bps=$(jq '.real_throughput_bps' "$tmp/bench.json")
    bytes=$(jq '.bytes' "$tmp/bench.json")
    rxm=$(jq '.retransmitted' "$tmp/bench.json")
    cpu=$(awk -v a="$(cpu_of "$tmp/recv.time")" -v b="$(cpu_of "$tmp/bench.time")" -v n="$bytes" \
        'BEGIN {printf "%.3f", (a + b) / (n / 1e9)}')
    printf "  %s Gb/s (steady %s), %s resent, %s CPU s/GB, suite %s\n" \
        "$(gbps "$bps")" "$(gbps "$(jq '.steady_throughput_bps' "$tmp/bench.json")")" "$rxm" "$cpu" \
        "$(jq -r '.security.suite // "none"' "$tmp/bench.json")" >&2
    m_bps[$mode]+="$bps "; m_cpu[$mode]+="$cpu "; m_rxm[$mode]+="$rxm "
  done
done
# shellcheck disable=SC2206
nb_bps=(${m_bps[encrypted]}); nb_cpu=(${m_cpu[encrypted]}); nb_rxm=(${m_rxm[encrypted]})
# shellcheck disable=SC2206
in_bps=(${m_bps[insecure]}); in_cpu=(${m_cpu[insecure]})

echo "== netblt file to file ($FILE_SIZE on /dev/shm)" >&2
mkdir -p "$shm/src" "$shm/dst"
# GNU head: 1G is 1 GiB, 1GB is 10^9 bytes.
head -c "$FILE_SIZE" /dev/urandom >"$shm/src/file.bin"
T "$tmp/frecv.time" "$NETBLT" recv --listen "127.0.0.1:$PORT" --dir "$shm/dst" --once --json --accept-any >"$tmp/frecv.json" 2>/dev/null &
rcv=$!
sleep 0.5
# shellcheck disable=SC2086
T "$tmp/fsend.time" "$NETBLT" send "$shm/src/file.bin" "127.0.0.1:$PORT" --json $EXTRA >"$tmp/fsend.json"
wait "$rcv" || true
cmp -s "$shm/src/file.bin" "$shm/dst/file.bin" && same=true || same=false
f_bps=$(jq '.real_throughput_bps' "$tmp/fsend.json")
f_bytes=$(jq '.bytes' "$tmp/fsend.json")
f_cpu=$(awk -v a="$(cpu_of "$tmp/frecv.time")" -v b="$(cpu_of "$tmp/fsend.time")" -v n="$f_bytes" \
    'BEGIN {printf "%.3f", (a + b) / (n / 1e9)}')
printf "  %s Gb/s, %s CPU s/GB, identical: %s\n" "$(gbps "$f_bps")" "$f_cpu" "$same" >&2

tcp_med=$(printf "%s\n" "${tcp_bps[@]}" | median)
nb_med=$(printf "%s\n" "${nb_bps[@]}" | median)
tcp_cpu_med=$(printf "%s\n" "${tcp_cpu[@]}" | median)
nb_cpu_med=$(printf "%s\n" "${nb_cpu[@]}" | median)
in_med=$(printf "%s\n" "${in_bps[@]}" | median)
in_cpu_med=$(printf "%s\n" "${in_cpu[@]}" | median)
ratio=$(awk -v a="$nb_med" -v b="$tcp_med" 'BEGIN {printf "%.3f", a / b}')
in_ratio=$(awk -v a="$in_med" -v b="$tcp_med" 'BEGIN {printf "%.3f", a / b}')

echo
printf "%-34s %12s %14s\n" "" "median Gb/s" "CPU s per GB"
printf "%-34s %12s %14s\n" "kernel TCP (iperf3)" "$(gbps "$tcp_med")" "$tcp_cpu_med"
printf "%-34s %12s %14s\n" "netblt bench, encrypted" "$(gbps "$nb_med")" "$nb_cpu_med"
printf "%-34s %12s %14s\n" "netblt bench, --insecure" "$(gbps "$in_med")" "$in_cpu_med"
printf "%-34s %12s %14s\n" "netblt send, encrypted (file, shm)" "$(gbps "$f_bps")" "$f_cpu"
echo "ratio encrypted/TCP: $ratio (target >= 0.7); --insecure/TCP: $in_ratio; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
jq -cn \
    --argjson tcp "[$(IFS=,; echo "${tcp_bps[*]}")]" \
    --argjson nb "[$(IFS=,; echo "${nb_bps[*]}")]" \
    --argjson tcpcpu "[$(IFS=,; echo "${tcp_cpu[*]}")]" \
    --argjson nbcpu "[$(IFS=,; echo "${nb_cpu[*]}")]" \
    --argjson rxm "[$(IFS=,; echo "${nb_rxm[*]}")]" \
    --argjson tcpmed "$tcp_med" --argjson nbmed "$nb_med" --argjson ratio "$ratio" \
    --argjson inb "[$(IFS=,; echo "${in_bps[*]}")]" --argjson incpu "[$(IFS=,; echo "${in_cpu[*]}")]" \
    --argjson inmed "$in_med" --argjson inratio "$in_ratio" \
    --argjson fbps "$f_bps" --argjson fcpu "$f_cpu" --argjson same "$same" \
    --arg size "$SIZE" --arg fsize "$FILE_SIZE" --arg extra "$EXTRA" \
    '{tcp_bps: $tcp, tcp_median_bps: $tcpmed, tcp_cpu_s_per_gb: $tcpcpu,
      netblt_bps: $nb, netblt_median_bps: $nbmed, netblt_cpu_s_per_gb: $nbcpu,
      netblt_retransmitted: $rxm, ratio: $ratio, target: 0.7, encrypted: true,
      insecure_bps: $inb, insecure_median_bps: $inmed, insecure_cpu_s_per_gb: $incpu, insecure_ratio: $inratio, bench_size: $size, bench_flags: $extra,
      file_to_file: {size: $fsize, bps: $fbps, cpu_s_per_gb: $fcpu, identical: $same}}'
