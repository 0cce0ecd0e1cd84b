#!/usr/bin/env bash
# .ci/wireshark.sh: checks the Wireshark dissector (tools/wireshark/netblt.lua) against live
# NETBLT traffic (issue 10). The transfers run with --insecure: the dissector decodes RFC
# 998's packets, and encrypted ones (Version 2) carry only the clear common header.
#
# It builds `netblt`, runs real transfers on loopback inside a private network namespace
# (so nothing else on the host is captured and no port can clash), captures them with
# tcpdump, and decodes the capture with `tshark -X lua_script:tools/wireshark/netblt.lua`. It
# fails unless every UDP packet on the NETBLT port decodes as NETBLT, with no malformed
# packet, no bad or unverified checksum, no Lua error and no protocol warning, and unless
# the capture holds OPEN, RESPONSE, DATA, LDATA, CONTROL (with GO and OK), NULL-ACK, DONE and
# REFUSED. Then the same over raw IP protocol 30 (if raw sockets work here), then a crafted
# pcap of what a healthy run never sends (tools/wireshark/crafted_test.py).
#
# Run as root (CI does): it installs tshark, tcpdump and python3 when missing. About ten seconds after the build. NETBLT_WS_KEEP=1
# keeps the captures and logs (their directory is printed); a failure always keeps them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LUA=$ROOT/tools/wireshark/netblt.lua
CRAFTED=$ROOT/tools/wireshark/crafted_test.py
export PATH="$HOME/.cargo/bin:$PATH"

say() { echo "wireshark: $*"; }
die() { echo "wireshark: FAIL: $*" >&2; exit 1; }

if [ -z "${NETBLT_WS_INNER:-}" ]; then
  # ---- Outside the namespace: tools, build, then re-run this script inside one. ----------
  missing=""
  command -v tshark >/dev/null 2>&1 || missing="$missing tshark"
  command -v tcpdump >/dev/null 2>&1 || missing="$missing tcpdump"
  command -v python3 >/dev/null 2>&1 || missing="$missing python3"
  command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
  command -v unshare >/dev/null 2>&1 || missing="$missing util-linux"
  if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing:$missing"
    # wireshark-common asks whether non-root users may capture; answer no, without a prompt.
    if command -v debconf-set-selections >/dev/null 2>&1; then
      echo "wireshark-common wireshark-common/install-setuid boolean false" |
        debconf-set-selections
    fi
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $missing) \
      >/dev/null || die "could not install$missing"
  fi
  for tool in tshark tcpdump python3 ip unshare; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run as root to install it)"
  done
  say "$(tshark --version 2>/dev/null | head -1)"

  # `--bin netblt` finds the tool whichever crate holds it (crates/netblt or netblt-cli);
  # the JSON messages give the executable's path whatever the target directory.
  say "building netblt"
  BIN=$(cargo build --bin netblt --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\/netblt\)".*/\1/p' | tail -1)
  [ -n "$BIN" ] && [ -x "$BIN" ] || die "cargo build --bin netblt gave no executable"

  export NETBLT_WS_INNER=1 NETBLT_BIN=$BIN
  # A private network namespace: its own `lo`, its own ports, nothing else on the wire.
  # (Root, not a user namespace: tcpdump must switch users, which a user namespace forbids.)
  [ "$(id -u)" = 0 ] || die "needs root (a network namespace and tcpdump on its lo)"
  unshare --net true 2>/dev/null || die "cannot create a network namespace (unshare --net)"
  exec unshare --net -- bash "$0" "$@"
fi

# ---- Inside the namespace. -------------------------------------------------------------------
BIN=$NETBLT_BIN
PORT=9998 # the registered port; the heuristic is checked on the same packets below
ip link set lo up
WORK=$(mktemp -d "${TMPDIR:-/tmp}/netblt-wireshark.XXXXXX")
PIDS=()
ok_exit=0
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$ok_exit" = 1 ] && [ -z "${NETBLT_WS_KEEP:-}" ]; then
    rm -rf "$WORK"
  else
    echo "wireshark: captures and logs kept in $WORK" >&2
  fi
}
trap cleanup EXIT

# Starts tcpdump on lo with a capture filter; waits until it listens. Sets TCPDUMP_PID.
start_capture() { # FILE FILTER
  tcpdump -i lo -n -s 0 -B 131072 --immediate-mode -U -Z root -w "$1" "$2" 2>"$1.log" &
  TCPDUMP_PID=$!
  PIDS+=("$TCPDUMP_PID")
  local i
  for i in $(seq 100); do
    grep -q "listening on" "$1.log" 2>/dev/null && return 0
    kill -0 "$TCPDUMP_PID" 2>/dev/null || die "tcpdump did not start: $(cat "$1.log")"
    sleep 0.1
  done
  die "tcpdump did not start listening in 10 s"
}

