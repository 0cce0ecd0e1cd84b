#!/usr/bin/env python3
"""Rows and summaries for bench/wan.sh.

    wanstats.py row DIR KEY=VALUE...   -> one JSON row on stdout
    wanstats.py summary ROWS.jsonl META.json OUT.json -> table on stdout
    wanstats.py resummary OLD.json OUT.json  -> the tables again from stored runs

A run directory holds what one emulated run left: emu.json (`netblt emu
--json`), send.json (`netblt bench --json`) or cli.json (`iperf3 -J`),
ping.txt (`ping -D`), rc. KEY=VALUE gives the cell (contender, rtt_ms,
loss_pct, rate_bps, rep, ...).

Goodput is normalised by the protocol's own ceiling C*(1-p)*payload/wire:
NETBLT carries `packet_size` bytes in packet_size + 24 (header) + 8 (UDP) +
20 (IP) bytes, TCP 1448 in 1500 (timestamps on).
"""

import json
import math
import re
import statistics
import sys

# NETBLT header, UDP, IPv4, and the 24-byte AEAD trailer (counter + tag) of
# encrypted mode, the tool's default (NETBLT_INSECURE=1 in the environment:
# plain RFC 998 packets, no trailer).
import os
NETBLT_OVERHEAD = 24 + 8 + 20 + (0 if os.environ.get("NETBLT_INSECURE") == "1" else 24)
TCP_EFF = 1448 / 1500


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def pings(path):
    """RTT samples in ms from `ping -D` output."""
    return [float(m.group(1)) for m in re.finditer(r"time=([0-9.]+) ms", text(path))]


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def startup(emu, rate_bps, loss):
    """Seconds from the first busy second to the first second that carried
    >= 90 % of C*(1-p) at the bottleneck's output (1 s resolution)."""
    per = ((emu or {}).get("forward") or {}).get("per_second_bytes") or []
    full = rate_bps / 8 * (1 - loss)
    t0 = next((i for i, b in enumerate(per) if b >= 0.1 * full), None)
    if t0 is None:
        return None
    t90 = next((i for i, b in enumerate(per) if i >= t0 and b >= 0.9 * full), None)
    return None if t90 is None else float(t90 - t0 + 1)


def after_startup_bps(emu, rate_bps, loss, app_bits):
    """The application's goodput between start-up and wind-down (from the
    first second at >= 90 % of C(1-p) to the last such second, every second
    between them counted whatever it carried): its bytes over the whole
    run, shared out by the bytes the bottleneck delivered in each second.
    The issue's goodput target is a steady-state figure (its start-up and
    completion targets judge the ramp and the tail), and a 20-round-trip
    run at 600 ms spends a quarter of itself in the handshake and start-up,
    whatever the controller. The window used to run to the emulator's last
    whole second, but the emulator outlives the transfer by a second or
    two (its shutdown), and those idle seconds were counted as the
    flow's (decision B3)."""
    per = ((emu or {}).get("forward") or {}).get("per_second_bytes") or []
    full = rate_bps / 8 * (1 - loss)
    t0 = next((i for i, b in enumerate(per) if b >= 0.1 * full), None)
    if t0 is None or not app_bits:
        return None
    busy = [i for i, b in enumerate(per) if i >= t0 and b >= 0.9 * full]
    if len(busy) < 2:
        return None
    t90, last = busy[0], busy[-1]
    total = sum(per[t0:])
    window = sum(per[t90:last + 1])
    return app_bits * window / total / (last - t90 + 1) if total else None


