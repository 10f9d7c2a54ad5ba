/*
 * The analysis engine on event sequences built here with known answers:
 * preemption, wakeup delay, sleeps in a sync, memory with nesting, losses.
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "../../lib/analysis.h"
#include "../../lib/trace.h"
#include "analysis-util.h"

#define MAX_EVENTS 4096
static struct ingero_event evs[MAX_EVENTS];
static size_t nevs;
static uint64_t next_id = 1;

static struct ingero_event *push(uint32_t stream, uint64_t ts)
{
	struct ingero_event *e = &evs[nevs++];

	memset(e, 0, sizeof(*e));
	e->stream = stream;
	e->ts = ts;
	return e;
}

static uint64_t call(uint32_t api, int32_t tid, uint64_t ts, uint64_t end, uint64_t parent,
		     uint64_t a0, uint64_t a1, uint64_t out, uint64_t ret)
{
	struct ingero_event *e = push(INGERO_STREAM_CALL, ts);

	e->call = (struct ingero_call){ .end_ns = end, .id = next_id++, .parent = parent, .pid = 100,
					.tid = (uint32_t)tid, .api = api, .args = { a0, a1 }, .out = out, .ret = ret };
	return e->call.id;
}

static void sw(uint64_t ts, uint32_t cpu, int32_t prev, uint32_t state, int32_t next)
{
	static const char *const comms[] = { "swapper/0", "app", "hog", "journald", "gpu", "other" };
	struct ingero_event *e = push(INGERO_STREAM_SWITCH, ts);

	e->sw = (struct ingero_switch){ .cpu = cpu, .prev_tid = prev, .next_tid = next, .prev_state = state,
					.prev_comm = comms[prev / 100], .next_comm = comms[next / 100] };
}

static void wake(uint64_t ts, uint32_t cpu, int32_t waker, int32_t wakee, uint32_t target)
{
	struct ingero_event *e = push(INGERO_STREAM_WAKEUP, ts);

	e->wakeup = (struct ingero_wakeup){ .cpu = cpu, .target_cpu = target, .waker_tid = waker, .wakee_tid = wakee };
}

static void fork_task(uint64_t ts, int32_t parent, int32_t child)
{
	struct ingero_event *e = push(INGERO_STREAM_TASK, ts);

	e->task = (struct ingero_task){ .kind = INGERO_TASK_FORK, .pid = 100, .tid = (uint32_t)parent,
					.child_pid = (uint32_t)child, .child_tid = (uint32_t)child, .comm = "app" };
}

/* -a: process pid's scheduling is recorded from ts on; pid 0: only that of the processes so followed. */
static void follow_task(uint64_t ts, uint32_t pid)
{
	struct ingero_event *e = push(INGERO_STREAM_TASK, ts);

	e->task = (struct ingero_task){ .kind = INGERO_TASK_FOLLOW, .pid = pid, .tid = pid };
}

static int by_key(const void *x, const void *y)
{
	const struct ingero_event *p = x, *q = y;
	uint64_t a = ingero_event_key(p), b = ingero_event_key(q);

	return a < b ? -1 : a > b ? 1 : p < q ? -1 : p > q;
}

static struct ingero_analysis *an;

/* Feeds what was pushed in the reader's order; the report lives until the next run(). */
static const struct ingero_analysis_result *run_with(const struct ingero_analysis_opts *o)
{
	size_t i;

	ingero_analysis_free(an);
	qsort(evs, nevs, sizeof(evs[0]), by_key);
	an = ingero_analysis_new(o);
	for (i = 0; i < nevs; i++)
		if (ingero_analysis_add(an, &evs[i]))
			return NULL;
	nevs = 0;
	next_id = 1;
	return ingero_analysis_finish(an);
}

static const struct ingero_analysis_result *run(void)
{
	struct ingero_analysis_opts o = { .apis = apis, .napis = NAPIS, .api = -1 };

	return run_with(&o);
}

static const struct ingero_analysis_api *row(const struct ingero_analysis_result *r, uint32_t api, int nested)
{
	uint32_t i;

	for (i = 0; i < r->napis; i++)
		if (r->apis[i].api == api && r->apis[i].nested == nested)
			return &r->apis[i];
	return NULL;
}

static const struct ingero_analysis_thread *thread_of(const struct ingero_analysis_result *r, int32_t tid)
{
	uint32_t i;

	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].task.tid == tid)
			return &r->threads[i];
	return NULL;
}

static int near(uint64_t got, uint64_t want)
{
	double d = (double)got - (double)want;

	return (d < 0 ? -d : d) <= want * INGERO_ANALYSIS_REL_ERROR + 1;
}

