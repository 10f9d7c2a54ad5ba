/*
 * The recorder: probes CUDA libraries, reads the session's per-CPU ring
 * buffers, merges them in time order, pairs each call's entry and return,
 * and writes the events into a trace.
 */
#ifndef INGERO_RECORD_H
#define INGERO_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "api.h"
#include "event.h"

struct ingero_session;
struct ingero_writer;
struct ingero_recorder;

/* The CPUs whose counts the statistics keep apart. */
#define INGERO_STATS_CPUS 256

struct ingero_record_stats {
	uint64_t events;		/* handed to the trace's writer */
	uint64_t calls, open_calls;
	uint64_t lost;			/* events the kernel dropped or overwrote */
	uint64_t lost_per_cpu[INGERO_STATS_CPUS];
	uint64_t unpaired;		/* a return without its entry, or an entry whose return was lost */
	uint64_t to_idle[INGERO_STATS_CPUS], from_idle[INGERO_STATS_CPUS];	/* switches into and out of the idle task */
	uint64_t libs;
};

/*
 * Enables the scheduler tracepoints in s and records into w the APIs of the
 * sets in sets_mask (bit i: apis[i].set is the i-th probe set). Free with
 * ingero_recorder_free(); s and w stay the caller's.
 */
struct ingero_recorder *ingero_recorder_new(struct ingero_session *s, struct ingero_writer *w,
					    const struct ingero_api *apis, size_t napis,
					    const uint8_t *api_enabled);
/*
 * Probes the APIs that the file at path defines, once per file however it
 * is reached. pid: the process it was found in (0: before start). Returns
 * the number of probes added (0 for a file already probed or with no CUDA
 * symbols), -1 on failure. Safe to call from another thread.
 */
int ingero_recorder_probe_lib(struct ingero_recorder *r, const char *path, pid_t pid);
/*
 * Probes the hook that the dynamic loader at path calls around each library
 * it loads, once per file: the tasks that pass there are handed out by
 * ingero_recorder_loads(). Returns 1 if probed, 0 for a file already
 * probed or without the hook, -1 on failure.
 */
int ingero_recorder_watch_loader(struct ingero_recorder *r, const char *path);
/*
 * Copies up to max of the tasks seen in a watched loader's hook since the
 * last call into tids, each once; *missed is 1 where more were seen than
 * were kept. Call from the thread that polls.
 */
#define INGERO_RECORD_LOADS 64	/* the tasks seen loading that a look keeps */
size_t ingero_recorder_loads(struct ingero_recorder *r, pid_t *tids, size_t max, int *missed);
/*
 * -a: the processes that map a probed file now join the pid filter of the
 * scheduler's events, whole; those that do later join it at their first
 * call. 0 or -1.
 */
int ingero_recorder_follow_mapped(struct ingero_recorder *r);
/*
 * The tasks process pid has now are its own: their events are told apart
 * by process though they end before they are read, when /proc no longer
 * says whose they were. What they start later, their forks say.
 */
void ingero_recorder_know_process(struct ingero_recorder *r, pid_t pid);
/* The process of task tid as /proc says (its Tgid), or tid itself where /proc does not say. */
pid_t ingero_process_of(pid_t tid);
/* -a: copies up to max of the processes followed, from the from-th on, into pids; returns how many. */
size_t ingero_recorder_processes(struct ingero_recorder *r, pid_t *pids, size_t from, size_t max);
/*
 * Reads what the ring buffers hold and writes every event older than a
 * moment ago, in time order. When final: all of them, and the buffers are
 * closed, so that the session can be removed (ingero_session_remove()).
 */
int ingero_recorder_poll(struct ingero_recorder *r, int final);
/* Writes the calls still open as STREAM_OPEN, ending at the last event seen (a thread's own end closes its calls there). */
int ingero_recorder_finish(struct ingero_recorder *r);
void ingero_recorder_stats(struct ingero_recorder *r, struct ingero_record_stats *st);
void ingero_recorder_free(struct ingero_recorder *r);

#endif
