/*
 * nocuda [MS]: no CUDA library at all; sleeps MS milliseconds (default 100).
 *   nocuda slept_ms=MS
 */
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long ms = argc > 1 ? number(argv[1], "MS") : 100;

	sleep_ms(ms);
	report("nocuda", "slept_ms=%lu", ms);
	return 0;
}
