/*
 * smtctl.h - the parts of smtctl shared between its files.
 *
 * Every function here prints its own one-line message on stderr and
 * returns an smtctl exit code (enum smtctl_exit of smt_proto.h).
 */
#ifndef SMTCTL_H
#define SMTCTL_H

/*
 * Join stdin and stdout to the Unix socket PATH: copy stdin to the socket
 * and the socket to stdout until both directions have ended.  End of
 * stdin half-closes the socket (shutdown SHUT_WR) so the daemon still
 * answers; end of the socket closes stdout.  Used by the leader as
 * `ssh HOST smtctl dial-stdio`.
 */
int smtctl_dial_stdio(const char *path);

/*
 * `smtctl rank [--tty] -- PROGRAM ARGS`: register the rank with the local
 * smtd at SOCKET (its control socket; the launcher's is next to it), hand
 * it the program's output (stdout a pipe that stdio line-buffers, or with
 * TTY a pseudo-terminal) and run the program (client/rank.c).  Returns an exit
 * code only when something failed before the program ran; otherwise it
 * ends as the program ended.
 */
int smtctl_rank(const char *socket, int tty, char **cmd);

/* The message and exit code for a failed connect() to PATH with ERR. */
int smtctl_connect_error(const char *path, int err);

/*
 * Replace this process with CMD as orted (or smtd's spawn.h) would start
 * it: the program found in PATH (daemon/pathsearch.h), run with execv() -
 * a file without "#!" fails with ENOEXEC instead of going to /bin/sh, as
 * execvp() would.  Returns only on failure, with errno set; no message.
 */
void smtctl_exec(char **cmd);

#endif
