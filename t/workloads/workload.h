/*
 * What the workloads share: CALL() makes a CUDA call, dies on an unexpected
 * result and counts it, so that the line a workload prints at the end,
 * "NAME api=count ... key=value", is what it did, never what it meant to do.
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda-stub.h"

#define MAX_TALLY 64

static struct {
	pthread_mutex_t lock;
	const char *api[MAX_TALLY];
	unsigned long count[MAX_TALLY];
	int nr;
} tally_table = { PTHREAD_MUTEX_INITIALIZER };

static inline void tally(const char *api, int got, int want)
{
	int i;

	if (got != want) {
		fprintf(stderr, "%s returned %d, not %d\n", api, got, want);
		exit(1);
	}
	pthread_mutex_lock(&tally_table.lock);
	for (i = 0; i < tally_table.nr && strcmp(tally_table.api[i], api); i++)
		;
	if (i == tally_table.nr && i < MAX_TALLY)
		tally_table.api[tally_table.nr++] = api;
	if (i < MAX_TALLY)
		tally_table.count[i]++;
	pthread_mutex_unlock(&tally_table.lock);
}

/* CALL(cudaMalloc, (&p, size)): must succeed; EXPECT(cudaMalloc, (&p, huge), 2): must return 2. */
#define CALL(api, args) tally(#api, (int)api args, 0)
#define EXPECT(api, args, want) tally(#api, (int)api args, (want))

/* Prints "NAME api=count ..." in order of first call, then what fmt adds. */
__attribute__((format(printf, 2, 3)))
static inline void report(const char *name, const char *fmt, ...)
{
	va_list ap;
	int i;

	printf("%s", name);
	for (i = 0; i < tally_table.nr; i++)
		printf(" %s=%lu", tally_table.api[i], tally_table.count[i]);
	if (fmt && *fmt) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
}

static inline unsigned long number(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	if (!s) {
		fprintf(stderr, "missing %s\n", what);
		exit(129);
	}
	v = strtoul(s, &end, 0);
	if (!*s || *end) {
		fprintf(stderr, "%s: not a number: '%s'\n", what, s);
		exit(129);
	}
	return v;
}

static inline void sleep_ms(unsigned long ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

/* The "kernel": only its address matters; the fake GPU runs a launch for gridDim.x microseconds. */
static void kernel(void)
{
}

static const void *const KERNEL = (const void *)kernel;

static inline dim3 kernel_grid(unsigned us)
{
	dim3 g = { us, 1, 1 };

	return g;
}

static const dim3 one_block = { 32, 1, 1 };

#endif
