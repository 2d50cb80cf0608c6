#!/bin/sh
# docs/BENCHMARKS.md says what ran: it is only ever written by bench/run.sh
# (or bench/report.py on a kept run), so
#  1. its text above "## Results" is bench/BENCHMARKS.head.md, byte for
#     byte (a hand edit of the doc's prose, or a head.md changed without
#     the doc being made again, fails);
#  2. every number in the prose (the doc's lines outside tables, code
#     blocks and `code`, above "## Results") appears in the results table:
#     a figure in the prose came from the table of the same run, not from
#     another run spliced in or from memory.  The notes under the table
#     are report.py's own, from the same run, and are not prose here.
. "$top_srcdir/tests/lib.sh"
DOC=$top_srcdir/docs/BENCHMARKS.md
HEAD=$top_srcdir/bench/BENCHMARKS.head.md
[ -f "$DOC" ] || fail "no $DOC"
[ -f "$HEAD" ] || fail "no $HEAD"
command -v python3 >/dev/null 2>&1 || skip_tool python3
python3 - "$DOC" "$HEAD" <<'PY' || fail "docs/BENCHMARKS.md is not what bench/run.sh writes (bench/report.py rewrites it from a kept run)"
import re, sys

doc_path, head_path = sys.argv[1], sys.argv[2]
doc = open(doc_path, encoding="utf-8").read()
head = open(head_path, encoding="utf-8").read()
bad = []

# 1. The head, as bench/report.py writes it: head.md less its trailing
# blank lines, one blank line, "## Results".
marker = "\n\n## Results\n"
if marker not in doc:
    print("docs/BENCHMARKS.md has no '## Results' section")
    sys.exit(1)
above = doc[:doc.index(marker)]
if above != head.rstrip():
    a, b = above.splitlines(), head.rstrip().splitlines()
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    print("the text above '## Results' differs from bench/BENCHMARKS.head.md from line %d:" % (n + 1))
    print("  doc:     %r" % (a[n] if n < len(a) else "<end>"))
    print("  head.md: %r" % (b[n] if n < len(b) else "<end>"))
    bad.append("head")

# The results table: the first table after "## Results" whose header
# starts with "| # | metric".
below = doc[doc.index(marker):].splitlines()
table, inside = [], False
for line in below:
    if line.startswith("| # | metric"):
        inside = True
    elif inside and not line.startswith("|"):
        break
    if inside:
        table.append(line)
if len(table) < 3:
    print("no results table ('| # | metric ...') under '## Results'")
    sys.exit(1)

# A number: digits, with a decimal part, not glued to a letter, digit or
# dot (B4m, 6a9d6c0, v4.1.4 are names, not figures).  Thousands may be
# written 20,000 in prose and 20000 in the table.
NUM = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\w]|\.\d)")
def numbers(text):
    return [m.group(1) for m in NUM.finditer(text)]
def value(n):
    return float(n.replace(",", ""))

in_table = {value(n) for line in table[2:] for n in numbers(line)}

# 2. Prose: the lines above "## Results" that are not a table row, not in
# a fenced or indented code block; `code` spans are names and commands.
fence = False
for no, line in enumerate(above.splitlines(), 1):
    if line.startswith("```"):
        fence = not fence
        continue
    if fence or line.startswith("    ") or line.startswith("\t") or line.lstrip().startswith("|"):
        continue
    text = re.sub(r"`[^`]*`", "", line)
    if text.startswith("#"):
        continue
    missing = [n for n in numbers(text) if value(n) not in in_table]
    if missing:
        print("line %d: %s not in the results table: %s" % (no, ", ".join(missing), line.strip()))
        bad.append(no)
if bad:
    sys.exit(1)
print("docs/BENCHMARKS.md: the head is bench/BENCHMARKS.head.md; every number of its prose is in its table (%d rows)" % (len(table) - 2))
PY
echo ok
