/*
 * Writes a known trace for the tests and the fuzzer's seeds: exact counts
 * per stream and per API, two libraries, two losses, over three seconds.
 * With --odd, a small trace of what a reader must print with care instead:
 * strings that are not valid UTF-8 or hold control bytes and ESC sequences,
 * an event before the start, a call that returns before its entry, an API
 * beyond the table.
 *
 * With --text DESC, the trace a description gives, event by event (see
 * write_text()).
 *
 *   mktrace [--scale N] [--no-footer] [--odd] FILE
 *   mktrace --text DESC FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../lib/trace.h"

/* The runtime calls that more than one of the traces below declare. */
#define CUDA_MALLOC { "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2, \
		      { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } }
#define CUDA_FREE { "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1, \
		    { { "void *", "devPtr", INGERO_ARG_DEVPTR } } }
#define CUDA_MEMCPY { "cudaMemcpy", "cudart", "copy", "cudaError_t", INGERO_ROLE_COPY, 3, \
		      { { "void *", "dst", INGERO_ARG_PTR }, { "const void *", "src", INGERO_ARG_PTR }, \
			{ "size_t", "count", INGERO_ARG_SIZE } } }

static const struct ingero_api apis[] = {
	CUDA_MALLOC,
	CUDA_FREE,
	{ "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 2,
	  { { "const void *", "func", INGERO_ARG_HANDLE }, { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	CUDA_MEMCPY,
	{ "cuLaunchKernel", "cuda", "launch", "CUresult", INGERO_ROLE_LAUNCH, 1,
	  { { "CUfunction", "f", INGERO_ARG_HANDLE } } },
};

#define START 1000000000ull

/* api of call i: 10% cudaMalloc, 10% cudaFree, 60% cudaLaunchKernel, 20% cudaMemcpy */
static uint32_t api_of(unsigned i)
{
	unsigned k = i % 10;

	return k == 0 ? 0 : k == 1 ? 1 : k < 8 ? 2 : 3;
}

static void add(struct ingero_writer *w, const struct ingero_event *e)
{
	if (ingero_writer_add(w, e)) {
		fprintf(stderr, "mktrace: cannot add an event\n");
		exit(1);
	}
}

/* A quote, a backslash, a space, a newline, a tab, ^A, DEL, a stray 0xff, an '=' and valid UTF-8. */
#define ODD "a\"b\\c d\n\te\x01\x7f\xff=caf\xc3\xa9"
/* ESC sequences a terminal obeys: clear the screen, set the window's title, hide what follows */
#define CLEAR "\x1b[2J"
#define TITLE "\x1b]0;pwned\x07"
#define HIDE "\x1b[8m"
/* U+009B, the C1 control CSI, valid UTF-8 that some terminals obey as ESC [: clear the screen */
#define C1_CLEAR "\xc2\x9b" "2J"
/* A comm the kernel cut at 15 bytes, in the middle of a character: "trainer-" and three CJK, the last cut */
#define CUT_COMM "trainer-\xe6\x97\xa5\xe6\x9c\xac\xe8"

static const struct ingero_api odd_apis[] = {
	CUDA_MALLOC,
	{ "cuda" ODD, "cudart" HIDE, "odd", "cudaError_t", 0, 1, { { "int", "n " ODD, INGERO_ARG_INT } } },
};

static void write_odd(struct ingero_writer *w)
{
	struct ingero_event e;

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_TASK;
	e.ts = START - 500;	/* before the start */
	e.task = (struct ingero_task){ INGERO_TASK_COMM, 100, 100, 0, 0, CUT_COMM };
	add(w, &e);
	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_LIB;
	e.ts = START + 600;
	e.lib = (struct ingero_lib){ 1, 100, 2, 0, "/opt/" ODD "/libcudart.so", "0badc0de" HIDE C1_CLEAR };
	add(w, &e);

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_CALL;
	e.call = (struct ingero_call){ .pid = 100, .tid = 100, .cpu = 1, .ret = 0 };
	e.ts = START + 10000;
	e.call.end_ns = e.ts + 2000;
	e.call.id = 1;
	e.call.api = 1;
	e.call.args[0] = 7;
	add(w, &e);
	e.ts = START + 20000;
	e.call.end_ns = e.ts - 1000;	/* a return before its entry */
	e.call.id = 2;
	e.call.api = 0;
	e.call.args[0] = 0x7000;
	e.call.args[1] = 4096;
	add(w, &e);
	e.ts = START + 30000;
	e.call.end_ns = e.ts + 3000;
	e.call.id = 3;
	e.call.api = 9;	/* beyond the table */
	add(w, &e);

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_SWITCH;
	e.ts = START + 40000;
	e.sw = (struct ingero_switch){ 0, 100, 0, 120, 120, INGERO_STATE_SLEEPING, CUT_COMM, ODD };
	add(w, &e);
	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_WAKEUP;
	e.ts = START + 50000;
	e.wakeup = (struct ingero_wakeup){ 0, 1, 0, 100, 120, CUT_COMM };
	add(w, &e);
	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_LOST;
	e.ts = START + 60000;
	e.lost = (struct ingero_lost){ 1, START + 61000, 3 };
	add(w, &e);
}

/*
 * --text DESC: a trace written from a description, one event a line, for the
 * analysis tests whose true answer is computed by hand. Times are ns after
 * the start; fields are key=value; '#' starts a comment.
 *
 *   name tid=612 comm=journald           the comm that switches name tid by
 *   call t=100 end=300 tid=1001 api=cudaFree [id=] [parent=] [pid=] [cpu=] [ret=] [out=] [a0=] [a1=] [a2=]
 *   open t= end= tid= api=               a call that never returned
 *   switch t= cpu= prev= state=R|R+|S|D|X next= [prev_comm=] [next_comm=]
 *   wake t= cpu= waker= wakee= target=
 *   fork t= pid= tid= cpid= ctid=   exit t= pid= tid=   comm t= pid= tid= comm=
 *   lost t= cpu= end= count=
 *
 * A call's id is its line's order among the calls unless given; pid is 1000.
 */
static const struct ingero_api text_apis[] = {
	CUDA_MALLOC,
	CUDA_FREE,
	{ "cudaStreamSynchronize", "cudart", "sync", "cudaError_t", INGERO_ROLE_SYNC, 1,
	  { { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	CUDA_MEMCPY,
	{ "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 2,
	  { { "const void *", "func", INGERO_ARG_HANDLE }, { "cudaStream_t", "stream", INGERO_ARG_STREAM } },
	  INGERO_API_ENTRY_ONLY },
	{ "cuMemAlloc_v2", "cuda", "alloc", "CUresult", INGERO_ROLE_ALLOC, 2,
	  { { "CUdeviceptr *", "dptr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "bytesize", INGERO_ARG_SIZE } } },
	{ "cuMemFree_v2", "cuda", "alloc", "CUresult", INGERO_ROLE_FREE, 1,
	  { { "CUdeviceptr", "dptr", INGERO_ARG_DEVPTR } } },
	{ "cudaMallocAsync", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 3,
	  { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE },
	    { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	{ "cudaFreeAsync", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 2,
	  { { "void *", "devPtr", INGERO_ARG_DEVPTR }, { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	{ "cudaDeviceSynchronize", "cudart", "sync", "cudaError_t", INGERO_ROLE_SYNC, 0, { { 0 } } },
};

#define TEXT_NAPIS (sizeof(text_apis) / sizeof(text_apis[0]))
#define TEXT_NAMES 64

static struct { int32_t tid; char comm[INGERO_COMM_LEN]; } names[TEXT_NAMES];
static unsigned nnames;

static const char *name_of(int32_t tid)
{
	unsigned i;

	for (i = 0; i < nnames; i++)
		if (names[i].tid == tid)
			return names[i].comm;
	return tid ? "task" : "swapper/0";
}

static int text_fail(unsigned line, const char *what)
{
	fprintf(stderr, "mktrace: line %u: %s\n", line, what);
	exit(1);
}

/* The comms a description gives, kept as long as the events that point to them. */
static char text_comms[1 << 16];
static size_t text_comms_used;

/* A line's comm, kept; without one, the comm named for tid. */
static const char *comm_or_name(const char *comm, int32_t tid, unsigned line)
{
	size_t n;
	char *kept;

	if (!comm)
		return name_of(tid);
	n = strlen(comm) + 1;
	if (n > sizeof(text_comms) - text_comms_used)
		text_fail(line, "too many comms");
	kept = memcpy(text_comms + text_comms_used, comm, n);
	text_comms_used += n;
	return kept;
}

/* The value of key in the line's fields, or NULL. */
static const char *field(char **f, unsigned n, const char *key)
{
	size_t len = strlen(key);
	unsigned i;

	for (i = 1; i < n; i++)
		if (!strncmp(f[i], key, len) && f[i][len] == '=')
			return f[i] + len + 1;
	return NULL;
}

static uint64_t num(char **f, unsigned n, const char *key, unsigned line, int needed, uint64_t dflt)
{
	const char *v = field(f, n, key);

	if (!v) {
		if (needed)
			text_fail(line, key);
		return dflt;
	}
	return strtoull(v, NULL, 0);
}

static uint32_t state_of(const char *s, unsigned line)
{
	if (!s || !strcmp(s, "R"))
		return INGERO_STATE_RUNNING;
	if (!strcmp(s, "R+"))
		return INGERO_STATE_PREEMPTED;
	if (!strcmp(s, "S"))
		return INGERO_STATE_SLEEPING;
	if (!strcmp(s, "D"))
		return INGERO_STATE_DISK;
	if (!strcmp(s, "X"))
		return INGERO_STATE_DEAD;
	return text_fail(line, "state"), 0;
}

static int by_key(const void *x, const void *y)
{
	const struct ingero_event *p = x, *q = y;
	uint64_t a = ingero_event_key(p), b = ingero_event_key(q);

	return a < b ? -1 : a > b;
}

static int write_text(const char *desc, const char *path)
{
	struct ingero_header h = {
		.start_ns = START, .realtime_ns = 1700000000000000000ull, .ncpus = 4,
		.host = "testhost", .kernel = "6.1.0-test", .clock = "mono",
		.boot_id = "8c6a1d5e-0b7f-4c2e-9a51-3f0d2b7e6c14", .command = desc,
		.napis = TEXT_NAPIS, .apis = text_apis,
	};
	FILE *in = fopen(desc, "r");
	struct ingero_event *evs = NULL, *e;
	size_t nevs = 0, cap = 0, i;
	struct ingero_writer *w;
	unsigned line = 0;
	uint64_t ncalls = 0;
	char buf[1024];
	int fd;

	if (!in) {
		perror(desc);
		return 1;
	}
	while (fgets(buf, sizeof(buf), in)) {
		char *f[32], *p = strchr(buf, '#'), *kind;
		unsigned n = 0;

		line++;
		if (p)
			*p = 0;
		for (p = strtok(buf, " \t\n"); p && n < 32; p = strtok(NULL, " \t\n"))
			f[n++] = p;
		if (!n)
			continue;
		kind = f[0];
		if (!strcmp(kind, "name")) {
			const char *c = field(f, n, "comm");

			if (nnames == TEXT_NAMES || !c)
				text_fail(line, "name");
			names[nnames].tid = (int32_t)num(f, n, "tid", line, 1, 0);
			snprintf(names[nnames++].comm, INGERO_COMM_LEN, "%s", c);
			continue;
		}
		if (nevs == cap) {
			cap = cap ? 2 * cap : 256;
			evs = realloc(evs, cap * sizeof(*evs));
			if (!evs)
				abort();
		}
		e = &evs[nevs++];
		memset(e, 0, sizeof(*e));
		e->ts = START + num(f, n, "t", line, 1, 0);
		if (!strcmp(kind, "call") || !strcmp(kind, "open")) {
			const char *api = field(f, n, "api");
			uint32_t k;

			for (k = 0; api && k < TEXT_NAPIS && strcmp(text_apis[k].name, api); k++)
				;
			if (!api || k == TEXT_NAPIS)
				text_fail(line, "api");
			e->stream = kind[0] == 'c' ? INGERO_STREAM_CALL : INGERO_STREAM_OPEN;
			ncalls++;
			e->call = (struct ingero_call){
				.end_ns = START + num(f, n, "end", line, 1, 0), .id = num(f, n, "id", line, 0, ncalls),
				.parent = num(f, n, "parent", line, 0, 0), .pid = (uint32_t)num(f, n, "pid", line, 0, 1000),
				.tid = (uint32_t)num(f, n, "tid", line, 1, 0), .cpu = (uint32_t)num(f, n, "cpu", line, 0, 0),
				.api = k, .ret = num(f, n, "ret", line, 0, 0), .out = num(f, n, "out", line, 0, 0),
				.args = { num(f, n, "a0", line, 0, 0), num(f, n, "a1", line, 0, 0),
					  num(f, n, "a2", line, 0, 0) },
			};
		} else if (!strcmp(kind, "switch")) {
			e->stream = INGERO_STREAM_SWITCH;
			e->sw = (struct ingero_switch){
				.cpu = (uint32_t)num(f, n, "cpu", line, 1, 0),
				.prev_tid = (int32_t)num(f, n, "prev", line, 1, 0),
				.next_tid = (int32_t)num(f, n, "next", line, 1, 0), .prev_prio = 120, .next_prio = 120,
				.prev_state = state_of(field(f, n, "state"), line),
			};
			e->sw.prev_comm = comm_or_name(field(f, n, "prev_comm"), e->sw.prev_tid, line);
			e->sw.next_comm = comm_or_name(field(f, n, "next_comm"), e->sw.next_tid, line);
		} else if (!strcmp(kind, "wake")) {
			e->stream = INGERO_STREAM_WAKEUP;
			e->wakeup = (struct ingero_wakeup){
				.cpu = (uint32_t)num(f, n, "cpu", line, 0, 0),
				.target_cpu = (uint32_t)num(f, n, "target", line, 1, 0),
				.waker_tid = (int32_t)num(f, n, "waker", line, 1, 0),
				.wakee_tid = (int32_t)num(f, n, "wakee", line, 1, 0), .wakee_prio = 120,
			};
			e->wakeup.wakee_comm = name_of(e->wakeup.wakee_tid);
		} else if (!strcmp(kind, "fork") || !strcmp(kind, "exit") || !strcmp(kind, "comm")) {
			const char *c = field(f, n, "comm");

			e->stream = INGERO_STREAM_TASK;
			e->task = (struct ingero_task){
				.kind = kind[0] == 'f' ? INGERO_TASK_FORK : kind[0] == 'e' ? INGERO_TASK_EXIT :
					INGERO_TASK_COMM,
				.pid = (uint32_t)num(f, n, "pid", line, 1, 0), .tid = (uint32_t)num(f, n, "tid", line, 1, 0),
				.child_pid = (uint32_t)num(f, n, "cpid", line, 0, 0),
				.child_tid = (uint32_t)num(f, n, "ctid", line, 0, 0),
				.comm = comm_or_name(c, (int32_t)num(f, n, "tid", line, 1, 0), line),
			};
		} else if (!strcmp(kind, "lost")) {
			e->stream = INGERO_STREAM_LOST;
			e->lost = (struct ingero_lost){ (uint32_t)num(f, n, "cpu", line, 1, 0),
							START + num(f, n, "end", line, 1, 0), num(f, n, "count", line, 0, 1) };
		} else {
			text_fail(line, "unknown event");
		}
	}
	fclose(in);
	/* each stream in the order of its key; lines of equal keys keep theirs */
	for (i = 1; i < nevs; i++) {
		struct ingero_event x = evs[i];
		size_t j = i;

		for (; j > 0 && by_key(&evs[j - 1], &x) > 0; j--)
			evs[j] = evs[j - 1];
		evs[j] = x;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !(w = ingero_writer_new(fd, &h))) {
		perror(path);
		return 1;
	}
	for (i = 0; i < nevs; i++)
		add(w, &evs[i]);
	if (ingero_writer_close(w) || close(fd)) {
		fprintf(stderr, "mktrace: cannot write '%s'\n", path);
		return 1;
	}
	free(evs);
	return 0;
}

int main(int argc, char **argv)
{
	struct ingero_header h = {
		.start_ns = START, .realtime_ns = 1700000000000000000ull, .ncpus = 4,
		.host = "testhost", .kernel = "6.1.0-test", .clock = "mono",
		.boot_id = "8c6a1d5e-0b7f-4c2e-9a51-3f0d2b7e6c14", .command = "python3 train.py --epochs 1",
		.napis = sizeof(apis) / sizeof(apis[0]), .apis = apis,
	};
	static const char *const comms[] = { "python3", "pt_worker", "journald", "kworker/1:0" };
	unsigned scale = 1, footer = 1, odd = 0, i, n;
	const char *path = NULL;
	struct ingero_writer *w;
	struct ingero_event e;
	int fd;

	if (argc == 4 && !strcmp(argv[1], "--text"))
		return write_text(argv[2], argv[3]);
	for (i = 1; i < (unsigned)argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < (unsigned)argc)
			scale = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-footer"))
			footer = 0;
		else if (!strcmp(argv[i], "--odd"))
			odd = 1;
		else
			path = argv[i];
	}
	if (!path || !scale) {
		fprintf(stderr, "usage: mktrace [--scale N] [--no-footer] [--odd] FILE\n       mktrace --text DESC FILE\n");
		return 129;
	}
	if (odd) {
		h.host = "h\xc3\xb6st " ODD;
		h.kernel = "6.1.0-test" CLEAR;
		h.clock = "mono" TITLE;
		h.boot_id = "\r8c6a1d5e-0b7f-4c2e-9a51-3f0d2b7e6c14";
		h.command = "python3 " ODD;
		h.napis = sizeof(odd_apis) / sizeof(odd_apis[0]);
		h.apis = odd_apis;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !(w = ingero_writer_new(fd, &h))) {
		perror(path);
		return 1;
	}
	if (odd) {
		write_odd(w);
		goto done;
	}

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_LIB;
	e.ts = START + 1000;
	e.lib = (struct ingero_lib){ 1, 0, 4, 0, "/usr/lib/x86_64-linux-gnu/libcudart.so.13", "" };
	add(w, &e);
	e.ts = START + 2000;
	e.lib = (struct ingero_lib){ 2, 100, 1, 2, "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
				     "6d2f0b4c1e9a8f7d3c5b2a1908e7d6c5b4a39281" };
	add(w, &e);

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_TASK;
	e.ts = START + 500;
	e.task = (struct ingero_task){ INGERO_TASK_COMM, 100, 100, 0, 0, "python3" };
	add(w, &e);
	e.ts = START + 600;
	e.task = (struct ingero_task){ INGERO_TASK_FORK, 100, 100, 100, 101, "python3" };
	add(w, &e);
	e.ts = START + 700;
	e.task = (struct ingero_task){ INGERO_TASK_COMM, 100, 101, 0, 0, "pt_worker" };
	add(w, &e);

	/* 1000 calls a scale, one every 3 ms / scale, each 20 us long, on threads 100 and 101 */
	n = 1000 * scale;
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.stream = INGERO_STREAM_CALL;
		e.ts = START + 10000 + (uint64_t)i * 3000000 / scale;
		e.call.end_ns = e.ts + 20000;
		e.call.id = i + 1;
		e.call.pid = 100;
		e.call.tid = 100 + i % 2;
		e.call.cpu = i % 4;
		e.call.api = api_of(i);
		e.call.args[0] = 0x7f0000000000ull + (uint64_t)(i / 10) * 0x100000;
		e.call.args[1] = e.call.api == 0 ? 1048576 : 0;
		e.call.ret = i % 100 == 99 ? 2 : 0;	/* cudaErrorMemoryAllocation, now and then */
		e.call.out = e.call.api == 0 ? e.call.args[0] : 0;
		add(w, &e);
	}
	/* 500 switches and 300 wakeups a scale, spread over the same 3 s */
	n = 500 * scale;
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.stream = INGERO_STREAM_SWITCH;
		e.ts = START + 5000 + (uint64_t)i * 6000000 / scale;
		e.sw.cpu = i % 4;
		e.sw.prev_tid = 100 + i % 4;
		e.sw.next_tid = 100 + (i + 1) % 4;
		e.sw.prev_prio = 120;
		e.sw.next_prio = 120;
		e.sw.prev_state = i % 3 ? INGERO_STATE_SLEEPING : INGERO_STATE_PREEMPTED;
		e.sw.prev_comm = comms[i % 4];
		e.sw.next_comm = comms[(i + 1) % 4];
		add(w, &e);
	}
	n = 300 * scale;
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.stream = INGERO_STREAM_WAKEUP;
		e.ts = START + 4000 + (uint64_t)i * 10000000 / scale;
		e.wakeup.cpu = i % 4;
		e.wakeup.target_cpu = (i + 1) % 4;
		e.wakeup.waker_tid = 102;
		e.wakeup.wakee_tid = 100 + i % 2;
		e.wakeup.wakee_prio = 120;
		e.wakeup.wakee_comm = comms[i % 2];
		add(w, &e);
	}
	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_LOST;
	e.ts = START + 1500000000ull;
	e.lost = (struct ingero_lost){ 1, START + 1500004000ull, 17 };
	add(w, &e);
	e.ts = START + 2500000000ull;
	e.lost = (struct ingero_lost){ 3, START + 2500001000ull, 0 };
	add(w, &e);

	memset(&e, 0, sizeof(e));
	e.stream = INGERO_STREAM_OPEN;
	e.ts = START + 2999000000ull;
	e.call = (struct ingero_call){ .end_ns = START + 3000000000ull, .id = 1000 * scale + 1, .pid = 100,
				       .tid = 100, .cpu = 0, .api = 3 };
	add(w, &e);

done:
	if (footer ? ingero_writer_close(w) : ingero_writer_flush(w)) {
		fprintf(stderr, "mktrace: cannot write '%s'\n", path);
		return 1;
	}
	/* without its footer, the trace of a recorder that died: it frees nothing either */
	_exit(close(fd) ? 1 : 0);
}
