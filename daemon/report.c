/*
 * report.c - the failure file's words (report.h): the table of kinds, the
 * analysis of what is known at the end, the summary line and the text.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpimsg.h"
#include "report.h"
#include "smt_proto.h"
#include "textesc.h"
#include "vec.h"

const struct smt_failure_kind_info smt_failure_kinds[SMT_FAIL_COUNT] = {
	[SMT_FAIL_STOPPED] = { "Stopped", -1,
		"smtd received a stopping signal (TERM, INT, HUP, QUIT) and stopped the job" },
	[SMT_FAIL_OOM] = { "OutOfMemory", 1,
		"the kernel's OOM killer killed a process of the job" },
	[SMT_FAIL_NOT_FOUND] = { "ProgramNotFound", 1, "the program does not exist" },
	[SMT_FAIL_NOT_EXECUTABLE] = { "ProgramNotExecutable", 1,
		"the program exists but cannot be executed" },
	[SMT_FAIL_RANK_FAILED] = { "RankFailed", 1,
		"a rank exited with a code other than 0, called MPI_Abort, or exited "
		"without MPI_Finalize" },
	[SMT_FAIL_RANK_KILLED] = { "RankKilled", 1, "a rank was killed by a signal" },
	[SMT_FAIL_LAUNCH] = { "LaunchFailed", 1, "the job could not be started" },
	[SMT_FAIL_MPIRUN_KILLED] = { "MpirunKilled", 1,
		"the launched command (mpirun, torchrun) was killed by a signal" },
	[SMT_FAIL_JOB_FAILED] = { "JobFailed", 1,
		"the launched command failed and no rank says why" },
	[SMT_FAIL_DAEMON_LOST] = { "DaemonLost", 1,
		"mpirun lost the Open MPI daemon of a host" },
	[SMT_FAIL_STALLED] = { "Stalled", 1,
		"no rank made progress for --stall-timeout (or none started within "
		"--start-timeout)" },
	[SMT_FAIL_CONFIG] = { "ConfigurationError", 2,
		"the options or the job's files are wrong; nothing was launched" },
	[SMT_FAIL_SSHD] = { "SshdFailed", 2, "sshd is needed and cannot be started" },
	[SMT_FAIL_PEERS_NOT_READY] = { "PeersNotReady", 3,
		"workers did not become ready within --wait-timeout" },
	[SMT_FAIL_LEADER_NOT_READY] = { "LeaderNotReady", 3,
		"the leader did not contact or launch within --wait-timeout" },
	[SMT_FAIL_LOST_HOST] = { "LostHost", 3, "a worker was lost during the job" },
	[SMT_FAIL_LOST_LEADER] = { "LostLeader", 3,
		"the leader was lost, or sent no result in time" },
	[SMT_FAIL_INTERNAL] = { "InternalError", 1,
		"smtd itself could not go on (out of memory, no event loop)" },
	[SMT_FAIL_INSTALL] = { "InstallFailed", 1,
		"pip could not install the code directory on a host; nothing was launched" },
	[SMT_FAIL_PREFLIGHT] = { "PreflightFailed", 1,
		"a host failed a check before the launch (GPUs, EFA, /dev/shm, disk, "
		"--preflight-command); nothing was launched" },
};

const char *smt_failure_kind_name(enum smt_failure_kind kind)
{
	if ((int)kind <= 0 || kind >= SMT_FAIL_COUNT)
		return NULL;
	return smt_failure_kinds[kind].name;
}

int smt_failure_exit_code(enum smt_failure_kind kind, int signo)
{
	if ((int)kind <= 0 || kind >= SMT_FAIL_COUNT)
		return 0;
	if (smt_failure_kinds[kind].exit_code < 0)
		return 128 + signo;
	return smt_failure_kinds[kind].exit_code;
}

char *smt_failure_text(enum smt_failure_kind kind, const char *fmt, ...)
{
	va_list ap;
	char *out;

	va_start(ap, fmt);
	out = smt_failure_vtext(kind, fmt, ap);
	va_end(ap);
	return out;
}

char *smt_failure_vtext(enum smt_failure_kind kind, const char *fmt, va_list ap)
{
	char raw[2048], *out;
	size_t len = 0;
	int n;

	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	if (n < 0)
		return NULL;
	out = malloc(SMT_REPORT_SUMMARY_MAX + 2);
	if (!out)
		return NULL;
	out[0] = '\0';
	smt_text_clean(out, &len, SMT_REPORT_SUMMARY_MAX, smt_failure_kind_name(kind),
		       strlen(smt_failure_kind_name(kind)));
	smt_text_clean(out, &len, SMT_REPORT_SUMMARY_MAX, ": ", 2);
	smt_text_clean(out, &len, SMT_REPORT_SUMMARY_MAX, raw, strlen(raw));
	out[len++] = '\n';
	out[len] = '\0';
	return out;
}

/* ---- wording ---- */

