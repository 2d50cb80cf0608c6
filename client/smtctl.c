/*
 * smtctl.c - the command-line client of smtd (smtd(8) The control API).
 *
 * Each command is one HTTP request over the daemon's Unix socket, made
 * with libcurl, and one exit code: 0 ok; 1 unhealthy, not ready or the job
 * failed; 2 usage; 3 the daemon cannot be reached (or what answers is not
 * smtd, or libcurl cannot be loaded); 4 permission denied.  Errors are one
 * line on stderr.  libcurl is loaded by the first request (smt_curl.h), so
 * dial-stdio, which speaks no HTTP itself, never maps it.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dynbuf.h"
#include "pathsearch.h"
#include "smt_curl.h"
#include "smt_proto.h"
#include "smtctl.h"

#ifdef SMT_SANITIZERS
/*
 * The rank launcher runs with the ranks' LD_PRELOAD (libsmthostname.so,
 * passed by mpirun -x), which AddressSanitizer's check that its runtime is
 * loaded first would refuse: a sanitized test build only.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "verify_asan_link_order=0";
}
#endif

/* A local socket answers at once; a missing daemon must be reported fast. */
#define CONNECT_TIMEOUT_MS 500L
#define REQUEST_TIMEOUT_MS 10000L
/* Bigger answers than this are not from smtd (logs are bounded). */
#define MAX_REPLY_BYTES (256L * 1024 * 1024)
/* The status table lists hosts and ranks one per line up to this many. */
#define TABLE_MAX_ROWS 16

struct ctl {
	const char *socket;
};

/* BODY (NUL-terminated, LEN bytes, NULL when empty) is taken from IN, the
 * answer as it arrives, once it is complete. */
struct reply {
	long status;
	char *body;
	size_t len;
	struct smt_dynbuf in;
	int too_big;
};

extern char **environ;

void smtctl_exec(char **cmd)
{
	char path[PATH_MAX];
	int rc = smt_path_find(cmd[0], environ, NULL, path, sizeof(path));

	if (rc < 0) {
		errno = -rc;
		return;
	}
	execv(path, cmd);
}

int smtctl_connect_error(const char *path, int err)
{
	if (err == EACCES || err == EPERM) {
		fprintf(stderr,
			"smtctl: permission denied on %s: %s "
			"(run as root or as a member of the socket's group)\n",
			path, strerror(err));
		return SMTCTL_EXIT_DENIED;
	}
	fprintf(stderr, "smtctl: cannot reach smtd at %s: %s (is smtd running?)\n",
		path, strerror(err));
	return SMTCTL_EXIT_UNREACHABLE;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb;

	int rc = smt_dynbuf_add(&r->in, data, n);

	if (rc == -ENOBUFS)
		r->too_big = 1;
	return rc < 0 ? 0 : n;
}

/*
 * One request.  Returns 0 with OUT filled (any HTTP status), or the exit
 * code after printing why there is no answer.
 */
