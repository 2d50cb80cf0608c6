/*
 * peers.c - the leader's channels to its workers: readiness, the long poll
 * that carries each worker's news, losing a worker, and the result.
 *
 * Why one file of this size: each worker's channel carries the probe, the
 * launch, the long poll, the fetch of its lines and the result over the
 * same curl handles and retry timers, and what a failure of any of them
 * means (retry, or the worker is lost) is decided in one place, on_done().
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "curluv.h"
#include "dynbuf.h"
#include "log.h"
#include "logpipe.h"
#include "peers.h"
#include "smt_proto.h"
#include "spawn.h"
#include "strv.h"
#include "tcpchannel.h"
#include "unixlisten.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000
#define MAX_BODY (2 * 1024 * 1024)

enum req_kind { REQ_PROBE, REQ_LAUNCH, REQ_WATCH, REQ_RESULT, REQ_LINES, REQ_END, REQ_ATTEMPT };

/* Requests in flight per worker at most: probe or watch, launch, lines,
 * end, result. */
#define INFLIGHT 8
/* The most bytes of output the leader holds per worker between fetches:
 * a share of this, between the two bounds below (a fetch always takes at
 * least one record, so the floor only bounds the number of round trips).
 * 256 KiB a fetch is as fast as 1 MiB (bench B4m) and holds a quarter of
 * it on both sides; the floor keeps 1000 workers within 16 MiB. */
#define LINES_BUDGET (8 * 1024 * 1024)
#define LINES_MAX_MIN (16 * 1024)
#define LINES_MAX_MAX (256 * 1024)

/*
 * One-shot requests over TCP in flight at once (cfg.oneshots,
 * --channel-requests), the others wait their turn in order (struct
 * queued).  1000 workers told the launch (or the end, the result) at once
 * held 1000 transfers of curl's, about 12 KiB each, beside the long polls
 * sent at the same moment: the heap stayed that large, its holes too small
 * to give back (B12d).  Each takes a round trip on the job's network, so
 * 64 at a time tell 1000 workers in 16 of them.  Over ssh a one-shot
 * request rides a channel that is already open and is not held back.
 */

struct peer;

struct queued {
	TAILQ_ENTRY(queued) link;
	struct peer *p;
	enum req_kind kind;
	long timeout_ms;
	int fresh;
	char *post;
	char path[];
};

struct req {
	struct peer *p;
	enum req_kind kind;
	int kept;            /* held with no time (SMT_Q_KEEP): counted in p->kept */
	int oneshot;         /* counted in ps->oneshots */
	CURL *easy;
	struct curl_slist *headers;
	char *post;
	struct smt_dynbuf body;   /* the answer, at most MAX_BODY */
};

struct peer {
	struct smt_peers *ps;
	size_t index;
	char *host;
	char url[64];
	int ready;
	int lost;
	int mismatch;        /* answered, but belongs to another job */
	int full_probe;      /* its hosts' digest differs: ask for the list itself */
	int down;            /* the channel failed and is being re-opened */
	int result_done;
	int attempt_pending;  /* the next attempt is not confirmed yet */
	unsigned attempt_asks; /* ... asked again: its preflight ran */
	uv_timer_t attempt_retry;
	unsigned attempt;
	json_int_t generation;
	uv_timer_t retry;
	uv_timer_t lost_timer;
	unsigned kept;       /* its requests held with no time: no lost_timer then */
	/* The last watch, the last fetch of lines answered: only then is the
	 * next one held with no time, on a connection known to be alive (a
	 * retry's could be to a host that is gone, and nothing would time
	 * it). */
	int watch_heard, lines_heard;
	/*
	 * Over TCP the fetch of the lines, held with no time, also carries the
	 * status's generation (SMT_Q_GEN); once the generation moves, its
	 * answer is the status.  Then the watch rests (WATCH_PARKED) and the
	 * worker holds one request of the leader's, not two, for the whole
	 * job; the first fetch, timed, names the generation too, so the
	 * watch rests from the launch on.  It is sent again when the fetches
	 * stop (their end while the job goes on, a failure), when a batch
	 * waits in the merge (BATCH_NEWS_MS, timed by lines_retry: no fetch
	 * is out to retry then), and, last, when the lost timer finds it
	 * resting (on_lost_timer).
	 */
	int lines_gen_out;   /* a fetch naming the generation is out */
	int watch_parked;
	/* When its last TCP connection closed, how long the kernel had heard
	 * nothing on it (TCP_INFO: a keepalive's failure says when). */
	uint64_t quiet_at, quiet_ms;
	struct req *inflight[INFLIGHT];
	/* The worker's output: fetched up to LINES_FROM. */
	uint64_t lines_from;
	int lines_busy;      /* a fetch or its batch is on its way */
	int batch_pending;   /* its batch waits in the merge (no fetch out) */
	size_t lines_last;   /* what the last fetch brought, bytes */
	int lines_eof;       /* its end of output arrived */
	int lines_acked;     /* ... and was acknowledged */
	unsigned lines_attempt;
	uv_timer_t lines_retry;
	/* Its TCP channel (tcp_use), learnt from its readiness answer over
	 * ssh: the URL and the token's header line. */
	int tcp_use;
	int tcp_refused;     /* it named one that is not one: ssh for good */
	int tcp_heard;       /* a request went through it */
	char tcp_url[INET6_ADDRSTRLEN + 16];
	char *tcp_header;
};

struct smt_peers {
	uv_loop_t *loop;
	struct smt_curluv *cu;
	struct smt_peers_config cfg;
	const struct smt_peers_ops *ops;
	void *ctx;
	struct peer *peers;
	size_t n;
	size_t nready;
	int launched;
	int watching;           /* the long polls are out */
	int ending;             /* the workers were told to end (not a signal) */
	size_t attempts_pending;
	json_int_t attempt;     /* the job's attempt, named in every end message */
	char *attempt_json;     /* the next attempt's request, asked again */
	int sending_result;
	int closing;
	int handles_open;
	size_t results_pending;
	char *result_json;
	char **job_hosts;       /* our copy of cfg.job_hosts */
	char hosts_digest[SMT_DIGEST_TEXT];  /* of job_hosts, as a worker's brief status says it */
	struct smt_logpipe *log; /* the channels' ssh messages */
	char name[64];          /* prefix of the connections' abstract names */
	char path[108];         /* the socket curl connects to (maybe through dirfd) */
	int dirfd;              /* the socket's directory when its path is too long; -1 */
	int listen_fd;
	uv_poll_t listener;
	unsigned nconnections;
	unsigned oneshots;      /* in flight, at most cfg.oneshots */
	int burst;              /* ... were reached: a burst to clear up after */
	TAILQ_HEAD(, queued) queue;
};

static void send_probe(struct peer *p);
static void send_watch(struct peer *p);
static void send_watch_fresh(struct peer *p, int fresh);
static void unpark_watch(struct peer *p);
static void park_watch(struct peer *p);
static void heard(struct peer *p);

/* ---- the ssh channel under curl ----
 *
 * curl connects each transfer's connection to one Unix socket of ours
 * (open_listener), from a socket that open_socket below
 * has bound to a name saying which worker it is for.  Each connection we
 * accept becomes ssh's stdin and stdout: `ssh HOST smtctl dial-stdio`
 * joins it to the worker's control socket, and no byte is copied by us.
 * (Handing curl one end of a socketpair as an already-connected socket
 * would be simpler, but libcurl 7.88 connects such sockets anyway.)
 */

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct peer *p = clientp;
	struct smt_peers *ps = p->ps;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd, n;

	(void)purpose;
	if (addr->family != AF_UNIX)
		return CURL_SOCKET_BAD;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return CURL_SOCKET_BAD;
	/* Random, so that no one can take the name first (abstract names are
	 * listed in /proc/net/unix for everyone); the listener checks the
	 * connection's process anyway. */
	uint64_t nonce = 0;
	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce))
		nonce = uv_hrtime() ^ ((uint64_t)ps->nconnections << 32);
	n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "%s-p%zu-%u-%016llx", ps->name,
		     p->index, ps->nconnections++, (unsigned long long)nonce);
	if (bind(fd, (struct sockaddr *)&un,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		smt_warn("cannot bind a channel socket for %s: %s", p->host, strerror(errno));
		close(fd);
		return CURL_SOCKET_BAD;
	}
	return fd;
}

