#!/usr/bin/env python3
"""Crafted-packet test of tools/wireshark/netblt.lua.

A live loopback transfer produces only healthy packets of some types. This script writes a
small pcap (raw IPv4, LINKTYPE_RAW) holding the cases a normal run does not produce: REFUSED,
ABORT, QUIT, QUITACK, KEEPALIVE, RESEND, FEEDBACK and the F flag, odd-sized DATA with C = 1,
a GSO batch, the heuristic on another UDP port, IP protocol 30, and broken packets (bad
checksums, truncations, wrong lengths, unknown types, a string without NUL). It runs tshark
with the dissector over it and checks each frame against what it should show.

Usage: crafted_test.py [-v] LUA_SCRIPT [--keep DIR]   (standard library only; needs tshark)
  -v          list every frame, not only the failures
  --keep DIR  write the pcap into DIR (default: a new temporary directory)

The builder follows crates/netblt-wire (docs/decisions.md Z1-Z8 and FEEDBACK-SPEC). It is
anchored to that crate: before anything else it rebuilds the crate's own byte-exact test
vectors and checks that the checksums agree.
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

VERSION = 1
T = dict(OPEN=0, RESPONSE=1, KEEPALIVE=2, QUIT=3, QUITACK=4, ABORT=5, DATA=6, LDATA=7,
         NULLACK=8, CONTROL=9, REFUSED=10, DONE=11, FEEDBACK=12)
F_WRITE, F_C, F_F, F_O, F_P = 0x0001, 0x0002, 0x0004, 0x0008, 0x0010


def checksum(data: bytes) -> int:
    """The Internet checksum as netblt-wire computes it: NOT of the ones-complement sum of
    big-endian 16-bit words, odd last byte padded with zero, no pseudo-header."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def pad4(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def string_area(s: bytes) -> bytes:
    """NUL-terminated, NUL-padded to a multiple of 4 (netblt-wire string.rs)."""
    return pad4(s + b"\0")


def packet(ty, lport, fport, body, length=None, fix_checksum=True, covered=None):
    """Header + body. Length defaults to 12 + len(body); the checksum covers bytes 2..covered
    (default: the whole Length), with the field as zero."""
    if length is None:
        length = 12 + len(body)
    hdr = struct.pack("!HBBHHHH", 0, VERSION, ty, length, lport, fport, 0)
    pkt = bytearray(hdr + body)
    if fix_checksum:
        end = length if covered is None else covered
        struct.pack_into("!H", pkt, 0, checksum(bytes(pkt[2:end])))
    return bytes(pkt)


def with_version(pkt, version):
    """The packet with another Version byte and a checksum that matches it."""
    p = bytearray(pkt)
    p[2] = version
    length = struct.unpack("!H", p[4:6])[0]
    struct.pack_into("!H", p, 0, checksum(bytes(p[2:length])))
    return bytes(p)


def open_pkt(ty, lport, fport, uid, bufsize, xfer, psz_wire, bs, br, death, flags, maxout,
             client):
    body = struct.pack("!IIIHHHHHH", uid, bufsize, xfer, psz_wire, bs, br, death, flags,
                       maxout) + string_area(client)
    return packet(ty, lport, fport, body)


def data_pkt(lport, fport, buf, hack, pkt, data, last_buffer=False, ldata=False,
             c_on=False, data_cks=None):
    if data_cks is None:
        data_cks = checksum(data) if c_on else 0
    flags = 1 if last_buffer else 0
    head = struct.pack("!IHHHH", buf, hack, pkt, data_cks, flags)
    length = 24 + len(data)
    p = packet(T["LDATA"] if ldata else T["DATA"], lport, fport, head + data, length=length,
               covered=24)
    return pad4(p)


def null_ack(lport, fport, hack, bs, br):
    return packet(T["NULLACK"], lport, fport, struct.pack("!HHHH", hack, bs, br, 0))


def go(seq, buf):
    return struct.pack("!BBHI", 0, 0, seq, buf)


def ok(seq, buf, bs, br, ctimer):
    return struct.pack("!BBHIHHHH", 1, 0, seq, buf, bs, br, ctimer, 0)


