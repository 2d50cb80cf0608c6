/*
 * ranktty.h - a rank's standard output: a pseudo-terminal, as Open MPI's
 * orted gives it (smtd(8) OUTPUT, smtd(8) "A RANK'S STANDARD OUTPUT").
 *
 * Under mpirun a rank's stdout is a terminal, so stdio (C's printf,
 * Python's print) writes each line at its newline; through a pipe the
 * same lines wait in the program's buffer for kilobytes.  The launcher
 * therefore gives the program the slave side of a new pty as stdout and
 * hands smtd the master, which smtd alone holds and reads.
 *
 * The terminal is raw in both directions, so the bytes smtd reads are
 * exactly the bytes written: no "\n" -> "\r\n", no echo, no ^C, ^D, ^S or
 * ^Z handling, no signal from a character.  Its window size is 0 x 0, as
 * orted's.  It is nobody's controlling terminal: both descriptors are
 * opened with O_NOCTTY, the slave through the master (TIOCGPTPEER, no path
 * under /dev/pts), so the tty layer never sends the rank SIGHUP, SIGINT or
 * SIGWINCH.
 */
#ifndef SMTCTL_RANKTTY_H
#define SMTCTL_RANKTTY_H

/*
 * A new raw pty: *MASTER and *SLAVE, both close-on-exec.  0, or a negative
 * errno with nothing left open (the caller then uses a pipe).
 */
int smtctl_rank_pty(int *master, int *slave);

#endif
