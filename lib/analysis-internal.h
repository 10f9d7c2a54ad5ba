/* The analysis engine's state, shared by lib/analysis*.c and nothing else. */
#ifndef INGERO_ANALYSIS_INTERNAL_H
#define INGERO_ANALYSIS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "analysis.h"

struct amap {
	uint64_t *keys;
	char *vals;
	size_t vsize, cap, n;
};

/* cap: a power of two. */
int amap_init(struct amap *m, size_t vsize, size_t cap);
void amap_release(struct amap *m);
void *amap_get(const struct amap *m, uint64_t key);
/* The value of key, zeroed when new (*fresh set); valid until the next put. NULL on ENOMEM. */
void *amap_put(struct amap *m, uint64_t key, int *fresh);
void amap_del(struct amap *m, uint64_t key);
void *amap_next(const struct amap *m, size_t *pos, uint64_t *key);

/* A stretch's kind: an enum ingero_split, or not yet known (before a thread's first event). */
#define KIND_PENDING INGERO_NR_SPLITS
#define STRETCH_CULPRITS 3
/* ncul of a closed runnable stretch whose culprits are looked up only if its thread turns out traced */
#define CULPRITS_LATER UINT8_MAX

/*
 * One stretch of a thread's scheduling history; it ends where the next one
 * starts. Four share a cache line: every switch and wakeup opens one.
 */
struct stretch {
	uint64_t start;
	uint8_t kind;
	uint8_t ncul;
	uint16_t cpu;		/* on CPU: where; runnable: the run queue it waited on */
	int32_t who;		/* blocked or waiting: the waker; preempted: the preemptor */
};
_Static_assert(sizeof(struct stretch) == 16, "four stretches share a cache line");

/* A closed runnable stretch's culprits, apart from the stretches since only those have them. */
struct culprits {
	/* who ran instead, and how long: in all, and inside --from and --to */
	struct { uint64_t ns, win_ns; int32_t tid; } cul[STRETCH_CULPRITS];
};

/* An allocation or free, held back while the call enclosing it may be the one to name it. */
struct memop {
	int valid, ok, in_window;
	uint32_t role, api;
	int32_t tid;
	uint64_t parent, ptr, size, ts;
};

/* Aligned to a cache line, whose first holds what a switch or a wakeup reads and writes. */
struct thread {
	_Alignas(64) int32_t tid;
	int32_t last_cpu;
	int traced;
	int exited;	/* its task exit was seen: an event of its tid after that is another task's */
	uint64_t exit_ts;
	uint32_t cap, len, head;	/* head: the newest, the one still open */
	struct stretch *ring;	/* cap stretches, then their cap culprits: see culprits_of() */
	const char *comm;
	uint64_t run_ns, voluntary, involuntary;
	uint64_t migrations, delays, delay_ns, max_delay_ns, max_delay_at;
	uint32_t pid;
	struct memop pending;
	uint64_t calls, call_ns, call_split[INGERO_NR_SPLITS];	/* outermost calls, entry-only ones too */
	uint64_t entry_calls;	/* calls probed at their entry alone, at any depth */
	uint64_t wanted_before;	/* of run_ns + delay_ns, the part before its first call */
	uint64_t first_ts;	/* its first call's entry */
};

#define CPU_HISTORY 1024

/* Who ran on one CPU lately: a ring of the switches onto it. */
struct cpu_state {
	struct thread *cur;
	uint64_t switches;	/* so far; the newest is hist[switches % CPU_HISTORY] */
	uint64_t missed;	/* switch-ins onto it that the trace lacks */
	struct { uint64_t start; int32_t tid; } hist[CPU_HISTORY];
};

/* A log-bucket sketch: exact below 64 ns, then 64 buckets per power of two. */
#define SKETCH_SUB 64
#define SKETCH_OCTAVES 48
#define SKETCH_BUCKETS ((SKETCH_OCTAVES - 5) * SKETCH_SUB)
/* Duration classes for the chains: eight per power of two. */
#define CLASS_SHIFT 3
#define CLASSES (SKETCH_BUCKETS >> CLASS_SHIFT)

/* One bucket of a sketch: its count and its sum side by side, so that adding a value touches one line. */
struct bucket {
	uint64_t n, sum;
};

