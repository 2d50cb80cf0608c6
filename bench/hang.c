/*
 * hang - an MPI rank that says it is up and then waits silently, for the
 * fault and footprint benchmarks.
 *
 *   hang DIR [SECONDS]   after MPI_Init, create DIR/ready.RANK, then sleep
 *                        SECONDS (default 600) and enter MPI_Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank;
	char path[4096];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc > 1) {
		snprintf(path, sizeof(path), "%s/ready.%d", argv[1], rank);
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
	}
	sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 600);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
