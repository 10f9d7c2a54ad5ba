/*
 * The stand-in CUDA driver, libcuda.so.1: fake device memory and a fake GPU,
 * a thread named "stub-gpu" that runs the queued work in submission order.
 *
 * Device memory: addresses from FAKE_BASE up, ALIGN-aligned, distinct while
 * allocated and reused after a free (first fit), sizes exact, FAKE_TOTAL in
 * all; they are never backed, never touched. Host allocations are real.
 *
 * Work: one queue for every stream. A kernel runs for gridDimX microseconds
 * of wall time (the device thread sleeps that long); copies, memsets and
 * graph launches take no time. The synchronous copies and memsets wait for
 * all work queued before them, as the legacy default stream does.
 * cuStreamSynchronize waits for the last work of its stream, cuEventSynchronize
 * for the work queued before its record, cuCtxSynchronize for everything:
 * each sleeps on a condition variable (a futex) that the device thread
 * signals, so the wait is a real sleep whose waker is the stub-gpu thread.
 *
 * Every entry point keeps a frame pointer and calls on, so that it starts
 * with push %rbp; mov %rsp,%rbp as NVIDIA's do (see workloads.mk).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda-stub.h"

#define FAKE_BASE 0x700000000000ULL
#define FAKE_TOTAL (16ULL << 30)
#define ALIGN 512ULL
#define QUEUE_LEN 1024

struct CUctx_st { CUdevice dev; };
struct CUstream_st { uint64_t last; };
struct CUevent_st { uint64_t seq; };
struct CUgraph_st { int unused; };
struct CUgraphExec_st { int unused; };

struct block { CUdeviceptr addr; size_t size; };

static struct {
	pthread_mutex_t lock;
	struct block *blocks;	/* sorted by address */
	size_t nr, alloc;
	size_t used;
} mem = { PTHREAD_MUTEX_INITIALIZER };

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	unsigned duration_us[QUEUE_LEN];
	uint64_t submitted, completed;	/* work i is ring[i % QUEUE_LEN] */
	int started;
} gpu = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };

static struct CUctx_st primary_ctx;
static struct CUstream_st default_stream;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static CUdeviceptr round_up(CUdeviceptr v)
{
	return (v + ALIGN - 1) & ~(ALIGN - 1);
}

/* First fit in the gaps between the sorted blocks. */
static CUresult mem_alloc(CUdeviceptr *out, size_t size)
{
	CUdeviceptr at = FAKE_BASE;
	size_t i;
	CUresult res = CUDA_SUCCESS;

	if (!out || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem.lock);
	if (size > FAKE_TOTAL - mem.used) {
		res = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (i = 0; i < mem.nr; i++) {
		if (mem.blocks[i].addr - at >= size)
			break;
		at = round_up(mem.blocks[i].addr + mem.blocks[i].size);
	}
	if (mem.nr == mem.alloc) {
		size_t n = mem.alloc ? 2 * mem.alloc : 64;
		struct block *b = realloc(mem.blocks, n * sizeof(*b));

		if (!b) {
			res = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		mem.blocks = b;
		mem.alloc = n;
	}
	memmove(mem.blocks + i + 1, mem.blocks + i, (mem.nr - i) * sizeof(*mem.blocks));
	mem.blocks[i] = (struct block){ at, size };
	mem.nr++;
	mem.used += size;
	*out = at;
out:
	pthread_mutex_unlock(&mem.lock);
	return res;
}

static CUresult mem_free(CUdeviceptr addr)
{
	size_t i;
	CUresult res = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&mem.lock);
	for (i = 0; i < mem.nr; i++) {
		if (mem.blocks[i].addr != addr)
			continue;
		mem.used -= mem.blocks[i].size;
		memmove(mem.blocks + i, mem.blocks + i + 1, (mem.nr - i - 1) * sizeof(*mem.blocks));
		mem.nr--;
		res = CUDA_SUCCESS;
		break;
	}
	pthread_mutex_unlock(&mem.lock);
	return res;
}

static void *gpu_main(void *unused)
{
	pthread_setname_np(pthread_self(), "stub-gpu");
	pthread_mutex_lock(&gpu.lock);
	for (;;) {
		unsigned us;

		while (gpu.completed == gpu.submitted)
			pthread_cond_wait(&gpu.work, &gpu.lock);
		us = gpu.duration_us[gpu.completed % QUEUE_LEN];
		pthread_mutex_unlock(&gpu.lock);
		if (us) {
			struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

			while (nanosleep(&ts, &ts))
				;
		}
		pthread_mutex_lock(&gpu.lock);
		gpu.completed++;
		pthread_cond_broadcast(&gpu.done);
	}
	return NULL;
}

/* A forked child has no device thread: it starts its own, with nothing queued. */
static void gpu_after_fork(void)
{
	pthread_mutex_init(&gpu.lock, NULL);
	pthread_cond_init(&gpu.work, NULL);
	pthread_cond_init(&gpu.done, NULL);
	pthread_mutex_init(&mem.lock, NULL);
	gpu.completed = gpu.submitted;
	gpu.started = 0;
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, gpu_after_fork);
}

