"""bench/sim_ratestep.sh's scenarios and figures: bench/ratestep.sh's rate
step (100 -> 20 -> 100 Mb/s, a delivery trace) in the simulator.

    sim_ratestep.py scenario DIR RTT JITTER SEED   a dumbbell scenario on stdout
    sim_ratestep.py row OUT.json LOG RTT JITTER SEED  one run's figures (JSON line)
    sim_ratestep.py summary ROWS META OUT_JSON     medians per build and cell

The bottleneck is the emulator's own trace (`ratestep.py trace`, read from
DIR/step.trace), a one-BDP drop-tail queue and `jitter_ms` of jitter after
the queue (netblt-link's, in FIFO order): with 1 ms of it the simulator
shows what the emulator shows at 300 ms (decision R45). Figures: "plateau" is
the median 1 s delivered rate of the first phase's second half, "busy_s"
the time after the step up from which a whole second carries at least 90 %
of it, "delivered_s" the time after the step up from which every 0.2 s
window delivers at least 90 % of it for a second (as `ratestep.sh` now
judges the step up from the emulator's 0.1 s bins, R67), "third" the mean delivered rate of the 10 s after the step up; and,
as `ratestep.sh` judges the controller, "up_s" the time after the step up
from which the controller's pacing rate (its round log,
`RUST_LOG=netblt_proto::rate=debug`) stays at or above 90 % of the plateau
for a second. For the step down, as `ratestep.sh` judges it: "down_s", the
time after the step from which the pacing rate stays at or under 110 % of
the low phase's plateau (the median 1 s delivered rate of its second half)
for a second, and "drained_s", the time from which the bottleneck's queue
stays under max(10 ms, 0.1 x RTT) at that rate for a second.
"""

import re

import json
import statistics
import sys

PHASE = 10.0


def scenario(d, rtt, jitter, seed):
    queue = max(150_000, int(100e6 / 8 * rtt / 1000))
    return {
        "name": "rate step (emulator trace), %g ms, jitter %g ms" % (rtt, jitter),
        "seed": seed,
        "duration_s": 3 * PHASE,
        "bottleneck": {
            "trace_file": d + "/step.trace",
            "delay_ms": rtt / 4,
            "jitter_ms": jitter,
            "queue_bytes": queue,
        },
        "flows": [
            {
                "name": "netblt",
                "kind": {"netblt": {"policy": "fair", "max_buffers": 128}},
                "rtt_ms": rtt,
            }
        ],
    }


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


ROUND = re.compile(r"now\S*?=\S*?([0-9.]+)s .*?pacing_mbps\S*?=\S*?([0-9.]+)")


def pacing(log):
    """(sim time, pacing Mb/s) of each round in a debug log."""
    out = []
    try:
        for line in open(log, errors="replace"):
            if "rate control round" in line:
                m = ROUND.search(re.sub(r"\x1b\[[0-9;]*m", "", line))
                if m:
                    out.append((float(m.group(1)), float(m.group(2))))
    except OSError:
        pass
    return out


def up_from(series, start, floor):
    """Seconds after `start` from which the pacing stays >= floor for 1 s
    (a round's rate holds until the next round)."""
    for i, (t0, _) in enumerate(series):
        if t0 < start:
            continue
        held = [r for t, r in series[i:] if t <= t0 + 1.0]
        later = [t for t, _ in series[i:] if t > t0 + 1.0]
        if later and all(r >= floor for r in held):
            return round(t0 - start, 2)
    return None


def down_from(series, start, ceiling):
    """Seconds after `start` from which the pacing stays <= ceiling for 1 s."""
    return up_from([(t, -r) for t, r in series], start, -ceiling)


def drained_from(queue, dt, start, end, bound):
    """Seconds after `start` from which the queue (bytes, one sample per
    `dt`) stays <= bound for 1 s, before `end`."""
    per_s = int(round(1 / dt))
    for i in range(int(start / dt), int(end / dt) - per_s + 1):
        if all(q <= bound for q in queue[i:i + per_s + 1]):
            return round(i * dt - start, 2)
    return None