static void on_ssh_exit(void *arg, pid_t pid, int wstatus)
{
	(void)arg;
	/* Spawned without waiting for its exec (spawn_ssh): a failed exec
	 * is known only here.  ssh says the same of a remote command. */
	if (WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 126 || WEXITSTATUS(wstatus) == 127))
		smt_warn("a channel's command could not be run (pid %d, exit status %d: %s)",
			 (int)pid, WEXITSTATUS(wstatus),
			 WEXITSTATUS(wstatus) == 127 ? "not found" : "not executable");
	else
		smt_debug("channel ssh %d ended (status 0x%x)", (int)pid, (unsigned)wstatus);
}

static void spawn_ssh(struct smt_peers *ps, struct peer *p, int fd)
{
	pid_t pid;
	int rc;
	char *argv[] = {
		(char *)ps->cfg.ssh_path,
		"-o", "BatchMode=yes",
		"-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=2",
		"-o", "ServerAliveCountMax=3",
		"-o", "LogLevel=ERROR",
		/*
		 * OpenSSH 9's first choice, sntrup761x25519, has the client
		 * generate a Streamlined NTRU Prime key: about 70 ms of CPU
		 * per connection, which the leader pays once per worker.  The
		 * channel carries the job's state, not data: curve25519 goes
		 * first, every default stays allowed.
		 */
		"-o", "KexAlgorithms=^curve25519-sha256",
		p->host,
		(char *)ps->cfg.smtctl_path,
		"--socket", (char *)ps->cfg.remote_socket,
		"dial-stdio",
		NULL,
	};
	/* Not waiting for the exec: the leader opens a channel per worker at
	 * once, and waiting for each child to be scheduled made 1000 of them
	 * take minutes on a loaded machine (bench B12), past the probes'
	 * timeout, whose retries then asked for more channels still. */
	struct smt_spawn_opts so = { .argv = argv, .stdin_fd = fd, .stdout_fd = fd,
				     .stderr_fd = smt_logpipe_fd(ps->log), .no_wait = 1 };

	rc = smt_spawn(&so, &pid);
	if (pid > 0 && ps->cfg.reaper)
		/* Watched, so that it is never taken for a process of the job;
		 * the end of the channel reaches curl as the end of its socket. */
		smt_reaper_watch(ps->cfg.reaper, pid, on_ssh_exit, NULL);
	if (rc < 0)
		smt_warn("cannot run %s for %s: %s", ps->cfg.ssh_path, p->host, strerror(-rc));
	else
		smt_debug("channel to %s: ssh pid %d", p->host, (int)pid);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct smt_peers *ps = h->data;

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		struct sockaddr_un un;
		socklen_t len = sizeof(un);
		int fd = accept4(ps->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		if (fd < 0)
			break;
		/* Only curl, in this process, connects here: anyone else's
		 * connection would become the stdin of our ssh to a worker,
		 * which trusts it as the leader. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
		    cred.pid != getpid()) {
			smt_warn(
				"a connection to the workers' channel socket from pid %d (uid %d), "
				"not smtd: closed",
				clen == sizeof(cred) ? (int)cred.pid : -1,
				clen == sizeof(cred) ? (int)cred.uid : -1);
			close(fd);
			continue;
		}
		memset(&un, 0, sizeof(un));
		size_t index = (size_t)-1;
		if (getpeername(fd, (struct sockaddr *)&un, &len) == 0 &&
		    len > offsetof(struct sockaddr_un, sun_path) + 1) {
			const char *name = un.sun_path + 1;
			size_t nlen = strlen(ps->name);
			if (strncmp(name, ps->name, nlen) == 0 && name[nlen] == '-' &&
			    name[nlen + 1] == 'p')
				index = strtoul(name + nlen + 2, NULL, 10);
		}
		if (index < ps->n)
			spawn_ssh(ps, &ps->peers[index], fd);
		close(fd);
	}
}

/*
 * The socket curl connects to.  A path, because curl 7.88 takes a
 * connection to an abstract socket for one that is still resolving and
 * never reuses it (every request would cost an ssh handshake) - and never
 * an abstract socket for another reason: anyone may connect to one.  A path
 * too long for a socket address is reached through its directory's
 * descriptor (/proc/self/fd/N/NAME), which curl, in this process, can use
 * too.  Mode 0600, and every connection's process is checked (on_accept):
 * a connection here makes us run ssh.
 */
static int channel_path(struct smt_peers *ps)
{
	const char *want = ps->cfg.channel_socket, *slash;
	char dir[PATH_MAX];
	int n;

	if (want == NULL || want[0] == '\0')
		return -EINVAL;
	n = snprintf(ps->path, sizeof(ps->path), "%s", want);
	if (n > 0 && (size_t)n < sizeof(ps->path))
		return 0;
	slash = strrchr(want, '/');
	if (slash == NULL || (size_t)(slash - want) >= sizeof(dir))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - want), want);
	ps->dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ps->dirfd < 0)
		return -errno;
	n = snprintf(ps->path, sizeof(ps->path), "/proc/self/fd/%d/%s", ps->dirfd, slash + 1);
	return n > 0 && (size_t)n < sizeof(ps->path) ? 0 : -ENAMETOOLONG;
}

static int open_listener(struct smt_peers *ps)
{
	const char *shown = ps->cfg.channel_socket ? ps->cfg.channel_socket : "(none)";
	int rc;

	snprintf(ps->name, sizeof(ps->name), "smtd-%d-%lx", (int)getpid(),
		 (unsigned long)uv_hrtime());
	rc = channel_path(ps);
	if (rc < 0) {
		smt_error("cannot listen on %s for the channels to the workers: %s", shown,
			  strerror(-rc));
		ps->path[0] = '\0';
		return rc;
	}
	ps->listen_fd = smt_unix_listen("channel socket", ps->path, SOCK_STREAM, 0600, (gid_t)-1,
					NULL);
	if (ps->listen_fd < 0) {
		rc = ps->listen_fd;
		ps->listen_fd = -1;
		ps->path[0] = '\0';
		return rc;
	}
	uv_poll_init(ps->loop, &ps->listener, ps->listen_fd);
	ps->listener.data = ps;
	ps->handles_open++;
	return uv_poll_start(&ps->listener, UV_READABLE, on_accept);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct req *r = userp;
	size_t n = size * nmemb;

	/* Less than N taken fails the transfer: too long, or out of memory. */
	return smt_dynbuf_add(&r->body, data, n) == 0 ? n : 0;
}

static void req_free(struct req *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < INFLIGHT; i++)
		if (r->p->inflight[i] == r)
			r->p->inflight[i] = NULL;
	if (r->oneshot)
		r->p->ps->oneshots--;
	curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	free(r->post);
	smt_dynbuf_free(&r->body);
	free(r);
}

static void on_done(void *arg, CURL *easy, CURLcode result);

