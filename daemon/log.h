/*
 * log.h - the daemon's own messages on stderr.
 *
 * One line per message, with a time, a level and the host, as text or as
 * one JSON object (--log-format json: time, level, source, message, state,
 * host).  Rank output never goes through
 * here: it is forwarded by output.c.  The format and host are process-wide
 * settings made once at start-up, before the loop runs.
 */
#ifndef SMT_LOG_H
#define SMT_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum smt_log_level { SMT_LOG_DEBUG, SMT_LOG_INFO, SMT_LOG_WARN, SMT_LOG_ERROR };
enum smt_log_format { SMT_LOG_TEXT, SMT_LOG_JSON };

/* HOST may be NULL until the configuration is read; it is copied. */
void smt_log_setup(enum smt_log_format format, const char *host, int debug);
/* The daemon's state, carried by every JSON line (a static name). */
void smt_log_set_state(const char *state);

/* MS (milliseconds since the epoch) as "2026-01-02T03:04:05.678Z" into OUT
 * (at least 32 bytes). */
void smt_log_time(long long ms, char *out, size_t size);

void smt_log(enum smt_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define smt_debug(...) smt_log(SMT_LOG_DEBUG, __VA_ARGS__)
#define smt_info(...)  smt_log(SMT_LOG_INFO, __VA_ARGS__)
#define smt_warn(...)  smt_log(SMT_LOG_WARN, __VA_ARGS__)
#define smt_error(...) smt_log(SMT_LOG_ERROR, __VA_ARGS__)

#endif
