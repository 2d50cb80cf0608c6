/* ranktty.c - a rank's standard output, a raw pseudo-terminal (ranktty.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "ranktty.h"

int smtctl_rank_pty(int *master, int *slave)
{
	struct termios t;
	int m, s = -1, rc;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	/* No grantpt(): devpts gives the slave to the opener already, and an
	 * old glibc's grantpt would run a helper program. */
	if (unlockpt(m) < 0)
		goto fail;
	/* Opened through the master, never by a name someone could replace. */
	s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 || tcgetattr(s, &t) < 0)
		goto fail;
	/* Raw: what the program writes is what smtd reads, byte for byte,
	 * and no byte becomes a signal. */
	cfmakeraw(&t);
	/* And no "\r\n" even for a program that turns OPOST back on, as
	 * orted's pty has it. */
	t.c_oflag &= ~(tcflag_t)(ONLCR | OCRNL);
	if (tcsetattr(s, TCSANOW, &t) < 0)
		goto fail;
	*master = m;
	*slave = s;
	return 0;
fail:
	rc = -errno;
	if (s >= 0)
		close(s);
	close(m);
	return rc;
}
