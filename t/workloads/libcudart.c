/*
 * The stand-in CUDA runtime, libcudart.so.13: each call goes down to the
 * driver stand-in as NVIDIA's runtime does (cudaMalloc -> cuMemAlloc_v2 with
 * the out-pointer on the runtime's own stack, cudaLaunchKernel ->
 * cuLaunchKernel, ...), so that a tracer sees the same nesting. As in CUDA
 * 13, cudaGetDevice asks cuCtxGetDevice_v2 and cudaDeviceSynchronize calls
 * cuCtxSynchronize_v2. Also linked statically into the static-rt workload.
 */
#include <pthread.h>
#include <stdint.h>
#include "cuda-stub.h"

static __thread cudaError_t last_error;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUcontext context;

static void init(void)
{
	if (cuInit(0) == CUDA_SUCCESS)
		cuDevicePrimaryCtxRetain(&context, 0);
}

static void enter(void)
{
	pthread_once(&init_once, init);
}

/* The driver's codes that the stand-ins use have the runtime's numbers. */
static cudaError_t status(CUresult res)
{
	if (res != CUDA_SUCCESS)
		last_error = (cudaError_t)res;
	return (cudaError_t)res;
}

#define D(p) ((CUdeviceptr)(uintptr_t)(p))

cudaError_t cudaGetDevice(int *device)
{
	enter();
	return status(cuCtxGetDevice_v2(device, context));
}

cudaError_t cudaSetDevice(int device)
{
	CUcontext ctx;
	CUresult res;

	enter();
	res = cuDevicePrimaryCtxRetain(&ctx, device);
	return status(res ? res : cuCtxSetCurrent(ctx));
}

cudaError_t cudaGetDeviceCount(int *count)
{
	enter();
	return status(cuDeviceGetCount(count));
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	enter();
	last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	enter();
	return last_error;
}

const char *cudaGetErrorString(cudaError_t error)
{
	enter();
	switch (error) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInitializationError: return "initialization error";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	case cudaErrorNotSupported: return "operation not supported";
	}
	return "unrecognized error code";
}

