/*
 * The probe sets: the CUDA APIs ingero can probe, read from the prototypes
 * in probes/cuda-protos.c, and the fetch arguments each one needs on this ABI.
 */
#ifndef INGERO_PROBES_H
#define INGERO_PROBES_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/api.h"

struct ingero_probe_set {
	const char *name;	/* "alloc", "copy", "launch", ... */
	const char *help;
	int by_default;
	int entry_only;		/* probed at their entries alone, unless recording asks for returns */
};

/* The table of every API of every set, parsed once from the built-in prototypes. NULL on a BUG. */
const struct ingero_api *ingero_probe_apis(size_t *napis);
const struct ingero_probe_set *ingero_probe_sets(size_t *nsets);
/*
 * "alloc,copy" to a mask of sets (bit i: set i); "default" and "all" as
 * well. -1 and a message naming the unknown set.
 */
int ingero_probe_sets_parse(const char *list, uint64_t *mask);
int ingero_probe_set_index(const char *name);
/* The index in ingero_probe_sets() of the set that has api. */
int ingero_probe_api_set(const struct ingero_api *api);
/* How a recording probes api: entry only where its set says so, unless with_returns. */
uint32_t ingero_probe_api_flags(const struct ingero_api *api, int with_returns);
/* The prototype api was read from, as NVIDIA's headers write it (every argument, even past the sixth). */
const char *ingero_probe_prototype(const struct ingero_api *api);

/*
 * The fetch arguments of the entry (is_return 0) or return probe of api, as
 * uprobe_events wants them after the location: "a0=%di:x64 a1=%si:u64".
 * Field names: a0..a5 for the arguments, sp, ret for the return value and,
 * for an API with an out-pointer, w0.. for the stack window read at return
 * (see ingero_probe_window()). -1 if the buffer is too small.
 */
int ingero_probe_fetchargs(const struct ingero_api *api, int is_return, int use_arrays,
			   char *buf, size_t len);
/*
 * The same for one probe of an event that many probes share (kernels that
 * append probes to an event and take immediate values): "api=\\N:u16" names
 * the API, and every entry has the same fields a0..a5 (u64; absent ones 0) and sp.
 */
int ingero_probe_fetchargs_grouped(const struct ingero_api *api, uint32_t index, int is_return,
				   int use_arrays, char *buf, size_t len);
/* How many low bits of a fetched argument are the argument's (8, 32 or 64). */
unsigned ingero_probe_arg_bits(const struct ingero_arg *arg);
/* The stack window at return: how many 8-byte words from the return sp, in fields of how many. */
void ingero_probe_window(int use_arrays, unsigned *words, unsigned *per_field);
/*
 * The heap window at return: for each of regs callee-saved registers, its
 * value (field c<r>) and words 8-byte words from where it points (h<r>, or
 * h<r>_<w> one word a field when per_field is 1).
 */
void ingero_probe_heap_window(int use_arrays, unsigned *regs, unsigned *words, unsigned *per_field);

#endif
