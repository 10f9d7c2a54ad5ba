/*
 * heap-outptr N: N direct cuMemAlloc_v2 calls of 1 MiB whose out-pointers
 * live in heap memory, as other libraries than PyTorch's allocator make them
 * on NVIDIA's real driver (outside any stack window a tracer reads at the
 * return). None is freed. Prints "alloc 0xPTR SIZE" per allocation, then
 *   heap-outptr cuMemAlloc_v2=N bytes=SUM
 */
#include "workload.h"

#define MB (1 << 20)

int main(int argc, char **argv)
{
	unsigned long n = number(argc > 1 ? argv[1] : NULL, "N"), i;
	CUdeviceptr *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return 1;
	for (i = 0; i < n; i++) {
		CALL(cuMemAlloc_v2, (&slots[i], MB));
		printf("alloc 0x%llx %d\n", (unsigned long long)slots[i], MB);
	}
	report("heap-outptr", "bytes=%lu", n * MB);
	return 0;
}
