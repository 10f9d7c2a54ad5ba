/*
 * A recording session's state in the kernel: a private tracefs instance, the
 * uprobe events of a group, and their formats. Both are named after the
 * session's keeper, a child process that removes them once
 * ingero_session_remove() closes its socket, or ingero ends in any other way.
 * Nothing global is enabled.
 */
#ifndef INGERO_SESSION_H
#define INGERO_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tep_handle;
struct tep_event;
struct tracefs_instance;
struct tracefs_dynevent;

struct ingero_session {
	struct tracefs_instance *instance;
	/*
	 * With -a, the scheduler's events have an instance of their own: its
	 * pid filter follows the processes seen calling CUDA, while the calls of
	 * every process reach the uprobes' instance, which has none (the kernel's
	 * pid filter holds back all the events of an instance). NULL otherwise.
	 */
	struct tracefs_instance *sched;
	struct tep_handle *tep;		/* formats of every event enabled in the instance */
	char group[48];			/* the uprobe group: "ingero_<pid>", and a container's suffix */
	struct tracefs_dynevent *last;	/* the event of the last probe made, for its format (the keeper removes them all) */
	char last_probe[80];		/* its name */
	int ncpus;
	int use_arrays;			/* the kernel takes array fetch arguments (TYPE[N]) */
	/*
	 * The kernel appends probes to an event and takes immediate values, so
	 * a library's probes can share three events, each naming its API in a
	 * field. Their removal then waits for the kernel's grace periods once
	 * per event rather than once per probe (seconds for a whole library).
	 */
	int grouped;
	/*
	 * ingero runs in a PID namespace of its own: the kernel's pids are the
	 * host's, learnt for ingero itself and for the command it starts.
	 */
	int child_ns;
	pid_t host_self, child_host, child_local;
	int keeper;			/* ingero's end of the keeper's socket */
	/*
	 * The trace clock minus CLOCK_MONOTONIC, measured by the last mark the
	 * kernel stamped: mark_seq, written to marker_fd (the instance's
	 * trace_marker) at mark_written on CLOCK_MONOTONIC.
	 */
	int64_t clock_offset;
	int marker_fd;
	unsigned mark_seq;
	uint64_t mark_written;
	pid_t keeper_pid;
};

/* The trace clock: the kernel's own (sched_clock), the one that costs a traced call the least to stamp. */
#define INGERO_TRACE_CLOCK "local"

/* CLOCK_MONOTONIC in ns, on which ingero reads the time itself. */
uint64_t ingero_now_ns(void);
/* Now on the trace clock (the kernel's, which stamps the events): CLOCK_MONOTONIC moved by the last mark's measure. */
uint64_t ingero_session_clock(const struct ingero_session *s);
/* Writes a mark to the instance's trace_marker if the last is a second old: its event goes to ingero_session_clock_seen(). */
int ingero_session_clock_mark(struct ingero_session *s);
/* A trace_marker line the kernel stamped ts: 1 when it is ingero's last mark, which measures the trace clock again. */
int ingero_session_clock_seen(struct ingero_session *s, const char *text, uint64_t ts);

/* The process that removes a session from the kernel once ingero is done with it. */
#define KEEPER_NAME "ingero-cleanup"
/* What the keeper leaves behind when it held the command's library watch: it lets their loads through. */
#define PASSER_NAME "ingero-loads"

/*
 * Checks that this process may trace, removes what dead sessions left
 * behind, starts the keeper and creates the instance with buffer_kb per CPU,
 * and with sched_apart the scheduler's instance too. Free with
 * ingero_session_free(). NULL on failure, with the reason printed.
 */
struct ingero_session *ingero_session_new(size_t buffer_kb, int sched_apart);
/* 1 when ingero runs in a PID namespace of its own (a container's), whose pids are not the kernel's. */
int ingero_session_in_container(void);
/*
 * Creates a uprobe (or uretprobe) on path:offset; one made right after
 * another of the same name joins its event (see grouped). 0 or -1.
 */
int ingero_session_add_uprobe(struct ingero_session *s, const char *name, const char *path,
			      unsigned long long offset, const char *fetchargs, int is_return);
/* Enables the event just made under that name and returns its format, NULL on failure. */
struct tep_event *ingero_session_enable_uprobe(struct ingero_session *s, const char *name);
/* The format of a tracepoint, read once; NULL with errno ENOENT where the kernel has no such event, else why it could not be read. */
struct tep_event *ingero_session_event(struct ingero_session *s, const char *system, const char *event);
/* Enables a tracepoint in the instance (the scheduler's, where it has one) and returns its format. */
struct tep_event *ingero_session_enable(struct ingero_session *s, const char *system, const char *event);
/* How many sets of per-CPU ring buffers the session has: one per instance. */
int ingero_session_buffers(const struct ingero_session *s);
/*
 * The reader of one CPU's ring buffer of set buf, non-blocking and closed on
 * exec: the command that ingero starts must not hold the instance busy. NULL
 * and errno on failure: ENOENT where the kernel has no buffer for the CPU.
 */
struct tracefs_cpu *ingero_session_open_cpu(struct ingero_session *s, int buf, int cpu);
/*
 * Gives the keeper a copy of the command's library watch (the seccomp
 * listener): once ingero is gone, SIGKILL included, the command's later
 * library loads then still go through instead of failing. 0 or -1.
 */
int ingero_session_hand_over(struct ingero_session *s, int listener);
/*
 * In a PID namespace of its own, ingero's pid goes into the filter before it
 * starts the command, so that the fork adds the command's host pid; a no-op
 * elsewhere.
 */
int ingero_session_follow_children(struct ingero_session *s);
/* Traces these processes, every task each has now, and what they start from now on. */
int ingero_session_filter_pids(struct ingero_session *s, const pid_t *pids, size_t n);
/* Adds these tasks to the scheduler's instance's pid filter (-a), with what they start from now on. */
int ingero_session_follow(struct ingero_session *s, const pid_t *tids, size_t n);
/* The pid in ingero's PID namespace of a host pid: itself in the host's, 0 when unknown. */
pid_t ingero_session_local_pid(const struct ingero_session *s, pid_t host);
/* Whether the pid filter still holds a task: the kernel drops each as it ends. 1, 0, or -1 on error. */
int ingero_session_pids_left(struct ingero_session *s);
/* How many processes have a task in the pid filter that has not ended; 0 where ingero cannot tell (a container), -1 on error. */
int ingero_session_processes_left(struct ingero_session *s);
int ingero_session_start(struct ingero_session *s);
int ingero_session_stop(struct ingero_session *s);
/*
 * Turns tracing off and has the keeper disable and remove everything the
 * session registered, while ingero goes on: its grace periods pass as the
 * trace is written. The buffers' readers must be closed; s is then good
 * for ingero_session_free() alone.
 */
void ingero_session_remove(struct ingero_session *s);
/* Removes the session as above, unless it is being removed, waits until it is gone and frees s. */
void ingero_session_free(struct ingero_session *s);

/* The kernel's dropped-event count of one CPU's buffer of set buf (events it had no room for). */
long long ingero_session_dropped(struct ingero_session *s, int buf, int cpu);

#endif
