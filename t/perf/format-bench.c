/*
 * The trace format's benchmark on one core: a seeded synthetic mix of CUDA
 * calls, context switches and wakeups, encoded, compressed and read back.
 * Prints a table, then one JSON line per figure.
 *
 *   format-bench [EVENTS [ROUNDS]]
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "../../lib/trace.h"
#include "../../formats/format.h"

static uint64_t state = 0x1234567;

static uint64_t rnd(void)
{
	uint64_t z = (state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static uint64_t below(uint64_t n) { return rnd() % n; }
/* An exponential inter-arrival time with this mean, in ns. */
static uint64_t expo(double mean) { return 1 + (uint64_t)(-log(1.0 - uniform()) * mean); }

/* The APIs of the mix: what a PyTorch training step calls. */
enum { RT_LAUNCH, DRV_LAUNCH, RT_LASTERR, RT_MEMCPY, DRV_MEMCPY, RT_SYNC, DRV_SYNC, RT_MALLOC, RT_FREE, NAPIS };
static const struct ingero_api apis[NAPIS] = {
	[RT_LAUNCH] = { "cudaLaunchKernel", "cudart", "launch", "cudaError_t", INGERO_ROLE_LAUNCH, 6, { { 0 } } },
	[DRV_LAUNCH] = { "cuLaunchKernel", "cuda", "launch", "CUresult", INGERO_ROLE_LAUNCH, 6, { { 0 } } },
	[RT_LASTERR] = { "cudaGetLastError", "cudart", "other", "cudaError_t", INGERO_ROLE_OTHER, 0, { { 0 } } },
	[RT_MEMCPY] = { "cudaMemcpyAsync", "cudart", "copy", "cudaError_t", INGERO_ROLE_COPY, 5, { { 0 } } },
	[DRV_MEMCPY] = { "cuMemcpyDtoHAsync_v2", "cuda", "copy", "CUresult", INGERO_ROLE_COPY, 4, { { 0 } } },
	[RT_SYNC] = { "cudaStreamSynchronize", "cudart", "sync", "cudaError_t", INGERO_ROLE_SYNC, 1, { { 0 } } },
	[DRV_SYNC] = { "cuStreamSynchronize", "cuda", "sync", "CUresult", INGERO_ROLE_SYNC, 1, { { 0 } } },
	[RT_MALLOC] = { "cudaMalloc", "cudart", "alloc", "cudaError_t", INGERO_ROLE_ALLOC, 2, { { 0 } } },
	[RT_FREE] = { "cudaFree", "cudart", "alloc", "cudaError_t", INGERO_ROLE_FREE, 1, { { 0 } } },
};

#define NCPUS 8
#define NTASKS 40
#define NTHREADS 2	/* the ones that call CUDA */

struct task {
	int32_t tid, prio;
	uint32_t pid, cpu;
	const char *comm;
	int running;
};

static struct task tasks[NTASKS];
static char comms[NTASKS][16];

static void tasks_init(void)
{
	static const char *const names[] = { "journald", "sshd", "containerd", "dockerd", "rsyslogd", "cron",
					     "node_exporter", "kubelet" };
	int i;

	for (i = 0; i < NTASKS; i++) {
		struct task *t = &tasks[i];

		t->tid = 4000 + i * 7;
		t->prio = 120;
		t->pid = t->tid;
		t->cpu = i % NCPUS;
		if (i < 12) {	/* the python process and its threads */
			t->pid = 4000;
			snprintf(comms[i], 16, "%s", i == 0 ? "python3" : i < 4 ? "pt_main_thread" :
				 i < 6 ? "cuda-EvtHandlr" : "python3");
		} else if (i < 28) {
			snprintf(comms[i], 16, "kworker/%d:%d", i % NCPUS, i / NCPUS);
			t->prio = 100;
		} else {
			snprintf(comms[i], 16, "%s", names[i % 8]);
		}
		t->comm = comms[i];
	}
}

struct mix {
	struct ingero_event *ev;
	size_t n, alloc;
};

static struct ingero_event *push(struct mix *m)
{
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 1 << 16;
		m->ev = realloc(m->ev, m->alloc * sizeof(*m->ev));
		if (!m->ev)
			abort();
	}
	memset(&m->ev[m->n], 0, sizeof(*m->ev));
	return &m->ev[m->n++];
}

