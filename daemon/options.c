/*
 * options.c - smtd's command line and SMTD_* environment (see options.h).
 *
 * The environment is read first and the command line second, so that a
 * command-line option simply overwrites what a variable said.  Numbers are
 * read strictly - digits, and for seconds one decimal point - so that
 * " 2", "+2" or "1e-9" are refused rather than guessed at; a value quoted
 * in a message has its control characters escaped, so that every message
 * is one line.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "strv.h"
#include "options.h"
#include "restart.h"
#include "preflight.h"
#include "shellwords.h"
#include "smt_proto.h"

enum {
	OPT_ROOT = 256, OPT_SOCKET, OPT_SOCKET_GROUP, OPT_HEALTH_LISTEN, OPT_MPIRUN,
	OPT_SSHD_PATH, OPT_SSH_PATH, OPT_SMTCTL, OPT_PRELOAD, OPT_PROGRAM, OPT_MPI_OPTIONS,
	OPT_CURRENT_HOST, OPT_SSHD, OPT_MPI, OPT_NO_MPI, OPT_PPN, OPT_NP, OPT_WAIT_TIMEOUT,
	OPT_LAUNCH_TIMEOUT, OPT_RESULT_TIMEOUT, OPT_PEER_TIMEOUT, OPT_GRACE, OPT_LOG_FORMAT,
	OPT_DEBUG, OPT_DRY_RUN, OPT_JSON, OPT_HELP, OPT_VERSION, OPT_SSHD_CONFIG,
	OPT_RANK_LOG_DIR, OPT_PROGRESS_PATTERN, OPT_JOB_CGROUP, OPT_STALL_TIMEOUT,
	OPT_START_TIMEOUT, OPT_LAUNCH, OPT_MAX_RESTARTS, OPT_RESTART_DELAY,
	OPT_NO_INSTALL, OPT_NO_GPU_CHECK, OPT_NO_EFA_CHECK, OPT_MIN_SHM, OPT_MIN_FREE_DISK,
	OPT_PREFLIGHT_COMMAND, OPT_PREFLIGHT_TIMEOUT, OPT_RANK_STDOUT, OPT_CHANNELS,
	OPT_CHANNEL_REQUESTS,
};

static const struct option long_options[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "socket-group", required_argument, NULL, OPT_SOCKET_GROUP },
	{ "health-listen", required_argument, NULL, OPT_HEALTH_LISTEN },
	{ "mpirun", required_argument, NULL, OPT_MPIRUN },
	{ "sshd-path", required_argument, NULL, OPT_SSHD_PATH },
	{ "sshd-config", required_argument, NULL, OPT_SSHD_CONFIG },
	{ "ssh-path", required_argument, NULL, OPT_SSH_PATH },
	{ "smtctl", required_argument, NULL, OPT_SMTCTL },
	{ "preload", required_argument, NULL, OPT_PRELOAD },
	{ "program", required_argument, NULL, OPT_PROGRAM },
	{ "mpi-options", required_argument, NULL, OPT_MPI_OPTIONS },
	{ "current-host", required_argument, NULL, OPT_CURRENT_HOST },
	{ "sshd", required_argument, NULL, OPT_SSHD },
	{ "mpi", no_argument, NULL, OPT_MPI },
	{ "no-mpi", no_argument, NULL, OPT_NO_MPI },
	{ "launch", required_argument, NULL, OPT_LAUNCH },
	{ "processes-per-host", required_argument, NULL, OPT_PPN },
	{ "num-processes", required_argument, NULL, OPT_NP },
	{ "wait-timeout", required_argument, NULL, OPT_WAIT_TIMEOUT },
	{ "launch-timeout", required_argument, NULL, OPT_LAUNCH_TIMEOUT },
	{ "result-timeout", required_argument, NULL, OPT_RESULT_TIMEOUT },
	{ "peer-timeout", required_argument, NULL, OPT_PEER_TIMEOUT },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "rank-log-dir", required_argument, NULL, OPT_RANK_LOG_DIR },
	{ "rank-stdout", required_argument, NULL, OPT_RANK_STDOUT },
	{ "channels", required_argument, NULL, OPT_CHANNELS },
	{ "channel-requests", required_argument, NULL, OPT_CHANNEL_REQUESTS },
	{ "progress-pattern", required_argument, NULL, OPT_PROGRESS_PATTERN },
	{ "job-cgroup", required_argument, NULL, OPT_JOB_CGROUP },
	{ "stall-timeout", required_argument, NULL, OPT_STALL_TIMEOUT },
	{ "start-timeout", required_argument, NULL, OPT_START_TIMEOUT },
	{ "max-restarts", required_argument, NULL, OPT_MAX_RESTARTS },
	{ "restart-delay", required_argument, NULL, OPT_RESTART_DELAY },
	{ "no-install", no_argument, NULL, OPT_NO_INSTALL },
	{ "no-gpu-check", no_argument, NULL, OPT_NO_GPU_CHECK },
	{ "no-efa-check", no_argument, NULL, OPT_NO_EFA_CHECK },
	{ "min-shm", required_argument, NULL, OPT_MIN_SHM },
	{ "min-free-disk", required_argument, NULL, OPT_MIN_FREE_DISK },
	{ "preflight-command", required_argument, NULL, OPT_PREFLIGHT_COMMAND },
	{ "preflight-timeout", required_argument, NULL, OPT_PREFLIGHT_TIMEOUT },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "debug", no_argument, NULL, OPT_DEBUG },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* The usage text of --help. */
