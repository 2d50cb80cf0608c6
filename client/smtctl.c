/* smtctl.c - the command-line client of smtd. */
#include "config.h"

int main(void)
{
	return 0;
}
