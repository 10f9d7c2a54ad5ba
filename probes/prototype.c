/*
 * Reads the prototypes of probes/cuda-protos.c once into the API table, and
 * answers questions about the probe sets.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "probes-internal.h"
#include "../lib/error.h"

/*
 * What an argument holds, from its type and, where the type says too little,
 * its name; the first rule that matches wins, then any pointer is PTR and
 * anything else INT. names is " a b " or NULL for any name.
 */
static const struct kind_rule {
	const char *type;
	const char *names;
	enum ingero_arg_kind kind;
} kind_rules[] = {
	{ "CUdeviceptr *", NULL, INGERO_ARG_OUT_DEVPTR },
	{ "void **", " devPtr dptr pHost ptr pp ", INGERO_ARG_OUT_DEVPTR },
	{ "CUdeviceptr", NULL, INGERO_ARG_DEVPTR },
	{ "void *", " devPtr ", INGERO_ARG_DEVPTR },
	{ "cudaStream_t", NULL, INGERO_ARG_STREAM },
	{ "CUstream", NULL, INGERO_ARG_STREAM },
	{ "size_t", " size bytesize ByteCount count ", INGERO_ARG_SIZE },
	{ "CUfunction", NULL, INGERO_ARG_HANDLE },
	{ "const void *", " func ", INGERO_ARG_HANDLE },
	{ "CUevent", NULL, INGERO_ARG_HANDLE },
	{ "cudaEvent_t", NULL, INGERO_ARG_HANDLE },
	{ "CUgraphExec", NULL, INGERO_ARG_HANDLE },
	{ "cudaGraphExec_t", NULL, INGERO_ARG_HANDLE },
	{ "CUcontext", NULL, INGERO_ARG_HANDLE },
	{ "CUmemGenericAllocationHandle", NULL, INGERO_ARG_HANDLE },
};

/* The library follows from the return type. */
static const struct {
	const char *ret_type, *lib;
} libs[] = {
	{ "cudaError_t", "cudart" },
	{ "CUresult", "cuda" },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static struct ingero_api *apis;
static size_t napis;

static int has_name(const char *names, const char *name)
{
	size_t len = strlen(name);
	const char *p;

	for (p = names; (p = strstr(p, name)); p += len)
		if (p[-1] == ' ' && p[len] == ' ')
			return 1;
	return 0;
}

/*
 * The first size_t named like a byte count is the call's byte count; a later
 * one (cuMemSetAccess's count of descriptors) is only a number.
 */
static uint32_t arg_kind(const struct ingero_api *api, const char *type, const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kind_rules); i++) {
		const struct kind_rule *r = &kind_rules[i];

		if (strcmp(r->type, type) || (r->names && !has_name(r->names, name)))
			continue;
		if (r->kind == INGERO_ARG_SIZE && ingero_api_arg(api, INGERO_ARG_SIZE) >= 0)
			return INGERO_ARG_INT;
		return r->kind;
	}
	return type[strlen(type) - 1] == '*' ? INGERO_ARG_PTR : INGERO_ARG_INT;
}

/* [s, e) without the blanks around it, copied; the table keeps it for the process's life. */
static char *trimmed(const char *s, const char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	return strndup(s, e - s);
}

/* Splits "TYPE NAME" in [s, e) at the name, the identifier it ends with. */
static int split_decl(const char *s, const char *e, char **type, char **name)
{
	const char *n;

	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	for (n = e; n > s && (isalnum((unsigned char)n[-1]) || n[-1] == '_'); n--)
		;
	if (n == e || n == s)
		return -1;
	*type = trimmed(s, n);
	*name = trimmed(n, e);
	return *type && *name ? 0 : -1;
}

static int lookup_role(const char *s, size_t len)
{
	int r;

	for (r = 0; r < INGERO_NR_ROLES; r++)
		if (strlen(ingero_role_name(r)) == len && !strncmp(ingero_role_name(r), s, len))
			return r;
	return -1;
}

