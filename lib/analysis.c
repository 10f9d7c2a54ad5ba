/*
 * The analysis engine's streaming pass: scheduling events build each
 * thread's recent history of stretches, and a call, which arrives at its
 * return, is split over the stretches it spans.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "analysis-internal.h"
#include "error.h"
#include "trace.h"

/* Ring sizes: powers of two. */
#define RING_MIN 16		/* any task: enough to name who ran */
#define RING_TRACED 256		/* a traced thread's calls span more */
#define RING_MAX 8192
#define CALL_CULPRITS 8
#define CULPRIT_SLOTS 32

/* The counts first, cleared in one go; the culprits past ncul are never read. */
struct call_split {
	uint64_t ns[INGERO_NR_SPLITS];
	uint64_t taken[2];	/* see struct cls */
	uint32_t ncul;
	uint8_t cul_at[CULPRIT_SLOTS];	/* by tid % CULPRIT_SLOTS: the index of its first culprit, plus one; 0: none */
	int32_t waker;
	uint64_t waker_ns;
	/* ns: what each took from the call; win_ns: of that, inside the window, as the interference table counts */
	struct { int32_t tid; uint32_t cpu; uint64_t ns, win_ns; } cul[CALL_CULPRITS];
	int lossy;
};

/*
 * Every handler notes its event's key, ingero_event_key(): the greatest is
 * where the trace ends. Each handler knows its stream's key, which
 * ingero_analysis_add() would have to pick by the stream.
 */
static inline void saw(struct ingero_analysis *a, uint64_t key)
{
	if (key > a->last_key)
		a->last_key = key;
}

static int is_runnable(unsigned kind)
{
	return kind == INGERO_SPLIT_PREEMPTED || kind == INGERO_SPLIT_WAIT;
}

static uint64_t clip(const struct ingero_analysis *a, uint64_t lo, uint64_t hi)
{
	if (lo < a->opts.from_ns)
		lo = a->opts.from_ns;
	if (hi > a->window_end)
		hi = a->window_end;
	return hi > lo ? hi - lo : 0;
}

/* Of a stretch [start, end), end >= start, the ns that --from and --to keep: without them, all, in one test. */
static inline uint64_t kept_ns(const struct ingero_analysis *a, uint64_t start, uint64_t end)
{
	return a->whole ? end - start : clip(a, start, end);
}

/* part * num / den without overflow: stretches can be long and busy. */
static uint64_t scale(uint64_t part, uint64_t num, uint64_t den)
{
	if (num == den)
		return part;
	return den ? (uint64_t)((unsigned __int128)part * num / den) : 0;
}

/* The highest CPU: a stretch holds its CPU in 16 bits. */
#define CPU_MAX UINT16_MAX

/* Whether cpu is beyond what a stretch holds: EINVAL then. */
static int cpu_too_high(uint32_t cpu)
{
	if (cpu <= CPU_MAX)
		return 0;
	errno = EINVAL;
	return 1;
}

/* A CPU seen for the first time: its state, and room for it in the table. Out of line: once a CPU. */
static __attribute__((noinline)) struct cpu_state *cpu_add(struct ingero_analysis *a, uint32_t cpu)
{
	if (cpu >= a->ncpus) {
		uint32_t n = cpu + 1, i;
		struct cpu_state **p;

		if (cpu_too_high(cpu))
			return NULL;
		p = realloc(a->cpus, n * sizeof(*p));
		if (!p)
			return NULL;
		for (i = a->ncpus; i < n; i++)
			p[i] = NULL;
		a->cpus = p;
		a->ncpus = n;
	}
	if (!a->cpus[cpu])
		a->cpus[cpu] = calloc(1, sizeof(struct cpu_state));
	return a->cpus[cpu];
}

static inline struct cpu_state *cpu_get(struct ingero_analysis *a, uint32_t cpu)
{
	return cpu < a->ncpus && a->cpus[cpu] ? a->cpus[cpu] : cpu_add(a, cpu);
}

/* A ring of cap stretches and their culprits, on cache lines; free it with free(). NULL on ENOMEM. */
static struct stretch *ring_new(uint32_t cap)
{
	return aligned_alloc(64, cap * (sizeof(struct stretch) + sizeof(struct culprits)));
}

/* Reallocates the ring oldest first, so that head is the last slot used. */
static int ring_resize(struct thread *t, uint32_t cap)
{
	struct stretch *r = ring_new(cap);
	struct culprits *cul;
	uint32_t i, keep = t->len < cap ? t->len : cap;

	if (!r)
		return -1;
	cul = (struct culprits *)(r + cap);
	for (i = 0; i < keep; i++) {
		const struct stretch *s = &t->ring[(t->head - (keep - 1 - i)) & (t->cap - 1)];

		r[i] = *s;
		cul[i] = *culprits_of(t, s);
	}
	free(t->ring);
	t->ring = r;
	t->cap = cap;
	t->len = keep;
	t->head = keep - 1;
	return 0;
}

struct thread *thread_find(struct ingero_analysis *a, int32_t tid)
{
	struct thread **recent = &a->recent[(uint32_t)tid % RECENT_THREADS], **slot, *t;
	int fresh;

	slot = amap_get(&a->threads, (uint32_t)tid);
	if (slot)
		return *recent = *slot;
	t = aligned_alloc(_Alignof(struct thread), sizeof(*t));
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->ring = ring_new(RING_MIN);
	if (!t->ring) {
		free(t);
		return NULL;
	}
	slot = amap_put(&a->threads, (uint32_t)tid, &fresh);
	if (!slot) {
		free(t->ring);
		free(t);
		return NULL;
	}
	*slot = t;
	t->tid = tid;
	t->pid = (uint32_t)tid;
	t->last_cpu = -1;
	t->cap = RING_MIN;
	t->len = 1;
	t->ring[0] = (struct stretch){ .start = a->origin, .kind = KIND_PENDING };
	return *recent = t;
}

/*
 * What a slot of the recent threads holds while it has no thread: one of a
 * tid that no lookup of the slot can match (tid 1 belongs to slot 1, so
 * that slot has tid 2), for the lookups to test no NULL. Never written.
 */
static struct thread nobody[2] = { { .tid = 1 }, { .tid = 2 } };

static struct thread *nobody_in(uint32_t slot)
{
	return &nobody[slot == 1];
}

/* thread_live()'s way when the recent thread of tid is another's or has exited. */
static __attribute__((noinline)) struct thread *thread_live_slow(struct ingero_analysis *a, int32_t tid)
{
	struct thread *t = thread_get(a, tid), **slot;

	if (!t || !t->exited)
		return t;
	slot = amap_put(&a->threads, (uint64_t)++a->retired << 32 | (uint32_t)tid, NULL);
	if (!slot)
		return NULL;
	*slot = t;
	amap_del(&a->threads, (uint32_t)tid);
	a->recent[(uint32_t)tid % RECENT_THREADS] = nobody_in((uint32_t)tid % RECENT_THREADS);
	return thread_find(a, tid);
}

