/* stackparse.c - frames out of faulthandler, py-bt, gdb and eu-stack texts. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackparse.h"
#include "vec.h"

struct parser {
	struct smt_stack *st;
	struct smt_thread *cur;   /* the thread frames go to */
	size_t threads_cap;       /* the room of st->threads */
	int after_py_frame;       /* the previous line was a Python File line */
};

static int has_prefix(const char *s, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && memcmp(s, pre, k) == 0;
}

static int has_suffix(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);

	return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static const char *find(const char *s, size_t n, const char *what)
{
	size_t k = strlen(what);

	for (size_t i = 0; k <= n && i <= n - k; i++)
		if (memcmp(s + i, what, k) == 0)
			return s + i;
	return NULL;
}

static const char *rfind(const char *s, size_t n, const char *what)
{
	size_t k = strlen(what);

	for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
		if (memcmp(s + i, what, k) == 0)
			return s + i;
	return NULL;
}

/* A decimal number at *P (within END); advances *P past it.  -1 if none. */
static long number(const char **p, const char *end, int base)
{
	long v = 0;
	int any = 0;

	if (base == 16 && end - *p > 2 && (*p)[0] == '0' && (*p)[1] == 'x')
		*p += 2;
	for (; *p < end && isxdigit((unsigned char)**p); (*p)++) {
		int d = isdigit((unsigned char)**p) ? **p - '0' :
						      tolower((unsigned char)**p) - 'a' + 10;
		if (d >= base)
			break;
		if (v < (1L << 58))
			v = v * base + d;
		any = 1;
	}
	return any ? v : -1;
}

static struct smt_thread *new_thread(struct parser *p)
{
	struct smt_stack *st = p->st;
	/* The frames point into their thread, never at it, so the threads
	 * may move. */
	if (SMT_VEC_RESERVE(st->threads, p->threads_cap, st->nthreads + 1) < 0)
		return NULL;
	p->cur = &st->threads[st->nthreads++];
	memset(p->cur, 0, sizeof(*p->cur));
	p->after_py_frame = 0;
	return p->cur;
}

static void set_format(struct smt_stack *st, enum smt_stack_format f)
{
	if (st->format == SMT_STACK_UNKNOWN)
		st->format = f;
}

/* A new frame at the end of the current thread (one is made if needed). */
static struct smt_frame *new_frame(struct parser *p, const char *func, size_t len)
{
	struct smt_thread *t = p->cur ? p->cur : new_thread(p);
	struct smt_frame *f;

	if (t == NULL)
		return NULL;
	if (SMT_VEC_RESERVE(t->frames, t->frames_cap, t->nframes + 1) < 0)
		return NULL;
	f = &t->frames[t->nframes];
	memset(f, 0, sizeof(*f));
	f->func = len ? strndup(func, len) : strdup("??");
	if (f->func == NULL)
		return NULL;
	t->nframes++;
	p->st->nframes++;
	return f;
}

/* `  File "F", line N, in FUNC` (py-bt) or `  File "F", line N in FUNC`. */
static int python_frame(struct parser *p, const char *s, size_t n)
{
	const char *end = s + n, *file = s + 8, *q, *func;
	struct smt_frame *f;
	long line;
	int pybt;

	q = rfind(file, (size_t)(end - file), "\", line ");
	if (q == NULL)
		return 0;
	const char *num = q + 8;
	line = number(&num, end, 10);
	if (line < 0)
		return 0;
	if (has_prefix(num, (size_t)(end - num), ", in "))
		pybt = 1, func = num + 5;
	else if (has_prefix(num, (size_t)(end - num), " in "))
		pybt = 0, func = num + 4;
	else
		return 0;
	set_format(p->st, pybt ? SMT_STACK_PYBT : SMT_STACK_FAULTHANDLER);
	f = new_frame(p, func, (size_t)(end - func));
	if (f == NULL || (f->file = strndup(file, (size_t)(q - file))) == NULL)
		return -ENOMEM;
	f->line = (int)line;
	f->python = 1;
	p->after_py_frame = 1;
	return 1;
}

