/*
 * Seeded random traces for the format's unit tests: events of every stream
 * with every field exercised, written to a memfd, and the expected merge order.
 */
#ifndef FORMAT_GEN_H
#define FORMAT_GEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../../lib/trace.h"

static uint64_t gen_state;

static uint64_t rnd(void)
{
	gen_state += 0x9e3779b97f4a7c15ull;
	uint64_t z = gen_state;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

/* Values that stress every code width: small, large, the extremes. */
static uint64_t rnd_value(void)
{
	static const uint64_t edge[] = { 0, 1, UINT64_MAX, 0x8000000000000000ull, 0x7fffffffffffffffull,
					 0xffffffffull, 0x100000000ull };

	switch (rnd_below(6)) {
	case 0: return edge[rnd_below(sizeof(edge) / sizeof(edge[0]))];
	case 1: return rnd();
	case 2: return rnd_below(300);
	case 3: return 0x7f0000000000ull + (rnd_below(64) << 20);
	default: return 0;
	}
}

static const char *const gen_comms[] = {
	"python3", "pt_main_thread", "journald", "kworker/0:1", "", "cuda-EvtHandlr",
	"a-comm-of-15ch.", "ksoftirqd/1", "nvidia-modeset", "bash",
};
#define NCOMMS (sizeof(gen_comms) / sizeof(gen_comms[0]))

static const char *rnd_comm(void)
{
	return rnd_below(50) ? gen_comms[rnd_below(NCOMMS)] : NULL;
}

/*
 * A switch's comm for tid on cpu: the idle task (tid 0) mostly has its
 * CPU's name, which the writer leaves out below the header's 8 CPUs, and
 * never none: a NULL one would read back as that name.
 */
static const char *switch_comm(int32_t tid, uint32_t cpu)
{
	static char idle[64][INGERO_COMM_LEN];
	const char *comm = rnd_comm();

	if (tid)
		return comm;
	if (rnd_below(4)) {
		snprintf(idle[cpu], sizeof(idle[cpu]), "swapper/%u", cpu);
		return idle[cpu];
	}
	return comm ? comm : "swapper";
}

struct gen {
	struct ingero_event *ev;	/* grouped by stream, each stream in key order */
	size_t n;
};

/* One event of stream s at key t; seq numbers the stream's events so that equal keys keep their order. */
static void gen_event(struct ingero_event *e, unsigned s, uint64_t t, uint64_t seq)
{
	unsigned i;

	memset(e, 0, sizeof(*e));
	e->stream = s;
	switch (s) {
	case INGERO_STREAM_CALL:
	case INGERO_STREAM_OPEN:
		e->call.end_ns = t;
		e->ts = t - rnd_below(rnd_below(4) ? 20000 : t + 1);
		e->call.pid = 100 + (uint32_t)rnd_below(3);
		e->call.tid = rnd_below(8) ? e->call.pid + (uint32_t)rnd_below(10) : (uint32_t)rnd();
		e->call.cpu = (uint32_t)rnd_below(rnd_below(20) ? 8 : 4096);
		e->call.api = (uint32_t)rnd_below(40);
		for (i = 0; i < INGERO_MAX_ARGS; i++)
			e->call.args[i] = rnd_value();
		e->call.ret = rnd_below(10) ? 0 : rnd_value();
		e->call.out = rnd_below(4) ? 0 : rnd_value();
		e->call.parent = rnd_below(2) ? 0 : rnd_value();
		break;
	case INGERO_STREAM_SWITCH:
		e->ts = t;
		e->sw.cpu = (uint32_t)rnd_below(rnd_below(10) ? 8 : 64);
		e->sw.prev_tid = (int32_t)rnd_below(40) - 1;
		e->sw.next_tid = rnd_below(30) ? (int32_t)rnd_below(rnd_below(4) ? 40 : 1) : (int32_t)rnd();
		e->sw.prev_prio = rnd_below(10) ? 120 : (int32_t)rnd();
		e->sw.next_prio = rnd_below(10) ? 120 : -1;
		e->sw.prev_state = rnd_below(2) ? 0x1 : rnd_below(4) ? 0x100 : (uint32_t)rnd();
		e->sw.prev_comm = switch_comm(e->sw.prev_tid, e->sw.cpu);
		e->sw.next_comm = switch_comm(e->sw.next_tid, e->sw.cpu);
		break;
	case INGERO_STREAM_WAKEUP:
		e->ts = t;
		e->wakeup.cpu = (uint32_t)rnd_below(8);
		e->wakeup.target_cpu = (uint32_t)rnd_below(8);
		e->wakeup.waker_tid = (int32_t)rnd_below(40);
		e->wakeup.wakee_tid = (int32_t)rnd();
		e->wakeup.wakee_prio = (int32_t)rnd_below(140) - 20;
		e->wakeup.wakee_comm = rnd_comm();
		break;
	case INGERO_STREAM_TASK:
		e->ts = t;
		e->task.kind = (uint32_t)rnd_below(4);
		e->task.pid = (uint32_t)rnd_below(1000);
		e->task.tid = (uint32_t)rnd();
		e->task.child_pid = e->task.kind == INGERO_TASK_FORK ? (uint32_t)rnd() : 0;
		e->task.child_tid = e->task.kind == INGERO_TASK_FORK ? (uint32_t)rnd() : 0;
		e->task.comm = rnd_comm();
		break;
	case INGERO_STREAM_LOST:
		e->ts = t;
		e->lost.cpu = (uint32_t)rnd_below(8);
		e->lost.end_ns = t + rnd_below(1000000);
		e->lost.count = rnd_value();
		break;
	case INGERO_STREAM_LIB:
		e->ts = t;
		e->lib.id = (uint32_t)seq;
		e->lib.pid = (uint32_t)rnd_below(5000);
		e->lib.probes = (uint32_t)rnd_below(100);
		e->lib.missing = (uint32_t)rnd_below(3);
		e->lib.path = rnd_below(2) ? "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04" :
			"/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13";
		e->lib.build_id = rnd_below(2) ? "" : "5f1e2d3c4b5a69788796a5b4c3d2e1f001234567";
		break;
	}
}

/*
 * counts[s] events per stream over span ns from t0 (with runs of equal
 * keys); the events are in stream order, sorted, and the writer's add order
 * interleaves the streams at random.
 */
static void gen_trace(struct gen *g, uint64_t seed, const size_t counts[INGERO_NR_STREAMS], uint64_t t0,
		      uint64_t span)
{
	size_t s, i, total = 0, at = 0;

	gen_state = seed;
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		total += counts[s];
	g->ev = calloc(total ? total : 1, sizeof(*g->ev));
	g->n = total;
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		uint64_t t = t0;
		for (i = 0; i < counts[s]; i++) {
			if (rnd_below(5))
				t += rnd_below(2 * span / (counts[s] + 1) + 1);
			gen_event(&g->ev[at++], (unsigned)s, t, i);
		}
	}
}

