"""bench/report.py WORKDIR RUNS ELAPSED COMMAND [DOC] - the table of
bench/run.sh: min/median/max of every metric for smtd and its baseline and
the ratio of the medians, with the 1-minute load average when the row was
recorded; printed, and written to DOC (docs/BENCHMARKS.md) with the machine
and the command."""
import os
import platform
import statistics
import subprocess
import sys
import time

work, runs, elapsed, command = sys.argv[1:5]
doc = sys.argv[5] if len(sys.argv) > 5 else None


def nums(field):
    """The numbers of a field, and how many of its runs failed: every value
    that is not a number ("failed", or "-" for a run that did not end) is a
    run whose job failed, reported as such and never in min/median/max."""
    out, failed = [], 0
    for v in field.split():
        try:
            out.append(float(v))
        except ValueError:
            failed += 1
    return out, failed


def fmt(x):
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000:
        return "%.0f" % x
    if a >= 100:
        return "%.1f" % x
    if a >= 1:
        return "%.2f" % x
    return "%.3f" % x


def cell(v, failed=0):
    if failed and not v:
        return "failed (%d of %d runs)" % (failed, failed)
    if not v:
        return "—"
    if len(v) == 1:
        text = fmt(v[0])
    else:
        text = "%s / **%s** / %s" % (fmt(min(v)), fmt(statistics.median(v)), fmt(max(v)))
    if failed:
        text += " (%d of %d runs failed, not counted)" % (failed, failed + len(v))
    return text


# B12's model: every total measured at two sizes or more (ID-N, the per
# worker rows excepted), extrapolated to MODEL_N workers as a + b*N through
# the medians at the smallest and the largest size.
MODEL_N = 4000
MODEL_FAMILIES = {
    "B12r": "readiness of every worker through fakessh",
    "B12c": "the leader's own CPU until then",
    "B12g": "the CPU of the leader and its channel processes until then",
    "B12m": "the leader's RSS, every channel idle",
    "B12p": "the leader's PSS",
    "B12d": "the leader's Private_Dirty",
    "B12a": "the leader's anonymous memory",
    "B12f": "the leader's open descriptors",
    "B12h": "the leader's channel processes",
    "B12hm": "their private memory, summed",
    "B12w": "the leader's wakeups per second, every channel idle",
    "B12wc": "its channel processes' wakeups per second",
    "B12l": "one line from a rank on every worker to the leader's stdout",
    "B12e": "the job's end, the leader's decision to every worker's exit",
    "B12k": "every worker's rank's stack read and grouped on the leader (smtctl stacks)",
    "B12s": "the readiness floor: one channel process per worker started, nothing else",
    "B12ef": "the end's floor: every worker's own end on a signal, no leader",
    "B12x": "a stall: noticed to the leader's failure file written, every worker told",
    "B12xc": "a stall: noticed to every rank's stack on the leader",
}
measured = {}


def model_rows():
    out = []
    for fam in MODEL_FAMILIES:
        pts = sorted(measured.get(fam, []))
        if len(pts) < 2:
            continue
        (n0, y0, unit, metric, target), (n1, y1, _, _, _) = pts[0], pts[-1]
        b = (y1 - y0) / (n1 - n0)
        a = y0 - b * n0
        y = a + b * MODEL_N
        m = MODEL_FAMILIES[fam]
        out.append(("%s-%d" % (fam, MODEL_N), "model, %d workers: %s (a + b·N through %d and %d: a %s, b %s per worker)"
                    % (MODEL_N, m, n0, n1, fmt(a), fmt(b)), unit, fmt(y), "—", "—", target, "model", "—"))
    return out


rows = []
failures = []
with open(os.path.join(work, "results.tsv")) as f:
    for line in f:
        p = line.rstrip("\n").split("\t")
        if len(p) < 6:
            continue
        ident, metric, unit, target, s, b = p[:6]
        note = p[6] if len(p) > 6 else ""
        load = p[7] if len(p) > 7 and p[7] else "—"
        (sv, sf), (bv, bf) = nums(s), nums(b)
        ratio = "—"
        if sv and bv and statistics.median(bv) != 0:
            ratio = "%.2f" % (statistics.median(sv) / statistics.median(bv))
        n = str(len(sv)) if len(sv) == len(bv) or not (bv or bf) else "%d / %d" % (len(sv), len(bv))
        if sf or bf:
            n += " (%s failed)" % (" / ".join(str(x) for x in ((sf, bf) if (bv or bf) else (sf,))))
            failures.append("%s: %d of %d smtd runs failed%s; a failed run is not counted" % (
                ident, sf, sf + len(sv), (", %d of %d baseline runs" % (bf, bf + len(bv))) if (bv or bf) else ""))
        fam, _, size = ident.rpartition("-")
        if fam in MODEL_FAMILIES and size.isdigit() and sv:
            measured.setdefault(fam, []).append((int(size), statistics.median(sv), unit, metric, target))
        rows.append((ident, metric + (" (%s)" % note if note else ""), unit, cell(sv, sf), cell(bv, bf), ratio, target, n, load))


def sh(*a):
    try:
        return subprocess.run(a, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return "?"


mem = "?"
with open("/proc/meminfo") as f:
    for line in f:
        if line.startswith("MemTotal:"):
            mem = "%.1f GiB" % (int(line.split()[1]) / 1048576)
cpu = "?"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
ompi = sh("mpirun", "--version").splitlines()
machine = [
    ("CPUs (nproc)", sh("nproc") + " × " + cpu),
    ("memory", mem),
    ("kernel", platform.release()),
    ("Open MPI", ompi[0] if ompi else "?"),
    ("OpenSSH", sh("ssh", "-V") or subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()),
    ("load average at the end", open("/proc/loadavg").read().split(" ", 3)[:3].__str__()),
    ("date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
    ("runs per metric", runs),
    ("wall time of the benchmark", "%s s" % elapsed),
]

rows += model_rows()

head = "| # | metric | unit | smtd min / **median** / max | baseline min / **median** / max | ratio (medians) | target | runs | load |"
sep = "|---|---|---|---|---|---|---|---|---|"
table = [head, sep] + ["| " + " | ".join(r) + " |" for r in rows]
notes = open(os.path.join(work, "notes.txt")).read().strip() if os.path.exists(os.path.join(work, "notes.txt")) else ""
# Runs whose job failed are said first: their rows' figures stand on fewer runs.
if failures:
    notes = "\n".join(["FAILED RUNS: " + f for f in failures] + ([notes] if notes else []))

print()
for line in table:
    print(line)
print()
if notes:
    print(notes)

if doc:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "BENCHMARKS.head.md")) as f:
        intro = f.read()
    out = [intro.rstrip(), "", "## Results", "", "Command: `%s` (as root, from the top of the source tree)." % command, ""]
    out += ["| machine | |", "|---|---|"] + ["| %s | %s |" % m for m in machine] + [""]
    out += table + [""]
    if notes:
        out += ["### Notes from this run", ""] + ["- " + n for n in notes.splitlines()] + [""]
    with open(doc + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.rename(doc + ".tmp", doc)
    print("\nwrote", doc)
