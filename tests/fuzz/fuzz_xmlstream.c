/*
 * fuzz_xmlstream.c - libFuzzer target for the mpirun --xml decoder and the
 * line assembly behind it.  The first byte picks how the input is cut into
 * feeds; the decoder's own invariants are checked in the callbacks (runs
 * never empty nor longer than SMT_XML_RUN_MAX), and the whole input is
 * also pushed through smt_output in both formats, so that any crash, leak
 * or sanitizer report in either is found.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "report.h"
#include "xmlstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t total;

static void on_data(void *arg, int rank, enum smt_xml_stream stream, const char *buf, size_t len)
{
	(void)arg;
	(void)stream;
	if (len == 0 || len > SMT_XML_RUN_MAX || rank < -1)
		abort();
	total += len;
	(void)buf[len - 1];
}

static void on_text(void *arg, const char *buf, size_t len)
{
	(void)arg;
	if (len == 0 || len > SMT_XML_RUN_MAX)
		abort();
	total += len;
	(void)buf[len - 1];
}

static void on_map(void *arg, int rank, const char *host)
{
	(void)arg;
	if (rank < 0 || strlen(host) > SMT_XML_TAG_MAX)
		abort();
}

static void feed_output(enum smt_output_format format, const uint8_t *data, size_t size,
			size_t step, int null_fd)
{
	struct smt_output_config cfg = {
		.out_fd = null_fd, .msg_fd = null_fd, .format = format, .current_host = "fuzz",
	};
	struct smt_output *o;
	struct smt_report_input in = { .current_host = "fuzz", .mpi = 1, .exit_code = 1 };
	char *text;
	size_t len;
	json_t *j;

	if (smt_output_new(&cfg, &o) < 0)
		return;
	for (size_t i = 0; i < size; i += step)
		smt_output_feed(o, SMT_SRC_MPIRUN_STDOUT, data + i, size - i < step ? size - i : step);
	smt_output_eof(o, SMT_SRC_MPIRUN_STDOUT);
	if (smt_report_build(o, &in, NULL, &text, &len) == 0) {
		if (len > SMT_REPORT_SHOWN || strlen(text) != len)
			abort();
		free(text);
	}
	j = smt_output_logs_json(o, 50, -1);
	json_decref(j);
	if (smt_output_logs_text(o, 50, -1, &text, &len) == 0)
		free(text);
	smt_output_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct smt_xml_handler h = { .data = on_data, .text = on_text, .map = on_map };
	static int null_fd = -1;
	struct smt_xml *x;
	size_t step;

	if (size < 1)
		return 0;
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	step = (size_t)data[0] % 17 + 1;
	data++;
	size--;
	if (smt_xml_new(&h, NULL, &x) < 0)
		return 0;
	total = 0;
	for (size_t i = 0; i < size; i += step)
		smt_xml_feed(x, (const char *)data + i, size - i < step ? size - i : step);
	smt_xml_finish(x);
	/* Decoding never produces more bytes than it was given. */
	if (total > size)
		abort();
	smt_xml_free(x);
	feed_output(step % 2 ? SMT_OUTPUT_TEXT : SMT_OUTPUT_JSON, data, size, step * 7, null_fd);
	return 0;
}
