/*
 * Writes a known trace for the tests and the fuzzer's seeds: exact counts
 * per stream and per API, two libraries, two losses, over three seconds.
 * With --odd, a small trace of what a reader must print with care instead:
 * strings that are not valid UTF-8 or hold control bytes, an event before
 * the start, a call that returns before its entry, an API beyond the table.
 *
 *   mktrace [--scale N] [--no-footer] [--odd] FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../lib/trace.h"

static const struct ingero_api apis[] = {
	{ "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2,
	  { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } },
	{ "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1,
	  { { "void *", "devPtr", INGERO_ARG_DEVPTR } } },
	{ "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 2,
	  { { "const void *", "func", INGERO_ARG_HANDLE }, { "cudaStream_t", "stream", INGERO_ARG_STREAM } } },
	{ "cudaMemcpy", "cudart", "copy", "cudaError_t", INGERO_ROLE_COPY, 3,
	  { { "void *", "dst", INGERO_ARG_PTR }, { "const void *", "src", INGERO_ARG_PTR },
	    { "size_t", "count", INGERO_ARG_SIZE } } },
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
/* A comm the kernel cut at 15 bytes, in the middle of a character: "trainer-" and three CJK, the last cut */
#define CUT_COMM "trainer-\xe6\x97\xa5\xe6\x9c\xac\xe8"

static const struct ingero_api odd_apis[] = {
	{ "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2,
	  { { "void **", "devPtr", INGERO_ARG_OUT_DEVPTR }, { "size_t", "size", INGERO_ARG_SIZE } } },
	{ "cuda" ODD, "cudart", "odd", "cudaError_t", 0, 1, { { "int", "n " ODD, INGERO_ARG_INT } } },
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
	e.lib = (struct ingero_lib){ 1, 100, 2, 0, "/opt/" ODD "/libcudart.so", "" };
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
		fprintf(stderr, "usage: mktrace [--scale N] [--no-footer] [--odd] FILE\n");
		return 129;
	}
	if (odd) {
		h.host = "h\xc3\xb6st " ODD;
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
