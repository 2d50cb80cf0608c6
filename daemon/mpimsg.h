/*
 * mpimsg.h - what mpirun's own messages say about a failure.
 *
 * The ranks' own exit statuses come from their launchers (ranks.h); what
 * only mpirun knows - it could not start the job, a host's daemon was lost,
 * a rank called MPI_Abort or exited without MPI_Finalize, a program could
 * not be executed - comes from its messages, kept in a ring by output.h.
 * mpirun wraps them at about 80 columns wherever a word falls, so they are
 * matched on one text where every run of blanks and line breaks is a single
 * space; the earliest message naming a rank wins, as it is the one that
 * says which process failed first.  Pure logic.
 */
#ifndef SMT_MPIMSG_H
#define SMT_MPIMSG_H

#include <stddef.h>

#include "ring.h"

enum smt_mpimsg_kind {
	SMT_MPIMSG_NONE = 0,
	SMT_MPIMSG_EXIT_CODE,    /* "Process name: [[J,S],R] Exit code: N" */
	SMT_MPIMSG_SIGNAL,       /* "mpirun noticed that process rank R ... exited on signal N" */
	SMT_MPIMSG_ABORT,        /* "MPI_ABORT was invoked on rank R ... errorcode N" */
	SMT_MPIMSG_IMPROPER,     /* "... exited due to process rank R ... without MPI_Finalize" */
	SMT_MPIMSG_EXEC,         /* "unable to launch the specified application" */
};

#define SMT_MPIMSG_SENTENCE_MAX 300
#define SMT_MPIMSG_PROGRAM_MAX 200

struct smt_mpimsg_facts {
	enum smt_mpimsg_kind kind;
	int rank, code, signo;              /* -1, -1, 0 when not said */
	char node[256];                     /* the host named, or "" */
	char exe[SMT_MPIMSG_PROGRAM_MAX + 1]; /* SMT_MPIMSG_EXEC's program */
	/* mpirun could not start the job: the first sentence that says why. */
	char launch[SMT_MPIMSG_SENTENCE_MAX + 1];
	/* mpirun lost a host's daemon: the host, or "" when not said. */
	int daemon_lost;
	char lost_host[256];
};

/* Read the facts from MSGS (may be NULL or empty: no facts). */
void smt_mpimsg_parse(const struct smt_ring *msgs, struct smt_mpimsg_facts *f);

/* mpirun's lines that say nothing about a failure: its rules of dashes,
 * the job header, the MPIR proctable. */
int smt_mpimsg_noise(const char *p, size_t n);

#endif
