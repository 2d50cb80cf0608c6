/*
 * smt_proto.h - the control API shared by smtd and smtctl.
 *
 * Everything a client and the daemon must agree on lives here: request
 * paths, JSON field names, the names of roles and states, signal names and
 * the exit codes of both programs.  The daemon renders these names and the
 * client parses them; neither spells them out on its own.
 */
#ifndef SMT_PROTO_H
#define SMT_PROTO_H



/* Default control socket (smtd(8) The control API), overridden by --socket / SMTD_SOCKET. */
#define SMT_SOCKET_DEFAULT "/run/smtd/smtd.sock"
/* The environment variable naming the socket, for smtd and smtctl alike. */
#define SMT_ENV_SOCKET "SMTD_SOCKET"

/* Request paths. */
#define SMT_PATH_STATUS  "/v1/status"
#define SMT_PATH_KILL    "/v1/kill"
#define SMT_PATH_LOGS    "/v1/logs"
#define SMT_PATH_HEALTHZ "/healthz"
#define SMT_PATH_READYZ  "/readyz"
#define SMT_PATH_METRICS "/metrics"
/* Leader -> worker: the job's result (POST, JSON body). */
#define SMT_PATH_RESULT  "/v1/result"
/* Leader -> worker: the leader is about to launch (POST). */
#define SMT_PATH_LAUNCH  "/v1/launch"
/* exec-orted hook -> local daemon: the Open MPI daemon's PID (POST). */
#define SMT_PATH_ORTED   "/v1/orted"
/* Leader -> worker: the worker's rank output, from an offset (GET,
 * ?from=N&max=BYTES&wait=MS; the body is lineproto records). */
#define SMT_PATH_LINES   "/v1/lines"
/* Leader -> worker: end the job on that host now (POST {"signal","grace"}). */
#define SMT_PATH_END     "/v1/end"
/* The stacks of every rank (POST; smtd(8) Stalls). */
#define SMT_PATH_STACKS  "/v1/stacks"
/* POST: restart the running job (smtd(8) Restarts); the leader to a worker:
 * the next attempt begins ({"attempt":K,"failure":SUMMARY}). */
#define SMT_PATH_RESTART "/v1/restart"
#define SMT_PATH_ATTEMPT "/v1/attempt"

/* The rank launcher's socket: the control socket's path and this. */
#define SMT_RANKS_SUFFIX ".ranks"
/* The leader's channels: requests that carry this header (from uid 0 or
 * the daemon's own, on the Unix socket) come from the leader. */
#define SMT_HEADER_LEADER "X-Smtd-Leader"
/* A worker's TCP channel (smtd(8) Channels): every request on it carries
 * the job's channel token in this header, SMT_TOKEN_HEX hex digits, or is
 * refused with 403 before anything else is read of it.  The token and the
 * channel's address reach the leader only in the answer to its readiness
 * probe over ssh (SMT_F_CHANNEL in a leader's GET /v1/status). */
#define SMT_HEADER_TOKEN "X-Smtd-Token"
#define SMT_TOKEN_HEX 64

/* Limits of a request (smtd(8) The control API). */
#define SMT_MAX_HEADER_BYTES (8 * 1024)
#define SMT_MAX_BODY_BYTES   (64 * 1024)

/* Content types of the answers: JSON everywhere, Prometheus text on /metrics. */
#define SMT_CONTENT_TYPE_JSON    "application/json"
#define SMT_CONTENT_TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"
/* GET /v1/lines: rank output records (daemon/lineproto.h). */
#define SMT_CONTENT_TYPE_LINES   "application/octet-stream"

/* Query parameters of GET /v1/logs?tail=N&rank=R, and their bounds. */
#define SMT_Q_TAIL "tail"
#define SMT_Q_RANK "rank"
/* GET /v1/status?wait=GEN&timeout=MS (a long poll), GET /v1/lines?from=N&max=B. */
#define SMT_Q_WAIT    "wait"
#define SMT_Q_TIMEOUT "timeout"
#define SMT_Q_FROM    "from"
/* GET /v1/status?brief=1 (the leader's probes and watches of a worker): the
 * host list is replaced by SMT_F_HOSTS_DIGEST, so that what the leader
 * reads and parses per answer does not grow with the job's hosts. */
#define SMT_Q_BRIEF   "brief"
#define SMT_Q_MAX     "max"
/* ...&keep=1 on either long poll (the leader on a worker's TCP channel
 * only): held until there is something to answer, however long; the
 * connection's TCP keepalive tells each end whether the other lives
 * (daemon/tcpchannel.h). */
