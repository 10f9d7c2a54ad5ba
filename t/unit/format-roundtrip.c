/* The trace format's round trip: every field of every stream back as written, in merge order; seek; a lost footer. */
#include <inttypes.h>
#include <stdio.h>
#include "tap.h"
#include "format-gen.h"
#include "../../formats/format.h"
#include "../../lib/error.h"

static struct ingero_reader *reopen(int fd)
{
	lseek(fd, 0, SEEK_SET);
	return ingero_reader_open_fd(fd, "memfd");
}

/* Reads r to its end; 1 when it returns exactly want[0..n) and then end status st. */
static int read_all(struct ingero_reader *r, const struct ingero_event *want, size_t n, int st, size_t *got)
{
	const struct ingero_event *ev;
	size_t i = 0;
	int ret, same = 1;

	while ((ret = ingero_reader_next(r, &ev)) == 1) {
		if (i >= n || !event_eq(ev, &want[i])) {
			if (same)
				printf("# event %zu differs (stream %u key %" PRIu64 ")\n", i, ev->stream,
				       ingero_event_key(ev));
			same = 0;
		}
		i++;
	}
	*got = i;
	return same && i == n && ret == st;
}

/* Reads the events of the streams in mask from key t, which must come back as they are in m, merged. */
static void read_streams(struct ingero_reader *r, const struct ingero_event *m, size_t n, uint32_t mask, uint64_t t)
{
	struct ingero_event *sel = calloc(n, sizeof(*sel));
	size_t k = 0, j, got;
	int same;

	for (j = 0; j < n; j++)
		if (mask >> m[j].stream & 1 && ingero_event_key(&m[j]) >= t)
			sel[k++] = m[j];
	ingero_reader_seek(r, t);
	ingero_reader_streams(r, mask);
	same = read_all(r, sel, k, 0, &got);
	ok(same, "streams 0x%x from %" PRIu64 " come back in merge order (%zu of %zu)",
	   mask, t, got, k);
	free(sel);
}

/* The sections' CRC32C: its check value, and a long buffer's CRC whole and in short pieces alike. */
static void test_crc(void)
{
	static uint8_t buf[3 * 3 * 4096 + 1001];
	uint32_t whole, pieces = 0, x = 12345;
	size_t at, step;

	is_u64(crc32c(0, "123456789", 9), 0xe3069283, "CRC32C of \"123456789\" is its check value");
	for (at = 0; at < sizeof(buf); at++)
		buf[at] = (uint8_t)((x = x * 1103515245 + 12345) >> 16);
	whole = crc32c(0, buf + 1, sizeof(buf) - 1);
	for (at = 1, step = 1; at < sizeof(buf); at += step, step = step % 97 + 1)
		pieces = crc32c(pieces, buf + at, at + step < sizeof(buf) ? step : sizeof(buf) - at);
	is_u64(whole, pieces, "the CRC of %zu bytes at once is that of its short pieces", sizeof(buf) - 1);
}

