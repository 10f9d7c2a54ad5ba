/*
 * The analysis engine: fed a trace's events in the reader's order, it splits
 * every CUDA call over its thread's scheduling states and builds the report.
 */
#ifndef INGERO_ANALYSIS_H
#define INGERO_ANALYSIS_H

#include <stdint.h>
#include "event.h"
#include "api.h"

/* Where a call's (or a thread's) time went. */
enum ingero_split {
	INGERO_SPLIT_ONCPU,
	/*
	 * Runnable after being switched out while running: R+ (preempted in
	 * the kernel) and R (preempted on the way back to user space; a
	 * sched_yield looks the same), as the kernel's nonvoluntary count has it.
	 */
	INGERO_SPLIT_PREEMPTED,
	INGERO_SPLIT_BLOCKED,	/* S, D or another sleeping state */
	INGERO_SPLIT_WAIT,	/* runnable after its wakeup: scheduling delay */
	INGERO_SPLIT_UNKNOWN,	/* not covered by the scheduling history kept */
	INGERO_NR_SPLITS
};

enum ingero_severity {
	INGERO_SEVERITY_INFO,
	INGERO_SEVERITY_LOW,
	INGERO_SEVERITY_MEDIUM,
	INGERO_SEVERITY_HIGH,
};

/* What a chain's evidence is over. */
enum ingero_scope {
	INGERO_SCOPE_SLOW,	/* an API's slow calls */
	INGERO_SCOPE_ALL,	/* all its calls: a neighbour slowed them alike */
	INGERO_SCOPE_BETWEEN,	/* the threads that call CUDA, between their calls */
	INGERO_NR_SCOPES
};

/* What a chain's slow calls spent their extra time on. */
enum ingero_cause {
	INGERO_CAUSE_PREEMPTED,	/* another task took the CPU */
	INGERO_CAUSE_DELAYED,	/* woken, then kept off the CPU by another task */
	INGERO_CAUSE_GPU_WAIT,	/* a synchronisation that waited for the GPU */
	INGERO_CAUSE_BLOCKED,	/* slept inside a call that is not a synchronisation */
	INGERO_CAUSE_ONCPU,	/* the call's own work */
	INGERO_CAUSE_UNKNOWN,	/* lost events or history too short to tell */
	INGERO_NR_CAUSES
};

struct ingero_analysis_opts {
	const struct ingero_api *apis;	/* the trace header's table */
	uint32_t napis;
	uint64_t start_ns;	/* the origin of the report's times: when recording began; 0: the first event */
	/* Calls that enter in [from_ns, to_ns) count; scheduling is clipped to it. 0: no bound. */
	uint64_t from_ns, to_ns;
	/* tid and api leave the memory view whole: it is the program's, within the window. */
	int32_t tid;		/* only this thread's calls and statistics; 0: all */
	int32_t api;		/* only this API's calls; -1: all */
};

#define INGERO_ANALYSIS_CULPRITS 5
#define INGERO_ANALYSIS_HIST 48	/* log2 buckets of ns: [2^i, 2^(i+1)), bucket 0 holds 0 and 1 */

/* Another task, as the report names it: comm and pid (the thread group, else its tid). */
struct ingero_analysis_task {
	int32_t tid;
	uint32_t pid;
	const char *comm;	/* "?" when no event named it */
	int traced;
	int recorder;		/* ingero record itself (named RECORDER_NAME), reading the trace while it ran */
};

struct ingero_analysis_culprit {
	struct ingero_analysis_task task;
	uint64_t ns;		/* time it took from the chain's calls, all of them */
	uint64_t slow_ns;	/* of that, inside the slow calls */
	uint64_t slow_calls;	/* slow calls it took time from */
	uint64_t cpus;		/* bit per CPU where it did (CPU 63 stands for 63 and above) */
};