/*
 * The thread of tid for an event that shows the tid alive: when the thread
 * that held it has exited, another task has it now, with its own history and
 * statistics. The one that exited stays in the table under a key no tid has,
 * for the report. Most often the recent thread of tid, found without a call.
 * NULL on ENOMEM.
 */
static inline struct thread *thread_live(struct ingero_analysis *a, int32_t tid)
{
	struct thread *t = a->recent[(uint32_t)tid % RECENT_THREADS];

	return t->tid == tid && !t->exited ? t : thread_live_slow(a, tid);
}

/* Process pid's scheduling is recorded from ts on: a pid followed again is another process's. */
static int follow(struct ingero_analysis *a, uint32_t pid, uint64_t ts)
{
	uint64_t *since = amap_put(&a->followed, pid, NULL);

	if (!since)
		return -1;
	*since = ts;
	return 0;
}

/* When the scheduling of t's process began to be recorded: 0 for all of the trace, UINT64_MAX not yet. */
static uint64_t followed_since(const struct ingero_analysis *a, const struct thread *t)
{
	const uint64_t *since;

	if (!a->selective)
		return 0;
	since = amap_get(&a->followed, t->pid);
	return since ? *since : UINT64_MAX;
}

/*
 * A thread's first stretch, of a kind not known until an event ends it,
 * turns out to be kind; -a: unknown if the thread's process was followed
 * only after the stretch began.
 */
static inline void resolve_pending(const struct ingero_analysis *a, struct thread *t, unsigned kind)
{
	struct stretch *s = &t->ring[t->head];

	if (s->kind == KIND_PENDING)
		s->kind = followed_since(a, t) > s->start ? INGERO_SPLIT_UNKNOWN : kind;
}

/* The state of the CPU a stretch ran on or waited for; NULL if it has none. */
static struct cpu_state *run_queue(const struct ingero_analysis *a, const struct stretch *s)
{
	return s->cpu < a->ncpus ? a->cpus[s->cpu] : NULL;
}

/*
 * Runs the thread of a run queue's history back over [start, end), from its
 * newest switch down to the oldest it still holds, and keeps the top culprits.
 * The switches since end began at or after it, and add nothing: a stretch's
 * culprits come out the same whenever they are looked up.
 */
static __attribute__((noinline)) void culprits_search(const struct ingero_analysis *a, const struct cpu_state *c,
						      struct stretch *s, struct culprits *out, uint64_t end,
						      int32_t self)
{
	struct { uint64_t ns, win_ns; int32_t tid; } top[CALL_CULPRITS];
	uint32_t n = 0, k, i;
	uint64_t run_end = end, upto = c->switches, oldest = upto > CPU_HISTORY ? upto - CPU_HISTORY : 0;

	for (; upto > oldest; upto--) {
		uint32_t j = upto % CPU_HISTORY;
		uint64_t lo = c->hist[j].start > s->start ? c->hist[j].start : s->start;
		int32_t tid = c->hist[j].tid;

		if (run_end > end)
			run_end = end;
		if (run_end > lo && tid > 0 && tid != self) {
			uint64_t ns = run_end - lo, win_ns = kept_ns(a, lo, run_end);

			for (i = 0; i < n && top[i].tid != tid; i++)
				;
			if (i < n) {
				top[i].ns += ns;
				top[i].win_ns += win_ns;
			} else if (n < CALL_CULPRITS) {
				top[n++] = (typeof(top[0])){ ns, win_ns, tid };
			}
		}
		if (c->hist[j].start <= s->start)
			break;
		run_end = c->hist[j].start;
	}
	for (k = 0; k < n && k < STRETCH_CULPRITS; k++) {
		uint32_t best = k;

		for (i = k + 1; i < n; i++)
			if (top[i].ns > top[best].ns)
				best = i;
		out->cul[k].ns = top[best].ns;
		out->cul[k].win_ns = top[best].win_ns;
		out->cul[k].tid = top[best].tid;
		top[best] = top[k];
	}
	s->ncul = (uint8_t)k;
}

/* A stretch that began after its run queue's newest switch: the task that switch put on, if another, is its culprit. */
static void culprit_alone(const struct ingero_analysis *a, struct stretch *s, struct culprits *out, uint64_t end,
			  int32_t tid, int32_t self)
{
	if (end <= s->start || tid <= 0 || tid == self)
		return;
	out->cul[0].ns = end - s->start;
	out->cul[0].win_ns = kept_ns(a, s->start, end);
	out->cul[0].tid = tid;
	s->ncul = 1;
}

/* The stretch s, which ends at end, and its top culprits; most often one task ran all along, found without a search. */
static inline void find_culprits(const struct ingero_analysis *a, struct stretch *s, struct culprits *out, uint64_t end,
				 int32_t self)
{
	const struct cpu_state *c = run_queue(a, s);

	s->ncul = 0;
	if (!c)
		return;
	/* before any switch, the newest slot holds no task */
	if (c->hist[c->switches % CPU_HISTORY].start <= s->start)
		culprit_alone(a, s, out, end, c->hist[c->switches % CPU_HISTORY].tid, self);
	else
		culprits_search(a, c, s, out, end, self);
}

/* The interferer of tid from the map, made on first sight, and kept among the recent ones; NULL on ENOMEM. */
static __attribute__((noinline)) struct interferer *interferer_find(struct ingero_analysis *a, int32_t tid)
{
	typeof(a->recent_interferers[0]) *r = &a->recent_interferers[(uint32_t)tid % RECENT_INTERFERERS];
	struct interferer *f = amap_put(&a->interferers, (uint32_t)tid, NULL);

	if (a->interferers.cap != a->recent_interferers_cap) {
		memset(a->recent_interferers, 0, sizeof(a->recent_interferers));
		a->recent_interferers_cap = a->interferers.cap;
	}
	if (f) {
		r->tid = tid;
		r->f = f;
	}
	return f;
}

/* The same for a task that took a CPU (tid > 0), most often from the recent ones without hashing. */
static inline struct interferer *interferer_get(struct ingero_analysis *a, int32_t tid)
{
	const typeof(a->recent_interferers[0]) *r = &a->recent_interferers[(uint32_t)tid % RECENT_INTERFERERS];

	return r->tid == tid ? r->f : interferer_find(a, tid);
}

/*
 * A traced thread's runnable stretch: what each culprit took from it, within
 * the window. Inlined: nearly every switch-in of a traced thread ends one.
 */
