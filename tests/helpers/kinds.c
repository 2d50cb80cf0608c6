/*
 * kinds - print the failure kinds table (daemon/report.c), one kind a line:
 * "NAME EXIT", EXIT "128+N" for the kind whose exit code is the signal's.
 * For tests/integration/house_docs.sh, which compares it with smtd(8).
 */
#include "config.h"

#include <stdio.h>

#include "report.h"

int main(void)
{
	for (int k = 1; k < SMT_FAIL_COUNT; k++) {
		const struct smt_failure_kind_info *i = &smt_failure_kinds[k];

		if (i->exit_code < 0)
			printf("%s 128+N\n", i->name);
		else
			printf("%s %d\n", i->name, i->exit_code);
	}
	return 0;
}
