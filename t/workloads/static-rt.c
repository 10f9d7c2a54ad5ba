/*
 * static-rt N: the runtime linked in statically (libcudart.c compiled into
 * this executable: its symbols are in .symtab only, not exported), calling
 * the driver stand-in libcuda.so.1 dynamically. N rounds of cudaMalloc(4096),
 * cudaLaunchKernel and cudaFree, then cudaDeviceSynchronize.
 *   static-rt cudaMalloc=N cudaLaunchKernel=N cudaFree=N cudaDeviceSynchronize=1
 */
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long n = number(argc > 1 ? argv[1] : NULL, "N"), i;

	for (i = 0; i < n; i++) {
		void *p;

		CALL(cudaMalloc, (&p, 4096));
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(0), one_block, NULL, 0, NULL));
		CALL(cudaFree, (p));
	}
	CALL(cudaDeviceSynchronize, ());
	report("static-rt", NULL);
	return 0;
}
