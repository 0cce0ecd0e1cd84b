#!/usr/bin/env python3
"""What an emulated path is, from `netblt profiles NAME --json` plus the
`netblt emu` knobs given on top (the same override rules as
crates/netblt-emu/src/knobs.rs: a knob applies to both directions), and the
NETBLT pacing that suits it.

    emupath.py PROFILE_JSON_FILE [emu knobs...]   -> one JSON object on stdout

Fields: rate_bps (forward, IP bytes), rtt_s (2 x delay, both directions'
delays), mtu, queue_bytes, bdp_bytes, loss (the probability that a full-size
IP packet of the forward link is lost: Bernoulli or Gilbert-Elliott stationary
loss, then bit errors at `ber` over 8 x MTU bits, as netblt-link applies
them), and netblt: packet_size (MTU - 20 IP - 8 UDP - 24 NETBLT header) and
burst_size / burst_interval_ms: a pacing at TARGET x the link rate in IP
bytes at most (TARGET = env NETBLT_RATE_FRACTION, default 0.98).
"""

import json
import math
import os
import sys

IP, UDP, NETBLT_DATA_HDR = 20, 8, 24


def si(text):
    t = text.strip()
    mult = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
    if t and t[-1].lower() in mult:
        return float(t[:-1]) * mult[t[-1].lower()]
    return float(t)


def prob(text):
    t = text.strip()
    return float(t[:-1]) / 100 if t.endswith("%") else float(t)


def dur_s(d):
    if d is None:
        return 0.0
    if isinstance(d, dict):
        return d.get("secs", 0) + d.get("nanos", 0) / 1e9
    return float(d)


def delay_s(link):
    """A link's one-way delay in seconds: `delay` (seconds, set from the
    knobs below) if given, else the profile's `delay_ms` (F20; older
    builds wrote `delay` as {secs, nanos})."""
    if "delay" in link:
        return dur_s(link["delay"])
    return float(link.get("delay_ms") or 0.0) / 1e3


def stationary_loss(loss):
    if loss in (None, "None"):
        return 0.0
    if isinstance(loss, dict):
        if "Bernoulli" in loss:
            return float(loss["Bernoulli"]["p"])
        if "GilbertElliott" in loss:
            g = loss["GilbertElliott"]
            p, r = g["p_good_to_bad"], g["p_bad_to_good"]
            bad = p / (p + r) if p + r > 0 else 0.0
            return (1 - bad) * g["loss_good"] + bad * g["loss_bad"]
    return 0.0


def main():
    profile = json.load(open(sys.argv[1]))
    fwd, rev = dict(profile["forward"]), dict(profile["reverse"])
    knobs = sys.argv[2:]
    mtu = max(x for x in (fwd.get("mtu"), rev.get("mtu"), 0) if x) or 1500
    i = 0
    while i < len(knobs):
        k = knobs[i]
        v = knobs[i + 1] if i + 1 < len(knobs) else None
        if "=" in k:
            k, v = k.split("=", 1)
            i -= 1
        if k == "--rate":
            fwd["rate_bps"] = rev["rate_bps"] = si(v)
        elif k == "--delay":
            fwd["delay"] = rev["delay"] = float(v) / 1e3
        elif k == "--delay-fwd":
            fwd["delay"] = float(v) / 1e3
        elif k == "--delay-rev":
            rev["delay"] = float(v) / 1e3
        elif k == "--loss":
            fwd["loss"] = rev["loss"] = {"Bernoulli": {"p": prob(v)}}
        elif k == "--gilbert":
            p, r, lg, lb = (prob(x) for x in v.split(","))
            fwd["loss"] = rev["loss"] = {"GilbertElliott": {
                "p_good_to_bad": p, "p_bad_to_good": r, "loss_good": lg, "loss_bad": lb}}
        elif k == "--ber":
            fwd["ber"] = rev["ber"] = prob(v)
        elif k == "--queue":
            fwd["queue_limit_bytes"] = rev["queue_limit_bytes"] = int(si(v))
        elif k == "--mtu":
            mtu = int(v)
        elif k in ("--trace", "--frames"):
            fwd["rate_bps"] = None  # not a constant rate; see below
        i += 2
    rate = fwd.get("rate_bps")
    rtt = delay_s(fwd) + delay_s(rev)
    per = -math.expm1(8 * mtu * math.log1p(-fwd.get("ber", 0.0))) if fwd.get("ber", 0.0) > 0 else 0.0
    p_loss = stationary_loss(fwd.get("loss"))
    loss = 1 - (1 - p_loss) * (1 - per)
    out = {"profile": profile["name"], "knobs": knobs, "rate_bps": rate, "rtt_s": rtt,
           "mtu": mtu, "queue_bytes": fwd.get("queue_limit_bytes"),
           "bdp_bytes": int(rate / 8 * rtt) if rate else None,
           "loss": loss, "loss_random": p_loss, "loss_ber_full_packet": per,
           "ber": fwd.get("ber", 0.0)}
    # The tool's largest IPv4 datagram is 1472 bytes (crates/netblt
    # app/params.rs, max_datagram): larger MTUs still get 1448-byte segments.
    psz = min(mtu, 1500) - IP - UDP - NETBLT_DATA_HDR
    wire = psz + IP + UDP + NETBLT_DATA_HDR
    if rate:
        target_pps = float(os.environ.get("NETBLT_RATE_FRACTION", "0.98")) * rate / (8 * wire)
        # RFC 998's burst size / burst interval in whole ms, chosen here and
        # not with the tool's --rate: that rounds to whole packets per 1 ms
        # (1.63 packets/ms became 2, 23 % above a 20 Mb/s link). The fastest
        # pair not above the target, with bursts of at most NETBLT_MAX_BURST
        # packets (default 16, or more if one per ms would not reach the
        # target) and intervals of at most 100 ms, so a burst fits the queue.
        max_burst = int(os.environ.get("NETBLT_MAX_BURST", "0")) or max(16, math.ceil(target_pps / 1000))
        max_burst = min(max_burst, 65535)
        best = None
        for iv in range(1, 101):
            b = min(max_burst, math.floor(target_pps * iv / 1000 + 1e-9))
            if b < 1:
                continue
            pps = b * 1000 / iv
            if best is None or pps > best[2] + 1e-9:
                best = (b, iv, pps)
        b, iv, pps = best or (1, 100, 10.0)
        out["netblt"] = {"packet_size": psz, "burst_size": b, "burst_interval_ms": iv,
                         "ip_rate_bps": round(pps * wire * 8), "data_rate_bps": round(pps * psz * 8),
                         "fraction_of_link": round(pps * wire * 8 / rate, 4)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
