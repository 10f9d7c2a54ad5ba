/*
 * Latency percentiles in bounded memory: a log-bucket sketch whose buckets
 * are 1/64 of a power of two wide. A bucket stands for the mean of its
 * values: within 1/64 of any value in it, and exact when they are all equal.
 */
#include "analysis-internal.h"

uint32_t sketch_bucket(uint64_t v)
{
	int o;

	if (v < SKETCH_SUB)
		return (uint32_t)v;
	o = 63 - __builtin_clzll(v);
	if (o >= SKETCH_OCTAVES)
		return SKETCH_BUCKETS - 1;
	return (uint32_t)((o - 5) * SKETCH_SUB + ((v >> (o - 6)) & (SKETCH_SUB - 1)));
}

uint64_t sketch_low(uint32_t b)
{
	uint32_t o = b / SKETCH_SUB + 5;

	if (b < SKETCH_SUB)
		return b;
	return (uint64_t)(SKETCH_SUB + b % SKETCH_SUB) << (o - 6);
}

uint64_t sketch_mid(uint32_t b)
{
	uint32_t o = b / SKETCH_SUB + 5;

	if (b < 2 * SKETCH_SUB)
		return sketch_low(b);
	return sketch_low(b) + ((uint64_t)1 << (o - 7));
}

void sketch_add(uint64_t *sketch, uint64_t v)
{
	uint32_t b = sketch_bucket(v);

	sketch[b]++;
	sketch[SKETCH_BUCKETS + b] += v;
}

uint64_t sketch_value(const uint64_t *sketch, uint32_t b)
{
	return sketch[b] ? sketch[SKETCH_BUCKETS + b] / sketch[b] : sketch_mid(b);
}

uint64_t sketch_quantile(const uint64_t *sketch, uint64_t n, double q, uint64_t min, uint64_t max)
{
	uint64_t rank = (uint64_t)(q * (double)n), seen = 0, v;
	uint32_t b;

	if (!n)
		return 0;
	if ((double)rank < q * (double)n)
		rank++;
	if (rank <= 1)
		return min;
	if (rank >= n)
		return max;
	for (b = 0; b < SKETCH_BUCKETS; b++) {
		seen += sketch[b];
		if (seen >= rank)
			break;
	}
	v = sketch_value(sketch, b < SKETCH_BUCKETS ? b : SKETCH_BUCKETS - 1);
	return v < min ? min : v > max ? max : v;
}