#define SMT_Q_KEEP    "keep"
/* GET /v1/lines?...&gen=G (the leader, whose watch of the worker's status
 * then rests): while the status's generation is G the fetch is the lines';
 * once it is not, the answer is the brief status (SMT_CONTENT_TYPE_JSON)
 * instead of lines, and the leader asks again from the same offset.  One
 * held request per worker then carries both its output and its news. */
#define SMT_Q_GEN     "gen"
#define SMT_LOGS_TAIL_DEFAULT 100
#define SMT_LOGS_TAIL_MAX     100000
/* POST /v1/stacks {"timeout_ms": N}: how long each host has to read its
 * ranks' stacks live, unless asked otherwise, and at most. */
#define SMT_STACKS_TIMEOUT_S     10
#define SMT_STACKS_TIMEOUT_MAX_S 60

/* The highest signal number POST /v1/kill accepts (smt_signal_parse too). */
#define SMT_SIGNAL_MAX 64

/* JSON field names of /v1/status and the other bodies. */
#define SMT_F_ROLE         "role"
#define SMT_F_STATE        "state"
#define SMT_F_CURRENT_HOST "current_host"
#define SMT_F_LEADER       "leader"
#define SMT_F_HOSTS        "hosts"
#define SMT_F_HOST         "host"
#define SMT_F_READY        "ready"
#define SMT_F_JOB          "job"
#define SMT_F_PID          "pid"
#define SMT_F_START_TIME   "start_time"
#define SMT_F_RANKS        "ranks"
#define SMT_F_RANK         "rank"
#define SMT_F_EXIT_CODE    "exit_code"
#define SMT_F_SIGNAL       "signal"
/* A worker's end of output: the signal that stopped that host itself (a
 * signal to its smtd, or smtctl kill there), absent otherwise. */
#define SMT_F_STOPPED      "stopped"
#define SMT_F_FAILURE      "failure"
#define SMT_F_UPTIME       "uptime_s"
#define SMT_F_VERSION      "version"
#define SMT_F_SSHD_RESTARTS "sshd_restarts"
#define SMT_F_LINES        "lines"
#define SMT_F_ERROR        "error"
#define SMT_F_SUMMARY      "summary"
#define SMT_F_STREAM       "stream"
#define SMT_F_TEXT         "text"
#define SMT_F_TIME         "time"
#define SMT_F_GENERATION   "generation"
#define SMT_F_HOSTS_DIGEST "hosts_digest"
#define SMT_F_PREFLIGHT    "preflight"
/* {"address": A, "port": P[, "token": T]}: a worker's TCP channel; the token
 * only for the leader. */
#define SMT_F_CHANNEL      "channel"
#define SMT_F_ADDRESS      "address"
#define SMT_F_PORT         "port"
#define SMT_F_TOKEN        "token"
/* A host's pre-launch result (daemon/prelaunch.h) and its checks. */
#define SMT_F_ATTEMPT      "attempt"
#define SMT_F_INSTANCE_TYPE "instance_type"
#define SMT_F_CHECKS       "checks"
#define SMT_F_CHECK        "check"
#define SMT_F_DETAIL       "detail"
#define SMT_F_WARNING      "warning"
#define SMT_F_GPUS         "gpus"
#define SMT_F_MICROSECONDS "microseconds"
#define SMT_F_BUILTIN_MICROSECONDS "builtin_microseconds"
/* {"status": "ok"|"unhealthy"} of /healthz, "ready"|"not ready" of /readyz. */
#define SMT_F_STATUS       "status"
/* Rank lines (--log-format json, GET /v1/logs). */
#define SMT_F_LINE         "line"
#define SMT_F_LINE_B64     "line_b64"
#define SMT_F_PARTIAL      "partial"
#define SMT_F_TRUNCATED    "truncated"
/* Ranks in /v1/status (job.ranks) and in a worker's end of output. */
#define SMT_F_BYTES        "bytes"
#define SMT_F_LAST_LINE    "last_line_s"
#define SMT_F_LAST_LINE_MS "last_line_ms"
#define SMT_F_LAST_PROGRESS_MS "last_progress_ms"
#define SMT_F_SINCE_PROGRESS "since_progress_s"
#define SMT_F_CPU          "cpu_s"
#define SMT_F_END_TIME     "end_time"
#define SMT_F_END_MS       "end_ms"
#define SMT_F_SIGNALED_MS  "signaled_ms"
#define SMT_F_EXEC_ERRNO   "exec_errno"
#define SMT_F_ERROR_LINE   "error_line"
#define SMT_F_TAIL         "tail"
/* How a rank died, as its host saw it (daemon/crash.h); "maxrss_kb" also
 * in the launcher's exit message. */