static void options_usage(FILE *out)
{
	fputs("Usage: smtd [OPTIONS] [-- COMMAND [ARG...]]\n"
	      "Per-host supervisor of an MPI training job (see smtd(8)).\n"
	      "\n"
	      "  --root DIR                 job directory (SMTD_ROOT; default /opt/ml)\n"
	      "  --socket PATH              control socket (SMTD_SOCKET; "
	      "default " SMT_SOCKET_DEFAULT ")\n"
	      "  --socket-group GROUP       group owning the socket (SMTD_SOCKET_GROUP)\n"
	      "  --health-listen ADDR:PORT  read-only HTTP probes over TCP (SMTD_HEALTH_LISTEN)\n"
	      "  --mpirun PATH              mpirun to run (SMTD_MPIRUN; default mpirun)\n"
	      "  --sshd auto|always|never   start sshd (SMTD_SSHD; default auto)\n"
	      "  --sshd-path PATH           sshd binary (SMTD_SSHD_PATH; default /usr/sbin/sshd)\n"
	      "  --sshd-config FILE         run sshd with -f FILE (SMTD_SSHD_CONFIG)\n"
	      "  --ssh-path PATH            ssh client (SMTD_SSH_PATH; default ssh)\n"
	      "  --channels tcp|ssh         the leader's channels to its workers after "
	      "readiness (SMTD_CHANNELS; default tcp)\n"
	      "  --channel-requests N       the leader's one-shot requests over TCP channels "
	      "at once\n                             (SMTD_CHANNEL_REQUESTS; default 64)\n"
	      "  --smtctl PATH              smtctl on every host (SMTD_SMTCTL)\n"
	      "  --preload PATH             libsmthostname.so for the ranks (SMTD_PRELOAD)\n"
	      "  --program NAME             program in the code directory (SAGEMAKER_PROGRAM)\n"
	      "  --mpi, --no-mpi            run under MPI or standalone (SMTD_MPI_ENABLED)\n"
	      "  --launch KIND              auto, standalone, mpi, smddp or torchrun "
	      "(SMTD_LAUNCH)\n"
	      "  --mpi-options WORDS        custom mpirun options (SMTD_MPI_OPTIONS)\n"
	      "  --processes-per-host N     ranks per host (SMTD_PROCESSES_PER_HOST)\n"
	      "  --num-processes N          ranks in all (SMTD_NUM_PROCESSES)\n"
	      "  --current-host NAME        this host's name (SMTD_CURRENT_HOST)\n"
	      "  --wait-timeout S           peers ready (SMTD_WAIT_TIMEOUT; default 3600)\n"
	      "  --launch-timeout S         orted appears (SMTD_LAUNCH_TIMEOUT; default 600)\n"
	      "  --result-timeout S         result after orted exit (SMTD_RESULT_TIMEOUT; default "
	      "60)\n"
	      "  --peer-timeout S           lost peer channel (SMTD_PEER_TIMEOUT; default 10)\n"
	      "  --grace S                  signal to SIGKILL (SMTD_GRACE; default 30)\n"
	      "  --rank-log-dir DIR         each rank's lines to DIR/rank-N.log "
	      "(SMTD_RANK_LOG_DIR)\n"
	      "  --rank-stdout pipe|tty     a rank's stdout: a line-buffered pipe or a terminal "
	      "(SMTD_RANK_STDOUT; default pipe)\n"
	      "  --stall-timeout S          no progress for S seconds: stalled "
	      "(SMTD_STALL_TIMEOUT)\n"
	      "  --start-timeout S          no first line within S seconds: stalled "
	      "(SMTD_START_TIMEOUT)\n"
	      "  --progress-pattern REGEX   only matching lines count as progress "
	      "(SMTD_PROGRESS_PATTERN)\n"
	      "  --max-restarts N           restart a failed or stalled job N times "
	      "(SMTD_MAX_RESTARTS)\n"
	      "  --restart-delay S          wait S seconds between attempts (SMTD_RESTART_DELAY)\n"
	      "  --job-cgroup auto|never    put the job in a cgroup v2 of its own "
	      "(SMTD_JOB_CGROUP)\n"
	      "  --no-install               do not pip-install the code directory "
	      "(SMTD_NO_INSTALL)\n"
	      "  --no-gpu-check             no check of the GPUs before the launch\n"
	      "  --no-efa-check             no check of the EFA devices before the launch\n"
	      "  --min-shm SIZE             /dev/shm at least SIZE (SMTD_MIN_SHM; default 1G, 0: "
	      "off)\n"
	      "  --min-free-disk SIZE       free disk under model, output, checkpoints "
	      "(SMTD_MIN_FREE_DISK;\n"
	      "                             default 1G, 0: off)\n"
	      "  --preflight-command CMD    run on every host before the launch "
	      "(SMTD_PREFLIGHT_COMMAND)\n"
	      "  --preflight-timeout S      its time limit (SMTD_PREFLIGHT_TIMEOUT; default 600)\n"
	      "  --log-format text|json     format of the output (SMTD_LOG_FORMAT)\n"
	      "  --debug                    debug messages (SMTD_DEBUG)\n"
	      "  --dry-run                  print the plan and exit\n"
	      "  --json                     with --dry-run: print the plan as JSON\n"
	      "  --help                     this text\n"
	      "  --version                  the version\n"
	      "\n"
	      "Command-line options win over SMTD_* variables, which win over\n"
	      "hyperparameters.json, then resourceconfig.json.  Timeouts are seconds,\n"
	      "at least 1 (--grace: at least 0.1).\n",
	      out);
}

