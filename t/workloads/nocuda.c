/*
 * nocuda [MS]: no CUDA library at all; sleeps MS milliseconds (default 100).
 *   nocuda slept_ms=MS
 */
#include <time.h>
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long ms = argc > 1 ? number(argv[1], "MS") : 100;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
	report("nocuda", "slept_ms=%lu", ms);
	return 0;
}
