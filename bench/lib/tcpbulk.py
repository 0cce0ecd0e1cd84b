#!/usr/bin/env python3
"""Memory-to-memory kernel-TCP bulk transfer with a pinned receive window.

Used by bench/rfc1106.sh (and usable alone) where iperf3 cannot do the job:
RFC 1106 varies the TCP *window*, and on Linux >= 6.6 the window a receive
buffer yields is not computable in advance (net.ipv4.tcp_adv_win_scale is
obsolete; the kernel scales SO_RCVBUF by a ratio it measures from each
skb's len/truesize). So the receiver here:

  * sets SO_RCVBUF large (2 x window, which the kernel doubles), so the buffer
    never limits, and SO_RCVBUF being set also turns off receive-buffer
    auto-tuning (DRS) for the socket;
  * sets TCP_WINDOW_CLAMP = window on the listening socket (the SYN-ACK and the
    window scale are chosen under it) and re-asserts it on the connection
    every 50 ms: the kernel rewrites window_clamp from the buffer whenever its
    len/truesize ratio changes (seen on 6.18), and re-setting is a no-op
    otherwise;
  * reads as fast as it can and counts bytes per 100 ms.

The sender samples its own TCP_INFO every 250 ms: tcpi_snd_wnd is the window
the receiver advertised (scaled), so the JSON says what window was in force,
measured on the sender rather than assumed. It also reports retransmissions,
RTT, cwnd, time limited by the receive window, and the options negotiated
(SACK, timestamps, window scaling).

    tcpbulk.py recv --port 5301 --window 65536 --duration 60 [--bind ADDR]
    tcpbulk.py send HOST --port 5301 --cc cubic [--duration 75] [--mss N]

The receiver ends the measurement DURATION seconds after the first byte and
resets the connection; goodput is bytes read by the application in that
interval (and, for a steady figure, after the first --omit seconds). Each
side prints one JSON object on stdout.
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time

TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_WINDOW_CLAMP = getattr(socket, "TCP_WINDOW_CLAMP", 10)

# struct tcp_info (include/uapi/linux/tcp.h), fields we read, by byte offset.
INFO_U32 = {
    "rto_us": 8, "snd_mss": 16, "rcv_mss": 20, "unacked": 24, "lost": 32,
    "retrans": 36, "rcv_ssthresh": 64, "rtt_us": 68, "rttvar_us": 72,
    "snd_ssthresh": 76, "snd_cwnd": 80, "advmss": 84, "rcv_space": 96,
    "total_retrans": 100, "snd_wnd": 228, "rcv_wnd": 232,
}
INFO_U64 = {"bytes_acked": 120, "bytes_received": 128, "busy_time_us": 168,
            "rwnd_limited_us": 176, "sndbuf_limited_us": 184,
            "bytes_sent": 200, "bytes_retrans": 208}
OPT_TIMESTAMPS, OPT_SACK, OPT_WSCALE = 1, 2, 4


def tcp_info(sock):
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 256)
    out = {}
    if len(raw) >= 8:
        out["ca_state"] = raw[1]
        opts = raw[5]
        out["sack"] = bool(opts & OPT_SACK)
        out["timestamps"] = bool(opts & OPT_TIMESTAMPS)
        out["wscale"] = bool(opts & OPT_WSCALE)
        out["snd_wscale"] = raw[6] & 0x0F
        out["rcv_wscale"] = raw[6] >> 4
    for name, off in INFO_U32.items():
        if len(raw) >= off + 4:
            out[name] = struct.unpack_from("I", raw, off)[0]
    for name, off in INFO_U64.items():
        if len(raw) >= off + 8:
            out[name] = struct.unpack_from("Q", raw, off)[0]
    return out


def recv(args):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.window:
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * args.window)
        lsock.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, args.window)
    lsock.bind((args.bind, args.port))
    lsock.listen(1)
    lsock.settimeout(args.accept_timeout)
    conn, peer = lsock.accept()
    lsock.close()
    accepted = time.monotonic()
    stop = threading.Event()

    def clamp():
        while not stop.is_set():
            try:
                conn.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, args.window)
            except OSError:
                return
            stop.wait(0.05)

    if args.window:
        threading.Thread(target=clamp, daemon=True).start()
    buf = bytearray(1 << 16)
    total, first, deadline = 0, None, None
    series = []          # (seconds since first byte, cumulative bytes), every 100 ms
    next_mark = None
    conn.settimeout(0.1)
    ended = "duration"
    while True:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            break
        if first is None and now - accepted > args.duration + args.accept_timeout:
            ended = "no data"
            break
        try:
            n = conn.recv_into(buf)
        except socket.timeout:
            n = -1
        except OSError as e:
            ended = "error: %s" % e
            break
        now = time.monotonic()
        if n == 0:
            ended = "sender closed"
            break
        if n > 0:
            if first is None:
                first = now
                deadline = first + args.duration
                next_mark = first
            total += n
        while next_mark is not None and now >= next_mark:
            series.append((round(next_mark - first, 3), total))
            next_mark += 0.1
    end = min(time.monotonic(), deadline) if deadline else time.monotonic()
    info = tcp_info(conn)
    stop.set()
    # Abortive close: the sender learns at once that the run is over.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    elapsed = (end - first) if first else 0.0
    steady = None
    if first and elapsed > args.omit + 1:
        base = next((b for t, b in series if t >= args.omit), None)
        if base is not None:
            steady = (total - base) / (elapsed - args.omit)
    print(json.dumps({
        "role": "recv", "peer": peer[0], "window": args.window, "ended": ended,
        "bytes": total, "seconds": round(elapsed, 3),
        "goodput_Bps": round(total / elapsed, 1) if elapsed > 0 else 0.0,
        "steady_Bps": round(steady, 1) if steady is not None else None,
        "omit_s": args.omit,
        "series_1s": [b for t, b in series if abs(t - round(t)) < 1e-6],
        "tcp_info": info,
    }))


def send(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if args.cc:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    if args.mss:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, args.mss)
    if args.sndbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    deadline = time.monotonic() + args.connect_timeout
    while True:
        try:
            sock.connect((args.host, args.port))
            break
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            sock.close()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if args.cc:
                sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
            if args.mss:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, args.mss)
            if args.sndbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    cc = sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    samples = []
    stop = threading.Event()
    started = time.monotonic()

    def sample():
        while not stop.wait(0.25):
            try:
                i = tcp_info(sock)
            except OSError:
                return
            samples.append((round(time.monotonic() - started, 2), i.get("snd_wnd"),
                            i.get("snd_cwnd"), i.get("unacked")))

    threading.Thread(target=sample, daemon=True).start()
    chunk = bytes(1 << 16)
    ended = "duration"
    last_info = {}
    end_at = started + args.duration
    try:
        while time.monotonic() < end_at:
            sock.send(chunk)
            # Keep the last TCP_INFO from before the receiver's reset.
            if len(samples) and (not last_info or samples[-1][0] > last_info.get("_t", -1)):
                last_info = tcp_info(sock)
                last_info["_t"] = samples[-1][0]
    except OSError as e:
        ended = "peer ended (%s)" % e.__class__.__name__
    stop.set()
    last_info.pop("_t", None)
    sock.close()
    # What window was in force: snd_wnd after the first 2 s (handshake and
    # initial window growth excluded).
    wnds = sorted(w for t, w, _, _ in samples if t >= 2 and w)
    def pct(p):
        return wnds[min(len(wnds) - 1, int(p * len(wnds)))] if wnds else None
    print(json.dumps({
        "role": "send", "cc": cc, "ended": ended,
        "snd_wnd_median": pct(0.5), "snd_wnd_max": wnds[-1] if wnds else None,
        "snd_wnd_min": wnds[0] if wnds else None,
        "tcp_info": last_info,
        "samples": samples[::4],
    }))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", default="0.0.0.0")
    r.add_argument("--port", type=int, default=5301)
    r.add_argument("--window", type=int, default=0, help="bytes; 0 = kernel default")
    r.add_argument("--duration", type=float, default=60.0)
    r.add_argument("--omit", type=float, default=10.0)
    r.add_argument("--accept-timeout", type=float, default=30.0)
    s = sub.add_parser("send")
    s.add_argument("host")
    s.add_argument("--port", type=int, default=5301)
    s.add_argument("--cc", default="cubic")
    s.add_argument("--mss", type=int, default=0)
    s.add_argument("--sndbuf", type=int, default=0)
    s.add_argument("--duration", type=float, default=600.0, help="upper bound; the receiver ends the run")
    s.add_argument("--connect-timeout", type=float, default=10.0)
    args = p.parse_args()
    if args.cmd == "recv":
        recv(args)
    else:
        send(args)


if __name__ == "__main__":
    sys.exit(main())
