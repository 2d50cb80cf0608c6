/*
 * api_server.c - the control API server on canned answers, for the tests.
 *
 *   api_server --socket PATH [--group G] [--tcp ADDR:PORT] [--idle-ms N]
 *              [--max-conns N] [--role R] [--state S] [--unhealthy]
 *              [--not-ready] [--no-job] [--log-lines N]
 *
 * It prints "listening" (and "tcp-port N" before it with --tcp) on stdout
 * once it accepts connections, then one line per request that changes
 * something ("kill TERM", "post /v1/result {...}"), so a test can check
 * what reached the daemon.  SIGTERM or SIGINT closes the server; it exits
 * 0 only when the loop then holds no handle at all.  A listen error exits
 * 1 after the server's own log line.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "api.h"
#include "log.h"
#include "smt_proto.h"

struct fake {
	const char *role;
	const char *state;
	int healthy;
	int ready;
	int has_job;
	long log_lines;
	uv_signal_t sigterm, sigint;
	struct smt_api *api;
};

static json_t *fake_status(void *ctx, int brief)
{
	struct fake *f = ctx;
	json_t *hosts = json_pack("[{ss sb} {ss sb}]", SMT_F_HOST, "algo-1", SMT_F_READY, 1,
				  SMT_F_HOST, "algo-2", SMT_F_READY, 0);
	json_t *job = json_null();
	if (f->has_job)
		job = json_pack("{si ss s[{si ss si} {si ss si}] so}",
				SMT_F_PID, 4242, SMT_F_START_TIME, "2024-05-01T12:00:00Z",
				SMT_F_RANKS,
				SMT_F_RANK, 0, SMT_F_HOST, "algo-1", SMT_F_PID, 4243,
				SMT_F_RANK, 1, SMT_F_HOST, "algo-2", SMT_F_PID, 977,
				SMT_F_EXIT_CODE, strcmp(f->state, "failed") == 0
				? json_integer(1) : json_null());
	json_t *st = json_pack("{ss ss ss ss so so si ss}",
			       SMT_F_ROLE, f->role, SMT_F_STATE, f->state,
			       SMT_F_CURRENT_HOST, "algo-1", SMT_F_LEADER, "algo-1",
			       SMT_F_HOSTS, hosts, SMT_F_JOB, job,
			       SMT_F_UPTIME, 12, SMT_F_VERSION, PACKAGE_VERSION);
	if (st && strcmp(f->state, "failed") == 0)
		json_object_set_new(st, SMT_F_FAILURE, json_pack("{ss}", SMT_F_SUMMARY,
			"rank 1 on algo-2 exited with code 1: ValueError: shapes do not match"));
	return st;
}

static int fake_healthy(void *ctx)
{
	return ((struct fake *)ctx)->healthy;
}

static int fake_ready(void *ctx)
{
	return ((struct fake *)ctx)->ready;
}

static int fake_kill(void *ctx, int signo)
{
	struct fake *f = ctx;

	if (!f->has_job)
		return -ESRCH;
	const char *name = smt_signal_name(signo);
	if (name)
		printf("kill %s\n", name);
	else
		printf("kill %d\n", signo);
	fflush(stdout);
	return 0;
}

/* Line I of the fake job: even lines from rank 0, odd ones from rank 1. */
static json_t *fake_logs(void *ctx, long tail, long rank)
{
	struct fake *f = ctx;
	json_t *lines = json_array();
	long first = 0, matching = 0;

	for (long i = 0; i < f->log_lines; i++)
		if (rank < 0 || i % 2 == rank)
			matching++;
	first = matching > tail ? matching - tail : 0;
	for (long i = 0, n = 0; i < f->log_lines && lines; i++) {
		if (rank >= 0 && i % 2 != rank)
			continue;
		if (n++ < first)
			continue;
		char text[64];
		snprintf(text, sizeof text, "line %ld of rank %ld", i, i % 2);
		json_array_append_new(lines, json_pack("{si ss ss ss}", SMT_F_RANK, (int)(i % 2),
			SMT_F_HOST, i % 2 ? "algo-2" : "algo-1", SMT_F_STREAM,
			i % 5 == 4 ? "stderr" : "stdout", SMT_F_TEXT, text));
	}
	return lines ? json_pack("{so}", SMT_F_LINES, lines) : NULL;
}