struct cls {
	uint64_t calls, sum_ns, lossy;
	uint64_t split[INGERO_NR_SPLITS];
	uint64_t taken[2];	/* of the preempted and the wait time, what other tasks ran in: interference */
};

/* The slot of taken[] of a runnable kind. */
static inline int taken_slot(unsigned kind)
{
	return kind == INGERO_SPLIT_WAIT;
}

/* One API at one nesting level. */
struct row {
	uint64_t calls, errors, lossy, total, min, max;
	uint64_t split[INGERO_NR_SPLITS];
	struct bucket *sketch;	/* SKETCH_BUCKETS */
	struct cls *cls;	/* CLASSES; outer rows only */
};

/* Per (API, class, task): what a culprit took from, or a waker woke, the API's calls of that class. */
struct blame {
	uint64_t ns, calls, cpus;
	uint64_t win_ns;	/* of ns, inside the window: what the interference table counts */
};

struct interferer {
	uint64_t ns, in_calls_ns, preemptions, delays, longest_ns, cpus;
	uint64_t callers_ns;	/* of ns, taken from threads that had called CUDA: in their calls or between */
};

struct live_alloc {
	uint64_t size, ts;
	uint32_t api;
	int32_t tid;
	int in_window;	/* made by a call that --from and --to keep: listed if never freed */
};

/* What the calls' path asks of an API: whether it allocates or frees, whether it is probed at its entry alone. */
#define CALL_MEMORY 0x1
#define CALL_ENTRY_ONLY 0x2

/* What an event of one stream does, as ingero_analysis_add() routes it. */
typedef int handler(struct ingero_analysis *a, const struct ingero_event *ev);

#define LOSSY_RING 64
#define HELD_CALLS 8
#define RECENT_THREADS 256
#define RECENT_INTERFERERS 64
#define TIMELINE 128

struct ingero_analysis {
	struct ingero_analysis_opts opts;
	/* --from and --to as every event tests them: an end of UINT64_MAX, the length from --from, no branch */
	uint64_t window_end, window_len;
	int whole;	/* neither --from nor --to: every ns is inside the window */
	int32_t *size_arg, *ptr_arg;	/* per API: the argument holding the size, the pointer freed */
	uint8_t *call_kind;	/* per API: its CALL_ bits, for every call to test in one load */
	uint64_t origin, last_key;
	handler *const *route;	/* by stream: the first event's way, the held calls', or the handlers */
	uint64_t events[INGERO_NR_STREAMS];
	uint64_t traced_ns, uncovered_calls, repaired, unknown_api_calls, unfollowed_calls;
	/* -a: only the processes followed have their scheduling recorded, each since its time here */
	int selective;
	struct amap followed;	/* pid -> uint64_t: when its scheduling began to be recorded */

	struct amap threads;	/* tid -> struct thread *; an exited one whose tid came back: n << 32 | tid */
	uint32_t retired;	/* threads whose tid another task took after they exited */
	/* by tid % RECENT_THREADS: a lookup without hashing; a slot of no thread holds one of no tid of its own */
	struct thread *recent[RECENT_THREADS];
	struct cpu_state **cpus;
	uint32_t ncpus;

	struct row **rows;	/* 2 * napis: [2 * api + nested] */
	struct amap blames;	/* blame_key() -> struct blame */
	struct amap interferers;	/* tid -> struct interferer */
	/* by tid % RECENT_INTERFERERS: a lookup without hashing; an empty slot holds tid 0, of no task */
	struct { int32_t tid; struct interferer *f; } recent_interferers[RECENT_INTERFERERS];
	size_t recent_interferers_cap;	/* the map's cap when they were found: one that grew has moved them */
	struct amap errors;	/* error_key() -> uint64_t */

	struct ingero_analysis_lost *lost;	/* by CPU */
	uint32_t nlost, lost_cap;
	uint64_t lossy_start[LOSSY_RING], lossy_end[LOSSY_RING], lossy_max_end;
	uint32_t nlossy;

	struct ingero_analysis_open *open;
	uint32_t nopen, open_cap;
	struct ingero_analysis_lib *libs;
	uint32_t nlibs, libs_cap;

