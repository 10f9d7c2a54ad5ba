/*
 * demo [ROUNDS]: the workload of `make demo`. Pinned to CPU 0 (where t/demo.sh
 * runs a CPU hog beside it), it allocates, copies, launches and synchronises
 * for ROUNDS rounds (default 200); three allocations stay unfreed.
 *   demo cudaStreamCreate=1 cudaMalloc=... cudaFree=ROUNDS
 */
#include <sched.h>
#include "workload.h"

#define KB 1024

static void pin_to_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* CPU work between the calls, so that the hog preempts the loop at all points, inside calls too. */
static void host_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? number(argv[1], "ROUNDS") : 200, i;
	static char host[256 * KB];
	static char back[256 * KB];
	void *keep[3];
	cudaStream_t s;

	pin_to_cpu0();
	CALL(cudaStreamCreate, (&s));
	for (i = 0; i < 3; i++)
		CALL(cudaMalloc, (&keep[i], (i + 1) * 1024 * KB));
	for (i = 0; i < rounds; i++) {
		void *buf;

		CALL(cudaMalloc, (&buf, 256 * KB));
		CALL(cudaMemcpy, (buf, host, sizeof(host), cudaMemcpyHostToDevice));
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(200), one_block, NULL, 0, s));
		CALL(cudaStreamSynchronize, (s));
		CALL(cudaMemcpy, (back, buf, sizeof(back), cudaMemcpyDeviceToHost));
		host_copy(back, host, sizeof(back));
		CALL(cudaFree, (buf));
	}
	report("demo", NULL);
	return 0;
}