# Stops tcpdump and fails unless it wrote every packet the filter took. tcpdump stops reading
# at SIGINT and loses what still waits in its buffer ("received by filter" but not
# "captured"), so first wait until the file stops growing: on a busy machine tcpdump can be
# seconds behind a fast transfer (--immediate-mode: the kernel hands over every packet at
# once, not a ring block per second).
stop_capture() { # FILE
  local before=-1 now i
  for i in $(seq 100); do
    now=$(stat -c %s "$1" 2>/dev/null || echo 0)
    [ "$now" = "$before" ] && break
    before=$now
    sleep 0.4
  done
  kill -INT "$TCPDUMP_PID" 2>/dev/null || true
  wait "$TCPDUMP_PID" 2>/dev/null || true
  local captured received dropped
  captured=$(sed -n 's/^\([0-9]*\) packets\{0,1\} captured.*/\1/p' "$1.log")
  received=$(sed -n 's/^\([0-9]*\) packets\{0,1\} received by filter.*/\1/p' "$1.log")
  dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$1.log")
  [ "${dropped:-0}" = 0 ] || die "tcpdump: the kernel dropped $dropped packets (capture incomplete)"
  # On `lo` the filter sees each packet twice (sent and received) and libpcap keeps one.
  [ -n "$captured" ] && [ -n "$received" ] || die "tcpdump printed no statistics: $(cat "$1.log")"
  [ "$received" = "$captured" ] || [ "$received" = $((2 * captured)) ] ||
    die "tcpdump wrote $captured packets of $received the filter took (capture incomplete)"
}

# Waits until something listens on UDP port $1 (or, with "raw", holds a raw socket).
wait_udp_port() {
  local hex i
  hex=$(printf ':%04X ' "$1")
  for i in $(seq 100); do
    grep -q "$hex" /proc/net/udp /proc/net/udp6 2>/dev/null && return 0
    sleep 0.1
  done
  die "no receiver on UDP port $1 after 10 s"
}

