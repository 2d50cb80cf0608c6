"""stamp.py - the time each line of a growing file was first seen.

  stamp.py FILE OUT STOP

Reads FILE (a host's console.log) as it grows, every 20 ms, and writes
each new line to OUT as "SECONDS-SINCE-THE-EPOCH LINE"; ends once STOP
exists (a host's "exit" file) and the rest of FILE is read, or after 10
minutes whatever happens.  The tests
measure a stall from the last progress line a person would have seen on
the leader's output, not from what smtd says of itself.
"""
import os
import sys
import time


def main():
    path, out, stop = sys.argv[1:4]
    pos, rest = 0, b""
    limit = time.monotonic() + 600
    with open(out, "w") as o:
        while True:
            done = os.path.exists(stop)
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            pos += len(data)
            now = time.time()
            *lines, rest = (rest + data).split(b"\n")
            for line in lines:
                o.write("%.3f %s\n" % (now, line.decode("utf-8", "replace")))
            o.flush()
            if done or time.monotonic() > limit:
                return 0
            time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main())