def row(path, log, rtt, jitter, seed):
    out = {"rtt_ms": rtt, "jitter_ms": jitter, "seed": seed}
    try:
        d = json.load(open(path))
        f = d["flows"][0]
        s, dt = f["goodput_series_bps"], d["sample_interval_s"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        out["error"] = str(e)
        return out
    per_s = int(round(1 / dt))

    def window(t0, t1):
        return s[int(t0 / dt):int(t1 / dt)]

    ones = [mean(s[i:i + per_s]) for i in range(int(PHASE / 2 / dt), int(PHASE / dt) - per_s + 1)]
    plateau = statistics.median(ones) if ones else 0.0
    lows = [mean(s[i:i + per_s]) for i in range(int(1.5 * PHASE / dt), int(2 * PHASE / dt) - per_s + 1)]
    low = statistics.median(lows) if lows else 0.0
    queue = d.get("bottleneck", {}).get("queue_series_bytes") or []
    bound = max(0.010, 0.1 * rtt / 1000) * low / 8
    rounds = pacing(log)
    busy = None
    for i in range(int(2 * PHASE / dt), len(s) - per_s + 1):
        if mean(s[i:i + per_s]) >= 0.9 * plateau:
            busy = round(i * dt - 2 * PHASE, 2)
            break
    # As bench/ratestep.sh judges the step up (R67): every 0.2 s window of
    # delivery at 90 % of the plateau or more for a second, timed at the
    # first window's end.
    k = max(1, int(round(0.2 / dt)))
    windows = [((i + 1) * dt, mean(s[i + 1 - k:i + 1])) for i in range(k - 1, len(s))]
    out.update({
        "delivered_s": up_from(windows, 2 * PHASE, 0.9 * plateau),
        "plateau_mbps": round(plateau / 1e6, 2),
        "low_mbps": round(mean(window(PHASE, 2 * PHASE)) / 1e6, 2),
        "third_mbps": round(mean(window(2 * PHASE, 3 * PHASE)) / 1e6, 2),
        "busy_s": busy,
        "queue_p95_ms": (f.get("queue_delay_ms") or {}).get("p95"),
        "up_s": up_from(rounds, 2 * PHASE, 0.9 * plateau / 1e6),
        "down_s": down_from(rounds, PHASE, 1.1 * low / 1e6),
        "drained_s": drained_from(queue, dt, PHASE, 2 * PHASE, bound),
    })
    return out


def summary(rows_path, meta, out_path):
    rows = [json.loads(l) for l in open(rows_path) if l.strip()]
    cells = {}
    for r in rows:
        cells.setdefault((r["build"], r["rtt_ms"], r["jitter_ms"]), []).append(r)

    def med(rs, k):
        xs = [r[k] for r in rs if r.get(k) is not None]
        return statistics.median(xs) if xs else None

    def fmt(v):
        return "-" if v is None else "%.2f" % v

    table = []
    print("| build | RTT ms | jitter ms | runs | third phase Mb/s (median) | controller at 90 % after (s) "
          "| path 90 % busy after (s) | path delivers 90 % after (s, 0.2 s windows) "
          "| down: controller within 10 % (s) | down: queue drained (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (b, rtt, j), rs in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        busy = ", ".join(fmt(r.get("busy_s")) for r in rs)
        delivered = ", ".join(fmt(r.get("delivered_s")) for r in rs)
        up = ", ".join(fmt(r.get("up_s")) for r in rs)
        down = ", ".join(fmt(r.get("down_s")) for r in rs)
        drained = ", ".join(fmt(r.get("drained_s")) for r in rs)
        print("| %s | %g | %g | %d | %s | %s | %s | %s | %s | %s |" % (
            b, rtt, j, len(rs), fmt(med(rs, "third_mbps")), up, busy, delivered, down, drained))
        table.append({"build": b, "rtt_ms": rtt, "jitter_ms": j, "runs": len(rs),
                      "third_mbps_median": med(rs, "third_mbps"), "up_s": [r.get("up_s") for r in rs],
                      "busy_s": [r.get("busy_s") for r in rs],
                      "delivered_s": [r.get("delivered_s") for r in rs], "down_s": [r.get("down_s") for r in rs],
                      "drained_s": [r.get("drained_s") for r in rs]})
    json.dump({"meta": json.loads(meta), "cells": table, "rows": rows}, open(out_path, "w"), indent=1)


def main(argv):
    if len(argv) >= 6 and argv[1] == "scenario":
        json.dump(scenario(argv[2], float(argv[3]), float(argv[4]), int(argv[5])), sys.stdout)
    elif len(argv) >= 7 and argv[1] == "row":
        print(json.dumps(row(argv[2], argv[3], float(argv[4]), float(argv[5]), int(argv[6]))))
    elif len(argv) >= 5 and argv[1] == "summary":
        summary(argv[2], argv[3], argv[4])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
