#!/usr/bin/env python3
"""Compare smtd's plan (--dry-run --json, job directory as ROOT) with what
the toolkit 4.5.0 and the PyTorch container give the same job
(tests/data/toolkit/CASE/expected.json).  Deliberate differences are the
ones tests/data/toolkit/differences.json marks, each with its section of
docs/MIGRATING.md; anything else that differs is a failure.

  corpus_compare.py EXPECTED.json PLAN.json DIFFERENCES.json
"""
import json
import re
import sys

expected = json.load(open(sys.argv[1]))
case = json.load(open(sys.argv[1].replace("expected.json", "case.json")))
plan = json.load(open(sys.argv[2]))
diffs = json.load(open(sys.argv[3]))
errors = []


def cpus(name, value):
    # The machine's CPUs: the generator's and this one's may differ.
    if name == "SM_NUM_CPUS":
        return "NCPUS"
    return re.sub(r'"num_cpus":\d+', '"num_cpus":NCPUS', value)


# The environment: every variable the toolkit sets, with its value.
got = plan["rank_env"]
for name, value in sorted(expected["env"].items()):
    if name in diffs["env"]:
        continue
    # What the leader's toolkit gives a worker's ranks, which the worker's does not see.
    if name in case.get("unseen", {}):
        value = case["unseen"][name].split(":")[0]
    if name not in got:
        errors.append("%s: the toolkit sets it (%r), smtd does not" % (name, value))
    elif cpus(name, got[name]) != cpus(name, value):
        errors.append("%s: the toolkit gives %r, smtd %r" % (name, value, got[name]))
for name in sorted(got):
    if name.startswith("SM_") and name not in expected["env"] and name not in diffs["env"]:
        errors.append("%s: smtd sets it (%r), the toolkit does not" % (name, got[name]))


def rank_command(words):
    """The program and its arguments, the toolkit's relative path made ROOT's."""
    words = list(words)
    while words and (words[0] in ("PYTHON", "python3", "-m", "mpi4py", "-u")):
        words.pop(0)
    if words and not words[0].startswith("/") and not words[0].startswith("ROOT"):
        words[0] = "ROOT/code/" + words[0]
    return words


def units(words):
    """mpirun's options as units: ("-mca", A, B), ("-x", V), (flag,), ..."""
    out, i = [], 0
    takes = {"-mca": 2, "--mca": 2, "-x": 1, "--host": 1, "-np": 1, "-bind-to": 1,
             "-map-by": 1, "-i": 1}
    while i < len(words):
        n = takes.get(words[i], 0)
        out.append(tuple(words[i:i + 1 + n]))
        i += 1 + n
    return out


argv = expected["argv"]
runner = expected["runner"]
if runner == "WorkerRunner":
    if plan["role"] != "worker" or plan["argv"]:
        errors.append("a worker under the toolkit; smtd's role %s runs %r" % (plan["role"], plan["argv"]))
elif runner == "ProcessRunner":
    if plan["role"] != "standalone":
        errors.append("the toolkit runs the program alone; smtd's role is %s" % plan["role"])
    if rank_command(argv) != rank_command(plan["rank_argv"]):
        errors.append("rank command: toolkit %r, smtd %r" % (argv, plan["rank_argv"]))
else:
    split = argv.index("PYTHON") if "PYTHON" in argv else \
        next(i for i, w in enumerate(argv) if w.endswith(".py"))
    if rank_command(argv[split:]) != rank_command(plan["rank_argv"]):
        errors.append("rank command: toolkit %r, smtd %r" % (argv[split:], plan["rank_argv"]))
    mine = plan["argv"] or []
    if runner == "TorchDistributedRunner":
        head = argv[:split]
        if head[0] != "torchrun" or mine[:len(head)] != head:
            errors.append("torchrun: toolkit %r, smtd %r" % (head, mine))
    else:
        have = set(units(mine))
        for unit in units(argv[:split]):
            key = " ".join(unit)
            if unit in have or any(re.fullmatch(p, key) for p in diffs["argv"]):
                continue
            errors.append("mpirun: the toolkit gives %r, smtd does not" % key)
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