/* Context switches among a few dozen tasks on 8 CPUs, with the wakeups that precede them. */
static void gen_sched(struct mix *sw, struct mix *wk, uint64_t t0, uint64_t span)
{
	uint64_t next[NCPUS], last_wake = t0;
	int cur[NCPUS], c;
	static char idle[NCPUS][16];	/* the events point to them after this returns */

	for (c = 0; c < NCPUS; c++) {
		next[c] = t0 + expo(120000);
		cur[c] = -1;
		snprintf(idle[c], 16, "swapper/%d", c);
	}
	for (;;) {
		int prev, nt;
		uint64_t t;
		struct ingero_event *e;

		for (c = 0, nt = 1; nt < NCPUS; nt++)
			if (next[nt] < next[c])
				c = nt;
		t = next[c];
		if (t >= t0 + span)
			break;
		prev = cur[c];
		/* the next task: often a python thread, else any task not running elsewhere; or idle */
		do
			nt = below(3) ? (int)below(12) : (int)below(NTASKS);
		while (tasks[nt].running && nt != prev);
		if (nt == prev || below(6) == 0)
			nt = -1;
		if (nt >= 0 && below(10) < 7) {
			uint64_t wt = t - 1000 - below(4000);

			e = push(wk);
			e->stream = INGERO_STREAM_WAKEUP;
			e->ts = wt > last_wake ? wt : last_wake;
			last_wake = e->ts;
			e->wakeup.cpu = below(4) ? c : (uint32_t)below(NCPUS);
			e->wakeup.waker_tid = cur[e->wakeup.cpu] >= 0 ? tasks[cur[e->wakeup.cpu]].tid : 0;
			e->wakeup.wakee_tid = tasks[nt].tid;
			e->wakeup.wakee_prio = tasks[nt].prio;
			e->wakeup.wakee_comm = tasks[nt].comm;
			e->wakeup.target_cpu = below(8) ? tasks[nt].cpu : c;
		}
		e = push(sw);
		e->stream = INGERO_STREAM_SWITCH;
		e->ts = t;
		e->sw.cpu = c;
		e->sw.prev_tid = prev >= 0 ? tasks[prev].tid : 0;
		e->sw.prev_prio = prev >= 0 ? tasks[prev].prio : 120;
		e->sw.prev_comm = prev >= 0 ? tasks[prev].comm : idle[c];
		e->sw.prev_state = prev < 0 ? 0 : below(10) < 6 ? INGERO_STATE_SLEEPING :
			below(10) < 7 ? INGERO_STATE_PREEMPTED : below(2) ? INGERO_STATE_DISK : 0;
		e->sw.next_tid = nt >= 0 ? tasks[nt].tid : 0;
		e->sw.next_prio = nt >= 0 ? tasks[nt].prio : 120;
		e->sw.next_comm = nt >= 0 ? tasks[nt].comm : idle[c];
		if (prev >= 0)
			tasks[prev].running = 0;
		if (nt >= 0) {
			tasks[nt].running = 1;
			tasks[nt].cpu = c;
		}
		cur[c] = nt;
		next[c] = t + expo(120000);
	}
}

struct calls {
	struct ingero_event *ev;
	size_t n, alloc;
};

static uint64_t devptr(void)
{
	return 0x7f3a40000000ull + (below(512) << 21);
}

static void call_args(struct ingero_event *e, unsigned api, const uint64_t *kern)
{
	uint64_t *a = e->call.args;

	switch (api) {
	case RT_LAUNCH:
	case DRV_LAUNCH:
		a[0] = kern[below(below(4) ? 8 : 48)];
		a[1] = below(3) ? 1024 : 80 + below(4) * 128;
		a[2] = 1;
		a[3] = api == RT_LAUNCH ? 0x7ffd2a1c3000ull + below(16) * 64 : 1;
		a[4] = below(2) ? 256 : 128;
		a[5] = api == RT_LAUNCH ? 0x55d1c3a0e000ull : 1;
		break;
	case RT_MEMCPY:
	case DRV_MEMCPY:
		a[0] = devptr();
		a[1] = devptr();
		a[2] = 4096ull << below(8);
		a[3] = 2;
		if (api == RT_MEMCPY)
			a[4] = 0x55d1c3a0e000ull;
		break;
	case RT_SYNC:
	case DRV_SYNC:
		a[0] = 0x55d1c3a0e000ull;
		break;
	case RT_MALLOC:
		a[0] = 0x7ffd2a1c3f00ull;
		a[1] = 2ull << (20 + below(6));
		e->call.out = devptr();
		break;
	case RT_FREE:
		a[0] = devptr();
		break;
	}
}

