/* What the analysis unit tests share: the five APIs their made-up traces call. */
#ifndef ANALYSIS_UTIL_H
#define ANALYSIS_UTIL_H

#include "../../lib/api.h"

enum { LAUNCH, SYNC, MALLOC, MEMALLOC, FREE, NAPIS };

static const struct ingero_api apis[NAPIS] = {
	[LAUNCH] = { "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 1,
		     { { "const void *", "func", INGERO_ARG_PTR } } },
	[SYNC] = { "cudaStreamSynchronize", "cudart", "sync", "cudaError_t", INGERO_ROLE_SYNC, 1,
		   { { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	[MALLOC] = { "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2,
		     { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } },
	[MEMALLOC] = { "cuMemAlloc_v2", "cuda", "alloc", "CUresult", INGERO_ROLE_ALLOC, 2,
		       { { "CUdeviceptr *", "dptr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "bytesize", INGERO_ARG_SIZE } } },
	[FREE] = { "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1,
		   { { "void *", "devPtr", INGERO_ARG_DEVPTR } } },
};

#endif