static void test_roundtrip(void)
{
	static const size_t counts[INGERO_NR_STREAMS] = { 40000, 50, 30000, 20000, 500, 20, 5 };
	struct gen g;
	struct ingero_trace_stats st;
	struct ingero_reader *r;
	struct ingero_event *m;
	const struct ingero_header *h;
	static const uint32_t masks[] = {
		1u << INGERO_STREAM_SWITCH,
		1u << INGERO_STREAM_CALL | 1u << INGERO_STREAM_SWITCH,
		1u << INGERO_STREAM_CALL | 1u << INGERO_STREAM_SWITCH | 1u << INGERO_STREAM_WAKEUP,
		1u << INGERO_STREAM_CALL | 1u << INGERO_STREAM_SWITCH | 1u << INGERO_STREAM_WAKEUP,
		1u << INGERO_STREAM_SWITCH | 1u << INGERO_STREAM_WAKEUP | 1u << INGERO_STREAM_TASK,
		1u << INGERO_STREAM_CALL | 1u << INGERO_STREAM_SWITCH | 1u << INGERO_STREAM_WAKEUP |
			1u << INGERO_STREAM_TASK,
		1u << INGERO_STREAM_CALL | 1u << INGERO_STREAM_SWITCH | 1u << INGERO_STREAM_WAKEUP |
			1u << INGERO_STREAM_TASK | 1u << INGERO_STREAM_LIB,
		(1u << INGERO_NR_STREAMS) - 1,
	};
	size_t n, got, i;
	int fd, same;

	gen_trace(&g, 42, counts, 5000000000ull, 4500000000ull);
	fd = gen_write(&g, &gen_header, 1);
	ok(fd >= 0, "a trace of %zu random events is written", g.n);
	m = gen_merged(&g, NULL, &n);
	r = reopen(fd);
	ok(r && ingero_reader_indexed(r), "it opens with its index");
	if (!r)
		return;
	h = ingero_reader_header(r);
	ok(h->start_ns == gen_header.start_ns && h->realtime_ns == gen_header.realtime_ns && h->ncpus == 8 &&
	   !strcmp(h->host, "gpu-box") && !strcmp(h->kernel, "6.18.0") && !strcmp(h->clock, "mono") &&
	   !strcmp(h->boot_id, gen_header.boot_id) && !strcmp(h->command, gen_header.command),
	   "the header comes back");
	ok(h->napis == 3 && !strcmp(h->apis[0].name, "cudaMalloc") && h->apis[0].nargs == 2 &&
	   h->apis[0].args[0].kind == INGERO_ARG_OUT_DEVPTR && !strcmp(h->apis[0].args[1].name, "size") &&
	   !strcmp(h->apis[2].lib, "cuda") && h->apis[1].role == INGERO_ROLE_FREE,
	   "the API table comes back");
	same = read_all(r, m, n, 0, &got);
	ok(same, "every event comes back field for field in key order (%zu of %zu)", got, n);
	ingero_reader_stats(r, &st);
	for (i = 0; i < INGERO_NR_STREAMS; i++)
		is_u64(st.events[i], counts[i], "the index counts the %s events", ingero_stream_name(i));
	ok(st.first_ns == ingero_event_key(&m[0]) && st.last_ns == ingero_event_key(&m[n - 1]),
	   "the index has the time span");
	ok(st.blocks > INGERO_NR_STREAMS, "the events span %" PRIu64 " blocks, more than one a stream", st.blocks);

	/* seek: the first event at or after t, then on in order */
	for (i = 0; i < 40; i++) {
		uint64_t t = i == 0 ? 0 : i == 1 ? UINT64_MAX : ingero_event_key(&m[0]) + rnd_below(5000000000ull);
		size_t lo = 0, left;

		while (lo < n && ingero_event_key(&m[lo]) < t)
			lo++;
		ingero_reader_seek(r, t);
		left = n - lo < 50 ? n - lo : 50;
		{
			const struct ingero_event *ev;
			size_t k;
			int hit = 1;

			for (k = 0; k < left; k++)
				if (ingero_reader_next(r, &ev) != 1 || !event_eq(ev, &m[lo + k]))
					hit = 0;
			if (left < 50)
				hit = hit && ingero_reader_next(r, &ev) == 0;
			if (!hit || i < 3)
				ok(hit, "seek to %" PRIu64 " lands on event %zu", t, lo);
		}
	}
	ok(1, "seek landed right at 40 random times");

	/* some streams only, from the start and from a seek: one alone, up to three merged, more chosen from */
	for (i = 0; i < sizeof(masks) / sizeof(masks[0]); i++)
		read_streams(r, m, n, masks[i], i % 2 ? ingero_event_key(&m[n / 3]) : 0);
	ingero_reader_close(r);

	/* without the footer: found by scanning, same events, a clean end */
	{
		uint8_t t[16];
		uint64_t size = lseek(fd, 0, SEEK_END), fsize;

		pread(fd, t, 16, size - 16);
		fsize = t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
		ok(!memcmp(t + 8, "INGIDX01", 8) && fsize < size, "the trailer locates the footer");
		ftruncate(fd, size - fsize);
		r = reopen(fd);
		ok(r && !ingero_reader_indexed(r), "without its footer the trace opens by scanning");
		if (r) {
			same = read_all(r, m, n, 0, &got);
			ok(same, "and returns the same %zu events", got);
			ingero_reader_stats(r, &st);
			is_u64(st.events[INGERO_STREAM_CALL], counts[0], "the rebuilt index counts the calls");
			ingero_reader_seek(r, ingero_event_key(&m[n / 2]));
			{
				const struct ingero_event *ev;
				size_t lo = 0;

				while (ingero_event_key(&m[lo]) < ingero_event_key(&m[n / 2]))
					lo++;
				ok(ingero_reader_next(r, &ev) == 1 && event_eq(ev, &m[lo]),
				   "and seeks with the rebuilt index");
			}
			ingero_reader_close(r);
		}
	}
	close(fd);
	free(m);
	free(g.ev);
}

