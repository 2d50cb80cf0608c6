/* log.c - the daemon's own messages, one line each, on stderr. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/*
 * Process-wide settings, written once before the loop starts and only read
 * afterwards; logging must work from every module without passing a handle.
 */
static enum smt_log_format log_format = SMT_LOG_TEXT;
static char log_host[256];
static int log_debug;
static const char *log_state = "starting";

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void smt_log_setup(enum smt_log_format format, const char *host, int debug)
{
	log_format = format;
	log_debug = debug;
	if (host)
		snprintf(log_host, sizeof(log_host), "%s", host);
}

void smt_log_set_state(const char *state)
{
	log_state = state;
}

void smt_log_time(long long ms, char *out, size_t size)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, size - n, ".%03uZ", (unsigned)(ms % 1000));
}

static void format_time(char *buf, size_t len)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	smt_log_time((long long)tv.tv_sec * 1000 + tv.tv_usec / 1000, buf, len);
}

void smt_log(enum smt_log_level level, const char *fmt, ...)
{
	char msg[2048], when[96];
	va_list ap;

	if (level == SMT_LOG_DEBUG && !log_debug)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	format_time(when, sizeof(when));

	if (log_format == SMT_LOG_JSON) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "time", when, "level",
				      level_names[level], "source", "smtd", "message", msg,
				      "state", log_state ? log_state : "");
		if (o && log_host[0])
			json_object_set_new(o, "host", json_string(log_host));
		char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		if (text) {
			fprintf(stderr, "%s\n", text);
			free(text);
		}
		json_decref(o);
	} else {
		fprintf(stderr, "%s smtd[%s] %s: %s\n", when, log_host[0] ? log_host : "-",
			level_names[level], msg);
	}
	fflush(stderr);
}