static int parse_bool(const char *text, int *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(text, yes[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(text, no[i]) == 0)
			return *out = 0, 0;
	}
	return -EINVAL;
}

void smt_options_quote(const char *text, char *out, size_t outlen)
{
	size_t o = 0, i;

	if (outlen < 8) {
		if (outlen)
			out[0] = '\0';
		return;
	}
	out[o++] = '\'';
	for (i = 0; text[i] && o + 8 < outlen && i < SMT_OPTIONS_QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c == '\n')
			o += (size_t)snprintf(out + o, outlen - o, "\\n");
		else if (c == '\r')
			o += (size_t)snprintf(out + o, outlen - o, "\\r");
		else if (c == '\t')
			o += (size_t)snprintf(out + o, outlen - o, "\\t");
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (text[i] && o + 5 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '\'';
	out[o] = '\0';
}

static int has_control(const char *text)
{
	for (; *text; text++)
		if ((unsigned char)*text < 0x20 || *text == 0x7f)
			return 1;
	return 0;
}

/* Digits only: no sign, no space, no exponent. */
static int parse_count(const char *what, const char *text, long *out, char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];
	size_t len = strlen(text);

	if (len == 0 || len > 7 || strspn(text, "0123456789") != len || text[0] == '0' ||
	    atol(text) > SMT_OPTIONS_COUNT_MAX) {
		smt_options_quote(text, shown, sizeof(shown));
		snprintf(err, errlen, "%s: %s is not a positive integer (1 to %d)", what, shown,
			 SMT_OPTIONS_COUNT_MAX);
		return -EINVAL;
	}
	*out = atol(text);
	return 0;
}