/* Memory. */
static cudaError_t malloc_via(CUresult (*alloc)(CUdeviceptr *, size_t, CUstream), void **devPtr, size_t size,
			      cudaStream_t stream)
{
	CUdeviceptr p = 0;
	CUresult res;

	enter();
	if (!devPtr)
		return status(CUDA_ERROR_INVALID_VALUE);
	res = alloc ? alloc(&p, size, stream) : cuMemAlloc_v2(&p, size);
	if (res == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return status(res);
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	return malloc_via(NULL, devPtr, size, NULL);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_via(cuMemAllocAsync, devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_via(cuMemAllocAsync_ptsz, devPtr, size, hStream);
}

/* cudaFree(NULL) does nothing, successfully, and asks nothing of the driver. */
cudaError_t cudaFree(void *devPtr)
{
	enter();
	return devPtr ? status(cuMemFree_v2(D(devPtr))) : cudaSuccess;
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	enter();
	return status(cuMemFreeAsync(D(devPtr), hStream));
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	enter();
	return status(cuMemFreeAsync_ptsz(D(devPtr), hStream));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	enter();
	return status(cuMemHostAlloc(pHost, size, flags));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	enter();
	return status(cuMemAllocHost_v2(ptr, size));
}

cudaError_t cudaFreeHost(void *ptr)
{
	enter();
	return status(cuMemFreeHost(ptr));
}

/* Copies: the kind picks the driver's call; _ptds/_ptsz pick its per-thread variant. */
static CUresult copy_sync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int ptds)
{
	switch (kind) {
	case cudaMemcpyHostToDevice:
		return (ptds ? cuMemcpyHtoD_v2_ptds : cuMemcpyHtoD_v2)(D(dst), src, n);
	case cudaMemcpyDeviceToHost:
		return (ptds ? cuMemcpyDtoH_v2_ptds : cuMemcpyDtoH_v2)(dst, D(src), n);
	case cudaMemcpyDeviceToDevice:
		return (ptds ? cuMemcpyDtoD_v2_ptds : cuMemcpyDtoD_v2)(D(dst), D(src), n);
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		return (ptds ? cuMemcpy_ptds : cuMemcpy)(D(dst), D(src), n);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s, int ptsz)
{
	switch (kind) {
	case cudaMemcpyHostToDevice:
		return (ptsz ? cuMemcpyHtoDAsync_v2_ptsz : cuMemcpyHtoDAsync_v2)(D(dst), src, n, s);
	case cudaMemcpyDeviceToHost:
		return (ptsz ? cuMemcpyDtoHAsync_v2_ptsz : cuMemcpyDtoHAsync_v2)(dst, D(src), n, s);
	case cudaMemcpyDeviceToDevice:
		return (ptsz ? cuMemcpyDtoDAsync_v2_ptsz : cuMemcpyDtoDAsync_v2)(D(dst), D(src), n, s);
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		return (ptsz ? cuMemcpyAsync_ptsz : cuMemcpyAsync)(D(dst), D(src), n, s);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	enter();
	return status(copy_sync(dst, src, count, kind, 0));
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	enter();
	return status(copy_sync(dst, src, count, kind, 1));
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			    cudaStream_t stream)
{
	enter();
	return status(copy_async(dst, src, count, kind, stream, 0));
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				 cudaStream_t stream)
{
	enter();
	return status(copy_async(dst, src, count, kind, stream, 1));
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	enter();
	return status(cuMemsetD8_v2(D(devPtr), (unsigned char)value, count));
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	enter();
	return status(cuMemsetD8_v2_ptds(D(devPtr), (unsigned char)value, count));
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	enter();
	return status(cuMemsetD8Async(D(devPtr), (unsigned char)value, count, stream));
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	enter();
	return status(cuMemsetD8Async_ptsz(D(devPtr), (unsigned char)value, count, stream));
}

/* Launches: the host stub's address stands for the CUfunction. */
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
			     cudaStream_t stream)
{
	enter();
	return status(cuLaunchKernel((CUfunction)func, gridDim.x, gridDim.y, gridDim.z, blockDim.x, blockDim.y,
				     blockDim.z, (unsigned)sharedMem, stream, args, NULL));
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream)
{
	enter();
	return status(cuLaunchKernel_ptsz((CUfunction)func, gridDim.x, gridDim.y, gridDim.z, blockDim.x,
					  blockDim.y, blockDim.z, (unsigned)sharedMem, stream, args, NULL));
}

/* Streams, events, synchronisation. */
cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	enter();
	return status(cuStreamCreate(pStream, 0));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	enter();
	return status(cuStreamDestroy_v2(stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	enter();
	return status(cuStreamSynchronize(stream));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	enter();
	return status(cuStreamSynchronize_ptsz(stream));
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	enter();
	return status(cuStreamIsCapturing(stream, (CUstreamCaptureStatus *)pCaptureStatus));
}

cudaError_t cudaDeviceSynchronize(void)
{
	enter();
	return status(cuCtxSynchronize_v2(context));
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	enter();
	return status(cuEventCreate(event, 0));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	enter();
	return status(cuEventRecord(event, stream));
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	enter();
	return status(cuEventRecord_ptsz(event, stream));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	enter();
	return status(cuEventSynchronize(event));
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	enter();
	return status(cuEventDestroy_v2(event));
}

/* Graphs. */
cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	enter();
	return status(cuGraphCreate(pGraph, flags));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	enter();
	return status(cuGraphDestroy(graph));
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
	enter();
	return status(cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	enter();
	return status(cuGraphExecDestroy(graphExec));
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	enter();
	return status(cuGraphLaunch(graphExec, stream));
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	enter();
	return status(cuGraphLaunch_ptsz(graphExec, stream));
}
