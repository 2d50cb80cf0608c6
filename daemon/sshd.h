/*
 * sshd.h - the SSH server that mpirun and the leader's channels need.
 *
 * Always, or when needed (the job has several hosts and nothing listens on
 * the SSH port yet), smtd makes sure host keys and /run/sshd
 * exist, runs `sshd -D -e` as its own supervised child and restarts it
 * with a growing delay (100 ms doubling to 5 s, reset after it stayed up
 * for a minute) whenever it dies, counting the restarts for status and
 * metrics.  Host key generation (ssh-keygen -A) runs as a child too: no
 * step blocks the loop.
 */
#ifndef SMT_SSHD_H
#define SMT_SSHD_H

#include <sys/types.h>
#include <uv.h>

#include "reaper.h"

struct smt_sshd;

struct smt_sshd_config {
	int start;                 /* 1: always; 0: never; -1: when needed (several
				      hosts, and nothing listens on PORT yet) */
	const char *sshd_path;     /* default /usr/sbin/sshd */
	const char *config_file;   /* sshd -f FILE, or NULL */
	const char *keygen_path;   /* default ssh-keygen */
	const char *keydir;        /* where host keys live; default /etc/ssh */
	const char *rundir;        /* privilege separation dir; default /run/sshd */
	const char *proc_net;      /* default /proc/net (tcp, tcp6 there) */
	int port;                  /* default 22 */
	size_t nhosts;             /* hosts of the job */
};

/* Called once sshd was started (UP=1), found unnecessary (UP=0), or could
 * not be started at all (UP<0: -errno, with a message already logged). */
typedef void (*smt_sshd_cb)(void *arg, int up);

/*
 * Decide and, if needed, start.  CB runs from the loop, never from inside
 * this call.  Returns 0 or -errno (out of memory).
 */
int smt_sshd_start(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_sshd_config *cfg,
		   smt_sshd_cb cb, void *arg, struct smt_sshd **out);

/* sshd's PID, or -1 when none runs (for the kill-tree's keep list). */
pid_t smt_sshd_pid(const struct smt_sshd *s);
unsigned smt_sshd_restarts(const struct smt_sshd *s);

/* Nonzero when something listens on TCP PORT (from PROC_NET/tcp, tcp6). */
int smt_sshd_port_listening(const char *proc_net, int port);

/* Stop sshd (SIGTERM; no restart) and release everything. */
void smt_sshd_stop(struct smt_sshd *s);

#endif
