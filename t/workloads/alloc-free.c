/*
 * alloc-free [-k K] [-p] N: N cudaMalloc of the sizes 4096 + 256*i (i from 0),
 * each freed at once except the last K, which stay allocated at exit.
 * -p prints "alloc 0xPTR SIZE" per allocation (and "free 0xPTR" per free)
 * before the summary line:
 *   alloc-free cudaMalloc=N cudaFree=N-K bytes=SUM leaked=K leaked_bytes=SUM_K
 */
#include <unistd.h>
#include "workload.h"

int main(int argc, char **argv)
{
	unsigned long n, k = 0, i;
	unsigned long long bytes = 0, leaked_bytes = 0;
	int opt, print = 0;

	while ((opt = getopt(argc, argv, "k:p")) != -1) {
		switch (opt) {
		case 'k': k = number(optarg, "K"); break;
		case 'p': print = 1; break;
		default: return 129;
		}
	}
	n = number(argv[optind], "N");
	if (k > n)
		k = n;
	for (i = 0; i < n; i++) {
		size_t size = 4096 + 256 * i;
		void *p;

		CALL(cudaMalloc, (&p, size));
		bytes += size;
		if (print)
			printf("alloc %p %zu\n", p, size);
		if (i >= n - k) {
			leaked_bytes += size;
			continue;
		}
		CALL(cudaFree, (p));
		if (print)
			printf("free %p\n", p);
	}
	report("alloc-free", "bytes=%llu leaked=%lu leaked_bytes=%llu", bytes, k, leaked_bytes);
	return 0;
}