/*
 * curl's receive buffer for a request: it is allocated for the whole
 * transfer, and most of the leader's transfers are long polls held idle -
 * at curl's default of 16 KiB, three per worker were 48 MiB of a
 * 1000-worker leader (bench B12m).  A status answer is a few hundred
 * bytes; the lines come in batches of LINES_MAX_MIN at least, read here in
 * a few steps when the workers are many.  A fetch after one that brought
 * little (a worker whose ranks are quiet, the usual state of a held fetch)
 * reads in small steps too: a burst's first batch costs a few more reads.
 */
#define RECV_SMALL 1024L
#define RECV_LINES_BUDGET (4L * 1024 * 1024)
#define RECV_LINES_MIN (4L * 1024)
#define RECV_LINES_MAX (16L * 1024)

static long recv_buffer(const struct peer *p, enum req_kind kind)
{
	const struct smt_peers *ps = p->ps;
	long b;

	if (kind != REQ_LINES || p->lines_last < (size_t)RECV_SMALL)
		return RECV_SMALL;
	b = ps->n ? RECV_LINES_BUDGET / (long)ps->n : RECV_LINES_MAX;
	return b < RECV_LINES_MIN ? RECV_LINES_MIN : b > RECV_LINES_MAX ? RECV_LINES_MAX : b;
}

/* Before curl closes a TCP channel's socket: how long the kernel heard
 * nothing on it (kept_ended; smt_tcpchannel_quiet_ms). */
static int on_closesocket(void *clientp, curl_socket_t fd)
{
	struct peer *p = clientp;
	long long ms = smt_tcpchannel_quiet_ms(fd, p->ps->cfg.peer_timeout);

	if (ms >= 0) {
		p->quiet_at = uv_now(p->ps->loop);
		p->quiet_ms = (uint64_t)ms;
	}
	return close(fd);
}

/* Curl's socket of a TCP channel: keepalive, for the polls held with no
 * time (the others end before it would matter). */
static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	struct smt_peers *ps = clientp;

	(void)purpose;
	if (smt_tcpchannel_keepalive(fd, ps->cfg.peer_timeout) < 0)
		smt_warn("cannot set a channel's TCP keepalive: %s", strerror(errno));
	return CURL_SOCKOPT_OK;
}

/*
 * Send a request of KIND to P.  TIMEOUT_MS 0: a poll held with no time
 * (SMT_Q_KEEP, over TCP only), whose connection's keepalive says whether
 * the worker lives: the peer's lost_timer stops while one is out.
 */
static int is_oneshot(const struct peer *p, enum req_kind kind)
{
	return p->tcp_use && kind != REQ_PROBE && kind != REQ_WATCH && kind != REQ_LINES;
}

/* A one-shot request behind cfg.oneshots others: sent by oneshot_next. */
static int req_queue(struct peer *p, enum req_kind kind, const char *path, const char *post,
		    long timeout_ms, int fresh)
{
	size_t len = strlen(path) + 1;
	struct queued *q = malloc(sizeof(*q) + len);

	if (q == NULL)
		return -ENOMEM;
	q->post = NULL;
	if (post && (q->post = strdup(post)) == NULL) {
		free(q);
		return -ENOMEM;
	}
	q->p = p;
	q->kind = kind;
	q->timeout_ms = timeout_ms;
	q->fresh = fresh;
	memcpy(q->path, path, len);
	TAILQ_INSERT_TAIL(&p->ps->queue, q, link);
	return 0;
}

static int req_send(struct peer *p, enum req_kind kind, const char *path, const char *post,
		    long timeout_ms, int fresh);

/* The next one-shot requests waiting, while there is room. */
static void oneshot_next(struct smt_peers *ps)
{
	struct queued *q;

	while (!ps->closing && ps->oneshots < ps->cfg.oneshots && (q = TAILQ_FIRST(&ps->queue))) {
		TAILQ_REMOVE(&ps->queue, q, link);
		if (req_send(q->p, q->kind, q->path, q->post, q->timeout_ms, q->fresh) < 0)
			smt_warn("cannot send a request to %s: out of memory", q->p->host);
		free(q->post);
		free(q);
	}
}