static int request(const struct ctl *ctl, const char *method, const char *path,
		   const char *body, struct reply *out)
{
	char url[512], errbuf[CURL_ERROR_SIZE] = "", why[SMT_CURL_ERR_MAX];
	struct curl_slist *headers = NULL;
	int ret = SMTCTL_EXIT_UNREACHABLE;
	CURL *h = NULL;

	memset(out, 0, sizeof *out);
	smt_dynbuf_init(&out->in, MAX_REPLY_BYTES);
	/* Without libcurl no daemon can be reached: exit 3, before any
	 * curl_* call (the clean-up below makes some). */
	if (smt_curl_load(why, sizeof why) < 0) {
		fprintf(stderr, "smtctl: %s\n", why);
		return SMTCTL_EXIT_UNREACHABLE;
	}
	if (curl_global_init(CURL_GLOBAL_NOTHING) != 0 || !(h = curl_easy_init())) {
		fprintf(stderr, "smtctl: cannot initialise libcurl\n");
		goto out;
	}
	snprintf(url, sizeof url, "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ctl->socket);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "smtctl/" PACKAGE_VERSION);
	if (strcmp(method, "POST") == 0) {
		headers = curl_slist_append(headers, "Content-Type: " SMT_CONTENT_TYPE_JSON);
		/* Our bodies are small: no round trip for "100 Continue". */
		headers = curl_slist_append(headers, "Expect:");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
	}

	CURLcode rc = curl_easy_perform(h);
	if (rc == CURLE_COULDNT_CONNECT) {
		long err = 0;
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &err);
		if (err) {
			ret = smtctl_connect_error(ctl->socket, (int)err);
		} else {
			fprintf(stderr, "smtctl: cannot reach smtd at %s: %s (is smtd running?)\n",
				ctl->socket, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		}
		goto out;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		fprintf(stderr, "smtctl: smtd at %s did not answer in time: %s\n",
			ctl->socket, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto out;
	}
	if (rc != CURLE_OK) {
		fprintf(stderr, "smtctl: no valid answer from %s (is it smtd's socket?): %s\n",
			ctl->socket, out->too_big ? "the answer is too large"
			: errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
	out->body = smt_dynbuf_take(&out->in, &out->len);
	ret = 0;
out:
	smt_dynbuf_free(&out->in);
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	curl_global_cleanup();
	return ret;
}

/* The JSON of an answer, or NULL after saying it is not JSON. */
static json_t *reply_json(const struct ctl *ctl, const struct reply *r)
{
	json_error_t err;
	json_t *v = r->body ? json_loadb(r->body, r->len, 0, &err) : NULL;

	if (!v)
		fprintf(stderr, "smtctl: no valid answer from %s (is it smtd's socket?): "
			"HTTP %ld with a body that is not JSON\n", ctl->socket, r->status);
	return v;
}

/* An answer the command did not expect: say what smtd said. */
static int reply_error(const struct ctl *ctl, const struct reply *r)
{
	json_t *v = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(v, SMT_F_ERROR));
	int ret = r->status == 403 ? SMTCTL_EXIT_DENIED : SMTCTL_EXIT_NOT_OK;

	if (r->status == 403)
		fprintf(stderr, "smtctl: permission denied: %s\n", msg ? msg : "HTTP 403");
	else
		fprintf(stderr, "smtctl: smtd answered %ld: %s\n", r->status,
			msg ? msg : "(no message)");
	json_decref(v);
	return ret;
}

/* GET PATH, answered 200: 0 with *R to free, or the exit code (the
 * error said, nothing to free). */
static int get_ok(const struct ctl *ctl, const char *path, struct reply *r)
{
	int ret = request(ctl, "GET", path, NULL, r);

	if (ret)
		return ret;
	if (r->status != 200) {
		ret = reply_error(ctl, r);
		free(r->body);
		r->body = NULL;
	}
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smtctl [--socket PATH] COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  status [--json]            the daemon's role, state, hosts and job\n"
		"  kill [-s SIGNAL]           send SIGNAL (name or number, default TERM) to the "
		"job\n"
		"  health                     exit 0 when the daemon is healthy, 1 when not\n"
		"  ready                      exit 0 when the job runs or has succeeded, 1 when "
		"not\n"
		"  logs [-n N] [--rank R] [--json]\n"
		"                             the last N (default %d) lines of the job's output\n"
		"  stacks [--json] [--timeout S]  every rank's stack, grouped (the job goes on)\n"
		"  restart                    end the running job on every host and start it "
		"again\n"
		"  version                    the versions of smtctl and smtd\n"
		"  dial-stdio                 join stdin and stdout to the daemon's socket\n"
		"\n"
		"The socket is --socket PATH, else $%s, else %s.\n"
		"Exit codes: 0 ok; 1 unhealthy, not ready or the job failed; 2 usage;\n"
		"3 smtd cannot be reached; 4 permission denied.\n",
		SMT_LOGS_TAIL_DEFAULT, SMT_ENV_SOCKET, SMT_SOCKET_DEFAULT);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "smtctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see smtctl --help)\n");
	return SMTCTL_EXIT_USAGE;
}

/*
 * getopt_long over a command's own arguments; ARGV[0] is the command.
 * Returns the option, -1 at the end, '?' after a usage message.
 */
static int command_opt(int argc, char **argv, const char *shortopts,
		       const struct option *longopts)
{
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

static int no_more_args(int argc, char **argv)
{
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* A command that takes neither options nor arguments: 0, or the exit code
 * after saying why the command line is wrong. */
static int no_options(int argc, char **argv)
{
	if (command_opt(argc, argv, "", NULL) != -1)
		return SMTCTL_EXIT_USAGE;
	return no_more_args(argc, argv);
}

/* ---- status ---- */

static const char *str_or(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

static void print_hosts(json_t *hosts)
{
	size_t n = json_array_size(hosts), ready = 0, shown = 0, i;
	json_t *h;

	json_array_foreach(hosts, i, h)
		if (json_is_true(json_object_get(h, SMT_F_READY)))
			ready++;
	printf("%-10s %zu (%zu ready)\n", "hosts", n, ready);
	/* With many hosts the ones not ready are what an operator looks for. */
	json_array_foreach(hosts, i, h) {
		const char *name =
			json_is_string(h) ? json_string_value(h) : str_or(h, SMT_F_HOST, "?");
		json_t *r = json_object_get(h, SMT_F_READY);
		if (n > TABLE_MAX_ROWS && json_is_true(r))
			continue;
		if (shown++ == TABLE_MAX_ROWS) {
			printf("  ...\n");
			break;
		}
		printf("  %-24s %s\n", name, !r ? "" : json_is_true(r) ? "ready" : "not ready");
	}
}

static void print_job(json_t *job)
{
	json_t *ranks = json_object_get(job, SMT_F_RANKS), *code, *sig, *rk;
	size_t i;

	if (!json_is_object(job)) {
		printf("%-10s none\n", "job");
		return;
	}
	printf("%-10s", "job");
	if (json_is_integer(json_object_get(job, SMT_F_PID)))
		printf(" pid %" JSON_INTEGER_FORMAT,
		       json_integer_value(json_object_get(job, SMT_F_PID)));
	else
		printf(" not started");
	if (json_is_string(json_object_get(job, SMT_F_START_TIME)))
		printf(", started %s", str_or(job, SMT_F_START_TIME, ""));
	else if (json_is_number(json_object_get(job, SMT_F_START_TIME))) {
		time_t t = (time_t)json_number_value(json_object_get(job, SMT_F_START_TIME));
		struct tm tm;
		char when[32];
		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf(", started %s", when);
	}
	if (json_is_array(ranks))
		printf(", %zu ranks", json_array_size(ranks));
	printf("\n");
	if (json_array_size(ranks) <= TABLE_MAX_ROWS) {
		json_array_foreach(ranks, i, rk) {
			printf("  rank %-5" JSON_INTEGER_FORMAT " %-18s",
			       json_integer_value(json_object_get(rk, SMT_F_RANK)),
			       str_or(rk, SMT_F_HOST, "?"));
			if (json_is_integer(json_object_get(rk, SMT_F_PID)))
				printf(" pid %" JSON_INTEGER_FORMAT,
				       json_integer_value(json_object_get(rk, SMT_F_PID)));
			printf("\n");
		}
	}
	code = json_object_get(job, SMT_F_EXIT_CODE);
	sig = json_object_get(job, SMT_F_SIGNAL);
	if (json_is_integer(code))
		printf("%-10s code %" JSON_INTEGER_FORMAT "\n", "exit", json_integer_value(code));
	if (json_is_string(sig))
		printf("%-10s signal %s\n", "exit", json_string_value(sig));
	else if (json_is_integer(sig))
		printf("%-10s signal %" JSON_INTEGER_FORMAT "\n", "exit", json_integer_value(sig));
}

static void print_status(json_t *st)
{
	json_t *failure = json_object_get(st, SMT_F_FAILURE);
	json_t *uptime = json_object_get(st, SMT_F_UPTIME);

	printf("%-10s %s\n", "role", str_or(st, SMT_F_ROLE, "?"));
	printf("%-10s %s\n", "state", str_or(st, SMT_F_STATE, "?"));
	printf("%-10s %s\n", "host", str_or(st, SMT_F_CURRENT_HOST, "?"));
	printf("%-10s %s\n", "leader", str_or(st, SMT_F_LEADER, "-"));
	if (json_is_number(uptime))
		printf("%-10s %.0fs\n", "uptime", json_number_value(uptime));
	if (json_is_array(json_object_get(st, SMT_F_HOSTS)))
		print_hosts(json_object_get(st, SMT_F_HOSTS));
	print_job(json_object_get(st, SMT_F_JOB));
	if (json_is_integer(json_object_get(st, SMT_F_SSHD_RESTARTS)))
		printf("%-10s %" JSON_INTEGER_FORMAT " restart(s)\n", "sshd",
		       json_integer_value(json_object_get(st, SMT_F_SSHD_RESTARTS)));
	if (json_is_string(failure))
		printf("%-10s %s\n", "failure", json_string_value(failure));
	else if (json_is_object(failure))
		printf("%-10s %s\n", "failure", str_or(failure, SMT_F_SUMMARY, "(no summary)"));
}

/* GET /v1/status: the parsed answer in *ST, the reply in R (the caller
 * frees both).  Returns 0, or the exit code after saying what is wrong. */
static int get_status(const struct ctl *ctl, struct reply *r, json_t **st)
{
	int ret = request(ctl, "GET", SMT_PATH_STATUS, NULL, r);

	if (ret)
		return ret;
	if (r->status != 200)
		ret = reply_error(ctl, r);
	else if (!(*st = reply_json(ctl, r)))
		ret = SMTCTL_EXIT_UNREACHABLE;
	if (ret)
		free(r->body);
	return ret;
}

static int cmd_status(const struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 } };
	int as_json = 0, c, ret;
	struct reply r;

	while ((c = command_opt(argc, argv, "", opts)) != -1) {
		if (c != 'j')
			return SMTCTL_EXIT_USAGE;
		as_json = 1;
	}
	json_t *st = NULL;
	if ((ret = no_more_args(argc, argv)) || (ret = get_status(ctl, &r, &st)))
		return ret;
	if (as_json)
		fwrite(r.body, 1, r.len, stdout);
	else
		print_status(st);
	int state = smt_state_parse(str_or(st, SMT_F_STATE, ""));
	ret = state == SMT_STATE_FAILED || state == SMT_STATE_STOPPED
		? SMTCTL_EXIT_NOT_OK : SMTCTL_EXIT_OK;
	json_decref(st);
	free(r.body);
	return ret;
}

/* ---- kill ---- */

static int cmd_kill(const struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "signal", required_argument, NULL, 's' }, { NULL, 0, NULL, 0 } };
	const char *sigtext = "TERM";
	int c, ret;
	struct reply r;

	while ((c = command_opt(argc, argv, "s:", opts)) != -1) {
		if (c != 's')
			return SMTCTL_EXIT_USAGE;
		sigtext = optarg;
	}
	if ((ret = no_more_args(argc, argv)))
		return ret;
	int signo = smt_signal_parse(sigtext);
	if (signo < 0)
		return usage_error("unknown signal '%s'", sigtext);
	const char *name = smt_signal_name(signo);
	json_t *body = name ? json_pack("{ss}", SMT_F_SIGNAL, name)
			    : json_pack("{si}", SMT_F_SIGNAL, signo);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return SMTCTL_EXIT_NOT_OK;
	ret = request(ctl, "POST", SMT_PATH_KILL, text, &r);
	free(text);
	if (ret)
		return ret;
	if (r.status == 202) {
		if (name)
			printf("sent SIG%s to the job\n", name);
		else
			printf("sent signal %d to the job\n", signo);
	} else if (r.status == 409) {
		fprintf(stderr, "smtctl: there is no job to signal\n");
		ret = SMTCTL_EXIT_NOT_OK;
	} else {
		ret = reply_error(ctl, &r);
	}
	free(r.body);
	return ret;
}

