/* pystack.c - faulthandler dumps out of a rank's stderr lines. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynbuf.h"
#include "pystack.h"
#include "rankcred.h"

#define DEFAULT_MAX (64 * 1024)
/* Lines the interpreter may write between the error and the first thread. */
#define PRE_LINES_MAX 4
#define NOTE_ROOM 48
#define SOURCE_FILES_MAX 64
#define SOURCE_LINE_MAX 200
/* Bytes of source files read for one dump: the reads run on the loop, and
 * a file the rank names may be as large as it likes. */
#define SOURCE_BYTES_MAX (8 * 1024 * 1024)

enum state { IDLE, PRE, IN };

struct smt_pystack {
	enum state state;
	int seen, complete;
	int pre_lines;
	size_t max;
	char *buf;          /* max + NOTE_ROOM + 1 bytes */
	size_t len;         /* the dump's whole lines */
	size_t omitted;     /* lines left out once MAX was reached */
};

static int has_prefix(const char *s, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && memcmp(s, pre, k) == 0;
}

static int is_thread_header(const char *s, size_t n)
{
	static const char suffix[] = "(most recent call first):";
	size_t k = sizeof(suffix) - 1;

	if (n < k || memcmp(s + n - k, suffix, k) != 0)
		return 0;
	return has_prefix(s, n, "Thread 0x") || has_prefix(s, n, "Current thread 0x") ||
	       has_prefix(s, n, "Stack (");
}

static int is_frame(const char *s, size_t n)
{
	return has_prefix(s, n, "  File \"") || has_prefix(s, n, "  <") ||
	       (n == 5 && memcmp(s, "  ...", 5) == 0);
}

int smt_pystack_new(size_t max, struct smt_pystack **out)
{
	struct smt_pystack *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return -ENOMEM;
	p->max = max ? max : DEFAULT_MAX;
	p->buf = malloc(p->max + NOTE_ROOM + 1);
	if (p->buf == NULL) {
		free(p);
		return -ENOMEM;
	}
	p->buf[0] = '\0';
	*out = p;
	return 0;
}

static void start(struct smt_pystack *p, enum state st)
{
	p->state = st;
	p->seen = 1;
	p->complete = 0;
	p->pre_lines = 0;
	p->len = 0;
	p->omitted = 0;
	p->buf[0] = '\0';
}

static void append(struct smt_pystack *p, const char *s, size_t n)
{
	if (p->omitted == 0 && p->len + n + 1 <= p->max) {
		memcpy(p->buf + p->len, s, n);
		p->len += n;
		p->buf[p->len++] = '\n';
		p->buf[p->len] = '\0';
		return;
	}
	/* The note goes after the whole lines kept and is rewritten as the
	 * count grows; the buffer has room for it beyond MAX. */
	p->omitted++;
	snprintf(p->buf + p->len, NOTE_ROOM + 1, "  [... %zu more line%s]\n", p->omitted,
		 p->omitted == 1 ? "" : "s");
}

static void finish(struct smt_pystack *p)
{
	/* The blank line before "Extension modules" or the next output. */
	while (p->omitted == 0 && p->len >= 2 && p->buf[p->len - 2] == '\n')
		p->buf[--p->len] = '\0';
	p->state = IDLE;
	p->complete = 1;
}

int smt_pystack_feed(struct smt_pystack *p, const char *s, size_t n)
{
	if (has_prefix(s, n, "Fatal Python error: ")) {
		start(p, PRE);
		append(p, s, n);
		return 1;
	}
	switch (p->state) {
	case IDLE:
		if (!is_thread_header(s, n))
			return 0;
		start(p, IN);
		append(p, s, n);
		return 1;
	case PRE:
		if (is_thread_header(s, n)) {
			p->state = IN;
		} else if (n > 0 && ++p->pre_lines > PRE_LINES_MAX) {
			finish(p);
			return 0;
		}
		append(p, s, n);
		return 1;
	case IN:
		if (has_prefix(s, n, "Extension modules: ")) {
			/* Part of the dump, but a list of modules is no stack. */
			finish(p);
			return 1;
		}
		if (n == 0 || is_thread_header(s, n) || is_frame(s, n)) {
			append(p, s, n);
			return 1;
		}
		finish(p);
		return 0;
	}
	return 0;
}

void smt_pystack_end(struct smt_pystack *p)
{
	if (p->state != IDLE)
		finish(p);
}

const char *smt_pystack_text(const struct smt_pystack *p, size_t *len)
{
	if (!p->seen)
		return NULL;
	if (len)
		*len = strlen(p->buf);
	return p->buf;
}

int smt_pystack_complete(const struct smt_pystack *p)
{
	return p->seen && p->complete;
}

void smt_pystack_free(struct smt_pystack *p)
{
	if (p == NULL)
		return;
	free(p->buf);
	free(p);
}

/* --- source lines ------------------------------------------------------ */