/* Digits with at most one decimal point between digits: "30", "2.5". */
static int parse_seconds(const char *what, const char *text, double min, double *out,
			 char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];
	size_t whole = strspn(text, "0123456789"), frac = 0;
	double v = 0;

	if (text[whole] == '.')
		frac = strspn(text + whole + 1, "0123456789");
	int ok = whole > 0 && whole <= 10 &&
		 (text[whole] == '\0' || (text[whole] == '.' && frac > 0 &&
					  text[whole + 1 + frac] == '\0'));
	if (ok) {
		v = strtod(text, NULL);
		ok = v >= min && v <= SMT_OPTIONS_SECONDS_MAX;
	}
	if (!ok) {
		smt_options_quote(text, shown, sizeof(shown));
		snprintf(err, errlen, "%s: %s is not a number of seconds from %g to %.0f "
			 "(digits and at most one decimal point, like 30 or 2.5)", what, shown, min,
			 SMT_OPTIONS_SECONDS_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* ADDR:PORT with a numeric address, as the TCP listener takes it. */
static int parse_listen(const char *what, const char *text, char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];
	struct sockaddr_storage ss;

	if (smt_api_parse_listen(text, &ss) == 0)
		return 0;
	smt_options_quote(text, shown, sizeof(shown));
	snprintf(err, errlen, "%s: %s is not ADDR:PORT with a numeric address and a port "
		 "from 0 to 65535 (127.0.0.1:8080, [::1]:8080, or :8080 for every address)",
		 what, shown);
	return -EINVAL;
}

/*
 * TEXT as one of NAMES (N of them): its index in *OUT, or a message that
 * lists them all.
 */
static int parse_choice(const char *what, const char *text, const char *const *names, size_t n,
			int *out, char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];
	size_t o;

	*out = 0; /* GCC 12 at -O2 cannot see that callers read it only on success. */
	for (size_t i = 0; i < n; i++)
		if (strcmp(text, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	smt_options_quote(text, shown, sizeof(shown));
	o = (size_t)snprintf(err, errlen, "%s: %s is not one of", what, shown);
	for (size_t i = 0; i < n && o < errlen; i++)
		o += (size_t)snprintf(err + o, errlen - o, "%s %s", i ? "," : "", names[i]);
	return -EINVAL;
}

#define CHOICES(a) (a), sizeof(a) / sizeof((a)[0])

/* A path or a name: not empty, and no control character, which would
 * break every message that names it. */
static int plain_string(const char *what, const char *text, char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];

	if (!*text) {
		snprintf(err, errlen, "%s: the value is empty", what);
		return -EINVAL;
	}
	if (has_control(text)) {
		smt_options_quote(text, shown, sizeof(shown));
		snprintf(err, errlen, "%s: %s contains a control character; remove it", what,
			 shown);
		return -EINVAL;
	}
	return 0;
}

static int bad_bool(const char *what, const char *text, char *err, size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];

	smt_options_quote(text, shown, sizeof(shown));
	snprintf(err, errlen, "%s: %s is not one of true, false, 1, 0 (or yes, no, on, off)",
		 what, shown);
	return -EINVAL;
}

