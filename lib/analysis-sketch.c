/*
 * Latency percentiles in bounded memory: a log-bucket sketch whose buckets
 * are 1/64 of a power of two wide. A bucket stands for the mean of its
 * values: within 1/64 of any value in it, and exact when they are all equal.
 */
#include "analysis-internal.h"

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

uint64_t sketch_value(const struct bucket *sketch, uint32_t b)
{
	return sketch[b].n ? sketch[b].sum / sketch[b].n : sketch_mid(b);
}

uint64_t sketch_quantile(const struct bucket *sketch, uint64_t n, double q, uint64_t min, uint64_t max)
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
		seen += sketch[b].n;
		if (seen >= rank)
			break;
	}
	v = sketch_value(sketch, b < SKETCH_BUCKETS ? b : SKETCH_BUCKETS - 1);
	return v < min ? min : v > max ? max : v;
}