static int end_cmp(const void *a, const void *b)
{
	const struct ingero_event *x = a, *y = b;

	if (x->call.end_ns != y->call.end_ns)
		return x->call.end_ns < y->call.end_ns ? -1 : 1;
	return x->call.id < y->call.id ? -1 : 1;
}

/* Two threads calling CUDA: kernel launches (the runtime's, and the driver's inside), copies, syncs. */
static void gen_calls(struct mix *m, uint64_t t0, uint64_t span)
{
	uint64_t next[NTHREADS] = { t0, t0 + 5000 }, id = 1, kern[48];
	int i;

	for (i = 0; i < 48; i++)
		kern[i] = 0x7f3b12000000ull + below(1 << 20) * 16;
	for (;;) {
		int th = next[1] < next[0];
		uint64_t t = next[th], d;
		unsigned outer, inner, r = (unsigned)below(1000);
		struct ingero_event *o, *in;

		if (t >= t0 + span)
			break;
		outer = r < 700 ? RT_LAUNCH : r < 850 ? RT_LASTERR : r < 950 ? RT_MEMCPY : r < 990 ? RT_SYNC :
			r < 995 ? RT_MALLOC : RT_FREE;
		if (th == 1 && outer == RT_LAUNCH)
			outer = RT_MEMCPY;
		inner = outer == RT_LAUNCH ? DRV_LAUNCH : outer == RT_MEMCPY ? DRV_MEMCPY :
			outer == RT_SYNC ? DRV_SYNC : NAPIS;
		d = outer == RT_LAUNCH ? 3500 + expo(1500) : outer == RT_LASTERR ? 150 + below(100) :
			outer == RT_MEMCPY ? 6000 + expo(4000) : outer == RT_SYNC ? 50000 + expo(800000) :
			20000 + expo(100000);
		o = push(m);
		o->stream = INGERO_STREAM_CALL;
		o->ts = t;
		o->call.end_ns = t + d;
		o->call.id = id++;
		o->call.pid = 4000;
		o->call.tid = tasks[th ? 3 : 0].tid;
		o->call.cpu = below(20) ? (uint32_t)th * 3 : (uint32_t)below(NCPUS);
		o->call.api = outer;
		o->call.ret = below(2000) ? 0 : 700;
		call_args(o, outer, kern);
		if (inner != NAPIS) {
			in = push(m);
			o = &m->ev[m->n - 2];
			*in = *o;
			in->ts = t + 800 + below(400);
			in->call.end_ns = o->call.end_ns - 300 - below(200);
			in->call.id = id++;
			in->call.parent = o->call.id;
			in->call.api = inner;
			memset(in->call.args, 0, sizeof(in->call.args));
			call_args(in, inner, kern);
		}
		next[th] = o->call.end_ns + (th ? expo(200000) : 1500 + expo(22000));
	}
	qsort(m->ev, m->n, sizeof(*m->ev), end_cmp);
}

/* The three sorted streams merged into the order a recorder adds them: by key. */
static struct mix merge(struct mix *a, struct mix *b, struct mix *c)
{
	struct mix *s[3] = { a, b, c }, out = { 0 };
	size_t pos[3] = { 0 };