/* One row of the API summary: an API at one nesting level. */
struct ingero_analysis_api {
	uint32_t api;
	int nested;		/* calls made inside another traced call: already counted in it */
	int entry_only;		/* probed at entry alone: calls counted, no times */
	uint64_t calls, errors, lossy_calls;
	uint64_t total_ns, min_ns, max_ns;
	uint64_t p50_ns, p90_ns, p99_ns;	/* within INGERO_ANALYSIS_REL_ERROR of the exact value */
	uint64_t excess_ns;	/* time above the median, summed */
	uint64_t split_ns[INGERO_NR_SPLITS];
	uint64_t hist[INGERO_ANALYSIS_HIST];
	struct ingero_analysis_task waker;	/* outer rows: who ended most of the blocked time; tid 0: none */
	uint64_t waker_ns;	/* the blocked time of the calls it ended most of */
};

/*
 * The percentiles are log-bucket estimates: at most this far from the exact
 * rank's value, relatively (the mean of a bucket 1/64 of a power of two wide).
 */
#define INGERO_ANALYSIS_REL_ERROR (1.0 / 64)

struct ingero_analysis_chain {
	uint32_t api;
	uint32_t severity;	/* enum ingero_severity */
	uint32_t cause;		/* enum ingero_cause */
	uint64_t cost_ns;	/* the time above the median, summed, or what interference took if more: the rank */
	uint64_t p50_ns, p90_ns, p99_ns, max_ns;
	uint64_t calls, slow_calls, slow_from_ns;	/* slow: the calls of at least slow_from_ns */
	uint32_t scope;		/* enum ingero_scope */
	uint32_t callers;	/* BETWEEN: the threads that call CUDA */
	uint64_t wanted_ns;	/* BETWEEN: the CPU time they wanted since their first call, running or runnable */
	uint64_t taken_ns;	/* the CPU time other tasks took from the API's calls while they were runnable */
	uint64_t neighbour_ns;	/* of that, by tasks that are not traced threads: what rates the severity */
	uint64_t slow_lossy;	/* slow calls that overlap lost events */
	uint64_t slow_split_ns[INGERO_NR_SPLITS];
	int cpu;		/* where the first culprit took the most; -1 if none */
	struct ingero_analysis_task waker;	/* GPU_WAIT, BLOCKED: who woke the slow calls most */
	uint32_t nculprits;
	struct ingero_analysis_culprit culprits[INGERO_ANALYSIS_CULPRITS];
	char summary[320];	/* the one-line verdict with its evidence */
	const char *remedy;
};

struct ingero_analysis_interferer {
	struct ingero_analysis_task task;
	uint64_t ns;		/* CPU time it took from traced threads while they were runnable */
	uint64_t in_calls_ns;	/* of that, inside their CUDA calls */
	uint64_t preemptions;	/* times it preempted a traced thread */
	uint64_t delays;	/* wakeups of traced threads it delayed */
	uint64_t longest_ns;	/* the most it took in one stretch */
	uint64_t cpus;
	uint32_t napis;
	struct { uint32_t api; uint64_t ns; } apis[3];	/* the APIs it hit most */
};

struct ingero_analysis_thread {
	struct ingero_analysis_task task;
	uint64_t run_ns;
	uint64_t voluntary, involuntary, migrations;
	uint64_t delays, delay_ns, max_delay_ns, max_delay_at;	/* runnable stretches, like perf sched latency */
	uint64_t calls, call_ns;	/* outermost calls only; entry-only ones count, of no time */
	uint64_t call_split_ns[INGERO_NR_SPLITS];
};

struct ingero_analysis_mem_api {
	uint32_t api;
	uint64_t allocs, frees, alloc_bytes, free_bytes;
};

struct ingero_analysis_alloc {
	uint64_t ptr, size, ts;
	uint32_t api;
	int32_t tid;
};

struct ingero_analysis_memory {
	uint64_t alloc_calls, free_calls, alloc_bytes, free_bytes;
	uint64_t peak_bytes, peak_at, live_bytes_end;
	uint64_t unknown_ptr_allocs;	/* succeeded but the pointer was not read: not tracked */
	uint64_t untracked_frees;	/* of pointers allocated before the trace (or unknown) */
	uint64_t null_frees;
	uint32_t napis;
	struct ingero_analysis_mem_api *apis;
	uint64_t nunfreed;
	struct ingero_analysis_alloc *unfreed;	/* by time */
	uint32_t ntimeline;
	struct { uint64_t ts, bytes; } *timeline;	/* the most live in each of equal stretches */
};

