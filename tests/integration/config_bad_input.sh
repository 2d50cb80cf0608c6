#!/bin/sh
# Every bad input of the configuration: exit 2, one line on stderr naming the file,
# the field and the problem, the same line in ROOT/output/failure, nothing
# launched; under --dry-run the same line and no failure file.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

cat >"$T/launch.sh" <<'EOS'
#!/bin/sh
touch "$MARKER"
EOS
chmod +x "$T/launch.sh"
export MARKER="$T/ran"
# Every job standalone unless a call says --mpi, and $T/launch.sh the
# command expect_config_error gives smtd.
export SMTD_MPI_ENABLED=false
CONFIG_CMD="$T/launch.sh"

n=0
# new_root: a fresh job directory in $R with a valid single-host config.
new_root() {
	n=$((n + 1))
	R="$T/job$n"
	C="$R/input/config"
	mkdir -p "$C" "$R/output"
	printf '{"current_host":"algo-1","hosts":["algo-1","algo-2"]}' >"$C/resourceconfig.json"
}

rc_json() { printf '%s' "$1" >"$C/resourceconfig.json"; }
hp_json() { printf '%s' "$1" >"$C/hyperparameters.json"; }
RC="\$R/input/config/resourceconfig.json"

# The valid config itself launches, so the checks above can fail: alone
# (one host), it runs the command (the marker), exits 0 with a success file;
# the two-host config builds its plan under --dry-run without launching.
new_root
printf '{"current_host":"algo-1","hosts":["algo-1"]}' >"$C/resourceconfig.json"
rm -f "$MARKER"
rc=0
timeout 10 "$SMTD" --root "$R" --no-mpi --sshd never -- "$T/launch.sh" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 0 "exit code of the valid one-host config ($(tail -3 "$T/err"))"
[ -e "$MARKER" ] || fail "the valid one-host config did not launch its command"
[ -f "$R/output/success" ] || fail "the valid one-host config wrote no success file"
new_root
rm -f "$MARKER"
timeout 10 "$SMTD" --root "$R" --no-mpi --dry-run -- "$T/launch.sh" >"$T/out" 2>"$T/err" ||
	fail "a valid config is rejected: $(cat "$T/err")"
[ -s "$T/out" ] || fail "--dry-run of the valid config printed no plan"
[ ! -e "$MARKER" ] || fail "--dry-run of the valid config launched the command"

F=input/config/resourceconfig.json
new_root; rc_json ''
expect_config_error "$R/$F: line 1 column 0: not valid UTF-8 JSON: '[' or '{' expected near end of file; fix the file"
new_root; rc_json '[]'
expect_config_error "$R/$F: the top level is an array, not a JSON object; write {...}"
new_root; rc_json '{"hosts":"algo-1"}'
expect_config_error "$R/$F: hosts: \"algo-1\" is not an array of host names; write [\"algo-1\", ...]"
new_root; rc_json '{"current_host":"algo-1","hosts":[]}'
expect_config_error "$R/$F: hosts: is empty; list at least one host"
new_root; rc_json '{"current_host":"algo-1"}'
expect_config_error "$R/$F: hosts: missing; list the job's hosts, e.g. [\"algo-1\"]"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","algo-1"]}'
expect_config_error "$R/$F: hosts[1]: \"algo-1\" appears twice; list each host once"
new_root; rc_json '{"hosts":["algo-1"]}'
expect_config_error "$R/$F: current_host: missing; name this host, one of hosts"
new_root; rc_json '{"current_host":"algo-3","hosts":["algo-1"]}'
expect_config_error "$R/$F: current_host: \"algo-3\" is not in hosts; name this host, one of hosts"
HN="is not a valid host name (RFC 1123: letters, digits, '-' and '.', labels of at most 63 and names of at most 253 characters); fix the host list"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1,algo-2"]}'
expect_config_error "$R/$F: hosts[0]: \"algo-1,algo-2\" $HN"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","a b"]}'
expect_config_error "$R/$F: hosts[1]: \"a b\" $HN"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","$(reboot)"]}'
expect_config_error "$R/$F: hosts[1]: \"\$(reboot)\" $HN"
long=$(printf 'a%.0s' $(seq 300))
new_root; rc_json "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\",\"$long\"]}"
expect_config_error "$R/$F: hosts[1]: \"$(printf 'a%.0s' $(seq 59))...\" (300 characters) $HN"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","al\u0000go"]}'
expect_config_error "$R/$F: line 1 column 55: not valid UTF-8 JSON: \\u0000 is not allowed without JSON_ALLOW_NUL near '\"al\\u0000go\"'; fix the file"
new_root; printf '{"current_host":"algo-1","hosts":["algo-1","al\000go"]}' >"$C/resourceconfig.json"
expect_config_error "$R/$F: line 1 column 46: not valid UTF-8 JSON: control character 0x0 near '\"al'; fix the file"
new_root; printf '{"current_host":"algo-1","hosts":["algo-1","\377"]}' >"$C/resourceconfig.json"
expect_config_error "$R/$F: line 1 column 44: not valid UTF-8 JSON: unable to decode byte 0xff near '\"'; fix the file"
new_root; head -c 2097152 /dev/zero | tr '\0' ' ' >"$C/resourceconfig.json"
expect_config_error "$R/$F: is 2097152 bytes, larger than the limit of 1048576; shrink it"
new_root; { printf '{"current_host":"algo-1","hosts":["algo-1"],"x":'; printf '[%.0s' $(seq 10000); printf ']%.0s' $(seq 10000); printf '}'; } >"$C/resourceconfig.json"
expect_config_error "$R/$F: nested deeper than 32 levels; flatten it"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1"],"network_interface_name":"eth0;rm"}'
expect_config_error "$R/$F: network_interface_name: \"eth0;rm\" is not a valid interface name (1 to 15 letters, digits, '_', '-', '.'); fix the name"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1"],"instance_groups":[{"instance_group_name":"g","hosts":["algo-1","algo-9"]}]}'
expect_config_error "$R/$F: instance_groups[0].hosts[1]: \"algo-9\" is not in hosts; name only hosts of the job"