static inline __attribute__((always_inline)) void blame_stretch(struct ingero_analysis *a, struct thread *t,
								 const struct stretch *s, uint64_t end)
{
	uint64_t ov = kept_ns(a, s->start, end);
	uint64_t cpu_bit = 1ULL << (s->cpu < 63 ? s->cpu : 63);
	const struct culprits *cul = culprits_of(t, s);
	struct interferer *f;
	uint32_t i;

	if (!ov || (a->opts.tid && t->tid != a->opts.tid))
		return;
	for (i = 0; i < s->ncul; i++) {
		uint64_t ns = cul->cul[i].win_ns;

		f = interferer_get(a, cul->cul[i].tid);
		if (!f)
			return;
		f->ns += ns;
		f->cpus |= cpu_bit;
		if (t->calls || t->entry_calls)
			f->callers_ns += ns;
		if (ns > f->longest_ns)
			f->longest_ns = ns;
		if (s->kind == INGERO_SPLIT_WAIT && !i)
			f->delays++;
	}
	if (s->kind == INGERO_SPLIT_PREEMPTED && s->who > 0 && (f = interferer_get(a, s->who)))
		f->preemptions++;
}

/* A traced thread's runnable stretch ends at end: its culprits now, and what each took from it. */
static __attribute__((noinline)) void culprits_now(struct ingero_analysis *a, struct thread *t, struct stretch *s,
						   uint64_t end)
{
	find_culprits(a, s, culprits_of(t, s), end, t->tid);
	blame_stretch(a, t, s, end);
}

/*
 * A runnable stretch ends at ts: the thread's delays, and the stretch's culprits.
 * Inlined: most switch-ins end one, and a call would cost the switch its
 * thread's ring to load again.
 */
static inline __attribute__((always_inline)) void close_runnable(struct ingero_analysis *a, struct thread *t,
								  struct stretch *s, uint64_t ts)
{
	uint64_t kept = kept_ns(a, s->start, ts);

	/*
	 * The part in the window, as for the run time; a stretch of no time
	 * counts where it ends. delays is counted last: next to the add to
	 * delay_ns, gcc makes the two one vector add, of seven instructions.
	 */
	if (kept || (ts == s->start && in_window(a, ts))) {
		t->delay_ns += kept;
		if (kept > t->max_delay_ns) {
			t->max_delay_ns = kept;
			t->max_delay_at = s->start > a->opts.from_ns ? s->start : a->opts.from_ns;
		}
		t->delays++;
	}
	/* a thread not traced has them looked up only once it turns out traced: most never do */
	if (t->traced)
		culprits_now(a, t, s, ts);
	else
		s->ncul = CULPRITS_LATER;
}

/* Ends the thread's open stretch at ts: its statistics, and for a runnable one its culprits. */
static inline void close_stretch(struct ingero_analysis *a, struct thread *t, struct stretch *s, uint64_t ts)
{
	if (s->kind == INGERO_SPLIT_ONCPU)
		t->run_ns += kept_ns(a, s->start, ts);
	else if (is_runnable(s->kind))
		close_runnable(a, t, s, ts);
}

/* A stretch that the thread opens at ts ends the open one there, or where it began if that is later. */
static inline uint64_t stretch_end(const struct thread *t, uint64_t ts)
{
	uint64_t start = t->ring[t->head].start;

	return ts > start ? ts : start;
}

/* Opens the thread's next stretch at ts, the open one closed; its culprits are written when it closes. */
static inline void stretch_open(struct thread *t, uint64_t ts, unsigned kind, uint32_t cpu, int32_t who)
{
	struct stretch *s;

	t->head = (t->head + 1) & (t->cap - 1);
	if (t->len < t->cap)
		t->len++;
	s = &t->ring[t->head];
	s->start = ts;
	s->kind = (uint8_t)kind;
	s->ncul = 0;
	s->cpu = (uint16_t)cpu;
	s->who = who;
}

/* Closes the thread's open stretch at ts and opens the next. */
static inline void thread_enter(struct ingero_analysis *a, struct thread *t, uint64_t ts,
				unsigned kind, uint32_t cpu, int32_t who)
{
	ts = stretch_end(t, ts);
	close_stretch(a, t, &t->ring[t->head], ts);
	stretch_open(t, ts, kind, cpu, who);
}

/* A thread turns out to be traced: its history kept so far is blamed now. */
static __attribute__((noinline)) int start_tracing(struct ingero_analysis *a, struct thread *t)
{
	uint32_t k;

	t->traced = 1;
	for (k = t->len - 1; k >= 1; k--) {
		struct stretch *s = &t->ring[(t->head - k) & (t->cap - 1)];
		const struct stretch *next = &t->ring[(t->head - k + 1) & (t->cap - 1)];

		if (!is_runnable(s->kind))
			continue;
		if (s->ncul == CULPRITS_LATER)
			find_culprits(a, s, culprits_of(t, s), next->start, t->tid);
		blame_stretch(a, t, s, next->start);
	}
	return t->cap < RING_TRACED ? ring_resize(t, RING_TRACED) : 0;
}

/* Every call and task event marks its thread traced: most find it so already. */
static inline int mark_traced(struct ingero_analysis *a, struct thread *t)
{
	return t->traced ? 0 : start_tracing(a, t);
}

/*
 * A traced thread seen on cpu at ts (a call's probe, a wakeup it made, its
 * switch-out) while its history has it off the CPU: the trace lacks its
 * switch-in there, as some kernels never report a switch out of the idle
 * task on CPUs other than the first. When it came on is not known: the
 * stretch open since counts as unknown, and it runs from ts.
 */
static void missed_switch_in(struct ingero_analysis *a, struct thread *t, uint64_t ts, uint32_t cpu)
{
	struct cpu_state *c = cpu < a->ncpus ? a->cpus[cpu] : NULL;

	a->repaired++;
	if (c)
		c->missed++;
	t->ring[t->head].kind = INGERO_SPLIT_UNKNOWN;
	thread_enter(a, t, ts, INGERO_SPLIT_ONCPU, cpu, 0);
}

/* CPU c runs thread t (NULL: the idle task, or a task not seen) of tid from ts on. */
static inline void cpu_runs(struct cpu_state *c, struct thread *t, int32_t tid, uint64_t ts)
{
	c->cur = t;
	c->switches++;
	c->hist[c->switches % CPU_HISTORY].start = ts;
	c->hist[c->switches % CPU_HISTORY].tid = tid;
}

