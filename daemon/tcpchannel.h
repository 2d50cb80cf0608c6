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
 * Listen on IFACE's address for API's channel connections.  Returns 0 and
 * fills OUT, or a negative errno with ERR saying why (no such interface,
 * no address on it, the listen failed) in one line.
 */
int smt_tcpchannel_open(struct smt_api *api, const char *iface, struct smt_tcpchannel *out,
			char *err, size_t errlen);

#endif