def resend(seq, buf, pkts):
    return pad4(struct.pack("!BBHIHH", 2, 0, seq, buf, len(pkts), 0) +
                b"".join(struct.pack("!H", p) for p in pkts))


def control(lport, fport, msgs):
    return packet(T["CONTROL"], lport, fport, b"".join(msgs))


def feedback(lport, fport, echo_buf, echo_pkt, hold_us, arrived, nbytes, lost, seq):
    body = struct.pack("!IHHIIIII", echo_buf, echo_pkt, 0, hold_us, arrived, nbytes, lost,
                       seq)
    return packet(T["FEEDBACK"], lport, fport, body)


def reason_pkt(ty, lport, fport, reason):
    return packet(ty, lport, fport, string_area(reason))


def anchor_to_netblt_wire():
    """The checksums of netblt-wire's own test vectors (open.rs, data.rs, control.rs,
    string.rs): if the builder disagrees with the crate, nothing below means anything."""
    want = {
        "OPEN": (open_pkt(T["OPEN"], 1000, 2000, 0x12345678, 16384, 1_000_000, 1438, 5, 100,
                          60, F_C | F_WRITE, 2, b"ab"), 0xA079),
        "DATA": (data_pkt(1000, 2000, 3, 2, 7, b"hello", last_buffer=True, c_on=True),
                 0x36EA),
        "NULL-ACK": (null_ack(1000, 2000, 3, 5, 100), 0xF2BF),
        "CONTROL": (control(2000, 1000, [go(1, 1), ok(2, 1, 5, 100, 500),
                                         resend(3, 2, [1, 4, 7])]), 0xED90),
        "QUIT": (reason_pkt(T["QUIT"], 1000, 2000, b"bye"), 0x2BBB),
        "ABORT": (reason_pkt(T["ABORT"], 1000, 2000, b"timeout"), 0x2DEA),
    }
    for name, (pkt, cks) in want.items():
        got = struct.unpack("!H", pkt[:2])[0]
        if got != cks:
            sys.exit(f"crafted_test: builder disagrees with netblt-wire on {name}: "
                     f"0x{got:04x} != 0x{cks:04x}")
    d = want["DATA"][0]
    if struct.unpack("!H", d[20:22])[0] != 0xBC2D or len(d) != 32:
        sys.exit("crafted_test: builder disagrees with netblt-wire on DATA's data checksum")


# --- IPv4 / pcap -----------------------------------------------------------------------------

SRC, DST = bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2])


def ipv4(proto, payload, ident, reverse=False):
    total = 20 + len(payload)
    src, dst = (DST, SRC) if reverse else (SRC, DST)
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, 64, proto, 0,
                                src, dst))
    struct.pack_into("!H", hdr, 10, checksum(bytes(hdr)))
    return bytes(hdr) + payload


def udp(sport, dport, payload):
    # Checksum 0: "no checksum" is legal over IPv4, and Wireshark does not flag it.
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def write_pcap(path, frames):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))  # LINKTYPE_RAW
        for i, (frame, caplen) in enumerate(frames):
            cap = frame[:caplen] if caplen is not None else frame
            out.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(cap), len(frame)))
            out.write(cap)


# --- The cases ------------------------------------------------------------------------------

A, P = 40001, 9998   # active end's port, passive end's (registered) port


