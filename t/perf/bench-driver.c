/*
 * The program the benchmarks trace: cudaLaunchKernel in a tight loop, at a
 * set rate, or a realistic mix of calls over threads, against the stand-ins.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../workloads/cuda-stub.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A null function, which the driver rejects at once: the loop then costs the
 * two calls and their probes, not the fake GPU's queue and its wake-ups.
 */
static int launch_null(void)
{
	dim3 one = { 1, 1, 1 };

	return cudaLaunchKernel(NULL, one, one, NULL, 0, NULL) == cudaErrorInvalidResourceHandle ? 0 : -1;
}

static int loop(unsigned long n)
{
	unsigned long i, bad = 0;
	uint64_t t0 = now_ns(), t;

	for (i = 0; i < n; i++)
		bad += launch_null();
	t = now_ns() - t0;
	printf("mode=loop calls=%lu bad=%lu ns=%llu ns_per_call=%.1f\n", n, bad, (unsigned long long)t,
	       n ? (double)t / n : 0.0);
	return bad ? 1 : 0;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * The loop for tracers attached in turn: for secs seconds, a line per chunk
 * of at least 10 ms, "chunk END_NS NS_PER_CALL CALLS", stamped on the wall
 * clock that the harness's windows are read on.
 */
static int chunks(unsigned long secs)
{
	uint64_t end = now_ns() + secs * 1000000000ULL, t0, t;
	unsigned long calls, i, bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	for (t0 = now_ns(); t0 < end; t0 = t) {
		calls = 0;
		do {
			for (i = 0; i < 64; i++)
				bad += launch_null();
			calls += i;
			t = now_ns();
		} while (t - t0 < 10000000);
		printf("chunk %llu %.1f %lu\n", (unsigned long long)wall_ns(), (double)(t - t0) / calls, calls);
	}
	return bad ? 1 : 0;
}

struct pacer {
	pthread_t thread;
	unsigned long n, bad, late;
	double rate;
	uint64_t t0, ns;
};

/* Call i is due at t0 + i/rate; the wait spins, as a sleep this short would oversleep. */
static void *pace(void *arg)
{
	struct pacer *p = arg;
	unsigned long i;

	for (i = 0; i < p->n; i++) {
		uint64_t due = p->t0 + (uint64_t)(i * 1e9 / p->rate);

		if (now_ns() > due + 1000000)
			p->late++;
		while (now_ns() < due)
			;
		p->bad += launch_null();
	}
	p->ns = now_ns() - p->t0;
	return NULL;
}

/* n calls at rate per second in all, shared by nthreads threads that start together. */
static int paced(unsigned long n, double rate, unsigned nthreads)
{
	struct pacer *p = calloc(nthreads, sizeof(*p));
	unsigned long bad = 0, late = 0;
	uint64_t t0 = now_ns() + 1000000, t = 0;
	unsigned i;

	if (!p)
		return 1;
	for (i = 0; i < nthreads; i++) {
		p[i] = (struct pacer){ .n = n / nthreads + (i < n % nthreads), .rate = rate / nthreads, .t0 = t0 };
		pthread_create(&p[i].thread, NULL, pace, &p[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(p[i].thread, NULL);
		bad += p[i].bad;
		late += p[i].late;
		if (p[i].ns > t)
			t = p[i].ns;
	}
	printf("mode=paced calls=%lu threads=%u bad=%lu late=%lu ns=%llu rate=%.0f\n", n, nthreads, bad, late,
	       (unsigned long long)t, t ? n * 1e9 / t : 0.0);
	free(p);
	return bad ? 1 : 0;
}

/* The mix: xorshift, so that every run makes the same calls. */
static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

struct worker {
	pthread_t thread;
	unsigned iters;
	uint32_t seed;
	unsigned long calls;
	int failed;
};

static void gap(uint32_t *seed, unsigned max_us)
{
	struct timespec ts = { 0, (long)(next_rand(seed) % max_us) * 1000 };

	nanosleep(&ts, NULL);
}

#define CHECK(w, call) do { (w)->calls++; if ((call) != cudaSuccess) (w)->failed = 1; } while (0)

/* Allocations of varied sizes, copies both ways, launches of varied length, a sync, gaps. */
static void *mix_worker(void *arg)
{
	struct worker *w = arg;
	static char host[1 << 16];
	dim3 block = { 128, 1, 1 };
	cudaStream_t stream;
	unsigned i, k;

	CHECK(w, cudaStreamCreate(&stream));
	for (i = 0; i < w->iters; i++) {
		size_t size = 256 + next_rand(&w->seed) % sizeof(host);
		unsigned nlaunch = 1 + next_rand(&w->seed) % 8;
		void *dev;

		CHECK(w, cudaMalloc(&dev, size));
		CHECK(w, cudaMemcpyAsync(dev, host, size, cudaMemcpyHostToDevice, stream));
		for (k = 0; k < nlaunch; k++) {
			dim3 grid = { next_rand(&w->seed) % 20, 1, 1 };

			CHECK(w, cudaLaunchKernel((void *)mix_worker, grid, block, NULL, 0, stream));
		}
		CHECK(w, cudaMemcpyAsync(host, dev, size, cudaMemcpyDeviceToHost, stream));
		CHECK(w, cudaStreamSynchronize(stream));
		CHECK(w, cudaFree(dev));
		if (next_rand(&w->seed) % 4 == 0)
			gap(&w->seed, 200);
	}
	CHECK(w, cudaStreamDestroy(stream));
	return NULL;
}

/* Tasks that only sleep and wake, so that the CPUs switch among a few dozen of them. */
static volatile int noise_stop;

static void *noise(void *arg)
{
	uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u | 1;

	while (!noise_stop) {
		volatile unsigned spin = next_rand(&seed) % 2000;

		while (spin)
			spin--;
		gap(&seed, 1000);
	}
	return NULL;
}

static int mix(unsigned iters, unsigned nworkers, unsigned nnoise)
{
	struct worker *w = calloc(nworkers, sizeof(*w));
	pthread_t *nt = calloc(nnoise, sizeof(*nt));
	unsigned long calls = 0;
	unsigned i, failed = 0;

	if (!w || !nt)
		return 1;
	for (i = 0; i < nnoise; i++)
		pthread_create(&nt[i], NULL, noise, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < nworkers; i++) {
		w[i].iters = iters;
		w[i].seed = 0x9e3779b9u * (i + 1);
		pthread_create(&w[i].thread, NULL, mix_worker, &w[i]);
	}
	for (i = 0; i < nworkers; i++) {
		pthread_join(w[i].thread, NULL);
		calls += w[i].calls;
		failed += w[i].failed;
	}
	noise_stop = 1;
	for (i = 0; i < nnoise; i++)
		pthread_join(nt[i], NULL);
	printf("mode=mix calls=%lu threads=%u noise=%u bad=%u\n", calls, nworkers, nnoise, failed);
	free(w);
	free(nt);
	return failed ? 1 : 0;
}

static unsigned long arg_num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "bench-driver: '%s' is not a number\n", s);
		exit(129);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "loop"))
		return loop(arg_num(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "chunks"))
		return chunks(arg_num(argv[2]));
	if ((argc == 4 || (argc == 5 && arg_num(argv[4]))) && !strcmp(argv[1], "paced") && arg_num(argv[3]))
		return paced(arg_num(argv[2]), arg_num(argv[3]), argc == 5 ? arg_num(argv[4]) : 1);
	if (argc == 5 && !strcmp(argv[1], "mix"))
		return mix(arg_num(argv[2]), arg_num(argv[3]), arg_num(argv[4]));
	fprintf(stderr, "usage: bench-driver loop CALLS\n"
		"       bench-driver chunks SECONDS\n"
		"       bench-driver paced CALLS RATE [THREADS]\n"
		"       bench-driver mix ITERATIONS THREADS NOISE_THREADS\n");
	return 129;
}
