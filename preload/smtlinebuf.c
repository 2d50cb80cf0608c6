/*
 * smtlinebuf.c - LD_PRELOAD library: C's stdout line-buffered when it is
 * the pipe smtd reads a rank's output from (smtd(8) A rank's standard
 * output).
 *
 * stdio line-buffers a terminal and fully buffers a pipe: through a pipe a
 * rank's printf'd lines would wait for 4 KiB, minutes late on the leader's
 * output and lost when the rank is killed.  Under mpirun a rank's stdout is
 * a terminal; under smtd it is a pipe (a terminal costs more than half of
 * the output's speed), and this library gives it a terminal's buffering.
 *
 * smtd's rank launcher puts it first in LD_PRELOAD and names its pipe in
 * SMTD_STDOUT_PIPE ("DEVICE:INODE").  Before main(), in every process that
 * loads it, stdout is made line-buffered only if file descriptor 1 is that
 * very pipe: a child whose stdout a program redirected to a file or to
 * another pipe keeps stdio's default, as it would under a terminal.  A
 * program that calls setvbuf() itself still decides for itself.  Nothing
 * else is touched and nothing is exported; it links libc only.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "smt_proto.h"

__attribute__((constructor)) static void smt_linebuf_init(void)
{
	const char *want = getenv(SMT_ENV_STDOUT_PIPE);
	char have[48];
	struct stat st;

	if (!want || fstat(STDOUT_FILENO, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	snprintf(have, sizeof(have), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	if (strcmp(want, have) == 0)
		setvbuf(stdout, NULL, _IOLBF, 0);
}