H=input/config/hyperparameters.json
for v in '"0"' '"-1"' '"abc"' '"1e9"'; do
	new_root; hp_json "{\"sagemaker_mpi_num_of_processes_per_host\": $v}"
	shown=$(printf '%s' "$v" | sed 's/^"//; s/"$//')
	[ "$shown" = abc ] && shown='"abc"'
	[ "$shown" = 1e9 ] && shown='1000000000.0'
	expect_config_error "$R/$H: sagemaker_mpi_num_of_processes_per_host: $shown is not a positive integer (1 to 1000000); fix the value"
done
new_root; hp_json '{"sagemaker_mpi_enabled":"true","sagemaker_mpi_num_of_processes_per_host":"2","sagemaker_mpi_num_processes":"5"}'
# MPI is on here (the hyperparameters say so): drop --no-mpi by overriding it.
expect_config_error "$R/$H: sagemaker_mpi_num_processes: 5 is more than hosts x processes per host (2 x 2 = 4); lower it" --mpi
new_root; hp_json '["a"]'
expect_config_error "$R/$H: the top level is an array, not a JSON object; write {...}"
new_root; hp_json '{"sagemaker_mpi_enabled":"true","sagemaker_mpi_custom_mpi_options":"-x FOO=\"a b"}'
expect_config_error "$R/$H: sagemaker_mpi_custom_mpi_options: unbalanced double quote at byte 8; fix the quoting" --mpi

# Files that are not regular readable files: never a hang.
new_root; rm "$C/resourceconfig.json"; mkdir "$C/resourceconfig.json"
expect_config_error "$R/$F: is a directory, not a regular file; replace it with a JSON file"
new_root; rm "$C/resourceconfig.json"; mkfifo "$C/resourceconfig.json"
expect_config_error "$R/$F: is a FIFO, not a regular file; replace it with a JSON file"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	new_root; chmod 000 "$C/resourceconfig.json"; chmod -R a+rwX "$T"; chmod 000 "$C/resourceconfig.json"
	NB_SMTD=$(nobody_copy "$SMTD") || exit 1
	msg="$R/$F: cannot open: Permission denied; make it a readable file"
	out=$(as_nobody timeout 10 "$NB_SMTD" --root "$R" --no-mpi -- "$T/launch.sh" 2>&1)
	rc=$?
	assert_eq "$rc" 2 "exit code for an unreadable file"
	assert_eq "$out" "smtd: $msg" "stderr for an unreadable file"
	assert_eq "$(cat "$R/output/failure")" "ConfigurationError: $msg" "failure file"
	[ ! -e "$MARKER" ] || fail "launched despite an unreadable file"
else
	echo "note: mode-000 case needs root and setpriv; skipped" >&2