/* py-bt's lines for a C function called from Python, and its states. */
static int pybt_other(struct parser *p, const char *s, size_t n)
{
	static const char *const pre[] = { "  <built-in method ", "  <built-in function " };
	static const char *const states[] = { "  Waiting for the GIL", "  Garbage-collecting" };
	const char *name = NULL, *e = NULL;
	struct smt_frame *f;

	for (size_t i = 0; i < 2 && name == NULL; i++) {
		if (has_prefix(s, n, pre[i])) {
			name = e = s + strlen(pre[i]);
			while (e < s + n && *e != ' ' && *e != '>')
				e++;
		} else if (n == strlen(states[i]) && memcmp(s, states[i], n) == 0) {
			name = s + 2;
			e = s + n;
		}
	}
	if (name == NULL)
		return 0;
	if ((f = new_frame(p, name, (size_t)(e - name))) == NULL)
		return -ENOMEM;
	f->builtin = 1;
	set_format(p->st, SMT_STACK_PYBT);
	return 1;
}

/* gdb's "func (args) at file:line" / "func (args) from object" after "in ". */
static int gdb_frame(struct parser *p, const char *s, const char *end)
{
	const char *q = s, *func_end = NULL, *rest;
	struct smt_frame *f;
	int depth = 0;

	/* The function name ends at the " (" of its arguments; a C++ name
	 * has parentheses and spaces of its own, inside <> or (). */
	for (; q < end; q++) {
		if (*q == '<' || *q == '(' || *q == '[')
			depth++;
		else if ((*q == '>' || *q == ')' || *q == ']') && depth > 0)
			depth--;
		if (depth == 0 && q + 1 < end && q[0] == ' ' && q[1] == '(') {
			func_end = q;
			break;
		}
	}
	if (func_end == NULL) {
		/* "<signal handler called>" and other frames without arguments */
		func_end = end;
		rest = end;
	} else {
		depth = 0;
		for (rest = func_end + 1; rest < end; rest++) {
			if (*rest == '(')
				depth++;
			else if (*rest == ')' && --depth == 0) {
				rest++;
				break;
			}
		}
	}
	f = new_frame(p, s, (size_t)(func_end - s));
	if (f == NULL)
		return -ENOMEM;
	if (has_prefix(rest, (size_t)(end - rest), " at ")) {
		const char *file = rest + 4, *colon = rfind(file, (size_t)(end - file), ":");
		const char *num = colon ? colon + 1 : end;
		long line = colon ? number(&num, end, 10) : -1;
		if (line >= 0 && num == end) {
			f->file = strndup(file, (size_t)(colon - file));
			f->line = (int)line;
		} else {
			f->file = strndup(file, (size_t)(end - file));
		}
		if (f->file == NULL)
			return -ENOMEM;
	} else if (has_prefix(rest, (size_t)(end - rest), " from ")) {
		f->object = strndup(rest + 6, (size_t)(end - rest - 6));
		if (f->object == NULL)
			return -ENOMEM;
	}
	set_format(p->st, SMT_STACK_GDB);
	return 1;
}

/* "#N  0xADDR in ..." (gdb), "#N  func (...) at ..." (gdb), "#N  0xADDR sym" (eu-stack). */
static int numbered_frame(struct parser *p, const char *s, size_t n)
{
	const char *q = s + 1, *end = s + n;

	if (number(&q, end, 10) < 0 || q >= end || *q != ' ')
		return 0;
	while (q < end && *q == ' ')
		q++;
	if (has_prefix(q, (size_t)(end - q), "0x")) {
		const char *digits = q + 2;
		for (q = digits; q < end && isxdigit((unsigned char)*q); q++)
			;
		if (q == digits || (q < end && *q != ' '))
			return 0;
		while (q < end && *q == ' ')
			q++;
		if (has_prefix(q, (size_t)(end - q), "in "))
			return gdb_frame(p, q + 3, end);
		/* eu-stack: the symbol, if any, is the rest of the line. */
		if (new_frame(p, q, (size_t)(end - q)) == NULL)
			return -ENOMEM;
		set_format(p->st, SMT_STACK_EUSTACK);
		return 1;
	}
	return gdb_frame(p, q, end);
}

