/* The CUDA APIs a trace knows about: names, arguments and what each call means for the analysis. */
#ifndef INGERO_API_H
#define INGERO_API_H

#include <stdint.h>
#include "event.h"

/* What a call does, as far as the analysis cares. */
enum ingero_api_role {
	INGERO_ROLE_OTHER,
	INGERO_ROLE_ALLOC,	/* hands out device (or host-pinned) memory */
	INGERO_ROLE_FREE,	/* gives it back */
	INGERO_ROLE_COPY,
	INGERO_ROLE_MEMSET,
	INGERO_ROLE_LAUNCH,
	INGERO_ROLE_GRAPH,	/* a graph launch */
	INGERO_ROLE_SYNC,	/* waits for the GPU */
	INGERO_ROLE_VMM,	/* the virtual-memory calls: reserve, create, map, unmap, release */
	INGERO_NR_ROLES
};

/* What an argument holds. */
enum ingero_arg_kind {
	INGERO_ARG_INT,
	INGERO_ARG_PTR,		/* a host pointer */
	INGERO_ARG_SIZE,	/* a byte count */
	INGERO_ARG_DEVPTR,	/* a device pointer passed in */
	INGERO_ARG_OUT_DEVPTR,	/* where the call stores the device pointer it hands out */
	INGERO_ARG_STREAM,
	INGERO_ARG_HANDLE,	/* another opaque handle: event, graph, function */
	INGERO_NR_ARG_KINDS
};

struct ingero_arg {
	const char *type;	/* as in the prototype: "size_t", "void **" */
	const char *name;
	uint32_t kind;		/* enum ingero_arg_kind */
};

/* How a trace's calls of an API were recorded. */
enum ingero_api_flags {
	/* Probed at its entry alone: each call has a time and arguments, but no return (end_ns is ts). */
	INGERO_API_ENTRY_ONLY = 0x1,
};

struct ingero_api {
	const char *name;	/* the symbol: "cuMemAlloc_v2" */
	const char *lib;	/* "cudart" (the runtime) or "cuda" (the driver) */
	const char *set;	/* the probe set that has it: "alloc", "copy", ... */
	const char *ret_type;	/* "cudaError_t", "CUresult" */
	uint32_t role;		/* enum ingero_api_role */
	uint32_t nargs;
	struct ingero_arg args[INGERO_MAX_ARGS];
	uint32_t flags;		/* enum ingero_api_flags */
};

/* Whether api's calls were recorded without their returns. */
static inline int ingero_api_entry_only(const struct ingero_api *api)
{
	return api->flags & INGERO_API_ENTRY_ONLY;
}

/* The first argument of the given kind, or -1. */
int ingero_api_arg(const struct ingero_api *api, enum ingero_arg_kind kind);
const char *ingero_role_name(enum ingero_api_role role);

#endif
