/*
 * mpi_job - an MPI program for the supervision tests, built with mpicc by
 * tests/helpers/build-mpi.sh.  One mode per run:
 *   allreduce              every rank adds its rank; rank 0 prints the sum
 *   exit R CODE            rank R exits with CODE after the others reached
 *                          a barrier-free point; others wait in MPI_Barrier
 *   segv R                 rank R dereferences NULL
 *   abort R CODE           rank R calls MPI_Abort(CODE)
 *   sigkill R              rank R raises SIGKILL
 *   improper R             rank R exits 0 without MPI_Finalize
 *   lines N                every rank prints N numbered lines on stdout
 *                          (stdio's defaults: a line at a time to a
 *                          terminal, as smtd and orted give the ranks)
 *   blocklines N           the same in 4 KiB writes (stdout fully
 *                          buffered): the forwarding path's own speed
 *   bytes FILE             rank 0 copies FILE to stdout byte for byte
 *   slowcopy FILE          rank 0 copies FILE a line at a time, pausing
 *                          200 us between lines (mpirun's --xml buffer
 *                          overflows on big chunks of non-ASCII bytes)
 *   hostname               every rank prints gethostname() and SM_CURRENT_HOST
 *   sleep S [DIR]          every rank says it is ready (with DIR, also by
 *                          creating DIR/ready.RANK, which a script can wait
 *                          for), sleeps S seconds, then meets the others in
 *                          MPI_Barrier
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *mode = argc > 1 ? argv[1] : "allreduce";

	if (!strcmp(mode, "allreduce")) {
		int sum = 0;
		MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		printf("rank %d of %d: sum %d\n", rank, size, sum);
	} else if (!strcmp(mode, "exit") && argc > 3) {
		if (rank == atoi(argv[2])) {
			fprintf(stderr, "rank %d giving up with code %s\n", rank, argv[3]);
			fflush(stderr);
			exit(atoi(argv[3]));
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "segv") && argc > 2) {
		if (rank == atoi(argv[2])) {
			volatile int *p = NULL;
			*p = 1;
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "abort") && argc > 3) {
		if (rank == atoi(argv[2])) {
			fprintf(stderr, "rank %d aborting\n", rank);
			MPI_Abort(MPI_COMM_WORLD, atoi(argv[3]));
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "sigkill") && argc > 2) {
		if (rank == atoi(argv[2])) {
			fprintf(stderr, "rank %d raising SIGKILL\n", rank);
			fflush(stderr);
			raise(SIGKILL);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "improper") && argc > 2) {
		if (rank == atoi(argv[2])) {
			printf("rank %d leaving without MPI_Finalize\n", rank);
			fflush(stdout);
			_exit(0);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else if ((!strcmp(mode, "lines") || !strcmp(mode, "blocklines")) && argc > 2) {
		long n = atol(argv[2]);
		static char buf[4096];
		if (!strcmp(mode, "blocklines"))
			setvbuf(stdout, buf, _IOFBF, sizeof(buf));
		for (long i = 0; i < n; i++)
			printf("rank %d line %08ld abcdefghijklmnopqrstuvwxyz\n", rank, i);
	} else if (!strcmp(mode, "bytes") && argc > 2) {
		if (rank == 0) {
			FILE *f = fopen(argv[2], "rb");
			char buf[65536];
			size_t n;
			while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
				fwrite(buf, 1, n, stdout);
			if (f)
				fclose(f);
		}
	} else if (!strcmp(mode, "slowcopy") && argc > 2) {
		if (rank == 0) {
			FILE *f = fopen(argv[2], "rb");
			char *line = NULL;
			size_t cap = 0;
			ssize_t n;
			while (f && (n = getline(&line, &cap, f)) > 0) {
				fwrite(line, 1, (size_t)n, stdout);
				fflush(stdout);
				usleep(200);
			}
			free(line);
			if (f)
				fclose(f);
		}
	} else if (!strcmp(mode, "sleep") && argc > 2) {
		if (argc > 3) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/ready.%d", argv[3], rank);
			FILE *f = fopen(path, "w");
			if (!f) {
				perror(path);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			fclose(f);
		}
		printf("rank %d ready\n", rank);
		fflush(stdout);
		sleep((unsigned)atoi(argv[2]));
		MPI_Barrier(MPI_COMM_WORLD);
	} else if (!strcmp(mode, "hostname")) {
		char name[256] = "";
		gethostname(name, sizeof(name));
		const char *sm = getenv("SM_CURRENT_HOST");
		printf("rank %d gethostname=%s SM_CURRENT_HOST=%s\n", rank, name, sm ? sm : "(unset)");
	}
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