/* Apply one setting, named WHAT in messages, from either source. */
static int apply(struct smt_options *o, int id, const char *what, const char *val, char *err,
		 size_t errlen)
{
	const char **str = NULL;
	double *secs = NULL, min = SMT_OPTIONS_TIMEOUT_MIN;

	switch (id) {
	case OPT_ROOT: str = &o->root; break;
	case OPT_SOCKET: str = &o->socket_path; break;
	case OPT_SOCKET_GROUP: str = &o->socket_group; break;
	case OPT_HEALTH_LISTEN: str = &o->health_listen; break;
	case OPT_MPIRUN: str = &o->mpirun_path; break;
	case OPT_SSHD_PATH: str = &o->sshd_path; break;
	case OPT_SSHD_CONFIG: str = &o->sshd_config; break;
	case OPT_SSH_PATH: str = &o->ssh_path; break;
	case OPT_SMTCTL: str = &o->smtctl_path; break;
	case OPT_PRELOAD: str = &o->preload_path; break;
	case OPT_PROGRAM: str = &o->program; break;
	case OPT_CURRENT_HOST: str = &o->current_host; break;
	case OPT_RANK_LOG_DIR: str = &o->rank_log_dir; break;
	case OPT_PROGRESS_PATTERN: {
		regex_t re;
		char quoted[SMT_OPTIONS_QUOTE_SIZE], msg[128];
		int rc;

		if (plain_string(what, val, err, errlen) < 0)
			return -EINVAL;
		rc = regcomp(&re, val, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			regerror(rc, &re, msg, sizeof(msg));
			smt_options_quote(val, quoted, sizeof(quoted));
			snprintf(err, errlen,
				 "%s: %s is not a POSIX extended regular expression: %s", what,
				 quoted, msg);
			return -EINVAL;
		}
		regfree(&re);
		str = &o->progress_pattern;
		break;
	}
	case OPT_JOB_CGROUP: {
		/* In the order of enum smt_job_cgroup_mode. */
		static const char *const modes[] = { "auto", "never" };
		int k;

		if (parse_choice(what, val, CHOICES(modes), &k, err, errlen) < 0)
			return -EINVAL;
		o->job_cgroup = (enum smt_job_cgroup_mode)k;
		return 0;
	}
	case OPT_STALL_TIMEOUT:
	case OPT_START_TIMEOUT:
		/* "0" switches the watchdog off, also against the hyperparameter. */
		if (strcmp(val, "0") == 0) {
			*(id == OPT_STALL_TIMEOUT ? &o->stall_timeout : &o->start_timeout) = -1;
			return 0;
		}
		secs = id == OPT_STALL_TIMEOUT ? &o->stall_timeout : &o->start_timeout;
		break;
	case OPT_MPI_OPTIONS:
		/* Empty custom options are legitimate: they override the file's. */
		o->mpi_options = val;
		return 0;
	case OPT_SSHD: {
		/* In the order of enum smt_sshd_mode. */
		static const char *const modes[] = { "auto", "always", "never" };
		int k;

		if (parse_choice(what, val, CHOICES(modes), &k, err, errlen) < 0)
			return -EINVAL;
		o->sshd_mode = (enum smt_sshd_mode)k;
		return 0;
	}
	case OPT_RANK_STDOUT: {
		/* In the order of enum smt_rank_stdout. */
		static const char *const kinds[] = { "pipe", "tty" };
		int k;

		if (parse_choice(what, val, CHOICES(kinds), &k, err, errlen) < 0)
			return -EINVAL;
		o->rank_stdout = (enum smt_rank_stdout)k;
		return 0;
	}
	case OPT_CHANNELS: {
		/* In the order of enum smt_channels. */
		static const char *const kinds[] = { "tcp", "ssh" };
		int k;

		if (parse_choice(what, val, CHOICES(kinds), &k, err, errlen) < 0)
			return -EINVAL;
		o->channels = (enum smt_channels)k;
		return 0;
	}
	case OPT_MPI:
		if (!val)
			return o->mpi_enabled = 1, 0;
		if (parse_bool(val, &o->mpi_enabled) == 0)
			return 0;
		return bad_bool(what, val, err, errlen);
	case OPT_NO_MPI: o->mpi_enabled = 0; return 0;
	case OPT_LAUNCH: {
		/* smt_launch_name()'s names, and auto: the hyperparameters decide. */
		static const char *const kinds[] = {"auto", "standalone", "mpi", "smddp",
						    "torchrun"};
		int k;

		if (parse_choice(what, val, CHOICES(kinds), &k, err, errlen) < 0)
			return -EINVAL;
		o->launch = k ? val : NULL;
		return 0;
	}
	case OPT_MAX_RESTARTS:
		/* 0 is a count here: no restart, also against the hyperparameter. */
		if (strcmp(val, "0") == 0)
			return o->max_restarts = 0, 0;
		if (parse_count(what, val, &o->max_restarts, err, errlen) < 0)
			return -EINVAL;
		if (o->max_restarts > SMT_RESTART_MAX) {
			snprintf(err, errlen, "%s: %ld is more than %d restarts", what,
				 o->max_restarts, SMT_RESTART_MAX);
			return -EINVAL;
		}
		return 0;
	case OPT_RESTART_DELAY:
		if (strcmp(val, "0") == 0)
			return o->restart_delay = 0, 0;
		secs = &o->restart_delay;
		min = 0.001;
		break;
	case OPT_PPN: return parse_count(what, val, &o->processes_per_host, err, errlen);
	case OPT_CHANNEL_REQUESTS:
		return parse_count(what, val, &o->channel_requests, err, errlen);
	case OPT_NP: return parse_count(what, val, &o->num_processes, err, errlen);
	case OPT_WAIT_TIMEOUT: secs = &o->wait_timeout; break;
	case OPT_LAUNCH_TIMEOUT: secs = &o->launch_timeout; break;
	case OPT_RESULT_TIMEOUT: secs = &o->result_timeout; break;
	case OPT_PEER_TIMEOUT: secs = &o->peer_timeout; break;
	case OPT_GRACE: secs = &o->grace; min = SMT_OPTIONS_GRACE_MIN; break;
	case OPT_LOG_FORMAT: {
		static const char *const formats[] = { "text", "json" };

		return parse_choice(what, val, CHOICES(formats), &o->log_json, err, errlen);
	}
	case OPT_DEBUG:
		if (!val)
			return o->debug = 1, 0;
		if (parse_bool(val, &o->debug) == 0)
			return 0;
		return bad_bool(what, val, err, errlen);
	case OPT_NO_INSTALL:
		if (!val)
			return o->no_install = 1, 0;
		if (parse_bool(val, &o->no_install) == 0)
			return 0;
		return bad_bool(what, val, err, errlen);
	case OPT_NO_GPU_CHECK: o->gpu_check = 0; return 0;
	case OPT_NO_EFA_CHECK: o->efa_check = 0; return 0;
	case OPT_MIN_SHM:
	case OPT_MIN_FREE_DISK: {
		uint64_t v;

		if (smt_preflight_parse_size(what, val, &v, err, errlen) < 0)
			return -EINVAL;
		*(id == OPT_MIN_SHM ? &o->min_shm : &o->min_free_disk) = (long long)v;
		return 0;
	}
	case OPT_PREFLIGHT_COMMAND: {
		char **words = NULL;
		size_t n = 0;
		char msg[256];

		if (plain_string(what, val, err, errlen) < 0)
			return -EINVAL;
		/* Split as words, never given to a shell: its quoting is checked now. */
		if (smt_shellwords_split(val, &words, &n, msg, sizeof(msg)) < 0) {
			snprintf(err, errlen, "%s: %s; fix the quoting", what, msg);
			return -EINVAL;
		}
		smt_strv_free(words);
		if (n == 0) {
			snprintf(err, errlen, "%s: the value has no word to run", what);
			return -EINVAL;
		}
		o->preflight_command = val;
		return 0;
	}
	case OPT_PREFLIGHT_TIMEOUT: secs = &o->preflight_timeout; break;
	case OPT_DRY_RUN: o->dry_run = 1; return 0;
	case OPT_JSON: o->json = 1; return 0;
	default: break;
	}
	if (str) {
		if (plain_string(what, val, err, errlen) < 0 ||
		    (id == OPT_HEALTH_LISTEN && parse_listen(what, val, err, errlen) < 0))
			return -EINVAL;
		*str = val;
		return 0;
	}
	if (secs)
		return parse_seconds(what, val, min, secs, err, errlen);
	return 0;
}