/* Writes g's events into a new memfd, streams interleaved at random; returns the fd. */
static int gen_write(const struct gen *g, const struct ingero_header *h, int close_it)
{
	size_t pos[INGERO_NR_STREAMS] = { 0 }, start[INGERO_NR_STREAMS] = { 0 }, end[INGERO_NR_STREAMS] = { 0 };
	size_t i, left = g->n;
	int fd = memfd_create("trace", 0);
	struct ingero_writer *w = ingero_writer_new(fd, h);

	if (!w)
		return -1;
	for (i = 0; i < g->n; i++)
		end[g->ev[i].stream] = i + 1;
	for (i = g->n; i-- > 0;)
		start[g->ev[i].stream] = i;
	for (i = 0; i < INGERO_NR_STREAMS; i++)
		pos[i] = start[i];
	while (left) {
		unsigned s = (unsigned)rnd_below(INGERO_NR_STREAMS), k;
		size_t burst = 1 + rnd_below(rnd_below(2) ? 4 : 64);

		/* mostly the stream that is furthest behind, as a recorder reading its buffers would */
		if (rnd_below(4))
			for (k = 0; k < INGERO_NR_STREAMS; k++)
				if (pos[k] < end[k] && (pos[s] >= end[s] ||
							ingero_event_key(&g->ev[pos[k]]) < ingero_event_key(&g->ev[pos[s]])))
					s = k;

		while (burst-- && pos[s] < end[s]) {
			if (ingero_writer_add(w, &g->ev[pos[s]++]))
				return -1;
			left--;
		}
	}
	if (close_it ? ingero_writer_close(w) : 0)
		return -1;
	return fd;
}