static void append_str(char *dst, size_t *len, size_t cap, const char *s)
{
	smt_text_clean(dst, len, cap, s, strlen(s));
}

static void appendf(char *dst, size_t *len, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void appendf(char *dst, size_t *len, size_t cap, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		smt_text_clean(dst, len, cap, tmp, strlen(tmp));
}

static void signame(int signo, char *out, size_t size)
{
	const char *n = smt_signal_name(signo);

	if (n)
		snprintf(out, size, "SIG%s", n);
	else
		snprintf(out, size, "signal %d", signo);
}

/* "rank R on H" (or "rank R" when the host is not known). */
static void who(const struct smt_report *r, char *s, size_t *len, size_t cap)
{
	if (r->host[0])
		appendf(s, len, cap, "rank %d on %s", r->rank, r->host);
	else
		appendf(s, len, cap, "rank %d", r->rank);
}

int smt_report_names(const char *failure, int rank, const char *host)
{
	char want[320];
	size_t first, n;
	const char *p;

	if (!failure || !host || !host[0])
		return 0;
	n = (size_t)snprintf(want, sizeof(want), "rank %d on %s", rank, host);
	if (n >= sizeof(want))
		return 0;
	first = strcspn(failure, "\n");
	for (p = failure; (p = memmem(p, first - (size_t)(p - failure), want, n)) != NULL; p++) {
		char next = p[n];

		/* Whole words: not "rank 1" for "rank 12", nor algo-2 for algo-22. */
		if ((p == failure || p[-1] == ' ') && (next == ' ' || next == ':' || next == '\n' ||
						      next == '\0' || next == ','))
			return 1;
	}
	return 0;
}

/* "64 MiB", "1.5 GiB", "512 KiB". */
static void size_words(long long bytes, char *out, size_t size)
{
	if (bytes >= 1024LL * 1024 * 1024 * 10 || (bytes >= 1024LL * 1024 * 1024 &&
						    bytes % (1024LL * 1024 * 1024) == 0))
		snprintf(out, size, "%lld GiB", (bytes + 512LL * 1024 * 1024) >> 30);
	else if (bytes >= 1024LL * 1024 * 1024)
		snprintf(out, size, "%.1f GiB", (double)bytes / (1024.0 * 1024 * 1024));
	else if (bytes >= 1024 * 1024)
		snprintf(out, size, "%lld MiB", (bytes + 512 * 1024) >> 20);
	else
		snprintf(out, size, "%lld KiB", (bytes + 512) >> 10);
}

/* A full or small /dev/shm, when it explains a SIGBUS. */
static void shm_words(const struct smt_crash *c, char *s, size_t *len, size_t cap)
{
	char a[32];

	if (!smt_crash_shm_tight(c))
		return;
	size_words(c->shm_size, a, sizeof(a));
	appendf(s, len, cap,
		"; /dev/shm is %s, %lld %% used (PyTorch DataLoader workers need more: "
		"--shm-size)",
		a, (c->shm_used * 100 + c->shm_size / 2) / c->shm_size);
}

/* What a killed rank's host saw at its death, after "was killed by SIGX"
 * (crash.h): where its Python code was, what memory it had against which
 * limit, how full /dev/shm was, or that someone outside the job sent the
 * SIGKILL (the rank table never names a rank smtd signalled first). */
static void death_words(const struct smt_crash *c, int signo, int oom, char *s, size_t *len,
			size_t cap)
{
	char a[32], b[32];

	if (oom) {
		append_str(s, len, cap, " (the kernel's OOM killer)");
		if (c->mem_kb > 0) {
			size_words(c->mem_kb * 1024, a, sizeof(a));
			appendf(s, len, cap, " with %s in use", a);
		}
		if (c->limit_bytes > 0) {
			size_words(c->limit_bytes, b, sizeof(b));
			appendf(s, len, cap, "%s the limit %s (%s)", c->mem_kb > 0 ? " of" : ":", b,
				c->limit_cgroup ? "the memory cgroup's" : "the host's memory");
		}
		return;
	}
	if (signo == SIGKILL)
		append_str(s, len, cap, " from another process (not smtd, no OOM kill recorded)");
	if (c->where[0]) {
		append_str(s, len, cap, " in ");
		append_str(s, len, cap, c->where);
	}
	if (signo == SIGBUS)
		shm_words(c, s, len, cap);
}

/* "KIND: rank R on H was killed by SIGX ..." for rank K killed by SIGNO:
 * the table's first failure, which ended on its own (NULL: the rank is
 * known from mpirun's words or the program's status only, and may have
 * ended by smtd's hand).  Returns whether the Python frame was named: then
 * the error line would only repeat the dump's first line. */
static int killed(struct smt_report *r, const struct smt_report_input *in,
		  const struct smt_rank *k, int signo, char *s, size_t *len, size_t cap)
{
	struct smt_crash c = { 0 };
	char sig[32];
	int oom;

	if (k)
		smt_ranks_crash(k, &c);
	oom = signo == SIGKILL && (c.oom || (in->oom_kill && (!k || k->local)));
	r->kind = oom ? SMT_FAIL_OOM : SMT_FAIL_RANK_KILLED;
	r->signal = signo;
	appendf(s, len, cap, "%s: ", smt_failure_kind_name(r->kind));
	who(r, s, len, cap);
	signame(signo, sig, sizeof(sig));
	appendf(s, len, cap, " was killed by %s", sig);
	if (k)
		death_words(&c, signo, oom, s, len, cap);
	else if (oom)
		append_str(s, len, cap, " (the kernel's OOM killer)");
	return c.where[0] != '\0';
}

static void with_error_line(const struct smt_report *r, char *s, size_t *len, size_t cap)
{
	if (r->error_line[0]) {
		append_str(s, len, cap, ": ");
		append_str(s, len, cap, r->error_line);
	}
}

static const struct smt_rank *rank_of(const struct smt_report_input *in, int rank)
{
	const struct smt_rank *k = in->ranks ? smt_ranks_find(in->ranks, rank) : NULL;

	return k && (!in->local_only || k->local) ? k : NULL;
}

/* The rank's error line, from what its host kept of its stderr. */
static void error_line_of(const struct smt_rank *k, int last_line, char *out)
{
	out[0] = '\0';
	if (k)
		smt_errline_pick(k->local ? &k->stderr_tail : NULL, k->tail, k->error_line,
				 last_line, out);
}

static void take_rank(struct smt_report *r, const struct smt_report_input *in, int rank,
		      const char *node, int last_line)
{
	const struct smt_rank *k = rank_of(in, rank);

	r->rank = rank;
	snprintf(r->host, sizeof(r->host), "%s",
		 node && *node ? node : k ? k->host : !in->command ? in->current_host : "");
	error_line_of(k, last_line, r->error_line);
}

/* The first rank with a known error line (for messages without a rank). */
static void name_a_rank(struct smt_report *r, const struct smt_report_input *in, char *s,
			size_t *len, size_t cap)
{
	int n = in->ranks ? smt_ranks_count(in->ranks) : 0;

	for (int i = 0; i < n; i++) {
		char line[SMT_ERRLINE_MAX + 1];
		const struct smt_rank *k = rank_of(in, i);

		error_line_of(k, 0, line);
		if (!line[0])
			continue;
		take_rank(r, in, i, NULL, 0);
		append_str(s, len, cap, "; ");
		who(r, s, len, cap);
		return;
	}
}

static int rank_failure(struct smt_report *r, const struct smt_report_input *in,
			const struct smt_mpimsg_facts *f, char *s, size_t *len, size_t cap)
{
	const struct smt_rank *k = in->ranks ? smt_ranks_first_failure(in->ranks, in->local_only)
					     : NULL;

	if (!k)
		return 0;
	take_rank(r, in, k->rank, NULL, !k->signo);
	if (k->exec_errno) {
		r->kind = k->exec_errno == ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE;
		r->exit_code = r->kind == SMT_FAIL_NOT_FOUND ? 127 : 126;
		r->error_line[0] = '\0';
		appendf(s, len, cap, "%s: %.*s on %s: %s (exit %d)", smt_failure_kind_name(r->kind),
			SMT_MPIMSG_PROGRAM_MAX, in->program ? in->program : "the program", r->host,
			strerror(k->exec_errno), r->exit_code);
		return 1;
	}
	if (k->signo) {
		if (killed(r, in, k, k->signo, s, len, cap))
			return 1;
	} else {
		r->kind = SMT_FAIL_RANK_FAILED;
		r->exit_code = k->exit_code;
		append_str(s, len, cap, "RankFailed: ");
		who(r, s, len, cap);
		appendf(s, len, cap, " exited with code %d%s", k->exit_code,
			f->kind == SMT_MPIMSG_ABORT && f->rank == k->rank ? " (MPI_Abort)" : "");
	}
	with_error_line(r, s, len, cap);
	/* A child of the rank died of SIGBUS and the rank told of it. */
	if (!k->signo && k->crash.bus_error)
		shm_words(&k->crash, s, len, cap);
	return 1;
}

/* What mpirun's messages say, when no rank's own end does. */
static int mpirun_failure(struct smt_report *r, const struct smt_report_input *in,
			  const struct smt_mpimsg_facts *f, char *s, size_t *len, size_t cap)
{
	switch (f->kind) {
	case SMT_MPIMSG_EXIT_CODE:
	case SMT_MPIMSG_ABORT:
	case SMT_MPIMSG_IMPROPER:
		take_rank(r, in, f->rank, f->node, f->kind != SMT_MPIMSG_SIGNAL && !f->signo);
		if (f->kind == SMT_MPIMSG_EXIT_CODE && f->signo) {
			if (killed(r, in, NULL, f->signo, s, len, cap))
				return 1;
			break;
		}
		r->kind = SMT_FAIL_RANK_FAILED;
		r->exit_code = f->code;
		append_str(s, len, cap, "RankFailed: ");
		who(r, s, len, cap);
		if (f->kind == SMT_MPIMSG_IMPROPER)
			append_str(s, len, cap, " exited without calling MPI_Finalize");
		else if (f->code >= 0)
			appendf(s, len, cap, " exited with code %d%s", f->code,
				f->kind == SMT_MPIMSG_ABORT ? " (MPI_Abort)" : "");
		else
			append_str(s, len, cap, " called MPI_Abort");
		break;
	case SMT_MPIMSG_SIGNAL:
		take_rank(r, in, f->rank, f->node, 0);
		if (killed(r, in, NULL, f->signo, s, len, cap))
			return 1;
		break;
	case SMT_MPIMSG_EXEC: {
		const char *exe = f->exe[0] ? f->exe : in->program ? in->program : "the program";
		int probe = 1;

		r->rank = f->rank;
		snprintf(r->host, sizeof(r->host), "%s", f->node);
		/* Only this host's file system can say which it is. */
		if (!f->node[0] || (in->current_host && !strcmp(f->node, in->current_host)))
			probe = smt_report_probe_program(exe, in->workdir, NULL);
		if (probe == -ENOENT || probe == -EACCES) {
			r->kind = probe == -ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE;
			r->exit_code = probe == -ENOENT ? 127 : 126;
			appendf(s, len, cap, "%s: %s", smt_failure_kind_name(r->kind), exe);
			if (r->host[0])
				appendf(s, len, cap, " on %s", r->host);
			appendf(s, len, cap, ": %s (exit %d)", strerror(-probe), r->exit_code);
		} else {
			r->kind = SMT_FAIL_LAUNCH;
			appendf(s, len, cap, "LaunchFailed: mpirun could not access or execute %s",
				exe);
			if (r->host[0])
				appendf(s, len, cap, " on %s", r->host);
		}
		return 2;
	}
	case SMT_MPIMSG_NONE:
		return 0;
	}
	with_error_line(r, s, len, cap);
	return 1;
}

void smt_report_analyse(const struct smt_report_input *in, struct smt_report *r)
{
	struct smt_mpimsg_facts f;
	char *s = r->summary;
	size_t len = 0, cap = SMT_REPORT_SUMMARY_MAX;
	char sig[32];
	const char *program = in->program && *in->program ? in->program : "the program";
	const char *cmd = in->command ? in->command : "the program";

	memset(r, 0, sizeof(*r));
	r->rank = -1;
	r->exit_code = -1;
	smt_mpimsg_parse(in->msgs, &f);

	if (in->stop_signal) {
		r->kind = SMT_FAIL_STOPPED;
		signame(in->stop_signal, sig, sizeof(sig));
		if (in->current_host)
			appendf(s, &len, cap, "Stopped: smtd on %s received %s and stopped the job",
				in->current_host, sig);
		else
			appendf(s, &len, cap, "Stopped: received %s", sig);
		return;
	}
	if (in->exec_errno) {
		r->kind = in->exec_errno == ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE;
		r->exit_code = r->kind == SMT_FAIL_NOT_FOUND ? 127 : 126;
		appendf(s, &len, cap, "%s: %.*s: %s (exit %d)", smt_failure_kind_name(r->kind),
			SMT_MPIMSG_PROGRAM_MAX, in->command ? in->command : program,
			strerror(in->exec_errno), r->exit_code);
		return;
	}
	if (rank_failure(r, in, &f, s, &len, cap))
		return;
	if (in->oom_kill) {
		r->kind = SMT_FAIL_OOM;
		appendf(s, &len, cap,
			"OutOfMemory: the kernel's OOM killer killed a process of the "
			"job on %s",
			in->current_host ? in->current_host : "this host");
		return;
	}
	if (mpirun_failure(r, in, &f, s, &len, cap))
		return;
	if (f.daemon_lost) {
		snprintf(r->host, sizeof(r->host), "%s", f.lost_host);
		r->kind = SMT_FAIL_DAEMON_LOST;
		appendf(s, &len, cap,
			"DaemonLost: mpirun lost the Open MPI daemon (orted) on %s: its "
			"host, its network link or orted itself failed",
			r->host[0] ? r->host : "a worker");
		return;
	}
	if (f.launch[0]) {
		r->kind = SMT_FAIL_LAUNCH;
		appendf(s, &len, cap, "LaunchFailed: %s could not start the job: %s", cmd,
			f.launch);
		return;
	}
	if (!in->command && (in->exit_code > 0 || in->term_signal)) {
		/* A standalone program is rank 0 itself. */
		take_rank(r, in, 0, NULL, !in->term_signal);
		if (in->term_signal) {
			if (killed(r, in, NULL, in->term_signal, s, &len, cap))
				return;
		} else {
			r->kind = SMT_FAIL_RANK_FAILED;
			r->exit_code = in->exit_code;
			append_str(s, &len, cap, "RankFailed: ");
			who(r, s, &len, cap);
			appendf(s, &len, cap, " exited with code %d", in->exit_code);
		}
		with_error_line(r, s, &len, cap);
		return;
	}
	if (in->term_signal) {
		r->kind = SMT_FAIL_MPIRUN_KILLED;
		signame(in->term_signal, sig, sizeof(sig));
		appendf(s, &len, cap, "MpirunKilled: %s was killed by %s", cmd, sig);
		name_a_rank(r, in, s, &len, cap);
		with_error_line(r, s, &len, cap);
		return;
	}
	r->kind = SMT_FAIL_JOB_FAILED;
	appendf(s, &len, cap, "JobFailed: %s exited with code %d", cmd, in->exit_code);
	name_a_rank(r, in, s, &len, cap);
	with_error_line(r, s, &len, cap);
}

/* ---- the failure text ---- */

struct lines {
	struct {
		char *p;
		size_t len;
	} *v;
	size_t n, cap;
	int skip_noise;
};

static int add_line(struct lines *l, const char *p, size_t n)
{
	if (l->skip_noise && smt_mpimsg_noise(p, n))
		return 0;
	if (SMT_VEC_RESERVE(l->v, l->cap, l->n + 1) < 0)
		return -ENOMEM;
	l->v[l->n].p = malloc(n ? n : 1);
	if (!l->v[l->n].p)
		return -ENOMEM;
	memcpy(l->v[l->n].p, p, n);
	l->v[l->n++].len = n;
	return 0;
}

static int collect_entry(void *arg, const struct smt_ring_entry *e, const char *line)
{
	return add_line(arg, line, e->len);
}

/* Like smt_text_clean, but a tab stays a tab (the replacements are byte
 * for byte, so positions match). */
static void append_report_line(char *dst, size_t *len, size_t cap, const char *p, size_t n)
{
	size_t start = *len;

	smt_text_clean(dst, len, cap, p, n);
	for (size_t i = 0; start + i < *len && i < n; i++)
		if (p[i] == '\t')
			dst[start + i] = '\t';
}

int smt_report_build(const struct smt_report_input *in, const struct smt_report *r, char **text,
		     size_t *len)
{
	struct smt_report *mine = NULL;
	struct lines l = { 0 };
	char *t = NULL, *dump = NULL;
	size_t tl = 0, room, first;
	int err = -ENOMEM, from_start = 0;

	if (!r) {
		mine = malloc(sizeof(*mine));
		if (!mine)
			goto out;
		smt_report_analyse(in, mine);
		r = mine;
	}
	t = malloc(SMT_REPORT_SHOWN + 1);
	if (!t)
		goto out;
	t[0] = '\0';
	append_str(t, &tl, SMT_REPORT_SUMMARY_MAX, r->summary);
	t[tl++] = '\n';
	t[tl] = '\0';
	if (r->kind != SMT_FAIL_STOPPED && r->kind != SMT_FAIL_NOT_FOUND &&
	    r->kind != SMT_FAIL_NOT_EXECUTABLE) {
		const struct smt_rank *k = r->rank >= 0 ? rank_of(in, r->rank) : NULL;

		/* A crashed Python rank's dump (its worker sends it as the
		 * tail) shows from its start: the error, the crashing thread. */
		if (k && k->local && r->signal && (dump = smt_ranks_dump(k)) != NULL) {
			from_start = 1;
			for (const char *p = dump; *p;
			     p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n'))
				if (add_line(&l, p, strcspn(p, "\n")) < 0)
					goto out;
		} else if (k && k->local) {
			if (smt_ring_foreach(&k->stderr_tail, 0, collect_entry, &l) < 0)
				goto out;
		} else if (k && k->tail) {
			from_start = r->signal && k->crash.where[0];
			for (char **p = k->tail; *p; p++)
				if (add_line(&l, *p, strlen(*p)) < 0)
					goto out;
		} else if (in->msgs) {
			l.skip_noise = 1;
			if (smt_ring_foreach(in->msgs, 0, collect_entry, &l) < 0)
				goto out;
		}
	}
	/* The last lines that fit in what SageMaker shows, whole; when not
	 * even the last one fits, its beginning. */
	room = SMT_REPORT_SHOWN - tl;
	first = l.n;
	for (size_t used = 0; first > 0 && used + l.v[first - 1].len + 1 <= room; first--)
		used += l.v[first - 1].len + 1;
	if (first == l.n && l.n > 0)
		first = l.n - 1;
	if (from_start)
		first = 0;
	for (size_t i = first; i < l.n && tl < SMT_REPORT_SHOWN - 1; i++) {
		if (from_start && i > 0 && tl + l.v[i].len + 1 > SMT_REPORT_SHOWN - 1)
			break;
		append_report_line(t, &tl, SMT_REPORT_SHOWN - 1, l.v[i].p, l.v[i].len);
		t[tl++] = '\n';
		t[tl] = '\0';
	}
	*text = t;
	*len = tl;
	t = NULL;
	err = 0;
out:
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].p);
	free(l.v);
	free(t);
	free(dump);
	free(mine);
	return err;
}

