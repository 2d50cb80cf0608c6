/* smt_proto.c - names shared by the daemon and its client. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "smt_proto.h"

static const char *const role_names[SMT_ROLE_COUNT] = {
	[SMT_ROLE_STANDALONE] = "standalone",
	[SMT_ROLE_LEADER] = "leader",
	[SMT_ROLE_WORKER] = "worker",
};

static const char *const state_names[SMT_STATE_COUNT] = {
	[SMT_STATE_STARTING] = "starting",
	[SMT_STATE_WAITING_FOR_PEERS] = "waiting-for-peers",
	[SMT_STATE_WAITING_FOR_LEADER] = "waiting-for-leader",
	[SMT_STATE_LAUNCHING] = "launching",
	[SMT_STATE_RUNNING] = "running",
	[SMT_STATE_FINISHING] = "finishing",
	[SMT_STATE_SUCCEEDED] = "succeeded",
	[SMT_STATE_FAILED] = "failed",
	[SMT_STATE_STOPPED] = "stopped",
};

static const struct {
	int signo;
	const char *name;
} signal_names[] = {
	{ SIGHUP, "HUP" },   { SIGINT, "INT" },     { SIGQUIT, "QUIT" },
	{ SIGILL, "ILL" },   { SIGTRAP, "TRAP" },   { SIGABRT, "ABRT" },
	{ SIGBUS, "BUS" },   { SIGFPE, "FPE" },     { SIGKILL, "KILL" },
	{ SIGUSR1, "USR1" }, { SIGSEGV, "SEGV" },   { SIGUSR2, "USR2" },
	{ SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" },   { SIGTERM, "TERM" },
	{ SIGSTKFLT, "STKFLT" }, { SIGCHLD, "CHLD" }, { SIGCONT, "CONT" },
	{ SIGSTOP, "STOP" }, { SIGTSTP, "TSTP" },   { SIGTTIN, "TTIN" },
	{ SIGTTOU, "TTOU" }, { SIGURG, "URG" },     { SIGXCPU, "XCPU" },
	{ SIGXFSZ, "XFSZ" }, { SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" },
	{ SIGWINCH, "WINCH" }, { SIGIO, "IO" },     { SIGPWR, "PWR" },
	{ SIGSYS, "SYS" },
};

const char *smt_role_name(enum smt_role role)
{
	if ((unsigned)role >= SMT_ROLE_COUNT)
		return NULL;
	return role_names[role];
}

const char *smt_state_name(enum smt_state state)
{
	if ((unsigned)state >= SMT_STATE_COUNT)
		return NULL;
	return state_names[state];
}

int smt_state_parse(const char *name)
{
	for (int i = 0; i < SMT_STATE_COUNT; i++)
		if (name && strcmp(name, state_names[i]) == 0)
			return i;
	return -1;
}

int smt_state_is_final(enum smt_state state)
{
	return state == SMT_STATE_SUCCEEDED || state == SMT_STATE_FAILED ||
	       state == SMT_STATE_STOPPED;
}

int smt_signal_parse(const char *text)
{
	if (text == NULL || *text == '\0')
		return -1;
	if (isdigit((unsigned char)*text)) {
		char *end;
		errno = 0;
		long n = strtol(text, &end, 10);
		if (errno || *end != '\0' || n < 1 || n > SMT_SIGNAL_MAX)
			return -1;
		return (int)n;
	}
	if (strncasecmp(text, "SIG", 3) == 0)
		text += 3;
	for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
		if (strcasecmp(text, signal_names[i].name) == 0)
			return signal_names[i].signo;
	return -1;
}

const char *smt_signal_name(int signo)
{
	for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
		if (signal_names[i].signo == signo)
			return signal_names[i].name;
	return NULL;
}
