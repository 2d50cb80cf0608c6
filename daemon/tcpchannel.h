/*
 * tcpchannel.h - a worker's TCP channel for the leader: where it listens
 * and the token that opens it (smtd(8) Channels).
 *
 * The leader reaches a worker over ssh until the worker is ready; the
 * answer to its readiness probe, over that ssh, names this channel and
 * carries its token, and every later request (the launch, the long polls,
 * the lines, the end, the result) goes over TCP with the token: the leader
 * then keeps no ssh process per worker.  The address is the job's
 * interface's (network_interface_name: its first IPv4 address, else its
 * first global IPv6 one), the port a free one the kernel picks, the token
 * SMT_TOKEN_HEX hex digits from getrandom(2), new at every smtd start.
 *
 * Once the job runs, the leader's long poll on it (the fetch of the lines,
 * which carries the status's news too: SMT_Q_GEN) is held until
 * something changes (SMT_Q_KEEP), not answered every watch period: with
 * 1000 idle workers that was 200 answers a second on the leader for
 * nothing.  Whether the other end still lives is then the kernel's to
 * tell, by TCP keepalive on both ends (smt_tcpchannel_keepalive), which
 * wakes neither daemon: a connection silent for smt_tcpchannel_silence()
 * seconds fails with ETIMEDOUT.  What the kernel cannot tell is a daemon
 * that lives but does not answer (stopped, or stuck): smtd(8) Channels.
 */
#ifndef SMT_TCPCHANNEL_H
#define SMT_TCPCHANNEL_H

#include <netinet/in.h>

#include "api.h"
#include "smt_proto.h"

struct smt_tcpchannel {
	char address[INET6_ADDRSTRLEN];
	int port;                         /* 0: no channel */
	char token[SMT_TOKEN_HEX + 1];
};

/*
 * Listen on IFACE's address for API's channel connections, their keepalive
 * timed from PT (the peer timeout, seconds).  Returns 0 and fills OUT, or a
 * negative errno with ERR saying why (no such interface, no address on
 * it, the listen failed) in one line.
 */
int smt_tcpchannel_open(struct smt_api *api, const char *iface, double pt,
			struct smt_tcpchannel *out, char *err, size_t errlen);

/*
 * Keepalive on the TCP socket FD, timed from the peer timeout PT (seconds):
 * the first probe after PT/3 of silence, then one every PT/9, three
 * unanswered probes (or data unacknowledged as long) end the connection.
 * 0 or a negative errno.
 */
int smt_tcpchannel_keepalive(int fd, double pt);

/* How long a connection set up so is silent before it fails, in seconds:
 * a failure with ETIMEDOUT means the other end was last heard this long
 * ago. */
double smt_tcpchannel_silence(double pt);

/* How long the other end of the TCP socket FD has been silent, in ms: the
 * kernel's time since its last ACK (TCP_INFO), or -1 when unknown or
 * longer than a keepalive timed from PT could have let it be (a socket
 * that never connected has heard nothing since boot, which says nothing
 * of the peer).  Read before the socket is closed. */
long long smt_tcpchannel_quiet_ms(int fd, double pt);

#endif