static int thread_header(struct parser *p, const char *s, size_t n)
{
	const char *end = s + n, *q;
	struct smt_thread *t;

	if (has_prefix(s, n, "TID ") && has_suffix(s, n, ":")) {
		q = s + 4;
		long id = number(&q, end, 10);
		if (id < 0 || q != end - 1)
			return 0;
		if ((t = new_thread(p)) == NULL)
			return -ENOMEM;
		t->id = id;
		set_format(p->st, SMT_STACK_EUSTACK);
		return 1;
	}
	if (has_suffix(s, n, "(most recent call first):")) {
		int current = has_prefix(s, n, "Current thread 0x");
		if (!current && !has_prefix(s, n, "Thread 0x") && !has_prefix(s, n, "Stack ("))
			return 0;
		if ((t = new_thread(p)) == NULL)
			return -ENOMEM;
		q = s + (current ? 15 : 7);
		t->id = has_prefix(s, n, "Stack (") ? 0 : number(&q, end, 16);
		t->current = current || has_prefix(s, n, "Stack (");
		set_format(p->st, SMT_STACK_FAULTHANDLER);
		return 1;
	}
	if (has_prefix(s, n, "Thread ") && has_suffix(s, n, "):")) {
		q = s + 7;
		long num = number(&q, end, 10);
		if (num <= 0 || q >= end || *q != ' ')
			return 0;
		if ((t = new_thread(p)) == NULL)
			return -ENOMEM;
		t->gdb_num = (int)num;
		const char *lwp = find(s, n, "(LWP ");
		if (lwp) {
			q = lwp + 5;
			t->id = number(&q, end, 10);
		}
		return 1;
	}
	return 0;
}

static int parse_line(struct parser *p, const char *s, size_t n)
{
	int was_py = p->after_py_frame, rc;
	const char *q;

	while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	p->after_py_frame = 0;
	if (n == 0)
		return 0;
	if (has_prefix(s, n, "  File \""))
		return python_frame(p, s, n);
	if (has_prefix(s, n, "    ") && was_py) {
		struct smt_frame *f = &p->cur->frames[p->cur->nframes - 1];
		while (n > 0 && isspace((unsigned char)*s))
			s++, n--;
		while (n > 0 && isspace((unsigned char)s[n - 1]))
			n--;
		if (f->code == NULL && n > 0 && (f->code = strndup(s, n)) == NULL)
			return -ENOMEM;
		return 1;
	}
	if (s[0] == '#')
		return numbered_frame(p, s, n);
	if (has_prefix(s, n, "  <") || has_prefix(s, n, "  Waiting") ||
	    has_prefix(s, n, "  Garbage"))
		return pybt_other(p, s, n);
	if ((rc = thread_header(p, s, n)) != 0)
		return rc;
	if (has_prefix(s, n, "Traceback (most recent call first):")) {
		/* py-bt of a single thread has no gdb thread header */
		if (p->cur == NULL && new_thread(p) == NULL)
			return -ENOMEM;
		set_format(p->st, SMT_STACK_PYBT);
		return 1;
	}
	if (has_prefix(s, n, "PID ") && find(s, n, " - process")) {
		q = s + 4;
		p->st->pid = number(&q, s + n, 10);
		return 1;
	}
	if (has_prefix(s, n, "[Inferior ") && (q = find(s, n, "(process ")) != NULL) {
		q += 9;
		p->st->pid = number(&q, s + n, 10);
		return 1;
	}
	return 0;
}

static void choose_main(struct smt_stack *st)
{
	struct smt_thread *m = NULL;

	if (st->nthreads == 0)
		return;
	for (size_t i = 0; i < st->nthreads && st->pid > 0 && !m; i++)
		if (st->threads[i].id == st->pid)
			m = &st->threads[i];
	for (size_t i = 0; i < st->nthreads && !m; i++)
		if (st->threads[i].gdb_num == 1)
			m = &st->threads[i];
	if (!m && st->format == SMT_STACK_FAULTHANDLER)
		m = &st->threads[st->nthreads - 1];
	if (!m)
		m = &st->threads[0];
	m->main = 1;
}

