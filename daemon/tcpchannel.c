/*
 * tcpchannel.c - a worker's TCP channel for the leader (see tcpchannel.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "tcpchannel.h"

/*
 * IFACE's address as the channel takes it, into SS (port 0) and ADDR
 * (INET6_ADDRSTRLEN bytes): its first IPv4 address, which the job's other
 * traffic (MPI, NCCL) uses there, else its first IPv6 one that is not
 * link-local (that needs its scope on the leader's side too).  0, -ENODEV
 * (no such interface) or -EADDRNOTAVAIL (no usable address on it).
 */
static int iface_addr(const char *iface, struct sockaddr_storage *ss, char *addr)
{
	struct ifaddrs *all;
	const struct sockaddr *v4 = NULL, *v6 = NULL;
	int named = 0;

	if (getifaddrs(&all) < 0)
		return -errno;
	for (const struct ifaddrs *a = all; a; a = a->ifa_next) {
		if (strcmp(a->ifa_name, iface) != 0)
			continue;
		named = 1;
		if (!a->ifa_addr)
			continue;
		if (a->ifa_addr->sa_family == AF_INET && !v4)
			v4 = a->ifa_addr;
		else if (a->ifa_addr->sa_family == AF_INET6 && !v6 &&
			 !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)(const void *)
							  a->ifa_addr)->sin6_addr))
			v6 = a->ifa_addr;
	}
	memset(ss, 0, sizeof(*ss));
	if (v4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		memcpy(in, v4, sizeof(*in));
		in->sin_port = 0;
		inet_ntop(AF_INET, &in->sin_addr, addr, INET6_ADDRSTRLEN);
	} else if (v6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		memcpy(in6, v6, sizeof(*in6));
		in6->sin6_port = 0;
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, INET6_ADDRSTRLEN);
	}
	freeifaddrs(all);
	return v4 || v6 ? 0 : named ? -EADDRNOTAVAIL : -ENODEV;
}

static int make_token(char *out)
{
	unsigned char raw[SMT_TOKEN_HEX / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int smt_tcpchannel_open(struct smt_api *api, const char *iface, double pt,
			struct smt_tcpchannel *out, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = iface_addr(iface, &ss, out->address);
	if (rc < 0) {
		snprintf(err, errlen, "%s (network_interface_name): %s", iface,
			 rc == -ENODEV ? "no such interface here" :
			 rc == -EADDRNOTAVAIL ? "it has no IPv4 or global IPv6 address" :
			 strerror(-rc));
		return rc;
	}
	rc = make_token(out->token);
	if (rc < 0) {
		snprintf(err, errlen, "no random bytes for its token: %s", strerror(-rc));
		return rc;
	}
	rc = smt_api_listen_channel(api, (struct sockaddr *)&ss, out->token, pt);
	if (rc < 0) {
		snprintf(err, errlen, "cannot listen on %s (%s): %s", out->address, iface,
			 rc == -EBUSY ? "already listening" : uv_strerror(rc));
		memset(out, 0, sizeof(*out));
		return rc;
	}
	out->port = smt_api_channel_port(api);
	return 0;
}

/* The one table of keepalive's timing: idle, interval (whole seconds, at
 * least 1) and count. */
static void keep_timing(double pt, int *idle, int *intvl, int *cnt)
{
	*idle = pt / 3 >= 1 ? (int)(pt / 3) : 1;
	*intvl = pt / 9 >= 1 ? (int)(pt / 9) : 1;
	*cnt = 3;
}

double smt_tcpchannel_silence(double pt)
{
	int idle, intvl, cnt;

	keep_timing(pt, &idle, &intvl, &cnt);
	return idle + (double)cnt * intvl;
}

int smt_tcpchannel_keepalive(int fd, double pt)
{
	int on = 1, idle, intvl, cnt;
	unsigned user_ms;

	keep_timing(pt, &idle, &intvl, &cnt);
	/* Unacknowledged data would otherwise be retransmitted for 15
	 * minutes before the connection fails; with a user timeout the
	 * kernel also ends a keepalive-probed connection at it. */
	user_ms = (unsigned)(smt_tcpchannel_silence(pt) * 1000);
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms)) < 0)
		return -errno;
	return 0;
}

long long smt_tcpchannel_quiet_ms(int fd, double pt)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_last_ack_recv) + sizeof(ti.tcpi_last_ack_recv) ||
	    ti.tcpi_last_ack_recv > (smt_tcpchannel_silence(pt) + 1) * 1000)
		return -1;
	return ti.tcpi_last_ack_recv;
}
