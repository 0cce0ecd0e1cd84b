#!/usr/bin/env python3
"""A plain TCP file copy, the yardstick for bench/files.sh's file-to-file row.

    sendfile_copy.py recv PORT OUTFILE     # listens on 127.0.0.1:PORT, one copy
    sendfile_copy.py send PORT INFILE      # connects and sends the file

The sender uses socket.sendfile() (the kernel's sendfile(2): no copy through
user space); the receiver reads with 4 MiB recv_into() calls into one buffer
and writes each piece to the file, then fsyncs it (as netblt does before it
renames a received file). No framing, no checksum: the file's bytes and then
end of stream. Each side prints one JSON line: bytes, its wall time from the
connection to the end, and its own CPU seconds (user, system) from
getrusage.
"""
import json
import os
import resource
import socket
import sys
import time

CHUNK = 4 << 20


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def report(n, t0, c0):
    c1 = cpu()
    print(json.dumps({
        "bytes": n,
        "wall_s": time.monotonic() - t0,
        "cpu_user_s": c1[0] - c0[0],
        "cpu_sys_s": c1[1] - c0[1],
    }), flush=True)


def recv(port, path):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    print("listening", file=sys.stderr, flush=True)
    conn, _ = ls.accept()
    t0, c0 = time.monotonic(), cpu()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    n = 0
    with open(path, "wb") as f:
        while True:
            k = conn.recv_into(buf)
            if k == 0:
                break
            f.write(view[:k])
            n += k
        f.flush()
        os.fsync(f.fileno())
    conn.close()
    report(n, t0, c0)


def send(port, path):
    s = socket.create_connection(("127.0.0.1", port))
    t0, c0 = time.monotonic(), cpu()
    with open(path, "rb") as f:
        n = s.sendfile(f)
    s.shutdown(socket.SHUT_WR)
    # Wait for the receiver to close: its data are all written then.
    while s.recv(65536):
        pass
    s.close()
    report(n, t0, c0)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("recv", "send"):
        sys.exit(__doc__)
    {"recv": recv, "send": send}[sys.argv[1]](int(sys.argv[2]), sys.argv[3])
