/*
 * mix [-u US]: a bit of everything, once or a few times each: allocations
 * (device, host, stream-ordered, the virtual-memory calls), copies in every
 * direction, sync and async and per-thread, memsets, launches (the last of
 * US microseconds, default 2000), stream, event and device syncs, a graph
 * launch, and one failing call: a cudaMalloc of 1 PiB returns 2
 * (cudaErrorMemoryAllocation), which cudaGetLastError then reports.
 *   mix cudaMalloc=3 ... failed=cudaMalloc:2
 */
#include <unistd.h>
#include "workload.h"

#define MB (1 << 20)

int main(int argc, char **argv)
{
	void *a, *b, *big, *pooled, *host;
	cudaStream_t s;
	cudaEvent_t ev;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CUdeviceptr va;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop = { 0 };
	CUmemAccessDesc access = { { 1, 0 }, 3 };
	unsigned us = 2000;
	int opt, i;

	while ((opt = getopt(argc, argv, "u:")) != -1) {
		if (opt != 'u')
			return 129;
		us = (unsigned)number(optarg, "US");
	}
	CALL(cudaMalloc, (&a, MB));
	CALL(cudaMalloc, (&b, MB));
	CALL(cudaHostAlloc, (&host, MB, 0));
	CALL(cudaStreamCreate, (&s));

	CALL(cudaMemcpy, (a, host, MB, cudaMemcpyHostToDevice));
	CALL(cudaMemcpy, (b, a, MB, cudaMemcpyDeviceToDevice));
	CALL(cudaMemcpy, (host, b, MB, cudaMemcpyDeviceToHost));
	CALL(cudaMemcpyAsync, (a, host, MB / 2, cudaMemcpyHostToDevice, s));
	CALL(cudaMemcpyAsync, (b, a, MB / 2, cudaMemcpyDeviceToDevice, s));
	CALL(cudaMemcpyAsync, (host, b, MB / 2, cudaMemcpyDeviceToHost, s));
	CALL(cudaMemcpyAsync_ptsz, (a, host, 4096, cudaMemcpyHostToDevice, NULL));
	CALL(cudaMemset, (a, 0, MB));
	CALL(cudaMemsetAsync, (b, 0xff, MB, s));

	for (i = 0; i < 3; i++)
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(0), one_block, NULL, 0, s));
	CALL(cudaLaunchKernel, (KERNEL, kernel_grid(us), one_block, NULL, 0, s));
	CALL(cudaStreamSynchronize, (s));

	CALL(cudaEventCreate, (&ev));
	CALL(cudaLaunchKernel, (KERNEL, kernel_grid(us / 2), one_block, NULL, 0, s));
	CALL(cudaEventRecord, (ev, s));
	CALL(cudaEventSynchronize, (ev));

	CALL(cudaMallocAsync, (&pooled, 8 * MB, s));
	CALL(cudaFreeAsync, (pooled, s));

	CALL(cudaGraphCreate, (&g, 0));
	CALL(cudaGraphInstantiate, (&ge, g, 0));
	CALL(cudaGraphLaunch, (ge, s));
	CALL(cudaDeviceSynchronize, ());

	CALL(cuMemAddressReserve, (&va, 64 * MB, 0, 0, 0));
	CALL(cuMemCreate, (&h, 2 * MB, &prop, 0));
	CALL(cuMemMap, (va, 2 * MB, 0, h, 0));
	CALL(cuMemSetAccess, (va, 2 * MB, &access, 1));
	CALL(cuMemUnmap, (va, 2 * MB));
	CALL(cuMemRelease, (h));
	CALL(cuMemAddressFree, (va, 64 * MB));

	EXPECT(cudaMalloc, (&big, 1ULL << 50), cudaErrorMemoryAllocation);
	EXPECT(cudaGetLastError, (), cudaErrorMemoryAllocation);

	CALL(cudaGraphExecDestroy, (ge));
	CALL(cudaGraphDestroy, (g));
	CALL(cudaEventDestroy, (ev));
	CALL(cudaStreamDestroy, (s));
	CALL(cudaFree, (a));
	CALL(cudaFree, (b));
	CALL(cudaFreeHost, (host));
	report("mix", "kernel_us=%u failed=cudaMalloc:%d", us, cudaErrorMemoryAllocation);
	return 0;
}
