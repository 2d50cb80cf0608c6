# A rank that runs as uid 65534 on a simulated host and tries, by its rank
# number, what tests/multihost/test_hostile.sh checks (read it first).
# Every attempt's outcome goes to SYNC/rank-R.json, then SYNC/done-R; the
# ranks then wait to be ended, but for rank 4, which fails the job with a
# line holding control bytes once the test has seen every other rank's
# work done (SYNC/go).
#
#   hostile_rank.py SYNC VICTIM
import errno
import http.client
import json
import os
import socket
import sys
import time

SYNC, VICTIM = sys.argv[1], sys.argv[2]
RANK = int(os.environ["OMPI_COMM_WORLD_RANK"])
API = "/run/smtd/smtd.sock"
res = {"rank": RANK, "host": socket.gethostname(), "uid": os.getuid(), "gid": os.getgid()}


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


def http(method, url, headers=None, body=None):
    """The status and the error text of one request to this host's smtd."""
    try:
        c = UnixHTTP(API)
        c.request(method, url, body=body, headers=headers or {})
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        c.close()
    except OSError as e:
        return [errno.errorcode.get(e.errno, str(e)), ""]
    try:
        text = json.loads(text).get("error", "")
    except ValueError:
        text = ""
    return [r.status, text]


def connect(path, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_UNIX, kind)
    try:
        s.connect(path)
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()


LEADER = {"X-Smtd-Leader": "1"}
if RANK == 0:
    # On the leader: the workers' channel socket (its connections become
    # the stdin of root's ssh to a worker), the rank launchers' socket,
    # and the API as a member of the socket's group.
    res["channels"] = connect(API + ".channels")
    res["ranks"] = connect(API + ".ranks", socket.SOCK_SEQPACKET)
    res["status"] = http("GET", "/v1/status")[0]
    res["kill"] = http("POST", "/v1/kill")
    res["kill_as_leader"] = http("POST", "/v1/kill", LEADER)
elif RANK == 2:
    # On a worker: a link where smtd writes the host's result, to a file of
    # root's; then the worker's API, speaking for the leader: its output
    # (which only the leader takes), its end, a forged orted PID.
    os.symlink(VICTIM, "/opt/ml/output/failure")
    res["link"] = os.readlink("/opt/ml/output/failure")
    res["lines_as_leader"] = http("GET", "/v1/lines?from=0", LEADER)
    res["end_as_leader"] = http("POST", "/v1/end", LEADER, b"{}")
    res["result_as_leader"] = http("POST", "/v1/result", LEADER, b'{"state": "succeeded", "exit_code": 0}')
    res["orted_forged"] = http("POST", "/v1/orted", LEADER, json.dumps({"pid": 1}).encode())
    res["ranks"] = connect(API + ".ranks", socket.SOCK_SEQPACKET)
elif RANK == 3:
    # A process that leaves the job: its own session, twice forked.  smtd
    # must end it with the job all the same.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(os.path.join(SYNC, "escaped.pid"), "w") as f:
                f.write(str(os.getpid()))
            os.execv("/bin/sleep", ["sleep", "300"])
        os._exit(0)
    os.wait()
    while not os.path.exists(os.path.join(SYNC, "escaped.pid")):
        time.sleep(0.02)
elif RANK == 5:
    # A flood on a worker, as fast as it can write: 40000 lines, and one
    # of 1 MiB.
    line = b"flood %06d " + b"x" * 88 + b"\n"
    out = os.fdopen(1, "wb", buffering=1 << 20)
    for i in range(40000):
        out.write(line % i)
    out.write(b"y" * (1 << 20) + b"\n")
    out.write(b"flood done\n")
    out.flush()

with open(os.path.join(SYNC, "rank-%d.json" % RANK), "w") as f:
    json.dump(res, f)
open(os.path.join(SYNC, "done-%d" % RANK), "w").close()
print("rank %d did its part" % RANK, flush=True)

if RANK == 4:
    while not os.path.exists(os.path.join(SYNC, "go")):
        time.sleep(0.05)
    print("ValueError: the hostile ranks are done \x1b]0;owned\x07\x1b[2J\r", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(300)