static int on_switch(struct ingero_analysis *a, const struct ingero_event *ev)
{
	const struct ingero_switch *sw = &ev->sw;
	/* read once: a store of a stretch's kind, a byte, may alias them, and would have them read again */
	uint64_t ts = ev->ts;
	uint32_t cpu = sw->cpu;
	int32_t next_tid = sw->next_tid;
	struct cpu_state *c = cpu_get(a, cpu);
	struct thread *t;

	saw(a, ts);
	if (!c)
		return -1;
	if (sw->prev_tid > 0) {
		unsigned kind;

		/* a thread that exited, its last switch-out lost, may have left its tid to the task switched out now */
		t = c->cur && c->cur->tid == sw->prev_tid && !c->cur->exited ? c->cur : thread_get(a, sw->prev_tid);
		if (!t)
			return -1;
		t->comm = sw->prev_comm;
		if (t->ring[t->head].kind == KIND_PENDING) {
			resolve_pending(a, t, INGERO_SPLIT_ONCPU);
			t->ring[t->head].cpu = (uint16_t)cpu;
		} else if (t->ring[t->head].kind != INGERO_SPLIT_ONCPU && t->traced) {
			missed_switch_in(a, t, ts, cpu);
		}
		/* R and R+ alike: a task spinning in user space is preempted as R. */
		kind = sw->prev_state & ~INGERO_STATE_PREEMPTED ? INGERO_SPLIT_BLOCKED : INGERO_SPLIT_PREEMPTED;
		if (in_window(a, ts))
			kind == INGERO_SPLIT_PREEMPTED ? t->involuntary++ : t->voluntary++;
		thread_enter(a, t, ts, kind, cpu, kind == INGERO_SPLIT_PREEMPTED ? next_tid : 0);
	}
	t = NULL;
	if (next_tid > 0) {
		t = thread_live(a, next_tid);
		if (!t)
			return -1;
		t->comm = sw->next_comm;
		if (t->ring[t->head].kind == KIND_PENDING)
			t->ring[t->head].kind = INGERO_SPLIT_UNKNOWN;
		if (t->last_cpu >= 0 && (uint32_t)t->last_cpu != cpu && in_window(a, ts))
			t->migrations++;
		t->last_cpu = (int32_t)cpu;
		thread_enter(a, t, ts, INGERO_SPLIT_ONCPU, cpu, 0);
	}
	cpu_runs(c, t, next_tid, ts);
	return 0;
}

/*
 * A waker runs on the wakeup's CPU. One that its history has off the CPU
 * came on without a switch in the trace: the CPU's history takes it as
 * running from the wakeup, for the culprits of those who wait there. A
 * waker not seen before, exited (waking its parent as it goes) or not
 * traced (whose switches the pid filter keeps out) has no history to mend.
 */
static int waker_seen(struct ingero_analysis *a, const struct ingero_event *ev)
{
	int32_t tid = ev->wakeup.waker_tid;
	struct thread *w = a->recent[(uint32_t)tid % RECENT_THREADS], **slot;
	struct cpu_state *c;
	unsigned kind;

	if (w->tid != tid) {
		slot = amap_get(&a->threads, (uint32_t)tid);
		w = slot ? *slot : NULL;
	}
	if (!w || w->exited || !w->traced)
		return 0;
	kind = w->ring[w->head].kind;
	if (kind == INGERO_SPLIT_ONCPU || kind == KIND_PENDING)
		return 0;
	if (!(c = cpu_get(a, ev->wakeup.cpu)))
		return -1;
	missed_switch_in(a, w, ev->ts, ev->wakeup.cpu);
	cpu_runs(c, w, w->tid, ev->ts);
	return 0;
}

static int on_wakeup(struct ingero_analysis *a, const struct ingero_event *ev)
{
	struct thread *t;
	struct stretch *s;
	int slept;

	saw(a, ev->ts);
	if (ev->wakeup.waker_tid > 0 && waker_seen(a, ev))
		return -1;
	if (ev->wakeup.wakee_tid <= 0)
		return 0;
	t = thread_live(a, ev->wakeup.wakee_tid);
	if (!t)
		return -1;
	/* The run queue's state is made by its switches: the wait's culprits are looked up from them. */
	if (cpu_too_high(ev->wakeup.target_cpu))
		return -1;
	s = &t->ring[t->head];
	/* a wakeup proves a sleep, if not since when: it ends one, of a known start or not */
	slept = s->kind == KIND_PENDING || s->kind == INGERO_SPLIT_BLOCKED;
	resolve_pending(a, t, INGERO_SPLIT_BLOCKED);
	/*
	 * A switch-in of the same ns sorts before its wakeup (the switch stream
	 * comes first): the sleep it ended is the stretch before, and this is its waker.
	 */
	if (s->kind == INGERO_SPLIT_ONCPU && s->start == ev->ts && t->len > 1) {
		struct stretch *prev = &t->ring[(t->head - 1) & (t->cap - 1)];

		if (prev->kind == INGERO_SPLIT_BLOCKED && !prev->who)
			prev->who = ev->wakeup.waker_tid;
		return 0;
	}
	/* A waking of a task that is running or already runnable changes nothing. */
	if (!slept)
		return 0;
	s->who = ev->wakeup.waker_tid;
	/* a sleep has nothing to close: the statistics are of the time on a CPU or wanting one */
	stretch_open(t, stretch_end(t, ev->ts), INGERO_SPLIT_WAIT, ev->wakeup.target_cpu, ev->wakeup.waker_tid);
	return 0;
}

/* -a: what a thread of a followed process did before it was followed is not known, nor counted. */
static inline void clip_to_followed(const struct ingero_analysis *a, struct thread *t)
{
	struct stretch *s = &t->ring[t->head];
	uint64_t since;

	if (!a->selective || s->kind != KIND_PENDING || (since = followed_since(a, t)) == UINT64_MAX)
		return;
	if (s->start < since)
		s->start = since;
}

/* -a: process pid's scheduling is recorded from ts on, its threads' histories with it. */
static int on_follow(struct ingero_analysis *a, uint32_t pid, uint64_t ts)
{
	struct thread **t;
	size_t pos = 0;
	uint64_t key;

	if (!pid) {
		a->selective = 1;
		return 0;
	}
	if (follow(a, pid, ts))
		return -1;
	while ((t = amap_next(&a->threads, &pos, &key)))
		if ((*t)->pid == pid)
			clip_to_followed(a, *t);
	return 0;
}

static int on_task(struct ingero_analysis *a, const struct ingero_event *ev)
{
	const struct ingero_task *k = &ev->task;
	struct thread *t;

	saw(a, ev->ts);
	if (k->kind == INGERO_TASK_FOLLOW)
		return on_follow(a, k->pid, ev->ts);
	/* the exit itself is the exiting thread's; anything else of its tid after it, another task's */
	t = k->kind == INGERO_TASK_EXIT ? thread_get(a, (int32_t)k->tid) : thread_live(a, (int32_t)k->tid);
	if (!t)
		return -1;
	t->pid = k->pid;
	clip_to_followed(a, t);
	if (k->comm && *k->comm && k->kind != INGERO_TASK_FORK)
		t->comm = k->comm;
	if (mark_traced(a, t))
		return -1;
	if (k->kind == INGERO_TASK_EXIT) {
		t->exited = 1;
		t->exit_ts = ev->ts;
		/* -a: a process ends with its leader, and its pid may then be another's, not followed yet */
		if (k->tid == k->pid)
			amap_del(&a->followed, k->pid);
	}
	if (k->kind == INGERO_TASK_FORK && k->child_tid) {
		struct thread *child = thread_live(a, (int32_t)k->child_tid);

		if (!child)
			return -1;
		/* It began here, not where the trace did: what it ran before a first switch seen counts from now. */
		if (child->ring[child->head].kind == KIND_PENDING)
			child->ring[child->head].start = ev->ts;
		child->pid = k->child_pid;
		if (!child->comm)
			child->comm = k->comm;
		/* a process that a followed one starts is followed from its start */
		if (a->selective && k->child_pid != k->pid && followed_since(a, t) <= ev->ts &&
		    follow(a, k->child_pid, ev->ts))
			return -1;
		return mark_traced(a, child);
	}
	return 0;
}

