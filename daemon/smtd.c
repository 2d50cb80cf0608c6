/* smtd.c - entry point: options, plan, then dry-run or the daemon. */
#include "config.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 0;
}
