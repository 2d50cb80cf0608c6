/* mpimsg.c - what mpirun's messages say about a failure (mpimsg.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpimsg.h"
#include "textesc.h"

static int starts_with(const char *p, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(p, prefix, k);
}

struct msgs {
	struct smt_dynbuf buf; /* every line, blanks normalized, joined by '\n' */
	const char *text;      /* its bytes, once collected */
	size_t len;
	char *flat;            /* the same with '\n' as ' ' */
};

static int collect_msg(void *arg, const struct smt_ring_entry *e, const char *p)
{
	struct msgs *m = arg;
	size_t n = e->len, k = 0;
	int space = 1;
	char *w = smt_dynbuf_reserve(&m->buf, n + 1);

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			if (!space)
				w[k++] = ' ';
			space = 1;
		} else {
			w[k++] = c;
			space = 0;
		}
	}
	if (k && w[k - 1] == ' ')
		k--;
	w[k++] = '\n';
	smt_dynbuf_commit(&m->buf, k);
	return 0;
}

static void msgs_free(struct msgs *m)
{
	smt_dynbuf_free(&m->buf);
	free(m->flat);
}

/* Position of the first occurrence of NEEDLE in the flat text, or NULL. */
static const char *flat_find(const struct msgs *m, const char *needle)
{
	return m->flat ? strstr(m->flat, needle) : NULL;
}

/* The sentence of mpirun's message that starts on the line holding AT (a
 * position in the flat text), into OUT: up to a '.', a ':' ending a line,
 * or a line the next one does not continue. */
static void sentence_at(const struct msgs *m, const char *at, char *out, size_t cap)
{
	size_t pos = (size_t)(at - m->flat), start = pos, end, len = 0;

	while (start > 0 && m->text[start - 1] != '\n')
		start--;
	for (end = start; end < m->len; end++) {
		char c = m->text[end];

		if (c == '.' && (end + 1 == m->len || m->text[end + 1] == ' ' ||
				 m->text[end + 1] == '\n')) {
			end++;
			break;
		}
		if (c == ':' && (end + 1 == m->len || m->text[end + 1] == '\n'))
			break;
		/* mpirun wraps its sentences: a line goes on only when the
		 * next one starts in lower case. */
		if (c == '\n' && !(end + 1 < m->len && islower((unsigned char)m->text[end + 1])))
			break;
	}
	smt_text_clean(out, &len, cap, m->text + start, end - start);
	while (len && out[len - 1] == ' ')
		out[--len] = '\0';
}

#define F_NONE SMT_MPIMSG_NONE
#define F_EXIT_CODE SMT_MPIMSG_EXIT_CODE
#define F_SIGNAL SMT_MPIMSG_SIGNAL
#define F_ABORT SMT_MPIMSG_ABORT
#define F_IMPROPER SMT_MPIMSG_IMPROPER
#define F_EXEC SMT_MPIMSG_EXEC
#define PROGRAM_MAX SMT_MPIMSG_PROGRAM_MAX

/* The facts as found, with where in the flat text. */
struct mpirun_facts {
	enum smt_mpimsg_kind what;
	const char *at;
	int rank, code, signo;
	char node[256];
	char exe[PROGRAM_MAX + 1];
	const char *launch_at;   /* a launch failure marker in the flat text */
};

static void consider(struct mpirun_facts *f, enum smt_mpimsg_kind what, const char *at)
{
	if (at && (!f->at || at < f->at)) {
		f->what = what;
		f->at = at;
	}
}

