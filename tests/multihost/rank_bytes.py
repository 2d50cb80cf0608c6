#!/usr/bin/python3
"""rank_bytes.py - did every rank's bytes arrive exactly?

    rank_bytes.py --ranks N --per-host P --expected DIR MODE STDOUT [LOGDIR]

DIR/rank-R holds what rank R wrote (its stdout).  MODE "text": STDOUT is
the leader's standard output in text mode; only the first tag of each line
is smtd's ("[1,mpirank:R,HOST]<stdout>: "), the rest of the line is the
rank's bytes, whatever they hold (tag lookalikes included).  MODE "json":
every line of STDOUT is a JSON object; a line's bytes are line_b64 when
present, else line as UTF-8; objects with "partial": true are pieces of a
line that goes on in the next object of the same rank.  LOGDIR (with {K} for
the host number) holds the --rank-log-dir files: LOGDIR/rank-R.log on the
host of rank R, algo-(R // P + 1).

Every rank's bytes must be exactly what it wrote, in order (SHA-256); on a
mismatch the first differing byte is shown.  Exits 0 or with a message.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--per-host", type=int, required=True)
ap.add_argument("--expected", required=True)
ap.add_argument("mode", choices=["text", "json"])
ap.add_argument("stdout")
ap.add_argument("logdir", nargs="?")
a = ap.parse_args()

ranks = range(a.ranks)
want = {}
for r in ranks:
    with open(os.path.join(a.expected, "rank-%d" % r), "rb") as f:
        want[r] = f.read()


def host_of(r):
    return "algo-%d" % (r // a.per_host + 1)


def compare(what, got):
    bad = []
    for r in ranks:
        g = bytes(got.get(r, b""))
        if hashlib.sha256(g).digest() != hashlib.sha256(want[r]).digest():
            n, lim = 0, min(len(g), len(want[r]))
            while n < lim and g[n] == want[r][n]:
                n += 1
            bad.append("rank %d: %d bytes, expected %d; first difference at byte %d: "
                       "got %r, expected %r" % (r, len(g), len(want[r]), n, g[n:n + 40],
                                               want[r][n:n + 40]))
    if bad:
        sys.exit("%s:\n  %s" % (what, "\n  ".join(bad)))
    total = sum(len(want[r]) for r in ranks)
    print("%s: all %d ranks' bytes (%d in all) arrived byte for byte, in order"
          % (what, len(want), total))


got = {r: bytearray() for r in ranks}
with open(a.stdout, "rb") as f:
    data = f.read()
if data and not data.endswith(b"\n"):
    sys.exit("%s: the last line has no newline" % a.stdout)
lines = data[:-1].split(b"\n") if data else []
if a.mode == "text":
    tag = re.compile(rb"\[1,mpirank:(\d+),([^\]]*)\]<(stdout|stderr)>: ")
    for n, line in enumerate(lines, 1):
        m = tag.match(line)
        if not m:
            sys.exit("%s:%d: no tag: %r" % (a.stdout, n, line[:120]))
        r = int(m.group(1))
        if r not in got or m.group(2).decode() != host_of(r) or m.group(3) != b"stdout":
            sys.exit("%s:%d: unexpected tag %r" % (a.stdout, n, m.group(0)))
        got[r] += line[m.end():]
        got[r] += b"\n"
    print("text: %d lines on the leader's stdout" % len(lines))
else:
    partial = b64 = 0
    for n, raw in enumerate(lines, 1):
        try:
            o = json.loads(raw)
        except ValueError as e:
            sys.exit("%s:%d: not JSON (%s): %r" % (a.stdout, n, e, raw[:120]))
        r = o.get("rank")
        if r not in got or o.get("host") != host_of(r) or o.get("stream") != "stdout":
            sys.exit("%s:%d: unexpected object %r" % (a.stdout, n, raw[:200]))
        if not isinstance(o.get("line"), str):
            sys.exit("%s:%d: no line: %r" % (a.stdout, n, raw[:200]))
        if "line_b64" in o:
            b = base64.b64decode(o["line_b64"], validate=True)
            b64 += 1
        else:
            # Without line_b64 the text is the bytes: strict UTF-8 (a lone
            # surrogate escaped into it would fail here).
            b = o["line"].encode("utf-8")
        got[r] += b
        if o.get("partial") is True:
            partial += 1
        else:
            got[r] += b"\n"
    print("json: %d objects on the leader's stdout, %d of them partial, %d with line_b64"
          % (len(lines), partial, b64))
compare("%s: the leader's stdout" % a.mode, got)
if a.logdir:
    files = {}
    for r in ranks:
        path = os.path.join(a.logdir.replace("{K}", str(r // a.per_host + 1)), "rank-%d.log" % r)
        with open(path, "rb") as f:
            files[r] = f.read()
    compare("%s: the --rank-log-dir file on each rank's host" % a.mode, files)