/* A coarse clock: keys shared within and across streams, equal keys coming back by stream number. */
static void test_ties(void)
{
	static const size_t counts[INGERO_NR_STREAMS] = { 4000, 30, 4000, 4000, 3000, 10, 5 };
	static const uint32_t masks[] = { 0x0d, 0x1d, 0x5d, 0x7f };
	struct gen g;
	struct ingero_reader *r;
	struct ingero_event *m;
	size_t n, i, ties = 0;
	int fd;

	gen_trace(&g, 11, counts, 1000000, 8000);
	fd = gen_write(&g, &gen_header, 1);
	m = gen_merged(&g, NULL, &n);
	for (i = 1; i < n; i++)
		ties += m[i].stream != m[i - 1].stream && ingero_event_key(&m[i]) == ingero_event_key(&m[i - 1]);
	ok(ties > n / 10, "%zu of %zu events share their key with another stream's", ties, n);
	r = reopen(fd);
	for (i = 0; r && i < sizeof(masks) / sizeof(masks[0]); i++)
		read_streams(r, m, n, masks[i], i % 2 ? ingero_event_key(&m[n / 2]) : 0);
	ingero_reader_close(r);
	close(fd);
	free(m);
	free(g.ev);
}

/*
 * The comms of one thread that change from event to event: names alike in
 * their first 16 bytes, or longer than a comm, and one that ends on the
 * last byte before a page that cannot be read, all come back as written.
 */
static void test_comm_changes(void)
{
	static const char *const names[] = {
		"a-thread-name-longer", "a-thread-name-longer-still", "a-thread-name-lo", "a-thread-name-l",
		"python3", "", "a-thread-name-lo", "python3",
	};
	enum { NNAMES = sizeof(names) / sizeof(names[0]), EDGE = NNAMES, NEVENTS = 3 * (NNAMES + 1) };
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *edge = map + page - sizeof("python3");
	struct ingero_event ev[NEVENTS];
	const struct ingero_event *got;
	struct ingero_writer *w;
	struct ingero_reader *r;
	size_t i, n = 0;
	int fd = memfd_create("trace", 0), same = 1;

	strcpy(edge, "python3");
	mprotect(map + page, page, PROT_NONE);
	for (i = 0; i < NEVENTS; i++) {
		const char *comm = i % (NNAMES + 1) == EDGE ? edge : names[i % (NNAMES + 1)];

		ev[i] = (struct ingero_event){ .ts = 1000 + i, .stream = i <= NNAMES ? INGERO_STREAM_SWITCH :
					       INGERO_STREAM_WAKEUP };
		if (ev[i].stream == INGERO_STREAM_SWITCH)
			ev[i].sw = (struct ingero_switch){ .cpu = 1, .prev_tid = 7, .next_tid = 7,
							   .prev_comm = comm, .next_comm = comm };
		else
			ev[i].wakeup = (struct ingero_wakeup){ .cpu = 1, .waker_tid = 8, .wakee_tid = 7,
							       .wakee_comm = comm };
	}
	w = ingero_writer_new(fd, &gen_header);
	for (i = 0; w && i < NEVENTS; i++)
		if (ingero_writer_add(w, &ev[i]))
			break;
	ok(w && i == NEVENTS && !ingero_writer_close(w), "a thread's %d changing comms are written", NEVENTS);
	r = reopen(fd);
	while (r && ingero_reader_next(r, &got) == 1 && n < NEVENTS)
		same &= event_eq(got, &ev[n++]);
	ok(r && same && n == NEVENTS, "and come back as written (%zu of %d)", n, NEVENTS);
	ingero_reader_close(r);
	close(fd);
	munmap(map, 2 * page);
}