static const struct {
	const char *name;
	int id;
} env_names[] = {
	{ "SMTD_ROOT", OPT_ROOT }, { "SMTD_SOCKET", OPT_SOCKET },
	{ "SMTD_SOCKET_GROUP", OPT_SOCKET_GROUP }, { "SMTD_HEALTH_LISTEN", OPT_HEALTH_LISTEN },
	{ "SMTD_MPIRUN", OPT_MPIRUN }, { "SMTD_SSHD_PATH", OPT_SSHD_PATH },
	{ "SMTD_SSHD_CONFIG", OPT_SSHD_CONFIG },
	{ "SMTD_SSH_PATH", OPT_SSH_PATH }, { "SMTD_SMTCTL", OPT_SMTCTL },
	{ "SMTD_PRELOAD", OPT_PRELOAD }, { "SAGEMAKER_PROGRAM", OPT_PROGRAM },
	{ "SMTD_MPI_OPTIONS", OPT_MPI_OPTIONS }, { "SMTD_CURRENT_HOST", OPT_CURRENT_HOST },
	{ "SMTD_SSHD", OPT_SSHD }, { "SMTD_MPI_ENABLED", OPT_MPI }, { "SMTD_LAUNCH", OPT_LAUNCH },
	{ "SMTD_PROCESSES_PER_HOST", OPT_PPN }, { "SMTD_NUM_PROCESSES", OPT_NP },
	{ "SMTD_WAIT_TIMEOUT", OPT_WAIT_TIMEOUT }, { "SMTD_LAUNCH_TIMEOUT", OPT_LAUNCH_TIMEOUT },
	{ "SMTD_RESULT_TIMEOUT", OPT_RESULT_TIMEOUT }, { "SMTD_PEER_TIMEOUT", OPT_PEER_TIMEOUT },
	{ "SMTD_GRACE", OPT_GRACE }, { "SMTD_LOG_FORMAT", OPT_LOG_FORMAT },
	{ "SMTD_DEBUG", OPT_DEBUG }, { "SMTD_RANK_LOG_DIR", OPT_RANK_LOG_DIR },
	{ "SMTD_PROGRESS_PATTERN", OPT_PROGRESS_PATTERN }, { "SMTD_JOB_CGROUP", OPT_JOB_CGROUP },
	{ "SMTD_STALL_TIMEOUT", OPT_STALL_TIMEOUT }, { "SMTD_START_TIMEOUT", OPT_START_TIMEOUT },
	{ "SMTD_MAX_RESTARTS", OPT_MAX_RESTARTS }, { "SMTD_RESTART_DELAY", OPT_RESTART_DELAY },
	{ "SMTD_NO_INSTALL", OPT_NO_INSTALL }, { "SMTD_MIN_SHM", OPT_MIN_SHM },
	{ "SMTD_MIN_FREE_DISK", OPT_MIN_FREE_DISK },
	{ "SMTD_PREFLIGHT_COMMAND", OPT_PREFLIGHT_COMMAND },
	{ "SMTD_PREFLIGHT_TIMEOUT", OPT_PREFLIGHT_TIMEOUT },
	{ "SMTD_RANK_STDOUT", OPT_RANK_STDOUT }, { "SMTD_CHANNELS", OPT_CHANNELS },
	{ "SMTD_CHANNEL_REQUESTS", OPT_CHANNEL_REQUESTS },
};