/*
 * Room for one more of the n items of size bytes at items, doubling the capacity
 * when full: the array to use from now on (the caller's, still its to free), NULL
 * when out of memory, the old one kept.
 */
static void *grow(void *items, uint32_t n, uint32_t *cap, size_t size)
{
	uint32_t c = *cap ? 2 * *cap : 8;
	void *p;

	if (n < *cap)
		return items;
	p = realloc(items, c * size);
	if (p)
		*cap = c;
	return p;
}

static int on_lost(struct ingero_analysis *a, const struct ingero_event *ev)
{
	const struct ingero_lost *l = &ev->lost;
	uint64_t end = l->end_ns > ev->ts ? l->end_ns : ev->ts;
	struct ingero_analysis_lost *p;
	uint32_t i;

	saw(a, ev->ts);
	for (i = 0; i < a->nlost && a->lost[i].cpu != l->cpu; i++)
		;
	if (i == a->nlost) {
		p = grow(a->lost, a->nlost, &a->lost_cap, sizeof(*p));
		if (!p)
			return -1;
		a->lost = p;
		p[a->nlost++] = (struct ingero_analysis_lost){ .cpu = l->cpu, .first_ns = ev->ts };
	}
	p = &a->lost[i];
	p->count += l->count;
	p->records++;
	p->ns += end - ev->ts;
	p->last_ns = end;
	a->lossy_start[a->nlossy % LOSSY_RING] = ev->ts;
	a->lossy_end[a->nlossy % LOSSY_RING] = end;
	a->nlossy++;
	if (end > a->lossy_max_end)
		a->lossy_max_end = end;
	return 0;
}

static int on_lib(struct ingero_analysis *a, const struct ingero_event *ev)
{
	struct ingero_analysis_lib *p = grow(a->libs, a->nlibs, &a->libs_cap, sizeof(*p));
	uint64_t events_before = 0;
	int s;

	saw(a, ev->ts);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		events_before += s == INGERO_STREAM_LIB ? 0 : a->events[s];
	if (!p)
		return -1;
	a->libs = p;
	p[a->nlibs++] = (struct ingero_analysis_lib){
		.path = ev->lib.path, .build_id = ev->lib.build_id ? ev->lib.build_id : "",
		.pid = ev->lib.pid, .probes = ev->lib.probes, .missing = ev->lib.missing,
		.probed_ns = ev->ts, .late = events_before > 0 && ev->ts > a->origin,
	};
	return 0;
}

static int on_open(struct ingero_analysis *a, const struct ingero_event *ev)
{
	struct ingero_analysis_open *p = grow(a->open, a->nopen, &a->open_cap, sizeof(*p));

	saw(a, ev->call.end_ns);
	if (!p)
		return -1;
	a->open = p;
	p[a->nopen++] = (struct ingero_analysis_open){
		.api = ev->call.api, .tid = (int32_t)ev->call.tid, .ts = ev->ts, .end_ns = ev->call.end_ns,
	};
	return 0;
}

static int call_lossy(const struct ingero_analysis *a, uint64_t ts, uint64_t end)
{
	uint32_t i, n = a->nlossy < LOSSY_RING ? a->nlossy : LOSSY_RING;

	if (!a->nlossy || ts > a->lossy_max_end)
		return 0;
	for (i = 0; i < n; i++)
		if (a->lossy_start[i] <= end && a->lossy_end[i] >= ts)
			return 1;
	return 0;
}

/* The index of tid among the call's culprits: ncul if it is not one yet. */
static inline uint32_t culprit_index(const struct call_split *cs, int32_t tid)
{
	uint32_t i = cs->cul_at[(uint32_t)tid % CULPRIT_SLOTS];

	if (!i || cs->cul[i - 1].tid == tid)
		return i ? i - 1 : cs->ncul;
	/* another culprit holds its slot */
	for (i = 0; i < cs->ncul && cs->cul[i].tid != tid; i++)
		;
	return i;
}

/*
 * What tid took from the call, a new culprit while there is room for one.
 * Inlined: a long call adds one for every culprit of each stretch it spans.
 */
static inline __attribute__((always_inline)) void add_culprit(struct call_split *cs, int32_t tid, uint32_t cpu,
							      uint64_t ns, uint64_t win_ns)
{
	uint8_t *at = &cs->cul_at[(uint32_t)tid % CULPRIT_SLOTS];
	uint32_t i = culprit_index(cs, tid);

	if (i == cs->ncul) {
		if (cs->ncul == CALL_CULPRITS)
			return;
		cs->cul[cs->ncul++] = (typeof(cs->cul[0])){ tid, cpu, 0, 0 };
		if (!*at)
			*at = (uint8_t)cs->ncul;
	}
	cs->cul[i].ns += ns;
	cs->cul[i].win_ns += win_ns;
}

/* Whether the thread's open stretch is on the CPU (or, its first, counted so) and began by ts. */
static inline int ran_since(const struct thread *t, uint64_t ts)
{
	const struct stretch *s = &t->ring[t->head];

	return s->start <= ts && (s->kind == INGERO_SPLIT_ONCPU || s->kind == KIND_PENDING);
}

/*
 * Walks the thread's history back from the call's return to its entry.
 * Wakers are ranked by the blocked time they ended; a call's top waker is
 * the one that ended most of it. Inlined: most calls span a stretch or
 * two, and a function's frame and arguments cost more than that walk.
 */
static inline __attribute__((always_inline)) void split_call(struct ingero_analysis *a, struct thread *t,
							    const struct ingero_event *ev, uint64_t since,
							    struct call_split *cs, int shown)
{
	uint64_t ts = ev->ts, end = ev->call.end_ns, s_end = end;
	struct { int32_t tid; uint64_t ns; } wk[4];
	uint32_t k, i, nwk = 0;
	int covered = 0;