/* Twenty 10 us launches on CPU 0; the eighth is preempted by hog for 40 us. */
static void test_preemption(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	const struct ingero_analysis_chain *c;
	uint64_t t0 = 1000000;
	int i;

	sw(t0 - 1000, 0, 0, 0, 101);
	for (i = 0; i < 20; i++) {
		uint64_t ts = t0 + i * 100000, end = ts + 10000;

		if (i == 7) {
			sw(ts + 3000, 0, 101, INGERO_STATE_PREEMPTED, 200);
			sw(ts + 43000, 0, 200, INGERO_STATE_SLEEPING, 101);
			end += 40000;
		}
		call(LAUNCH, 101, ts, end, 0, 0, 0, 0, 0);
	}
	r = run();
	a = row(r, LAUNCH, 0);
	ok(a, "a row for the launches");
	if (!a)
		return;
	is_u64(a->calls, 20, "20 calls");
	is_u64(a->total_ns, 19 * 10000 + 50000, "total time");
	is_u64(a->split_ns[INGERO_SPLIT_PREEMPTED], 40000, "40 us preempted");
	is_u64(a->split_ns[INGERO_SPLIT_ONCPU], 200000, "the rest on CPU");
	is_u64(a->max_ns, 50000, "max");
	is_u64(a->p50_ns, 10000, "p50: exact when a bucket's values are equal");
	is_u64(a->p99_ns, 50000, "p99 is the preempted call");
	is_u64(r->nchains, 1, "one chain");
	c = &r->chains[0];
	is_u64(c->cause, INGERO_CAUSE_PREEMPTED, "cause: preempted");
	is_u64(c->severity, INGERO_SEVERITY_HIGH, "high: 40 of 240 us taken");
	is_u64(c->nculprits, 1, "one culprit");
	is_u64(c->culprits[0].task.tid, 200, "hog named");
	is_u64(c->culprits[0].ns, 40000, "40 us taken");
	is_u64(c->culprits[0].slow_calls, 1, "from one slow call");
	ok(strstr(c->summary, "1 of the 1 call >= ") && strstr(c->summary, "was preempted on CPU 0 by hog (pid 200), 40.0 us each"),
	   "verdict: %s", c->summary);
	is_u64(r->ninterferers, 1, "one interferer");
	is_u64(r->interferers[0].task.tid, 200, "hog");
	is_u64(r->interferers[0].ns, 40000, "hog took 40 us");
	is_u64(r->interferers[0].in_calls_ns, 40000, "all of it inside calls");
	is_u64(r->interferers[0].preemptions, 1, "one preemption");
	is_u64(r->interferers[0].longest_ns, 40000, "longest 40 us");
	is_u64(r->interferers[0].napis, 1, "one API hit");
	is_u64(r->interferers[0].apis[0].api, LAUNCH, "the launches");
	is_u64(r->nthreads, 1, "one traced thread (hog is not)");
	is_u64(r->threads[0].involuntary, 1, "one involuntary switch");
	is_u64(r->threads[0].voluntary, 0, "no voluntary one");
	is_u64(r->threads[0].max_delay_ns, 40000, "max delay 40 us");
	is_u64(r->threads[0].max_delay_at, t0 + 7 * 100000 + 3000, "and when");
	is_u64(r->threads[0].calls, 20, "calls of the thread");
	is_u64(r->threads[0].run_ns, r->last_ns - (t0 - 1000) - 40000, "run time: all but the 40 us");
}

/* hog slows every launch alike: no call is above the median, yet the chain names it over all calls. */
static void test_uniform_preemption(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_chain *c;
	uint64_t t0 = 1000000;
	int i;

	sw(t0 - 1000, 0, 0, 0, 101);
	for (i = 0; i < 20; i++) {
		uint64_t ts = t0 + i * 100000;

		sw(ts + 3000, 0, 101, INGERO_STATE_RUNNING, 200);
		sw(ts + 43000, 0, 200, INGERO_STATE_PREEMPTED, 101);
		call(LAUNCH, 101, ts, ts + 50000, 0, 0, 0, 0, 0);
	}
	r = run();
	is_u64(r->nchains, 1, "one chain");
	c = &r->chains[0];
	is_u64(c->scope, INGERO_SCOPE_ALL, "over all the calls");
	is_u64(c->cause, INGERO_CAUSE_PREEMPTED, "preempted");
	is_u64(c->severity, INGERO_SEVERITY_HIGH, "high: 80%% of the time taken");
	is_u64(c->taken_ns, 20 * 40000, "taken");
	is_u64(c->cost_ns, 20 * 40000, "what it took is the cost");
	is_u64(c->culprits[0].task.tid, 200, "hog");
	ok(strstr(c->summary, "20 of all 20 calls were preempted on CPU 0 by hog (pid 200), 40.0 us each") != NULL,
	   "verdict: %s", c->summary);
}

/* A sync that sleeps until the fake GPU thread wakes it; then, once, hog delays the woken thread. */
/*
 * Ten launches probed at their entries alone, 100 us apart, on CPU 0; after
 * the fifth, hog takes the CPU for 300 us: the launches have no interval to
 * show it in, so the chain is the one between calls.
 */
