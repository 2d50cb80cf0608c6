/* daemon.c - the event loop and the job's life cycle on this host. */
#include "config.h"

#include "daemon.h"
#include "log.h"

int smt_daemon_run(struct smt_plan *plan)
{
	(void)plan;
	smt_error("running a job is not implemented yet; use --dry-run");
	return 1;
}
