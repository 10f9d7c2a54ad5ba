/* Between the probe data (cuda-protos.c) and the code that reads it (prototype.c). */
#ifndef INGERO_PROBES_INTERNAL_H
#define INGERO_PROBES_INTERNAL_H

#include <stddef.h>
#include "probes.h"

/* "SET ROLE: RET NAME(TYPE NAME, ...)", one per API. */
extern const char *const ingero_cuda_protos[];
extern const size_t ingero_cuda_nprotos;
extern const struct ingero_probe_set ingero_cuda_sets[];
extern const size_t ingero_cuda_nsets;

#endif
