/*
 * report.h - the failure file's words: every kind of failure, and from
 * what smtd knows at the end, the one line that says which (smtd(8) OUTPUT).
 *
 * SageMaker shows the first 1024 bytes of ROOT/output/failure, so those
 * carry the answer.  Line 1 names the kind, the first failing rank and its
 * host, its exit code or signal, and the first error line of its output:
 *
 *   RankFailed: rank 3 on algo-2 exited with code 1: ValueError: bad shape
 *
 * then that rank's last error lines (or the launched command's own last
 * messages).  The rank comes from the rank table (what each rank's
 * launcher reported, on every host); mpirun's messages (mpimsg.h) fill in
 * what only mpirun knows.  The summary is one line of at most
 * SMT_REPORT_SUMMARY_MAX bytes of valid UTF-8; the mpirun command line
 * never appears.  Pure logic except smt_report_probe_program.
 *
 * Every kind smtd writes is in smt_failure_kinds[] with the exit code it
 * goes with; smtd(8) lists the same (tests/integration/house_docs.sh
 * compares them).
 */
#ifndef SMT_REPORT_H
#define SMT_REPORT_H

#include <stdarg.h>
#include <stddef.h>

#include "errline.h"
#include "ranks.h"
#include "ring.h"

/* SageMaker shows the first 1024 bytes of the failure file. */
#define SMT_REPORT_SHOWN 1024
#define SMT_REPORT_SUMMARY_MAX 1000
#define SMT_REPORT_ERROR_LINE_MAX SMT_ERRLINE_MAX

enum smt_failure_kind {
	SMT_FAIL_NONE = 0,
	SMT_FAIL_STOPPED,
	SMT_FAIL_OOM,
	SMT_FAIL_NOT_FOUND,
	SMT_FAIL_NOT_EXECUTABLE,
	SMT_FAIL_RANK_FAILED,
	SMT_FAIL_RANK_KILLED,
	SMT_FAIL_LAUNCH,
	SMT_FAIL_MPIRUN_KILLED,
	SMT_FAIL_JOB_FAILED,
	SMT_FAIL_DAEMON_LOST,
	SMT_FAIL_STALLED,
	SMT_FAIL_CONFIG,
	SMT_FAIL_SSHD,
	SMT_FAIL_PEERS_NOT_READY,
	SMT_FAIL_LEADER_NOT_READY,
	SMT_FAIL_LOST_HOST,
	SMT_FAIL_LOST_LEADER,
	SMT_FAIL_INTERNAL,
	SMT_FAIL_INSTALL,
	SMT_FAIL_PREFLIGHT,
	SMT_FAIL_COUNT
};

/* One kind: its name (the first word of the failure file), smtd's exit
 * code with it (-1: 128 + the signal), and what it means (smtd(8)). */
struct smt_failure_kind_info {
	const char *name;
	int exit_code;
	const char *meaning;
};
extern const struct smt_failure_kind_info smt_failure_kinds[SMT_FAIL_COUNT];

/* "RankFailed", ...; NULL for SMT_FAIL_NONE or out of range. */
const char *smt_failure_kind_name(enum smt_failure_kind kind);
/* The exit code that goes with KIND (STOPPED: 128 + SIGNO). */
int smt_failure_exit_code(enum smt_failure_kind kind, int signo);

/*
 * "KIND: " and the printf-formatted rest, as one clean line (control bytes
 * become spaces), ending in a newline, into a malloc'ed string; NULL when
 * out of memory.  The one way smtd words a failure it found itself.
 */
char *smt_failure_text(enum smt_failure_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
char *smt_failure_vtext(enum smt_failure_kind kind, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* What the supervisor knows when the job has ended on this host. */
struct smt_report_input {
	const char *current_host;
	const char *command;   /* "mpirun", "torchrun"; NULL: the program itself */
	int exit_code;         /* the command's exit code, -1 if signalled or unknown */
	int term_signal;       /* the signal that killed it, or 0 */
	int stop_signal;       /* the signal smtd received and passed on, or 0 */
	int oom_kill;          /* the OOM killer killed a process of the job */
	int exec_errno;        /* the command could not be executed, or 0 */
	const char *program;   /* the rank's program (argv[0]), may be NULL */
	const char *workdir;   /* where the rank runs, to probe PROGRAM; may be NULL */
	const struct smt_ring *msgs;    /* the command's own messages; may be NULL */
	const struct smt_ranks *ranks;  /* the rank table; may be NULL */
	int local_only;        /* only this host's ranks may be named */
};

/* What was found; strings point into the struct. */
struct smt_report {
	enum smt_failure_kind kind;
	int rank;             /* the first failing rank, or -1 */
	int exit_code;        /* its exit code, or -1 */
	int signal;           /* the signal that killed it, or 0 */
	char host[256];       /* its host, or "" */
	char error_line[SMT_REPORT_ERROR_LINE_MAX + 1]; /* its first error line, or "" */
	char summary[SMT_REPORT_SUMMARY_MAX + 1];       /* line 1, no newline */
};

void smt_report_analyse(const struct smt_report_input *in, struct smt_report *r);

/* The full failure text (summary line, then the rank's last error lines),
 * malloc'ed, NUL-terminated, *LEN bytes.  R from smt_report_analyse; when R
 * is NULL it is computed.  Returns 0 or -ENOMEM. */
int smt_report_build(const struct smt_report_input *in, const struct smt_report *r,
		     char **text, size_t *len);

/* Whether the first line of FAILURE names rank RANK on HOST as the
 * failing rank ("rank R on H", as the summary words it). */
int smt_report_names(const char *failure, int rank, const char *host);

/* Whether PROGRAM can be executed, as execvp would find it from WORKDIR
 * (NULL: the current directory) with PATH (NULL: getenv("PATH")): 0, or
 * -ENOENT, -EACCES (exists but not executable, or a directory). */
int smt_report_probe_program(const char *program, const char *workdir,
			     const char *path);

#endif