static struct CUstream_st *stream_of(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? &default_stream : s;
}

/* Queues work of the given length on stream s and returns its number, from 1. */
static uint64_t gpu_submit(CUstream s, unsigned duration_us)
{
	uint64_t seq;

	pthread_once(&atfork_once, install_atfork);
	pthread_mutex_lock(&gpu.lock);
	if (!gpu.started) {
		pthread_t t;

		if (pthread_create(&t, NULL, gpu_main, NULL) == 0) {
			pthread_detach(t);
			gpu.started = 1;
		}
	}
	while (gpu.submitted - gpu.completed == QUEUE_LEN)
		pthread_cond_wait(&gpu.done, &gpu.lock);
	gpu.duration_us[gpu.submitted % QUEUE_LEN] = duration_us;
	seq = ++gpu.submitted;
	stream_of(s)->last = seq;
	pthread_cond_signal(&gpu.work);
	pthread_mutex_unlock(&gpu.lock);
	return seq;
}

static CUresult gpu_wait(uint64_t seq)
{
	pthread_mutex_lock(&gpu.lock);
	while (gpu.completed < seq)
		pthread_cond_wait(&gpu.done, &gpu.lock);
	pthread_mutex_unlock(&gpu.lock);
	return CUDA_SUCCESS;
}

static uint64_t gpu_last(void)
{
	uint64_t seq;

	pthread_mutex_lock(&gpu.lock);
	seq = gpu.submitted;
	pthread_mutex_unlock(&gpu.lock);
	return seq;
}

/* Work on the device side; sync waits for it (and so for all before it). */
static CUresult device_op(CUstream s, unsigned duration_us, int sync)
{
	uint64_t seq = gpu_submit(s, duration_us);

	return sync ? gpu_wait(seq) : CUDA_SUCCESS;
}

/*
 * The checks and stores are kept out of line so that no entry point is a
 * leaf: GCC gives a leaf no frame, and so no push %rbp, whatever the flags.
 */
#define OUT_OF_LINE __attribute__((noinline))