# Decodes FILE, keeps the packets matching DISPLAY_FILTER, and checks them. Prints a summary
# and adds to DECODED; LABEL names the run in messages; REQUIRED lists the types that must
# appear. Extra tshark options can follow.
DECODED=0
FRAMES=0
check_capture() { # LABEL FILE DISPLAY_FILTER REQUIRED...
  local label=$1 file=$2 filter=$3
  shift 3
  local required=$*
  local out=$WORK/$label.fields
  tshark -n -r "$file" -X "lua_script:$LUA" -Y "$filter" -T fields \
    -E separator=/t -E occurrence=a -E aggregator=, \
    -e frame.number -e netblt.type -e netblt.msg.type \
    -e netblt.malformed -e _ws.malformed -e _ws.lua.error \
    -e netblt.checksum.bad -e netblt.data_checksum.bad -e netblt.checksum.status \
    -e netblt.data_checksum.status -e netblt.mbz -e netblt.protocol \
    >"$out" 2>"$out.err" || die "$label: tshark failed: $(cat "$out.err")"
  # One awk pass: counts, and the first few offending frames of each kind.
  local report
  report=$(awk -F'\t' -v required="$required" '
    function bump(kind, frame) { bad[kind]++; if (bad[kind] <= 5) ex[kind] = ex[kind] " " frame }
    {
      frames++
      if ($2 == "" && $4 == "") bump("not decoded as NETBLT", $1)
      n = split($2, t, ","); for (i = 1; i <= n; i++) { types[t[i]]++; pdus++ }
      n = split($3, m, ","); for (i = 1; i <= n; i++) msgs[m[i]]++
      if ($4 != "" || $5 != "") bump("malformed", $1)
      if ($6 != "") bump("Lua error", $1)
      if ($7 != "" || $8 != "") bump("bad checksum", $1)
      n = split($9, s, ","); for (i = 1; i <= n; i++) if (s[i] != "1") { bump("header checksum not verified good", $1); break }
      n = split($10, s, ","); for (i = 1; i <= n; i++) if (s[i] == "1") datagood++
      if ($11 != "") bump("non-zero reserved bits", $1)
      if ($12 != "") bump("protocol warning", $1)
    }
    END {
      split("OPEN RESPONSE KEEPALIVE QUIT QUITACK ABORT DATA LDATA NULL-ACK CONTROL REFUSED DONE FEEDBACK", name, " ")
      for (i = 0; i <= 12; i++) code[name[i + 1]] = i
      line = ""
      for (i = 0; i <= 12; i++) if (types[i]) line = line sprintf(" %s=%d", name[i + 1], types[i])
      printf "SUMMARY %d %d %d GO=%d OK=%d RESEND=%d%s\n", frames, pdus, datagood, msgs[0], msgs[1], msgs[2], line
      n = split(required, r, " ")
      for (i = 1; i <= n; i++) {
        if (r[i] == "GO" || r[i] == "OK") { if (!msgs[r[i] == "GO" ? 0 : 1]) print "MISSING no " r[i] " message in any CONTROL packet" }
        else if (r[i] == "DATACHECKSUM") { if (!datagood) print "MISSING no DATA with a verified good data checksum" }
        else if (!types[code[r[i]]]) print "MISSING no " r[i] " packet in the capture"
      }
      if (!frames) print "MISSING no packet at all in the capture"
      for (k in bad) printf "BAD %d frame(s) %s (e.g. frames%s)\n", bad[k], k, ex[k]
    }' "$out")
  local summary
  summary=$(echo "$report" | sed -n 's/^SUMMARY //p')
  set -- $summary
  say "$label: $1 frames, $2 NETBLT packets ($3 data checksums verified):${*:4}"
  FRAMES=$((FRAMES + $1))
  DECODED=$((DECODED + $2))
  if echo "$report" | grep -q '^\(MISSING\|BAD\)'; then
    echo "$report" | sed -n 's/^\(MISSING\|BAD\) /wireshark: FAIL: '"$label"': /p' >&2
    exit 1
  fi
}

# ---- 1. UDP: a benchmark, a file each way, a refused request. -------------------------------
mkdir -p "$WORK/served" "$WORK/got"
head -c 300001 /dev/urandom >"$WORK/served/file.bin"
start_capture "$WORK/udp.pcap" "udp port $PORT"
"$BIN" recv --insecure --listen "127.0.0.1:$PORT" --dir "$WORK/served" --serve >"$WORK/recv.log" 2>&1 &
PIDS+=("$!")
wait_udp_port "$PORT"
say "UDP: bench 20M, send and get a 300001-byte file (C = 1, 1001-byte segments), a refused get"
timeout 120 "$BIN" bench --insecure "127.0.0.1:$PORT" --size 20M >"$WORK/bench.log" 2>&1 ||
  die "netblt bench failed: $(tail -3 "$WORK/bench.log")"
mkdir -p "$WORK/up"
cp "$WORK/served/file.bin" "$WORK/up/upload.bin"
timeout 120 "$BIN" send --insecure "$WORK/up/upload.bin" "127.0.0.1:$PORT" --data-checksum on \
  --packet-size 1001 --buffer-size 64KiB >"$WORK/send.log" 2>&1 ||
  die "netblt send failed: $(tail -3 "$WORK/send.log")"
timeout 120 "$BIN" get --insecure "127.0.0.1:$PORT" file.bin -o "$WORK/got/file.bin" --data-checksum on \
  >"$WORK/get.log" 2>&1 || die "netblt get failed: $(tail -3 "$WORK/get.log")"
cmp -s "$WORK/served/file.bin" "$WORK/got/file.bin" || die "netblt get returned other bytes"
if timeout 60 "$BIN" get --insecure "127.0.0.1:$PORT" no-such-file -o "$WORK/got/x" >"$WORK/refused.log" 2>&1; then
  die "netblt get of a missing file succeeded"
fi
stop_capture "$WORK/udp.pcap"
check_capture udp "$WORK/udp.pcap" "udp.port == $PORT && !icmp" \
  OPEN RESPONSE DATA LDATA CONTROL GO OK NULL-ACK DONE REFUSED DATACHECKSUM
# The heuristic alone (port table entry removed, heuristics tried first) must decode the
# same packets: that is what a capture on another port gets.
nonnetblt=$(tshark -n -r "$WORK/udp.pcap" -X "lua_script:$LUA" -o netblt.udp_port:0 \
  -o udp.try_heuristic_first:TRUE -Y "udp.port == $PORT && !icmp && !netblt" \
  -T fields -e frame.number 2>"$WORK/heuristic.err" | wc -l)
[ "$nonnetblt" = 0 ] || die "udp: the heuristic missed $nonnetblt frames"
say "udp: the heuristic dissector alone decodes every frame too"

# ---- 2. Raw IP protocol 30, if raw sockets work here. ---------------------------------------
start_capture "$WORK/raw.pcap" "ip proto 30"
"$BIN" recv --insecure --listen "127.0.0.1:$PORT" --sink --raw-ip >"$WORK/recv-raw.log" 2>&1 &
RAW_PID=$!
PIDS+=("$RAW_PID")
sleep 0.5
if kill -0 "$RAW_PID" 2>/dev/null &&
  timeout 120 "$BIN" bench --insecure "127.0.0.1:$PORT" --size 2M --raw-ip >"$WORK/bench-raw.log" 2>&1; then
  stop_capture "$WORK/raw.pcap"
  check_capture raw-ip "$WORK/raw.pcap" "ip.proto == 30 && !icmp" \
    OPEN RESPONSE DATA LDATA CONTROL GO OK NULL-ACK DONE DATACHECKSUM
else
  stop_capture "$WORK/raw.pcap"
  say "raw-ip: skipped, raw IP does not work here: $(tail -1 "$WORK/bench-raw.log" "$WORK/recv-raw.log" 2>/dev/null | grep -v '^==>' | grep . | tail -1)"
fi

# ---- 3. Crafted packets: what a healthy run does not send. ----------------------------------
python3 "$CRAFTED" "$LUA" --keep "$WORK/crafted" | sed 's/^/wireshark: /' ||
  die "crafted packets decoded wrongly"

say "live captures: $FRAMES frames, every one decoded as NETBLT"
say "$DECODED packets decoded, 0 malformed"
ok_exit=1
