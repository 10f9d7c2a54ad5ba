/*
 * threads [-s] T N: T threads (named wl-thread-I), each making N rounds of
 * cudaMalloc(4096), cudaLaunchKernel, cudaFree, then one cudaStreamSynchronize.
 * With -s it stops itself (SIGSTOP) first, its libraries mapped, for a test
 * to act before the threads start; with -c it makes one cudaStreamSynchronize
 * before it stops. With -w the threads start at once but make their calls
 * only once a line comes on standard input: a test can attach to a process
 * whose threads exist already.
 *   threads cudaMalloc=T*N cudaLaunchKernel=T*N cudaFree=T*N cudaStreamSynchronize=T threads=T
 */
#include <signal.h>
#include "workload.h"

static unsigned long rounds;
static pthread_barrier_t go;
static int wait_go;

static void *worker(void *arg)
{
	unsigned long i;
	char name[16];

	snprintf(name, sizeof(name), "wl-thread-%lu", (unsigned long)(uintptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	if (wait_go)
		pthread_barrier_wait(&go);
	for (i = 0; i < rounds; i++) {
		void *p;

		CALL(cudaMalloc, (&p, 4096));
		CALL(cudaLaunchKernel, (KERNEL, kernel_grid(0), one_block, NULL, 0, NULL));
		CALL(cudaFree, (p));
	}
	CALL(cudaStreamSynchronize, (NULL));
	return NULL;
}

int main(int argc, char **argv)
{
	int flag = argc > 1 && (!strcmp(argv[1], "-s") || !strcmp(argv[1], "-c") || !strcmp(argv[1], "-w"));
	unsigned long t = number(argc > 1 + flag ? argv[1 + flag] : NULL, "T"), i;
	pthread_t *tids = calloc(t, sizeof(*tids));

	rounds = number(argc > 2 + flag ? argv[2 + flag] : NULL, "N");
	if (flag && argv[1][1] == 'c')
		CALL(cudaStreamSynchronize, (NULL));
	wait_go = flag && argv[1][1] == 'w';
	if (wait_go)
		pthread_barrier_init(&go, NULL, t + 1);
	else if (flag)
		raise(SIGSTOP);
	for (i = 0; i < t; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
	if (wait_go) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
		pthread_barrier_wait(&go);
	}
	for (i = 0; i < t; i++)
		pthread_join(tids[i], NULL);
	report("threads", "threads=%lu", t);
	free(tids);
	return 0;
}
