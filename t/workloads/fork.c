/*
 * fork N: forks, then parent and child each make N rounds of cudaMalloc(4096),
 * cudaLaunchKernel, cudaFree and one cudaDeviceSynchronize. The child prints
 * first (the parent waits for it):
 *   fork role=child pid=PID cudaMalloc=N cudaLaunchKernel=N cudaFree=N cudaDeviceSynchronize=1
 *   fork role=parent pid=PID ... child_status=0
 */
#include <sys/wait.h>
#include <unistd.h>
#include "workload.h"

static void work(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		void *p;

		CALL(cudaMalloc, (&p, 4096));
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(0), one_block, NULL, 0, NULL));
		CALL(cudaFree, (p));
	}
	CALL(cudaDeviceSynchronize, ());
}

int main(int argc, char **argv)
{
	unsigned long n = number(argc > 1 ? argv[1] : NULL, "N");
	int status = 0;
	pid_t child;

	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	work(n);
	if (!child) {
		printf("fork role=child pid=%d", (int)getpid());
		report("", NULL);
		return 0;
	}
	if (waitpid(child, &status, 0) < 0)
		perror("waitpid");
	printf("fork role=parent pid=%d", (int)getpid());
	report("", "child_status=%d", status);
	return 0;
}