static const struct option *find_long(int val)
{
	for (const struct option *lo = long_options; lo->name; lo++)
		if (lo->val == val)
			return lo;
	return NULL;
}

static void defaults(struct smt_options *o)
{
	memset(o, 0, sizeof(*o));
	o->sshd_mode = SMT_SSHD_AUTO;
	o->mpi_enabled = -1;
	o->processes_per_host = -1;
	o->num_processes = -1;
	o->wait_timeout = o->launch_timeout = o->result_timeout = -1;
	o->peer_timeout = o->grace = -1;
	o->max_restarts = -1;
	o->channel_requests = -1;
	o->gpu_check = o->efa_check = -1;
	o->min_shm = o->min_free_disk = -1;
	o->preflight_timeout = -1;
}

int smt_options_parse(struct smt_options *opts, int argc, char **argv, char **envp,
		      char *err, size_t errlen)
{
	char what[64];
	int c, idx;

	defaults(opts);
	for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++) {
		const char *val = smt_env_get(envp, env_names[i].name);

		if (!val)
			continue;
		/* An empty variable is the same as an unset one, as in most daemons. */
		if (!*val && env_names[i].id != OPT_MPI_OPTIONS)
			continue;
		snprintf(what, sizeof(what), "%s", env_names[i].name);
		if (apply(opts, env_names[i].id, what, val, err, errlen) < 0)
			return -EINVAL;
	}
	opts->gpu_probe_root = smt_env_get(envp, "SMTD_GPU_PROBE_ROOT");

	/* getopt keeps its state in globals; optind = 0 restarts it fully. */
	optind = 0;
	opterr = 0;
	for (;;) {
		idx = -1;
		c = getopt_long(argc, argv, "+", long_options, &idx);
		if (c == -1)
			break;
		if (c == '?') {
			const char *arg = argv[optind - 1];

			const struct option *lo = find_long(optopt);

			char shown[SMT_OPTIONS_QUOTE_SIZE];

			smt_options_quote(arg, shown, sizeof(shown));
			if (optopt > 32 && optopt < 127)
				snprintf(err, errlen, "unknown option '-%c'", optopt);
			else if (lo && lo->has_arg)
				snprintf(err, errlen, "option '--%s' needs a value", lo->name);
			else if (lo)
				snprintf(err, errlen, "option '--%s' takes no value", lo->name);
			else
				snprintf(err, errlen, "unknown option %s", shown);
			return -EINVAL;
		}
		if (c == OPT_HELP) {
			options_usage(stdout);
			return SMT_OPTIONS_EXIT;
		}
		if (c == OPT_VERSION) {
			printf("smtd %s\n", PACKAGE_VERSION);
			return SMT_OPTIONS_EXIT;
		}
		snprintf(what, sizeof(what), "--%s", find_long(c) ? find_long(c)->name : "?");
		if (apply(opts, c, what, optarg, err, errlen) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			char shown[SMT_OPTIONS_QUOTE_SIZE];

			smt_options_quote(argv[optind], shown, sizeof(shown));
			snprintf(err, errlen, "unexpected argument %s; put the command after '--'",
				 shown);
			return -EINVAL;
		}
		opts->command = argv + optind;
		opts->command_argc = argc - optind;
	}
	if (opts->json && !opts->dry_run) {
		snprintf(err, errlen, "--json only goes with --dry-run");
		return -EINVAL;
	}
	return 0;
}

void smt_options_free(struct smt_options *opts)
{
	/* Everything points into argv and envp; nothing is owned yet. */
	opts->priv_ = NULL;
}
