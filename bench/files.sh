#!/usr/bin/env bash
# Many small files over loopback: netblt against the usual ways, in one run.
#
#   bench/files.sh [N] [PARALLEL]        (defaults: 10000 files, --parallel 16)
#
# Makes N files of 1-64 KiB (random sizes and bytes, seeded, in 100
# directories) on /dev/shm, then copies the tree to a fresh directory on
# /dev/shm with, one after the other:
#   * netblt      `netblt recv --dir DST` + `netblt send SRC --parallel P`
#                 (one NETBLT connection per file, P at a time, each file
#                 verified with BLAKE3, mtime and mode kept);
#   * tar | nc    `tar c | nc -N` into `nc -l | tar x` (one TCP stream, no
#                 verification);
#   * rsync       `rsync -a SRC/ rsync://127.0.0.1:PORT/m/` to an rsync
#                 daemon (one TCP stream, rsync's whole-file checksums);
#   * scp -r      only if an sshd and scp are here (it needs a key set up
#                 for root@127.0.0.1; otherwise the row says why not).
# Everything is on tmpfs, so nobody's fsync costs anything (netblt fsyncs
# every file; on a disk that would be its handicap). Prints wall seconds and
# files per second per method, and checks every copy has N files and the
# same bytes.
set -euo pipefail
N=${1:-10000}
PAR=${2:-16}
BIN=${NETBLT:-target/release/netblt}
[ -x "$BIN" ] || { echo "no $BIN (cargo build --release -p netblt-cli)" >&2; exit 2; }
W=$(mktemp -d /dev/shm/netblt-files.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$W"
}
trap cleanup EXIT
SRC=$W/src/tree
mkdir -p "$SRC"
python3 - "$SRC" "$N" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
r = random.Random(1)
for i in range(n):
    d = os.path.join(root, f"d{i % 100:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}"), "wb") as f:
        f.write(r.randbytes(r.randint(1024, 65536)))
PY
TOTAL=$(find "$SRC" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
SUM=$(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 cat | md5sum | cut -d' ' -f1)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
check() { # DIR: N files, same bytes
    local c s
    c=$(find "$1" -type f | wc -l)
    s=$(cd "$1" && find . -type f -print0 | sort -z | xargs -0 cat | md5sum | cut -d' ' -f1)
    if [ "$c" = "$N" ] && [ "$s" = "$SUM" ]; then echo ok; else echo "BAD ($c files)"; fi
}
row() { # NAME T0 T1 DIR
    local t
    t=$(echo "$3 - $2" | bc -l)
    printf '| %-8s | %8.2f | %9.0f | %s |\n' "$1" "$t" "$(echo "$N / $t" | bc -l)" "$(check "$4")"
}
echo "$N files, $((TOTAL / 1024)) KiB in all, on /dev/shm, loopback; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| method   | wall (s) | files/s   | copy |"
echo "|----------|----------|-----------|------|"

# netblt
D=$W/netblt; mkdir -p "$D"; P=$(port)
"$BIN" recv --listen 127.0.0.1:"$P" --dir "$D" --accept-any >/dev/null 2>"$W/recv.err" & PIDS+=($!)
sleep 0.3
T0=$(now); "$BIN" send "$SRC" 127.0.0.1:"$P" --parallel "$PAR" >/dev/null; T1=$(now)
row "netblt" "$T0" "$T1" "$D/tree"

# tar | nc
D=$W/tarnc; mkdir -p "$D"; P=$(port)
( nc -l 127.0.0.1 "$P" | tar x -C "$D" ) & R=$!
sleep 0.3
T0=$(now); tar c -C "$W/src" tree | nc -N 127.0.0.1 "$P"; wait "$R"; T1=$(now)
row "tar|nc" "$T0" "$T1" "$D/tree"

# rsync daemon
if command -v rsync >/dev/null; then
    D=$W/rsync; mkdir -p "$D"; P=$(port)
    printf 'use chroot = no\n[m]\npath = %s\nread only = no\nuid = root\ngid = root\n' "$D" >"$W/rsyncd.conf"
    rsync --daemon --no-detach --config="$W/rsyncd.conf" --port="$P" --address=127.0.0.1 & PIDS+=($!)
    sleep 0.5
    T0=$(now); rsync -a "$W/src/" rsync://127.0.0.1:"$P"/m/; T1=$(now)
    row "rsync" "$T0" "$T1" "$D/tree"
else
    echo "| rsync    |        - |         - | not installed |"
fi

# scp -r
if command -v scp >/dev/null && ssh -o BatchMode=yes -o StrictHostKeyChecking=no root@127.0.0.1 true 2>/dev/null; then
    D=$W/scp; mkdir -p "$D"
    T0=$(now); scp -q -r -o BatchMode=yes "$SRC" root@127.0.0.1:"$D/"; T1=$(now)
    row "scp -r" "$T0" "$T1" "$D/tree"
else
    echo "| scp -r   |        - |         - | no sshd with a key for root@127.0.0.1 here |"
fi
