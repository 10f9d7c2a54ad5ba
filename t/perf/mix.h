/*
 * A seeded synthetic mix of what a PyTorch training step traces, made one
 * event at a time so that a trace of any length costs no memory: two threads
 * calling CUDA (runtime calls with the driver's call nested inside, copies,
 * syncs, a few allocations), context switches among 40 tasks on 8 CPUs and
 * the wakeups before them. About 150k events per second of trace. As in a
 * recorded trace, the two libraries probed and the python process's start
 * open it and its threads' exits close it, so that five streams are read.
 */
#ifndef PERF_MIX_H
#define PERF_MIX_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/trace.h"

/* The APIs of the mix: what a PyTorch training step calls. */
enum { RT_LAUNCH, DRV_LAUNCH, RT_LASTERR, RT_MEMCPY, DRV_MEMCPY, RT_SYNC, DRV_SYNC, RT_MALLOC, RT_FREE, NAPIS };
static const struct ingero_api mix_apis[NAPIS] = {
	[RT_LAUNCH] = { "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 6, { { 0 } } },
	[DRV_LAUNCH] = { "cuLaunchKernel", "cuda", "launch", "CUresult", INGERO_ROLE_LAUNCH, 6, { { 0 } } },
	[RT_LASTERR] = { "cudaGetLastError", "cudart", "other", "cudaError_t", INGERO_ROLE_OTHER, 0, { { 0 } } },
	[RT_MEMCPY] = { "cudaMemcpyAsync", "cudart", "copy", "cudaError_t", INGERO_ROLE_COPY, 5, { { 0 } } },
	[DRV_MEMCPY] = { "cuMemcpyDtoHAsync_v2", "cuda", "copy", "CUresult", INGERO_ROLE_COPY, 4, { { 0 } } },
	[RT_SYNC] = { "cudaStreamSynchronize", "cudart", "sync", "cudaError_t", INGERO_ROLE_SYNC, 1, { { 0 } } },
	[DRV_SYNC] = { "cuStreamSynchronize", "cuda", "sync", "CUresult", INGERO_ROLE_SYNC, 1, { { 0 } } },
	[RT_MALLOC] = { "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2,
			{ { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } },
	[RT_FREE] = { "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1,
		      { { "void *", "devPtr", INGERO_ARG_DEVPTR } } },
};

#define MIX_START_NS 1000000000ull
#define MIX_NCPUS 8
#define MIX_NTASKS 40
#define MIX_NTHREADS 2		/* the ones that call CUDA: tasks 0 and 3 */
#define MIX_NPYTHON 12		/* tasks 0 to 11: the python process and its threads */
#define MIX_PENDING 256	/* events made but not returned yet: those of the last few us */

static const struct ingero_header mix_header = {
	.start_ns = MIX_START_NS, .realtime_ns = 1700000000000000000ull, .ncpus = MIX_NCPUS, .host = "bench",
	.kernel = "6.18.0", .clock = "mono", .boot_id = "b", .command = "python3 train.py",
	.napis = NAPIS, .apis = mix_apis,
};

struct mix_task {
	int32_t tid, prio;
	uint32_t cpu;
	int running;
	char comm[INGERO_COMM_LEN];
};

struct mix {
	uint64_t rng, left;	/* events still to make */
	struct mix_task tasks[MIX_NTASKS];
	char idle[MIX_NCPUS][INGERO_COMM_LEN];
	uint64_t cpu_next[MIX_NCPUS], last_wake;
	int cpu_task[MIX_NCPUS];
	uint64_t thread_next[MIX_NTHREADS], call_id, kern[48];
	struct ingero_event pending[MIX_PENDING];	/* sorted by key, the earliest last */
	unsigned npending;
};

static uint64_t mix_rnd(struct mix *m)
{
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t mix_below(struct mix *m, uint64_t n) { return mix_rnd(m) % n; }

/* An exponential inter-arrival time with this mean, in ns. */
static uint64_t mix_expo(struct mix *m, double mean)
{
	double u = (double)(mix_rnd(m) >> 11) / 9007199254740992.0;

	return 1 + (uint64_t)(-log(1.0 - u) * mean);
}

/* A fresh event, kept until every event with an earlier key has been returned. */
static struct ingero_event *mix_push(struct mix *m, uint32_t stream, uint64_t ts)
{
	struct ingero_event *e;

	if (m->npending == MIX_PENDING)
		abort();
	e = &m->pending[m->npending++];
	memset(e, 0, sizeof(*e));
	e->stream = stream;
	e->ts = ts;
	if (m->left)
		m->left--;
	return e;
}

/* Sorts the pending events by key, the earliest last: those just made find their place. */
static void mix_settle(struct mix *m)
{
	unsigned i, j;

	for (i = 1; i < m->npending; i++) {
		struct ingero_event t = m->pending[i];

		for (j = i; j > 0 && ingero_event_key(&m->pending[j - 1]) < ingero_event_key(&t); j--)
			m->pending[j] = m->pending[j - 1];
		m->pending[j] = t;
	}
}

/* The libraries probed and the python process's start: its comm, then its threads' forks. */
static void mix_start(struct mix *m)
{
	static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
					    "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13" };
	struct ingero_event *e;
	uint32_t i;

	for (i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		e = mix_push(m, INGERO_STREAM_LIB, MIX_START_NS - 2000000 + i * 300000);
		e->lib = (struct ingero_lib){ .id = i, .probes = i ? 180 : 420, .path = libs[i], .build_id = "" };
	}
	for (i = 0; i < MIX_NPYTHON; i++) {
		e = mix_push(m, INGERO_STREAM_TASK, MIX_START_NS - 1000000 + i * 40000);
		e->task.pid = 4000;
		e->task.tid = i ? 4000 : 3990;
		e->task.kind = i ? INGERO_TASK_FORK : INGERO_TASK_COMM;
		e->task.child_pid = 4000;
		e->task.child_tid = m->tasks[i].tid;
		e->task.comm = m->tasks[i].comm;
	}
	mix_settle(m);
}

/* The python threads' exits, after every event made (whose keys are below the next times): the last events. */
static void mix_end(struct mix *m)
{
	uint64_t t = m->thread_next[0] > m->thread_next[1] ? m->thread_next[0] : m->thread_next[1];
	struct ingero_event *e;
	uint32_t i;

	for (i = 0; i < MIX_NCPUS; i++)
		t = m->cpu_next[i] > t ? m->cpu_next[i] : t;
	for (i = 0; i < MIX_NPYTHON; i++) {
		e = mix_push(m, INGERO_STREAM_TASK, t + i * 15000);
		e->task.kind = INGERO_TASK_EXIT;
		e->task.pid = 4000;
		e->task.tid = m->tasks[MIX_NPYTHON - 1 - i].tid;
		e->task.comm = m->tasks[MIX_NPYTHON - 1 - i].comm;
	}
	mix_settle(m);
}

/* Ready to make N events from the seed; a stream of them begins at MIX_START_NS. */
static void mix_init(struct mix *m, uint64_t n, uint64_t seed)
{
	static const char *const names[] = { "journald", "sshd", "containerd", "dockerd", "rsyslogd", "cron",
					     "node_exporter", "kubelet" };
	int i;

	memset(m, 0, sizeof(*m));
	m->rng = seed;
	m->left = n;
	for (i = 0; i < MIX_NTASKS; i++) {
		struct mix_task *t = &m->tasks[i];

		t->tid = 4000 + i * 7;
		t->prio = 120;
		t->cpu = i % MIX_NCPUS;
		if (i < MIX_NPYTHON) {
			snprintf(t->comm, sizeof(t->comm), "%s", i == 0 ? "python3" : i < 4 ? "pt_main_thread" :
				 i < 6 ? "cuda-EvtHandlr" : "python3");
		} else if (i < 28) {
			snprintf(t->comm, sizeof(t->comm), "kworker/%d:%d", i % MIX_NCPUS, i / MIX_NCPUS);
			t->prio = 100;
		} else {
			snprintf(t->comm, sizeof(t->comm), "%s", names[i % 8]);
		}
	}
	for (i = 0; i < MIX_NCPUS; i++) {
		m->cpu_next[i] = MIX_START_NS + mix_expo(m, 120000);
		m->cpu_task[i] = -1;
		snprintf(m->idle[i], sizeof(m->idle[i]), "swapper/%d", i);
	}
	m->thread_next[0] = MIX_START_NS;
	m->thread_next[1] = MIX_START_NS + 5000;
	m->call_id = 1;
	for (i = 0; i < 48; i++)
		m->kern[i] = 0x7f3b12000000ull + mix_below(m, 1 << 20) * 16;
	mix_start(m);
}

/* The next context switch, on the CPU whose turn it is, with the wakeup that often precedes it. */
static void mix_sched(struct mix *m, int c)
{
	uint64_t t = m->cpu_next[c];
	int prev = m->cpu_task[c], nt;
	struct mix_task *tasks = m->tasks;
	struct ingero_event *e;

	/* the next task: often a python thread, else any task not running elsewhere; or idle */
	do
		nt = mix_below(m, 3) ? (int)mix_below(m, MIX_NPYTHON) : (int)mix_below(m, MIX_NTASKS);
	while (tasks[nt].running && nt != prev);
	if (nt == prev || mix_below(m, 6) == 0)
		nt = -1;
	if (nt >= 0 && mix_below(m, 10) < 7) {
		uint64_t wt = t - 1000 - mix_below(m, 4000);

		e = mix_push(m, INGERO_STREAM_WAKEUP, wt > m->last_wake ? wt : m->last_wake);
		m->last_wake = e->ts;
		e->wakeup.cpu = mix_below(m, 4) ? (uint32_t)c : (uint32_t)mix_below(m, MIX_NCPUS);
		e->wakeup.waker_tid = m->cpu_task[e->wakeup.cpu] >= 0 ? tasks[m->cpu_task[e->wakeup.cpu]].tid : 0;
		e->wakeup.wakee_tid = tasks[nt].tid;
		e->wakeup.wakee_prio = tasks[nt].prio;
		e->wakeup.wakee_comm = tasks[nt].comm;
		e->wakeup.target_cpu = mix_below(m, 8) ? tasks[nt].cpu : (uint32_t)c;
	}
	e = mix_push(m, INGERO_STREAM_SWITCH, t);
	e->sw.cpu = c;
	e->sw.prev_tid = prev >= 0 ? tasks[prev].tid : 0;
	e->sw.prev_prio = prev >= 0 ? tasks[prev].prio : 120;
	e->sw.prev_comm = prev >= 0 ? tasks[prev].comm : m->idle[c];
	e->sw.prev_state = prev < 0 ? 0 : mix_below(m, 10) < 6 ? INGERO_STATE_SLEEPING :
		mix_below(m, 10) < 7 ? INGERO_STATE_PREEMPTED : mix_below(m, 2) ? INGERO_STATE_DISK : 0;
	e->sw.next_tid = nt >= 0 ? tasks[nt].tid : 0;
	e->sw.next_prio = nt >= 0 ? tasks[nt].prio : 120;
	e->sw.next_comm = nt >= 0 ? tasks[nt].comm : m->idle[c];
	mix_settle(m);
	if (prev >= 0)
		tasks[prev].running = 0;
	if (nt >= 0) {
		tasks[nt].running = 1;
		tasks[nt].cpu = c;
	}
	m->cpu_task[c] = nt;
	m->cpu_next[c] = t + mix_expo(m, 120000);
}

static uint64_t mix_devptr(struct mix *m)
{
	return 0x7f3a40000000ull + (mix_below(m, 512) << 21);
}

static void mix_args(struct mix *m, struct ingero_event *e, unsigned api)
{
	uint64_t *a = e->call.args;

	switch (api) {
	case RT_LAUNCH:
	case DRV_LAUNCH:
		a[0] = m->kern[mix_below(m, mix_below(m, 4) ? 8 : 48)];
		a[1] = mix_below(m, 3) ? 1024 : 80 + mix_below(m, 4) * 128;
		a[2] = 1;
		a[3] = api == RT_LAUNCH ? 0x7ffd2a1c3000ull + mix_below(m, 16) * 64 : 1;
		a[4] = mix_below(m, 2) ? 256 : 128;
		a[5] = api == RT_LAUNCH ? 0x55d1c3a0e000ull : 1;
		break;
	case RT_MEMCPY:
	case DRV_MEMCPY:
		a[0] = mix_devptr(m);
		a[1] = mix_devptr(m);
		a[2] = 4096ull << mix_below(m, 8);
		a[3] = 2;
		if (api == RT_MEMCPY)
			a[4] = 0x55d1c3a0e000ull;
		break;
	case RT_SYNC:
	case DRV_SYNC:
		a[0] = 0x55d1c3a0e000ull;
		break;
	case RT_MALLOC:
		a[0] = 0x7ffd2a1c3f00ull;
		a[1] = 2ull << (20 + mix_below(m, 6));
		e->call.out = mix_devptr(m);
		break;
	case RT_FREE:
		a[0] = mix_devptr(m);
		break;
	}
}

/* The next runtime call of thread th, and the driver's call inside it: launches, copies, syncs. */
static void mix_call(struct mix *m, int th)
{
	uint64_t t = m->thread_next[th], d;
	unsigned outer, inner, r = (unsigned)mix_below(m, 1000);
	struct ingero_event *o, *in;

	outer = r < 700 ? RT_LAUNCH : r < 850 ? RT_LASTERR : r < 950 ? RT_MEMCPY : r < 990 ? RT_SYNC :
		r < 995 ? RT_MALLOC : RT_FREE;
	if (th == 1 && outer == RT_LAUNCH)
		outer = RT_MEMCPY;
	inner = outer == RT_LAUNCH ? DRV_LAUNCH : outer == RT_MEMCPY ? DRV_MEMCPY :
		outer == RT_SYNC ? DRV_SYNC : NAPIS;
	d = outer == RT_LAUNCH ? 3500 + mix_expo(m, 1500) : outer == RT_LASTERR ? 150 + mix_below(m, 100) :
		outer == RT_MEMCPY ? 6000 + mix_expo(m, 4000) : outer == RT_SYNC ? 50000 + mix_expo(m, 800000) :
		20000 + mix_expo(m, 100000);
	o = mix_push(m, INGERO_STREAM_CALL, t);
	o->call.end_ns = t + d;
	o->call.id = m->call_id++;
	o->call.pid = 4000;
	o->call.tid = m->tasks[th ? 3 : 0].tid;
	o->call.cpu = mix_below(m, 20) ? (uint32_t)th * 3 : (uint32_t)mix_below(m, MIX_NCPUS);
	o->call.api = outer;
	o->call.ret = mix_below(m, 2000) ? 0 : 700;
	mix_args(m, o, outer);
	m->thread_next[th] = o->call.end_ns + (th ? mix_expo(m, 200000) : 1500 + mix_expo(m, 22000));
	if (inner != NAPIS) {
		in = mix_push(m, INGERO_STREAM_CALL, t + 800 + mix_below(m, 400));
		in->call = o->call;
		in->call.end_ns = o->call.end_ns - 300 - mix_below(m, 200);
		in->call.id = m->call_id++;
		in->call.parent = o->call.id;
		in->call.api = inner;
		memset(in->call.args, 0, sizeof(in->call.args));
		mix_args(m, in, inner);
	}
	mix_settle(m);
}

/*
 * The next event in the order a recorder adds them, by key (the nested call
 * returns first); 0 once all N are out. The comms point into m.
 */
static int mix_next(struct mix *m, struct ingero_event *ev)
{
	while (m->left) {
		int c, i, th = m->thread_next[1] < m->thread_next[0];
		uint64_t made = m->thread_next[th];

		for (c = 0, i = 1; i < MIX_NCPUS; i++)
			if (m->cpu_next[i] < m->cpu_next[c])
				c = i;
		if (m->cpu_next[c] < made)
			made = m->cpu_next[c];
		/* an event made from now on has a later key, but for a wakeup's few us */
		if (m->npending && ingero_event_key(&m->pending[m->npending - 1]) + 5000 <= made)
			break;
		if (m->left <= MIX_NPYTHON)
			mix_end(m);
		else if (m->cpu_next[c] < m->thread_next[th])
			mix_sched(m, c);
		else
			mix_call(m, th);
	}
	if (!m->npending)
		return 0;
	*ev = m->pending[--m->npending];
	return 1;
}

#endif