/* ---- restart ---- */

/* The running job ends on every host and starts again (smtd(8) Restarts). */
static int cmd_restart(const struct ctl *ctl, int argc, char **argv)
{
	struct reply r;
	int ret;

	if ((ret = no_options(argc, argv)))
		return ret;
	ret = request(ctl, "POST", SMT_PATH_RESTART, "{}", &r);
	if (ret)
		return ret;
	if (r.status == 202) {
		json_t *v = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
		json_int_t k = json_integer_value(json_object_get(v, SMT_F_ATTEMPT));
		printf("restarting the job: attempt %lld ends, attempt %lld starts once every host "
		       "has ended its part\n", (long long)k, (long long)k + 1);
		json_decref(v);
	} else if (r.status == 409) {
		json_t *v = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
		const char *msg = json_string_value(json_object_get(v, SMT_F_ERROR));
		fprintf(stderr, "smtctl: cannot restart: %s\n", msg ? msg : "no running job");
		json_decref(v);
		ret = SMTCTL_EXIT_NOT_OK;
	} else {
		ret = reply_error(ctl, &r);
	}
	free(r.body);
	return ret;
}

/* ---- health, ready ---- */

static int probe(const struct ctl *ctl, int argc, char **argv, const char *path,
		 const char *yes, const char *no)
{
	struct reply r;
	int ret;

	if ((ret = no_options(argc, argv)) || (ret = request(ctl, "GET", path, NULL, &r)))
		return ret;
	if (r.status == 200) {
		printf("%s\n", yes);
	} else if (r.status == 503) {
		printf("%s\n", no);
		ret = SMTCTL_EXIT_NOT_OK;
	} else {
		ret = reply_error(ctl, &r);
	}
	free(r.body);
	return ret;
}

