#!/bin/sh
# Build the MPI test programs with mpicc into $top_builddir/tests/mpi once;
# prints the directory.  Exits 77 (skip) when mpicc is missing.
set -eu
out="$top_builddir/tests/mpi"
mkdir -p "$out"
command -v "${MPICC:-mpicc}" >/dev/null 2>&1 || { echo "mpicc not found" >&2; exit 77; }
# build NAME SOURCE [CFLAGS...]
build() {
	name=$1 src=$2
	shift 2
	if [ ! -x "$out/$name" ] || [ "$src" -nt "$out/$name" ]; then
		# Concurrent tests may build at once: build aside, rename into place.
		"${MPICC:-mpicc}" -O1 -Wall "$@" -o "$out/$name.$$" "$src"
		mv -f "$out/$name.$$" "$out/$name"
	fi
}
build mpi_job "$top_srcdir/tests/helpers/mpi_job.c"
build sigrank_mpi "$top_srcdir/tests/helpers/sigrank.c" -DSIGRANK_MPI
echo "$out"