struct sources {
	char *names[SOURCE_FILES_MAX];
	size_t n;
	const struct smt_rankcred *cred;
	size_t budget;            /* bytes still to be read */
};

/* Appends that remember a failure, so the caller checks once. */
struct outbuf {
	struct smt_dynbuf b;
	int oom;
};

static void put(struct outbuf *o, const char *s, size_t n)
{
	if (!o->oom && smt_dynbuf_add(&o->b, s, n) < 0)
		o->oom = 1;
}

/* Line NUM of PATH, trimmed, into BUF; 0 when it cannot be had.  PATH is
 * opened as the rank (CRED): never through a final link, never a FIFO or a
 * device, and at most *BUDGET bytes are read (what is read is taken off). */
static int read_source_line(const struct smt_rankcred *cred, const char *path, long num,
			    char *buf, size_t size, size_t *budget)
{
	char chunk[16 * 1024];
	size_t k = 0;
	long line = 1;
	int fd = smt_rankcred_open(cred, path), found = 0, done = 0;

	if (fd < 0)
		return 0;
	while (!done && *budget > 0) {
		ssize_t n = read(fd, chunk, sizeof(chunk) < *budget ? sizeof(chunk) : *budget);
		if (n <= 0) {
			done = 1;
			found = line == num && k > 0;
			break;
		}
		*budget -= (size_t)n;
		for (ssize_t i = 0; i < n && !done; i++) {
			if (chunk[i] == '\n') {
				done = line == num;
				found = done && k > 0;
				line++;
			} else if (line == num && k < size - 1) {
				buf[k++] = chunk[i];
			}
		}
	}
	close(fd);
	if (!found)
		return 0;
	buf[k] = '\0';
	/* Trimmed: indentation, trailing blanks, a CR. */
	char *s = buf;
	while (*s == ' ' || *s == '\t')
		s++;
	k = strcspn(s, "\r\n");
	while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t'))
		k--;
	memmove(buf, s, k);
	buf[k] = '\0';
	return k > 0;
}

/* Whether FILE may be opened: a real path, within the bound on files. */
static int may_open(struct sources *src, const char *file)
{
	if (file[0] == '<' || file[0] == '\0')
		return 0;
	for (size_t i = 0; i < src->n; i++)
		if (strcmp(src->names[i], file) == 0)
			return 1;
	if (src->n == SOURCE_FILES_MAX)
		return 0;
	src->names[src->n] = strdup(file);
	return src->names[src->n] ? (src->n++, 1) : 0;
}

/* The source line for a frame line S (N bytes), into BUF; 0 if none. */
static int source_for(struct sources *src, const char *s, size_t n, const char *cwd, char *buf,
		      size_t size)
{
	char file[PATH_MAX], path[PATH_MAX];
	const char *q = NULL;
	long num;

	if (!has_prefix(s, n, "  File \""))
		return 0;
	for (size_t i = n; i-- > 8;)
		if (i + 8 <= n && memcmp(s + i, "\", line ", 8) == 0) {
			q = s + i;
			break;
		}
	if (q == NULL || (size_t)(q - s - 8) >= sizeof(file))
		return 0;
	memcpy(file, s + 8, (size_t)(q - s - 8));
	file[q - s - 8] = '\0';
	num = strtol(q + 8, NULL, 10);
	if (num <= 0 || !may_open(src, file))
		return 0;
	if (file[0] != '/' && cwd) {
		if (snprintf(path, sizeof(path), "%s/%s", cwd, file) >= (int)sizeof(path))
			return 0;
	} else {
		snprintf(path, sizeof(path), "%s", file);
	}
	return read_source_line(src->cred, path, num, buf, size, &src->budget);
}

int smt_pystack_add_source(const char *text, size_t len, const char *cwd,
			   const struct smt_rankcred *cred, char **out)
{
	struct sources src = { .cred = cred, .budget = SOURCE_BYTES_MAX };
	struct outbuf o = { .oom = 0 };
	const char *s = text, *end = text + len;
	char code[SOURCE_LINE_MAX + 1];
	size_t n_out;

	smt_dynbuf_init(&o.b, SIZE_MAX / 2);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		const char *next = s + n + (nl != NULL);

		put(&o, s, n);
		put(&o, "\n", 1);
		/* A frame whose source line is already there keeps it. */
		if (!(next < end && end - next >= 4 && memcmp(next, "    ", 4) == 0) &&
		    source_for(&src, s, n, cwd, code, sizeof(code))) {
			put(&o, "    ", 4);
			put(&o, code, strlen(code));
			put(&o, "\n", 1);
		}
		s = next;
	}
	for (size_t i = 0; i < src.n; i++)
		free(src.names[i]);
	*out = o.oom ? NULL : smt_dynbuf_take(&o.b, &n_out);
	if (!*out && !o.oom)
		*out = strdup("");
	smt_dynbuf_free(&o.b);
	return *out ? 0 : -ENOMEM;
}