fi
# ---- one line, strict numbers, the right message ----
# expect_usage MESSAGE VAR=VALUE|- [smtd options...]: a usage error - exit 2,
# the message on one line then the hint, no failure file, nothing launched.
expect_usage() {
	msg=$1
	var=$2
	shift 2
	[ "$var" != - ] || var=SMTD_UNUSED=1
	new_root
	rm -f "$MARKER"
	rc=0; env "$var" "$SMTD" --root "$R" --no-mpi "$@" -- "$T/launch.sh" >"$T/out" 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "exit code ($msg)"
	assert_eq "$(sed -n 1p "$T/err")" "smtd: $msg" "stderr"
	assert_eq "$(sed -n 2p "$T/err")" "Try 'smtd --help' for more information." "stderr's hint"
	assert_eq "$(wc -l <"$T/err")" 2 "lines on stderr ($msg)"
	[ ! -e "$R/output/failure" ] || fail "a failure file for a usage error"
	[ ! -e "$MARKER" ] || fail "the command was launched despite: $msg"
}
SECS="(digits and at most one decimal point, like 30 or 2.5)"
nl='
'
# A newline in a variable is not echoed raw.
expect_usage "SMTD_WAIT_TIMEOUT: '5\\nERROR: all is well' is not a number of seconds from 1 to 1000000000 $SECS" \
	"SMTD_WAIT_TIMEOUT=5${nl}ERROR: all is well"
expect_usage "SMTD_ROOT: '/opt/ml\\n' contains a control character; remove it" "SMTD_ROOT=/opt/ml${nl}"
# Strict numbers, from the command line and the environment.
expect_usage "--processes-per-host: ' 2' is not a positive integer (1 to 1000000)" - --processes-per-host ' 2'
expect_usage "--processes-per-host: '+2' is not a positive integer (1 to 1000000)" - --processes-per-host +2
expect_usage "SMTD_NUM_PROCESSES: ' 2' is not a positive integer (1 to 1000000)" "SMTD_NUM_PROCESSES= 2"
expect_usage "--wait-timeout: '1e-9' is not a number of seconds from 1 to 1000000000 $SECS" - --wait-timeout 1e-9
expect_usage "--peer-timeout: '0.5' is not a number of seconds from 1 to 1000000000 $SECS" - --peer-timeout 0.5
expect_usage "SMTD_GRACE: '+2' is not a number of seconds from 0.1 to 1000000000 $SECS" SMTD_GRACE=+2
# A bad --health-listen is named as such.
expect_usage "--health-listen: 'localhost:8080' is not ADDR:PORT with a numeric address and a port from 0 to 65535 (127.0.0.1:8080, [::1]:8080, or :8080 for every address)" \
	- --health-listen localhost:8080
# ... and an address it cannot listen on is a configuration error that says so.
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$T/busy" &
BUSY=$!
wait_until 10 '[ -s "$T/busy" ]' 'no busy port'
busy=$(cat "$T/busy")
new_root
rm -f "$MARKER"
rc=0; "$SMTD" --root "$R" --no-mpi --socket "$T/smtd.sock" --sshd never --health-listen "127.0.0.1:$busy" -- \
	"$T/launch.sh" >"$T/out" 2>"$T/err" || rc=$?
kill $BUSY
msg="ConfigurationError: --health-listen 127.0.0.1:$busy: cannot listen there: Address already in use; give a free port on an address of this host"
assert_eq "$rc" 2 "exit code when --health-listen cannot listen"
assert_eq "$(cat "$R/output/failure")" "$msg" "failure file when --health-listen cannot listen"
assert_contains "$T/err" "error: $msg" "stderr when --health-listen cannot listen"
assert_not_contains "$T/err" "control socket" "stderr when --health-listen cannot listen"
[ ! -e "$MARKER" ] || fail "launched although --health-listen cannot listen"
# In the files: a count written as " 2", and one host listed twice in two cases.
new_root; hp_json '{"sagemaker_mpi_num_of_processes_per_host": " 2"}'
expect_config_error "$R/$H: sagemaker_mpi_num_of_processes_per_host: \" 2\" is not a positive integer (1 to 1000000); fix the value"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","ALGO-1"]}'
expect_config_error "$R/$F: hosts[1]: \"ALGO-1\" is the same host as hosts[0] \"algo-1\" (host names are not case-sensitive); list each host once"
new_root; rc_json '{"current_host":"algo-1","hosts":["algo-1","algo-2"],"instance_groups":[{"instance_group_name":"a\nb\u001b[31m","hosts":["algo-1"]},{"instance_group_name":"a\nb\u001b[31m","hosts":["algo-2"]}]}'
expect_config_error "$R/$F: instance_groups[1].instance_group_name: \"a\\nb\\x1b[31m\" appears twice; give each group its own name"
echo "PASS: $n bad inputs"