static void parse_mpirun(const struct msgs *m, struct mpirun_facts *f)
{
	static const char *const launch_markers[] = {
		"There are not enough slots available",
		"ORTE was unable to reliably start",
		"ORTE has lost communication",
		"An ORTE daemon has unexpectedly failed",
		"ORTE does not know how to route",
		"mpirun: Error",
		"mpirun was unable to find the specified executable",
		"ssh: ",
		"Host key verification failed",
		"Permission denied (publickey",
		"orted: command not found",
		"failed to start",
		"could not find an executable",
	};
	const char *p;

	memset(f, 0, sizeof(*f));
	f->rank = f->code = -1;
	consider(f, F_EXIT_CODE, flat_find(m, "Process name: [["));
	consider(f, F_SIGNAL, flat_find(m, "mpirun noticed that process rank "));
	consider(f, F_ABORT, flat_find(m, "MPI_ABORT was invoked on rank "));
	consider(f, F_IMPROPER, flat_find(m, "has exited due to process rank "));
	consider(f, F_EXEC, flat_find(m, "unable to launch the specified application"));
	for (size_t i = 0; i < sizeof(launch_markers) / sizeof(launch_markers[0]); i++) {
		p = flat_find(m, launch_markers[i]);
		if (p && (!f->launch_at || p < f->launch_at))
			f->launch_at = p;
	}
	p = f->at;
	switch (f->what) {
	case F_EXIT_CODE: {
		const char *c;
		int job, step;

		if (sscanf(p, "Process name: [[%d,%d],%d]", &job, &step, &f->rank) != 3)
			goto unknown;
		c = strstr(p, "Exit code: ");
		if (c && c - p < 200)
			f->code = atoi(c + 11);
		c = strstr(p, "Signal: ");
		if (f->code < 0 && c && c - p < 200)
			f->signo = atoi(c + 8);
		break;
	}
	case F_SIGNAL: {
		int pid;

		if (sscanf(p,
			   "mpirun noticed that process rank %d with PID %d on node %255s exited "
			   "on signal %d",
			   &f->rank, &pid, f->node, &f->signo) != 4)
			goto unknown;
		break;
	}
	case F_ABORT:
		if (sscanf(p, "MPI_ABORT was invoked on rank %d", &f->rank) != 1)
			goto unknown;
		p = strstr(p, " errorcode ");
		if (p && p - f->at < 200)
			f->code = atoi(p + 11);
		break;
	case F_IMPROPER: {
		int pid;

		if (sscanf(p, "has exited due to process rank %d with PID %d on node %255s",
			   &f->rank, &pid, f->node) != 3)
			goto unknown;
		break;
	}
	case F_EXEC: {
		const char *e = strstr(p, "Executable: ");
		const char *n = strstr(p, "Node: ");
		const char *r = strstr(p, "start process rank ");
		_Static_assert(PROGRAM_MAX == 200, "the %200s below");
		if (e && e - p < 300)
			sscanf(e + 12, "%200s", f->exe);
		if (n && n - p < 600)
			sscanf(n + 6, "%255s", f->node);
		if (r && r - p < 800)
			f->rank = atoi(r + 19);
		break;
	}
	case F_NONE:
		break;
	}
	return;
unknown:
	f->what = F_NONE;
	f->at = NULL;
}

/* mpirun's lines that say nothing about a failure: its rules of dashes,
 * the job header and the MPIR proctable. */
int smt_mpimsg_noise(const char *p, size_t n)
{
	size_t dashes = 0;
	int rank, k = 0;
	char line[64];

	while (dashes < n && p[dashes] == '-')
		dashes++;
	if (dashes >= 10 || memmem(p, n, "Data for JOB [", 14) ||
	    starts_with(p, n, "MPIR Proctable"))
		return 1;
	snprintf(line, sizeof(line), "%.*s", (int)(n < 63 ? n : 63), p);
	return sscanf(line, "%d: Host %n", &rank, &k) == 1 && k > 0;
}


void smt_mpimsg_parse(const struct smt_ring *msgs, struct smt_mpimsg_facts *out)
{
	struct msgs m = { 0 };
	struct mpirun_facts f;

	/* mpirun's messages are kept in a ring of bounded size. */
	smt_dynbuf_init(&m.buf, SIZE_MAX / 2);
	memset(out, 0, sizeof(*out));
	out->rank = out->code = -1;
	if (msgs && msgs->count) {
		smt_ring_foreach(msgs, 0, collect_msg, &m);
		m.len = smt_dynbuf_len(&m.buf);
		m.text = smt_dynbuf_ptr(&m.buf);
		if (m.len) {
			m.flat = strdup(m.text);
			for (char *c = m.flat; c && *c; c++)
				if (*c == '\n')
					*c = ' ';
		}
	}
	parse_mpirun(&m, &f);
	out->kind = f.what;
	out->rank = f.rank;
	out->code = f.code;
	out->signo = f.signo;
	snprintf(out->node, sizeof(out->node), "%s", f.node);
	snprintf(out->exe, sizeof(out->exe), "%s", f.exe);
	if (f.launch_at)
		sentence_at(&m, f.launch_at, out->launch, SMT_MPIMSG_SENTENCE_MAX);
	/* A host's orted died or became unreachable mid-job: name it. */
	const char *rd = flat_find(&m, "Remote daemon: [[");
	if (rd && flat_find(&m, "lost communication with a remote daemon")) {
		const char *node = strstr(rd, " on node ");
		size_t n = 0;
		out->daemon_lost = 1;
		if (node) {
			node += 9;
			while (node[n] && node[n] != ' ' && node[n] != '\n' &&
			       n < sizeof(out->lost_host) - 1)
				n++;
			snprintf(out->lost_host, sizeof(out->lost_host), "%.*s", (int)n, node);
		}
	}
	msgs_free(&m);
}
