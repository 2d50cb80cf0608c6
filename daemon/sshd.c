/* sshd.c - start sshd, keep it running, count its restarts. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "logpipe.h"
#include "spawn.h"
#include "sshd.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define STABLE_MS 60000

struct smt_sshd {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	struct smt_sshd_config cfg;
	smt_sshd_cb cb;
	void *arg;
	uv_timer_t timer;
	pid_t pid;
	pid_t keygen_pid;
	unsigned restarts;
	uint64_t backoff_ms;
	uint64_t started_at;
	int stopping;
	int reported;
	struct smt_logpipe *log;  /* sshd's and ssh-keygen's stderr */
};

static void report(struct smt_sshd *s, int up)
{
	if (s->reported)
		return;
	s->reported = 1;
	s->cb(s->arg, up);
}

int smt_sshd_port_listening(const char *proc_net, int port)
{
	const char *files[] = { "tcp", "tcp6" };

	for (size_t i = 0; i < 2; i++) {
		char path[PATH_MAX], line[512];
		snprintf(path, sizeof(path), "%s/%s", proc_net, files[i]);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned lport, state;
			/* "  0: 0100007F:0016 00000000:0000 0A ..." */
			char *colon = strchr(line, ':');
			if (colon == NULL)
				continue;
			char *addr_end = strchr(colon + 1, ':');
			if (addr_end == NULL ||
			    sscanf(addr_end + 1, "%x %*s %x", &lport, &state) != 2)
				continue;
			if ((int)lport == port && state == 0x0A) {
				fclose(f);
				return 1;
			}
		}
		fclose(f);
	}
	return 0;
}

static int have_host_keys(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (strncmp(de->d_name, "ssh_host_", 9) == 0 && n > 4 &&
		    strcmp(de->d_name + n - 4, "_key") == 0) {
			found = 1;
			break;
		}
	}
	closedir(d);
	return found;
}

static void on_sshd_exit(void *arg, pid_t pid, int wstatus);

static void start_sshd(struct smt_sshd *s)
{
	char *argv[6];
	int n = 0, rc;

	argv[n++] = (char *)s->cfg.sshd_path;
	argv[n++] = "-D";
	argv[n++] = "-e";
	if (s->cfg.config_file) {
		argv[n++] = "-f";
		argv[n++] = (char *)s->cfg.config_file;
	}
	argv[n] = NULL;
	struct smt_spawn_opts so = { .argv = argv, .stdin_fd = -1,
				     .stdout_fd = smt_logpipe_fd(s->log),
				     .stderr_fd = smt_logpipe_fd(s->log) };
	rc = smt_spawn(&so, &s->pid);
	if (s->pid > 0)
		smt_reaper_watch(s->reaper, s->pid, on_sshd_exit, s);
	if (rc < 0) {
		smt_error("cannot run %s: %s; install the openssh-server package or give its path "
			  "with --sshd-path", s->cfg.sshd_path, strerror(-rc));
		s->pid = -1;
		report(s, rc);
		return;
	}
	s->started_at = uv_now(s->loop);
	smt_info("sshd started (pid %d)%s", (int)s->pid,
		 s->restarts ? " again" : "");
	report(s, 1);
}

static void on_timer(uv_timer_t *t)
{
	struct smt_sshd *s = t->data;

	if (!s->stopping)
		start_sshd(s);
}

static void on_sshd_exit(void *arg, pid_t pid, int wstatus)
{
	struct smt_sshd *s = arg;

	(void)pid;
	s->pid = -1;
	if (s->stopping || !s->reported || s->cfg.sshd_path == NULL)
		return;
	if (uv_now(s->loop) - s->started_at > STABLE_MS)
		s->backoff_ms = BACKOFF_MIN_MS;
	s->restarts++;
	smt_warn("sshd exited (%s %d); restart %u in %llu ms",
		 WIFEXITED(wstatus) ? "exit code" : "signal",
		 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus), s->restarts,
		 (unsigned long long)s->backoff_ms);
	uv_timer_start(&s->timer, on_timer, s->backoff_ms, 0);
	s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
}

