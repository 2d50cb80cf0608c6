#!/bin/bash
# The leader's channels to its workers (smtd(8) Channels), 3 hosts x 2
# ranks, each job held while it is looked at:
#   a. the default, TCP: after readiness the leader keeps no ssh process
#      for its channels; a worker's status shows its channel's address and
#      port but never its token; from another host (a network peer without
#      the token) every request to the channel - a GET, the leader's
#      header alone, a wrong token of the right length, a POST /v1/kill -
#      gets 403 with one line that says why; then 32 idle connections
#      to it from two addresses of that host (the channel's places) leave
#      the leader the quarter kept for it: a signal passed on by the
#      leader (`smtctl kill -s CONT`, which opens a connection of its own)
#      gets through, and the job goes on to its success, every rank's line
#      on the leader; the leader sends one one-shot request at a time
#      (--channel-requests 1), the others wait their turn;
#   a2. the job idle on --peer-timeout 6 (a 2 s watch period): in 6 s no
#      request reaches a worker over TCP (the leader's long polls are held
#      until something changes; TCP keepalive watches the connections), and
#      each worker holds one connection of the leader's, not two;
#   b. --channels ssh on every host: the leader keeps an ssh per channel,
#      no worker listens on TCP, the job succeeds;
#   c. a worker whose network_interface_name is lo offers an address the
#      leader cannot reach: the leader says so in one warning and reaches
#      that worker through ssh; the job succeeds.
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
have curl || skip_tool curl
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
trap 'smtd_show_all' ERR
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
HOLD=6

# job NAME [SMTD ARGS...]: 3 fresh hosts running mpi_job sleep $HOLD;
# returns once every rank is up.  D is the job's directory.
job() {
	local name=$1
	shift
	echo "---- $name"
	D=$T/$name
	mkdir -p "$D/ready"
	mh_setup 3 "$D"
	for k in 1 2 3; do smtd_hyper $k "$hyper"; done
	[ -z "${PREPARE:-}" ] || $PREPARE
	for k in 1 2 3; do smtd_start $k "$@" -- "$MPIDIR/mpi_job" sleep $HOLD "$D/ready"; done
	wait_until 30 '[ "$(ls "$D/ready" | wc -l)" = 6 ]' "$name: the 6 ranks did not start: $(ls "$D/ready")"
}

# leader_ssh: the ssh processes the leader's smtd (host 1's PID 1) runs
# itself: its channels (mpirun's own ssh to each orted is mpirun's child).
leader_ssh() {
	ps --ppid "$(mh_pid1 1)" -o comm= | grep -c '^ssh$'
}

# ends_well NAME: every host exits 0 with its success file; every rank's
# line on the leader.
ends_well() {
	smtd_wait_all 60
	for k in 1 2 3; do smtd_check $k 0; done
	for r in 0 1 2 3 4 5; do
		assert_contains "$(smtd_console 1)" "rank $r ready" "$1: rank $r's line on the leader"
	done
}

