/*
 * A known trace, written with the trace writer: run bare, it reads it back
 * through the reader and checks the engine's answers (TAP); with a path it
 * only writes it, for t3000's golden output; with --odd PATH it writes it made
 * odd (see odd_trace()); with --hostile PATH it writes it with the strings of
 * hostile_strings; with --large N PATH it writes a trace of about N
 * million events, and --bench PATH measures the engine on it.
 */
#include <fcntl.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "../../lib/analysis.h"
#include "../../lib/trace.h"
#include "analysis-util.h"

#define APP 1001
#define GPU 1002
#define JOURNALD 612
#define HOG 700
#define START 1000000000ULL

/* The strings of the trace: what the machine and the programs named themselves. */
struct strings {
	const char *host, *kernel, *command, *lib, *build_id;
	const char *trainer, *gpu, *journald;	/* comms */
	const char *sync;			/* the name of the SYNC API */
};

static const struct strings plain_strings = {
	"testhost", "6.18.0-test", "python3 train.py --steps 100", "/usr/lib/libcudart.so.13", "0123456789abcdef",
	"trainer", "gpu", "journald", "cudaStreamSynchronize",
};

/*
 * Strings a text report must not print as they are: a program can put any
 * byte but NUL in its comm (prctl(PR_SET_NAME)), its command line and the
 * paths it loads, and a machine in its names. ESC sequences that clear the
 * screen, set the window's title, colour, blink or hide what follows; a
 * newline and a carriage return that start a line of their own; a byte of
 * no UTF-8 character; and valid UTF-8, which must print unchanged.
 */
static const struct strings hostile_strings = {
	"gpu\x1b]0;pwned\x07" "box", "6.18.0-test\rpwned", "python3 train.py --name \x1b[2J\nfake line",
	"/opt/\x1b[31mcuda\n/libcudart.so.13", "0123\x1b[8m4567",
	"tr\nainer", "\xc3\xbcn\xc3\xaf" "code", "evil\x1b[2J", "cudaSync\x1b[5m\xff",
};

static const struct strings *str = &plain_strings;

static struct ingero_event *evs;
static size_t nevs, cap;
static uint64_t next_id = 1, ncalls;

static struct ingero_event *push(uint32_t stream, uint64_t ts)
{
	if (nevs == cap) {
		cap = cap ? 2 * cap : 4096;
		evs = realloc(evs, cap * sizeof(*evs));
		if (!evs)
			abort();
	}
	memset(&evs[nevs], 0, sizeof(evs[0]));
	evs[nevs].stream = stream;
	evs[nevs].ts = ts;
	return &evs[nevs++];
}

static const char *comm_of(int32_t tid)
{
	switch (tid) {
	case 0: return "swapper";
	case APP: return str->trainer;
	case GPU: return str->gpu;
	case JOURNALD: return str->journald;
	case HOG: return "hog";
	}
	return "worker";
}

static uint64_t call(uint32_t api, int32_t tid, uint64_t ts, uint64_t end, uint64_t parent,
		     uint64_t a0, uint64_t a1, uint64_t out, uint64_t ret)
{
	struct ingero_event *e = push(INGERO_STREAM_CALL, ts);

	ncalls++;

	e->call = (struct ingero_call){ .end_ns = end, .id = next_id++, .parent = parent, .pid = APP - 1,
					.tid = (uint32_t)tid, .api = api, .args = { a0, a1 }, .out = out, .ret = ret };
	return e->call.id;
}

static void sw(uint64_t ts, uint32_t cpu, int32_t prev, uint32_t state, int32_t next)
{
	struct ingero_event *e = push(INGERO_STREAM_SWITCH, ts);

	e->sw = (struct ingero_switch){ .cpu = cpu, .prev_tid = prev, .next_tid = next, .prev_state = state,
					.prev_comm = comm_of(prev), .next_comm = comm_of(next) };
}

static void wake(uint64_t ts, uint32_t cpu, int32_t waker, int32_t wakee, uint32_t target)
{
	struct ingero_event *e = push(INGERO_STREAM_WAKEUP, ts);

	e->wakeup = (struct ingero_wakeup){ .cpu = cpu, .target_cpu = target, .waker_tid = waker,
					    .wakee_tid = wakee, .wakee_comm = comm_of(wakee) };
}

