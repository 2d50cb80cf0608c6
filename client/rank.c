/*
 * rank.c - `smtctl rank [--tty] -- PROGRAM [ARGS...]`: the rank launcher (smtd(8) OUTPUT).
 *
 * mpirun (through orted on every host) or torchrun runs this in front of
 * the rank's program.  It registers the rank with its own host's smtd
 * before the program runs, hands smtd the read ends of the program's
 * stdout (a pipe that stdio line-buffers, or with --tty a raw
 * pseudo-terminal as under orted: ranktty.h) and stderr (a pipe) with
 * SCM_RIGHTS, takes this host's environment from the
 * answer, starts the program in a session of its own, and reports how it
 * ended - then ends the same way, so that mpirun sees what it would have
 * seen without us.
 *
 * The program gets its signals from smtd only: this process ignores the
 * catchable ones (mpirun and orted send their kill timetable here), and
 * the program, in its own session and process group, is out of their
 * reach.  When smtd cannot be reached (mpirun run by hand) the program is
 * executed unchanged, in place of this process, after one line on stderr.
 * The protocol is rankd.h's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "smt_proto.h"
#include "ranktty.h"
#include "smtctl.h"

#define MSG_MAX (64 * 1024)

static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };

/* The rank number as the launching program set it. */
static int env_int(const char *const *names, long *out)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		char *end;
		long n;

		if (!v || !*v)
			continue;
		errno = 0;
		n = strtol(v, &end, 10);
		if (!errno && !*end && n >= 0 && n <= 0x7fffffff) {
			*out = n;
			return 1;
		}
	}
	return 0;
}

static void __attribute__((noreturn)) run_unchanged(char **cmd)
{
	smtctl_exec(cmd);
	fprintf(stderr, "smtctl rank: cannot execute %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int send_msg(int fd, json_t *msg, const int *fds, int nfds)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	json_decref(msg);
	if (!text)
		return -ENOMEM;
	iov.iov_base = text;
	iov.iov_len = strlen(text);
	if (nfds) {
		struct cmsghdr *cm;
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	free(text);
	return n < 0 ? -errno : 0;
}

/* The answer, or NULL with WHY set. */
static json_t *recv_msg(int fd, char *why, size_t len)
{
	char *buf = malloc(MSG_MAX + 1);
	json_t *v = NULL;
	ssize_t n;

	if (!buf) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	do
		n = recv(fd, buf, MSG_MAX, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		snprintf(why, len, "smtd closed the connection%s%s", n < 0 ? ": " : "",
			 n < 0 ? strerror(errno) : "");
	} else {
		v = json_loadb(buf, (size_t)n, 0, NULL);
		if (!json_is_object(v)) {
			snprintf(why, len, "smtd's answer is not a JSON object");
			json_decref(v);
			v = NULL;
		} else if (!json_is_true(json_object_get(v, SMT_F_OK))) {
			const char *e = json_string_value(json_object_get(v, SMT_F_ERROR));
			snprintf(why, len, "smtd refused: %s", e ? e : "(no reason given)");
			json_decref(v);
			v = NULL;
		}
	}
	free(buf);
	return v;
}

static int connect_seqpacket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;
		if (err == EINTR)
			continue;
		close(fd);
		return -err;
	}
	return fd;
}

static void apply_env(json_t *answer)
{
	const char *name;
	json_t *v;

	/* The job's own variables (mpirun's -x) win over the image's... */
	json_object_foreach(json_object_get(answer, SMT_F_ENV_DEFAULT), name, v)
		if (json_is_string(v))
			setenv(name, json_string_value(v), 0);
	/* ... and this host's own SM_* win over everything. */
	json_object_foreach(json_object_get(answer, SMT_F_ENV), name, v)
		if (json_is_string(v))
			setenv(name, json_string_value(v), 1);
}