static void test_writer_rules(void)
{
	int fd = memfd_create("trace", 0);
	struct ingero_writer *w = ingero_writer_new(fd, &gen_header);
	struct ingero_event a = { .stream = INGERO_STREAM_SWITCH, .ts = 2000 }, b = a;
	struct ingero_trace_stats st;
	struct ingero_reader *r;
	const struct ingero_event *ev;

	b.ts = 1000;
	ok(w && !ingero_writer_add(w, &a), "an event is added");
	error_quiet = 1;
	ok(ingero_writer_add(w, &b) < 0, "an earlier one in the same stream is refused");
	error_quiet = 0;
	ingero_writer_stats(w, &st);
	is_u64(st.events[INGERO_STREAM_SWITCH], 1, "the writer counts what it took");
	ingero_writer_close(w);
	close(fd);

	fd = memfd_create("trace", 0);
	w = ingero_writer_new(fd, &gen_header);
	ok(w && !ingero_writer_close(w), "an empty trace is written");
	r = reopen(fd);
	ok(r && ingero_reader_next(r, &ev) == 0, "and reads as empty");
	ingero_reader_close(r);
	close(fd);
}

/* A flush makes everything so far readable while the writer goes on. */
static void test_flush(void)
{
	static const size_t counts[INGERO_NR_STREAMS] = { 100, 0, 100, 100, 0, 0, 1 };
	struct gen g;
	struct ingero_trace_stats st;
	struct ingero_reader *r;
	struct ingero_writer *w;
	struct ingero_event *m, late;
	size_t n, got, i;
	int fd = memfd_create("trace", 0);

	gen_trace(&g, 7, counts, 0, 100000);
	w = ingero_writer_new(fd, &gen_header);
	for (i = 0; i < g.n; i++)
		ingero_writer_add(w, &g.ev[i]);
	ok(!ingero_writer_flush(w), "a flush succeeds");
	m = gen_merged(&g, NULL, &n);
	/* one more switch after the flush: the counts sum the blocks ended and the one begun */
	late = (struct ingero_event){ .stream = INGERO_STREAM_SWITCH, .ts = ingero_event_key(&m[n - 1]) + 5 };
	ok(!ingero_writer_add(w, &late), "an event after the flush is added");
	ingero_writer_stats(w, &st);
	is_u64(st.events[INGERO_STREAM_SWITCH], counts[INGERO_STREAM_SWITCH] + 1,
	       "the writer counts the switches of the flushed block and the one after");
	is_u64(st.events[INGERO_STREAM_CALL] + st.events[INGERO_STREAM_WAKEUP] + st.events[INGERO_STREAM_LIB],
	       counts[0] + counts[3] + counts[6], "and every other stream's events");
	ok(st.first_ns == ingero_event_key(&m[0]) && st.last_ns == late.ts,
	   "its span runs from the first event's key to the last's");
	r = reopen(fd);
	got = 0;
	ok(r && read_all(r, m, n, 0, &got), "a reader sees every event added before it");
	ingero_reader_close(r);
	ingero_writer_close(w);
	close(fd);
	free(m);
	free(g.ev);
}

/*
 * Streams that fill blocks within a checkpoint: each block holds
 * BLOCK_MAX_EVENTS events but the stream's last, through the writer's move
 * from its first arrays to those of whole blocks.
 */
static void test_full_blocks(void)
{
	static const size_t counts[INGERO_NR_STREAMS] = { 70000, 0, 140000, 0, 0, 0, 0 };
	struct gen g;
	struct ingero_trace_stats st;
	struct ingero_reader *r;
	struct ingero_event *m;
	size_t n, got = 0;
	int fd, same;

	/* 0.4 s of events or so: no checkpoint ends a block */
	gen_trace(&g, 5, counts, 1000000000ull, 500000000ull);
	fd = gen_write(&g, &gen_header, 1);
	m = gen_merged(&g, NULL, &n);
	r = reopen(fd);
	same = r && read_all(r, m, n, 0, &got);
	ok(same, "%zu events in full blocks come back field for field (%zu)", n, got);
	if (r)
		ingero_reader_stats(r, &st);
	is_u64(r ? st.blocks : 0, 5, "70000 calls take 2 blocks and 140000 switches 3, of up to %d events each",
	       BLOCK_MAX_EVENTS);
	ingero_reader_close(r);
	close(fd);
	free(m);
	free(g.ev);
}

int main(void)
{
	test_crc();
	test_roundtrip();
	test_ties();
	test_comm_changes();
	test_writer_rules();
	test_flush();
	test_full_blocks();
	return done_testing();
}
