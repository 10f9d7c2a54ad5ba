/*
 * demo [ROUNDS]: the workload of `make demo`. Pinned to CPU 0 with a CPU hog
 * (comm "hog") forked onto the same CPU, it allocates, copies, launches and
 * synchronises for ROUNDS rounds (default 200); a few allocations stay
 * unfreed. The hog preempts it inside its calls, which the report names.
 *   demo cudaMalloc=... hog_pid=N
 */
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "workload.h"

#define KB 1024

static void pin_to_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static pid_t start_hog(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long spin = 0;

		prctl(PR_SET_NAME, "hog");
		for (;;)
			spin++;
	}
	return pid;
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
	pid_t hog;

	pin_to_cpu0();
	hog = start_hog();
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
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	report("demo", "hog_pid=%d", (int)hog);
	return 0;
}
