/*
 * The trace format's benchmark on one core: a seeded synthetic mix of CUDA
 * calls, context switches and wakeups (mix.h), encoded, compressed and read back.
 * Prints a table, then one JSON line per figure.
 *
 *   format-bench [EVENTS [ROUNDS]]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "../../formats/format.h"
#include "mix.h"

struct events {
	struct ingero_event *ev;
	size_t n, alloc;
};

static struct ingero_event *push(struct events *m)
{
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 1 << 16;
		m->ev = realloc(m->ev, m->alloc * sizeof(*m->ev));
		if (!m->ev)
			abort();
	}
	return &m->ev[m->n++];
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
	static struct mix gen;
	struct events all = { 0 };
	const struct ingero_header h = mix_header;
	struct column_bytes cb;
	struct ingero_trace_stats st;
	struct ingero_writer *w;
	struct ingero_reader *rd;
	const struct ingero_event *ev;
	double span_s, t, enc = 1e9, dec = 1e9;
	uint64_t size = 0, nread = 0, sum = 0, per[INGERO_NR_STREAMS] = { 0 };

	mix_init(&gen, want, 0x1234567);
	while (mix_next(&gen, push(&all)))
		;
	all.n--;
	for (i = 0; i < all.n; i++)
		per[all.ev[i].stream]++;
	span_s = all.n ? (ingero_event_key(&all.ev[all.n - 1]) - h.start_ns) / 1e9 : 0;

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
			sum += ev->ts;
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
	free(all.ev);
	return sum == 42;	/* keeps the read loop from being optimised away */
}
