/*
 * The probe sets and the CUDA APIs in them, as NVIDIA's headers declare them:
 * the source of truth for what ingero probes. Each line is "SET ROLE: PROTOTYPE";
 * the library follows from the return type (cudaError_t: the runtime
 * libcudart, CUresult: the driver libcuda), the argument kinds from the
 * types and names (probes/prototype.c).
 */
#include "probes-internal.h"

/*
 * In this order: a set's index is its bit in a mask. Launches come tens of
 * thousands a second, and a return probe costs as much as the entry's: their
 * sets are probed at entries alone unless the user asks for durations.
 */
const struct ingero_probe_set ingero_cuda_sets[] = {
	{ "alloc", "device, host-pinned and stream-ordered allocation and free, runtime and driver", 1 },
	{ "vmm", "the driver's virtual-memory calls (PyTorch's expandable segments): reserve, create, map, unmap, release", 1 },
	{ "copy", "memory copies in every direction, sync and async, and their per-thread-stream variants", 1 },
	{ "memset", "memsets, sync and async, runtime and driver", 1 },
	{ "launch", "kernel launches in the driver, where every launch passes (the runtime's included); entries only, unless record --returns", 1, 1 },
	{ "rt-launch", "cudaLaunchKernel as well: each one encloses a driver launch, so this doubles the launch probes; entries only, unless record --returns", 0, 1 },
	{ "graph", "graph launches, runtime and driver", 1 },
	{ "sync", "waits for the GPU: stream, event, device and context synchronisation", 1 },
	{ "getters", "the chatty queries called around every operation (cudaGetDevice, ...): tens of thousands a second", 0 },
};
const size_t ingero_cuda_nsets = sizeof(ingero_cuda_sets) / sizeof(ingero_cuda_sets[0]);

const char *const ingero_cuda_protos[] = {
	"alloc alloc: cudaError_t cudaMalloc(void **devPtr, size_t size)",
	"alloc free: cudaError_t cudaFree(void *devPtr)",
	"alloc alloc: cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)",
	"alloc alloc: cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)",
	"alloc free: cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)",
	"alloc free: cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)",
	"alloc alloc: cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)",
	"alloc alloc: cudaError_t cudaMallocHost(void **ptr, size_t size)",
	"alloc free: cudaError_t cudaFreeHost(void *ptr)",
	"alloc alloc: CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)",
	"alloc free: CUresult cuMemFree_v2(CUdeviceptr dptr)",
	"alloc alloc: CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)",
	"alloc alloc: CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)",
	"alloc free: CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)",
	"alloc free: CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)",
	"alloc alloc: CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)",
	"alloc alloc: CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)",
	"alloc free: CUresult cuMemFreeHost(void *p)",

	"vmm vmm: CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)",
	"vmm vmm: CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)",
	"vmm vmm: CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)",
	"vmm vmm: CUresult cuMemRelease(CUmemGenericAllocationHandle handle)",
	"vmm vmm: CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags)",
	"vmm vmm: CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)",
	"vmm vmm: CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)",

	"copy copy: cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)",
	"copy copy: cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)",
	"copy copy: cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)",
	"copy copy: cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)",
	"copy copy: CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)",
	"copy copy: CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)",
	"copy copy: CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)",
	"copy copy: CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)",

	"memset memset: cudaError_t cudaMemset(void *devPtr, int value, size_t count)",
	"memset memset: cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)",
	"memset memset: cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)",
	"memset memset: cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)",
	"memset memset: CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)",
	"memset memset: CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)",
	"memset memset: CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)",
	"memset memset: CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)",
	"memset memset: CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)",
	"memset memset: CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)",
	"memset memset: CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)",
	"memset memset: CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)",

	"launch launch: CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)",
	"launch launch: CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)",
	"launch launch: CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)",
	"launch launch: CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)",

	"rt-launch launch: cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)",
	"rt-launch launch: cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)",

	"graph graph: cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)",
	"graph graph: cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)",
	"graph graph: CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)",
	"graph graph: CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)",

	"sync sync: cudaError_t cudaStreamSynchronize(cudaStream_t stream)",
	"sync sync: cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)",
	"sync sync: cudaError_t cudaEventSynchronize(cudaEvent_t event)",
	"sync sync: cudaError_t cudaDeviceSynchronize(void)",
	"sync sync: CUresult cuStreamSynchronize(CUstream hStream)",
	"sync sync: CUresult cuStreamSynchronize_ptsz(CUstream hStream)",
	"sync sync: CUresult cuEventSynchronize(CUevent hEvent)",
	"sync sync: CUresult cuCtxSynchronize(void)",
	"sync sync: CUresult cuCtxSynchronize_v2(CUcontext ctx)",

	"getters other: cudaError_t cudaGetDevice(int *device)",
	"getters other: cudaError_t cudaGetLastError(void)",
	"getters other: cudaError_t cudaPeekAtLastError(void)",
	"getters other: cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)",
	"getters other: CUresult cuCtxGetDevice(CUdevice *device)",
	"getters other: CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)",
	"getters other: CUresult cuCtxGetCurrent(CUcontext *pctx)",
	"getters other: CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)",
	"getters other: CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)",
};
const size_t ingero_cuda_nprotos = sizeof(ingero_cuda_protos) / sizeof(ingero_cuda_protos[0]);
