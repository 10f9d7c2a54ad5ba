/*
 * late-dlopen [-d MS] [-g MS] [-w] [-n NAME] [-s DRIVER] N: a program with no
 * CUDA at start (with -s, it first loads the driver at the path DRIVER and
 * calls cuCtxSynchronize: a program that uses CUDA already, whose runtime
 * then shares that driver); after -d milliseconds (default 300) it takes the
 * name NAME, if given (a moment the kernel stamps), and dlopen()s liblate.so
 * from its own folder, whose RUNPATH $ORIGIN/late is the only way to its
 * libcudart.so.13 (and that one's RUNPATH $ORIGIN to libcuda.so.1), and makes
 * N rounds of cudaMalloc and cudaFree: -g milliseconds later (default 0), or
 * with -w once a line comes on standard input. The build lays out bin/late/ so
 * that bin/late-dlopen runs; a test that wants the runtime where no usual search path finds it copies
 *     late-dlopen liblate.so          to DIR/
 *     libcudart.so.13 libcuda.so.1    to DIR/late/
 * and runs DIR/late-dlopen.
 *   late-dlopen cudaMalloc=N cudaFree=N delay_ms=MS runtime=PATH
 */
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>
#include <sys/prctl.h>
#include "workload.h"

/* Loads the driver at path and synchronises its context once. */
static int driver_sync(const char *path)
{
	void *drv = dlopen(path, RTLD_NOW);
	CUresult (*sync)(void) = drv ? (CUresult (*)(void))dlsym(drv, "cuCtxSynchronize") : NULL;

	if (!sync) {
		fprintf(stderr, "%s: %s\n", path, dlerror());
		return 1;
	}
	return sync() != CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
	unsigned long n, ms = 300, gap = 0;
	char self[PATH_MAX], lib[PATH_MAX + 16], *slash;
	int (*late_run)(unsigned long);
	void *h, *sym;
	Dl_info info;
	ssize_t len;
	char line[16];
	const char *name = NULL, *driver = NULL;
	int opt, e, wait_line = 0;

	while ((opt = getopt(argc, argv, "d:g:wn:s:")) != -1) {
		if (opt == 'd')
			ms = number(optarg, "MS");
		else if (opt == 'g')
			gap = number(optarg, "MS");
		else if (opt == 'n')
			name = optarg;
		else if (opt == 'w')
			wait_line = 1;
		else if (opt == 's')
			driver = optarg;
		else
			return 129;
	}
	n = number(argv[optind], "N");
	if (driver && driver_sync(driver))
		return 1;
	sleep_ms(ms);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		perror("/proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(lib, sizeof(lib), "%s/liblate.so", self);
	if (name)
		prctl(PR_SET_NAME, name);
	h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	*(void **)&late_run = dlsym(h, "late_run");
	sym = dlsym(h, "cudaMalloc");
	if (!late_run || !sym || !dladdr(sym, &info)) {
		fprintf(stderr, "liblate.so: %s\n", dlerror());
		return 1;
	}
	sleep_ms(gap);
	if (wait_line && !fgets(line, sizeof(line), stdin))
		return 1;
	e = late_run(n);
	if (e) {
		fprintf(stderr, "late_run failed: %d\n", e);
		return 1;
	}
	printf("late-dlopen cudaMalloc=%lu cudaFree=%lu delay_ms=%lu runtime=%s\n", n, n, ms, info.dli_fname);
	return 0;
}