/*
 * The known trace: 100 cudaFree of 400 us, 5 of them preempted on CPU 0 by
 * journald for 1.2 ms; 10 syncs that sleep 85 us until the GPU thread wakes
 * them; allocations through cudaMalloc (around cuMemAlloc_v2), two never
 * freed; one failed call, 3 events lost on CPU 1, a sync still open.
 */
static void known_trace(void)
{
	uint64_t t = START + 1000, id;
	struct ingero_event *e;
	int i;

	e = push(INGERO_STREAM_LIB, START);
	e->lib = (struct ingero_lib){ .id = 1, .pid = APP - 1, .probes = 5, .path = str->lib,
				      .build_id = str->build_id };
	e = push(INGERO_STREAM_TASK, START);
	e->task = (struct ingero_task){ .kind = INGERO_TASK_FORK, .pid = APP - 1, .tid = APP,
					.child_pid = APP - 1, .child_tid = GPU, .comm = comm_of(APP) };
	sw(START + 10, 0, 0, 0, APP);
	sw(START + 10, 1, 0, 0, GPU);
	sw(START + 20, 1, GPU, INGERO_STATE_SLEEPING, 0);
	for (i = 0; i < 100; i++, t += 500000) {
		uint64_t end = t + 400000;

		if (i % 20 == 7) {
			sw(t + 100000, 0, APP, INGERO_STATE_PREEMPTED, JOURNALD);
			sw(t + 1300000, 0, JOURNALD, INGERO_STATE_SLEEPING, APP);
			end += 1200000;
			t += 1200000;
		}
		call(FREE, APP, end - 400000 - (i % 20 == 7 ? 1200000 : 0), end, 0, 0x100000 + i, 0, 0, 0);
	}
	for (i = 0; i < 10; i++, t += 200000) {
		uint64_t late = i == 9 ? 50000 : 0;

		sw(t + 5000, 0, APP, INGERO_STATE_SLEEPING, 0);
		sw(t + 80000 + late, 1, 0, 0, GPU);
		wake(t + 90000 + late, 1, GPU, APP, 0);
		sw(t + 91000 + late, 1, GPU, INGERO_STATE_SLEEPING, 0);
		sw(t + 93000 + late, 0, 0, 0, APP);
		call(SYNC, APP, t, t + 100000 + late, 0, 0, 0, 0, 0);
	}
	for (i = 0; i < 4; i++, t += 10000) {
		id = next_id + 1;
		call(MEMALLOC, APP, t + 100, t + 900, id, 0, 1 << (20 + i), 0x7f0000000000ULL + (i << 24), 0);
		call(MALLOC, APP, t, t + 1000, 0, 0, 1 << (20 + i), 0x7f0000000000ULL + (i << 24), 0);
	}
	call(FREE, APP, t, t + 500, 0, 0x7f0000000000ULL, 0, 0, 0);
	call(FREE, APP, t + 1000, t + 1500, 0, 0x7f0000000000ULL + (2 << 24), 0, 0, 0);
	call(MALLOC, APP, t + 2000, t + 2600, 0, 0, 1ULL << 40, 0, 2);
	for (i = 0; i < 20; i++)
		call(LAUNCH, APP, t + 3000 + i * 10000, t + 8000 + i * 10000, 0, 0, 0, 0, 0);
	t += 300000;
	e = push(INGERO_STREAM_LOST, t);
	e->lost = (struct ingero_lost){ .cpu = 1, .end_ns = t + 2000, .count = 3 };
	e = push(INGERO_STREAM_OPEN, t + 10000);
	e->call = (struct ingero_call){ .end_ns = t + 50000, .id = next_id++, .pid = APP - 1, .tid = APP, .api = SYNC };
}

/*
 * The known trace made odd, for what analyze must take in its stride: an
 * event before the header's start; the launches probed at their entries
 * alone; a failed cudaMalloc that returned 64 bits of ones, a failed
 * cudaFree that returned 32 bits of them; a call of an API beyond the table.
 */