int smt_stack_parse(const char *text, size_t len, struct smt_stack **out)
{
	struct parser p = { 0 };
	const char *s = text, *end = text + len;
	int rc = 0;

	p.st = calloc(1, sizeof(*p.st));
	if (p.st == NULL)
		return -ENOMEM;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		rc = parse_line(&p, s, n);
		if (rc < 0)
			goto out;
		s += n + (nl != NULL);
	}
	choose_main(p.st);
	rc = 0;
out:
	if (rc < 0) {
		smt_stack_free(p.st);
		return rc;
	}
	*out = p.st;
	return 0;
}

const struct smt_thread *smt_stack_main_thread(const struct smt_stack *st)
{
	for (size_t i = 0; st && i < st->nthreads; i++)
		if (st->threads[i].main)
			return &st->threads[i];
	return NULL;
}

void smt_stack_free(struct smt_stack *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->nthreads; i++) {
		struct smt_thread *t = &st->threads[i];
		for (size_t j = 0; j < t->nframes; j++) {
			free(t->frames[j].func);
			free(t->frames[j].file);
			free(t->frames[j].code);
			free(t->frames[j].object);
		}
		free(t->frames);
	}
	free(st->threads);
	free(st);
}

char *smt_frame_symbol(const char *func, char *buf, size_t size)
{
	size_t n = 0;
	int depth = 0;

	if (size == 0)
		return buf;
	for (const char *q = func ? func : ""; *q && n + 1 < size; q++) {
		/* A C++ argument list says which overload, not where. */
		if (*q == '(' && q != func && depth == 0 &&
		    strcmp(func, "<signal handler called>") != 0)
			break;
		if (*q == '<')
			depth++;
		else if (*q == '>' && depth > 0)
			depth--;
		if (*q == '@' && depth == 0)
			break;
		buf[n++] = *q;
	}
	buf[n] = '\0';
	/* gcc's clones: foo.lto_priv.0, foo.isra.0, foo.constprop.0, foo.part.0 */
	for (char *dot = strchr(buf, '.'); dot; dot = strchr(dot + 1, '.')) {
		if (!strncmp(dot, ".lto_priv", 9) || !strncmp(dot, ".isra", 5) ||
		    !strncmp(dot, ".constprop", 10) || !strncmp(dot, ".part", 5) ||
		    !strncmp(dot, ".cold", 5)) {
			*dot = '\0';
			break;
		}
	}
	return buf;
}

int smt_frame_is_wait_wrapper(const char *func)
{
	/* Compared without leading underscores and glibc's internal "GI_". */
	static const char *const prefixes[] = {
		"clock_nanosleep", "nanosleep", "futex", "lll_lock_wait", "pthread_cond_",
		"pthread_cond_wait_common", "pthread_clockjoin", "pthread_timedjoin",
		"new_sem_wait", "do_futex_wait", "sem_wait", "sem_timedwait", "sem_clockwait",
		"syscall_cancel", "epoll_wait", "epoll_pwait", "libc_read", "libc_recv",
		"libc_write", "libc_poll", "libc_accept", "wait4", "waitpid", "waitid",
		"sched_yield", "sigtimedwait", "sigwaitinfo", "sigsuspend",
		NULL,
	};
	static const char *const exact[] = {
		"sleep", "usleep", "pause", "poll", "ppoll", "select", "pselect", "pselect6",
		"read", "recv", "recvfrom", "recvmsg", "write", "accept", "accept4", "connect",
		"syscall", "sigwait", "pthread_join", "pthread_mutex_lock", "pthread_rwlock_rdlock",
		"pthread_rwlock_wrlock", "pthread_barrier_wait", "msgrcv", "semop", "flock",
		"fcntl", "fcntl64", "ioctl", "nanosleep64", "clock_nanosleep_time64",
		NULL,
	};
	char sym[256];
	const char *s;

	smt_frame_symbol(func, sym, sizeof(sym));
	s = sym;
	while (*s == '_')
		s++;
	if (!strncmp(s, "GI_", 3))
		for (s += 3; *s == '_'; s++)
			;
	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(s, prefixes[i], strlen(prefixes[i])))
			return 1;
	for (size_t i = 0; exact[i]; i++)
		if (!strcmp(s, exact[i]))
			return 1;
	return 0;
}
