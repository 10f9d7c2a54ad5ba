/*
 * analyze-memory: allocations of known sizes in a known order, two never
 * freed, and one that fails. The peak of live bytes is A + C + D.
 *   cudaMalloc A 1 MiB, B 2 MiB, C 4 MiB; free B; D 8 MiB; free A;
 *   E 16 KiB; free D; cudaMalloc of 1 TiB fails with 2
 * It prints the pointers it kept:
 *   analyze-memory cudaMalloc=6 cudaFree=3 peak=13631488 live=4210688
 *     unfreed=0xC:4194304,0xE:16384
 */
#include "workload.h"

#define MiB (1024 * 1024)

int main(void)
{
	void *a, *b, *c, *d, *e, *huge;

	CALL(cudaMalloc, (&a, 1 * MiB));
	CALL(cudaMalloc, (&b, 2 * MiB));
	CALL(cudaMalloc, (&c, 4 * MiB));
	CALL(cudaFree, (b));
	CALL(cudaMalloc, (&d, 8 * MiB));
	CALL(cudaFree, (a));
	CALL(cudaMalloc, (&e, 16 * 1024));
	CALL(cudaFree, (d));
	EXPECT(cudaMalloc, (&huge, 1ULL << 40), 2);
	report("analyze-memory", "peak=%d live=%d unfreed=%p:%d,%p:%d", 13 * MiB, 4 * MiB + 16 * 1024,
	       c, 4 * MiB, e, 16 * 1024);
	return 0;
}
