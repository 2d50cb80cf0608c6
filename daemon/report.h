/*
 * report.h - the failure summary of SPEC §7.
 *
 * Given what the supervisor knows about the end of the job (struct
 * smt_report_input) and what output.c kept (mpirun's own messages, each
 * rank's last stderr lines and first error line, the rank table), build the
 * text of ROOT/output/failure:
 *
 *   line 1: KIND: who failed, where, how, and the first error line, e.g.
 *     RankFailed: rank 1 on algo-2 exited with code 1: ValueError: shapes do not match
 *     RankKilled: rank 1 on algo-2 was killed by SIGKILL
 *   (with no error-like line, a rank that exited with a code is quoted by
 *   its last stderr line)
 *   then the failing rank's last stderr lines, as many whole lines as fit
 *   in the first SMT_REPORT_SHOWN bytes (the last ones; a single line too
 *   long for the room left is cut).
 *
 * Kinds, first match wins:
 *   Stopped            smtd received a signal and stopped the job
 *   OutOfMemory        the supervisor saw an OOM kill
 *   ProgramNotFound    exec of the program failed with ENOENT (127), or
 *                      mpirun could not launch it and it does not exist
 *   ProgramNotExecutable  EACCES/ENOEXEC/... (126), or mpirun could not
 *                      launch it and it exists
 *   RankFailed         a rank exited with a nonzero code / called MPI_Abort
 *                      / exited without MPI_Finalize
 *   RankKilled         a rank was killed by a signal
 *   DaemonLost         mpirun lost the Open MPI daemon (orted) of a host
 *   LaunchFailed       mpirun could not start the job (slots, daemons, ...)
 *   MpirunKilled       mpirun itself was killed by a signal
 *   JobFailed          anything else: the exit code, and the first error
 *                      line of any rank when one is known.
 *
 * The summary is one line of at most SMT_REPORT_SUMMARY_MAX bytes, valid
 * UTF-8 when its parts are (a cut never splits a UTF-8 sequence; control
 * bytes become spaces).  The report never contains the mpirun command line:
 * nothing here ever sees it.  Pure logic except smt_report_probe_program
 * (and the probe it makes for a launch failure on this host).
 */
#ifndef SMT_REPORT_H
#define SMT_REPORT_H

#include <stddef.h>

#include "output.h"

/* SageMaker shows the first 1024 bytes of the failure file. */
#define SMT_REPORT_SHOWN 1024
#define SMT_REPORT_SUMMARY_MAX 1000
/* How much of the first error line the summary quotes. */
#define SMT_REPORT_ERROR_LINE_MAX 400

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
};

/* What the supervisor knows when the job has ended. */
struct smt_report_input {
	const char *current_host;
	int mpi;              /* the job ran under mpirun (else standalone rank 0) */
	int exit_code;        /* mpirun's / the program's exit code, -1 if signalled */
	int term_signal;      /* the signal that killed mpirun / the program, or 0 */
	int stop_signal;      /* the signal smtd received and forwarded, or 0 */
	int oom_kill;         /* the OOM killer killed a process of the job */
	int exec_errno;       /* exec of the program failed with this errno, or 0 */
	const char *program;  /* the rank's program (argv[0]), for messages; may be NULL */
	const char *workdir;  /* where the rank runs, to probe PROGRAM; may be NULL */
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

/* "RankFailed", ...; NULL for SMT_FAIL_NONE or out of range. */
const char *smt_failure_kind_name(enum smt_failure_kind kind);

/* Analyse IN and OUT (may be NULL: nothing was kept) into *R. */
void smt_report_analyse(const struct smt_output *out,
			const struct smt_report_input *in, struct smt_report *r);

/* The full failure text (summary line, then the rank's last error lines),
 * malloc'ed, NUL-terminated, *LEN bytes.  R from smt_report_analyse; when R
 * is NULL it is computed.  Returns 0 or -ENOMEM. */
int smt_report_build(const struct smt_output *out,
		     const struct smt_report_input *in,
		     const struct smt_report *r, char **text, size_t *len);

/*
 * How strongly LINE (LEN bytes, no newline) looks like the first line of an
 * error: 0 not at all, 1 maybe ("error" in it), 2 surely (a Python
 * exception line "ValueError: ...", "terminate called ...", "Segmentation
 * fault", MPI_ABORT, CUDA/NCCL errors, out of memory, ...).
 */
int smt_report_error_score(const char *line, size_t len);

/* The length of the valid UTF-8 sequence at P (N > 0 bytes left), or 0
 * when it is not one (overlong, surrogate, cut short or above U+10FFFF). */
size_t smt_report_utf8_len(const unsigned char *p, size_t n);

/* Whether PROGRAM can be executed, as execvp would find it from WORKDIR
 * (NULL: the current directory) with PATH (NULL: getenv("PATH")): 0, or
 * -ENOENT, -EACCES (exists but not executable, or a directory). */
int smt_report_probe_program(const char *program, const char *workdir,
			     const char *path);

#endif
