/*
 * tcpchannel.c - a worker's TCP channel for the leader (see tcpchannel.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "tcpchannel.h"

int smt_tcpchannel_iface_addr(const char *iface, struct sockaddr_storage *ss, char *addr)
{
	struct ifaddrs *all, *a;
	int found = 0, named = 0;

	if (getifaddrs(&all) < 0)
		return -errno;
	/* IPv4 first: what the job's other traffic (MPI, NCCL) uses there. */
	for (int family = AF_INET; !found && family; family = family == AF_INET ? AF_INET6 : 0) {
		for (a = all; a && !found; a = a->ifa_next) {
			if (strcmp(a->ifa_name, iface) != 0)
				continue;
			named = 1;
			if (!a->ifa_addr || a->ifa_addr->sa_family != family)
				continue;
			memset(ss, 0, sizeof(*ss));
			if (family == AF_INET) {
				memcpy(ss, a->ifa_addr, sizeof(struct sockaddr_in));
				((struct sockaddr_in *)ss)->sin_port = 0;
				inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, addr,
					  INET6_ADDRSTRLEN);
			} else {
				const struct sockaddr_in6 *s6 = (const void *)a->ifa_addr;
				/* A link-local address needs its scope on the
				 * leader's side too: not one to hand out. */
				if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
					continue;
				memcpy(ss, s6, sizeof(*s6));
				((struct sockaddr_in6 *)ss)->sin6_port = 0;
				inet_ntop(AF_INET6, &s6->sin6_addr, addr, INET6_ADDRSTRLEN);
			}
			found = 1;
		}
	}
	freeifaddrs(all);
	return found ? 0 : named ? -EADDRNOTAVAIL : -ENODEV;
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

int smt_tcpchannel_open(struct smt_api *api, const char *iface, struct smt_tcpchannel *out,
			char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = smt_tcpchannel_iface_addr(iface, &ss, out->address);
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
	rc = smt_api_listen_channel(api, (struct sockaddr *)&ss, out->token);
	if (rc < 0) {
		snprintf(err, errlen, "cannot listen on %s (%s): %s", out->address, iface,
			 rc == -EBUSY ? "already listening" : uv_strerror(rc));
		memset(out, 0, sizeof(*out));
		return rc;
	}
	out->port = smt_api_channel_port(api);
	return 0;
}