static void test_between_calls(void)
{
	struct ingero_api entry_only[NAPIS];
	struct ingero_analysis_opts o = { .apis = entry_only, .napis = NAPIS, .api = -1 };
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_chain *c;
	uint64_t t0 = 1000000;
	int i;

	memcpy(entry_only, apis, sizeof(entry_only));
	entry_only[LAUNCH].flags = INGERO_API_ENTRY_ONLY;
	sw(t0 - 1000, 0, 0, 0, 101);
	for (i = 0; i < 10; i++) {
		uint64_t ts = t0 + i * 100000 + (i >= 5 ? 300000 : 0);

		call(LAUNCH, 101, ts, ts, 0, 0, 0, 0, 0);
	}
	sw(t0 + 450000, 0, 101, INGERO_STATE_PREEMPTED, 200);
	sw(t0 + 750000, 0, 200, INGERO_STATE_RUNNING, 101);
	sw(t0 + 1400000, 0, 101, INGERO_STATE_SLEEPING, 0);
	r = run_with(&o);
	is_u64(r->nchains, 1, "one chain");
	c = &r->chains[0];
	is_u64(c->scope, INGERO_SCOPE_BETWEEN, "between calls");
	is_u64(c->api, LAUNCH, "the launches stand for the callers' work");
	is_u64(c->cause, INGERO_CAUSE_PREEMPTED, "preempted");
	is_u64(c->callers, 1, "one thread calls CUDA");
	is_u64(c->taken_ns, 300000, "what hog took");
	is_u64(c->wanted_ns, 1400000, "the time app wanted the CPU from its first call on: ran or runnable");
	is_u64(c->severity, INGERO_SEVERITY_HIGH, "high: 21%% of that");
	is_u64(c->culprits[0].task.tid, 200, "hog");
	ok(strstr(c->summary, "between CUDA calls, app (tid 101) lost 300 us of the 1.40 ms it wanted the CPU (21%), "
		  "preempted on CPU 0 by hog (pid 200); its 10 cudaLaunchKernel calls (timed at no end) waited "
		  "with it") != NULL, "verdict: %s", c->summary);
}

/* A child whose first switch onto a CPU the trace lacks: it ran from its fork at most, not from the trace's start. */
static void test_forked_run_time(void)
{
	const struct ingero_analysis_thread *child;
	uint64_t t0 = 5000000;

	sw(1000, 0, 0, 0, 101);
	fork_task(t0, 101, 501);
	sw(t0 + 30000, 1, 501, INGERO_STATE_SLEEPING, 0);
	call(SYNC, 101, t0 + 40000, t0 + 41000, 0, 0, 0, 0, 0);
	child = thread_of(run(), 501);
	ok(child, "the child is a traced thread");
	is_u64(child ? child->run_ns : 0, 30000, "it ran from its fork on");
}

/*
 * Ten syncs of 1 ms apart by thread 101 on CPU 0, each asleep until the GPU
 * thread (400, on CPU 1) wakes it: 90 us in, back on the CPU 3 us later,
 * returning at 100 us. The fourth is woken at woken, runs again at back and
 * returns at end (all from its start), journald (300) running on CPU 0
 * over [from, to) when to is set.
 */
static void ten_syncs(uint64_t t0, uint64_t woken, uint64_t from, uint64_t to, uint64_t back, uint64_t end)
{
	int i;

	sw(t0 - 1000, 0, 0, 0, 101);
	sw(t0 - 1000, 1, 0, 0, 400);
	for (i = 0; i < 10; i++) {
		uint64_t ts = t0 + i * 1000000;
		int slow = i == 3;

		sw(ts + 5000, 0, 101, INGERO_STATE_SLEEPING, 0);
		wake(ts + (slow ? woken : 90000), 1, 400, 101, 0);
		if (slow && to) {
			sw(ts + from, 0, 0, 0, 300);
			sw(ts + to, 0, 300, INGERO_STATE_SLEEPING, 0);
		}
		sw(ts + (slow ? back : 93000), 0, 0, 0, 101);
		call(SYNC, 101, ts, ts + (slow ? end : 100000), 0, 0, 0, 0, 0);
	}
}

