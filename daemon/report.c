/*
 * report.c - from mpirun's messages and the ranks' last lines to the
 * failure summary (report.h).
 *
 * mpirun wraps its messages at about 80 columns wherever a word falls, so
 * they are matched on one text where every run of blanks and line breaks
 * is a single space; the earliest message naming a rank wins, as it is the
 * one that says which process failed first.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "smt_proto.h"

#define SENTENCE_MAX 300
#define PROGRAM_MAX 200

static const char *const kind_names[] = {
	[SMT_FAIL_STOPPED] = "Stopped",
	[SMT_FAIL_OOM] = "OutOfMemory",
	[SMT_FAIL_NOT_FOUND] = "ProgramNotFound",
	[SMT_FAIL_NOT_EXECUTABLE] = "ProgramNotExecutable",
	[SMT_FAIL_RANK_FAILED] = "RankFailed",
	[SMT_FAIL_RANK_KILLED] = "RankKilled",
	[SMT_FAIL_LAUNCH] = "LaunchFailed",
	[SMT_FAIL_MPIRUN_KILLED] = "MpirunKilled",
	[SMT_FAIL_JOB_FAILED] = "JobFailed",
	[SMT_FAIL_DAEMON_LOST] = "DaemonLost",
};

const char *smt_failure_kind_name(enum smt_failure_kind kind)
{
	if ((int)kind <= 0 || (size_t)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return NULL;
	return kind_names[kind];
}

/* ---- text helpers ----------------------------------------------------- */

static const char *memfind(const char *h, size_t hn, const char *needle)
{
	size_t n = strlen(needle);

	if (n == 0 || hn < n)
		return NULL;
	for (size_t i = 0; i + n <= hn; i++)
		if (h[i] == needle[0] && !memcmp(h + i, needle, n))
			return h + i;
	return NULL;
}

static int starts_with(const char *p, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(p, prefix, k);
}

size_t smt_report_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < need + 1 || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i <= need; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return need + 1;
}

/*
 * Append SRC (N bytes) to DST (holding *LEN bytes, CAP bytes of room before
 * the terminating NUL) as clean one-line text: control bytes become spaces,
 * invalid UTF-8 bytes '?', and it stops before a character that would not
 * fit whole.  Returns nonzero when it had to stop short.
 */
static int append_clean(char *dst, size_t *len, size_t cap, const char *src, size_t n)
{
	const unsigned char *u = (const unsigned char *)src;
	size_t i = 0;
	int cut = 0;

	while (i < n) {
		size_t k = smt_report_utf8_len(u + i, n - i);

		if (*len + (k ? k : 1) > cap) {
			cut = 1;
			break;
		}
		if (k == 0) {
			dst[(*len)++] = '?';
			i++;
		} else if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			dst[(*len)++] = ' ';
			i++;
		} else {
			memcpy(dst + *len, src + i, k);
			*len += k;
			i += k;
		}
	}
	dst[*len] = '\0';
	return cut;
}

static void append_str(char *dst, size_t *len, size_t cap, const char *s)
{
	append_clean(dst, len, cap, s, strlen(s));
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
	if (n < 0)
		return;
	append_clean(dst, len, cap, tmp, strlen(tmp));
}

/* ---- error lines -------------------------------------------------------- */

/* "ValueError: ...", "torch.cuda.OutOfMemoryError", "KeyboardInterrupt":
 * a dotted name at the start of the line ending in one of Python's
 * exception suffixes, then the end of the line or ": ". */
static int python_exception_line(const char *p, size_t n)
{
	static const char *const suffixes[] = {
		"Error", "Exception", "Exit", "Interrupt", "Fault", "Failure",
	};
	size_t i = 0;

	if (!n || !(isalpha((unsigned char)p[0]) || p[0] == '_'))
		return 0;
	while (i < n && (isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == '.'))
		i++;
	if (i < n && !(p[i] == ':' && (i + 1 == n || p[i + 1] == ' ')))
		return 0;
	for (size_t s = 0; s < sizeof(suffixes) / sizeof(suffixes[0]); s++) {
		size_t k = strlen(suffixes[s]);

		if (i >= k && !memcmp(p + i - k, suffixes[s], k))
			return 1;
	}
	return 0;
}

