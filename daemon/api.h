/*
 * api.h - the control API of smtd(8) The control API: HTTP/1.1 with JSON bodies, served on
 * the daemon's libuv loop over a Unix socket and, optionally, read-only
 * over TCP for health probes.
 *
 * The server knows nothing of jobs: what it answers comes from a small
 * table of callbacks (struct smt_api_ops), all called synchronously on the
 * loop, so a callback may read and change the daemon's state freely.
 * A request is answered as soon as it is complete; pipelined requests are
 * answered in order.
 *
 * Robustness: headers over SMT_MAX_HEADER_BYTES (the request line and
 * every header byte) get 431, a body over SMT_MAX_BODY_BYTES 413, a
 * malformed request 400; all three close the connection.  A client that
 * does not complete a request within the idle timeout (default
 * SMT_API_IDLE_TIMEOUT_MS; trickling bytes does not extend it) is dropped
 * - except the leader's channel, which idles between the readiness probe
 * and the launch and ends with its ssh anyway.  A request is the leader's
 * when it carries "X-Smtd-Leader: 1" on the Unix socket from uid 0 or the
 * daemon's own uid; the header means nothing from anyone else, and nothing
 * over TCP.  Beyond SMT_API_MAX_CONNECTIONS open connections on the Unix
 * socket, or SMT_API_MAX_TCP_CONNECTIONS over TCP (each listener counts
 * its own), a new one gets a 503 and is closed at once.  Within those, a
 * client that is neither root nor the daemon's uid shares the socket's
 * places less an eighth (kept for root: the leader's channel, an
 * operator's kill) and holds at most a quarter of them per uid; over TCP
 * one address holds at most three quarters.
 *
 * Pipelined requests are answered one at a time: a connection's next
 * request is read only while its unsent answers stay under
 * SMT_API_CONN_OUTPUT_MAX, and the large answers (status, logs, metrics)
 * are rendered one per turn of the loop and only while every connection's
 * unsent answers together stay under SMT_API_OUTPUT_MAX - the leader's
 * requests excepted.  So the answers a client leaves unread hold at most
 * SMT_API_OUTPUT_MAX plus one answer of memory, for at most the idle
 * timeout, and a large answer delays another request by one rendering at
 * most.  Nothing a client does makes any of these functions fail or
 * blocks the loop.
 *
 * Writing to a client that went away raises SIGPIPE: the process must
 * ignore SIGPIPE (smtd does) before the loop runs.
 */
#ifndef SMT_API_H
#define SMT_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>
#include <uv.h>

#include "apiops.h"

/* A connection that completes no request for this long is dropped. */
#define SMT_API_IDLE_TIMEOUT_MS 10000
/* Open connections beyond this many are refused (503, then closed): on
 * the Unix socket, and over TCP (--health-listen) on their own. */
#define SMT_API_MAX_CONNECTIONS 256
#define SMT_API_MAX_TCP_CONNECTIONS 16
/* The channel listener's: the leader needs a few (its long polls, the
 * launch and the end); the rest are for whoever else knocks. */
#define SMT_API_MAX_CHANNEL_CONNECTIONS 32
/* A connection's next request waits while its unsent answers exceed this. */
#define SMT_API_CONN_OUTPUT_MAX (64 * 1024)
/* Large answers wait while all unsent answers together exceed this. */
#define SMT_API_OUTPUT_MAX (8 * 1024 * 1024)

struct smt_api;


/*
 * A server on LOOP with no listener yet.  OPS must outlive the server.
 * Returns 0 or -ENOMEM.
 */
int smt_api_new(uv_loop_t *loop, const struct smt_api_ops *ops, void *ctx,
		struct smt_api **out);

/*
 * How long smt_api_close waits for each of the leader's connections to be
 * closed by its client after the last answer (default 2000 ms: a worker's
 * answer to the leader's result must get through `smtctl dial-stdio`
 * before the daemon, as PID 1, takes the relay down with it).  0 when
 * nobody is left to answer to.  Other clients never wait: they are closed
 * once their answers are written, within 200 ms.
 */
