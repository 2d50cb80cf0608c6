"""heartbeat.py - a job that keeps logging but stops making progress.

Prints "heartbeat N" every second forever, and "progress step N" lines
only for the first SMT_PROGRESS_STEPS seconds (default 3): smtd with
--progress-pattern 'progress' must see it stalled, without the pattern
never.  SMT_HEARTBEAT_LIMIT (seconds, default: none) ends it with exit 0.
Needs any python3, no module outside the standard library.
"""
import os
import sys
import time


def main():
    steps = int(os.environ.get("SMT_PROGRESS_STEPS", "3"))
    limit = float(os.environ.get("SMT_HEARTBEAT_LIMIT", "0"))
    start = time.monotonic()
    n = 0
    while not limit or time.monotonic() - start < limit:
        if n < steps:
            print(f"progress step {n}", flush=True)
        print(f"heartbeat {n}", flush=True)
        n += 1
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
