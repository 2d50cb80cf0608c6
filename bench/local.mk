# The benchmarks (bench/run.sh, docs/BENCHMARKS.md).  Their C helpers are
# built with the project's warning flags, but only on demand: bench/run.sh
# runs `make bench/stamp ...`; `make`, `make check` and distcheck never
# build them.  No sanitizer runtime: they are the measuring stick, not
# code under test.  A new file of bench/ is listed here to be shipped.
EXTRA_PROGRAMS = bench/stamp bench/ratewriter bench/b3shim bench/statusload bench/ckptrank
bench_stamp_SOURCES = bench/stamp.c
bench_stamp_CFLAGS = $(WARN_CFLAGS)
bench_stamp_LDFLAGS =
bench_ratewriter_SOURCES = bench/ratewriter.c
bench_ratewriter_CFLAGS = $(WARN_CFLAGS)
bench_ratewriter_LDFLAGS =
bench_b3shim_SOURCES = bench/b3shim.c
bench_b3shim_CFLAGS = $(WARN_CFLAGS)
bench_b3shim_LDFLAGS =
bench_statusload_SOURCES = bench/statusload.c
bench_statusload_CFLAGS = $(WARN_CFLAGS) -pthread
bench_statusload_LDFLAGS = -pthread
bench_ckptrank_SOURCES = bench/ckptrank.c
bench_ckptrank_CFLAGS = $(WARN_CFLAGS)
bench_ckptrank_LDFLAGS =
CLEANFILES += $(EXTRA_PROGRAMS) bench/fakessh
EXTRA_DIST += bench/README.md bench/BENCHMARKS.head.md bench/run.sh bench/lib.sh \
	bench/report.py bench/faults.sh bench/raise.py bench/b3.sh bench/b3-inner.sh \
	bench/single.sh bench/output.sh bench/grace.sh bench/b9_stall.sh \
	bench/b10_restart.sh bench/b10job.py bench/b12.sh bench/b12-inner.sh
