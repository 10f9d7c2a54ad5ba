/*
 * exit-status [-s SIG] CODE: one cudaMalloc (never freed) and one launch,
 * then exits with CODE, or with -s dies of signal SIG.
 *   exit-status cudaMalloc=1 cudaLaunchKernel=1 code=CODE      (or signal=SIG)
 */
#include <signal.h>
#include <unistd.h>
#include "workload.h"

int main(int argc, char **argv)
{
	int opt, sig = 0, code;
	void *p;

	while ((opt = getopt(argc, argv, "s:")) != -1) {
		if (opt != 's')
			return 129;
		sig = (int)number(optarg, "SIG");
	}
	code = (int)number(argv[optind], "CODE");
	CALL(cudaMalloc, (&p, 1 << 20));
	CALL(cudaLaunchKernel, (KERNEL, kernel_grid(0), one_block, NULL, 0, NULL));
	if (sig) {
		report("exit-status", "signal=%d", sig);
		signal(sig, SIG_DFL);
		raise(sig);
		return 1;	/* a signal that does not kill */
	}
	report("exit-status", "code=%d", code);
	return code;
}