static void odd_trace(struct ingero_api *table)
{
	struct ingero_event *e;
	size_t i;

	memcpy(table, apis, sizeof(apis));
	table[LAUNCH].flags = INGERO_API_ENTRY_ONLY;
	for (i = 0; i < nevs; i++)
		if (evs[i].stream != INGERO_STREAM_CALL)
			continue;
		else if (evs[i].call.api == LAUNCH)
			evs[i].call.end_ns = evs[i].ts;
		else if (evs[i].call.ret)
			evs[i].call.ret = UINT64_MAX;
		else if (evs[i].call.api == FREE && evs[i].call.args[0] == 0x100000)
			evs[i].call.ret = UINT32_MAX;
	e = push(INGERO_STREAM_TASK, START - 500);
	e->task = (struct ingero_task){ .kind = INGERO_TASK_COMM, .pid = APP - 1, .tid = APP, .comm = comm_of(APP) };
	call(NAPIS, APP, START + 500, START + 600, 0, 0, 0, 0, 0);
}

/* Four threads on four CPUs, each call preempted by a hog or sleeping in a sync: about n events. */
static void large_trace(uint64_t n)
{
	uint64_t t = START, i;
	int32_t tids[4] = { APP, APP + 1, APP + 2, APP + 3 };

	for (i = 0; i < 4; i++)
		sw(t, (uint32_t)i, 0, 0, tids[i]);
	for (i = 0; nevs + 8 < n; i++) {
		int32_t tid = tids[i % 4];
		uint32_t cpu = (uint32_t)(i % 4);
		int32_t other = 800 + (int32_t)(i % 3);

		t += 10000;
		switch (i % 4) {
		case 0:
			sw(t + 1000, cpu, tid, INGERO_STATE_PREEMPTED, HOG + (int32_t)(i % 7));
			sw(t + 3000, cpu, HOG + (int32_t)(i % 7), INGERO_STATE_SLEEPING, tid);
			call(LAUNCH, tid, t, t + 5000, 0, 0, 0, 0, 0);
			break;
		case 1:
			sw(t + 500, cpu, tid, INGERO_STATE_SLEEPING, other);
			wake(t + 4000, (cpu + 1) % 4, other, tid, cpu);
			sw(t + 4500, cpu, other, INGERO_STATE_PREEMPTED, tid);
			call(SYNC, tid, t, t + 6000, 0, 0, 0, 0, 0);
			break;
		case 2:
			call(MALLOC, tid, t, t + 2000, 0, 0, 4096 + (i % 64), 0x10000000ULL + (i % 65536) * 8192, 0);
			break;
		default:
			call(FREE, tid, t, t + 1500, 0, 0x10000000ULL + ((i - 1) % 65536) * 8192, 0, 0, 0);
			break;
		}
	}
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads the trace once alone and once into the engine: events per second of each. */
static int bench(const char *path)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		struct ingero_reader *r = ingero_reader_open(path);
		struct ingero_analysis_opts o = { .api = -1 };
		struct ingero_analysis *a = NULL;
		const struct ingero_event *ev;
		uint64_t n = 0;
		double t0 = seconds();

		if (!r)
			return 1;
		o.apis = ingero_reader_header(r)->apis;
		o.napis = ingero_reader_header(r)->napis;
		if (pass && !(a = ingero_analysis_new(&o)))
			return 1;
		while (ingero_reader_next(r, &ev) > 0 && (!a || !ingero_analysis_add(a, ev)))
			n++;
		if (a && !ingero_analysis_finish(a))
			return 1;
		printf("%s: %llu events in %.3f s, %.2f M events/s\n", pass ? "read+analyze" : "read",
		       (unsigned long long)n, seconds() - t0, n / (seconds() - t0) / 1e6);
		ingero_analysis_free(a);
		ingero_reader_close(r);
	}
	return 0;
}

static int by_key(const void *x, const void *y)
{
	const struct ingero_event *p = x, *q = y;
	uint64_t a = ingero_event_key(p), b = ingero_event_key(q);

	return a < b ? -1 : a > b ? 1 : p < q ? -1 : p > q;
}

