/* errline.c - the line that says what went wrong (errline.h). */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "errline.h"
#include "textesc.h"

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

int smt_errline_score(const char *line, size_t len)
{
	static const char *const strong[] = {
		"terminate called",
		"Segmentation fault",
		"Bus error",
		"Floating point exception",
		"Illegal instruction",
		"Aborted (core dumped)",
		"MPI_ABORT",
		"MPI_Abort",
		"CUDA error",
		"NCCL error",
		"CUDA out of memory",
		"out of memory",
		"Out of memory",
		"what():  ",
		"*** Error",
		"Fatal Python error",
		"core dumped",
		"double free",
		"stack smashing",
		"AddressSanitizer",
		/* The exception classes of smdistributed, which the toolkit
		 * catches by name (smdataparallel_exceptions.py, and
		 * smdistributed.modelparallel's backend and torch exceptions):
		 * their libraries log them inside longer lines too. */
		"SMDDPError",
		"SMDDPValidationError",
		"SMDDPConfigError",
		"SMDDPInvalidArgumentError",
		"SMDDPUnsupportedError",
		"SMDDPRuntimeError",
		"SMDDPInitializationError",
		"SMDDPLogicError",
		"SMDDPTimeoutError",
		"SMDDPCUDAError",
		"SMDDPNCCLError",
		"SMDDPOOMError",
		"SMPValidationError",
		"SMPConfigError",
		"SMPInvalidArgumentError",
		"SMPUnsupportedError",
		"SMPRuntimeError",
		"SMPSegFault",
		"TensorSplitError",
		"CommGroupConfigError",
	};
	static const char *const weak[] = {
		"error", "Error", "ERROR", "FATAL", "Fatal", "fatal", "failed", "Failed",
		"FAILED", "exception", "Exception", "Killed",
	};

	if (python_exception_line(line, len))
		return 2;
	for (size_t i = 0; i < sizeof(strong) / sizeof(strong[0]); i++)
		if (memmem(line, len, strong[i], strlen(strong[i])))
			return 2;
	for (size_t i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		if (memmem(line, len, weak[i], strlen(weak[i])))
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

struct scan {
	int after_traceback;
	char python[SMT_ERRLINE_MAX + 1]; /* the exception line after a traceback */
	char strong[SMT_ERRLINE_MAX + 1]; /* the first strong line */
	char weak[SMT_ERRLINE_MAX + 1];   /* the first weak line */
	char last[SMT_ERRLINE_MAX + 1];   /* the last non-blank line */
};

static void set_line(char *dst, const char *p, size_t n)
{
	size_t len = 0;

	skip_ompi_prefix(&p, &n);
	smt_text_clean(dst, &len, SMT_ERRLINE_MAX, p, n);
}

/* Only blanks (the line is not NUL-terminated: a ring's bytes). */
static int blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t')
			return 0;
	return 1;
}

static void scan_line(struct scan *s, const char *p, size_t n)
{
	int score;

	if (!blank(p, n))
		set_line(s->last, p, n);
	if (n >= 34 && !memcmp(p, "Traceback (most recent call last):", 34)) {
		s->after_traceback = 1;
		return;
	}
	if (s->after_traceback && n && p[0] != ' ' && python_exception_line(p, n)) {
		set_line(s->python, p, n);
		s->after_traceback = 0;
		return;
	}
	score = smt_errline_score(p, n);
	if (score >= 2 && !s->strong[0])
		set_line(s->strong, p, n);
	else if (score == 1 && !s->weak[0])
		set_line(s->weak, p, n);
}

static int scan_entry(void *arg, const struct smt_ring_entry *e, const char *line)
{
	scan_line(arg, line, e->len);
	return 0;
}

void smt_errline_pick(const struct smt_ring *tail, char *const *tail_v, const char *first,
		      int last_line, char *out)
{
	struct scan *s = calloc(1, sizeof(*s));

	out[0] = '\0';
	if (!s)
		return;
	if (tail)
		smt_ring_foreach(tail, 0, scan_entry, s);
	for (; tail_v && *tail_v; tail_v++)
		scan_line(s, *tail_v, strlen(*tail_v));
	if (s->python[0])
		strcpy(out, s->python);
	else if (first && *first)
		set_line(out, first, strlen(first));
	else if (s->strong[0])
		strcpy(out, s->strong);
	else if (s->weak[0])
		strcpy(out, s->weak);
	else if (last_line)
		strcpy(out, s->last);
	free(s);
}
