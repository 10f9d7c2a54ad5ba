/*
 * Device memory: allocations and frees, the live bytes over time and what
 * was never freed. A nest of calls (cudaMalloc around cuMemAlloc_v2) counts
 * once, under the outermost allocating call, with its pointer and size where
 * it has them and the inner call's where it does not.
 */
#include <stdlib.h>
#include <string.h>
#include "analysis-internal.h"

/* The buckets since the last change held the live bytes of then, all along. */
static void timeline_fill(struct ingero_analysis *a, uint32_t upto)
{
	uint32_t i;

	for (i = a->timeline_last; i <= upto && i < TIMELINE; i++)
		if (a->timeline_value > a->timeline[i])
			a->timeline[i] = a->timeline_value;
}

static void timeline_add(struct ingero_analysis *a, uint64_t ts, uint64_t bytes)
{
	uint64_t rel = ts > a->origin ? ts - a->origin : 0;
	uint32_t i;

	if (!a->timeline_width)
		a->timeline_width = 1000000;
	/* Too long for the buckets: halve their number by doubling their width. */
	while (rel / a->timeline_width >= TIMELINE) {
		a->timeline_last /= 2;
		for (i = 0; i < TIMELINE / 2; i++)
			a->timeline[i] = a->timeline[2 * i] > a->timeline[2 * i + 1] ?
				a->timeline[2 * i] : a->timeline[2 * i + 1];
		memset(a->timeline + TIMELINE / 2, 0, sizeof(a->timeline) / 2);
		a->timeline_width *= 2;
	}
	i = (uint32_t)(rel / a->timeline_width);
	timeline_fill(a, i);
	if (bytes > a->timeline[i])
		a->timeline[i] = bytes;
	a->timeline_last = i;
	a->timeline_value = bytes;
}

static void apply(struct ingero_analysis *a, const struct memop *op)
{
	struct ingero_analysis_memory *m = &a->mem;
	struct ingero_analysis_mem_api *ma = &a->mem_apis[op->api];
	struct live_alloc *l;
	int fresh, was_kept;

	if (op->role == INGERO_ROLE_ALLOC) {
		if (op->in_window) {
			m->alloc_calls++;
			ma->allocs++;
		}
		if (!op->ok)
			return;
		if (op->in_window) {
			m->alloc_bytes += op->size;
			ma->alloc_bytes += op->size;
		}
		if (!op->ptr) {
			m->unknown_ptr_allocs += op->in_window;
			return;
		}
		l = amap_put(&a->live, op->ptr, &fresh);
		if (!l)
			return;
		/* The same pointer again without a free seen: the old block is gone. */
		was_kept = !fresh && l->in_window;
		if (was_kept)
			a->live_bytes -= l->size;
		*l = (struct live_alloc){ .size = op->size, .ts = op->ts, .api = op->api, .tid = op->tid,
					  .in_window = op->in_window };
		if (!op->in_window && !was_kept)
			return;
		if (op->in_window)
			a->live_bytes += op->size;
		if (a->live_bytes > m->peak_bytes) {
			m->peak_bytes = a->live_bytes;
			m->peak_at = op->ts;
		}
	} else {
		if (op->in_window) {
			m->free_calls++;
			ma->frees++;
		}
		if (!op->ok)
			return;
		if (!op->ptr) {
			m->null_frees += op->in_window;
			return;
		}
		l = amap_get(&a->live, op->ptr);
		if (!l) {
			m->untracked_frees += op->in_window;
			return;
		}
		if (op->in_window) {
			m->free_bytes += l->size;
			ma->free_bytes += l->size;
		}
		was_kept = l->in_window;
		if (was_kept)
			a->live_bytes -= l->size;
		amap_del(&a->live, op->ptr);
		if (!was_kept)
			return;
	}
	timeline_add(a, op->ts, a->live_bytes);
}

