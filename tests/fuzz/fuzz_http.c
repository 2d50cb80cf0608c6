/*
 * fuzz_http.c - arbitrary bytes into one control API connection.
 *
 * The first byte picks the peer (root, another uid, or the read-only TCP
 * listener) and the size of the pieces the rest is fed in, so that
 * requests split at every position are explored too; an odd size also
 * defers the large answers.  After each piece every pipelined request is
 * answered and every held or deferred one released, as the server does.
 * Every response must be a complete HTTP/1.1 status line.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "httpconn.h"
#include "smt_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *f_status(void *ctx, int brief) { return json_pack("{ss}", SMT_F_STATE, "running"); }
static int f_yes(void *ctx) { return 1; }
static int f_kill(void *ctx, int signo) { return signo == 9 ? -ESRCH : 0; }
static json_t *f_logs(void *ctx, long tail, long rank)
{
	return json_pack("{s[ii]}", SMT_F_LINES, (int)tail, (int)rank);
}
static char *f_metrics(void *ctx) { return strdup("smtd_up 1"); }
static int f_result(void *ctx, json_t *body, int uid, json_t **reply)
{
	if (body)
		*reply = json_deep_copy(body);
	return 200;
}

static json_int_t f_generation(void *ctx) { return 1; }
static void f_contact(void *ctx) { }

static const struct smt_api_ops ops = {
	.status = f_status, .healthy = f_yes, .ready = f_yes, .kill = f_kill,
	.logs = f_logs, .metrics = f_metrics, .result = f_result,
	.generation = f_generation, .leader_contact = f_contact,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smt_api_stats stats = { 0 };
	struct smt_httpconn *c;
	char *out;

	if (size < 1)
		return 0;
	/* The low two bits pick the peer: another user, root, read-only (TCP
	 * probes), or a worker's TCP channel, where only the token opens. */
	static const char token[] =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	struct smt_httpconn_peer peer = {
		.uid = data[0] & 1 ? 0 : 1000,
		.daemon_uid = 0,
		.read_only = (data[0] & 3) == 2,
		.token = (data[0] & 3) == 3 ? token : NULL,
	};
	size_t piece = (data[0] >> 2) ? (size_t)(data[0] >> 2) : size;
	data++;
	size--;
	if (smt_httpconn_new(&ops, NULL, &peer, &stats, &c) < 0)
		return 0;
	smt_httpconn_set_defer(c, (int)(piece & 1));
	for (size_t off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		int r = smt_httpconn_feed(c, (const char *)data + off, n);
		while (r >= 0) {
			if (smt_httpconn_held(c) || smt_httpconn_deferred(c))
				r = smt_httpconn_release(c);
			else if (smt_httpconn_pending(c) && !smt_httpconn_closing(c))
				r = smt_httpconn_next(c);
			else
				break;
			/* Progress: each call answers, defers or consumes input. */
		}
		if (r < 0)
			break;
		size_t len = smt_httpconn_take_output(c, &out);
		if (len && memcmp(out, "HTTP/1.1 ", 9) != 0)
			abort();
		free(out);
	}
	smt_httpconn_free(c);
	return 0;
}