/*
 * The order the reader returns: by key, equal keys by stream, a stream's
 * events as added. keep[s] (NULL: all) is how many of stream s to take.
 * Free the array with free().
 */
static struct ingero_event *gen_merged(const struct gen *g, const size_t *keep, size_t *n)
{
	size_t pos[INGERO_NR_STREAMS], end[INGERO_NR_STREAMS], i, s, out = 0;
	struct ingero_event *m = calloc(g->n ? g->n : 1, sizeof(*m));

	for (s = 0; s < INGERO_NR_STREAMS; s++)
		pos[s] = end[s] = 0;
	for (i = 0; i < g->n; i++)
		end[g->ev[i].stream] = i + 1;
	for (i = g->n; i-- > 0;)
		pos[g->ev[i].stream] = i;
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (keep && end[s] > pos[s] + keep[s])
			end[s] = pos[s] + keep[s];
	for (;;) {
		int best = -1;

		for (s = 0; s < INGERO_NR_STREAMS; s++)
			if (pos[s] < end[s] && (best < 0 || ingero_event_key(&g->ev[pos[s]]) <
						ingero_event_key(&g->ev[pos[best]])))
				best = (int)s;
		if (best < 0)
			break;
		m[out++] = g->ev[pos[best]++];
	}
	*n = out;
	return m;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* 1 when the events are equal field for field, strings by content. */
static int event_eq(const struct ingero_event *a, const struct ingero_event *b)
{
	if (a->stream != b->stream || a->ts != b->ts)
		return 0;
	switch (a->stream) {
	case INGERO_STREAM_CALL:
	case INGERO_STREAM_OPEN:
		return !memcmp(&a->call, &b->call, sizeof(a->call));
	case INGERO_STREAM_SWITCH:
		return a->sw.cpu == b->sw.cpu && a->sw.prev_tid == b->sw.prev_tid &&
			a->sw.next_tid == b->sw.next_tid && a->sw.prev_prio == b->sw.prev_prio &&
			a->sw.next_prio == b->sw.next_prio && a->sw.prev_state == b->sw.prev_state &&
			str_eq(a->sw.prev_comm, b->sw.prev_comm) && str_eq(a->sw.next_comm, b->sw.next_comm);
	case INGERO_STREAM_WAKEUP:
		return a->wakeup.cpu == b->wakeup.cpu && a->wakeup.target_cpu == b->wakeup.target_cpu &&
			a->wakeup.waker_tid == b->wakeup.waker_tid && a->wakeup.wakee_tid == b->wakeup.wakee_tid &&
			a->wakeup.wakee_prio == b->wakeup.wakee_prio &&
			str_eq(a->wakeup.wakee_comm, b->wakeup.wakee_comm);
	case INGERO_STREAM_TASK:
		return a->task.kind == b->task.kind && a->task.pid == b->task.pid && a->task.tid == b->task.tid &&
			a->task.child_pid == b->task.child_pid && a->task.child_tid == b->task.child_tid &&
			str_eq(a->task.comm, b->task.comm);
	case INGERO_STREAM_LOST:
		return !memcmp(&a->lost, &b->lost, sizeof(a->lost));
	case INGERO_STREAM_LIB:
		return a->lib.id == b->lib.id && a->lib.pid == b->lib.pid && a->lib.probes == b->lib.probes &&
			a->lib.missing == b->lib.missing && str_eq(a->lib.path, b->lib.path) &&
			str_eq(a->lib.build_id, b->lib.build_id);
	}
	return 0;
}

static const struct ingero_api gen_apis[] = {
	{ "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2,
	  { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } },
	{ "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1,
	  { { "void *", "devPtr", INGERO_ARG_DEVPTR } } },
	{ "cuLaunchKernel", "cuda", "launch", "CUresult", INGERO_ROLE_LAUNCH, 0, { { 0 } } },
};

static const struct ingero_header gen_header = {
	.start_ns = 1000, .realtime_ns = 1700000000000000000ull, .ncpus = 8,
	.host = "gpu-box", .kernel = "6.18.0", .clock = "mono", .boot_id = "0f0e0d0c-1111-2222-3333-444455556666",
	.command = "python3 repro.py --steps 10", .napis = 3, .apis = gen_apis,
};

#endif