def cases():
    """(description, frame bytes, captured length or None, expectation). An expectation:
    types: NETBLT types per packet in the frame, or None if the frame must not be NETBLT;
    malformed / bad / bad_data / warn: whether such expert info must appear; and optional
    msgs (control message types), status (header checksum statuses: 0 bad, 1 good,
    2 unverified) and strings (substrings of the reason/client fields)."""
    c = []
    n = [0]

    def add(desc, proto, sport, dport, payload, caplen=None, **expect):
        n[0] += 1
        if proto == 17:
            # The passive end's packets travel the other way.
            frame = ipv4(17, udp(sport, dport, payload), n[0], reverse=(sport == P))
        else:
            frame = ipv4(proto, payload, n[0])
        e = dict(types=None, malformed=False, bad=False, bad_data=False, warn=False)
        e.update(expect)
        c.append((desc, frame, caplen, e))

    # A connection with F and C negotiated, so FEEDBACK and data checksums are expected
    # (and O offered: a defined flag, not a reserved one).
    add("OPEN with C, F and O", 17, A, P,
        open_pkt(T["OPEN"], A, P, 0xCAFEF00D, 65536, 3000, 1001 + 24, 4, 10, 30,
                 F_WRITE | F_C | F_F | F_O, 2, b'{"v":1,"op":"sink","size":3000}'),
        types=[0], strings=['{"v":1,"op":"sink","size":3000}'])
    # A path probe's padded copy (decision R58): P set, the client string area padded with
    # NULs to the length of a 1424-byte DATA packet, on a conversation of its own.
    probe_body = struct.pack("!IIIHHHHHH", 7, 1 << 20, 0, 1400 + 24, 892, 1, 10,
                             F_WRITE | F_F | F_O | F_P, 128) + b"x\0"
    probe_body += bytes(1448 - 12 - len(probe_body))
    add("OPEN with P, padded to 1448 bytes", 17, A + 1, P,
        packet(T["OPEN"], A + 1, P, probe_body), types=[0], strings=["x"])
    add("RESPONSE with C and F", 17, P, A,
        open_pkt(T["RESPONSE"], P, A, 0xCAFEF00D, 65536, 3000, 1001 + 24, 4, 10, 30,
                 F_WRITE | F_C | F_F, 2, b'{"v":1}'), types=[1])
    add("CONTROL with GO, OK and an odd-sized RESEND", 17, P, A,
        control(P, A, [go(1, 1), ok(2, 1, 4, 10, 250), resend(3, 2, [0, 5, 7])]),
        types=[9], msgs=[0, 1, 2])
    add("DATA, 1001 bytes (padded), C = 1, good data checksum", 17, A, P,
        data_pkt(A, P, 1, 3, 0, bytes(range(256)) * 3 + bytes(233), c_on=True), types=[6],
        dstatus=[1])
    add("LDATA, last buffer, 7 bytes, C = 1", 17, A, P,
        data_pkt(A, P, 2, 3, 0, b"netblt!", last_buffer=True, ldata=True, c_on=True),
        types=[7])
    add("DATA with a bad data checksum", 17, A, P,
        data_pkt(A, P, 1, 3, 1, b"corrupted data", c_on=True, data_cks=0x1234),
        types=[6], bad_data=True, status=[1], dstatus=[0])
    add("GSO batch: two DATA and an LDATA in one UDP datagram", 17, A, P,
        data_pkt(A, P, 1, 3, 2, b"x" * 40, c_on=True) +
        data_pkt(A, P, 1, 3, 3, b"y" * 40, c_on=True) +
        data_pkt(A, P, 1, 3, 4, b"z" * 13, ldata=True, c_on=True), types=[6, 6, 7])
    add("FEEDBACK (type 12) on an F connection", 17, P, A,
        feedback(P, A, 1, 4, 120, 5, 1234, 0, 1), types=[12])
    add("NULL-ACK", 17, A, P, null_ack(A, P, 3, 4, 10), types=[8])
    add("KEEPALIVE", 17, A, P, packet(T["KEEPALIVE"], A, P, b""), types=[2])
    add("QUIT with a reason", 17, A, P, reason_pkt(T["QUIT"], A, P, b"client quit"),
        types=[3], strings=["client quit"])
    add("QUITACK", 17, P, A, packet(T["QUITACK"], P, A, b""), types=[4])
    add("DONE", 17, P, A, packet(T["DONE"], P, A, b""), types=[11])
    add("REFUSED with a reason", 17, P, 40003,
        reason_pkt(T["REFUSED"], P, 40003, b"no such file"), types=[10],
        strings=["no such file"])
    add("ABORT with a reason", 17, P, A, reason_pkt(T["ABORT"], P, A, b"timeout"),
        types=[5], strings=["timeout"])
    # Broken packets.
    bad = bytearray(null_ack(A, P, 3, 4, 10))
    bad[1] ^= 0x01
    add("NULL-ACK with a bad header checksum", 17, A, P, bytes(bad), types=[8], bad=True,
        status=[0])
    bad = bytearray(data_pkt(A, P, 1, 3, 9, b"abcd", c_on=True))
    bad[13] ^= 0x40   # buffer number changed after the checksum
    add("DATA with a bad header checksum", 17, A, P, bytes(bad), types=[6], bad=True)
    add("DATA truncated: Length 1424, datagram 100 bytes", 17, A, P,
        data_pkt(A, P, 1, 3, 10, bytes(1400))[:100], types=[6], malformed=True, status=[1])
    add("Truncated header: 8 bytes", 17, A, P, packet(T["KEEPALIVE"], A, P, b"")[:8],
        types=[], malformed=True)
    add("Trailing garbage after a NULL-ACK", 17, A, P,
        null_ack(A, P, 3, 4, 10) + b"\xde\xad\xbe\xef", types=[8], malformed=True)
    add("Version 2 on the NETBLT port", 17, A, P, with_version(packet(T["KEEPALIVE"], A, P,
                                                                      b""), 2),
        types=[2], malformed=True)
    add("Unknown packet type 13", 17, A, P,
        packet(13, A, P, b""), types=[13], malformed=True)
    add("KEEPALIVE with Length 16", 17, A, P,
        packet(T["KEEPALIVE"], A, P, b"\0\0\0\0"), types=[2], malformed=True)
    add("CONTROL with unknown message type 7", 17, P, A,
        control(P, A, [go(4, 3), struct.pack("!BBHI", 7, 0, 5, 3)]), types=[9], msgs=[0, 7],
        malformed=True)
    add("CONTROL with a RESEND running past Length", 17, P, A,
        control(P, A, [struct.pack("!BBHIHH", 2, 0, 6, 3, 50, 0) + b"\0\0\0\0"]),
        types=[9], msgs=[2], malformed=True)
    add("ABORT whose reason has no NUL", 17, P, A,
        packet(T["ABORT"], P, A, b"oops"), types=[5], malformed=True)
    add("FEEDBACK with Length 36", 17, P, A,
        packet(T["FEEDBACK"], P, A, bytes(24)), types=[12], malformed=True)
    add("DATA cut by the capture's snaplen (not malformed)", 17, A, P,
        data_pkt(A, P, 1, 3, 11, bytes(500), c_on=True), caplen=20 + 8 + 60, types=[6],
        status=[1], dstatus=[2])
    # Carriers.
    add("Heuristic: KEEPALIVE between unregistered UDP ports", 17, 40100, 40101,
        packet(T["KEEPALIVE"], 40100, 40101, b""), types=[2])
    add("Heuristic: GSO batch of DATA between unregistered ports (no OPEN: C unknown)", 17,
        40100, 40101,
        data_pkt(40100, 40101, 1, 0, 0, b"a" * 8) + data_pkt(40100, 40101, 1, 0, 1, b"b" * 8,
                                                             c_on=True),
        types=[6, 6], dstatus=[2, 1])
    add("Heuristic rejects junk on unregistered ports", 17, 40100, 40101,
        b"GET / HTTP/1.0\r\n\r\n", types=None)
    add("IP protocol 30: DONE", 30, 0, 0, packet(T["DONE"], 7, 9, b""), types=[11])
    add("IP protocol 30: CONTROL with a RESEND", 30, 0, 0,
        control(9, 7, [resend(8, 4, list(range(20)))]), types=[9], msgs=[2])
    quoted = ipv4(17, udp(A, P, data_pkt(A, P, 1, 3, 0, bytes(1400))), 99)[:20 + 8 + 40]
    icmp = bytearray(struct.pack("!BBHI", 3, 3, 0, 0) + quoted)  # port unreachable
    struct.pack_into("!H", icmp, 2, checksum(bytes(icmp)))
    add("ICMP error quoting the first 40 bytes of a DATA (not malformed)", 1, 0, 0,
        bytes(icmp), types=[6], status=[1])
    add("FEEDBACK with no F in its RESPONSE (warning)", 17, 50001, 50002,
        open_pkt(T["RESPONSE"], 50001, 50002, 1, 65536, 0, 1424, 4, 10, 30, F_WRITE, 2,
                 b"") , types=[1])
    add("... the FEEDBACK itself", 17, 50001, 50002,
        feedback(50001, 50002, 1, 0, 5, 1, 1400, 0, 1), types=[12], warn=True)
    return c


