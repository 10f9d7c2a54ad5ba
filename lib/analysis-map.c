/* The analysis engine's hash map: u64 keys, fixed-size values, open addressing with linear probing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "analysis-internal.h"

#define EMPTY UINT64_MAX

static inline size_t slot_of(const struct amap *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key & (m->cap - 1);
}

int amap_init(struct amap *m, size_t vsize, size_t cap)
{
	size_t i;

	m->vsize = vsize;
	m->cap = cap;
	m->n = 0;
	m->keys = malloc(cap * sizeof(*m->keys));
	m->vals = calloc(cap, vsize);
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		return -1;
	}
	for (i = 0; i < cap; i++)
		m->keys[i] = EMPTY;
	return 0;
}

void amap_release(struct amap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void *amap_get(const struct amap *m, uint64_t key)
{
	size_t i = slot_of(m, key);

	for (;; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals + i * m->vsize;
		if (m->keys[i] == EMPTY)
			return NULL;
	}
}

/*
 * Doubles the table: the state it holds grew, so this happens a logarithmic
 * number of times. Out of line, so that amap_put() saves fewer registers.
 */
static __attribute__((noinline)) int grow(struct amap *m)
{
	struct amap bigger;
	size_t i;

	if (amap_init(&bigger, m->vsize, m->cap * 2))
		return -1;
	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (m->keys[i] == EMPTY)
			continue;
		for (j = slot_of(&bigger, m->keys[i]); bigger.keys[j] != EMPTY; j = (j + 1) & (bigger.cap - 1))
			;
		bigger.keys[j] = m->keys[i];
		memcpy(bigger.vals + j * m->vsize, m->vals + i * m->vsize, m->vsize);
	}
	bigger.n = m->n;
	amap_release(m);
	*m = bigger;
	return 0;
}

void *amap_put(struct amap *m, uint64_t key, int *fresh)
{
	size_t i;

	if (key == EMPTY) {
		errno = EINVAL;
		return NULL;
	}
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m))
		return NULL;
	for (i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			if (fresh)
				*fresh = 0;
			return m->vals + i * m->vsize;
		}
		if (m->keys[i] == EMPTY)
			break;
	}
	m->keys[i] = key;
	m->n++;
	memset(m->vals + i * m->vsize, 0, m->vsize);
	if (fresh)
		*fresh = 1;
	return m->vals + i * m->vsize;
}

/* Backward-shift deletion, so that no tombstones slow the lookups of a long trace. */
void amap_del(struct amap *m, uint64_t key)
{
	size_t i = slot_of(m, key), j;

	for (; m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == EMPTY)
			return;
	for (j = i;;) {
		size_t home;

		j = (j + 1) & (m->cap - 1);
		if (m->keys[j] == EMPTY)
			break;
		home = slot_of(m, m->keys[j]);
		/* Move j into the hole at i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		memcpy(m->vals + i * m->vsize, m->vals + j * m->vsize, m->vsize);
		i = j;
	}
	m->keys[i] = EMPTY;
	m->n--;
}

/* Visits the entries in table order: *pos starts at 0. NULL at the end. */
void *amap_next(const struct amap *m, size_t *pos, uint64_t *key)
{
	for (; *pos < m->cap; ++*pos)
		if (m->keys[*pos] != EMPTY) {
			*key = m->keys[*pos];
			return m->vals + (*pos)++ * m->vsize;
		}
	return NULL;
}