static int cmd_health(const struct ctl *ctl, int argc, char **argv)
{
	return probe(ctl, argc, argv, SMT_PATH_HEALTHZ, "healthy", "unhealthy");
}

static int cmd_ready(const struct ctl *ctl, int argc, char **argv)
{
	return probe(ctl, argc, argv, SMT_PATH_READYZ, "ready", "not ready");
}

/* ---- logs ---- */

static int parse_count(const char *text, long max, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A kept line as mpirun's tagged output shows it (smtd(8) OUTPUT). */
static void print_line(json_t *line)
{
	if (json_is_string(line)) {
		printf("%s\n", json_string_value(line));
		return;
	}
	json_t *rank = json_object_get(line, SMT_F_RANK);
	const char *host = str_or(line, SMT_F_HOST, NULL);
	printf("[1,");
	if (json_is_integer(rank))
		printf("mpirank:%" JSON_INTEGER_FORMAT, json_integer_value(rank));
	if (host)
		printf(",%s", host);
	printf("]<%s>: %s\n", str_or(line, SMT_F_STREAM, "stdout"), str_or(line, SMT_F_TEXT, ""));
}

static int cmd_logs(const struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lines", required_argument, NULL, 'n' },
		{ "rank", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	long tail = SMT_LOGS_TAIL_DEFAULT, rank = -1;
	int c, ret, as_json = 0;
	char path[128];
	struct reply r;

	while ((c = command_opt(argc, argv, "n:", opts)) != -1) {
		switch (c) {
		case 'n':
			if (parse_count(optarg, SMT_LOGS_TAIL_MAX, &tail) < 0) {
				fprintf(stderr, "smtctl: -n needs a number of lines from 0 to %d\n",
					SMT_LOGS_TAIL_MAX);
				return SMTCTL_EXIT_USAGE;
			}
			break;
		case 'r':
			if (parse_count(optarg, 999999999L, &rank) < 0)
				return usage_error("--rank needs a rank number, not '%s'", optarg);
			break;
		case 'j':
			as_json = 1;
			break;
		default:
			return SMTCTL_EXIT_USAGE;
		}
	}
	if ((ret = no_more_args(argc, argv)))
		return ret;
	if (rank >= 0)
		snprintf(path, sizeof path, "%s?%s=%ld&%s=%ld", SMT_PATH_LOGS, SMT_Q_TAIL, tail,
			 SMT_Q_RANK, rank);
	else
		snprintf(path, sizeof path, "%s?%s=%ld", SMT_PATH_LOGS, SMT_Q_TAIL, tail);
	if ((ret = get_ok(ctl, path, &r)))
		return ret;
	json_t *v = reply_json(ctl, &r), *line;
	size_t i;
	if (!v) {
		free(r.body);
		return SMTCTL_EXIT_UNREACHABLE;
	}
	if (as_json)
		fwrite(r.body, 1, r.len, stdout);
	else
		json_array_foreach(json_object_get(v, SMT_F_LINES), i, line)
			print_line(line);
	json_decref(v);
	free(r.body);
	return SMTCTL_EXIT_OK;
}

/* ---- stacks ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The state of collection ID in a status: 1 done, 0 not yet, -1 absent. */
static int stacks_state(json_t *st, json_int_t id)
{
	json_t *s = json_object_get(st, SMT_F_STACKS);
	const char *state = json_string_value(json_object_get(s, SMT_F_STATE));

	if (!json_is_object(s) || json_integer_value(json_object_get(s, SMT_F_ID)) != id)
		return -1;
	return state && strcmp(state, "done") == 0;
}

/*
 * POST /v1/stacks starts a collection on every host; the status says when
 * it is done (a long poll, no sleeping), and GET /v1/stacks?id=N gives it.
 */
static int cmd_stacks(const struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 } };
	int as_json = 0, c, ret;
	long seconds = 0;
	struct reply r;
	json_t *v, *st = NULL;
	json_int_t id, gen;
	char path[160], body[64] = "{}";
	uint64_t deadline;

	while ((c = command_opt(argc, argv, "", opts)) != -1) {
		switch (c) {
		case 'j':
			as_json = 1;
			break;
		case 't':
			if (parse_count(optarg, SMT_STACKS_TIMEOUT_MAX_S, &seconds) < 0 ||
			    seconds < 1)
				return usage_error("--timeout needs seconds from 1 to %d, not '%s'",
						   SMT_STACKS_TIMEOUT_MAX_S, optarg);
			snprintf(body, sizeof(body), "{\"%s\":%ld}", SMT_F_TIMEOUT_MS,
				 seconds * 1000);
			break;
		default:
			return SMTCTL_EXIT_USAGE;
		}
	}
	if ((ret = no_more_args(argc, argv)))
		return ret;
	/* The hosts' time, their answers' slack, and a margin. */
	deadline = now_ms() + (uint64_t)(seconds ? seconds : SMT_STACKS_TIMEOUT_S) * 1000 + 20000;
	if ((ret = request(ctl, "POST", SMT_PATH_STACKS, body, &r)))
		return ret;
	if (r.status != 202 && r.status != 409) {
		ret = reply_error(ctl, &r);
		free(r.body);
		return ret;
	}
	v = reply_json(ctl, &r);
	if (!v) {
		free(r.body);
		return SMTCTL_EXIT_UNREACHABLE;
	}
	/* 409 with a collection's id: one is running, and this waits for it;
	 * without: there is nothing to collect (no job runs). */
	if (!json_is_integer(json_object_get(v, SMT_F_ID))) {
		json_decref(v);
		ret = reply_error(ctl, &r);
		free(r.body);
		return ret;
	}
	free(r.body);
	id = json_integer_value(json_object_get(v, SMT_F_ID));
	json_decref(v);
	/* Until the status says it is done: each answer comes when the status
	 * changes, or after a few seconds. */
	for (;;) {
		if ((ret = get_status(ctl, &r, &st)))
			return ret;
		free(r.body);
		int done = stacks_state(st, id);
		gen = json_integer_value(json_object_get(st, SMT_F_GENERATION));
		json_decref(st);
		if (done == 1)
			break;
		if (done < 0 || now_ms() > deadline) {
			fprintf(stderr,
				"smtctl: the stacks were not collected (collection "
				"%" JSON_INTEGER_FORMAT " %s)\n",
				id, done < 0 ? "is gone" : "took too long");
			return SMTCTL_EXIT_NOT_OK;
		}
		snprintf(path, sizeof(path), "%s?%s=%" JSON_INTEGER_FORMAT "&%s=5000",
			 SMT_PATH_STATUS, SMT_Q_WAIT, gen, SMT_Q_TIMEOUT);
		if ((ret = request(ctl, "GET", path, NULL, &r)))
			return ret;
		free(r.body);
	}
	snprintf(path, sizeof(path), "%s?%s=%" JSON_INTEGER_FORMAT, SMT_PATH_STACKS, SMT_F_ID, id);
	if ((ret = get_ok(ctl, path, &r)))
		return ret;
	if (as_json) {
		fwrite(r.body, 1, r.len, stdout);
	} else if ((v = reply_json(ctl, &r))) {
		printf("%s\n%s", json_string_value(json_object_get(v, SMT_F_SUMMARY)) ?: "",
		       json_string_value(json_object_get(v, SMT_F_TEXT)) ?: "");
		json_decref(v);
	}
	free(r.body);
	return SMTCTL_EXIT_OK;
}

