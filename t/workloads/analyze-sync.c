/*
 * analyze-sync ROUNDS KERNEL_US WORK_US: pins its main thread to CPU 0 and,
 * ROUNDS times, spins WORK_US on the CPU, launches a kernel of KERNEL_US and
 * waits for it in cudaStreamSynchronize, which sleeps until the stub-gpu
 * thread wakes it. Around every call it reads its run_delay (the time it was
 * runnable but not running) from /proc/thread-self/schedstat, and prints the
 * part inside the calls and all of it since the rounds began:
 *   analyze-sync cudaStreamCreate=1 cudaLaunchKernel=N cudaStreamSynchronize=N
 *     delay_in_calls_ns=X sync_delay_ns=Y delay_ns=Z
 */
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "workload.h"

static int schedstat = -1;

static unsigned long long run_delay(void)
{
	char buf[128];
	unsigned long long run, delay = 0;
	ssize_t n = pread(schedstat, buf, sizeof(buf) - 1, 0);

	if (n <= 0) {
		perror("/proc/thread-self/schedstat");
		exit(1);
	}
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &run, &delay) != 2) {
		fprintf(stderr, "schedstat: unexpected '%s'\n", buf);
		exit(1);
	}
	return delay;
}

static void spin_us(unsigned long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < (long)us);
}

int main(int argc, char **argv)
{
	unsigned long rounds = number(argv[1], "ROUNDS"), kernel_us = number(argc > 2 ? argv[2] : NULL, "KERNEL_US");
	unsigned long work_us = number(argc > 3 ? argv[3] : NULL, "WORK_US"), i;
	unsigned long long in_calls = 0, in_sync = 0, start, d0, d1;
	cudaStream_t s;
	cpu_set_t set;

	/* The first call starts the stub-gpu thread; only this thread is pinned after it. */
	CALL(cudaStreamCreate, (&s));
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	schedstat = open("/proc/thread-self/schedstat", O_RDONLY);
	start = run_delay();
	for (i = 0; i < rounds; i++) {
		spin_us(work_us);
		d0 = run_delay();
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(kernel_us), one_block, NULL, 0, s));
		d1 = run_delay();
		in_calls += d1 - d0;
		d0 = run_delay();
		CALL(cudaStreamSynchronize, (s));
		d1 = run_delay();
		in_calls += d1 - d0;
		in_sync += d1 - d0;
	}
	report("analyze-sync", "delay_in_calls_ns=%llu sync_delay_ns=%llu delay_ns=%llu", in_calls, in_sync,
	       run_delay() - start);
	return 0;
}