int smt_report_error_score(const char *line, size_t len)
{
	static const char *const strong[] = {
		"terminate called", "Segmentation fault", "Bus error",
		"Floating point exception", "Illegal instruction", "Aborted (core dumped)",
		"MPI_ABORT", "MPI_Abort", "CUDA error", "NCCL error", "CUDA out of memory",
		"out of memory", "Out of memory", "what():  ", "*** Error", "Fatal Python error",
		"core dumped", "double free", "stack smashing", "AddressSanitizer",
		/* The exception classes of smdistributed, which the toolkit
		 * catches by name (smdataparallel_exceptions.py, and
		 * smdistributed.modelparallel's backend and torch exceptions):
		 * their libraries log them inside longer lines too. */
		"SMDDPError", "SMDDPValidationError", "SMDDPConfigError",
		"SMDDPInvalidArgumentError", "SMDDPUnsupportedError", "SMDDPRuntimeError",
		"SMDDPInitializationError", "SMDDPLogicError", "SMDDPTimeoutError", "SMDDPCUDAError",
		"SMDDPNCCLError", "SMDDPOOMError", "SMPValidationError", "SMPConfigError",
		"SMPInvalidArgumentError", "SMPUnsupportedError", "SMPRuntimeError", "SMPSegFault",
		"TensorSplitError", "CommGroupConfigError",
	};
	static const char *const weak[] = {
		"error", "Error", "ERROR", "FATAL", "Fatal", "fatal", "failed", "Failed",
		"FAILED", "exception", "Exception", "Killed",
	};

	if (python_exception_line(line, len))
		return 2;
	for (size_t i = 0; i < sizeof(strong) / sizeof(strong[0]); i++)
		if (memfind(line, len, strong[i]))
			return 2;
	for (size_t i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		if (memfind(line, len, weak[i]))
			return 1;
	return 0;
}

/* Open MPI prefixes its handler's lines with "[host:pid] ": not part of the
 * error. */
static void skip_ompi_prefix(const char **p, size_t *n)
{
	const char *close;

	if (*n < 4 || (*p)[0] != '[')
		return;
	close = memchr(*p, ']', *n);
	if (!close || !memchr(*p, ':', (size_t)(close - *p)) || (size_t)(close - *p) + 2 > *n ||
	    close[1] != ' ')
		return;
	*n -= (size_t)(close + 2 - *p);
	*p = close + 2;
}

struct line_scan {
	int after_traceback;
	char python[SMT_REPORT_ERROR_LINE_MAX + 1]; /* last exception line after a traceback */
	char strong[SMT_REPORT_ERROR_LINE_MAX + 1]; /* first strong line */
	char weak[SMT_REPORT_ERROR_LINE_MAX + 1];   /* first weak line */
	char last[SMT_REPORT_ERROR_LINE_MAX + 1];   /* last non-blank line */
};

static void set_line(char *dst, const char *p, size_t n)
{
	size_t len = 0;

	skip_ompi_prefix(&p, &n);
	append_clean(dst, &len, SMT_REPORT_ERROR_LINE_MAX, p, n);
}

static int scan_line(void *arg, const char *p, size_t n, int truncated)
{
	struct line_scan *s = arg;
	int score;

	(void)truncated;
	if (n && strspn(p, " \t") < n)
		set_line(s->last, p, n);
	if (starts_with(p, n, "Traceback (most recent call last):")) {
		s->after_traceback = 1;
		return 0;
	}
	if (s->after_traceback && n && p[0] != ' ' && python_exception_line(p, n)) {
		set_line(s->python, p, n);
		s->after_traceback = 0;
		return 0;
	}
	score = smt_report_error_score(p, n);
	if (score >= 2 && !s->strong[0])
		set_line(s->strong, p, n);
	else if (score == 1 && !s->weak[0])
		set_line(s->weak, p, n);
	return 0;
}

/* RANK's first error line into R->error_line.  With nothing that looks
 * like an error, LAST_LINE allows its last stderr line instead: a program
 * that exits with a code usually says why last. */
static void find_error_line(const struct smt_output *out, int rank, struct smt_report *r,
			    int last_line)
{
	struct line_scan *s;
	const char *first;
	size_t n;

	r->error_line[0] = '\0';
	if (!out || rank < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	smt_output_rank_tail(out, rank, scan_line, s);
	first = smt_output_rank_first_error(out, rank, &n);
	if (s->python[0])
		strcpy(r->error_line, s->python);
	else if (first)
		set_line(r->error_line, first, n);
	else if (s->strong[0])
		strcpy(r->error_line, s->strong);
	else if (s->weak[0])
		strcpy(r->error_line, s->weak);
	else if (last_line)
		strcpy(r->error_line, s->last);
	free(s);
}

/* ---- mpirun's messages ------------------------------------------------ */

struct msgs {
	char *text;      /* every line, blanks normalized, joined by '\n' */
	size_t len, cap;
	char *flat;      /* the same with '\n' as ' ' */
};

static int collect_msg(void *arg, const char *p, size_t n, int truncated)
{
	struct msgs *m = arg;
	int space = 1;

	(void)truncated;
	if (m->len + n + 2 > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		char *t;

		while (cap < m->len + n + 2)
			cap *= 2;
		t = realloc(m->text, cap);
		if (!t)
			return -ENOMEM;
		m->text = t;
		m->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			if (!space)
				m->text[m->len++] = ' ';
			space = 1;
		} else {
			m->text[m->len++] = c;
			space = 0;
		}
	}
	if (m->len && m->text[m->len - 1] == ' ')
		m->len--;
	m->text[m->len++] = '\n';
	m->text[m->len] = '\0';
	return 0;
}

static void msgs_free(struct msgs *m)
{
	free(m->text);
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
	append_clean(out, &len, cap, m->text + start, end - start);
	while (len && out[len - 1] == ' ')
		out[--len] = '\0';
}

enum found {
	F_NONE, F_EXIT_CODE, F_SIGNAL, F_ABORT, F_IMPROPER, F_EXEC,
};

struct mpirun_facts {
	enum found what;
	const char *at;
	int rank, code, signo;
	char node[256];
	char exe[PROGRAM_MAX + 1];
	const char *launch_at;   /* a launch failure marker in the flat text */
};

static void consider(struct mpirun_facts *f, enum found what, const char *at)
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

		if (sscanf(p, "mpirun noticed that process rank %d with PID %d on node %255s exited on signal %d",
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

/* ---- the analysis ----------------------------------------------------- */

static void signame(int signo, char *out, size_t size)
{
	const char *n = smt_signal_name(signo);

	if (n)
		snprintf(out, size, "SIG%s", n);
	else
		snprintf(out, size, "signal %d", signo);
}

static void set_host(struct smt_report *r, const struct smt_output *out,
		     const struct smt_report_input *in, const char *node)
{
	const char *h = node && *node ? node : NULL;

	if (!h && out && r->rank >= 0)
		h = smt_output_rank_host(out, r->rank);
	if (!h && !in->mpi)
		h = in->current_host;
	snprintf(r->host, sizeof(r->host), "%s", h ? h : "");
}

/* "rank R on H" (or "rank R" when the host is not known). */
static void who(const struct smt_report *r, char *s, size_t *len, size_t cap)
{
	if (r->host[0])
		appendf(s, len, cap, "rank %d on %s", r->rank, r->host);
	else
		appendf(s, len, cap, "rank %d", r->rank);
}

static void with_error_line(const struct smt_report *r, char *s, size_t *len, size_t cap)
{
	if (r->error_line[0]) {
		append_str(s, len, cap, ": ");
		append_str(s, len, cap, r->error_line);
	}
}

/* The first rank with a known error line (for messages without a rank). */
static int any_failed_rank(const struct smt_output *out, struct smt_report *r)
{
	int n = out ? smt_output_rank_count(out) : 0;

	for (int k = 0; k < n; k++) {
		find_error_line(out, k, r, 0);
		if (r->error_line[0])
			return k;
	}
	return -1;
}

/* For a summary that names no rank itself: "; rank R on H" of the first
 * rank with a known error line, if any. */
static void name_failed_rank(struct smt_report *r, const struct smt_output *out,
			     const struct smt_report_input *in, char *s, size_t *len, size_t cap)
{
	r->rank = any_failed_rank(out, r);
	if (r->rank < 0)
		return;
	set_host(r, out, in, NULL);
	append_str(s, len, cap, "; ");
	who(r, s, len, cap);
}

void smt_report_analyse(const struct smt_output *out,
			const struct smt_report_input *in, struct smt_report *r)
{
	struct msgs m = { 0 };
	struct mpirun_facts f;
	char *s = r->summary;
	size_t len = 0, cap = SMT_REPORT_SUMMARY_MAX;
	char sig[32];
	const char *program = in->program && *in->program ? in->program : "the program";

	memset(r, 0, sizeof(*r));
	r->rank = -1;
	r->exit_code = -1;
	if (out) {
		smt_output_mpirun_lines(out, collect_msg, &m);
		if (m.text) {
			m.flat = strdup(m.text);
			for (char *c = m.flat; c && *c; c++)
				if (*c == '\n')
					*c = ' ';
		}
	}
	parse_mpirun(&m, &f);

	if (f.what != F_NONE && f.what != F_EXEC) {
		r->rank = f.rank;
		r->exit_code = f.code;
		r->signal = f.signo;
		set_host(r, out, in, f.node);
		find_error_line(out, r->rank, r, f.what != F_SIGNAL && !f.signo);
	} else if (!in->mpi) {
		r->rank = 0;
		r->exit_code = in->exit_code;
		r->signal = in->term_signal;
		set_host(r, out, in, NULL);
		find_error_line(out, 0, r, !in->term_signal);
	}

	if (in->stop_signal) {
		r->kind = SMT_FAIL_STOPPED;
		signame(in->stop_signal, sig, sizeof(sig));
		appendf(s, &len, cap, "Stopped: received %s", sig);
		goto out;
	}
	if (in->oom_kill) {
		r->kind = SMT_FAIL_OOM;
		append_str(s, &len, cap, "OutOfMemory: ");
		if (r->rank >= 0 && r->signal) {
			who(r, s, &len, cap);
			signame(r->signal, sig, sizeof(sig));
			appendf(s, &len, cap, " was killed by %s (the kernel's OOM killer)", sig);
			with_error_line(r, s, &len, cap);
		} else {
			appendf(s, &len, cap, "the kernel's OOM killer killed a process of the job on %s",
				in->current_host ? in->current_host : "this host");
		}
		goto out;
	}
	if (in->exec_errno) {
		r->kind = in->exec_errno == ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE;
		r->exit_code = r->kind == SMT_FAIL_NOT_FOUND ? 127 : 126;
		r->error_line[0] = '\0';
		appendf(s, &len, cap, "%s: %.*s: %s (exit %d)", smt_failure_kind_name(r->kind),
			PROGRAM_MAX, program, strerror(in->exec_errno), r->exit_code);
		goto out;
	}
	switch (f.what) {
	case F_EXIT_CODE:
	case F_ABORT:
	case F_IMPROPER:
		if (f.what == F_EXIT_CODE && r->signal) {
			r->kind = SMT_FAIL_RANK_KILLED;
			append_str(s, &len, cap, "RankKilled: ");
			who(r, s, &len, cap);
			signame(r->signal, sig, sizeof(sig));
			appendf(s, &len, cap, " was killed by %s", sig);
			break;
		}
		r->kind = SMT_FAIL_RANK_FAILED;
		append_str(s, &len, cap, "RankFailed: ");
		who(r, s, &len, cap);
		if (f.what == F_IMPROPER)
			append_str(s, &len, cap, " exited without calling MPI_Finalize");
		else if (r->exit_code >= 0)
			appendf(s, &len, cap, " exited with code %d%s", r->exit_code,
				f.what == F_ABORT ? " (MPI_Abort)" : "");
		else
			append_str(s, &len, cap, " called MPI_Abort");
		break;
	case F_SIGNAL:
		r->kind = SMT_FAIL_RANK_KILLED;
		append_str(s, &len, cap, "RankKilled: ");
		who(r, s, &len, cap);
		signame(r->signal, sig, sizeof(sig));
		appendf(s, &len, cap, " was killed by %s", sig);
		break;
	case F_EXEC: {
		const char *exe = f.exe[0] ? f.exe : program;
		int probe = 1;

		r->rank = f.rank;
		snprintf(r->host, sizeof(r->host), "%s", f.node);
		/* Only this host's file system can say which it is. */
		if (!f.node[0] || (in->current_host && !strcmp(f.node, in->current_host)))
			probe = smt_report_probe_program(exe, in->workdir, NULL);
		if (probe == -ENOENT || probe == -EACCES) {
			r->kind = probe == -ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE;
			r->exit_code = probe == -ENOENT ? 127 : 126;
			appendf(s, &len, cap, "%s: %s", smt_failure_kind_name(r->kind), exe);
			if (r->host[0])
				appendf(s, &len, cap, " on %s", r->host);
			appendf(s, &len, cap, ": %s (exit %d)", strerror(-probe), r->exit_code);
		} else {
			r->kind = SMT_FAIL_LAUNCH;
			appendf(s, &len, cap, "LaunchFailed: mpirun could not access or execute %s", exe);
			if (r->host[0])
				appendf(s, &len, cap, " on %s", r->host);
		}
		goto out;
	}
	case F_NONE:
		/* A host's orted died or became unreachable mid-job: name it. */
		if (flat_find(&m, "Remote daemon: [[") &&
		    flat_find(&m, "lost communication with a remote daemon")) {
			const char *node = strstr(flat_find(&m, "Remote daemon: [["), " on node ");
			size_t n = 0;
			if (node) {
				node += 9;
				while (node[n] && node[n] != ' ' && node[n] != '\n' && n < sizeof(r->host) - 1)
					n++;
				snprintf(r->host, sizeof(r->host), "%.*s", (int)n, node);
			}
			r->kind = SMT_FAIL_DAEMON_LOST;
			appendf(s, &len, cap, "DaemonLost: mpirun lost the Open MPI daemon (orted) on %s: "
				"its host, its network link or orted itself failed",
				r->host[0] ? r->host : "a worker");
			goto out;
		}
		if (f.launch_at) {
			char sentence[SENTENCE_MAX + 1];

			r->kind = SMT_FAIL_LAUNCH;
			sentence_at(&m, f.launch_at, sentence, SENTENCE_MAX);
			appendf(s, &len, cap, "LaunchFailed: mpirun could not start the job: %s", sentence);
			goto out;
		}
		if (!in->mpi && (in->exit_code > 0 || in->term_signal)) {
			if (in->term_signal) {
				r->kind = SMT_FAIL_RANK_KILLED;
				append_str(s, &len, cap, "RankKilled: ");
				who(r, s, &len, cap);
				signame(in->term_signal, sig, sizeof(sig));
				appendf(s, &len, cap, " was killed by %s", sig);
			} else {
				r->kind = SMT_FAIL_RANK_FAILED;
				append_str(s, &len, cap, "RankFailed: ");
				who(r, s, &len, cap);
				appendf(s, &len, cap, " exited with code %d", in->exit_code);
			}
			break;
		}
		if (in->mpi && in->term_signal) {
			r->kind = SMT_FAIL_MPIRUN_KILLED;
			signame(in->term_signal, sig, sizeof(sig));
			appendf(s, &len, cap, "MpirunKilled: mpirun was killed by %s", sig);
			name_failed_rank(r, out, in, s, &len, cap);
			break;
		}
		r->kind = SMT_FAIL_JOB_FAILED;
		if (in->mpi)
			appendf(s, &len, cap, "JobFailed: mpirun exited with code %d", in->exit_code);
		else
			appendf(s, &len, cap, "JobFailed: the program exited with code %d", in->exit_code);
		name_failed_rank(r, out, in, s, &len, cap);
		break;
	}
	with_error_line(r, s, &len, cap);
out:
	msgs_free(&m);
}

/* ---- the failure text ------------------------------------------------- */

struct lines {
	char **line;
	size_t *len;
	size_t n, cap;
	int skip_rules;   /* mpirun's "-----" rules carry nothing */
};

/* mpirun's lines that say nothing about a failure: its rules of dashes,
 * the job header and the MPIR proctable. */
static int is_noise(const char *p, size_t n)
{
	size_t dashes = 0;
	int rank, k = 0;
	char line[64];

	while (dashes < n && p[dashes] == '-')
		dashes++;
	if (dashes >= 10 || memfind(p, n, "Data for JOB [") || starts_with(p, n, "MPIR Proctable"))
		return 1;
	snprintf(line, sizeof(line), "%.*s", (int)(n < 63 ? n : 63), p);
	return sscanf(line, "%d: Host %n", &rank, &k) == 1 && k > 0;
}

static int collect_line(void *arg, const char *p, size_t n, int truncated)
{
	struct lines *l = arg;

	(void)truncated;
	if (l->skip_rules && is_noise(p, n))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **line = realloc(l->line, cap * sizeof(*line));
		size_t *len;

		if (!line)
			return -ENOMEM;
		l->line = line;
		len = realloc(l->len, cap * sizeof(*len));
		if (!len)
			return -ENOMEM;
		l->len = len;
		l->cap = cap;
	}
	l->line[l->n] = malloc(n ? n : 1);
	if (!l->line[l->n])
		return -ENOMEM;
	memcpy(l->line[l->n], p, n);
	l->len[l->n++] = n;
	return 0;
}

/* Like append_clean, but a tab stays a tab (the replacements are byte for
 * byte, so positions match). */
static void append_report_line(char *dst, size_t *len, size_t cap, const char *p, size_t n)
{
	size_t start = *len;

	append_clean(dst, len, cap, p, n);
	for (size_t i = 0; start + i < *len; i++)
		if (p[i] == '\t')
			dst[start + i] = '\t';
}

int smt_report_build(const struct smt_output *out,
		     const struct smt_report_input *in,
		     const struct smt_report *r, char **text, size_t *len)
{
	struct smt_report *mine = NULL;
	struct lines l = { 0 };
	char *t = NULL;
	size_t tl = 0, room, first;
	int err = -ENOMEM;

	if (!r) {
		mine = malloc(sizeof(*mine));
		if (!mine)
			goto out;
		smt_report_analyse(out, in, mine);
		r = mine;
	}
	t = malloc(SMT_REPORT_SHOWN + 1);
	if (!t)
		goto out;
	t[0] = '\0';
	append_str(t, &tl, SMT_REPORT_SUMMARY_MAX, r->summary);
	t[tl++] = '\n';
	t[tl] = '\0';
	if (out && r->kind != SMT_FAIL_STOPPED &&
	    r->kind != SMT_FAIL_NOT_FOUND && r->kind != SMT_FAIL_NOT_EXECUTABLE) {
		if (r->rank >= 0) {
			if (smt_output_rank_tail(out, r->rank, collect_line, &l) < 0)
				goto out;
		} else {
			l.skip_rules = 1;
			if (smt_output_mpirun_lines(out, collect_line, &l) < 0)
				goto out;
		}
	}
	/* The last lines that fit in what SageMaker shows, whole; when not
	 * even the last one fits, its beginning. */
	room = SMT_REPORT_SHOWN - tl;
	first = l.n;
	for (size_t used = 0; first > 0 && used + l.len[first - 1] + 1 <= room; first--)
		used += l.len[first - 1] + 1;
	if (first == l.n && l.n > 0)
		first = l.n - 1;
	for (size_t i = first; i < l.n && tl < SMT_REPORT_SHOWN - 1; i++) {
		append_report_line(t, &tl, SMT_REPORT_SHOWN - 1, l.line[i], l.len[i]);
		t[tl++] = '\n';
		t[tl] = '\0';
	}
	*text = t;
	*len = tl;
	t = NULL;
	err = 0;
out:
	for (size_t i = 0; i < l.n; i++)
		free(l.line[i]);
	free(l.line);
	free(l.len);
	free(t);
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
