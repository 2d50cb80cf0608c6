#!/bin/sh
# Build the MPI test programs with mpicc into $top_builddir/tests/mpi once;
# prints the directory.  Exits 77 (skip) when mpicc is missing.
set -eu
out="$top_builddir/tests/mpi"
mkdir -p "$out"
command -v "${MPICC:-mpicc}" >/dev/null 2>&1 || { echo "mpicc not found" >&2; exit 77; }
src="$top_srcdir/tests/helpers/mpi_job.c"
if [ ! -x "$out/mpi_job" ] || [ "$src" -nt "$out/mpi_job" ]; then
	# Concurrent tests may build at once: build aside, rename into place.
	"${MPICC:-mpicc}" -O1 -Wall -o "$out/mpi_job.$$" "$src"
	mv -f "$out/mpi_job.$$" "$out/mpi_job"
fi
echo "$out"