	memset(cs, 0, offsetof(struct call_split, cul));
	cs->lossy = call_lossy(a, ts, end);
	/* what went before the process's scheduling was recorded is not known */
	if (since > ts) {
		cs->ns[INGERO_SPLIT_UNKNOWN] = (since < end ? since : end) - ts;
		a->unfollowed_calls += shown;
		if (since >= end)
			return;
		ts = since;
	}
	/* Most calls ran inside the stretch on the CPU still open: the walk would stop there, at its first step. */
	if (ran_since(t, ts)) {
		cs->ns[INGERO_SPLIT_ONCPU] += end > ts ? end - ts : 0;
		return;
	}
	for (k = 0; k < t->len; k++) {
		const struct stretch *s = &t->ring[(t->head - k) & (t->cap - 1)];
		uint64_t lo = s->start > ts ? s->start : ts, hi = s_end < end ? s_end : end, ov;
		unsigned kind = s->kind == KIND_PENDING ? INGERO_SPLIT_ONCPU : s->kind;

		ov = hi > lo ? hi - lo : 0;
		cs->ns[kind] += ov;
		if (ov && is_runnable(kind)) {
			const struct culprits *cul = culprits_of(t, s);

			for (i = 0; i < s->ncul; i++) {
				uint64_t ns = scale(cul->cul[i].ns, ov, s_end - s->start);

				cs->taken[taken_slot(kind)] += ns;
				add_culprit(cs, cul->cul[i].tid, s->cpu, ns, scale(cul->cul[i].win_ns, ov, s_end - s->start));
			}
		}
		if (ov && kind == INGERO_SPLIT_BLOCKED && s->who > 0) {
			for (i = 0; i < nwk && wk[i].tid != s->who; i++)
				;
			if (i == nwk && nwk < 4)
				wk[nwk++] = (typeof(wk[0])){ s->who, 0 };
			if (i < nwk)
				wk[i].ns += ov;
		}
		if (s->start <= ts) {
			covered = 1;
			break;
		}
		s_end = s->start;
	}
	if (!covered) {
		cs->ns[INGERO_SPLIT_UNKNOWN] += s_end - ts;
		a->uncovered_calls += shown;
		if (t->cap < RING_MAX)
			ring_resize(t, t->cap * 2);
	}
	for (i = 0; i < nwk; i++)
		if (wk[i].ns > cs->waker_ns) {
			cs->waker = wk[i].tid;
			cs->waker_ns = wk[i].ns;
		}
}

static struct row *row_get(struct ingero_analysis *a, uint32_t api, int nested)
{
	struct row **slot = &a->rows[2 * api + !!nested], *r = *slot;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->sketch = calloc(SKETCH_BUCKETS, sizeof(*r->sketch))) ||
	    (!nested && !(r->cls = calloc(CLASSES, sizeof(*r->cls))))) {
		if (r)
			free(r->sketch);
		free(r);
		return NULL;
	}
	r->min = UINT64_MAX;
	*slot = r;
	return r;
}

static int blame_add(struct ingero_analysis *a, uint64_t key, uint64_t ns, uint64_t win_ns, uint32_t cpu)
{
	struct blame *b = amap_put(&a->blames, key, NULL);

	if (!b)
		return -1;
	b->ns += ns;
	b->win_ns += win_ns;
	b->calls++;
	b->cpus |= 1ULL << (cpu < 63 ? cpu : 63);
	return 0;
}

/* Adds a call's split to a row's, a class's or a thread's: unrolled, a load and an add a kind. */
static inline void split_add(uint64_t *sum, const uint64_t *ns)
{
	uint32_t i;

	_Pragma("GCC unroll 8")
	for (i = 0; i < INGERO_NR_SPLITS; i++)
		sum[i] += ns[i];
}

/* An outermost call: its class, what its culprits took, who woke it, and its thread's totals. */
static inline __attribute__((always_inline)) int
account_outer(struct ingero_analysis *a, struct thread *t, struct row *r, const struct ingero_call *c,
	      uint64_t dur, uint32_t bucket, const struct call_split *cs)
{
	uint32_t cls = bucket >> CLASS_SHIFT, i;
	struct cls *k = &r->cls[cls];

	k->calls++;
	k->sum_ns += dur;
	k->lossy += cs->lossy;
	split_add(k->split, cs->ns);
	split_add(t->call_split, cs->ns);
	k->taken[0] += cs->taken[0];
	k->taken[1] += cs->taken[1];
	t->calls++;
	t->call_ns += dur;
	a->traced_ns += dur;
	for (i = 0; i < cs->ncul; i++) {
		struct interferer *f = interferer_get(a, cs->cul[i].tid);

		if (!f || blame_add(a, blame_key(c->api, cls, 0, cs->cul[i].tid), cs->cul[i].ns, cs->cul[i].win_ns,
				    cs->cul[i].cpu))
			return -1;
		f->in_calls_ns += cs->cul[i].win_ns;
	}
	if (cs->waker && blame_add(a, blame_key(c->api, cls, 1, cs->waker), cs->waker_ns, 0, c->cpu))
		return -1;
	return 0;
}

/* A call of dur ns, split as cs says: its row, and for an outermost one the rest (see account_outer()). */
static inline __attribute__((always_inline)) int account_call(struct ingero_analysis *a, struct thread *t,
							      struct row *r, const struct ingero_call *c, uint64_t dur,
							      const struct call_split *cs)
{
	uint32_t bucket = sketch_bucket(dur);

	r->calls++;
	r->total += dur;
	r->lossy += cs->lossy;
	if (dur < r->min)
		r->min = dur;
	if (dur > r->max)
		r->max = dur;
	sketch_add(r->sketch, bucket, dur);
	split_add(r->split, cs->ns);
	if (c->ret) {
		uint64_t *n = amap_put(&a->errors, error_key(2 * c->api + (c->parent != 0), c->ret), NULL);

		if (!n)
			return -1;
		++*n;
		r->errors++;
	}
	return c->parent ? 0 : account_outer(a, t, r, c, dur, bucket, cs);
}

/*
 * The probes fire on the thread's CPU, so it ran at the call's entry and at
 * its return. A history that says otherwise lacks a switch-in: the thread
 * ran from the entry on, or, if the stretch began inside the call, from some
 * moment in it that is not known.
 */
static void repair(struct ingero_analysis *a, struct thread *t, const struct ingero_event *ev)
{
	struct stretch *s = &t->ring[t->head];

	if (s->kind != INGERO_SPLIT_ONCPU && s->kind != KIND_PENDING)
		missed_switch_in(a, t, s->start <= ev->ts ? ev->ts : ev->call.end_ns, ev->call.cpu);
}

/*
 * An outermost call that --api leaves out of the report is a CUDA call all
 * the same: what other tasks took inside it is not time between calls.
 */