static void op_of(const struct ingero_analysis *a, const struct ingero_call *c, int in_window, struct memop *op)
{
	uint32_t role = a->opts.apis[c->api].role;
	int32_t si = a->size_arg[c->api], pi = a->ptr_arg[c->api];

	*op = (struct memop){
		.valid = 1, .ok = c->ret == 0, .in_window = in_window, .role = role, .api = c->api,
		.tid = (int32_t)c->tid, .parent = c->parent, .ts = c->end_ns,
		.ptr = role == INGERO_ROLE_ALLOC ? c->out : pi >= 0 ? c->args[pi] : 0,
		.size = role == INGERO_ROLE_ALLOC && si >= 0 ? c->args[si] : 0,
	};
}

/* op stands for the nest that inner belongs to: the pointer and size it lacks are inner's, if inner succeeded. */
static void absorb(struct memop *op, const struct memop *inner)
{
	if (!op->ptr && inner->ok)
		op->ptr = inner->ptr;
	if (!op->size)
		op->size = inner->size;
}

void mem_nest(struct ingero_analysis *a, struct thread *t, const struct ingero_call *c, int in_window)
{
	uint32_t role = a->opts.apis[c->api].role;
	int is_mem = role == INGERO_ROLE_ALLOC || role == INGERO_ROLE_FREE;
	struct memop *p = &t->pending, op;

	if (p->valid && p->parent == c->id) {
		if (is_mem && role == p->role) {
			op_of(a, c, in_window, &op);
			absorb(&op, p);
			p->valid = 0;
			goto place;
		}
		apply(a, p);
		p->valid = 0;
	}
	if (!is_mem)
		return;
	op_of(a, c, in_window, &op);
	/* A call of the same kind inside the same one (a retry after a failure): one nest, counted once. */
	if (p->valid && op.parent && p->parent == op.parent && p->role == op.role) {
		if (!op.ok && p->ok)
			return;
		absorb(&op, p);
		p->valid = 0;
	}
place:
	if (!op.parent) {
		apply(a, &op);
		return;
	}
	if (p->valid)
		apply(a, p);
	*p = op;
}

static int by_ts(const void *x, const void *y)
{
	const struct ingero_analysis_alloc *p = x, *q = y;

	return p->ts < q->ts ? -1 : p->ts > q->ts ? 1 : p->ptr < q->ptr ? -1 : p->ptr > q->ptr;
}

void mem_finish(struct ingero_analysis *a)
{
	struct ingero_analysis_memory *m = &a->mem;
	struct thread **t;
	struct live_alloc *l;
	size_t pos = 0;
	uint64_t key, n = 0;
	uint32_t i;

	while ((t = amap_next(&a->threads, &pos, &key)))
		if ((*t)->pending.valid) {
			apply(a, &(*t)->pending);
			(*t)->pending.valid = 0;
		}
	m->live_bytes_end = a->live_bytes;
	free(m->unfreed);
	m->unfreed = malloc((a->live.n + 1) * sizeof(*m->unfreed));
	/* a block the window's calls did not allocate is tracked only to match its free */
	for (pos = 0; m->unfreed && (l = amap_next(&a->live, &pos, &key));)
		if (l->in_window)
			m->unfreed[n++] = (struct ingero_analysis_alloc){
				.ptr = key, .size = l->size, .ts = l->ts, .api = l->api, .tid = l->tid,
			};
	m->nunfreed = n;
	if (n)
		qsort(m->unfreed, n, sizeof(*m->unfreed), by_ts);
	free(m->apis);
	m->apis = malloc((a->opts.napis + 1) * sizeof(*m->apis));
	m->napis = 0;
	for (i = 0; m->apis && i < a->opts.napis; i++)
		if (a->mem_apis[i].allocs || a->mem_apis[i].frees)
			m->apis[m->napis++] = a->mem_apis[i];
	if (a->timeline_width && a->last_key > a->origin)
		timeline_fill(a, (uint32_t)((a->last_key - a->origin) / a->timeline_width));
	free(m->timeline);
	m->timeline = malloc(TIMELINE * sizeof(*m->timeline));
	m->ntimeline = 0;
	for (i = 0; m->timeline && i < TIMELINE && a->timeline_width; i++)
		if (a->origin + (uint64_t)i * a->timeline_width <= a->last_key) {
			m->timeline[i].ts = a->origin + (uint64_t)i * a->timeline_width;
			m->timeline[i].bytes = a->timeline[i];
			m->ntimeline = i + 1;
		}
}
