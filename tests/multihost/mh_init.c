/*
 * mh-init - the stand-in PID 1 of a simulated host (tests/multihost).
 *
 * Until smtd runs as each host's PID 1, the harness needs a process that
 * holds the host's PID namespace open, adopts whatever daemonizes inside it
 * (sshd, orted) and reaps it, and ends the host when told to.  It takes no
 * arguments.  SIGTERM, SIGINT and SIGHUP end it with exit code 0; when it
 * exits the kernel kills everything else in the namespace.
 *
 * A PID 1 receives from outside its namespace only the signals it has a
 * handler for or has blocked, so every signal is blocked and taken
 * synchronously with sigwaitinfo(), as tini does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	sigset_t set;
	siginfo_t info;
	int sig;

	sigfillset(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		perror("mh-init: sigprocmask");
		return 1;
	}
	for (;;) {
		sig = sigwaitinfo(&set, &info);
		if (sig < 0) {
			if (errno == EINTR)
				continue;
			perror("mh-init: sigwaitinfo");
			return 1;
		}
		if (sig == SIGCHLD)
			reap_all();
		else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
			return 0;
	}
}