def row(d, kv):
    r = dict(kv)
    for k in ("rtt_ms", "loss_pct", "rate_bps", "rep", "queue_bytes", "size", "duration_s", "seed"):
        if k in r:
            r[k] = float(r[k]) if "." in str(r[k]) else int(r[k])
    rate, p, rtt = r["rate_bps"], r["loss_pct"] / 100, r["rtt_ms"]
    r["rc"] = text(d + "/rc").strip() or None
    emu = load(d + "/emu.json")
    if emu:
        link = emu["forward"]["link"]
        r["offered_pkts"] = link["offered"]
        r["queue_drops"] = link["drops"]["queue"]
        r["random_drops"] = link["drops"]["loss"]
        r["queue_drop_frac"] = link["drops"]["queue"] / link["offered"] if link["offered"] else None
        r["emu_failed"] = emu.get("failed")
        if emu.get("failed"):
            r["error"] = "emulator: %s" % emu.get("failure")
        r["startup_s"] = startup(emu, rate, p)
        # Kept so that a later reading of the run can recompute its windows.
        r["per_second_bytes"] = emu["forward"].get("per_second_bytes")
    else:
        r["error"] = "no emulator report: " + text(d + "/emu.err").strip()[-200:]
    samples = pings(d + "/ping.txt")
    r["ping_n"] = len(samples)
    r["ping_min_ms"] = min(samples) if samples else None
    r["ping_p95_ms"] = pct(samples, 0.95)
    r["qdelay_p95_ms"] = r["ping_p95_ms"] - rtt if samples else None
    if r["kind"] == "netblt":
        s = load(d + "/send.json")
        if s is None:
            r.setdefault("error", "no report: " + text(d + "/send.err").strip()[-200:])
        else:
            eff = s["packet_size"] / (s["packet_size"] + NETBLT_OVERHEAD)
            r["eff"] = eff
            for k in ("lost", "retransmitted", "datagrams_sent", "verified", "wall_time_s", "srtt_ms"):
                r[k] = s.get(k)
            if s.get("error"):
                r["error"] = s["error"]
            r["goodput_bps"] = s.get("real_throughput_bps")
            r["steady_bps"] = s.get("steady_throughput_bps")
            # The bytes themselves: real_throughput_bps is measured from the
            # handshake's end, so times the wall time it overstates them by
            # a round trip's worth (3 % at 600 ms; decision B3).
            if s.get("bytes"):
                r["after_bps"] = after_startup_bps(emu, rate, p, s["bytes"] * 8)
            lost = s.get("lost") or 0
            r["rxm_over_lost"] = (s.get("retransmitted") or 0) / lost if lost else None
    else:
        c = load(d + "/cli.json")
        r["eff"] = TCP_EFF
        if c is None:
            r.setdefault("error", "no iperf3 report")
        else:
            if c.get("error"):
                r["error"] = c["error"]
            end = c.get("end", {})
            rx = end.get("sum_received", {})
            r["goodput_bps"] = rx.get("bits_per_second")
            if rx.get("bytes"):
                r["after_bps"] = after_startup_bps(emu, rate, p, rx["bytes"] * 8)
            r["retransmitted"] = end.get("sum_sent", {}).get("retransmits")
            r["cc_used"] = end.get("sender_tcp_congestion")
            st = (end.get("streams") or [{}])[0].get("sender", {})
            r["srtt_ms"] = st.get("mean_rtt", 0) / 1e3 if st.get("mean_rtt") else None
    # The sender's "lost" counts packets asked for again; what the path
    # really dropped is the emulator's forward drops (data, plus the few
    # pings and NULL-ACKs among them).
    drops = (r.get("queue_drops") or 0) + (r.get("random_drops") or 0)
    r["link_drops"] = drops if emu else None
    rx = r.get("retransmitted")
    r["rxm_over_drops"] = rx / drops if emu and drops and rx is not None else None
    g = r.get("goodput_bps")
    r["norm"] = g / (rate * (1 - p) * r["eff"]) if g and r.get("eff") else None
    a = r.get("after_bps")
    r["after_norm"] = a / (rate * (1 - p) * r["eff"]) if a and r.get("eff") else None
    if r.get("startup_s") is not None:
        r["startup_rtts"] = r["startup_s"] / (rtt / 1e3)
    if r.get("kind") == "netblt" and r.get("wall_time_s") and r.get("bound_s"):
        r["completion_ok"] = r["wall_time_s"] <= float(r["bound_s"])
    return r