/*
 * A stdout that is a pipe: C's stdio and Python line-buffer it as they
 * would a terminal, so that a line reaches smtd at its newline (smtd(8) A
 * rank's standard output).  Python through PYTHONUNBUFFERED unless the
 * image or the job set it; C's stdio through smtd's libsmtlinebuf.so
 * (PRELOAD, from smtd's answer), first in LD_PRELOAD, which acts only in a
 * process whose stdout is this very pipe (SMTD_STDOUT_PIPE, its device and
 * inode): a program's own redirection to a file keeps stdio's full buffer.
 */
static void linebuf_env(int out_w, const char *preload)
{
	const char *old = getenv("LD_PRELOAD");
	char id[64], *both = NULL;
	struct stat st;

	setenv("PYTHONUNBUFFERED", "1", 0);
	if (!preload || !*preload || fstat(out_w, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	snprintf(id, sizeof(id), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	setenv(SMT_ENV_STDOUT_PIPE, id, 1);
	if (old && strstr(old, preload))
		return;
	if (old && *old && asprintf(&both, "%s:%s", preload, old) < 0)
		return;
	setenv("LD_PRELOAD", both ? both : preload, 1);
	free(both);
}

/* The child: its own session, default signals, the pty (or pipe) as
 * stdout and the pipe as stderr; it runs the program once the launcher
 * says go.  setsid() leaves it without a controlling terminal, and the
 * pty, opened with O_NOCTTY, does not become one. */
static void __attribute__((noreturn))
child(char **cmd, int out_w, int err_w, int go_r, int go_w, int status_r, int status_w)
{
	struct sigaction sa;
	sigset_t none;
	char c = 0;
	ssize_t n;
	int err;

	/* The launcher's ends: with the go pipe's write end held here too, a
	 * launcher that gives up would leave this child waiting forever. */
	close(go_w);
	close(status_r);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(126);
	close(out_w);
	close(err_w);
	do
		n = read(go_r, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || c != 'g')
		_exit(1);
	close(go_r);
	smtctl_exec(cmd);
	err = errno;
	while (write(status_w, &err, sizeof(err)) < 0 && errno == EINTR)
		;
	_exit(err == ENOENT ? 127 : 126);
}

/* End as the program ended: its exit code, or its signal. */
static int __attribute__((noreturn)) end_like(int wstatus)
{
	if (WIFSIGNALED(wstatus)) {
		int sig = WTERMSIG(wstatus);
		struct rlimit none = { 0, 0 };
		sigset_t set;

		/* The program dumped its core already, if it did. */
		setrlimit(RLIMIT_CORE, &none);
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1);
}

int smtctl_rank(const char *socket_path, int tty, char **cmd)
{
	static const char *const rank_names[] = {
		"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "RANK", NULL,
	};
	static const char *const local_names[] = {
		"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", NULL,
	};
	char path[256], why[512];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, gop[2] = { -1, -1 }, stp[2] = { -1, -1 };
	long rank = -1, local = -1;
	int fd, rc, wstatus, exec_err = 0;
	struct rusage ru;
	json_t *answer;
	pid_t pid;
	ssize_t n;

	if (!env_int(rank_names, &rank)) {
		fprintf(stderr, "smtctl rank: no rank number in the environment "
			"(OMPI_COMM_WORLD_RANK, PMIX_RANK or RANK): running %s without smtd\n",
			cmd[0]);
		run_unchanged(cmd);
	}
	env_int(local_names, &local);
	snprintf(path, sizeof(path), "%s%s", socket_path, SMT_RANKS_SUFFIX);
	fd = connect_seqpacket(path);
	if (fd < 0) {
		fprintf(stderr, "smtctl rank: cannot reach smtd at %s (%s): running %s unchanged; "
			"its output goes through the launching program\n", path, strerror(-fd),
			cmd[0]);
		run_unchanged(cmd);
	}
	if (tty && (rc = smtctl_rank_pty(&outp[0], &outp[1])) < 0) {
		/* Still a working rank, its stdout line-buffered as by default. */
		fprintf(stderr,
			"smtctl rank: rank %ld: no pseudo-terminal (%s): its stdout is a "
			"line-buffered pipe\n", rank, strerror(-rc));
		tty = 0;
	}
	if (!tty && pipe2(outp, O_CLOEXEC) < 0)
		outp[0] = outp[1] = -1;
	if (outp[0] < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0 ||
	    pipe2(stp, O_CLOEXEC) < 0) {
		fprintf(stderr, "smtctl rank: cannot create pipes: %s\n", strerror(errno));
		return 1;
	}
	int rfds[2] = { outp[0], errp[0] };
	rc = send_msg(fd, json_pack("{s:s, s:I, s:I, s:s}", SMT_F_OP, "hello", SMT_F_RANK,
				    (json_int_t)rank, SMT_F_LOCAL_RANK, (json_int_t)local,
				    SMT_F_PROGRAM, cmd[0]), rfds, 2);
	close(outp[0]);
	close(errp[0]);
	if (rc < 0 || !(answer = recv_msg(fd, why, sizeof(why)))) {
		if (rc < 0)
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		fprintf(stderr, "smtctl rank: rank %ld: %s; not starting %s\n", rank, why, cmd[0]);
		return 1;
	}
	apply_env(answer);
	if (!tty)
		linebuf_env(outp[1],
			    json_string_value(json_object_get(answer, SMT_F_STDOUT_PRELOAD)));
	json_decref(answer);

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "smtctl rank: cannot fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		child(cmd, outp[1], errp[1], gop[0], gop[1], stp[0], stp[1]);
	close(outp[1]);
	close(errp[1]);
	close(gop[0]);
	close(stp[1]);
	rc = send_msg(fd, json_pack("{s:s, s:I}", SMT_F_OP, "start", SMT_F_PID, (json_int_t)pid),
		      NULL, 0);
	if (rc < 0 || !(answer = recv_msg(fd, why, sizeof(why)))) {
		if (rc < 0)
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		fprintf(stderr, "smtctl rank: rank %ld: %s; not starting %s\n", rank, why, cmd[0]);
		close(gop[1]);
		waitpid(pid, NULL, 0);
		return 1;
	}
	json_decref(answer);
	if (write(gop[1], "g", 1) != 1) {
		fprintf(stderr, "smtctl rank: cannot start rank %ld: %s\n", rank, strerror(errno));
		kill(pid, SIGKILL);
	}
	close(gop[1]);
	/* The exec's outcome: EOF once it succeeded, the errno if not. */
	do
		n = read(stp[0], &exec_err, sizeof(exec_err));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(exec_err))
		exec_err = 0;
	close(stp[0]);
	/*
	 * Learn how the program ended without reaping it, report it, then
	 * reap it: if orted kills this launcher in between, the program is
	 * still a zombie, adopted and reaped by smtd, which then has its
	 * status from the kernel.
	 */
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		memset(&ru, 0, sizeof(ru));
		/* The system call, not glibc's waitid: only it gives the rusage
		 * (the peak memory a rank killed for memory had), which Linux
		 * fills in with WNOWAIT too. */
		if (syscall(SYS_waitid, P_PID, (id_t)pid, &si, WEXITED | WNOWAIT, &ru) == 0) {
			wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
							   : W_EXITCODE(0, si.si_status);
			break;
		}
		if (errno != EINTR) {
			wstatus = W_EXITCODE(1, 0);
			break;
		}
	}
	/* When it ended, by this host's clock: a rank that ended before smtd
	 * told it to stop failed on its own. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_int_t end_ms = (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (exec_err) {
		fprintf(stderr, "smtctl rank: cannot execute %s: %s\n", cmd[0], strerror(exec_err));
		send_msg(fd,
			 json_pack("{s:s, s:i, s:I}", SMT_F_OP, "exit", SMT_F_EXEC_ERRNO, exec_err,
				   SMT_F_END_MS, end_ms),
			 NULL, 0);
	} else {
		send_msg(fd,
			 json_pack("{s:s, s:i, s:I, s:I}", SMT_F_OP, "exit", SMT_F_STATUS, wstatus,
				   SMT_F_END_MS, end_ms, SMT_F_MAXRSS_KB, (json_int_t)ru.ru_maxrss),
			 NULL, 0);
	}
	close(fd);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	end_like(wstatus);
}
