#!/usr/bin/env python3
"""Per-flow throughput for bench/fairness.sh.

    fairstats.py scenario DIR SPEC.json  -> one JSON object on stdout
    fairstats.py summary RESULTS.jsonl META.json OUT.json -> tables on stdout

Every flow of a scenario has its own destination port at the receiving
side; `tcpdump` on the right namespace's TUN device (the bottleneck's
output) recorded the headers of every packet that crossed the path
(cap.txt: `tcpdump -r cap.pcap -tt -n -q`). Bytes per flow per BIN seconds
are counted from it (UDP: length minus NETBLT's 24-byte header; TCP: its
payload), the same way for NETBLT and TCP. Retransmitted copies that
arrive twice count twice (rare for both). The measurement window is
[window_start, window_end] of SPEC, in seconds after the first packet.

SPEC: {"name", "flows": [{"label", "kind", "port", "start", "stop"}],
       "window": [a, b], "bin": 0.5}
"""

import json
import re
import statistics
import sys

LINE = re.compile(r"^(\d+\.\d+) IP \S+ > [\d.]+\.(\d+): (UDP, length|tcp) (\d+)")


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or sum(x * x for x in xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def scenario(d, spec_path):
    spec = json.load(open(spec_path))
    bin_s = spec.get("bin", 0.5)
    ports = {f["port"]: f for f in spec["flows"]}
    t0 = None
    t_zero = None
    try:
        t_zero = float(open(d + "/t0").read().strip())
    except (OSError, ValueError):
        pass
    series = {f["label"]: {} for f in spec["flows"]}
    with open(d + "/cap.txt") as fh:
        for line in fh:
            m = LINE.match(line)
            if not m:
                continue
            port = int(m.group(2))
            f = ports.get(port)
            if f is None:
                continue
            t = float(m.group(1))
            if t0 is None:
                t0 = t_zero if t_zero is not None else t
            n = int(m.group(4))
            if m.group(3).startswith("UDP"):
                n = max(0, n - 24)
            b = int((t - t0) / bin_s)
            s = series[f["label"]]
            s[b] = s.get(b, 0) + n
    a, z = spec["window"]
    out = {"name": spec["name"], "window_s": [a, z], "bin_s": bin_s, "flows": []}
    for f in spec["flows"]:
        s = series[f["label"]]
        bins = [s.get(i, 0) for i in range(int(a / bin_s), int(z / bin_s))]
        mbps = sum(bins) * 8 / (z - a) / 1e6 if z > a else None
        last = max(s) if s else -1
        out["flows"].append({
            "label": f["label"], "kind": f["kind"], "port": f["port"], "start_s": f["start"],
            "stop_s": f["stop"], "window_mbps": mbps,
            "series_mbps": [round(s.get(i, 0) * 8 / bin_s / 1e6, 3) for i in range(last + 1)],
        })
    x = [f["window_mbps"] for f in out["flows"]]
    out["jain"] = jain(x)
    out["total_mbps"] = sum(v for v in x if v is not None)
    if len(x) == 2 and x[1]:
        out["ratio_first_over_second"] = x[0] / x[1] if x[1] else None
    try:
        out["tcpdump"] = open(d + "/tcpdump.err").read().strip().splitlines()[-3:]
    except OSError:
        pass
    emu = None
    try:
        emu = json.load(open(d + "/emu.json"))
    except (OSError, ValueError):
        pass
    if emu:
        link = emu["forward"]["link"]
        out["queue_drops"] = link["drops"]["queue"]
        out["offered_pkts"] = link["offered"]
        out["emu_failed"] = emu.get("failed")
    for f, fl in zip(spec["flows"], out["flows"]):
        try:
            fl["report"] = open("%s/%s.json" % (d, f["label"])).read()[-4000:]
        except OSError:
            fl["report"] = None
    return out


def f(v, fmt):
    return "-" if v is None else fmt % v


def summary(results_path, meta_path, out_path):
    res = [json.loads(l) for l in open(results_path) if l.strip()]
    meta = json.load(open(meta_path))
    names = []
    for r in res:
        if r["name"] not in names:
            names.append(r["name"])
    solo = [r["flows"][0]["window_mbps"] for r in res if r["name"] == "cubic-solo"]
    solo_med = statistics.median(solo) if solo else None
    agg = []
    print("Throughput over the overlap window (Mb/s, median of runs), share ratios, Jain's index")
    print("%-16s %-14s %-44s %7s %7s %s" % ("scenario", "window s", "flows (Mb/s)", "ratio", "Jain", "note"))
    for n in names:
        rs = [r for r in res if r["name"] == n]
        labels = [fl["label"] for fl in rs[0]["flows"]]
        med = {}
        for i, lab in enumerate(labels):
            xs = [r["flows"][i]["window_mbps"] for r in rs if r["flows"][i]["window_mbps"] is not None]
            med[lab] = statistics.median(xs) if xs else None
        jains = [r["jain"] for r in rs if r.get("jain") is not None]
        ratios = [r["ratio_first_over_second"] for r in rs if r.get("ratio_first_over_second")]
        a = {"name": n, "runs": len(rs), "window_s": rs[0]["window_s"], "flows_mbps": med,
             "jain": statistics.median(jains) if jains else None,
             "ratio_first_over_second": statistics.median(ratios) if ratios else None}
        note = ""
        if n.startswith("background") and solo_med:
            tcp = [v for k, v in med.items() if k.startswith("cubic")]
            if tcp and tcp[0] is not None:
                a["cubic_share_of_solo"] = tcp[0] / solo_med
                note = "CUBIC keeps %.0f %% of its solo %.1f Mb/s (target >= 90 %%)" % (100 * a["cubic_share_of_solo"], solo_med)
        elif len(labels) == 2 and a["ratio_first_over_second"]:
            r = a["ratio_first_over_second"]
            note = "within 0.5x-2x" if 0.5 <= r <= 2 else "OUTSIDE 0.5x-2x"
        elif len(labels) > 2 and a["jain"] is not None:
            note = "Jain >= 0.95" if a["jain"] >= 0.95 else "Jain < 0.95"
        flows = " ".join("%s %s" % (k, f(v, "%.1f")) for k, v in med.items())
        print("%-16s %-14s %-44s %7s %7s %s" % (
            n, "%g-%g" % tuple(a["window_s"]), flows, f(a["ratio_first_over_second"], "%.2f"),
            f(a["jain"], "%.3f"), note))
        agg.append(a)
    json.dump({"meta": meta, "scenarios": agg, "runs": res}, open(out_path, "w"), indent=1)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "scenario":
        print(json.dumps(scenario(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 5 and sys.argv[1] == "summary":
        summary(*sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