static int write_trace(const char *path, const struct ingero_api *table)
{
	struct ingero_header h = {
		.start_ns = START, .realtime_ns = 1700000000000000000ULL, .ncpus = 2, .host = str->host,
		.kernel = str->kernel, .clock = "mono", .boot_id = "00000000-0000-0000-0000-000000000000",
		.command = str->command, .napis = NAPIS, .apis = table,
	};
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct ingero_writer *w;
	size_t i;

	if (fd < 0)
		return -1;
	qsort(evs, nevs, sizeof(evs[0]), by_key);
	w = ingero_writer_new(fd, &h);
	for (i = 0; w && i < nevs; i++)
		if (ingero_writer_add(w, &evs[i]))
			break;
	if (!w || i < nevs || ingero_writer_close(w))
		return -1;
	return close(fd);
}

static void check(const char *path)
{
	struct ingero_reader *r = ingero_reader_open(path);
	const struct ingero_header *h;
	const struct ingero_analysis_result *res;
	struct ingero_analysis_opts o = { .api = -1 };
	struct ingero_analysis *a;
	const struct ingero_event *ev;
	uint32_t i;
	int ret;

	if (!ok(r, "the trace reads back"))
		return;
	h = ingero_reader_header(r);
	o.apis = h->apis;
	o.napis = h->napis;
	o.start_ns = h->start_ns;
	a = ingero_analysis_new(&o);
	while ((ret = ingero_reader_next(r, &ev)) > 0)
		if (ingero_analysis_add(a, ev))
			break;
	is_u64(ret, 0, "read to the end");
	res = ingero_analysis_finish(a);
	is_u64(res->events[INGERO_STREAM_CALL], ncalls, "every call came through");
	ok(res->nchains >= 1 && res->chains[0].api == FREE, "the first chain is cudaFree's");
	is_u64(res->chains[0].cause, INGERO_CAUSE_PREEMPTED, "preempted");
	is_u64(res->chains[0].culprits[0].task.tid, JOURNALD, "by journald");
	is_u64(res->chains[0].culprits[0].ns, 5 * 1200000, "5 x 1.2 ms");
	is_u64(res->chains[0].slow_calls, 5, "5 slow calls");
	for (i = 0; i < res->nchains; i++)
		if (res->chains[i].api == SYNC) {
			is_u64(res->chains[i].cause, INGERO_CAUSE_GPU_WAIT, "the sync waited for the GPU");
			is_u64(res->chains[i].waker.tid, GPU, "woken by the GPU thread");
		}
	is_u64(res->memory.peak_bytes, (1 << 20) + (2 << 20) + (4 << 20) + (8 << 20), "peak bytes");
	is_u64(res->memory.live_bytes_end, (2 << 20) + (8 << 20), "live at the end");
	is_u64(res->memory.nunfreed, 2, "two never freed");
	is_u64(res->lost_total, 3, "3 lost");
	is_u64(res->nopen, 1, "one open call");
	ingero_analysis_free(a);
	ingero_reader_close(r);
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/ingero-analysis-trace.XXXXXX";
	struct ingero_api table[NAPIS];
	int fd;

	if (argc == 3 && !strcmp(argv[1], "--bench"))
		return bench(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--large")) {
		large_trace(strtoull(argv[2], NULL, 0) * 1000000);
		return write_trace(argv[3], apis) ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--hostile")) {
		str = &hostile_strings;
		known_trace();
		memcpy(table, apis, sizeof(apis));
		table[SYNC].name = str->sync;
		return write_trace(argv[2], table) ? 1 : 0;
	}
	known_trace();
	if (argc == 3 && !strcmp(argv[1], "--odd")) {
		odd_trace(table);
		return write_trace(argv[2], table) ? 1 : 0;
	}
	if (argc == 2)
		return write_trace(argv[1], apis) ? 1 : 0;
	fd = mkstemp(path);
	ok(fd >= 0 && !write_trace(path, apis), "the known trace is written");
	check(path);
	unlink(path);
	close(fd);
	return done_testing();
}
