/*
 * sleeper.c - a native process whose stack the tests know.
 *
 * Prints "ready PID" and sleeps forever in nanosleep(), called from
 * smt_sleeper_wait() called from main(); with --thread, a second thread
 * waits in smt_sleeper_thread() on a condition variable.  Built with -g and
 * without optimisation so gdb and eu-stack name every frame.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

void *smt_sleeper_thread(void *arg);
void smt_sleeper_wait(void);

__attribute__((noinline)) void *smt_sleeper_thread(void *arg)
{
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return arg;
}

__attribute__((noinline)) void smt_sleeper_wait(void)
{
	for (;;) {
		struct timespec ts = { 3600, 0 };
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1 && strcmp(argv[1], "--thread") == 0)
		pthread_create(&t, NULL, smt_sleeper_thread, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	smt_sleeper_wait();
	return 0;
}
