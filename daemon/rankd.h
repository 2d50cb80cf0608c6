/*
 * rankd.h - where ranks register: the rank launcher's socket (smtd(8) OUTPUT).
 *
 * Every rank is started through `smtctl rank -- PROGRAM...` (client/rank.c),
 * which mpirun (through orted) or torchrun runs on the rank's own host.
 * The launcher connects to this host's smtd at SOCKET.ranks, a Unix
 * SOCK_SEQPACKET socket (mode 0660, the control socket's directory), and
 * speaks a small JSON protocol, one message per packet:
 *
 *   launcher                                      smtd
 *   {"op":"hello","rank":R,"local_rank":L}  ->    admit, take the fds
 *     + SCM_RIGHTS: the rank's stdout (a
 *       pty's master, or a pipe's read end)
 *       and stderr (a pipe's read end)
 *                                           <-    {"ok":true,"env":{..},
 *                                                  "env_default":{..}}
 *   fork; the child waits
 *   {"op":"start","pid":P}                  ->    P must be the launcher's
 *                                                 child: pidfd, start time
 *                                           <-    {"ok":true}
 *   the child execs the program; the launcher waits for it
 *   {"op":"exit","status":W,"maxrss_kb":M}  ->    (or "exec_errno":E)
 *
 * A refusal is {"ok":false,"error":"..."}; descriptors of any other kind
 * are refused.  The peer must be uid 0 or
 * smtd's own (SO_PEERCRED) and, as the caller's ADMIT decides, part of the
 * job.  Nothing a client sends can make smtd block, crash or grow: packets
 * are bounded, a client that says nothing is dropped after a few seconds,
 * connections are limited.
 */
#ifndef SMT_RANKD_H
#define SMT_RANKD_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

/* The suffix of the launcher's socket path (after the control socket's). */
#define SMT_RANKD_SUFFIX ".ranks"
/* Largest packet either way. */
#define SMT_RANKD_MSG_MAX (64 * 1024)

struct smt_rankd;

struct smt_rankd_ops {
	/* May LAUNCHER (a PID SO_PEERCRED gave) register RANK?  0, or a
	 * negative errno with a one-line reason in WHY. */
	int (*admit)(void *ctx, pid_t launcher, int rank, char *why, size_t len);
	/* RANK is registered: its stdout (a pty's master or a pipe's read
	 * end) and stderr (a pipe's read end), taken over.
	 * The answer's environment comes back from ENV: {"env":{...},
	 * "env_default":{...}} (a new reference, or NULL). */
	json_t *(*hello)(void *ctx, int rank, pid_t launcher, int out_fd, int err_fd);
	/* RANK's program is PID, verified to be the launcher's child and
	 * still its own (start time START). */
	void (*started)(void *ctx, int rank, pid_t pid, unsigned long long start);
	/* The launcher says how RANK's program ended: WSTATUS as waitpid
	 * gives it, or EXEC_ERRNO when it could not be executed; END_MS when
	 * (this host's clock, 0 unknown); MAXRSS_KB its peak memory (the
	 * ru_maxrss of its wait, 0 unknown). */
	void (*exited)(void *ctx, int rank, int wstatus, int exec_errno, int64_t end_ms,
		       long long maxrss_kb);
	/* RANK's launcher went away (its connection closed). */
	void (*hangup)(void *ctx, int rank);
};

/* Listen at PATH (a stale socket there is replaced; anything else is left
 * and the call fails).  0 or -errno, with a message logged. */
int smt_rankd_listen(uv_loop_t *loop, const char *path, const struct smt_rankd_ops *ops,
		     void *ctx, struct smt_rankd **out);

/* Close every connection and the listener; remove the socket file. */
void smt_rankd_close(struct smt_rankd *rd);

#endif
