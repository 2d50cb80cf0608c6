/*
 * ttyrank - a C rank that uses stdio's defaults, for tests/multihost/
 * test_rank_tty.sh (smtd(8) OUTPUT: a rank's stdout behaves as under mpirun).
 *
 *   ttyrank LINES INTERVAL_MS
 *
 * First one line, "tty: ...", of what the rank sees: isatty() of 0, 1 and
 * 2, stdout's modes (opost, onlcr, icanon, isig, echo, ixon), its window
 * size, whether /dev/tty opens (a controlling terminal) and what TIOCGSID
 * says of stdout.  Then LINES lines "c tick N SECONDS" (the time of the
 * printf, since the epoch) with printf and no fflush, INTERVAL_MS apart;
 * then the bytes "cr\rmid\r\n", "ctl \x03\x04\x1a\x13\x11 end\n",
 * "bad \xff\xfe\xc3 end\n" and a line of 100000 'L', each with one
 * printf/fwrite; last "signals: ..." naming every SIGHUP, SIGINT,
 * SIGQUIT, SIGTSTP, SIGTTOU, SIGTTIN or SIGWINCH received (none: "none").
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const int watched[] = { SIGHUP, SIGINT, SIGQUIT, SIGTSTP, SIGTTOU, SIGTTIN, SIGWINCH };
static volatile sig_atomic_t got[64];

static void on_signal(int sig)
{
	got[sig] = 1;
}

static void report_tty(void)
{
	struct termios t;
	struct winsize ws = { 0 };
	pid_t sid;
	int fd, ctty_errno = 0;

	fd = open("/dev/tty", O_RDWR | O_NOCTTY);
	if (fd >= 0)
		close(fd);
	else
		ctty_errno = errno;
	printf("tty: isatty %d %d %d;", isatty(0), isatty(1), isatty(2));
	if (tcgetattr(1, &t) == 0)
		printf(" opost %d onlcr %d icanon %d isig %d echo %d ixon %d;",
		       !!(t.c_oflag & OPOST), !!(t.c_oflag & ONLCR), !!(t.c_lflag & ICANON),
		       !!(t.c_lflag & ISIG), !!(t.c_lflag & ECHO), !!(t.c_iflag & IXON));
	ioctl(1, TIOCGWINSZ, &ws);
	printf(" size %dx%d;", ws.ws_col, ws.ws_row);
	printf(" /dev/tty %s;", fd >= 0 ? "opens" : strerror(ctty_errno));
	printf(" stdout's session %s\n", ioctl(1, TIOCGSID, &sid) == 0 ? "set" : strerror(errno));
}

int main(int argc, char **argv)
{
	static char longline[100001];
	struct sigaction sa;
	int lines, ms, any = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: ttyrank LINES INTERVAL_MS\n");
		return 2;
	}
	lines = atoi(argv[1]);
	ms = atoi(argv[2]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
		sigaction(watched[i], &sa, NULL);
	report_tty();
	for (int i = 0; i < lines; i++) {
		struct timespec now, gap = { ms / 1000, (long)(ms % 1000) * 1000000 };
		clock_gettime(CLOCK_REALTIME, &now);
		printf("c tick %d %.6f\n", i, (double)now.tv_sec + now.tv_nsec / 1e9);
		while (nanosleep(&gap, &gap) < 0 && errno == EINTR)
			;
	}
	printf("cr\rmid\r\n");
	printf("ctl \x03\x04\x1a\x13\x11 end\n");
	printf("bad \xff\xfe\xc3 end\n");
	memset(longline, 'L', sizeof(longline) - 1);
	puts(longline);
	printf("signals:");
	for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
		if (got[watched[i]]) {
			printf(" %s", strsignal(watched[i]));
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
	return 0;
}
