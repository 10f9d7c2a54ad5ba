/*
 * analyze-hog SECONDS: a CPU-bound neighbour named "hog" that spins for
 * SECONDS (or until killed), for the tests to pin onto a traced thread's CPU.
 *   analyze-hog pid=N
 */
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long seconds = number(argc > 1 ? argv[1] : NULL, "SECONDS");
	time_t end = time(NULL) + (time_t)seconds;
	volatile unsigned long spin = 0;

	prctl(PR_SET_NAME, "hog");
	report("analyze-hog", "pid=%d", (int)getpid());
	while (time(NULL) < end)
		for (int i = 0; i < 1000000; i++)
			spin++;
	return 0;
}
