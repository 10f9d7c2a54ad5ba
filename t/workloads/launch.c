/*
 * launch [-u US] [-d] [-S] N: N kernel launches of US microseconds each on the
 * fake GPU (default 0), through cudaLaunchKernel, or with -d straight through
 * the driver's cuLaunchKernel; -S synchronizes the stream after each launch,
 * else once at the end with cudaDeviceSynchronize.
 *   launch cudaLaunchKernel=N cudaDeviceSynchronize=1 kernel_us=US
 */
#include <unistd.h>
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long n, i;
	unsigned us = 0;
	int opt, driver = 0, each = 0;

	while ((opt = getopt(argc, argv, "u:dS")) != -1) {
		switch (opt) {
		case 'u': us = (unsigned)number(optarg, "US"); break;
		case 'd': driver = 1; break;
		case 'S': each = 1; break;
		default: return 129;
		}
	}
	n = number(argv[optind], "N");
	for (i = 0; i < n; i++) {
		if (driver)
			CALL(cuLaunchKernel, ((CUfunction)KERNEL, us, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
		else
			CALL(cudaLaunchKernel, (KERNEL, kernel_grid(us), one_block, NULL, 0, NULL));
		if (each)
			CALL(cudaStreamSynchronize, (NULL));
	}
	if (!each)
		CALL(cudaDeviceSynchronize, ());
	report("launch", "kernel_us=%u", us);
	return 0;
}
