#!/bin/sh
# The program the platform names, run for real on a standalone host
# (smtd(8) "The rank command"; no command after --):
#  1. sagemaker_program in sagemaker_submit_directory, a local directory
#     (not ROOT/code, which holds another train.py): python3 runs that
#     directory's train.py with the user hyperparameters as --key value,
#     keys sorted, byte for byte, in that directory.
#  2. SAGEMAKER_PROGRAM (the environment, no sagemaker_program) in ROOT/code,
#     a program that is not .py: executed directly, with its arguments.
#  3. sagemaker_submit_directory an S3 URL (the toolkit's usual value, not
#     a local directory): the program is ROOT/code's.
# Each writes what it was given; the job succeeds.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
command -v python3 >/dev/null 2>&1 || skip_tool python3

# run NAME: smtd on ROOT $T/NAME (hyperparameters written by the caller),
# no command; its exit code must be 0.
run() {
	rc=0
	"$SMTD" --root "$T/$1" --socket "$S" --sshd never >"$T/$1.out" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { cat "$T/$1.out" >&2; fail "$1: smtd exited $rc"; }
	[ -f "$T/$1/output/success" ] || fail "$1: no success file"
}
S=$T/smtd.sock
cat >"$T/train.py" <<'PY'
import json, os, sys
json.dump({"file": os.path.abspath(__file__), "cwd": os.getcwd(), "argv": sys.argv[1:]},
          open(os.environ["PROBE_OUT"], "w"))
PY

# ---- 1. sagemaker_program in sagemaker_submit_directory ----
mkdir -p "$T/sub/input/config" "$T/sub/code" "$T/src"
cp "$T/train.py" "$T/src/train.py"
printf 'raise SystemExit("ROOT/code/train.py ran, not the submit directory'"'"'s")\n' >"$T/sub/code/train.py"
cat >"$T/sub/input/config/hyperparameters.json" <<EOF
{"sagemaker_program": "\"train.py\"", "sagemaker_submit_directory": "\"$T/src\"",
 "sagemaker_region": "\"us-west-2\"", "lr": "0.1", "name": "\"a b \$HOME 'q'\"", "epochs": "3"}
EOF
PROBE_OUT=$T/sub.json run sub
python3 - "$T/sub.json" "$T/src" <<'PY' || fail "1: the submit directory's program"
import json, os, sys
got, src = json.load(open(sys.argv[1])), os.path.realpath(sys.argv[2])
assert os.path.realpath(got["file"]) == os.path.join(src, "train.py"), got
assert os.path.realpath(got["cwd"]) == src, got
assert got["argv"] == ["--epochs", "3", "--lr", "0.1", "--name", "a b $HOME 'q'"], got
print("1: %s ran in %s with %s" % (got["file"], got["cwd"], got["argv"]))
PY

# ---- 2. SAGEMAKER_PROGRAM, not .py, in ROOT/code ----
mkdir -p "$T/env/input/config" "$T/env/code"
cat >"$T/env/code/run.sh" <<'SH'
#!/bin/sh
{ echo "cwd $(pwd -P)"; for a in "$@"; do echo "arg $a"; done; } >"$PROBE_OUT"
SH
chmod +x "$T/env/code/run.sh"
echo '{"batch": "64"}' >"$T/env/input/config/hyperparameters.json"
PROBE_OUT=$T/env.txt SAGEMAKER_PROGRAM=run.sh run env
printf 'cwd %s\narg --batch\narg 64\n' "$(cd "$T/env/code" && pwd -P)" >"$T/env.want"
cmp -s "$T/env.txt" "$T/env.want" || fail "2: SAGEMAKER_PROGRAM run.sh: got '$(cat "$T/env.txt")', expected '$(cat "$T/env.want")'"
echo "2: SAGEMAKER_PROGRAM=run.sh ran in ROOT/code with --batch 64"

# ---- 3. an S3 submit directory: ROOT/code's program ----
mkdir -p "$T/s3/input/config" "$T/s3/code"
cp "$T/train.py" "$T/s3/code/train.py"
cat >"$T/s3/input/config/hyperparameters.json" <<'EOF'
{"sagemaker_program": "\"train.py\"", "sagemaker_submit_directory": "\"s3://bucket/job/source/sourcedir.tar.gz\""}
EOF
PROBE_OUT=$T/s3.json run s3
python3 - "$T/s3.json" "$T/s3/code" <<'PY' || fail "3: ROOT/code's program with an S3 submit directory"
import json, os, sys
got, code = json.load(open(sys.argv[1])), os.path.realpath(sys.argv[2])
assert os.path.realpath(got["file"]) == os.path.join(code, "train.py"), got
assert got["argv"] == [], got
print("3: %s ran (the submit directory is on S3)" % got["file"])
PY
echo ok