	struct amap live;	/* ptr -> struct live_alloc */
	struct ingero_analysis_memory mem;
	struct ingero_analysis_mem_api *mem_apis;	/* napis */
	uint64_t live_bytes;	/* of the live blocks that calls the window keeps allocated */
	uint64_t timeline_width, timeline[TIMELINE], timeline_value;
	uint32_t timeline_last;
	int finished;
	/* calls of the newest ns that a switch-in of the same ns may yet explain: see waits_for_switch_in() */
	struct ingero_event held[HELD_CALLS];
	uint32_t nheld;
	uint64_t held_key;

	struct ingero_analysis_result result;
};

/*
 * An error's row and code in one key. The return types are 32 bits wide: 33
 * bits of the code hold each of their values, whether the trace has it zero-
 * or sign-extended, and error_code() gives it back as dump prints it.
 */
#define CODE_BITS 33

static inline uint64_t error_key(uint32_t row, uint64_t ret)
{
	return (uint64_t)row << CODE_BITS | (ret & ((1ULL << CODE_BITS) - 1));
}

static inline int64_t error_code(uint64_t key)
{
	return (int64_t)(key << (64 - CODE_BITS)) >> (64 - CODE_BITS);
}

static inline uint64_t blame_key(uint32_t api, uint32_t cls, int is_waker, int32_t tid)
{
	return (uint64_t)is_waker << 62 | (uint64_t)api << 40 | (uint64_t)cls << 28 | ((uint32_t)tid & 0x0fffffff);
}

/* The bucket of value v: the calls' path finds it once for the sketch and the duration class. */
static inline uint32_t sketch_bucket(uint64_t v)
{
	int o;

	if (v < SKETCH_SUB)
		return (uint32_t)v;
	o = 63 - __builtin_clzll(v);
	if (o >= SKETCH_OCTAVES)
		return SKETCH_BUCKETS - 1;
	return (uint32_t)((o - 5) * SKETCH_SUB + ((v >> (o - 6)) & (SKETCH_SUB - 1)));
}

/* Adds v, whose bucket is b. */
static inline void sketch_add(struct bucket *sketch, uint32_t b, uint64_t v)
{
	sketch[b].n++;
	sketch[b].sum += v;
}

/* What bucket b stands for: the mean of its values. */
uint64_t sketch_value(const struct bucket *sketch, uint32_t b);
/* The bucket's lowest value and the value that stands for it. */
uint64_t sketch_low(uint32_t b);
uint64_t sketch_mid(uint32_t b);
/* The value of rank ceil(q * n), clamped to [min, max]. */
uint64_t sketch_quantile(const struct bucket *sketch, uint64_t n, double q, uint64_t min, uint64_t max);

/* A call that allocates or frees, or that of a thread with an allocation or a free pending: see mem_call(). */
void mem_nest(struct ingero_analysis *a, struct thread *t, const struct ingero_call *c, int in_window);
void mem_finish(struct ingero_analysis *a);
/* Feeds the calls held for a switch-in of their ns (see waits_for_switch_in()) on. -1 on ENOMEM. */
int held_flush(struct ingero_analysis *a);
/* Ends every thread's open stretch at the last event, for the statistics. */
void threads_close(struct ingero_analysis *a);
int build_chains(struct ingero_analysis *a);
void task_of(struct ingero_analysis *a, int32_t tid, struct ingero_analysis_task *out);
void thread_task(const struct thread *t, struct ingero_analysis_task *out);
/* The culprits of the stretch s of t's ring. */
static inline struct culprits *culprits_of(const struct thread *t, const struct stretch *s)
{
	return (struct culprits *)(t->ring + t->cap) + (s - t->ring);
}

/* The thread of tid from the table, made on first sight; NULL on ENOMEM. */
struct thread *thread_find(struct ingero_analysis *a, int32_t tid);

/* The same, most often from the recent threads without hashing. */
static inline struct thread *thread_get(struct ingero_analysis *a, int32_t tid)
{
	struct thread *t = a->recent[(uint32_t)tid % RECENT_THREADS];

	return t->tid == tid ? t : thread_find(a, tid);
}

static inline int in_window(const struct ingero_analysis *a, uint64_t ts)
{
	return ts - a->opts.from_ns < a->window_len;
}

/* A call's part in the device memory: most calls neither allocate nor free, and have nothing pending. */
static inline void mem_call(struct ingero_analysis *a, struct thread *t, const struct ingero_call *c, int in_window)
{
	if (t->pending.valid || a->call_kind[c->api] & CALL_MEMORY)
		mem_nest(a, t, c, in_window);
}

#endif