static int req_send(struct peer *p, enum req_kind kind, const char *path, const char *post,
		    long timeout_ms, int fresh)
{
	struct smt_peers *ps = p->ps;
	struct req *r;
	char url[512];

	if (is_oneshot(p, kind) && ps->oneshots >= ps->cfg.oneshots) {
		ps->burst = 1;
		return req_queue(p, kind, path, post, timeout_ms, fresh);
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	smt_dynbuf_init(&r->body, MAX_BODY);
	r->p = p;
	r->kind = kind;
	r->easy = curl_easy_init();
	if (r->easy == NULL)
		goto fail;
	snprintf(url, sizeof(url), "%s%s", p->tcp_use ? p->tcp_url : p->url, path);
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	if (!p->tcp_use) {
		curl_easy_setopt(r->easy, CURLOPT_UNIX_SOCKET_PATH, ps->path);
		curl_easy_setopt(r->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
		curl_easy_setopt(r->easy, CURLOPT_OPENSOCKETDATA, p);
		/* Its answer may name the worker's TCP channel: then this ssh
		 * must not stay open, idle, for the whole job. */
		if (ps->cfg.tcp)
			curl_easy_setopt(r->easy, CURLOPT_FORBID_REUSE, 1L);
	} else {
		/* Nagle's delay would hold a small request behind the answer
		 * to the one before. */
		curl_easy_setopt(r->easy, CURLOPT_TCP_NODELAY, 1L);
		/* A TCP connection costs the leader a few KiB while it stays
		 * open, and opening one takes no handshake: only the fetch of
		 * the lines keeps its own; a one-shot request (the launch, the
		 * end, the result) opens one when it is sent, and so does the
		 * watch, which mostly rests (watch_parked) and would leave an
		 * idle connection behind in curl's cache. */
		if (kind != REQ_LINES)
			curl_easy_setopt(r->easy, CURLOPT_FORBID_REUSE, 1L);
		curl_easy_setopt(r->easy, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
		curl_easy_setopt(r->easy, CURLOPT_SOCKOPTDATA, ps);
		curl_easy_setopt(r->easy, CURLOPT_CLOSESOCKETFUNCTION, on_closesocket);
		curl_easy_setopt(r->easy, CURLOPT_CLOSESOCKETDATA, p);
	}
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
	/* A channel idle for the whole job (see smt_peers_launched) is still
	 * good: curl's default gives up on it after 118 s. */
	curl_easy_setopt(r->easy, CURLOPT_MAXAGE_CONN, 30L * 86400);
	/*
	 * The end of every transfer prunes curl's DNS cache, a walk of all
	 * of it - and it holds an entry per worker (an address is cached
	 * too): a walk of 1000 per request at 1000 workers, 3% of the
	 * machine at the job's end (B12e).  "Forever" skips the walk; the
	 * cache holds no more than an entry per worker's channel.
	 */
	curl_easy_setopt(r->easy, CURLOPT_DNS_CACHE_TIMEOUT, -1L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE, recv_buffer(p, kind));
	/* ssh itself takes time to connect; curl's own connect is local. */
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms ? timeout_ms :
				      (long)(smt_tcpchannel_silence(ps->cfg.peer_timeout) * 1000));
	r->headers = curl_slist_append(NULL, SMT_HEADER_LEADER ": 1");
	if (p->tcp_use)
		r->headers = curl_slist_append(r->headers, p->tcp_header);
	if (post) {
		r->post = strdup(post);
		if (r->post == NULL)
			goto fail;
		r->headers = curl_slist_append(r->headers, "Content-Type: application/json");
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->post);
	}
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	for (size_t i = 0; i < INFLIGHT; i++) {
		if (p->inflight[i] == NULL) {
			p->inflight[i] = r;
			break;
		}
	}
	if (smt_curluv_add(ps->cu, r->easy, on_done, r) < 0)
		goto fail;
	if (is_oneshot(p, kind)) {
		r->oneshot = 1;
		ps->oneshots++;
	}
	if (timeout_ms == 0) {
		r->kept = 1;
		p->kept++;
		uv_timer_stop(&p->lost_timer);
	}
	return 0;
fail:
	req_free(r);
	return -ENOMEM;
}

/* ---- readiness ---- */

static uint64_t backoff(struct peer *p)
{
	uint64_t ms = BACKOFF_MIN_MS;

	for (unsigned i = 0; i < p->attempt && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	p->attempt++;
	return ms;
}

static void send_result(struct peer *p);

static void on_retry(uv_timer_t *t)
{
	struct peer *p = t->data;

	if (p->ps->closing || p->lost)
		return;
	if (p->ps->sending_result) {
		if (!p->result_done)
			send_result(p);
		return;
	}
	if (!p->ready)
		send_probe(p);
	else if (p->ps->launched && !p->ps->sending_result)
		send_watch(p);
}

static void retry_later(struct peer *p)
{
	uv_timer_start(&p->retry, on_retry, backoff(p), 0);
}

static void send_probe(struct peer *p)
{
	/* Brief: the host list, which grows with the job, comes as a digest;
	 * the list itself only to say how it differs. */
	const char *path = p->full_probe ? SMT_PATH_STATUS : SMT_PATH_STATUS "?" SMT_Q_BRIEF "=1";

	if (req_send(p, REQ_PROBE, path, NULL, 15000, 0) < 0)
		retry_later(p);
}

/* The worker answers, but its pre-launch phase runs (pip, the preflight
 * command): ask again for its next change, held by the worker for up to
 * PRELAUNCH_WAIT_MS, so that its end is known at once and not after a
 * back-off. */
#define PRELAUNCH_WAIT_MS 5000
static void send_probe_wait(struct peer *p)
{
	char path[128];

	snprintf(path, sizeof(path), "%s?wait=%" JSON_INTEGER_FORMAT "&timeout=%d&%s=1",
		 SMT_PATH_STATUS, p->generation, PRELAUNCH_WAIT_MS, SMT_Q_BRIEF);
	if (req_send(p, REQ_PROBE, path, NULL, PRELAUNCH_WAIT_MS * 2 + 1000, 0) < 0)
		retry_later(p);
}

/* The worker's own pre-launch phase (its entry in the status's list) is
 * still running. */
static int prelaunch_running(const struct peer *p, json_t *st)
{
	json_t *list = json_object_get(st, SMT_F_PREFLIGHT), *r;
	size_t i;

	json_array_foreach(list, i, r) {
		const char *host = json_string_value(json_object_get(r, SMT_F_HOST));
		const char *state = json_string_value(json_object_get(r, SMT_F_STATE));

		if (host && strcmp(host, p->host) == 0)
			return state && strcmp(state, "running") == 0;
	}
	return 0;
}

/* Compare the worker's host list with ours; on a difference write it to
 * WHAT and return nonzero. */
static int hosts_differ(struct smt_peers *ps, json_t *hosts, char *what, size_t len)
{
	size_t n = json_is_array(hosts) ? json_array_size(hosts) : 0;
	char theirs[512] = "", ours[512] = "";
	int differ = n != ps->cfg.njob_hosts;

	for (size_t i = 0; i < n && !differ; i++) {
		json_t *h = json_array_get(hosts, i);
		const char *name = json_is_object(h) ?
			json_string_value(json_object_get(h, SMT_F_HOST)) :
			json_string_value(h);
		if (name == NULL || strcmp(name, ps->cfg.job_hosts[i]) != 0)
			differ = 1;
	}
	if (!differ)
		return 0;
	/* Only now the lists as text: per worker, that would be a walk of
	 * every host's name for each of them. */
	for (size_t i = 0; i < n; i++) {
		json_t *h = json_array_get(hosts, i);
		const char *name = json_is_object(h) ?
			json_string_value(json_object_get(h, SMT_F_HOST)) :
			json_string_value(h);
		if (name == NULL)
			name = "?";
		size_t l = strlen(theirs);
		if (l + 1 >= sizeof(theirs))
			break;
		snprintf(theirs + l, sizeof(theirs) - l, "%s%s", i ? "," : "", name);
	}
	for (size_t i = 0; i < ps->cfg.njob_hosts; i++) {
		size_t l = strlen(ours);
		if (l + 1 >= sizeof(ours))
			break;
		snprintf(ours + l, sizeof(ours) - l, "%s%s", i ? "," : "", ps->cfg.job_hosts[i]);
	}
	snprintf(what, len, "its hosts are [%s], the leader's are [%s]", theirs, ours);
	return 1;
}

/*
 * The worker's TCP channel as its answer names it (only an answer over ssh
 * carries the token): from now on every request to it goes there.  An
 * address, port or token that is not one is refused with a warning, and
 * the worker stays on ssh.
 */
static void tcp_learn(struct peer *p, json_t *st)
{
	json_t *ch = json_object_get(st, SMT_F_CHANNEL);
	const char *addr = json_string_value(json_object_get(ch, SMT_F_ADDRESS));
	const char *token = json_string_value(json_object_get(ch, SMT_F_TOKEN));
	json_int_t port = json_integer_value(json_object_get(ch, SMT_F_PORT));
	unsigned char bin[sizeof(struct in6_addr)];
	int v6 = addr && strchr(addr, ':') != NULL;
	size_t hex = token ? strspn(token, "0123456789abcdef") : 0;

	if (p->tcp_use || p->tcp_refused || p->tcp_header || !p->ps->cfg.tcp || !ch)
		return;
	if (!addr || inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1 || port < 1 ||
	    port > 65535 || !token || hex != SMT_TOKEN_HEX || token[hex] != '\0') {
		smt_warn("worker %s names a TCP channel that is not one (address, port or "
			 "token): its channels go through ssh", p->host);
		p->tcp_refused = 1;
		return;
	}
	if (asprintf(&p->tcp_header, SMT_HEADER_TOKEN ": %s", token) < 0) {
		p->tcp_header = NULL;
		return;
	}
	snprintf(p->tcp_url, sizeof(p->tcp_url), v6 ? "http://[%s]:%d" : "http://%s:%d", addr,
		 (int)port);
	p->tcp_use = 1;
	smt_debug("channel to %s: TCP %s", p->host, p->tcp_url + 7);
}

/* A TCP channel that never carried a request is given up for ssh, loudly:
 * an address the leader cannot reach is the operator's to fix, but not a
 * reason to lose the worker. */
static void tcp_give_up(struct peer *p, CURLcode result)
{
	if (!p->tcp_use || p->tcp_heard ||
	    (result != CURLE_COULDNT_CONNECT && result != CURLE_OPERATION_TIMEDOUT))
		return;
	smt_warn("the TCP channel to %s (%s) cannot be reached: %s; its channels go through "
		 "ssh", p->host, p->tcp_url + 7, curl_easy_strerror(result));
	p->tcp_use = 0;
}

static void probe_answer(struct peer *p, json_t *st)
{
	struct smt_peers *ps = p->ps;
	const char *role = json_string_value(json_object_get(st, SMT_F_ROLE));
	const char *leader = json_string_value(json_object_get(st, SMT_F_LEADER));
	const char *state = json_string_value(json_object_get(st, SMT_F_STATE));
	const char *digest = json_string_value(json_object_get(st, SMT_F_HOSTS_DIGEST));
	char what[1200];

	if (digest && strcmp(digest, ps->hosts_digest) != 0 && !p->full_probe) {
		/* Another host list: fetch it, to say how it differs. */
		p->full_probe = 1;
		send_probe(p);
		return;
	}
	if (!digest && hosts_differ(ps, json_object_get(st, SMT_F_HOSTS), what, sizeof(what))) {
		p->mismatch = 1;
		ps->ops->mismatch(ps->ctx, p->index, what);
		return;
	}
	if (role == NULL || strcmp(role, "worker") != 0 || leader == NULL ||
	    strcmp(leader, ps->cfg.leader) != 0) {
		snprintf(what, sizeof(what),
			 "it runs as %s with leader %s, expected a worker of leader %s",
			 role ? role : "?", leader ? leader : "?", ps->cfg.leader);
		p->mismatch = 1;
		ps->ops->mismatch(ps->ctx, p->index, what);
		return;
	}
	tcp_learn(p, st);
	if (state && smt_state_parse(state) == SMT_STATE_STARTING) {
		retry_later(p);
		return;
	}
	if (prelaunch_running(p, st)) {
		p->attempt = 0;
		if (json_is_integer(json_object_get(st, SMT_F_GENERATION)))
			p->generation = json_integer_value(json_object_get(st, SMT_F_GENERATION));
		send_probe_wait(p);
		return;
	}
	p->ready = 1;
	p->attempt = 0;
	if (json_is_integer(json_object_get(st, SMT_F_GENERATION)))
		p->generation = json_integer_value(json_object_get(st, SMT_F_GENERATION));
	ps->nready++;
	smt_info("worker %s is ready (%zu/%zu)", p->host, ps->nready, ps->n);
	ps->ops->news(ps->ctx, p->index, st);
	if (ps->nready == ps->n)
		ps->ops->all_ready(ps->ctx);
}

/* ---- losing and regaining a channel ---- */

/*
 * A worker is lost when nothing was heard from it for the peer timeout:
 * the timer is re-armed by every answer, and the long poll makes the
 * worker answer at least every watch period (a third of the timeout).
 */
static void on_lost_timer(uv_timer_t *t)
{
	struct peer *p = t->data;
	char why[128];

	if (p->lost || p->ps->closing)
		return;
	if (p->watch_parked) {
		/* Not the worker's silence: the leader asked nothing (its
		 * batch of lines still in the merge, its output over while
		 * the job ends).  Asked now, it has the whole timeout again. */
		unpark_watch(p);
		heard(p);
		return;
	}
	p->lost = 1;
	snprintf(why, sizeof(why), "nothing was heard from it for %.1f s (--peer-timeout)",
		 p->ps->cfg.peer_timeout);
	p->ps->ops->lost(p->ps->ctx, p->index, why);
}

static void heard(struct peer *p)
{
	if (p->kept)
		return;
	uv_timer_start(&p->lost_timer, on_lost_timer, (uint64_t)(p->ps->cfg.peer_timeout * 1000),
		       0);
}

/*
 * A poll held with no time ended.  With none left, silence is timed again:
 * from when the kernel last heard the worker on the connection that failed
 * (a keepalive that found nobody: smt_tcpchannel_silence seconds ago), else
 * from now, so that a worker is lost after --peer-timeout of silence over
 * TCP as over ssh.
 */
static void kept_ended(struct peer *p, CURLcode result)
{
	uint64_t ms = (uint64_t)(p->ps->cfg.peer_timeout * 1000), now = uv_now(p->ps->loop);

	if (--p->kept > 0 || p->lost || p->ps->closing || p->ps->sending_result)
		return;
	if (result != CURLE_OK && p->quiet_at + 1000 >= now)
		ms = p->quiet_ms < ms ? ms - p->quiet_ms : 0;
	uv_timer_start(&p->lost_timer, on_lost_timer, ms, 0);
}

static void channel_failed(struct peer *p, const char *why)
{
	if (!p->down) {
		p->down = 1;
		smt_warn("channel to %s failed (%s); retrying until %.1f s after it was last heard",
			 p->host, why, p->ps->cfg.peer_timeout);
	}
	retry_later(p);
}

static void channel_ok(struct peer *p)
{
	p->attempt = 0;
	heard(p);
	if (p->down) {
		p->down = 0;
		smt_info("channel to %s is back", p->host);
	}
}

/* ---- watching ---- */

static void send_watch(struct peer *p)
{
	send_watch_fresh(p, 0);
}

static void send_watch_fresh(struct peer *p, int fresh)
{
	char path[128];

	int kept = p->tcp_use && p->watch_heard;

	snprintf(path, sizeof(path), "%s?wait=%" JSON_INTEGER_FORMAT "&timeout=%ld&%s=1%s",
		 SMT_PATH_STATUS, p->generation, (long)(p->ps->cfg.watch_timeout * 1000),
		 SMT_Q_BRIEF, kept ? "&" SMT_Q_KEEP "=1" : "");
	/* An answer later than this means the channel is stuck; held with
	 * no time, the keepalive says so (tcpchannel.h). */
	if (req_send(p, REQ_WATCH, path, NULL,
		     kept ? 0 : (long)(p->ps->cfg.watch_timeout * 2000 + 1000), fresh) < 0)
		channel_failed(p, "out of memory");
}

/* The watch again, where a fetch of the lines no longer carries the news. */
static void unpark_watch(struct peer *p)
{
	if (!p->watch_parked)
		return;
	p->watch_parked = 0;
	if (!p->lost && !p->ps->sending_result && !p->ps->closing)
		send_watch(p);
}

/*
 * The fetch of the lines carries the news now: a watch held with no time
 * is given up, and its connection closed.  One held with a time limit is
 * not: it rests at its answer (on_done).
 */
static void park_watch(struct peer *p)
{
	for (size_t i = 0; i < INFLIGHT; i++) {
		struct req *r = p->inflight[i];

		if (r && r->kind == REQ_WATCH && r->kept) {
			smt_curluv_cancel(p->ps->cu, r->easy);
			p->kept--;  /* the fetch's is still out: no silence to time */
			req_free(r);
			p->watch_parked = 1;
			return;
		}
	}
}

/* The answer to a fetch of the lines is the worker's status (SMT_Q_GEN). */
static int is_status(CURL *easy)
{
	char *type = NULL;

	curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &type);
	return type && strncmp(type, SMT_CONTENT_TYPE_JSON, strlen(SMT_CONTENT_TYPE_JSON)) == 0;
}

/* A worker's status, as a watch or a fetch of its lines brought it: news
 * if its generation is one not heard yet (the two may cross). */
static void take_status(struct peer *p, json_t *st)
{
	json_t *gen = json_object_get(st, SMT_F_GENERATION);

	if (json_is_integer(gen) && json_integer_value(gen) > p->generation) {
		p->generation = json_integer_value(gen);
		p->ps->ops->news(p->ps->ctx, p->index, st);
	}
}

/* ---- results ---- */

static void result_settled(struct peer *p)
{
	struct smt_peers *ps = p->ps;

	if (p->result_done)
		return;
	p->result_done = 1;
	if (--ps->results_pending == 0)
		ps->ops->results_delivered(ps->ctx);
}

static void send_result(struct peer *p)
{
	if (req_send(p, REQ_RESULT, SMT_PATH_RESULT, p->ps->result_json, 5000, 0) < 0)
		result_settled(p);
}

/* ---- the next attempt ---- */

/* The worker's preflight for the next attempt runs: the same request
 * again this soon, doubling up to the most. */
#define ATTEMPT_ASK_MS 20
#define ATTEMPT_ASK_MAX_MS 320

static void attempt_answer(struct peer *p, const char *why, json_t *st);

static void on_attempt_retry(uv_timer_t *t)
{
	struct peer *p = t->data;
	struct smt_peers *ps = p->ps;

	if (ps->closing || p->lost || !p->attempt_pending || ps->sending_result)
		return;
	if (req_send(p, REQ_ATTEMPT, SMT_PATH_ATTEMPT, ps->attempt_json, 10000, 0) < 0)
		attempt_answer(p, "out of memory", NULL);
}

/* A worker confirmed that its part of the attempt is over and told how its
 * preflight for the next one went (or goes: asked again) - or could not
 * take it: then it is lost to the job. */
static void attempt_answer(struct peer *p, const char *why, json_t *st)
{
	struct smt_peers *ps = p->ps;
	json_t *pf = json_object_get(st, SMT_F_PREFLIGHT);
	const char *state = json_string_value(json_object_get(pf, SMT_F_STATE));

	if (!p->attempt_pending)
		return;
	if (!why[0] && state && strcmp(state, "running") == 0) {
		uint64_t ms = ATTEMPT_ASK_MS;

		for (unsigned i = 0; i < p->attempt_asks && ms < ATTEMPT_ASK_MAX_MS; i++)
			ms *= 2;
		p->attempt_asks++;
		uv_timer_start(&p->attempt_retry, on_attempt_retry,
			       ms < ATTEMPT_ASK_MAX_MS ? ms : ATTEMPT_ASK_MAX_MS, 0);
		return;
	}
	p->attempt_pending = 0;
	if (why[0]) {
		char text[200];
		snprintf(text, sizeof(text), "it did not take the job's next attempt: %s", why);
		p->lost = 1;
		ps->ops->lost(ps->ctx, p->index, text);
		return;
	}
	if (json_is_object(pf) && ps->ops->attempt_preflight)
		ps->ops->attempt_preflight(ps->ctx, p->index, pf);
	/* A failed preflight ends the job: the leader's word, not a launch. */
	if (state && strcmp(state, "failed") == 0)
		return;
	if (--ps->attempts_pending == 0 && ps->ops->attempt_ready)
		ps->ops->attempt_ready(ps->ctx);
}

int smt_peers_next_attempt(struct smt_peers *ps, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);

	if (!text)
		return -ENOMEM;
	ps->attempt = json_integer_value(json_object_get(body, SMT_F_ATTEMPT));
	ps->ending = 0;
	free(ps->attempt_json);
	ps->attempt_json = text;
	ps->attempts_pending = 1;  /* held until every request is out */
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		if (p->lost || p->mismatch)
			continue;
		/* Its output of the next attempt comes after the end of this
		 * one's, in the same stream. */
		p->lines_eof = 0;
		p->lines_acked = 0;
		p->attempt_pending = 1;
		p->attempt_asks = 0;
		ps->attempts_pending++;
		if (req_send(p, REQ_ATTEMPT, SMT_PATH_ATTEMPT, text, 10000, 0) < 0) {
			p->attempt_pending = 0;
			ps->attempts_pending--;
		}
	}
	if (--ps->attempts_pending == 0 && ps->ops->attempt_ready)
		ps->ops->attempt_ready(ps->ctx);
	return 0;
}