struct ingero_analysis_lost {
	uint32_t cpu;
	uint64_t count, records, ns;	/* events, loss records, time covered */
	uint64_t first_ns, last_ns;
};

/* Switch-ins onto a CPU that the trace lacks (see repaired). */
struct ingero_analysis_cpu_count {
	uint32_t cpu;
	uint64_t count;
};

struct ingero_analysis_open {
	uint32_t api;
	int32_t tid;
	uint64_t ts, end_ns;
};

struct ingero_analysis_error {
	uint32_t api;
	int nested;
	int64_t code;		/* the return, signed, as dump prints it */
	uint64_t count;
};

struct ingero_analysis_lib {
	const char *path, *build_id;
	uint32_t pid, probes, missing;
	uint64_t probed_ns;	/* when its probes went in */
	int late;		/* probed once tasks were traced already */
};

struct ingero_analysis_result {
	uint64_t events[INGERO_NR_STREAMS], total_events;
	uint64_t start_ns;	/* the origin: opts.start_ns, or the first event when that is 0 */
	uint64_t last_ns;	/* the last event's time (a call's: its return) */
	uint64_t duration_ns;	/* from start_ns to last_ns; 0 if that is before it */
	uint64_t traced_ns;	/* the outermost calls' time */
	uint64_t lost_total;
	uint64_t uncovered_calls;	/* calls that began before the history kept for their thread */
	uint64_t unfollowed_calls;	/* -a: calls that began before their process's scheduling was recorded */
	uint64_t repaired;	/* switch-ins the trace lacks: threads seen running while their history had them off */
	uint32_t nrepaired_cpus;
	struct ingero_analysis_cpu_count *repaired_cpus;	/* by CPU, those with any */
	uint64_t unknown_api_calls;	/* calls of an API beyond the trace's table: left out of the rest */
	uint32_t nlost;
	struct ingero_analysis_lost *lost;
	uint32_t nopen;
	struct ingero_analysis_open *open;
	uint32_t nlibs;
	struct ingero_analysis_lib *libs;
	uint32_t napis;
	struct ingero_analysis_api *apis;	/* outer rows by total time, then nested rows */
	uint32_t nchains;
	struct ingero_analysis_chain *chains;	/* by cost */
	uint32_t ninterferers;
	struct ingero_analysis_interferer *interferers;	/* by time taken */
	uint32_t nthreads;
	struct ingero_analysis_thread *threads;	/* by tid */
	struct ingero_analysis_memory memory;
	uint32_t nerrors;
	struct ingero_analysis_error *errors;
};

struct ingero_analysis;

/*
 * Free with ingero_analysis_free(). The strings in the events fed to it
 * must live as long as the analysis (a reader's do). NULL on failure.
 */
struct ingero_analysis *ingero_analysis_new(const struct ingero_analysis_opts *opts);
/* Events in the order of ingero_event_key(), as ingero_reader_next() returns them. -1 on ENOMEM. */
int ingero_analysis_add(struct ingero_analysis *a, const struct ingero_event *ev);
/* Builds the report; it belongs to a and lives until ingero_analysis_free(). NULL on ENOMEM. */
const struct ingero_analysis_result *ingero_analysis_finish(struct ingero_analysis *a);
void ingero_analysis_free(struct ingero_analysis *a);

const char *ingero_split_name(enum ingero_split s);
const char *ingero_severity_name(enum ingero_severity s);
const char *ingero_cause_name(enum ingero_cause c);
/* What a task is besides a neighbour: "a traced thread", "the recorder itself", or NULL. */
const char *ingero_analysis_task_role(const struct ingero_analysis_task *t);
const char *ingero_scope_name(enum ingero_scope s);
/* "1.9 ms", "413 us", "12 ns": three significant digits. Returns buf. */
char *ingero_analysis_fmt_ns(char *buf, size_t len, uint64_t ns);

#endif
