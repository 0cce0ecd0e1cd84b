#!/usr/bin/env bash
# A directory with one large file on a long path (decision F19): what
# sending the large file on its own costs next to one bundle, and what an
# interrupted send then resumes.
#
#   bench/large_in_dir.sh
#   REPS=5 BIG=200M bench/large_in_dir.sh
#
# The directory: 100 random 10 kB files and one random file of BIG bytes.
# Through `netblt emu --rate RATE --delay DELAY --queue QUEUE` (RTT = 2 x
# DELAY) to a `recv` on the far side, encrypted:
# 1. REPS times, alternately, `send d --resumable-min never` (one bundle)
#    and `send d --resumable-min MIN` (the large file on its own), each to
#    a fresh destination: the whole command's wall time.
# 2. For each of MIN and `never`: the send interrupted (SIGINT) STOP seconds
#    in, the partial copy the receiver kept, then the same command plus
#    `--resume --json`: the bytes it sent and its wall time.
# Environment: NETBLT (the build; default: cargo build --release), REPS (2),
# BIG (200M), MIN (100M), STOP (11, seconds), RATE (100M), DELAY (150, ms
# one way), QUEUE (3750000, one bandwidth-delay product). Needs root and
# /dev/net/tun (the emulator).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

REPS="${REPS:-2}"
BIG="${BIG:-200M}"
MIN="${MIN:-100M}"
STOP="${STOP:-11}"
RATE="${RATE:-100M}"
DELAY="${DELAY:-150}"
QUEUE="${QUEUE:-3750000}"
if [ -z "${NETBLT:-}" ]; then
    (cd "$root" && cargo build --release -q -p netblt-cli)
    NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export NETBLT_HOME="$work/home"
mkdir -p "$work/src/d" "$work/dst"
for i in $(seq -w 1 100); do head -c 10000 /dev/urandom > "$work/src/d/s$i"; done
head -c "$(numfmt --from=si "$BIG")" /dev/urandom > "$work/src/d/big"
# Both ends share one key directory that authorizes its own key.
echo "$("$NETBLT" id 2>/dev/null | head -1 | awk '{print $1}') bench" > "$NETBLT_HOME/authorized_keys"

cat > "$work/run.sh" <<EOF
#!/bin/sh
B="$NETBLT"; W="$work"
wall() { echo "\$(date +%s.%N)"; }
for run in \$(seq 1 $REPS); do
  for min in never $MIN; do
    rm -rf "\$W/dst/d"
    s=\$(wall); "\$B" send "\$W/src/d" 198.18.0.2 --resumable-min \$min > "\$W/out" 2>&1; rc=\$?; e=\$(wall)
    echo "run \$run, --resumable-min \$min: exit \$rc, \$(echo "\$e - \$s" | bc) s"
  done
done
for min in $MIN never; do
  rm -rf "\$W/dst/d"
  "\$B" send "\$W/src/d" 198.18.0.2 --resumable-min \$min > "\$W/out" 2>&1 &
  pid=\$!; sleep $STOP; kill -INT \$pid; wait \$pid || true
  sleep 2
  kept=\$(stat -c %s "\$W/dst/d/.big.netblt-part" 2>/dev/null || echo 0)
  s=\$(wall); "\$B" send "\$W/src/d" 198.18.0.2 --resumable-min \$min --resume --json > "\$W/resumed.json" 2>&1; rc=\$?; e=\$(wall)
  sent=\$(python3 -c "import json,sys; print(sum(r['bytes'] - (r.get('resumed_from') or 0) for r in map(json.loads, open(sys.argv[1]))))" "\$W/resumed.json")
  cmp -s "\$W/src/d/big" "\$W/dst/d/big" && same=same || same=DIFFERENT
  echo "interrupted at ${STOP} s, --resumable-min \$min: \$kept bytes kept; --resume: exit \$rc, sent \$sent bytes in \$(echo "\$e - \$s" | bc) s, big \$same"
done
EOF
chmod +x "$work/run.sh"
"$NETBLT" emu --rate "$RATE" --delay "$DELAY" --queue "$QUEUE" \
    --right "$NETBLT recv --dir $work/dst" -- "$work/run.sh" 2>/dev/null
