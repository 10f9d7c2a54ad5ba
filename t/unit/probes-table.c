/* The probe table read from probes/cuda-protos.c: libraries, roles, argument kinds, sets, fetch arguments. */
#include <string.h>
#include "tap.h"
#include "../../lib/error.h"
#include "../../probes/probes.h"

static const struct ingero_api *find(const struct ingero_api *apis, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(apis[i].name, name))
			return &apis[i];
	return NULL;
}

static void check_fetchargs(const struct ingero_api *api, int is_return, int arrays, const char *want)
{
	char buf[4096];

	ok(api && !ingero_probe_fetchargs(api, is_return, arrays, buf, sizeof(buf)) && !strcmp(buf, want),
	   "%s %s%s: %s", api ? api->name : "?", is_return ? "return" : "entry", arrays ? " (arrays)" : "",
	   api ? buf : "missing");
}

int main(void)
{
	size_t n, nsets, i;
	const struct ingero_api *apis = ingero_probe_apis(&n), *a;
	const struct ingero_probe_set *sets = ingero_probe_sets(&nsets);
	uint64_t mask;
	unsigned words, per_field;
	char small[16], buf[4096];
	int bad = 0;

	ok(apis && n > 60, "the table parses: %zu APIs", n);
	for (i = 0; apis && i < n; i++)
		if ((strcmp(apis[i].lib, "cudart") && strcmp(apis[i].lib, "cuda")) ||
		    !strcmp(apis[i].lib, "cudart") != !strncmp(apis[i].name, "cuda", 4) ||
		    ingero_probe_api_set(&apis[i]) < 0 || !ingero_probe_prototype(&apis[i]))
			bad++;
	is_u64(bad, 0, "every API has lib cudart (the cuda* names) or cuda, a known set and its prototype");

	a = find(apis, n, "cudaMalloc");
	ok(a && a->nargs == 2 && a->args[0].kind == INGERO_ARG_OUT_DEVPTR && a->args[1].kind == INGERO_ARG_SIZE &&
	   !strcmp(a->args[0].type, "void **") && !strcmp(a->args[0].name, "devPtr") &&
	   a->role == INGERO_ROLE_ALLOC && !strcmp(a->set, "alloc") && !strcmp(a->ret_type, "cudaError_t"),
	   "cudaMalloc(void **devPtr, size_t size): OUT_DEVPTR, SIZE, alloc");
	a = find(apis, n, "cuMemFree_v2");
	ok(a && a->nargs == 1 && a->args[0].kind == INGERO_ARG_DEVPTR && a->role == INGERO_ROLE_FREE &&
	   !strcmp(a->lib, "cuda"), "cuMemFree_v2(CUdeviceptr dptr): DEVPTR, free, driver");
	a = find(apis, n, "cuMemcpyDtoHAsync_v2");
	ok(a && a->nargs == 4 && a->args[0].kind == INGERO_ARG_PTR && a->args[1].kind == INGERO_ARG_DEVPTR &&
	   a->args[2].kind == INGERO_ARG_SIZE && a->args[3].kind == INGERO_ARG_STREAM,
	   "cuMemcpyDtoHAsync_v2: PTR, DEVPTR, SIZE, STREAM");
	a = find(apis, n, "cuMemSetAccess");
	ok(a && a->args[1].kind == INGERO_ARG_SIZE && a->args[3].kind == INGERO_ARG_INT,
	   "cuMemSetAccess: only the first size_t is the byte count");
	a = find(apis, n, "cuLaunchKernel");
	ok(a && a->nargs == 6 && a->args[0].kind == INGERO_ARG_HANDLE && a->args[1].kind == INGERO_ARG_INT &&
	   strstr(ingero_probe_prototype(a), "void **extra)"),
	   "cuLaunchKernel: six arguments kept, the whole prototype still there");
	a = find(apis, n, "cudaDeviceSynchronize");
	ok(a && a->nargs == 0 && a->role == INGERO_ROLE_SYNC, "cudaDeviceSynchronize(void): no arguments");
	ok(!find(apis, n, "cudaGetDevice") || strcmp(find(apis, n, "cudaGetDevice")->set, "getters") == 0,
	   "cudaGetDevice is in the getters set");

	ok(!ingero_probe_sets_parse("default", &mask) &&
	   !(mask & (1ULL << ingero_probe_set_index("rt-launch"))) &&
	   !(mask & (1ULL << ingero_probe_set_index("getters"))) &&
	   (mask & (1ULL << ingero_probe_set_index("launch"))) && (mask & (1ULL << ingero_probe_set_index("sync"))),
	   "default: launch and sync, not rt-launch nor getters");
	ok(!ingero_probe_sets_parse("alloc,copy", &mask) &&
	   mask == ((1ULL << ingero_probe_set_index("alloc")) | (1ULL << ingero_probe_set_index("copy"))),
	   "alloc,copy: two bits");
	ok(!ingero_probe_sets_parse("all", &mask) && mask == (1ULL << nsets) - 1, "all: every set");
	error_quiet = 1;
	ok(ingero_probe_sets_parse("alloc,nosuch", &mask) == -1 && ingero_probe_sets_parse("alloc,", &mask) == -1,
	   "an unknown set and an empty name are refused");
	error_quiet = 0;
	ok(sets && ingero_probe_set_index("nosuch") == -1, "no set named nosuch");

	ingero_probe_window(1, &words, &per_field);
	ok(words == 256 && per_field == 64, "window with arrays: 256 words in fields of 64");
	ingero_probe_window(0, &words, &per_field);
	ok(words == 64 && per_field == 1, "window without: 64 single words");
	ok(ingero_probe_fetchargs(find(apis, n, "cudaMalloc"), 1, 1, small, sizeof(small)) == -1,
	   "a buffer too small is -1");
	ok(!ingero_probe_fetchargs(find(apis, n, "cuMemAlloc_v2"), 1, 0, buf, sizeof(buf)) &&
	   strstr(buf, " w63=+504(%sp):x64") && !strstr(buf, "w64"), "without arrays: w0..w63");

#if defined(__x86_64__)
	check_fetchargs(find(apis, n, "cudaMalloc"), 0, 1, "a0=%di:x64 a1=%si:u64 sp=%sp:x64");
	check_fetchargs(find(apis, n, "cudaMalloc"), 1, 1,
			"ret=$retval:u32 sp=%sp:x64 w0=+0(%sp):x64[64] w1=+512(%sp):x64[64] "
			"w2=+1024(%sp):x64[64] w3=+1536(%sp):x64[64] "
			"c0=%bx:x64 h0=+0(%bx):x64[8] c1=%bp:x64 h1=+0(%bp):x64[8] "
			"c2=%r12:x64 h2=+0(%r12):x64[8] c3=%r13:x64 h3=+0(%r13):x64[8] "
			"c4=%r14:x64 h4=+0(%r14):x64[8] c5=%r15:x64 h5=+0(%r15):x64[8]");
	check_fetchargs(find(apis, n, "cuMemFree_v2"), 1, 1, "ret=$retval:u32");
	check_fetchargs(find(apis, n, "cuMemsetD8Async"), 0, 1, "a0=%di:x64 a1=%si:u8 a2=%dx:u64 a3=%cx:x64");
	check_fetchargs(find(apis, n, "cudaMemcpyAsync"), 0, 1,
			"a0=%di:x64 a1=%si:x64 a2=%dx:u64 a3=%cx:u32 a4=%r8:x64");
	/* dim3 by value takes two registers: sharedMem and the stream are on the stack. */
	check_fetchargs(find(apis, n, "cudaLaunchKernel"), 0, 1,
			"a0=%di:x64 a1=%si:u64 a2=%cx:u64 a3=%r9:x64 a4=+8(%sp):u64 a5=+16(%sp):x64");
	check_fetchargs(find(apis, n, "cuLaunchKernel"), 0, 1,
			"a0=%di:x64 a1=%si:u32 a2=%dx:u32 a3=%cx:u32 a4=%r8:u32 a5=%r9:u32");
	check_fetchargs(find(apis, n, "cudaDeviceSynchronize"), 0, 1, "");
#elif defined(__aarch64__)
	check_fetchargs(find(apis, n, "cudaMalloc"), 0, 1, "a0=%x0:x64 a1=%x1:u64 sp=%sp:x64");
	check_fetchargs(find(apis, n, "cudaLaunchKernel"), 0, 1,
			"a0=%x0:x64 a1=%x1:u64 a2=%x3:u64 a3=%x5:x64 a4=%x6:u64 a5=%x7:x64");
#endif
	return done_testing();
}