static void test_sync_sleep(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	const struct ingero_analysis_chain *c;
	uint64_t t0 = 2000000;
	int i;

	sw(t0 - 1000, 0, 0, 0, 101);
	for (i = 0; i < 10; i++) {
		uint64_t ts = t0 + i * 1000000;

		sw(ts + 5000, 0, 101, INGERO_STATE_SLEEPING, 0);
		wake(ts + 90000, 1, 400, 101, 0);
		sw(ts + 93000, 0, 0, 0, 101);
		call(SYNC, 101, ts, ts + 100000, 0, 0, 0, 0, 0);
	}
	r = run();
	a = row(r, SYNC, 0);
	ok(a, "a row for the syncs");
	if (!a)
		return;
	is_u64(a->split_ns[INGERO_SPLIT_BLOCKED], 10 * 85000, "blocked 85 us each");
	is_u64(a->split_ns[INGERO_SPLIT_WAIT], 10 * 3000, "3 us of wakeup delay each");
	is_u64(a->split_ns[INGERO_SPLIT_PREEMPTED], 0, "never preempted");
	is_u64(r->ninterferers, 0, "the idle CPU is no interference");
	is_u64(r->nchains, 0, "all alike: no chain");

	sw(t0 - 1000, 0, 0, 0, 101);
	sw(t0 - 1000, 1, 0, 0, 400);
	for (i = 0; i < 10; i++) {
		uint64_t ts = t0 + i * 1000000, end = ts + 100000;

		sw(ts + 5000, 0, 101, INGERO_STATE_SLEEPING, i == 3 ? 300 : 0);
		if (i == 3)
			wake(ts + 1000000 - 300000, 1, 400, 101, 0);
		else
			wake(ts + 90000, 1, 400, 101, 0);
		if (i == 3) {
			sw(ts + 700000 + 200000, 0, 300, INGERO_STATE_PREEMPTED, 101);
			end = ts + 950000;
		} else {
			sw(ts + 93000, 0, 0, 0, 101);
		}
		call(SYNC, 101, ts, end, 0, 0, 0, 0, 0);
	}
	r = run();
	c = r->nchains ? &r->chains[0] : NULL;
	ok(c, "one slow sync: a chain");
	if (!c)
		return;
	is_u64(c->cause, INGERO_CAUSE_GPU_WAIT, "it waited for the GPU most");
	is_u64(c->severity, INGERO_SEVERITY_INFO, "info");
	is_u64(c->waker.tid, 400, "woken by the GPU thread");
	is_u64(c->slow_split_ns[INGERO_SPLIT_BLOCKED], 695000, "blocked 695 us");
	is_u64(c->slow_split_ns[INGERO_SPLIT_WAIT], 200000, "and delayed 200 us after the wakeup");
	is_u64(c->nculprits, 1, "the delay has a culprit");
	is_u64(c->culprits[0].task.tid, 300, "journald");
	is_u64(c->culprits[0].ns, 200000, "200 us of it");
	is_u64(r->interferers[0].delays, 1, "one delayed wakeup");
	is_u64(r->interferers[0].preemptions, 0, "no preemption");
	/* 200 of the 950 us were the wakeup's delay: the verdict names it rather than clearing the neighbour */
	ok(strstr(c->summary, "woken by gpu (pid 400); and 1 of them was kept off the CPU after its wakeup "
		  "on CPU 0 by journald (pid 300), 200 us each") != NULL, "verdict: %s", c->summary);
	ok(!strstr(c->summary, "not interference"), "not cleared as no interference");
	ok(strstr(c->remedy, "waited for a busy CPU") != NULL, "remedy: %s", c->remedy);

	/* The same slow sync woken at once: it only waited for the GPU. */
	ten_syncs(t0, 900000, 0, 0, 903000, 910000);
	r = run();
	c = r->nchains ? &r->chains[0] : NULL;
	ok(c && c->cause == INGERO_CAUSE_GPU_WAIT, "the slow sync waited for the GPU");
	ok(c && strstr(c->summary, "woken by gpu (pid 400); waiting, not interference") != NULL,
	   "verdict: %s", c ? c->summary : "none");
	ok(c && strstr(c->remedy, "nothing to fix on the CPU") != NULL, "remedy: %s", c ? c->remedy : "none");

	/*
	 * The slow sync waits 200 us after its wakeup again, but its CPU was
	 * idle for 195 of them: journald's 5 us are not what made it slow.
	 */
	ten_syncs(t0, 700000, 800000, 805000, 900000, 950000);
	r = run();
	c = r->nchains ? &r->chains[0] : NULL;
	ok(c && c->cause == INGERO_CAUSE_GPU_WAIT, "the slow sync waited for the GPU");
	is_u64(c ? c->slow_split_ns[INGERO_SPLIT_WAIT] : 0, 200000, "and 200 us after its wakeup");
	is_u64(c && c->nculprits ? c->culprits[0].ns : 0, 5000, "journald took 5 us of them");
	ok(c && strstr(c->summary, "woken by gpu (pid 400); waiting, not interference") != NULL,
	   "an idle CPU's delay names no neighbour: %s", c ? c->summary : "none");
}

/* Ten calls of api on a CPU of their own, 100 us each but the last, 1 ms. */
static const struct ingero_analysis_chain *ten_on_cpu(uint32_t api)
{
	const struct ingero_analysis_result *r;
	uint64_t t0 = 2000000;
	int i;

	sw(t0 - 1000, 0, 0, 0, 101);
	for (i = 0; i < 10; i++)
		call(api, 101, t0 + i * 2000000, t0 + i * 2000000 + (i == 9 ? 1000000 : 100000), 0, 0, 0, 0, 0);
	r = run();
	return r->nchains ? &r->chains[0] : NULL;
}