/* ---- the workers' output ---- */

static void send_lines(struct peer *p);

static size_t lines_max(const struct smt_peers *ps)
{
	size_t m = ps->n ? LINES_BUDGET / ps->n : LINES_MAX_MAX;

	return m < LINES_MAX_MIN ? LINES_MAX_MIN : m > LINES_MAX_MAX ? LINES_MAX_MAX : m;
}

static void on_lines_retry(uv_timer_t *t)
{
	struct peer *p = t->data;

	if (!p->ps->closing && !p->lost)
		send_lines(p);
}

static void lines_retry_later(struct peer *p)
{
	uint64_t ms = BACKOFF_MIN_MS;

	unpark_watch(p);

	for (unsigned i = 0; i < p->lines_attempt && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	p->lines_attempt++;
	uv_timer_start(&p->lines_retry, on_lines_retry, ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms,
		       0);
}

/*
 * How long a worker holds the leader's fetch of its lines while it has
 * none: the most it allows.  The fetch answers as soon as there are lines
 * (or their end); the worker's liveness is the status watch's business
 * (heard()), so an idle fetch need not come back every watch period: with
 * 1000 idle workers that was 300 needless answers a second to the leader.
 */
#define LINES_HOLD_MS 60000L

static void send_lines_fresh(struct peer *p, int fresh);

static void send_lines(struct peer *p)
{
	send_lines_fresh(p, 0);
}

static void send_lines_fresh(struct peer *p, int fresh)
{
	struct smt_peers *ps = p->ps;
	char path[160];
	long wait_ms = LINES_HOLD_MS;

	if (p->lines_busy || p->lines_acked || p->lost || ps->closing)
		return;
	/* After the end of output, one more fetch from past it says it
	 * arrived; the worker then needs to keep nothing. */
	int kept = p->tcp_use && !p->lines_eof && p->lines_heard;
	/* Every fetch over TCP names the generation last heard, the timed
	 * ones too (the first, the acknowledgement of the end): the worker
	 * may be about to exit, and the status that moved comes back on the
	 * connection already open. */
	int gen = p->tcp_use && p->generation >= 0;
	char genq[48] = "";

	if (gen)
		snprintf(genq, sizeof(genq), "&%s=%" JSON_INTEGER_FORMAT, SMT_Q_GEN, p->generation);
	snprintf(path, sizeof(path), "%s?%s=%" PRIu64 "&%s=%zu&%s=%ld%s%s", SMT_PATH_LINES,
		 SMT_Q_FROM, p->lines_from, SMT_Q_MAX, p->lines_eof ? (size_t)0 : lines_max(ps),
		 SMT_Q_WAIT, p->lines_eof ? 0L : wait_ms, kept ? "&" SMT_Q_KEEP "=1" : "", genq);
	if (req_send(p, REQ_LINES, path, NULL, kept ? 0 : wait_ms * 2 + 5000, fresh) < 0) {
		lines_retry_later(p);
		return;
	}
	p->lines_busy = 1;
	/* Timed or not, its answer is the news once the status moves. */
	p->lines_gen_out = gen;
	if (p->lines_gen_out)
		park_watch(p);
	else
		unpark_watch(p);
}

/* A batch of output was taken by the merger (or refused as corrupt). */
static void on_batch_done(void *arg, int rc, json_t *final)
{
	struct peer *p = arg;
	struct smt_peers *ps = p->ps;

	p->lines_busy = 0;
	p->batch_pending = 0;
	uv_timer_stop(&p->lines_retry);
	if (ps->closing || p->lost)
		return;
	if (rc < 0) {
		/* The merger took what it could decode and logged the rest as
		 * corrupt; LINES_FROM is already past the whole batch, so the
		 * next fetch asks for what follows, a little later. */
		lines_retry_later(p);
		return;
	}
	if (final && !p->lines_eof) {
		p->lines_eof = 1;
		if (ps->ops->final)
			ps->ops->final(ps->ctx, p->index, final);
	}
	send_lines(p);
}

/* How long a batch may wait in the merge before the watch carries the
 * worker's news again (watch_parked): the news of a rank's end or a stall
 * must not wait for another rank's line. */
#define BATCH_NEWS_MS 100

static void on_batch_slow(uv_timer_t *t)
{
	struct peer *p = t->data;

	if (p->batch_pending && !p->ps->closing && !p->lost)
		unpark_watch(p);
}

static void lines_answer(struct peer *p, struct req *r)
{
	struct smt_peers *ps = p->ps;
	size_t len;
	char *body = smt_dynbuf_take(&r->body, &len);

	if (p->lines_eof) {
		/* The acknowledgement of the end went through.  While the job
		 * ends the worker has nothing more to say but its exit, and
		 * the result is on its way: the watch rests (a connection and
		 * a round trip fewer per worker, B12e), brought back by the
		 * lost timer if the end takes longer than the peer timeout. */
		free(body);
		p->lines_busy = 0;
		p->lines_acked = 1;
		if (!ps->ending || !p->tcp_use)
			unpark_watch(p);
		if (ps->ops->acked)
			ps->ops->acked(ps->ctx, p->index);
		return;
	}
	p->lines_from += len;
	p->lines_last = len;
	p->lines_attempt = 0;
	if (len == 0) {
		free(body);
		p->lines_busy = 0;
		send_lines(p);
		return;
	}
	/* The batch is the merger's now; the next fetch waits until it was
	 * taken, which is the back-pressure from the leader's stdout. */
	p->batch_pending = 1;
	if (ps->ops->batch(ps->ctx, p->index, p->host, body, len, on_batch_done, p) < 0) {
		p->batch_pending = 0;
		p->lines_from -= len;
		p->lines_busy = 0;
		lines_retry_later(p);
		return;
	}
	/* Meanwhile no fetch carries the worker's news: if the batch is not
	 * taken soon (another rank's line holds the merge, the leader's
	 * stdout is slow), the watch does. */
	if (p->batch_pending)
		uv_timer_start(&p->lines_retry, on_batch_slow, BATCH_NEWS_MS, 0);
}

static void on_done_req(struct req *r, CURL *easy, CURLcode result);

/* A transfer ended: its answer taken, then a one-shot request waiting
 * takes its place (cfg.oneshots). */
static void on_done(void *arg, CURL *easy, CURLcode result)
{
	struct req *r = arg;
	struct smt_peers *ps = r->p->ps;

	on_done_req(r, easy, result);
	oneshot_next(ps);
#ifdef __GLIBC__
	/* A burst's transfers are gone: the whole pages they leave among the
	 * long polls' go back to the kernel (the heap cannot shrink past the
	 * polls) (B12d). */
	if (ps->burst && ps->oneshots == 0 && TAILQ_EMPTY(&ps->queue)) {
		ps->burst = 0;
		malloc_trim(0);
	}
#endif
}

static void on_done_req(struct req *r, CURL *easy, CURLcode result)
{
	struct peer *p = r->p;
	struct smt_peers *ps = p->ps;
	long code = 0;
	json_t *st = NULL;
	char why[CURL_ERROR_SIZE + 64];

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	if (r->kept)
		kept_ended(p, result);
	if (p->tcp_use && result == CURLE_OK)
		p->tcp_heard = 1;
	else
		tcp_give_up(p, result);
	if (result != CURLE_OK)
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(result));
	else if (code < 200 || code >= 300)
		snprintf(why, sizeof(why), "HTTP %ld", code);
	else
		why[0] = '\0';
	if (!why[0] && smt_dynbuf_len(&r->body) &&
	    (r->kind == REQ_PROBE || r->kind == REQ_WATCH || r->kind == REQ_ATTEMPT ||
	     (r->kind == REQ_LINES && is_status(easy)))) {
		st = json_loads(smt_dynbuf_ptr(&r->body), 0, NULL);
		if (!json_is_object(st)) {
			snprintf(why, sizeof(why), "the answer is not a JSON object");
			json_decref(st);
			st = NULL;
		}
	}
	enum req_kind kind = r->kind;
	if (kind == REQ_LINES && !ps->closing && !p->lost) {
		p->lines_heard = !why[0];
		p->lines_gen_out = 0;
		if (why[0]) {
			/* The connection may be gone: the watch sent for it
			 * is timed, not held with no time. */
			p->watch_heard = 0;
			unpark_watch(p);
			p->lines_busy = 0;
			channel_failed(p, why);
			lines_retry_later(p);
		} else if (st) {
			/* The status moved: its news, then the same fetch
			 * again, past the new generation. */
			channel_ok(p);
			if (!ps->sending_result)
				take_status(p, st);
			p->lines_busy = 0;
			send_lines(p);
		} else {
			channel_ok(p);
			lines_answer(p, r);
		}
		json_decref(st);
		req_free(r);
		return;
	}
	req_free(r);
	if (ps->closing || (p->lost && kind != REQ_RESULT) || (p->mismatch && kind == REQ_PROBE)) {
		json_decref(st);
		return;
	}

	switch (kind) {
	case REQ_PROBE:
		if (why[0]) {
			smt_debug("worker %s not ready: %s", p->host, why);
			retry_later(p);
		} else {
			probe_answer(p, st);
		}
		break;
	case REQ_LAUNCH:
		if (why[0])
			smt_warn("telling %s about the launch failed: %s", p->host, why);
		break;
	case REQ_END:
		if (why[0])
			smt_warn("a message to %s failed: %s", p->host, why);
		break;
	case REQ_LINES:
		break;
	case REQ_WATCH:
		p->watch_heard = !why[0];
		if (ps->sending_result)
			break;
		if (why[0]) {
			channel_failed(p, why);
			break;
		}
		channel_ok(p);
		take_status(p, st);
		if (!p->lost && !ps->sending_result && !ps->closing) {
			if (p->lines_gen_out)
				p->watch_parked = 1;
			else
				send_watch(p);
		}
		break;
	case REQ_RESULT:
		/* A worker not reached yet (its sshd still starting: the job
		 * failed before the launch) is tried again, with the back-off,
		 * until the leader stops waiting for the answers. */
		if (why[0] && !p->ready && !p->mismatch) {
			smt_debug("telling %s the result failed: %s; trying again", p->host, why);
			retry_later(p);
			break;
		}
		if (why[0])
			smt_warn("telling %s the result failed: %s", p->host, why);
		result_settled(p);
		break;
	case REQ_ATTEMPT:
		attempt_answer(p, why, st);
		break;
	}
	json_decref(st);
}