static OUT_OF_LINE CUresult check_device(CUdevice dev)
{
	return dev ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static OUT_OF_LINE CUresult check_ctx(CUcontext ctx)
{
	return ctx == &primary_ctx || !ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static OUT_OF_LINE CUresult check_ptr(CUdeviceptr p)
{
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy(CUdeviceptr dst, CUdeviceptr src, CUstream s, int sync)
{
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	return device_op(s, 0, sync);
}

static OUT_OF_LINE CUresult set_out(void *out, const void *val, size_t len)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(out, val, len);
	return CUDA_SUCCESS;
}

static CUresult new_object(void *out, size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return set_out(out, &p, sizeof(p));
}

static CUresult free_object(void *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_HANDLE;
	free(p);
	return CUDA_SUCCESS;
}

/* Initialisation, devices, contexts: one device, one primary context. */
CUresult cuInit(unsigned int Flags)
{
	pthread_once(&atfork_once, install_atfork);
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	int v = 13000;

	return set_out(driverVersion, &v, sizeof(v));
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	return check_device(ordinal) ? CUDA_ERROR_INVALID_VALUE : set_out(device, &ordinal, sizeof(ordinal));
}

CUresult cuDeviceGetCount(int *count)
{
	int one = 1;

	return set_out(count, &one, sizeof(one));
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	size_t total = FAKE_TOTAL;

	return set_out(bytes, &total, sizeof(total));
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUcontext ctx = &primary_ctx;

	return set_out(pctx, &ctx, sizeof(ctx));
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return check_device(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	unsigned f = 0;
	int one = 1;

	if (set_out(flags, &f, sizeof(f)))
		return CUDA_ERROR_INVALID_VALUE;
	return set_out(active, &one, sizeof(one));
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUcontext ctx = &primary_ctx;

	return set_out(pctx, &ctx, sizeof(ctx));
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	return check_ctx(ctx);
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	return set_out(device, &primary_ctx.dev, sizeof(primary_ctx.dev));
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	return set_out(device, &primary_ctx.dev, sizeof(primary_ctx.dev));
}

/* Memory. */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	return mem_alloc(dptr, bytesize);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return mem_free(dptr);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CUresult res = mem_alloc(dptr, bytesize);

	return res ? res : device_op(hStream, 0, 0);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return cuMemAllocAsync(dptr, bytesize, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	CUresult res = mem_free(dptr);

	return res ? res : device_op(hStream, 0, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return cuMemFreeAsync(dptr, hStream);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	void *p;

	if (!pp || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	if (posix_memalign(&p, 4096, bytesize))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	return free_object(p) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* Virtual memory: reservations come from the same fake range. */
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	return mem_alloc(ptr, size);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	return mem_free(ptr);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
		     unsigned long long flags)
{
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	return new_object(handle, sizeof(size_t));
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	return free_object((void *)(uintptr_t)handle);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	return check_ptr(handle) ? CUDA_ERROR_INVALID_HANDLE : check_ptr(ptr);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	return check_ptr(ptr);
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	return check_ptr(ptr) ? CUDA_ERROR_INVALID_VALUE : check_ptr((CUdeviceptr)(uintptr_t)desc);
}

/* Copies and memsets. Host pointers pass as addresses: nothing is read or written. */
#define H(p) ((CUdeviceptr)(uintptr_t)(p))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy(dst, src, NULL, 1);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy(dst, src, CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	return copy(dst, src, hStream, 0);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	return copy(dst, src, hStream, 0);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy(dstDevice, H(srcHost), NULL, 1);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy(dstDevice, H(srcHost), CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(H(dstHost), srcDevice, NULL, 1);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(H(dstHost), srcDevice, CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(dstDevice, srcDevice, NULL, 1);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(dstDevice, srcDevice, CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
	return copy(dstDevice, H(srcHost), hStream, 0);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
				   CUstream hStream)
{
	return copy(dstDevice, H(srcHost), hStream, 0);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	return copy(H(dstHost), srcDevice, hStream, 0);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	return copy(H(dstHost), srcDevice, hStream, 0);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	return copy(dstDevice, srcDevice, hStream, 0);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
				   CUstream hStream)
{
	return copy(dstDevice, srcDevice, hStream, 0);
}

static CUresult memset_op(CUdeviceptr dst, CUstream s, int sync)
{
	return dst ? device_op(s, 0, sync) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset_op(dstDevice, NULL, 1);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset_op(dstDevice, CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset_op(dstDevice, NULL, 1);
}

CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset_op(dstDevice, CU_STREAM_PER_THREAD, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	return memset_op(dstDevice, hStream, 0);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	return memset_op(dstDevice, hStream, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	return memset_op(dstDevice, hStream, 0);
}

CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	return memset_op(dstDevice, hStream, 0);
}

/* Launches: a kernel runs gridDimX microseconds. */
static CUresult launch(CUfunction f, unsigned grid_x, CUstream s)
{
	return f ? device_op(s, grid_x, 0) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f, gridDimX, hStream);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f, gridDimX, hStream);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return config ? launch(f, config->gridDimX, config->hStream) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return cuLaunchKernelEx(config, f, kernelParams, extra);
}

/* Streams, events, synchronisation. */
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return new_object(phStream, sizeof(struct CUstream_st));
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
	return free_object(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	uint64_t last;

	pthread_mutex_lock(&gpu.lock);
	last = stream_of(hStream)->last;
	pthread_mutex_unlock(&gpu.lock);
	return gpu_wait(last);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return cuStreamSynchronize(hStream);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CUstreamCaptureStatus none = 0;

	return set_out(captureStatus, &none, sizeof(none));
}

CUresult cuCtxSynchronize(void)
{
	return gpu_wait(gpu_last());
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	return gpu_wait(gpu_last());
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	return new_object(phEvent, sizeof(struct CUevent_st));
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	if (!hEvent)
		return CUDA_ERROR_INVALID_HANDLE;
	hEvent->seq = gpu_submit(hStream, 0);
	return CUDA_SUCCESS;
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return cuEventRecord(hEvent, hStream);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	return hEvent ? gpu_wait(hEvent->seq) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
	return free_object(hEvent);
}

/* Graphs: empty ones; a launch is one piece of work that takes no time. */
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	return new_object(phGraph, sizeof(struct CUgraph_st));
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	return free_object(hGraph);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
	return hGraph ? new_object(phGraphExec, sizeof(struct CUgraphExec_st)) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	return free_object(hGraphExec);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return hGraphExec ? device_op(hStream, 0, 0) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return cuGraphLaunch(hGraphExec, hStream);
}
