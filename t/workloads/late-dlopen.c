/*
 * late-dlopen [-d MS] [-g MS] [-w] [-n NAME] N: a program with no CUDA at start;
 * after -d milliseconds (default 300) it takes the name NAME, if given (a
 * moment the kernel stamps), and dlopen()s liblate.so from its own folder,
 * whose RUNPATH $ORIGIN/late is the only way to its libcudart.so.13 (and that
 * one's RUNPATH $ORIGIN to libcuda.so.1), and makes N rounds of cudaMalloc and
 * cudaFree: -g milliseconds later (default 0), or with -w once a line comes on
 * standard input. The build lays out bin/late/ so that bin/late-dlopen runs; a test
 * that wants the runtime where no usual search path finds it copies
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

int main(int argc, char **argv)
{
	unsigned long n, ms = 300, gap = 0;
	char self[PATH_MAX], lib[PATH_MAX + 16], *slash;
	int (*late_run)(unsigned long);
	void *h, *sym;
	Dl_info info;
	ssize_t len;
	char line[16];
	const char *name = NULL;
	int opt, e, wait_line = 0;

	while ((opt = getopt(argc, argv, "d:g:wn:")) != -1) {
		if (opt == 'd')
			ms = number(optarg, "MS");
		else if (opt == 'g')
			gap = number(optarg, "MS");
		else if (opt == 'n')
			name = optarg;
		else if (opt == 'w')
			wait_line = 1;
		else
			return 129;
	}
	n = number(argv[optind], "N");
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
