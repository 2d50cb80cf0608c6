/*
 * logpipe.h - the stderr of smtd's own helpers (sshd, ssh) into smtd's log.
 *
 * A pipe whose write end is given to children as their stderr; the daemon
 * reads it on the loop and logs each line, prefixed with the source's
 * name, through log.h - so that with --log-format json every line smtd
 * prints is JSON.  Lines longer than 4 KiB are cut.  The write end stays
 * open in the daemon (close-on-exec) for the next child.
 */
#ifndef SMT_LOGPIPE_H
#define SMT_LOGPIPE_H

#include <uv.h>

struct smt_logpipe;

int smt_logpipe_new(uv_loop_t *loop, const char *source, struct smt_logpipe **out);
/* The write end, for smt_spawn_opts.stderr_fd. */
int smt_logpipe_fd(const struct smt_logpipe *lp);
void smt_logpipe_close(struct smt_logpipe *lp);

#endif
