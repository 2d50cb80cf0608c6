/*
 * fuzz_config.c - libFuzzer target for the configuration parsers: the
 * input is split at the first two NUL bytes into resourceconfig.json,
 * hyperparameters.json and the custom MPI options, which go through the
 * same checks, decoding and word splitting as in the daemon.  The third
 * part is also quoted for a remote shell (smt_shellwords_quote): when that
 * succeeds, splitting the result must give the part back as one word.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobconfig.h"
#include "shellwords.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *parts[3] = { NULL, NULL, NULL };
	size_t lens[3] = { 0, 0, 0 };
	struct smt_jobconfig *cfg = NULL;
	char *copy = malloc(size + 1), err[512], **words = NULL;
	size_t start = 0, k = 0, n;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i <= size && k < 3; i++)
		if (i == size || (copy[i] == '\0' && k < 2)) {
			parts[k] = copy + start;
			lens[k++] = i - start;
			start = i + 1;
		}
	if (smt_jobconfig_parse("/fuzz", parts[0], lens[0], parts[1], lens[1], NULL, 0, "algo-1",
				&cfg, err, sizeof(err)) == 0)
		smt_jobconfig_free(cfg);
	if (parts[2] && smt_shellwords_split(parts[2], &words, &n, err, sizeof(err)) == 0)
		smt_strv_free(words);
	if (parts[2]) {
		char *quoted = NULL, bad = 0;

		if (smt_shellwords_quote(parts[2], &quoted, &bad) == 0) {
			words = NULL;
			if (smt_shellwords_split(quoted, &words, &n, err, sizeof(err)) != 0 || n != 1 ||
			    strcmp(words[0], parts[2]) != 0)
				abort();
			smt_strv_free(words);
			free(quoted);
		}
	}
	free(copy);
	return 0;
}
