/* Questions about an API's table entry. */
#include "api.h"

int ingero_api_arg(const struct ingero_api *api, enum ingero_arg_kind kind)
{
	uint32_t i;

	for (i = 0; i < api->nargs; i++)
		if (api->args[i].kind == kind)
			return (int)i;
	return -1;
}

const char *ingero_role_name(enum ingero_api_role role)
{
	static const char *const names[INGERO_NR_ROLES] = {
		[INGERO_ROLE_OTHER] = "other",
		[INGERO_ROLE_ALLOC] = "alloc",
		[INGERO_ROLE_FREE] = "free",
		[INGERO_ROLE_COPY] = "copy",
		[INGERO_ROLE_MEMSET] = "memset",
		[INGERO_ROLE_LAUNCH] = "launch",
		[INGERO_ROLE_GRAPH] = "graph",
		[INGERO_ROLE_SYNC] = "sync",
		[INGERO_ROLE_VMM] = "vmm",
	};

	return role < INGERO_NR_ROLES ? names[role] : "unknown";
}