/* ---- the module ---- */

static void free_copies(struct smt_peers *ps)
{
	smt_logpipe_close(ps->log);
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->peers[i].host);
		free(ps->peers[i].tcp_header);
	}
	for (size_t i = 0; ps->job_hosts && i < ps->cfg.njob_hosts; i++)
		free(ps->job_hosts[i]);
	free(ps->job_hosts);
	free(ps->peers);
	free(ps->result_json);
	free(ps->attempt_json);
	free(ps);
}

static void handle_closed(uv_handle_t *h)
{
	struct smt_peers *ps = h->data;

	if (--ps->handles_open > 0)
		return;
	if (ps->listen_fd >= 0)
		close(ps->listen_fd);
	if (ps->path[0])
		unlink(ps->path);
	if (ps->dirfd >= 0)
		close(ps->dirfd);
	free_copies(ps);
}

int smt_peers_start(uv_loop_t *loop, const struct smt_peers_config *cfg,
		    const struct smt_peers_ops *ops, void *ctx, struct smt_peers **out)
{
	struct smt_peers *ps;
	char why[SMT_CURL_ERR_MAX];
	int rc;

	/* Only here, for a job of several hosts, does smtd need libcurl. */
	rc = smt_curl_load(why, sizeof(why));
	if (rc < 0) {
		smt_error("the workers' channels need libcurl: %s", why);
		return rc;
	}
	ps = calloc(1, sizeof(*ps));
	if (ps == NULL)
		return -ENOMEM;
	ps->loop = loop;
	ps->cfg = *cfg;
	if (ps->cfg.oneshots == 0)
		ps->cfg.oneshots = SMT_PEERS_ONESHOTS_DEFAULT;
	if (ps->cfg.watch_timeout <= 0) {
		ps->cfg.watch_timeout = ps->cfg.peer_timeout / 3;
		if (ps->cfg.watch_timeout > 5)
			ps->cfg.watch_timeout = 5;
		if (ps->cfg.watch_timeout < 0.2)
			ps->cfg.watch_timeout = 0.2;
	}
	ps->ops = ops;
	ps->ctx = ctx;
	ps->n = cfg->nhosts;
	if (cfg->nhosts > 65535) {
		free(ps);
		return -E2BIG;
	}
	ps->peers = calloc(ps->n ? ps->n : 1, sizeof(*ps->peers));
	ps->listen_fd = -1;
	ps->dirfd = -1;
	TAILQ_INIT(&ps->queue);
	/* The caller's arrays need not outlive this call. */
	ps->job_hosts = calloc(cfg->njob_hosts ? cfg->njob_hosts : 1, sizeof(*ps->job_hosts));
	for (size_t i = 0; ps->job_hosts && i < cfg->njob_hosts; i++)
		ps->job_hosts[i] = strdup(cfg->job_hosts[i]);
	ps->cfg.job_hosts = (const char *const *)ps->job_hosts;
	smt_digest_text(cfg->job_hosts, cfg->njob_hosts, ps->hosts_digest);
	ps->cfg.hosts = NULL;
	rc = ps->peers && ps->job_hosts ? smt_curluv_new(loop, &ps->cu) : -ENOMEM;
	if (rc < 0) {
		free_copies(ps);
		return rc;
	}
	if (smt_logpipe_new(loop, "ssh", &ps->log) < 0)
		ps->log = NULL;
	rc = open_listener(ps);
	if (rc < 0) {
		smt_error("cannot open the workers' channel socket: %s", strerror(-rc));
		smt_curluv_close(ps->cu);
		if (ps->dirfd >= 0)
			close(ps->dirfd);
		free_copies(ps);
		return rc;
	}
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		p->ps = ps;
		p->index = i;
		p->host = strdup(cfg->hosts[i]);
		p->generation = -1;
		/* A distinct host name per worker keeps curl from lending one
		 * worker's channel to another; it is never resolved. */
		snprintf(p->url, sizeof(p->url), "http://worker-%zu", i + 1);
		uv_timer_init(loop, &p->retry);
		uv_timer_init(loop, &p->lost_timer);
		uv_timer_init(loop, &p->lines_retry);
		uv_timer_init(loop, &p->attempt_retry);
		p->retry.data = p->lost_timer.data = p->lines_retry.data = p->attempt_retry.data =
			p;
		ps->handles_open += 4;
	}
	*out = ps;
	if (ps->n == 0) {
		/* Nothing to wait for, but still from the loop. */
		return 0;
	}
	for (size_t i = 0; i < ps->n; i++)
		send_probe(&ps->peers[i]);
	return 0;
}