/* "SET ROLE: RET NAME(TYPE NAME, ...)" */
static int parse(struct ingero_api *api, const char *line)
{
	const char *sp = strchr(line, ' '), *colon = strchr(line, ':'), *open, *close, *p;
	char *set;
	size_t i;
	int role, set_index;

	if (!sp || !colon || colon < sp || !(open = strchr(colon, '(')) || !(close = strrchr(open, ')')))
		return -1;
	set = strndup(line, sp - line);
	set_index = set ? ingero_probe_set_index(set) : -1;
	free(set);
	role = lookup_role(sp + 1, colon - sp - 1);
	if (set_index < 0 || role < 0)
		return -1;
	api->set = ingero_cuda_sets[set_index].name;
	api->role = role;
	if (split_decl(colon + 1, open, (char **)&api->ret_type, (char **)&api->name))
		return -1;
	for (i = 0; i < ARRAY_SIZE(libs) && strcmp(libs[i].ret_type, api->ret_type); i++)
		;
	if (i == ARRAY_SIZE(libs))
		return -1;
	api->lib = libs[i].lib;

	for (p = open + 1; p < close && api->nargs < INGERO_MAX_ARGS; p++) {
		const char *end = memchr(p, ',', close - p);
		struct ingero_arg *arg = &api->args[api->nargs];

		if (!end)
			end = close;
		if (end - p == 4 && !strncmp(p, "void", 4))
			break;
		if (split_decl(p, end, (char **)&arg->type, (char **)&arg->name))
			return -1;
		arg->kind = arg_kind(api, arg->type, arg->name);
		api->nargs++;
		p = end;
	}
	return 0;
}

const struct ingero_api *ingero_probe_apis(size_t *nr)
{
	size_t i;

	if (!apis) {
		struct ingero_api *t = calloc(ingero_cuda_nprotos, sizeof(*t));

		if (!t)
			return NULL;
		for (i = 0; i < ingero_cuda_nprotos; i++)
			if (parse(&t[i], ingero_cuda_protos[i])) {
				error("probes/cuda-protos.c: cannot read '%s'", ingero_cuda_protos[i]);
				return NULL;
			}
		apis = t;
		napis = ingero_cuda_nprotos;
	}
	*nr = napis;
	return apis;
}

const char *ingero_probe_prototype(const struct ingero_api *api)
{
	const char *colon;

	if (!apis || api < apis || api >= apis + napis)
		return NULL;
	colon = strchr(ingero_cuda_protos[api - apis], ':');
	return colon + 2;
}

const struct ingero_probe_set *ingero_probe_sets(size_t *nsets)
{
	*nsets = ingero_cuda_nsets;
	return ingero_cuda_sets;
}

int ingero_probe_set_index(const char *name)
{
	size_t i;

	for (i = 0; i < ingero_cuda_nsets; i++)
		if (!strcmp(ingero_cuda_sets[i].name, name))
			return (int)i;
	return -1;
}

int ingero_probe_api_set(const struct ingero_api *api)
{
	return ingero_probe_set_index(api->set);
}

uint32_t ingero_probe_api_flags(const struct ingero_api *api, int with_returns)
{
	int set = ingero_probe_api_set(api);

	return set >= 0 && ingero_cuda_sets[set].entry_only && !with_returns ? INGERO_API_ENTRY_ONLY : 0;
}

int ingero_probe_sets_parse(const char *list, uint64_t *mask)
{
	const char *p = list, *end;
	uint64_t m = 0;
	size_t i;

	do {
		char name[64];
		int idx;

		end = strchrnul(p, ',');
		if ((size_t)(end - p) >= sizeof(name) || end == p)
			return error("bad probe set list '%s' (names separated by commas: see 'ingero probes')", list);
		memcpy(name, p, end - p);
		name[end - p] = '\0';
		if (!strcmp(name, "all") || !strcmp(name, "default")) {
			for (i = 0; i < ingero_cuda_nsets; i++)
				if (name[0] == 'a' || ingero_cuda_sets[i].by_default)
					m |= 1ULL << i;
		} else if ((idx = ingero_probe_set_index(name)) >= 0) {
			m |= 1ULL << idx;
		} else {
			return error("unknown probe set '%s' ('ingero probes' lists them)", name);
		}
		p = end + 1;
	} while (*end);
	*mask = m;
	return 0;
}