/* A sync that spins until the GPU is done waits for it on the CPU; a launch as slow does its own work. */
static void test_sync_spin(void)
{
	const struct ingero_analysis_chain *c = ten_on_cpu(SYNC);

	ok(c && c->cause == INGERO_CAUSE_GPU_WAIT, "the spinning sync waited for the GPU");
	is_u64(c ? c->severity : 0, INGERO_SEVERITY_INFO, "nothing to fix on the CPU");
	ok(c && strstr(c->summary, "the 1 call >= 106 us waited for the GPU, spinning on the CPU 100% of its time; "
		       "waiting, not interference") != NULL, "verdict: %s", c ? c->summary : "none");
	c = ten_on_cpu(LAUNCH);
	ok(c && c->cause == INGERO_CAUSE_ONCPU, "the slow launch did its own work");
	ok(c && strstr(c->summary, "ran on CPU 100% of its time: the call's own work") != NULL,
	   "verdict: %s", c ? c->summary : "none");
}

/* Two tasks share the CPU while the thread is runnable: each is blamed for its overlap only. */
static void test_weighting(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	uint32_t i;

	sw(500, 0, 0, 0, 101);
	sw(2000, 0, 101, INGERO_STATE_PREEMPTED, 200);
	sw(5000, 0, 200, INGERO_STATE_PREEMPTED, 500);
	sw(6000, 0, 500, INGERO_STATE_SLEEPING, 101);
	/* Switched out as R, not R+: how the kernel shows a preemption on the way back to user space. */
	sw(8000, 0, 101, INGERO_STATE_RUNNING, 200);
	sw(8500, 0, 200, INGERO_STATE_PREEMPTED, 101);
	call(LAUNCH, 101, 1000, 10000, 0, 0, 0, 0, 0);
	r = run();
	a = row(r, LAUNCH, 0);
	is_u64(a->split_ns[INGERO_SPLIT_PREEMPTED], 4500, "preempted 4.5 us, R+ and R");
	is_u64(a->split_ns[INGERO_SPLIT_ONCPU], 4500, "on CPU 4.5 us");
	is_u64(r->ninterferers, 2, "two interferers");
	for (i = 0; i < r->ninterferers; i++) {
		const struct ingero_analysis_interferer *f = &r->interferers[i];

		if (f->task.tid == 200) {
			is_u64(f->ns, 3500, "hog: 3 us, then 0.5 us");
			is_u64(f->preemptions, 2, "hog preempted twice");
		} else {
			is_u64(f->task.tid, 500, "other");
			is_u64(f->ns, 1000, "other: 1 us");
			is_u64(f->preemptions, 0, "other preempted nothing");
		}
	}
	is_u64(r->threads[0].voluntary, 0, "no voluntary switch");
	is_u64(r->threads[0].involuntary, 2, "two involuntary ones");
}

/* cudaMalloc around cuMemAlloc_v2 counts once; frees; one never freed; failures count no bytes. */
static void test_memory(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_memory *m;
	uint64_t outer;

	/* The inner call returns first; its parent's id is the next one handed out. */
	call(MEMALLOC, 101, 1100, 1900, 2, 0, 4096, 0x1000, 0);
	outer = call(MALLOC, 101, 1000, 2000, 0, 0, 4096, 0x1000, 0);
	call(MALLOC, 101, 3000, 4000, 0, 0, 8192, 0x2000, 0);
	call(FREE, 101, 5000, 6000, 0, 0x1000, 0, 0, 0);
	call(MALLOC, 101, 7000, 8000, 0, 0, 100, 0x3000, 0);
	call(MALLOC, 101, 9000, 9500, 0, 0, 1 << 30, 0, 2);
	call(FREE, 101, 10000, 10100, 0, 0, 0, 0, 0);
	call(FREE, 101, 11000, 11100, 0, 0xdead, 0, 0, 0);
	r = run();
	m = &r->memory;
	is_u64(outer, 2, "the outer call's id");
	is_u64(m->alloc_calls, 4, "four allocations (the nested one is part of its parent)");
	is_u64(m->alloc_bytes, 4096 + 8192 + 100, "bytes of the successful ones");
	is_u64(m->free_calls, 3, "three frees");
	is_u64(m->free_bytes, 4096, "one freed block");
	is_u64(m->null_frees, 1, "cudaFree(NULL)");
	is_u64(m->untracked_frees, 1, "a pointer never allocated in the trace");
	is_u64(m->peak_bytes, 4096 + 8192, "peak");
	is_u64(m->peak_at, 4000, "peak when the second block came back");
	is_u64(m->live_bytes_end, 8192 + 100, "live at the end");
	is_u64(m->nunfreed, 2, "two never freed");
	if (m->nunfreed == 2) {
		is_u64(m->unfreed[0].ptr, 0x2000, "first unfreed");
		is_u64(m->unfreed[0].size, 8192, "its size");
		is_u64(m->unfreed[1].ptr, 0x3000, "second unfreed");
		is_u64(m->unfreed[1].api, MALLOC, "by cudaMalloc");
	}
	is_u64(m->napis, 2, "two memory APIs");
	is_u64(m->apis[0].api, MALLOC, "cudaMalloc, not cuMemAlloc_v2");
	is_u64(m->apis[0].allocs, 4, "its calls");
	ok(row(r, MEMALLOC, 1) && row(r, MEMALLOC, 1)->calls == 1, "the driver call is a nested row");
	is_u64(r->traced_ns, 1000 + 1000 + 1000 + 1000 + 500 + 100 + 100, "nested time counted once");
	is_u64(r->nerrors, 1, "one error");
	is_u64(r->errors[0].code, 2, "code 2");
	is_u64(r->errors[0].api, MALLOC, "on cudaMalloc");
}

