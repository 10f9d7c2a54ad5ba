/* The events of a trace, as the recorder hands them to the writer and the reader returns them. */
#ifndef INGERO_EVENT_H
#define INGERO_EVENT_H

#include <stdint.h>

enum ingero_stream {
	INGERO_STREAM_CALL,	/* a completed CUDA call, written when it returns */
	INGERO_STREAM_OPEN,	/* a call that never returned: open when its thread ended, or recording stopped */
	INGERO_STREAM_SWITCH,	/* sched_switch */
	INGERO_STREAM_WAKEUP,	/* sched_waking: the waker's side */
	INGERO_STREAM_TASK,	/* fork, exec, exit, comm change */
	INGERO_STREAM_LOST,	/* events the kernel dropped: loss is data */
	INGERO_STREAM_LIB,	/* a library probed, at the time it was probed */
	INGERO_NR_STREAMS
};

#define INGERO_MAX_ARGS 6
#define INGERO_COMM_LEN 16
/*
 * The name ingero record gives its own process, whatever its file is called:
 * the analysis tells the CPU time the recorder took from the traced threads
 * (its own reading of the trace) from a neighbour's by it.
 */
#define RECORDER_NAME "ingero"

/*
 * A thread's state as it left the CPU, normalised from the kernel's
 * prev_state, whose bit values change between kernel versions. Left
 * runnable, INGERO_STATE_RUNNING, it was taken off the CPU: with
 * INGERO_STATE_PREEMPTED ("R+") inside the kernel, without it at the return
 * to user space (where current kernels preempt a spinning task) or by a yield.
 */
enum ingero_task_state {
	INGERO_STATE_RUNNING = 0,
	INGERO_STATE_SLEEPING = 0x1,	/* S: interruptible, a voluntary wait */
	INGERO_STATE_DISK = 0x2,	/* D: uninterruptible */
	INGERO_STATE_STOPPED = 0x4,
	INGERO_STATE_TRACED = 0x8,
	INGERO_STATE_DEAD = 0x10,
	INGERO_STATE_ZOMBIE = 0x20,
	INGERO_STATE_PARKED = 0x40,
	INGERO_STATE_IDLE = 0x80,
	INGERO_STATE_PREEMPTED = 0x100,
};

/* One CUDA call; ts is its entry, end_ns its return (for an open call, when recording stopped). */
struct ingero_call {
	uint64_t end_ns;
	uint64_t id;		/* numbers the calls of a trace in order of entry, from 1 */
	uint64_t parent;	/* id of the call of the same thread that encloses it; 0 if none */
	uint32_t pid, tid;
	uint32_t cpu;		/* where it entered */
	uint32_t api;		/* index in the header's API table */
	uint64_t args[INGERO_MAX_ARGS];
	uint64_t ret;		/* the return value (a cudaError_t / CUresult) */
	uint64_t out;		/* what the call wrote through its out-pointer (a device pointer); 0 if none or unknown */
};

struct ingero_switch {
	uint32_t cpu;
	int32_t prev_tid, next_tid;
	int32_t prev_prio, next_prio;
	uint32_t prev_state;	/* enum ingero_task_state bits */
	const char *prev_comm, *next_comm;
};

struct ingero_wakeup {
	uint32_t cpu;		/* where the waker ran */
	uint32_t target_cpu;
	int32_t waker_tid, wakee_tid;
	int32_t wakee_prio;
	const char *wakee_comm;
};

enum ingero_task_kind {
	INGERO_TASK_FORK,	/* tid started pid's new thread or process child_tid */
	INGERO_TASK_EXEC,
	INGERO_TASK_EXIT,
	INGERO_TASK_COMM,	/* comm changed, or first seen */
	/*
	 * -a: process pid's scheduling is recorded from here on, with that of
	 * what it starts; pid 0: from here on, only that of the processes so
	 * followed, the others' being unknown.
	 */
	INGERO_TASK_FOLLOW,
};

struct ingero_task {
	uint32_t kind;		/* enum ingero_task_kind */
	uint32_t pid, tid;	/* the task itself (for FORK, the parent) */
	uint32_t child_pid, child_tid;	/* FORK only */
	const char *comm;
};

struct ingero_lost {
	uint32_t cpu;
	uint64_t end_ns;	/* ts..end_ns: the stretch in which the events went missing */
	uint64_t count;		/* how many; 0 when the kernel could not say */
};

struct ingero_lib {
	uint32_t id;
	uint32_t pid;		/* the process it was found in; 0 when probed before start */
	uint32_t probes;	/* symbols probed in it */
	uint32_t missing;	/* wanted symbols it lacks */
	const char *path;
	const char *build_id;	/* hex; "" if it has none */
};

/*
 * One event. The strings it points to belong to whoever produced it: for
 * the writer they need to live only for the call, for the reader they live
 * as long as the reader.
 */
struct ingero_event {
	uint32_t stream;	/* enum ingero_stream */
	uint64_t ts;		/* ns, on the trace's clock */
	union {
		struct ingero_call call;	/* STREAM_CALL and STREAM_OPEN */
		struct ingero_switch sw;
		struct ingero_wakeup wakeup;
		struct ingero_task task;
		struct ingero_lost lost;
		struct ingero_lib lib;
	};
};

#endif
