/* The streams of a trace and their columns: one table that the writer's schema and the reader's decoding share. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format.h"
#include "../lib/trace.h"

#define EV(f) ((uint16_t)offsetof(struct ingero_event, f))
#define N COL_NONE

/*
 * Each row: name, unit, type, encoding, predictor flags, key, src, group,
 * field. A column's key, src and group come before it; keys and groups are
 * dict columns. A call's columns are grouped by its API, whose calls are
 * alike: each API's codes get a width and zstd tables of their own.
 */
static const struct column_def call_cols[] = {
	{ "api",       "api",   TYPE_U32, ENC_DICT,  0, N, N, N, EV(call.api) },
	{ "end_ns",    "ns",    TYPE_U64, ENC_DELTA, PRED_RISE, N, N, 0, EV(call.end_ns) },
	{ "ts",        "ns",    TYPE_U64, ENC_DELTA, PRED_SAME, N, 1, 0, EV(ts) },
	{ "tid",       "tid",   TYPE_U32, ENC_DICT,  0, N, N, 0, EV(call.tid) },
	{ "pid",       "pid",   TYPE_U32, ENC_DELTA, 0, 3, N, N, EV(call.pid) },
	{ "cpu",       "cpu",   TYPE_U32, ENC_DELTA, 0, 3, N, N, EV(call.cpu) },
	{ "id",        "id",    TYPE_U64, ENC_DELTA, 0, N, N, 0, EV(call.id) },
	{ "parent",    "id",    TYPE_U64, ENC_DELTA, PRED_SAME | PRED_ZERO, N, 6, 0, EV(call.parent) },
	{ "arg0",      "",      TYPE_U64, ENC_DICT,  0, 0, N, 0, EV(call.args[0]) },
	{ "arg1",      "",      TYPE_U64, ENC_DICT,  0, 0, N, 0, EV(call.args[1]) },
	{ "arg2",      "",      TYPE_U64, ENC_DICT,  0, 0, N, 0, EV(call.args[2]) },
	{ "arg3",      "",      TYPE_U64, ENC_DICT,  0, 0, N, 0, EV(call.args[3]) },
	{ "arg4",      "",      TYPE_U64, ENC_DICT,  0, 0, N, 0, EV(call.args[4]) },
	{ "arg5",      "",      TYPE_U64, ENC_DICT,  0, 0, N, N, EV(call.args[5]) },
	{ "ret",       "",      TYPE_U64, ENC_RLE,   0, N, N, N, EV(call.ret) },
	{ "out",       "",      TYPE_U64, ENC_DELTA, PRED_ZERO, 0, N, N, EV(call.out) },
};

static const struct column_def switch_cols[] = {
	{ "ts",         "ns",    TYPE_U64,    ENC_DELTA, PRED_RISE, N, N, N, EV(ts) },
	{ "cpu",        "cpu",   TYPE_U32,    ENC_DICT,  0, N, N, N, EV(sw.cpu) },
	{ "next_tid",   "tid",   TYPE_I32,    ENC_DICT,  0, N, N, N, EV(sw.next_tid) },
	{ "prev_tid",   "tid",   TYPE_I32,    ENC_DELTA, 0, 1, 2, N, EV(sw.prev_tid) },
	{ "next_prio",  "",      TYPE_I32,    ENC_DELTA, 0, 2, N, N, EV(sw.next_prio) },
	{ "prev_prio",  "",      TYPE_I32,    ENC_DELTA, 0, 1, 4, N, EV(sw.prev_prio) },
	{ "prev_state", "state", TYPE_U32,    ENC_DICT,  0, N, N, N, EV(sw.prev_state) },
	{ "next_comm",  "",      TYPE_STRING, ENC_DICT,  0, 2, N, N, EV(sw.next_comm) },
	{ "prev_comm",  "",      TYPE_STRING, ENC_DELTA, 0, 1, 7, N, EV(sw.prev_comm) },
};

static const struct column_def wakeup_cols[] = {
	{ "ts",         "ns",    TYPE_U64,    ENC_DELTA, PRED_RISE, N, N, N, EV(ts) },
	{ "cpu",        "cpu",   TYPE_U32,    ENC_DICT,  0, N, N, N, EV(wakeup.cpu) },
	{ "wakee_tid",  "tid",   TYPE_I32,    ENC_DICT,  0, N, N, N, EV(wakeup.wakee_tid) },
	{ "waker_tid",  "tid",   TYPE_I32,    ENC_DICT,  0, N, N, N, EV(wakeup.waker_tid) },
	{ "target_cpu", "cpu",   TYPE_U32,    ENC_DELTA, 0, 2, N, N, EV(wakeup.target_cpu) },
	{ "wakee_prio", "",      TYPE_I32,    ENC_DELTA, 0, 2, N, N, EV(wakeup.wakee_prio) },
	{ "wakee_comm", "",      TYPE_STRING, ENC_DELTA, 0, 2, N, N, EV(wakeup.wakee_comm) },
};