void smt_api_set_linger(struct smt_api *api, unsigned ms);

/*
 * Change the idle timeout and the connection limit of the Unix socket
 * (tests use short ones).  Applies to connections accepted afterwards.
 * Zero keeps the current value.
 */
void smt_api_set_limits(struct smt_api *api, unsigned idle_timeout_ms,
			unsigned max_connections);
/* The same for the TCP listener's connection limit. */
void smt_api_set_tcp_limit(struct smt_api *api, unsigned max_connections);
/* Change SMT_API_CONN_OUTPUT_MAX and SMT_API_OUTPUT_MAX (tests); zero
 * keeps the current value. */
void smt_api_set_output_limits(struct smt_api *api, size_t per_connection, size_t total);

/*
 * Listen on the Unix socket PATH, as a careful daemon does: when a server
 * already answers there, return -EADDRINUSE (and log it) without touching
 * the file; remove a stale socket file (but never a file that is not a
 * socket: -EEXIST); create missing parent directories with mode 0755; bind
 * under umask 0117, then make the socket 0660 and, when GROUP is not NULL,
 * give it that group (-ENOENT for an unknown group).  The descriptor is
 * close-on-exec.  Every error is logged with the path and the reason.
 * Requests that change anything are accepted only from SO_PEERCRED uid 0
 * or the daemon's own uid.  The socket file is removed by smt_api_close.
 */
int smt_api_listen_unix(struct smt_api *api, const char *path,
			const char *group);

/*
 * ADDR_PORT as smt_api_listen_tcp takes it: "127.0.0.1:8080",
 * "[::1]:8080", ":8080" for every address; a numeric address, a port of
 * 0 to 65535.  Returns 0 or -EINVAL.
 */
int smt_api_parse_listen(const char *addr_port, struct sockaddr_storage *out);

/*
 * Listen on TCP ADDR_PORT (see above; port 0 picks a free one) for the
 * read-only requests: GET of status, healthz, readyz, logs and metrics.
 * Every POST gets 403.  Returns 0, -EINVAL for a malformed address or a
 * libuv error.
 */
int smt_api_listen_tcp(struct smt_api *api, const char *addr_port);

/* The port of the TCP listener, or -ENOENT when there is none. */
int smt_api_tcp_port(const struct smt_api *api);

/*
 * A worker's channel for the leader (smtd(8) Channels): listen on TCP
 * ADDR (port 0 picks a free one) for requests that carry TOKEN
 * (SMT_TOKEN_HEX hex digits, copied) in SMT_HEADER_TOKEN.  Such a request
 * is served as root's on the Unix socket; any other is answered 403 and
 * its connection closed before its body is read.  Its connections have
 * SMT_API_MAX_CHANNEL_CONNECTIONS places of their own.  A connection that
 * holds a poll with no time (keep=1) gets TCP keepalive timed from PT,
 * the peer timeout (smt_tcpchannel_keepalive), and ops->leader_kept hears
 * of it.  Returns 0, -EINVAL for a token of another length, or a libuv
 * error.
 */
int smt_api_listen_channel(struct smt_api *api, const struct sockaddr *addr, const char *token,
			   double pt);
/* Its port, or -ENOENT when there is none. */
int smt_api_channel_port(const struct smt_api *api);

/* The status changed: every held long poll is answered 20 ms from the
 * first change not yet answered, with whatever changed meanwhile. */
void smt_api_notify(struct smt_api *api);
/* The rank output grew: answer the held GET /v1/lines that can be now
 * (API, a struct smt_api, as a callback's argument: a worker's outbox
 * calls it directly, smt_output_config's outbox_news). */
void smt_api_notify_lines(void *api);

/* The number of open client connections. */
unsigned smt_api_connections(const struct smt_api *api);

/*
 * Close every listener and connection, remove the Unix socket file and
 * free the server.  DONE(ARG), when not NULL, runs once the last handle
 * is closed (from a close callback, or before smt_api_close returns when
 * no handle was open); the loop then holds no handle of the server.
 */
void smt_api_close(struct smt_api *api, void (*done)(void *), void *arg);

#endif