/* ---- version, dial-stdio ---- */

static int cmd_version(const struct ctl *ctl, int argc, char **argv)
{
	struct reply r;
	int ret;

	if ((ret = no_options(argc, argv)))
		return ret;
	printf("smtctl %s\n", PACKAGE_VERSION);
	fflush(stdout);
	json_t *st = NULL;
	if ((ret = get_status(ctl, &r, &st)))
		return ret;
	printf("smtd %s\n", str_or(st, SMT_F_VERSION, "(unknown)"));
	json_decref(st);
	free(r.body);
	return SMTCTL_EXIT_OK;
}

static int cmd_dial_stdio(const struct ctl *ctl, int argc, char **argv)
{
	int ret;

	if ((ret = no_options(argc, argv)))
		return ret;
	return smtctl_dial_stdio(ctl->socket);
}

/*
 * Open MPI's launch agent on a worker (-mca orte_launch_agent
 * "smtctl exec-orted orted"): tell the local smtd our PID, take this
 * host's SM_* variables from its answer, then become orted with the same
 * PID.  orted runs in the foreground (--daemonize is dropped) so that the
 * announced PID stays orted's for its whole life.
 */
static int cmd_exec_orted(const struct ctl *ctl, int argc, char **argv)
{
	struct reply r;
	json_t *body, *args, *answer, *env;
	char *text;
	int ret;

	if (argc < 2) {
		return usage_error("exec-orted needs the command to run (orted ARGS...)");
	}
	args = json_array();
	for (int i = 1; i < argc; i++)
		json_array_append_new(args, json_string(argv[i]));
	body = json_pack("{s:I, s:o}", SMT_F_PID, (json_int_t)getpid(), SMT_F_ARGV, args);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text == NULL) {
		fprintf(stderr, "smtctl: out of memory\n");
		return SMTCTL_EXIT_NOT_OK;
	}
	ret = request(ctl, "POST", SMT_PATH_ORTED, text, &r);
	free(text);
	if (ret)
		return ret;
	if (r.status != 200) {
		fprintf(stderr, "smtctl: smtd at %s refused orted (HTTP %ld): %s\n", ctl->socket,
			r.status, r.body ? r.body : "");
		free(r.body);
		return r.status == 403 ? SMTCTL_EXIT_DENIED : SMTCTL_EXIT_NOT_OK;
	}
	answer = json_loads(r.body ? r.body : "", 0, NULL);
	free(r.body);
	env = json_object_get(answer, SMT_F_ENV);
	const char *name;
	json_t *value;
	json_object_foreach(env, name, value) {
		if (json_is_string(value))
			setenv(name, json_string_value(value), 1);
	}
	json_decref(answer);

	/* Drop --daemonize: orted keeps the PID smtd was told. */
	char **cmd = calloc((size_t)argc, sizeof(*cmd));
	int n = 0;
	if (cmd == NULL)
		return SMTCTL_EXIT_NOT_OK;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--daemonize") != 0 && strcmp(argv[i], "-daemonize") != 0)
			cmd[n++] = argv[i];
	cmd[n] = NULL;
	smtctl_exec(cmd);
	fprintf(stderr, "smtctl: cannot execute %s: %s\n", cmd[0], strerror(errno));
	free(cmd);
	return errno == ENOENT ? 127 : 126;
}