static void on_keygen_exit(void *arg, pid_t pid, int wstatus)
{
	struct smt_sshd *s = arg;

	(void)pid;
	s->keygen_pid = -1;
	if (s->stopping)
		return;
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
		smt_warn("%s -A failed; starting sshd anyway", s->cfg.keygen_path);
	start_sshd(s);
}

static void begin(uv_timer_t *t)
{
	struct smt_sshd *s = t->data;
	int rc;

	if (s->cfg.start == 0 ||
	    (s->cfg.start < 0 &&
	     (s->cfg.nhosts <= 1 || smt_sshd_port_listening(s->cfg.proc_net, s->cfg.port)))) {
		smt_debug("not starting sshd (start %d, %zu hosts)", s->cfg.start, s->cfg.nhosts);
		report(s, 0);
		return;
	}
	if (smt_logpipe_new(s->loop, "sshd", &s->log) < 0)
		s->log = NULL;
	if (access(s->cfg.sshd_path, X_OK) < 0) {
		rc = -errno;
		smt_error("sshd is needed but %s cannot be run: %s; install the openssh-server "
			  "package or give its path with --sshd-path", s->cfg.sshd_path,
			  strerror(errno));
		report(s, rc);
		return;
	}
	if (mkdir(s->cfg.rundir, 0755) < 0 && errno != EEXIST)
		smt_warn("cannot create %s: %s", s->cfg.rundir, strerror(errno));
	if (s->cfg.config_file == NULL && !have_host_keys(s->cfg.keydir)) {
		char *argv[] = { (char *)s->cfg.keygen_path, "-A", NULL };
		struct smt_spawn_opts so = { .argv = argv, .stdin_fd = -1,
					     .stdout_fd = smt_logpipe_fd(s->log),
					     .stderr_fd = smt_logpipe_fd(s->log) };
		smt_info("creating SSH host keys (%s -A)", s->cfg.keygen_path);
		rc = smt_spawn(&so, &s->keygen_pid);
		if (s->keygen_pid > 0) {
			smt_reaper_watch(s->reaper, s->keygen_pid, on_keygen_exit, s);
			if (rc < 0)
				smt_warn("cannot run %s: %s", s->cfg.keygen_path, strerror(-rc));
			return;
		}
	}
	start_sshd(s);
}

int smt_sshd_start(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_sshd_config *cfg,
		   smt_sshd_cb cb, void *arg, struct smt_sshd **out)
{
	struct smt_sshd *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -ENOMEM;
	s->loop = loop;
	s->reaper = reaper;
	s->cfg = *cfg;
	if (s->cfg.sshd_path == NULL)
		s->cfg.sshd_path = "/usr/sbin/sshd";
	if (s->cfg.keygen_path == NULL)
		s->cfg.keygen_path = "ssh-keygen";
	if (s->cfg.keydir == NULL)
		s->cfg.keydir = "/etc/ssh";
	if (s->cfg.rundir == NULL)
		s->cfg.rundir = "/run/sshd";
	if (s->cfg.proc_net == NULL)
		s->cfg.proc_net = "/proc/net";
	if (s->cfg.port == 0)
		s->cfg.port = 22;
	s->cb = cb;
	s->arg = arg;
	s->pid = s->keygen_pid = -1;
	s->backoff_ms = BACKOFF_MIN_MS;
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	/* Decide on the next loop turn, so the callback never runs inside
	 * this call. */
	uv_timer_start(&s->timer, begin, 0, 0);
	*out = s;
	return 0;
}

pid_t smt_sshd_pid(const struct smt_sshd *s)
{
	return s ? s->pid : -1;
}

unsigned smt_sshd_restarts(const struct smt_sshd *s)
{
	return s ? s->restarts : 0;
}

static void on_close(uv_handle_t *h)
{
	struct smt_sshd *s = h->data;

	smt_logpipe_close(s->log);
	free(s);
}

void smt_sshd_stop(struct smt_sshd *s)
{
	if (s == NULL)
		return;
	s->stopping = 1;
	if (s->pid > 0) {
		smt_reaper_unwatch(s->reaper, s->pid);
		kill(s->pid, SIGTERM);
	}
	if (s->keygen_pid > 0) {
		smt_reaper_unwatch(s->reaper, s->keygen_pid);
		kill(s->keygen_pid, SIGTERM);
	}
	uv_close((uv_handle_t *)&s->timer, on_close);
}