def med(rows, key):
    xs = [r[key] for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
    return statistics.median(xs) if xs else None


def f(v, fmt, none="-"):
    return none if v is None else fmt % v


def derive(r):
    """Fields computed from others (also for rows stored by older versions)."""
    if "rxm_over_drops" not in r and "queue_drops" in r:
        drops = (r.get("queue_drops") or 0) + (r.get("random_drops") or 0)
        r["link_drops"] = drops
        rx = r.get("retransmitted")
        r["rxm_over_drops"] = rx / drops if drops and rx is not None else None
    return r


def summary(rows_path, meta_path, out_path, rows=None, meta=None):
    if rows is None:
        rows = [json.loads(l) for l in open(rows_path) if l.strip()]
        meta = load(meta_path) or {}
    rows = [derive(r) for r in rows]
    grid = [r for r in rows if r.get("test") == "grid"]
    comp = [r for r in rows if r.get("test") == "completion"]
    contenders = []
    for r in grid:
        if r["contender"] not in contenders:
            contenders.append(r["contender"])
    cells = sorted({(r["rtt_ms"], r["loss_pct"]) for r in grid})
    keys = ("goodput_bps", "norm", "after_bps", "after_norm", "steady_bps", "datagrams_sent", "lost", "retransmitted",
            "rxm_over_lost", "rxm_over_drops", "link_drops", "queue_drops", "queue_drop_frac", "offered_pkts", "qdelay_p95_ms",
            "ping_min_ms", "startup_s", "startup_rtts", "wall_time_s")
    agg = []
    for rtt, loss in cells:
        for c in contenders:
            rs = [r for r in grid if (r["rtt_ms"], r["loss_pct"], r["contender"]) == (rtt, loss, c)]
            if not rs:
                continue
            a = {"rtt_ms": rtt, "loss_pct": loss, "contender": c, "runs": len(rs),
                 "failed": sum(1 for r in rs if r.get("error")),
                 "errors": sorted({r["error"] for r in rs if r.get("error")})}
            for k in keys:
                a[k] = med(rs, k)
            agg.append(a)

    def get(rtt, loss, c, k):
        for a in agg:
            if (a["rtt_ms"], a["loss_pct"], a["contender"]) == (rtt, loss, c):
                return a.get(k)
        return None

    print("Goodput / (C(1-p) payload/wire), median of runs (Mb/s in brackets); '!' = a run failed")
    head = "%-6s %-6s" % ("RTT", "loss%") + "".join(" %-19s" % c for c in contenders)
    print(head)
    for rtt, loss in cells:
        line = "%-6s %-6s" % (rtt, loss)
        for c in contenders:
            n, g = get(rtt, loss, c, "norm"), get(rtt, loss, c, "goodput_bps")
            bad = "!" if get(rtt, loss, c, "failed") else ""
            line += " %-19s" % ("%s (%s)%s" % (f(n, "%.2f"), f(g and g / 1e6, "%.1f"), bad))
        print(line)
    print()
    print("The same after start-up (from the first second at >= 90 % of C(1-p) to the last such second)")
    print(head)
    for rtt, loss in cells:
        line = "%-6s %-6s" % (rtt, loss)
        for c in contenders:
            n, g = get(rtt, loss, c, "after_norm"), get(rtt, loss, c, "after_bps")
            line += " %-19s" % ("%s (%s)" % (f(n, "%.2f"), f(g and g / 1e6, "%.1f")))
        print(line)
    print()
    print("Per contender: bottleneck queue drops / packets offered, p95 RTT - base (ping, ms),")
    print("NETBLT datagrams sent / lost (asked again) / retransmitted (TCP: iperf3's retransmits),")
    print("retransmitted / packets the path dropped (queue + random), start-up to 90 % (s, 1 s resolution)")
    print("%-6s %-6s %-10s %9s %7s %7s %9s %9s %9s %8s %7s" % (
        "RTT", "loss%", "contender", "qdrops", "qdrop%", "q95 ms", "sent", "lost", "rxm", "rxm/drop", "start s"))
    for a in agg:
        print("%-6s %-6s %-10s %9s %7s %7s %9s %9s %9s %8s %7s" % (
            a["rtt_ms"], a["loss_pct"], a["contender"], f(a["queue_drops"], "%d"),
            f(a["queue_drop_frac"] and 100 * a["queue_drop_frac"], "%.2f"), f(a["qdelay_p95_ms"], "%.1f"),
            f(a["datagrams_sent"], "%d"), f(a["lost"], "%d"), f(a["retransmitted"], "%d"),
            f(a["rxm_over_drops"], "%.2f"), f(a["startup_s"], "%.0f")))
    # The targets, for the adaptive contender.
    checks = []
    if "adaptive" in contenders:
        for rtt, loss in cells:
            n = get(rtt, loss, "adaptive", "norm")
            bbr = get(rtt, loss, "bbr", "norm")
            na = get(rtt, loss, "adaptive", "after_norm")
            bbra = get(rtt, loss, "bbr", "after_norm")
            qd = get(rtt, loss, "adaptive", "qdelay_p95_ms")
            fr = get(rtt, loss, "adaptive", "queue_drop_frac")
            rl = get(rtt, loss, "adaptive", "rxm_over_drops")
            st = get(rtt, loss, "adaptive", "startup_s")
            c = {"rtt_ms": rtt, "loss_pct": loss,
                 "goodput_ge_0.95": None if n is None else n >= 0.95,
                 "ge_bbr": None if n is None or bbr is None else n >= bbr,
                 "after_ge_0.95": None if na is None else na >= 0.95,
                 "after_ge_bbr": None if na is None or bbra is None else na >= bbra,
                 "queue_drops_le_1pct": None if fr is None else fr <= 0.01,
                 "qdelay_ok": None if qd is None else qd <= max(5.0, 0.1 * rtt),
                 "rxm_over_drops_le_1.05": None if rl is None else rl <= 1.05,
                 # 1 s resolution: judged only where 10 RTT >= 3 s.
                 "startup_10rtt": None if st is None or rtt * 10 < 3000 else st <= rtt * 10 / 1e3}
            checks.append(c)
        print()
        print("Targets of issue 9 for 'adaptive' (yes/no; - = not measured)")
        names = [k for k in checks[0] if k not in ("rtt_ms", "loss_pct")] if checks else []
        print("%-6s %-6s " % ("RTT", "loss%") + " ".join("%-13s" % k[:13] for k in names))
        for c in checks:
            print("%-6s %-6s " % (c["rtt_ms"], c["loss_pct"]) + " ".join(
                "%-13s" % ("-" if c[k] is None else ("yes" if c[k] else "NO")) for k in names))
    if comp:
        print()
        print("Completion: %s at RTT %s ms, loss %s %%, bound 1.1 x (size/(C(1-p)) + 1.5 RTT)" % (
            comp[0].get("size_text"), comp[0]["rtt_ms"], comp[0]["loss_pct"]))
        for c in sorted({r["contender"] for r in comp}):
            rs = [r for r in comp if r["contender"] == c]
            w = med(rs, "wall_time_s")
            print("  %-10s median %s s over %d run(s), bound %.2f s: %s%s" % (
                c, f(w, "%.2f"), len(rs), float(rs[0]["bound_s"]),
                "-" if w is None else ("FAILED" if any(r.get("error") for r in rs)
                                       else "within" if w <= float(rs[0]["bound_s"]) else "OVER"),
                "" if not any(r.get("error") for r in rs) else " (errors: %s)" % sorted({r["error"] for r in rs if r.get("error")})))
    out = {"meta": meta, "cells": agg, "targets": checks, "completion": comp, "runs": rows}
    with open(out_path, "w") as fh:
        json.dump(out, fh, indent=1)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "row":
        kv = dict(a.split("=", 1) for a in sys.argv[3:])
        print(json.dumps(row(sys.argv[2], kv)))
    elif len(sys.argv) == 5 and sys.argv[1] == "summary":
        summary(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "resummary":
        # Tables again from a stored OUT.json (its runs and meta).
        old = load(sys.argv[2])
        summary(None, None, sys.argv[3], rows=old["runs"], meta=old["meta"])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