FIELDS = ["frame.number", "netblt.type", "netblt.malformed", "netblt.checksum.bad",
          "netblt.data_checksum.bad", "netblt.protocol", "_ws.malformed", "_ws.lua.error",
          "netblt.msg.type", "netblt.reason", "netblt.client", "netblt.checksum.status",
          "netblt.data_checksum.status"]


def main():
    args = sys.argv[1:]
    if not [a for a in args if a != "-v"] or args[-1].startswith("-"):
        sys.exit(__doc__)
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    lua = os.path.abspath(args[0])
    keep = args[2] if len(args) >= 3 and args[1] == "--keep" else None
    anchor_to_netblt_wire()
    tests = cases()
    work = keep or tempfile.mkdtemp(prefix="netblt-crafted-")
    os.makedirs(work, exist_ok=True)
    pcap = os.path.join(work, "crafted.pcap")
    write_pcap(pcap, [(frame, caplen) for _, frame, caplen, _ in tests])
    cmd = ["tshark", "-n", "-r", pcap, "-X", "lua_script:" + lua, "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for fld in FIELDS:
        cmd += ["-e", fld]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"crafted_test: tshark failed ({res.returncode}): {res.stderr.strip()}")
    rows = [line.split("\t") for line in res.stdout.splitlines() if line.strip()]
    if len(rows) != len(tests):
        sys.exit(f"crafted_test: tshark printed {len(rows)} frames, wrote {len(tests)}")
    failures = 0
    for (desc, _, _, e), row in zip(tests, rows):
        row += [""] * (len(FIELDS) - len(row))
        v = dict(zip(FIELDS, row))
        types = [int(x) for x in v["netblt.type"].split(",") if x != ""]
        netblt = v["netblt.type"] != "" or v["netblt.malformed"] != ""
        got = dict(
            types=types if netblt else None,
            malformed=v["netblt.malformed"] != "" or v["_ws.malformed"] != "",
            bad=v["netblt.checksum.bad"] != "",
            bad_data=v["netblt.data_checksum.bad"] != "",
            warn=v["netblt.protocol"] != "",
        )
        problems = []
        for k in ("types", "malformed", "bad", "bad_data", "warn"):
            if got[k] != e[k]:
                problems.append(f"{k}: want {e[k]}, got {got[k]}")
        if v["_ws.lua.error"]:
            problems.append("Lua error: " + v["_ws.lua.error"])
        if "msgs" in e:
            msgs = [int(x) for x in v["netblt.msg.type"].split(",") if x != ""]
            if msgs != e["msgs"]:
                problems.append(f"control messages: want {e['msgs']}, got {msgs}")
        for key, fld in (("status", "netblt.checksum.status"),
                         ("dstatus", "netblt.data_checksum.status")):
            if key in e:
                st = [int(x) for x in v[fld].split(",") if x != ""]
                if st != e[key]:
                    problems.append(f"{fld}: want {e[key]}, got {st}")
        for s in e.get("strings", []):
            if s not in v["netblt.reason"] and s not in v["netblt.client"]:
                problems.append(f"string {s!r} not shown")
        if problems or verbose:
            status = "ok  " if not problems else "FAIL"
            print(f"  {status} frame {v['frame.number']:>2}: {desc}" +
                  ("" if not problems else " -- " + "; ".join(problems)), flush=True)
        failures += bool(problems)
    if failures:
        sys.exit(f"crafted_test: {failures} of {len(tests)} crafted frames decoded wrongly "
                 f"(pcap kept in {work})")
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"crafted: {len(tests)} frames decoded as expected")


if __name__ == "__main__":
    main()
