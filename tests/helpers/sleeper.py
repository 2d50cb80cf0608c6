"""sleeper.py - a Python process whose stack the tests know.

Prints "ready PID", starts a thread that sleeps in worker(), and sleeps in
time.sleep inside step() called from main(): the Python-level stack is
main -> step -> time.sleep(3600) (line 17).
"""
import os
import threading
import time


def worker():
    time.sleep(3600)


def step():
    time.sleep(3600)


def main():
    threading.Thread(target=worker, name="bg", daemon=True).start()
    print(f"ready {os.getpid()}", flush=True)
    step()


if __name__ == "__main__":
    main()