# ---- a. TCP ----
# One one-shot request out at a time (--channel-requests 1): the launch,
# the signal, the end and the result to the two workers wait their turn.
job tcp --channel-requests 1
assert_eq "$(leader_ssh)" 0 "tcp: the leader's ssh processes while the job runs"
mh_exec 2 "$SMTCTL" status --json >"$D/status2.json" || fail "tcp: smtctl status on algo-2"
read -r addr port token < <(/usr/bin/python3 -c '
import json, sys
ch = json.load(open(sys.argv[1])).get("channel") or {}
print(ch.get("address", "-"), ch.get("port", "-"), ch.get("token", "-"))' "$D/status2.json")
assert_eq "$addr" "$(mh_addr 2)" "tcp: algo-2's channel address (its eth0's)"
[ "$port" -gt 0 ] 2>/dev/null || fail "tcp: algo-2's channel has no port: $(cat "$D/status2.json")"
assert_eq "$token" - "tcp: the token in a status that is not the leader's"
assert_contains "$(smtd_console 2)" "TCP channel for the leader on $addr port $port" "tcp: algo-2 says where"
url="http://$addr:$port"
wrong=$(printf '%064d' 7)
# knock CURL-ARGS...: a request to algo-2's channel from algo-3; its HTTP
# status printed, its body in $D/knock.
knock() {
	mh_exec 3 curl -s -o "$D/knock" -w '%{http_code}' --max-time 5 "$@"
}
why="this channel serves only the job's leader (no valid X-Smtd-Token)"
for args in "$url/v1/status" "-H X-Smtd-Leader:1 $url/v1/status" \
	"-H X-Smtd-Leader:1 -H X-Smtd-Token:$wrong $url/v1/status" \
	"-H X-Smtd-Token:${wrong}0 $url/healthz" \
	"-X POST -H X-Smtd-Leader:1 -H X-Smtd-Token:$wrong -d {\"signal\":\"KILL\"} $url/v1/kill"; do
	# shellcheck disable=SC2086
	code=$(knock $args)
	assert_eq "$code" 403 "tcp: $args from algo-3"
	assert_contains "$D/knock" "$why" "tcp: the refusal of $args"
done
# Strangers from two addresses take what they can of the channel's 32
# places and hold it past the job's end.
second=$MH_NET.250
mh_exec 3 ip addr add "$second/24" dev eth0 || fail "tcp: a second address on algo-3"
mh_exec 3 /usr/bin/python3 -c '
import socket, sys, time
held = []
for src in (sys.argv[1], sys.argv[2]):
    for _ in range(16):
        s = socket.socket()
        s.bind((src, 0))
        try:
            s.connect((sys.argv[3], int(sys.argv[4])))
            held.append(s)
        except OSError:
            pass
print(len(held), flush=True)
time.sleep(12)' "$(mh_addr 3)" "$second" "$addr" "$port" >"$D/strangers" &
strangers=$!
wait_until 10 '[ -s "$D/strangers" ]' "tcp: the strangers did not connect"
assert_contains "$(smtd_console 2)" "refusing connections over TCP" "tcp: algo-2 refused some strangers"
mh_exec 1 "$SMTCTL" kill -s CONT || fail "tcp: smtctl kill -s CONT on the leader"
sleep 1
assert_not_contains "$(smtd_console 1)" "a message to algo-2 failed" "tcp: the signal to algo-2 among strangers"
ends_well tcp
kill $strangers 2>/dev/null || true
wait $strangers 2>/dev/null || true
mh_teardown

# ---- a2. idle: the long polls held with no time ----
# requests K: the requests host K's control API has answered (/metrics).
requests() {
	mh_exec "$1" curl -sS --unix-socket "${SMTD_SOCKET:-/run/smtd/smtd.sock}" \
		http://localhost/metrics |
		awk '$1 == "smtd_api_requests_total" { print $2 }'
}
# With --peer-timeout 6 the watch period is 2 s: a worker answered the
# leader's watch 3 times in 6 s, and as many heartbeats as that would wake
# the leader at 1000 workers (bench B12w).  Over TCP nothing is asked or
# answered while nothing changes: the 6 s add only the first reading of
# /metrics (counted once it is answered).  The keepalive that replaces the
# heartbeats is tested where hosts and links are lost (test_faults_hosts).
HOLD=14 job idle --peer-timeout 6
sleep 2
before2=$(requests 2) before3=$(requests 3)
sleep 6
after2=$(requests 2) after3=$(requests 3)
for k in 2 3; do
	b=before$k a=after$k
	before=${!b} after=${!a}
	[[ "$before $after" =~ ^[0-9]+\ [0-9]+$ ]] ||
		fail "idle: algo-$k's smtd_api_requests_total: '$before', '$after'"
	echo "idle: algo-$k answered $((after - before)) requests in 6 s"
	assert_eq "$((after - before))" 1 "idle: the requests algo-$k answered in 6 s, /metrics's own"
	# One connection of the leader's per worker: its fetch of the lines
	# carries the status's news too, and the watch rests (smtd(8) Channels).
	port=$(mh_exec "$k" "$SMTCTL" status --json | /usr/bin/python3 -c '
import json, sys
print((json.load(sys.stdin).get("channel") or {}).get("port", "-"))')
	held=$(mh_exec "$k" ss -Htn state established "( sport = :$port )" | wc -l)
	echo "idle: algo-$k holds $held connections of the leader's on port $port"
	assert_eq "$held" 1 "idle: the leader's connections to algo-$k's channel"
done
ends_well idle
mh_teardown

# ---- b. ssh ----
job ssh --channels ssh
n=$(leader_ssh)
[ "$n" -ge 2 ] || fail "ssh: the leader runs $n ssh processes, expected at least one per worker"
echo "ssh: the leader's ssh processes while the job runs: $n"
assert_not_contains "$(smtd_console 2)" "TCP channel" "ssh: algo-2 listens on no TCP channel"
ends_well ssh
mh_teardown

# ---- c. an address the leader cannot reach ----
lo3() {
	sed -i 's/"network_interface_name": "eth0"/"network_interface_name": "lo"/' \
		"$(mh_host_dir 3)/ml/input/config/resourceconfig.json"
}
PREPARE=lo3 job unreachable
assert_contains "$(smtd_console 3)" "TCP channel for the leader on 127.0.0.1 port" "unreachable: algo-3 on lo"
assert_contains "$(smtd_console 1)" "the TCP channel to algo-3 (127.0.0.1:" "unreachable: the leader's warning"
assert_contains "$(smtd_console 1)" "its channels go through ssh" "unreachable: the leader's warning"
ends_well unreachable
mh_teardown
echo ok
