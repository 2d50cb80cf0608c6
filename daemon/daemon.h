/*
 * daemon.h - the running daemon: one libuv loop that owns every child,
 * signal, timer and socket of this host's part of the job.
 *
 * smt_daemon_run takes a built plan, runs the job to its end as the plan's
 * role says, writes the success or failure file and returns smtd's exit
 * code (smtd(8) OUTPUT).  It never calls exit() itself.
 */
#ifndef SMT_DAEMON_H
#define SMT_DAEMON_H

#include "plan.h"

int smt_daemon_run(struct smt_plan *plan);

#endif