static int cmd_rank(const struct ctl *ctl, int argc, char **argv)
{
	int first = 1, tty = 0;

	if (argc > first && strcmp(argv[first], "--tty") == 0)
		tty = 1, first++;
	if (argc > first && strcmp(argv[first], "--") == 0)
		first++;
	if (first >= argc)
		return usage_error(
			"rank needs the program to run (rank [--tty] -- PROGRAM ARGS...)");
	return smtctl_rank(ctl->socket, tty, argv + first);
}

static const struct command {
	const char *name;
	int (*run)(const struct ctl *ctl, int argc, char **argv);
} commands[] = {
	{ "status", cmd_status },
	{ "kill", cmd_kill },
	{ "health", cmd_health },
	{ "ready", cmd_ready },
	{ "logs", cmd_logs },
	{ "version", cmd_version },
	{ "dial-stdio", cmd_dial_stdio },
	{ "exec-orted", cmd_exec_orted },
	{ "rank", cmd_rank },
	{ "stacks", cmd_stacks },
	{ "restart", cmd_restart },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl ctl = { .socket = getenv(SMT_ENV_SOCKET) };
	int c;

	/* "+": options after the command are the command's own. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			ctl.socket = optarg;
			break;
		case 'h':
			usage(stdout);
			return SMTCTL_EXIT_OK;
		case 'V':
			printf("smtctl %s\n", PACKAGE_VERSION);
			return SMTCTL_EXIT_OK;
		default:
			usage(stderr);
			return SMTCTL_EXIT_USAGE;
		}
	}
	if (!ctl.socket || !*ctl.socket)
		ctl.socket = SMT_SOCKET_DEFAULT;
	if (optind >= argc) {
		usage(stderr);
		return SMTCTL_EXIT_USAGE;
	}
	const char *name = argv[optind];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(name, commands[i].name) != 0)
			continue;
		if (!commands[i].run) {
			fprintf(stderr, "smtctl: %s is not implemented yet\n", name);
			return SMTCTL_EXIT_USAGE;
		}
		int sub_argc = argc - optind;
		char **sub_argv = argv + optind;
		optind = 0;  /* restart getopt on the command's arguments */
		return commands[i].run(&ctl, sub_argc, sub_argv);
	}
	return usage_error("unknown command '%s'", name);
}
