/*
 * liblate.so, the library late-dlopen loads: linked against libcudart.so.13,
 * which it finds through its RUNPATH $ORIGIN/late and nowhere else.
 */
#include "cuda-stub.h"

#pragma GCC visibility push(default)
int late_run(unsigned long n);
#pragma GCC visibility pop

/* N rounds of cudaMalloc(4096) and cudaFree; the first failing code, or 0. */
int late_run(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		void *p;
		cudaError_t e = cudaMalloc(&p, 4096);

		if (e == cudaSuccess)
			e = cudaFree(p);
		if (e != cudaSuccess)
			return e;
	}
	return 0;
}