/* ---- the program probe ----------------------------------------------- */

static int probe_file(const char *file)
{
	struct stat st;

	if (stat(file, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EACCES;
	if (S_ISDIR(st.st_mode) || access(file, X_OK) < 0)
		return -EACCES;
	return 0;
}

int smt_report_probe_program(const char *program, const char *workdir,
			     const char *path)
{
	char file[4096];
	int ret = -ENOENT;

	if (!program || !*program)
		return -ENOENT;
	if (strchr(program, '/')) {
		if (program[0] == '/' || !workdir)
			snprintf(file, sizeof(file), "%s", program);
		else
			snprintf(file, sizeof(file), "%s/%s", workdir, program);
		return probe_file(file);
	}
	if (!path)
		path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		int r;

		/* An empty entry is the current directory, as for execvp. */
		if (n == 0)
			snprintf(file, sizeof(file), "%s/%s", workdir ? workdir : ".", program);
		else if (path[0] != '/' && workdir)
			snprintf(file, sizeof(file), "%s/%.*s/%s", workdir, (int)n, path, program);
		else
			snprintf(file, sizeof(file), "%.*s/%s", (int)n, path, program);
		r = probe_file(file);
		if (r == 0)
			return 0;
		if (r == -EACCES)
			ret = -EACCES;
		path += n;
		if (*path == ':')
			path++;
	}
	return ret;
}
