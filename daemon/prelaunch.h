/*
 * prelaunch.h - this host's pre-launch phase (smtd(8) The rank command, Preflight): the built-in
 * checks (preflight.h), then the install of the code directory
 * (install.h), then --preflight-command, one after the other, while the
 * host waits for its peers anyway.
 *
 * pip and the command run as smtd's own children (spawn.h: no shell, own
 * process group, reaped by reaper.h) in the job's environment; every line
 * they print goes to smtd's log ("pip on algo-2: ..."), and the line that
 * says what went wrong (errline.h) is kept for the failure.  The command
 * is killed (its whole process group) at --preflight-timeout.  The first
 * failure ends the phase: the result names it as `InstallFailed: HOST:
 * ...` or `PreflightFailed: HOST: ...`.  The phase never sleeps and never
 * blocks the loop; built-in checks that pass cost one loop turn.
 */
#ifndef SMT_PRELAUNCH_H
#define SMT_PRELAUNCH_H

#include <jansson.h>
#include <uv.h>

#include "preflight.h"
#include "reaper.h"

struct smt_prelaunch;

struct smt_prelaunch_config {
	const char *host;
	int attempt;                       /* 0, 1, ... (restarts) */
	char *const *envp;                 /* the job's environment (copied) */
	const char *code_dir;              /* pip's working directory */
	const char *const *install_argv;   /* NULL: nothing to install */
	const struct smt_preflight_config *builtin; /* copied */
	char *const *command;              /* --preflight-command's words; NULL: none */
	double timeout;                    /* seconds for the command */
};

/* Called once, from the loop, when the phase ended: PASSED or not. */
typedef void (*smt_prelaunch_done_cb)(void *ctx, int passed);

/* Start the phase; DONE is never called from inside this call.  0 or
 * -errno (then nothing runs). */
int smt_prelaunch_start(uv_loop_t *loop, struct smt_reaper *reaper,
			const struct smt_prelaunch_config *cfg, smt_prelaunch_done_cb done,
			void *ctx, struct smt_prelaunch **out);

/*
 * The phase as preflight.json and /v1/status show it (borrowed): {"host",
 * "attempt", "state": "running"|"passed"|"failed", "checks": [...],
 * "instance_type",
 * "gpus", "builtin_microseconds" (the built-in checks' time),
 * "microseconds" (the whole phase's), "failure"}.
 */
json_t *smt_prelaunch_result(const struct smt_prelaunch *p);
/* The failure text (kind, host, words, newline), or NULL. */
const char *smt_prelaunch_failure(const struct smt_prelaunch *p);

/* Kill what still runs (SIGKILL to its process group) and free P once its
 * handles are closed.  NULL is fine. */
void smt_prelaunch_close(struct smt_prelaunch *p);

#endif
