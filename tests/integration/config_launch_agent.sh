#!/bin/sh
# The smtctl and socket paths in mpirun's orte_launch_agent reach the
# workers' shell: with the real mpirun and an ssh stand-in that runs the
# command as sshd does (the user's shell with -c and the words joined by
# spaces), paths with spaces, ';', a single quote and runs of spaces reach
# smtctl on the "worker" byte for byte, and nothing in them runs.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
command -v mpirun >/dev/null || skip_tool "mpirun (openmpi-bin)"
command -v python3 >/dev/null || skip "python3 is needed to read the plan"

smtctl_dir="$T/my  tools;touch $T/pwned1;'q"
sock="$T/run dir;touch $T/pwned2;it's/smtd.sock"
mkdir -p "$smtctl_dir"
cat >"$smtctl_dir/smtctl" <<EOS
#!/bin/sh
{ printf '%s\n' "\$0"; for a in "\$@"; do printf '%s\n' "\$a"; done; } >"$T/agent.args"
exit 1
EOS
chmod +x "$smtctl_dir/smtctl"
cat >"$T/ssh" <<'EOS'
#!/bin/sh
# ssh [-x] HOST WORDS...: sshd runs "$SHELL -c 'WORDS joined by spaces'"
# (mpirun gives an agent named ssh -x).
while [ "${1#-}" != "$1" ]; do shift; done
shift
exec /bin/sh -c "$*"
EOS
chmod +x "$T/ssh"

R="$T/job"
mkdir -p "$R/input/config"
printf '{"current_host":"algo-1","hosts":["algo-1","algo-2"]}' >"$R/input/config/resourceconfig.json"
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_mpi_enabled":"true"}' >"$R/input/config/hyperparameters.json"
"$SMTD" --root "$R" --dry-run --json --smtctl "$smtctl_dir/smtctl" --socket "$sock" >"$T/plan.json" 2>"$T/err" ||
	fail "smtd --dry-run: $(cat "$T/err")"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["argv"]; print(a[a.index("orte_launch_agent") + 1])' \
	"$T/plan.json" >"$T/agent" || fail "no orte_launch_agent in the plan"

# Only the launch of the daemon on algo-2 matters: the stand-in smtctl
# records its arguments and fails, and mpirun gives up.
timeout 60 mpirun --allow-run-as-root --host algo-2 -np 1 -mca plm_rsh_agent "$T/ssh" \
	-mca plm_rsh_no_tree_spawn 1 -mca orte_launch_agent "$(cat "$T/agent")" true >"$T/mpirun.out" 2>&1
[ -f "$T/agent.args" ] || { cat "$T/mpirun.out" >&2; fail "the launch agent did not run"; }
assert_eq "$(sed -n 1p "$T/agent.args")" "$smtctl_dir/smtctl" "smtctl's path on the worker"
assert_eq "$(sed -n 2p "$T/agent.args")" "--socket" "the agent's second word"
assert_eq "$(sed -n 3p "$T/agent.args")" "$sock" "the socket's path on the worker"
assert_eq "$(sed -n 4,5p "$T/agent.args" | tr '\n' ' ')" "exec-orted orted " "the agent's last words"
[ ! -e "$T/pwned1" ] && [ ! -e "$T/pwned2" ] || fail "a command in a path ran on the worker"
echo "PASS: the launch agent's paths reach the worker's shell intact"