static int other_api_call(struct ingero_analysis *a, struct thread *t, const struct ingero_event *ev, uint64_t since)
{
	struct call_split cs;
	uint32_t i;

	if (ev->call.parent || a->call_kind[ev->call.api] & CALL_ENTRY_ONLY)
		return 0;
	split_call(a, t, ev, since, &cs, 0);
	for (i = 0; i < cs.ncul; i++) {
		struct interferer *f = interferer_get(a, cs.cul[i].tid);

		if (!f)
			return -1;
		f->in_calls_ns += cs.cul[i].win_ns;
	}
	return 0;
}

/*
 * The thread calls CUDA from ts on: its first call's entry, or that of a
 * call around it, which returns later. The CPU time it wanted before is left
 * out of the between-calls chain; what other tasks took from it since, in
 * stretches closed before the call returned, is taken from a caller.
 */
static void calls_from(struct ingero_analysis *a, struct thread *t, uint64_t ts)
{
	const struct stretch *h = &t->ring[t->head];
	uint64_t before = t->run_ns + t->delay_ns, upto = t->calls || t->entry_calls ? t->first_ts : UINT64_MAX;
	uint32_t k, i;

	/* the open stretch counts when it closes, from its start */
	if (h->kind == INGERO_SPLIT_ONCPU || is_runnable(h->kind))
		before += clip(a, h->start, ts);
	for (k = 1; k < t->len; k++) {
		const struct stretch *s = &t->ring[(t->head - k) & (t->cap - 1)];
		uint64_t end = t->ring[(t->head - k + 1) & (t->cap - 1)].start, lo = s->start > ts ? s->start : ts;

		if (end <= ts)
			break;
		if (s->kind == INGERO_SPLIT_ONCPU || is_runnable(s->kind))
			before -= clip(a, lo, end);
		if (!is_runnable(s->kind) || lo >= upto)
			continue;
		for (i = 0; i < s->ncul && s->ncul != CULPRITS_LATER; i++) {
			const struct culprits *cul = culprits_of(t, s);
			struct interferer *f = interferer_get(a, cul->cul[i].tid);

			if (f)
				f->callers_ns += scale(cul->cul[i].win_ns, (end < upto ? end : upto) - lo, end - s->start);
		}
	}
	t->wanted_before = before;
	t->first_ts = ts;
}

static int add_held(struct ingero_analysis *a, const struct ingero_event *ev);

/* While calls are held, every event goes through add_held(). */
static handler *const held_route[INGERO_NR_STREAMS] = { [0 ... INGERO_NR_STREAMS - 1] = add_held };

/*
 * A call sorts before the switches of the ns it returns at, yet its thread
 * ran then: where the history has the thread off the CPU, the switch-in of
 * that ns may be yet to come. Such a call, and those after it of its ns, are
 * held until that switch-in or a later event.
 */
static int waits_for_switch_in(const struct thread *t)
{
	unsigned kind = t->ring[t->head].kind;

	return kind != INGERO_SPLIT_ONCPU && kind != KIND_PENDING;
}

/* Holds a call back; the first one held names the ns that the others share. */
static int hold(struct ingero_analysis *a, const struct ingero_event *ev)
{
	if (!a->nheld) {
		a->held_key = ev->call.end_ns;
		a->route = held_route;
	}
	a->held[a->nheld++] = *ev;
	return 0;
}

/*
 * A call taken in: as it returns (fresh), held for a switch-in of its ns
 * if its thread waits for one, or, held before, now.
 */
static int on_call(struct ingero_analysis *a, const struct ingero_event *ev, int fresh)
{
	const struct ingero_call *c = &ev->call;
	uint64_t dur = c->end_ns > ev->ts ? c->end_ns - ev->ts : 0;
	struct thread *t = thread_get(a, (int32_t)c->tid);
	int win = in_window(a, ev->ts);
	uint64_t since;
	struct call_split cs;
	struct row *r;

	if (!t)
		return -1;
	if (fresh && c->api < a->opts.napis && waits_for_switch_in(t))
		return hold(a, ev);
	/* the thread that had the tid has exited: the call is another task's */
	if (t->exited && !(t = thread_live_slow(a, (int32_t)c->tid)))
		return -1;
	if (c->api >= a->opts.napis) {
		a->unknown_api_calls++;
		return 0;
	}
	t->pid = c->pid;
	clip_to_followed(a, t);
	if (mark_traced(a, t))
		return -1;
	since = followed_since(a, t);
	if (since <= ev->ts)
		repair(a, t, ev);
	/* Device memory is the program's: a free matches its allocation whoever made either. */
	mem_call(a, t, c, win);
	if (!win || (a->opts.tid && (int32_t)c->tid != a->opts.tid))
		return 0;
	if (a->opts.api >= 0 && c->api != (uint32_t)a->opts.api)
		return other_api_call(a, t, ev, since);
	r = row_get(a, c->api, c->parent != 0);
	if (!r)
		return -1;
	if ((!t->calls && !t->entry_calls) || ev->ts < t->first_ts)
		calls_from(a, t, ev->ts);
	if (a->call_kind[c->api] & CALL_ENTRY_ONLY) {
		r->calls++;
		t->entry_calls++;
		t->calls += !c->parent;	/* an outermost call, of no time */
		return 0;
	}
	/*
	 * Most calls ran inside their thread's open stretch on the CPU: all of
	 * their time there, nothing taken, no waker. The accounting, inlined
	 * for them apart, drops every add of a zero.
	 */
	if (since <= ev->ts && ran_since(t, ev->ts)) {
		struct call_split oncpu = { .ns[INGERO_SPLIT_ONCPU] = dur, .lossy = call_lossy(a, ev->ts, c->end_ns) };

		return account_call(a, t, r, c, dur, &oncpu);
	}
	split_call(a, t, ev, since, &cs, 1);
	return account_call(a, t, r, c, dur, &cs);
}

static int held_tid(const struct ingero_analysis *a, int32_t tid)
{
	uint32_t i;

	for (i = 0; i < a->nheld; i++)
		if ((int32_t)a->held[i].call.tid == tid)
			return 1;
	return 0;
}

void threads_close(struct ingero_analysis *a)
{
	struct thread **t;
	size_t pos = 0;
	uint64_t key;

	while ((t = amap_next(&a->threads, &pos, &key))) {
		struct stretch *s = &(*t)->ring[(*t)->head];
		uint64_t end = a->last_key;

		/* one that exited, its last switch-out lost, ran no longer than to its exit */
		if ((*t)->exited && (*t)->exit_ts < end)
			end = (*t)->exit_ts > s->start ? (*t)->exit_ts : s->start;
		if (s->start < end)
			close_stretch(a, *t, s, end);
	}
}

/* A call returned, none held before it: see on_call(). */
static int on_return(struct ingero_analysis *a, const struct ingero_event *ev)
{
	saw(a, ev->call.end_ns);
	return on_call(a, ev, 1);
}