void smt_peers_launched(struct smt_peers *ps)
{
	ps->launched = 1;
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		if (p->lost)
			continue;
		heard(p);
		req_send(p, REQ_LAUNCH, SMT_PATH_LAUNCH, "{}", 10000, 0);
		/*
		 * Over ssh (over TCP a one-shot request opens a connection
		 * of its own anyway, req_send): each long poll gets a
		 * connection of its own, so that the launch's stays open
		 * and idle for what the leader says next
		 * (the end, the result): both long polls are held then, and
		 * one more ssh handshake per worker would be on the way to
		 * every rank's signal and every host's exit (0.3-1 s on a
		 * loaded host).  Not left to curl: the launch's answer can
		 * come back before curl picks a connection for the fetch of
		 * the lines, which then took the launch's.  The three stay
		 * open, so a later attempt needs no new handshake (smtd(8)
		 * Restarts).
		 */
		send_lines_fresh(p, !ps->watching);
		if (ps->watching)
			continue;
		/* Over TCP the fetch carries the news (SMT_Q_GEN): the watch
		 * rests from the start, and 1000 workers' launch is not 2000
		 * held transfers (B12m). */
		if (p->lines_busy && p->lines_gen_out)
			p->watch_parked = 1;
		else
			send_watch_fresh(p, 1);
	}
	ps->watching = 1;
}

