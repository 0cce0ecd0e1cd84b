# Shared by bench/wan.sh and bench/fairness.sh (sourced, not run).
#
# Root and tools, the netblt binary, the load average, and sysctls that are
# noted and put back. Every emulated path is a fresh `netblt emu` (one run
# each), so per-namespace sysctls (tcp_rmem, tcp_wmem) vanish with their
# namespaces; only global ones need restoring, and wan_sysctl does that on
# exit.

WAN_RIGHT=198.18.0.2
# The tool encrypts by default: the receiver accepts any sender's key. With
# NETBLT_INSECURE=1 both ends run plain RFC 998 (--insecure).
if [ "${NETBLT_INSECURE:-0}" = 1 ]; then
    NETBLT_RECV_FLAGS="--insecure"; NETBLT_SEND_FLAGS="--insecure"
else
    NETBLT_RECV_FLAGS="--accept-any"; NETBLT_SEND_FLAGS=""
fi
export NETBLT_INSECURE="${NETBLT_INSECURE:-0}"
# Sysctls changed: "KEY OLD NEW" (global, restored on exit) or
# "netns:KEY NEW" (inside the emulation's namespaces, gone with them).
WAN_SYSCTLS=()
_wan_restore=()

wan_need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "$1: needs root (network namespaces and TUN devices)" >&2
        exit 2
    fi
}

# Installs what is missing (root only): iperf3, ping, and the tools in "$@".
wan_install_tools() {
    local need=() tool pkg
    for tool in iperf3 ping python3 "$@"; do
        command -v "$tool" >/dev/null && continue
        case "$tool" in
            ping) pkg=iputils-ping ;;
            *) pkg="$tool" ;;
        esac
        need+=("$pkg")
    done
    [ ${#need[@]} -eq 0 ] && return 0
    echo "== installing ${need[*]}" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || {
        echo "could not install ${need[*]}" >&2
        exit 2
    }
}

# Sets NETBLT: the given binary, or a release build of `--bin netblt`.
wan_build_netblt() {
    local root="$1"
    if [ -z "${NETBLT:-}" ]; then
        echo "== building netblt (release)" >&2
        (cd "$root" && cargo build --release -q --bin netblt) || exit 2
        NETBLT="${CARGO_TARGET_DIR:-$root/target}/release/netblt"
    fi
    [ -x "$NETBLT" ] || { echo "no netblt binary at $NETBLT" >&2; exit 2; }
}

# Whether `netblt bench` knows --policy (the adaptive controller is in).
wan_has_policy() {
    "$NETBLT" bench --help 2>/dev/null | grep -q -- '--policy'
}

wan_load() {
    cut -d' ' -f1-3 /proc/loadavg
}

# Sets a global sysctl, remembering the old value; wan_restore_sysctls puts
# it back (called from the EXIT trap).
wan_sysctl() {
    local key="$1" val="$2" old
    old="$(sysctl -n "$key" 2>/dev/null)" || return 1
    [ "$old" = "$val" ] && return 0
    sysctl -qw "$key=$val" || return 1
    WAN_SYSCTLS+=("$key: $old -> $val (global, restored at exit)")
    _wan_restore+=("$key=$old")
}

wan_restore_sysctls() {
    local kv
    for kv in "${_wan_restore[@]}"; do
        sysctl -qw "$kv" >/dev/null 2>&1 || echo "could not restore $kv" >&2
    done
    _wan_restore=()
}

# Makes the congestion controls in "$@" available (loads tcp_CC modules).
wan_need_cc() {
    local cc avail
    for cc in "$@"; do
        avail="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
        grep -qw "$cc" <<<"$avail" && continue
        modprobe "tcp_$cc" 2>/dev/null && WAN_SYSCTLS+=("module tcp_$cc loaded (left loaded)")
        grep -qw "$cc" <<<"$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)" ||
            echo "== congestion control $cc is not available; its runs will fail" >&2
    done
}

# Per-namespace TCP memory, set inside each emulation's namespaces (the
# namespaces die with the run): auto-tuning may reach 128 MiB, enough for
# 100 Mb/s x 1.8 s plus a BDP of queue, twice over.
WAN_TCP_MEM="4096 131072 134217728"
wan_tcp_sysctls() {
    echo "sysctl -qw net.ipv4.tcp_rmem='$WAN_TCP_MEM' net.ipv4.tcp_wmem='$WAN_TCP_MEM'"
}
WAN_SYSCTLS+=("netns:net.ipv4.tcp_rmem = net.ipv4.tcp_wmem = $WAN_TCP_MEM (both namespaces of each TCP run; gone with them)")

# Sets MODE (quick or full) from the script's arguments; --help prints the
# script's header comment.
wan_mode() {
    local script="$1"; shift
    MODE=full
    case "${1:-}" in
        --quick) MODE=quick ;;
        "") ;;
        -h|--help) sed -n '2,/^set -euo/p' "$script" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: bench/$(basename "$script") [--quick]" >&2; exit 2 ;;
    esac
}