/* Each stream's handler, called through the table so that none is inlined into the per-event bookkeeping. */
static handler *const handlers[INGERO_NR_STREAMS] = {
	[INGERO_STREAM_CALL] = on_return,
	[INGERO_STREAM_OPEN] = on_open,
	[INGERO_STREAM_SWITCH] = on_switch,
	[INGERO_STREAM_WAKEUP] = on_wakeup,
	[INGERO_STREAM_TASK] = on_task,
	[INGERO_STREAM_LOST] = on_lost,
	[INGERO_STREAM_LIB] = on_lib,
};

/* The calls held, in their order. */
int held_flush(struct ingero_analysis *a)
{
	uint32_t i, n = a->nheld;

	a->nheld = 0;
	a->route = handlers;
	for (i = 0; i < n; i++)
		if (on_call(a, &a->held[i], 0))
			return -1;
	return 0;
}

/*
 * An event while calls are held. They wait only for the switches and
 * wakeups of their ns, and another call only while there is room; a held
 * call ran before its thread's switch-out, and after its switch-in.
 */
static int add_held(struct ingero_analysis *a, const struct ingero_event *ev)
{
	uint32_t s = ev->stream;
	uint64_t key = ingero_event_key(ev);
	int waits = s == INGERO_STREAM_SWITCH || s == INGERO_STREAM_WAKEUP ||
		    (s == INGERO_STREAM_CALL && a->nheld < HELD_CALLS);

	/* a call held here reaches no handler until it is taken in */
	saw(a, key);
	if ((key != a->held_key || !waits) && held_flush(a))
		return -1;
	if (s == INGERO_STREAM_CALL && a->nheld)
		return hold(a, ev);
	if (s != INGERO_STREAM_SWITCH || !a->nheld)
		return handlers[s](a, ev);
	if (held_tid(a, ev->sw.prev_tid) && held_flush(a))
		return -1;
	if (on_switch(a, ev))
		return -1;
	return a->nheld && held_tid(a, ev->sw.next_tid) ? held_flush(a) : 0;
}

/* The first event: where the trace starts, unless the header says. */
static int add_first(struct ingero_analysis *a, const struct ingero_event *ev)
{
	if (!a->opts.start_ns)
		a->origin = ev->ts;
	a->route = handlers;
	return handlers[ev->stream](a, ev);
}

/* Until the first event, every event goes through add_first(). */
static handler *const first_route[INGERO_NR_STREAMS] = { [0 ... INGERO_NR_STREAMS - 1] = add_first };

int ingero_analysis_add(struct ingero_analysis *a, const struct ingero_event *ev)
{
	if (ev->stream >= INGERO_NR_STREAMS)
		return 0;
	a->events[ev->stream]++;
	return a->route[ev->stream](a, ev);
}

struct ingero_analysis *ingero_analysis_new(const struct ingero_analysis_opts *opts)
{
	struct ingero_analysis *a = calloc(1, sizeof(*a));
	uint32_t i, n = opts->napis;

	if (!a)
		return NULL;
	a->opts = *opts;
	a->window_end = opts->to_ns ? opts->to_ns : UINT64_MAX;
	a->window_len = a->window_end > opts->from_ns ? a->window_end - opts->from_ns : 0;
	a->whole = !opts->from_ns && !opts->to_ns;
	a->origin = opts->start_ns;
	a->route = first_route;
	for (i = 0; i < RECENT_THREADS; i++)
		a->recent[i] = nobody_in(i);
	a->rows = calloc(2 * n + 1, sizeof(*a->rows));
	a->size_arg = calloc(n + 1, sizeof(*a->size_arg));
	a->ptr_arg = calloc(n + 1, sizeof(*a->ptr_arg));
	a->mem_apis = calloc(n + 1, sizeof(*a->mem_apis));
	a->call_kind = calloc(n + 1, sizeof(*a->call_kind));
	if (!a->rows || !a->size_arg || !a->ptr_arg || !a->mem_apis || !a->call_kind ||
	    amap_init(&a->threads, sizeof(struct thread *), 1024) ||
	    amap_init(&a->blames, sizeof(struct blame), 1024) ||
	    amap_init(&a->interferers, sizeof(struct interferer), 256) ||
	    amap_init(&a->errors, sizeof(uint64_t), 64) ||
	    amap_init(&a->live, sizeof(struct live_alloc), 1024) ||
	    amap_init(&a->followed, sizeof(uint64_t), 64)) {
		error_errno("cannot set up the analysis");
		ingero_analysis_free(a);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		a->size_arg[i] = ingero_api_arg(&opts->apis[i], INGERO_ARG_SIZE);
		a->ptr_arg[i] = ingero_api_arg(&opts->apis[i], INGERO_ARG_DEVPTR);
		a->mem_apis[i].api = i;
		a->call_kind[i] = (opts->apis[i].role == INGERO_ROLE_ALLOC || opts->apis[i].role == INGERO_ROLE_FREE ?
				   CALL_MEMORY : 0) | (ingero_api_entry_only(&opts->apis[i]) ? CALL_ENTRY_ONLY : 0);
	}
	return a;
}

void ingero_analysis_free(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res;
	struct thread **t;
	size_t pos = 0;
	uint64_t key;
	uint32_t i;

	if (!a)
		return;
	while (a->threads.keys && (t = amap_next(&a->threads, &pos, &key))) {
		free((*t)->ring);
		free(*t);
	}
	for (i = 0; a->rows && i < 2 * a->opts.napis; i++)
		if (a->rows[i]) {
			free(a->rows[i]->sketch);
			free(a->rows[i]->cls);
			free(a->rows[i]);
		}
	for (i = 0; i < a->ncpus; i++)
		free(a->cpus[i]);
	amap_release(&a->threads);
	amap_release(&a->blames);
	amap_release(&a->interferers);
	amap_release(&a->errors);
	amap_release(&a->live);
	amap_release(&a->followed);
	res = &a->result;
	free(res->apis);
	free(res->chains);
	free(res->interferers);
	free(res->threads);
	free(res->errors);
	free(res->repaired_cpus);
	free(a->mem.apis);
	free(a->mem.unfreed);
	free(a->mem.timeline);
	free(a->cpus);
	free(a->rows);
	free(a->size_arg);
	free(a->ptr_arg);
	free(a->mem_apis);
	free(a->call_kind);
	free(a->lost);
	free(a->open);
	free(a->libs);
	free(a);
}

const char *ingero_split_name(enum ingero_split s)
{
	static const char *const names[INGERO_NR_SPLITS] = {
		[INGERO_SPLIT_ONCPU] = "oncpu",
		[INGERO_SPLIT_PREEMPTED] = "preempted",
		[INGERO_SPLIT_BLOCKED] = "blocked",
		[INGERO_SPLIT_WAIT] = "wait",
		[INGERO_SPLIT_UNKNOWN] = "unknown",
	};

	return s < INGERO_NR_SPLITS ? names[s] : "?";
}