static void test_lost_and_open(void)
{
	const struct ingero_analysis_result *r;
	struct ingero_event *e;

	e = push(INGERO_STREAM_LOST, 5000);
	e->lost = (struct ingero_lost){ .cpu = 1, .end_ns = 6000, .count = 42 };
	e = push(INGERO_STREAM_LOST, 9000);
	e->lost = (struct ingero_lost){ .cpu = 1, .end_ns = 9500, .count = 8 };
	call(LAUNCH, 101, 1000, 2000, 0, 0, 0, 0, 0);
	call(LAUNCH, 101, 5500, 7000, 0, 0, 0, 0, 0);
	e = push(INGERO_STREAM_OPEN, 8000);
	e->call = (struct ingero_call){ .end_ns = 20000, .id = 99, .tid = 101, .api = SYNC };
	r = run();
	is_u64(r->lost_total, 50, "50 lost");
	is_u64(r->nlost, 1, "on one CPU");
	is_u64(r->lost[0].records, 2, "in two records");
	is_u64(r->lost[0].ns, 1500, "covering 1.5 us");
	is_u64(row(r, LAUNCH, 0)->lossy_calls, 1, "one call on a lossy stretch");
	is_u64(r->nopen, 1, "one call still open");
	is_u64(r->open[0].api, SYNC, "the sync");
	ok(!row(r, SYNC, 0), "an open call is not in the summary");
}

/* A switch-in the trace lost: the call's entry shows the thread ran from there. */
static void test_repair(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;

	sw(500, 0, 0, 0, 101);
	sw(1000, 0, 101, INGERO_STATE_SLEEPING, 0);
	wake(2000, 1, 400, 101, 1);
	call(LAUNCH, 101, 5000, 6000, 0, 0, 0, 0, 0);
	sw(7000, 1, 101, INGERO_STATE_SLEEPING, 0);
	wake(7500, 1, 400, 101, 1);
	sw(7600, 1, 0, 0, 101);
	sw(8000, 1, 101, INGERO_STATE_SLEEPING, 0);
	call(LAUNCH, 101, 7800, 9000, 0, 0, 0, 0, 0);
	r = run();
	a = row(r, LAUNCH, 0);
	is_u64(r->repaired, 2, "two switch-ins inferred");
	is_u64(a->split_ns[INGERO_SPLIT_ONCPU], 1000 + 200, "the first call ran, the second from 7.8 to 8 us");
	is_u64(a->split_ns[INGERO_SPLIT_UNKNOWN], 1000, "when the second came back is not known");
	is_u64(a->split_ns[INGERO_SPLIT_WAIT], 0, "no wait is made up");
}

/*
 * Calls that return in the ns of their thread's switch-in sort before it,
 * and wait for it while there is room to hold them: 101, woken at 4 us,
 * comes on at 5 us and makes n calls of no time there.
 */
static const struct ingero_analysis_result *calls_at_switch_in(uint32_t n)
{
	uint32_t i;

	sw(500, 0, 0, 0, 101);
	sw(1000, 0, 101, INGERO_STATE_SLEEPING, 0);
	wake(4000, 1, 400, 101, 0);
	for (i = 0; i < n; i++)
		call(LAUNCH, 101, 5000, 5000, 0, 0, 0, 0, 0);
	sw(5000, 0, 0, 0, 101);
	return run();
}

/* Up to HELD_CALLS (8) such calls wait; one more has those held taken in first, as if the switch-in were lost. */
static void test_held_calls(void)
{
	const struct ingero_analysis_result *r = calls_at_switch_in(8);
	const struct ingero_analysis_thread *t = thread_of(r, 101);

	is_u64(row(r, LAUNCH, 0)->calls, 8, "8 calls at the switch-in: all counted");
	is_u64(r->repaired, 0, "all held for the switch-in, none repaired");
	is_u64(t ? t->delay_ns : 0, 1000, "101 waited from its wakeup to the switch-in");
	r = calls_at_switch_in(9);
	t = thread_of(r, 101);
	is_u64(row(r, LAUNCH, 0)->calls, 9, "9 calls at the switch-in: all counted");
	is_u64(r->repaired, 1, "the held ones taken in before the switch-in, which counts as missing");
	is_u64(t ? t->delay_ns : 1, 0, "no wait is claimed for the time made unknown");
	is_u64(row(r, LAUNCH, 0)->split_ns[INGERO_SPLIT_ONCPU], 0, "the calls took no time");
}