	for (;;) {
		int best = -1, i;

		for (i = 0; i < 3; i++)
			if (pos[i] < s[i]->n && (best < 0 || ingero_event_key(&s[i]->ev[pos[i]]) <
						 ingero_event_key(&s[best]->ev[pos[best]])))
				best = i;
		if (best < 0)
			break;
		*push(&out) = s[best]->ev[pos[best]++];
	}
	return out;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const stream_names[] = { "call", "open", "switch", "wakeup", "task", "lost", "lib" };

int main(int argc, char **argv)
{
	size_t want = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000, i;
	int rounds = argc > 2 ? atoi(argv[2]) : 3, r, s, c, fd;
	struct mix sw = { 0 }, wk = { 0 }, calls = { 0 }, all;
	struct ingero_header h = { .start_ns = 1000000000, .realtime_ns = 1700000000000000000ull, .ncpus = NCPUS,
				   .host = "bench", .kernel = "6.18.0", .clock = "mono", .boot_id = "b",
				   .command = "python3 train.py", .napis = NAPIS, .apis = apis };
	struct column_bytes cb;
	struct ingero_trace_stats st;
	struct ingero_writer *w;
	struct ingero_reader *rd;
	struct ingero_event ev;
	double span_s, t, enc = 1e9, dec = 1e9;
	uint64_t span, size = 0, nread = 0, sum = 0, per[INGERO_NR_STREAMS] = { 0 };

	tasks_init();
	/* about 150k events per second of trace: 67k switches, 47k wakeups, 40k calls */
	span_s = want / 150000.0;
	span = (uint64_t)(span_s * 1e9);
	gen_sched(&sw, &wk, h.start_ns, span);
	gen_calls(&calls, h.start_ns, span);
	all = merge(&calls, &sw, &wk);
	for (i = 0; i < all.n; i++)
		per[all.ev[i].stream]++;

	for (r = 0; r < rounds; r++) {
		fd = memfd_create("bench", 0);
		w = ingero_writer_new(fd, &h);
		if (!w)
			return 1;
		if (r == 0)
			memset(&cb, 0, sizeof(cb)), writer_measure_columns(w, &cb);
		t = now();
		for (i = 0; i < all.n; i++)
			if (ingero_writer_add(w, &all.ev[i]))
				return 1;
		if (ingero_writer_close(w))
			return 1;
		t = now() - t;
		/* the first round also measures the columns, so it counts only when alone */
		if ((r > 0 || rounds < 2) && t < enc)
			enc = t;
		size = lseek(fd, 0, SEEK_END);

		rd = ingero_reader_open_fd(fd, "bench");
		if (!rd)
			return 1;
		t = now();
		nread = 0;
		while (ingero_reader_next(rd, &ev) == 1) {
			sum += ev.ts;
			nread++;
		}
		t = now() - t;
		if (t < dec)
			dec = t;
		ingero_reader_stats(rd, &st);
		ingero_reader_close(rd);
		close(fd);
	}
	if (nread != all.n) {
		fprintf(stderr, "format-bench: read %" PRIu64 " events of %zu\n", nread, all.n);
		return 1;
	}

	printf("format benchmark: %zu events (%.2f s of trace: %" PRIu64 " calls, %" PRIu64 " switches, %" PRIu64
	       " wakeups), best of %d\n\n", all.n, span_s, per[0], per[2], per[3], rounds);
	printf("  %-28s %14.3f\n", "bytes per event", (double)size / all.n);
	printf("  %-28s %14.0f\n", "encode+compress events/s", all.n / enc);
	printf("  %-28s %14.0f\n", "decode events/s", all.n / dec);
	printf("  %-28s %14" PRIu64 "\n", "file bytes", size);
	printf("  %-28s %14" PRIu64 "\n\n", "blocks", st.blocks);
	printf("  %-8s %-12s %12s %12s %12s\n", "stream", "column", "raw B/ev", "zstd B/ev", "of all B/ev");
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		for (c = 0; c < stream_defs[s].ncols && per[s]; c++)
			printf("  %-8s %-12s %12.3f %12.3f %12.3f\n", stream_names[s], stream_defs[s].cols[c].name,
			       (double)cb.raw[s][c] / per[s], (double)cb.zst[s][c] / per[s],
			       (double)cb.zst[s][c] / all.n);
	printf("\n{\"bench\":\"format\",\"figure\":\"bytes_per_event\",\"value\":%.4f,\"events\":%zu}\n",
	       (double)size / all.n, all.n);
	printf("{\"bench\":\"format\",\"figure\":\"encode_events_per_s\",\"value\":%.0f}\n", all.n / enc);
	printf("{\"bench\":\"format\",\"figure\":\"decode_events_per_s\",\"value\":%.0f}\n", all.n / dec);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		for (c = 0; c < stream_defs[s].ncols && per[s]; c++)
			printf("{\"bench\":\"format\",\"figure\":\"column_bytes_per_event\",\"stream\":\"%s\","
			       "\"column\":\"%s\",\"raw\":%.4f,\"zstd\":%.4f}\n", stream_names[s],
			       stream_defs[s].cols[c].name, (double)cb.raw[s][c] / per[s],
			       (double)cb.zst[s][c] / per[s]);
	free(sw.ev);
	free(wk.ev);
	free(calls.ev);
	free(all.ev);
	return sum == 42;	/* keeps the read loop from being optimised away */
}