static const struct column_def task_cols[] = {
	{ "ts",         "ns",    TYPE_U64,    ENC_DELTA, PRED_RISE, N, N, N, EV(ts) },
	{ "kind",       "",      TYPE_U32,    ENC_DICT,  0, N, N, N, EV(task.kind) },
	{ "tid",        "tid",   TYPE_U32,    ENC_DICT,  0, N, N, N, EV(task.tid) },
	{ "pid",        "pid",   TYPE_U32,    ENC_DELTA, 0, 2, N, N, EV(task.pid) },
	{ "child_pid",  "pid",   TYPE_U32,    ENC_DELTA, PRED_SAME | PRED_ZERO, N, 3, N, EV(task.child_pid) },
	{ "child_tid",  "tid",   TYPE_U32,    ENC_DELTA, PRED_SAME | PRED_ZERO, N, 2, N, EV(task.child_tid) },
	{ "comm",       "",      TYPE_STRING, ENC_DELTA, 0, 2, N, N, EV(task.comm) },
};

static const struct column_def lost_cols[] = {
	{ "ts",         "ns",    TYPE_U64,    ENC_DELTA, PRED_RISE, N, N, N, EV(ts) },
	{ "cpu",        "cpu",   TYPE_U32,    ENC_DICT,  0, N, N, N, EV(lost.cpu) },
	{ "end_ns",     "ns",    TYPE_U64,    ENC_DELTA, PRED_SAME | PRED_RISE, N, 0, N, EV(lost.end_ns) },
	{ "count",      "count", TYPE_U64,    ENC_DELTA, 0, N, N, N, EV(lost.count) },
};

static const struct column_def lib_cols[] = {
	{ "ts",         "ns",    TYPE_U64,    ENC_DELTA, PRED_RISE, N, N, N, EV(ts) },
	{ "id",         "",      TYPE_U32,    ENC_DELTA, 0, N, N, N, EV(lib.id) },
	{ "pid",        "pid",   TYPE_U32,    ENC_DELTA, 0, N, N, N, EV(lib.pid) },
	{ "probes",     "count", TYPE_U32,    ENC_DELTA, 0, N, N, N, EV(lib.probes) },
	{ "missing",    "count", TYPE_U32,    ENC_DELTA, 0, N, N, N, EV(lib.missing) },
	{ "path",       "",      TYPE_STRING, ENC_DELTA, 0, N, N, N, EV(lib.path) },
	{ "build_id",   "",      TYPE_STRING, ENC_DELTA, 0, N, N, N, EV(lib.build_id) },
};

#undef N
#define STREAM(n, c, key) { n, c, sizeof(c) / sizeof(c[0]), key }

const struct stream_def stream_defs[INGERO_NR_STREAMS] = {
	[INGERO_STREAM_CALL] = STREAM("call", call_cols, 1),
	[INGERO_STREAM_OPEN] = STREAM("open", call_cols, 1),
	[INGERO_STREAM_SWITCH] = STREAM("switch", switch_cols, 0),
	[INGERO_STREAM_WAKEUP] = STREAM("wakeup", wakeup_cols, 0),
	[INGERO_STREAM_TASK] = STREAM("task", task_cols, 0),
	[INGERO_STREAM_LOST] = STREAM("lost", lost_cols, 0),
	[INGERO_STREAM_LIB] = STREAM("lib", lib_cols, 0),
};

const char *ingero_stream_name(enum ingero_stream s)
{
	return s < INGERO_NR_STREAMS ? stream_defs[s].name : "unknown";
}

int ingero_stream_by_name(const char *name)
{
	int s;

	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (!strcmp(stream_defs[s].name, name))
			return s;
	return -1;
}

char (*idle_comms_new(uint32_t ncpus))[INGERO_COMM_LEN]
{
	uint32_t n = idle_cpus(ncpus), cpu;
	char (*names)[INGERO_COMM_LEN] = calloc(n ? n : 1, sizeof(*names));

	for (cpu = 0; names && cpu < n; cpu++)
		snprintf(names[cpu], sizeof(names[cpu]), "swapper/%u", cpu);
	return names;
}