/*
 * A kernel that reports no switch out of the idle task on CPU 1: thread 101,
 * woken there at 2 us, is seen running only when it wakes 102 at 3 us, and,
 * woken there again at 7 us, only when it is switched out at 9 us. When it
 * came on is not known; what it took from 102 on CPU 1 is.
 */
static void test_missed_switch_in(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_thread *t, *u;
	uint32_t i;

	sw(100, 0, 0, 0, 102);
	call(LAUNCH, 102, 200, 300, 0, 0, 0, 0, 0);
	sw(400, 0, 102, INGERO_STATE_SLEEPING, 101);
	call(LAUNCH, 101, 500, 600, 0, 0, 0, 0, 0);
	sw(1000, 0, 101, INGERO_STATE_SLEEPING, 0);
	wake(2000, 0, 0, 101, 1);
	wake(3000, 1, 101, 102, 1);
	sw(5000, 1, 101, INGERO_STATE_SLEEPING, 102);
	sw(6000, 1, 102, INGERO_STATE_SLEEPING, 0);
	wake(7000, 0, 0, 101, 1);
	sw(9000, 1, 101, INGERO_STATE_SLEEPING, 0);
	r = run();
	t = thread_of(r, 101);
	u = thread_of(r, 102);
	is_u64(r->repaired, 2, "two switch-ins inferred, from a wakeup made and from a switch-out");
	is_u64(t ? t->run_ns : 0, 600 + 2000, "101 ran from 0.4 to 1 us, and from its wakeup of 102 on");
	is_u64(t ? t->delays : 1, 0, "no wait is made up for 101");
	is_u64(u ? u->delay_ns : 0, 2000, "102 waited from 3 to 5 us");
	for (i = 0; i < r->ninterferers && r->interferers[i].task.tid != 101; i++)
		;
	is_u64(i < r->ninterferers ? r->interferers[i].ns : 0, 2000, "101 took those 2 us from 102");
}

/*
 * -a: process 100 is followed from 20 us on, the process it forks at 70 us
 * from then, process 400 never. What came before is unknown, not on CPU.
 */
static void test_follow(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	uint64_t t0 = 1000000;

	follow_task(t0, 0);
	call(LAUNCH, 101, t0 + 1000, t0 + 11000, 0, 0, 0, 0, 0);
	call(LAUNCH, 101, t0 + 15000, t0 + 25000, 0, 0, 0, 0, 0);
	follow_task(t0 + 20000, 100);
	sw(t0 + 40000, 0, 101, INGERO_STATE_PREEMPTED, 200);
	sw(t0 + 60000, 0, 200, INGERO_STATE_SLEEPING, 101);
	call(LAUNCH, 101, t0 + 30000, t0 + 80000, 0, 0, 0, 0, 0);
	/* a thread started in the followed process: followed since 20 us still */
	push(INGERO_STREAM_TASK, t0 + 35000)->task = (struct ingero_task){ .kind = INGERO_TASK_FORK, .pid = 100,
		.tid = 101, .child_pid = 100, .child_tid = 160, .comm = "app" };
	fork_task(t0 + 70000, 101, 150);
	call(LAUNCH, 150, t0 + 90000, t0 + 100000, 0, 0, 0, 0, 0);
	evs[nevs - 1].call.pid = 150;
	call(LAUNCH, 401, t0 + 90000, t0 + 95000, 0, 0, 0, 0, 0);
	evs[nevs - 1].call.pid = 400;
	r = run();
	a = row(r, LAUNCH, 0);
	ok(a, "a row for the launches");
	if (!a)
		return;
	is_u64(a->calls, 5, "5 calls");
	is_u64(a->split_ns[INGERO_SPLIT_UNKNOWN], 10000 + 5000 + 5000,
	       "unknown: the call before, the part before 20 us, the process never followed");
	is_u64(a->split_ns[INGERO_SPLIT_PREEMPTED], 20000, "20 us preempted by hog");
	is_u64(a->split_ns[INGERO_SPLIT_ONCPU], 5000 + 30000 + 10000, "on CPU only where followed");
	is_u64(r->unfollowed_calls, 3, "3 calls began before their process was followed");
	is_u64(r->repaired, 0, "nothing repaired where nothing was followed");
	is_u64(r->threads[0].task.tid, 101, "the first thread");
	is_u64(r->threads[0].run_ns, 20000 + 40000, "its run time counted from when it was followed");
}

