/*
 * b3shim - B3's stand-ins for the shell scripts on the path of every
 * channel, so that B3 measures smtd and ssh, not bash start-ups.
 *
 *   fakessh [-o OPT]... HOST CMD...   (b3shim called fakessh) the leader's
 *       --ssh-path without ssh: runs CMD with its --socket replaced by
 *       $B3_DIR/HOST.sock
 *   b3shim route DIR SMTCTL           sshd's forced command: dial-stdio to
 *       the worker whose loopback address the client connected to
 *       (127.0.C.D is worker (C - 1) * 250 + D)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fake_ssh(int argc, char **argv)
{
	const char *dir = getenv("B3_DIR");
	char sock[4096];
	int i = 1;

	while (i < argc && argv[i][0] == '-')
		i += 2;
	if (dir == NULL || i + 1 >= argc) {
		fprintf(stderr, "fakessh: B3_DIR and HOST CMD... are needed\n");
		return 255;
	}
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, argv[i]);
	char **cmd = argv + i + 1;
	for (int k = 0; cmd[k]; k++)
		if (strcmp(cmd[k], "--socket") == 0 && cmd[k + 1])
			cmd[k + 1] = sock;
	execv(cmd[0], cmd);
	perror(cmd[0]);
	return 255;
}

static int route(int argc, char **argv)
{
	const char *conn = getenv("SSH_CONNECTION");
	char client[64], server[64], sock[4096];
	unsigned a, b, c, d;

	if (argc < 4 || conn == NULL ||
	    sscanf(conn, "%63s %*s %63s", client, server) != 2 ||
	    sscanf(server, "%u.%u.%u.%u", &a, &b, &c, &d) != 4) {
		fprintf(stderr, "b3shim route: DIR SMTCTL and SSH_CONNECTION are needed\n");
		return 255;
	}
	snprintf(sock, sizeof(sock), "%s/w%u.sock", argv[2], (c - 1) * 250 + d);
	execl(argv[3], argv[3], "--socket", sock, "dial-stdio", (char *)NULL);
	perror(argv[3]);
	return 255;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	if (strcmp(name, "fakessh") == 0)
		return fake_ssh(argc, argv);
	if (argc > 1 && strcmp(argv[1], "route") == 0)
		return route(argc, argv);
	fprintf(stderr, "usage: fakessh [-o OPT]... HOST CMD... | b3shim route DIR SMTCTL\n");
	return 2;
}