static char *fake_metrics(void *ctx)
{
	struct fake *f = ctx;
	char *text = NULL;

	if (asprintf(&text,
		     "# HELP smtd_state The daemon's state (1 for the current one).\n"
		     "# TYPE smtd_state gauge\n"
		     "smtd_state{state=\"%s\"} 1\n"
		     "# HELP smtd_ranks Ranks of the job.\n"
		     "# TYPE smtd_ranks gauge\n"
		     "smtd_ranks 2\n", f->state) < 0)
		return NULL;
	return text;
}

static int fake_post(const char *path, json_t *body, int peer_pid, json_t **reply)
{
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	printf("post %s %s pid %d\n", path, text ? text : "-", peer_pid);
	fflush(stdout);
	free(text);
	*reply = json_pack("{sb}", "accepted", 1);
	return 200;
}

static int fake_result(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	(void)ctx;
	return fake_post(SMT_PATH_RESULT, body, peer_pid, reply);
}

static int fake_launch(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	(void)ctx;
	return fake_post(SMT_PATH_LAUNCH, body, peer_pid, reply);
}

static int fake_orted(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	(void)ctx;
	return fake_post(SMT_PATH_ORTED, body, peer_pid, reply);
}

static const struct smt_api_ops fake_ops = {
	.status = fake_status,
	.healthy = fake_healthy,
	.ready = fake_ready,
	.kill = fake_kill,
	.logs = fake_logs,
	.metrics = fake_metrics,
	.result = fake_result,
	.launch = fake_launch,
	.orted = fake_orted,
};

static void on_closed(void *arg)
{
	struct fake *f = arg;

	uv_close((uv_handle_t *)&f->sigterm, NULL);
	uv_close((uv_handle_t *)&f->sigint, NULL);
}

static void on_signal(uv_signal_t *s, int signo)
{
	struct fake *f = s->data;

	uv_signal_stop(&f->sigterm);
	uv_signal_stop(&f->sigint);
	smt_api_close(f->api, on_closed, f);
}

static void usage(void)
{
	fprintf(stderr, "usage: api_server --socket PATH [--group G] [--tcp ADDR:PORT] "
		"[--idle-ms N] [--max-conns N] [--role R] [--state S] [--unhealthy] "
		"[--not-ready] [--no-job] [--log-lines N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "group", required_argument, NULL, 'g' },
		{ "tcp", required_argument, NULL, 't' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "role", required_argument, NULL, 'r' },
		{ "state", required_argument, NULL, 'S' },
		{ "unhealthy", no_argument, NULL, 'U' },
		{ "not-ready", no_argument, NULL, 'N' },
		{ "no-job", no_argument, NULL, 'J' },
		{ "log-lines", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct fake f = { .role = "leader", .state = "running", .healthy = 1,
			  .ready = 1, .has_job = 1, .log_lines = 10 };
	const char *path = NULL, *group = NULL, *tcp = NULL;
	unsigned idle = 0, max = 0;
	uv_loop_t loop;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'g': group = optarg; break;
		case 't': tcp = optarg; break;
		case 'i': idle = (unsigned)atoi(optarg); break;
		case 'm': max = (unsigned)atoi(optarg); break;
		case 'r': f.role = optarg; break;
		case 'S': f.state = optarg; break;
		case 'U': f.healthy = 0; break;
		case 'N': f.ready = 0; break;
		case 'J': f.has_job = 0; break;
		case 'l': f.log_lines = atol(optarg); break;
		default: usage();
		}
	}
	if (!path && !tcp)
		usage();
	signal(SIGPIPE, SIG_IGN);
	uv_loop_init(&loop);
	uv_signal_init(&loop, &f.sigterm);
	uv_signal_init(&loop, &f.sigint);
	f.sigterm.data = f.sigint.data = &f;
	uv_signal_start(&f.sigterm, on_signal, SIGTERM);
	uv_signal_start(&f.sigint, on_signal, SIGINT);

	int status = 0;
	if (smt_api_new(&loop, &fake_ops, &f, &f.api) < 0)
		return 1;
	smt_api_set_limits(f.api, idle, max);
	if ((path && smt_api_listen_unix(f.api, path, group) < 0) ||
	    (tcp && smt_api_listen_tcp(f.api, tcp) < 0)) {
		status = 1;
		uv_signal_stop(&f.sigterm);
		uv_signal_stop(&f.sigint);
		smt_api_close(f.api, on_closed, &f);
	} else {
		if (tcp)
			printf("tcp-port %d\n", smt_api_tcp_port(f.api));
		printf("listening\n");
		fflush(stdout);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&loop) != 0) {
		fprintf(stderr, "api_server: handles still open after smt_api_close\n");
		return 3;
	}
	return status;
}