/* -a: a thread seen leaving a CPU before its process was followed ran for an unknown time before. */
static void test_follow_late_switch(void)
{
	const struct ingero_analysis_result *r;
	uint64_t t0 = 1000000;

	follow_task(t0, 0);
	sw(t0 + 5000, 0, 101, INGERO_STATE_SLEEPING, 0);
	follow_task(t0 + 10000, 100);
	wake(t0 + 12000, 1, 0, 101, 0);
	sw(t0 + 13000, 0, 0, 0, 101);
	call(LAUNCH, 101, t0 + 14000, t0 + 15000, 0, 0, 0, 0, 0);
	r = run();
	is_u64(r->nthreads, 1, "one thread");
	is_u64(r->threads[0].run_ns, 2000, "run from its switch-in on, not before its first switch-out");
	is_u64(r->threads[0].delays, 1, "its wakeup's delay counted");
	is_u64(r->threads[0].max_delay_ns, 1000, "of 1 us");
}

/* -a: a pid followed again is another process's, followed from then on. */
static void test_follow_reused_pid(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	uint64_t t0 = 1000000;

	follow_task(t0, 0);
	follow_task(t0 + 1000, 100);
	call(LAUNCH, 101, t0 + 2000, t0 + 3000, 0, 0, 0, 0, 0);
	push(INGERO_STREAM_TASK, t0 + 4000)->task = (struct ingero_task){ .kind = INGERO_TASK_EXIT, .pid = 100,
		.tid = 101, .comm = "app" };
	push(INGERO_STREAM_TASK, t0 + 4500)->task = (struct ingero_task){ .kind = INGERO_TASK_EXIT, .pid = 100,
		.tid = 100, .comm = "app" };
	/* the process has ended; another takes its pid, 100, and is followed at 15 us */
	call(LAUNCH, 100, t0 + 10000, t0 + 12000, 0, 0, 0, 0, 0);
	follow_task(t0 + 15000, 100);
	call(LAUNCH, 100, t0 + 20000, t0 + 21000, 0, 0, 0, 0, 0);
	r = run();
	a = row(r, LAUNCH, 0);
	ok(a, "a row for the launches");
	if (!a)
		return;
	is_u64(a->split_ns[INGERO_SPLIT_UNKNOWN], 2000, "the new process's call before its follow event is unknown");
	is_u64(a->split_ns[INGERO_SPLIT_ONCPU], 1000 + 1000, "the others ran");
	is_u64(r->unfollowed_calls, 1, "one call before its process was followed");
}

/* --from/--to and --tid: only what falls inside counts. */
static void test_filters(void)
{
	struct ingero_analysis_opts o = { .apis = apis, .napis = NAPIS, .api = -1, .from_ns = 3000, .to_ns = 8000 };
	const struct ingero_analysis_result *r;

	call(LAUNCH, 101, 1000, 2000, 0, 0, 0, 0, 0);
	call(LAUNCH, 101, 4000, 5000, 0, 0, 0, 0, 0);
	call(LAUNCH, 102, 6000, 7000, 0, 0, 0, 0, 0);
	call(LAUNCH, 101, 9000, 10000, 0, 0, 0, 0, 0);
	r = run_with(&o);
	is_u64(row(r, LAUNCH, 0)->calls, 2, "two calls in the window");
	o.tid = 102;
	call(LAUNCH, 101, 4000, 5000, 0, 0, 0, 0, 0);
	call(LAUNCH, 102, 6000, 7000, 0, 0, 0, 0, 0);
	r = run_with(&o);
	is_u64(row(r, LAUNCH, 0)->calls, 1, "one of thread 102");
	is_u64(r->nthreads, 1, "one thread shown");
	is_u64(r->threads[0].task.tid, 102, "102");
}

/* Spread durations: the percentiles keep the stated bound against the exact ranks. */
static void test_percentiles(void)
{
	const struct ingero_analysis_result *r;
	const struct ingero_analysis_api *a;
	uint64_t i, t = 1000;

	for (i = 0; i < 1000; i++, t += 200000)
		call(LAUNCH, 101, t, t + 1000 + (i * 7919) % 1000 * 97, 0, 0, 0, 0, 0);
	r = run();
	a = row(r, LAUNCH, 0);
	/* The durations are 1000 + 97 k for k = 0..999, each once: rank n is 1000 + 97 (n - 1). */
	ok(near(a->p50_ns, 1000 + 97 * 499), "p50 %llu within the bound", (unsigned long long)a->p50_ns);
	ok(near(a->p90_ns, 1000 + 97 * 899), "p90 %llu within the bound", (unsigned long long)a->p90_ns);
	ok(near(a->p99_ns, 1000 + 97 * 989), "p99 %llu within the bound", (unsigned long long)a->p99_ns);
	is_u64(a->max_ns, 1000 + 97 * 999, "max exact");
}

int main(void)
{
	test_preemption();
	test_uniform_preemption();
	test_between_calls();
	test_forked_run_time();
	test_sync_sleep();
	test_sync_spin();
	test_weighting();
	test_memory();
	test_lost_and_open();
	test_filters();
	test_repair();
	test_missed_switch_in();
	test_held_calls();
	test_follow();
	test_follow_late_switch();
	test_follow_reused_pid();
	test_percentiles();
	ingero_analysis_free(an);
	return done_testing();
}