#define SMT_F_CRASH_WHERE  "died_in"
#define SMT_F_OOM          "oom"
#define SMT_F_MAXRSS_KB    "maxrss_kb"
#define SMT_F_MEM_LIMIT    "mem_limit"
#define SMT_F_MEM_LIMIT_OF "mem_limit_of"
#define SMT_F_SHM_SIZE     "shm_size"
#define SMT_F_SHM_USED     "shm_used"
#define SMT_F_SHM_MIN      "shm_min"
#define SMT_F_BUS_ERROR    "bus_error"
/* The rank launcher's protocol (daemon/rankd.h). */
#define SMT_F_OP           "op"
#define SMT_F_OK           "ok"
#define SMT_F_LOCAL_RANK   "local_rank"
#define SMT_F_PROGRAM      "program"
#define SMT_F_ENV          "env"
#define SMT_F_ENV_DEFAULT  "env_default"
#define SMT_F_STDOUT_PRELOAD "stdout_preload"
/* A rank's stdout pipe, DEVICE:INODE, for libsmtlinebuf.so (smtd(8) A
 * rank's standard output). */
#define SMT_ENV_STDOUT_PIPE "SMTD_STDOUT_PIPE"
#define SMT_F_ARGV         "argv"
/* A worker's end of output and the leader's end message. */
#define SMT_F_GRACE        "grace"
#define SMT_F_MODE         "mode"
#define SMT_F_ATTEMPT      "attempt"
#define SMT_F_RESTARTS     "restarts"
#define SMT_F_MAX_RESTARTS "max_restarts"
#define SMT_F_REASON       "reason"
#define SMT_F_COMMAND      "command"
/* Stacks (POST /v1/stacks, a stalled job). */
#define SMT_F_STACK        "stack"
#define SMT_F_STACKS       "stacks"
/* The leader's POST /v1/stacks to a worker: the reads' time limit (ms). */
#define SMT_F_TIMEOUT_MS   "timeout_ms"
/* ... and, in abort mode, how long the ranks stay stopped before their
 * SIGABRT (ms): until the request has reached every host (collect.h). */
#define SMT_F_FREEZE_MS    "freeze_ms"
/* A collection's result, grouped (GET /v1/stacks, daemon/stackgroup.c). */
#define SMT_F_GROUPS       "groups"
#define SMT_F_POSITION     "position"
#define SMT_F_MAJORITY     "majority"
#define SMT_F_ODD          "odd"
#define SMT_F_QUIET_FIRST  "quiet_first"
#define SMT_F_UNREADABLE   "unreadable"
#define SMT_F_TOOL         "tool"
#define SMT_F_QUIET        "quiet_s"
#define SMT_F_ID           "id"

enum smt_role {
	SMT_ROLE_STANDALONE = 0,
	SMT_ROLE_LEADER,
	SMT_ROLE_WORKER,
	SMT_ROLE_COUNT
};

/* The life cycle of smtd(8) Roles; a role goes through its own subset in order. */
enum smt_state {
	SMT_STATE_STARTING = 0,
	SMT_STATE_WAITING_FOR_PEERS,
	SMT_STATE_WAITING_FOR_LEADER,
	SMT_STATE_LAUNCHING,
	SMT_STATE_RUNNING,
	SMT_STATE_FINISHING,
	SMT_STATE_SUCCEEDED,
	SMT_STATE_FAILED,
	SMT_STATE_STOPPED,
	SMT_STATE_COUNT
};

/* Exit codes of smtd (smtd(8) OUTPUT); 128+N when stopped by signal N. */
enum smt_exit {
	SMT_EXIT_OK = 0,
	SMT_EXIT_JOB_FAILED = 1,
	SMT_EXIT_CONFIG = 2,
	SMT_EXIT_PEER = 3
};

/* Exit codes of smtctl (smtd(8) The control API). */
enum smtctl_exit {
	SMTCTL_EXIT_OK = 0,
	SMTCTL_EXIT_NOT_OK = 1,
	SMTCTL_EXIT_USAGE = 2,
	SMTCTL_EXIT_UNREACHABLE = 3,
	SMTCTL_EXIT_DENIED = 4
};

/* "leader", "worker", "standalone"; NULL for an out-of-range value. */
const char *smt_role_name(enum smt_role role);

/* "starting", "waiting-for-peers", ... ; NULL for an out-of-range value. */
const char *smt_state_name(enum smt_state state);
/* The state named NAME, or -1. */
int smt_state_parse(const char *name);
/* Nonzero for succeeded, failed and stopped. */
int smt_state_is_final(enum smt_state state);

/*
 * Signal names without the SIG prefix ("TERM", "KILL", ...).  Parsing
 * accepts "TERM", "SIGTERM", any case, and decimal numbers 1..64; it
 * returns the signal number or -1.  smt_signal_name returns NULL for a
 * number without a name (real-time signals).
 */
int smt_signal_parse(const char *text);
const char *smt_signal_name(int signo);

#endif