int smt_peers_post(struct smt_peers *ps, const char *path, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int n = 0;

	if (!text)
		return -ENOMEM;
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		if (p->lost || p->mismatch || !p->ready)
			continue;
		if (req_send(p, REQ_END, path, text, 10000, 0) == 0)
			n++;
	}
	free(text);
	return n;
}

void smt_peers_end(struct smt_peers *ps, const char *mode, int signo, double grace)
{
	const char *name = smt_signal_name(signo);
	/* The attempt it is for: one that arrives late, once the worker began
	 * the next, must not end that. */
	json_t *msg =
		json_pack("{s:s, s:s, s:f, s:I}", SMT_F_MODE, mode, SMT_F_SIGNAL,
			  name ? name : "TERM", SMT_F_GRACE, grace, SMT_F_ATTEMPT, ps->attempt);

	if (strcmp(mode, "signal") != 0)
		ps->ending = 1;
	if (msg)
		smt_peers_post(ps, SMT_PATH_END, msg);
	json_decref(msg);
}

int smt_peers_output_done(const struct smt_peers *ps, size_t i)
{
	const struct peer *p = &ps->peers[i];

	return p->lines_eof || p->lost || p->mismatch || !ps->launched;
}

void smt_peers_send_result(struct smt_peers *ps, json_t *result)
{
	ps->sending_result = 1;
	free(ps->result_json);
	ps->result_json = json_dumps(result, JSON_COMPACT);
	ps->results_pending = 1; /* held until every send is issued */
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		uv_timer_stop(&p->retry);
		uv_timer_stop(&p->lost_timer);
		/* Every worker not lost hears the result - also one not ready yet
		 * and one of another job: none may wait for a launch that will
		 * not come.  One that cannot be reached fails its request. */
		if (p->lost) {
			p->result_done = 1;
			continue;
		}
		ps->results_pending++;
		send_result(p);
	}
	if (--ps->results_pending == 0)
		ps->ops->results_delivered(ps->ctx);
}

size_t smt_peers_count(const struct smt_peers *ps)
{
	return ps ? ps->n : 0;
}

const char *smt_peers_host(const struct smt_peers *ps, size_t i)
{
	return ps->peers[i].host;
}

int smt_peers_ready(const struct smt_peers *ps, size_t i)
{
	return ps->peers[i].ready;
}

size_t smt_peers_ready_count(const struct smt_peers *ps)
{
	return ps ? ps->nready : 0;
}

void smt_peers_missing(const struct smt_peers *ps, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ps->n && used < len; i++) {
		if (ps->peers[i].ready)
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "",
				 ps->peers[i].host);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

void smt_peers_close(struct smt_peers *ps)
{
	if (ps == NULL)
		return;
	ps->closing = 1;
	for (struct queued *q; (q = TAILQ_FIRST(&ps->queue));) {
		TAILQ_REMOVE(&ps->queue, q, link);
		free(q->post);
		free(q);
	}
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->peers[i];
		for (size_t k = 0; k < INFLIGHT; k++) {
			if (p->inflight[k]) {
				smt_curluv_cancel(ps->cu, p->inflight[k]->easy);
				req_free(p->inflight[k]);
			}
		}
		uv_close((uv_handle_t *)&p->retry, handle_closed);
		uv_close((uv_handle_t *)&p->lost_timer, handle_closed);
		uv_close((uv_handle_t *)&p->lines_retry, handle_closed);
		uv_close((uv_handle_t *)&p->attempt_retry, handle_closed);
		p->retry.data = p->lost_timer.data = p->lines_retry.data = p->attempt_retry.data =
			ps;
	}
	smt_curluv_close(ps->cu);
	uv_close((uv_handle_t *)&ps->listener, handle_closed);
}
