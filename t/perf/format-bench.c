/*
 * The trace format's benchmark on one core: a seeded synthetic mix of CUDA
 * calls, context switches, wakeups, tasks and libraries (mix.h), encoded,
 * compressed and read back.
 * The writer is fed as the recorder feeds it: events made a chunk at a time
 * and added while they are in the cache; only the adds and the close are
 * timed. Prints a table, then one JSON line per figure.
 *
 *   format-bench [EVENTS [ROUNDS]]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "../../formats/format.h"
#include "mix.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The page faults so far: a writer's or reader's first touch of what it allocates, a cost paid once per file. */
static long faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* Events made before they are added: about 120 KiB, which the caches hold. */
#define FEED_CHUNK 1024
#define MIX_SEED 0x1234567

struct feed {
	uint64_t n, per[INGERO_NR_STREAMS], last;	/* events, per stream, the last one's key */
};

/* Writes the mix of want events through w and closes it: the seconds that took, or -1. */
static double feed_writer(struct ingero_writer *w, size_t want, struct feed *f)
{
	static struct mix gen;
	static struct ingero_event ev[FEED_CHUNK];
	double spent = 0, t;
	size_t k, i;

	memset(f, 0, sizeof(*f));
	mix_init(&gen, want, MIX_SEED);
	do {
		for (k = 0; k < FEED_CHUNK && mix_next(&gen, &ev[k]); k++)
			f->per[ev[k].stream]++;
		t = now();
		for (i = 0; i < k; i++)
			if (ingero_writer_add(w, &ev[i]))
				return -1;
		spent += now() - t;
		f->n += k;
		if (k)
			f->last = ingero_event_key(&ev[k - 1]);
	} while (k == FEED_CHUNK);
	t = now();
	if (ingero_writer_close(w))
		return -1;
	return spent + now() - t;
}

static const char *const stream_names[] = { "call", "open", "switch", "wakeup", "task", "lost", "lib" };

int main(int argc, char **argv)
{
	size_t want = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000;
	int rounds = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 3, r, s, c, fd;
	const struct ingero_header h = mix_header;
	struct column_bytes cb;
	struct ingero_trace_stats st;
	struct ingero_writer *w;
	struct ingero_reader *rd;
	const struct ingero_event *ev;
	struct feed fed;
	double span_s, t, enc = 1e9, dec = 1e9;
	long enc_faults = 0, dec_faults = 0, f0;
	uint64_t size = 0, nread = 0, sum = 0;

	for (r = 0; r < rounds; r++) {
		fd = memfd_create("bench", 0);
		w = ingero_writer_new(fd, &h);
		if (!w)
			return 1;
		if (r == 0)
			memset(&cb, 0, sizeof(cb)), writer_measure_columns(w, &cb);
		f0 = faults();
		if ((t = feed_writer(w, want, &fed)) < 0)
			return 1;
		enc_faults = faults() - f0;
		/* the first round also measures the columns, so it counts only when alone */
		if ((r > 0 || rounds < 2) && t < enc)
			enc = t;
		size = lseek(fd, 0, SEEK_END);

		rd = ingero_reader_open_fd(fd, "bench");
		if (!rd)
			return 1;
		f0 = faults();
		t = now();
		nread = 0;
		while (ingero_reader_next(rd, &ev) == 1) {
			sum += ev->ts;
			nread++;
		}
		t = now() - t;
		dec_faults = faults() - f0;
		if (t < dec)
			dec = t;
		ingero_reader_stats(rd, &st);
		ingero_reader_close(rd);
		close(fd);
		if (nread != fed.n) {
			fprintf(stderr, "format-bench: read %" PRIu64 " events of %" PRIu64 "\n", nread, fed.n);
			return 1;
		}
	}
	span_s = fed.n ? (fed.last - h.start_ns) / 1e9 : 0;

	printf("format benchmark: %" PRIu64 " events in %.2f s of trace, best of %d; per stream:", fed.n, span_s, rounds);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (fed.per[s])
			printf(" %s %" PRIu64, stream_names[s], fed.per[s]);
	printf("\n\n");
	printf("  %-28s %14.3f\n", "bytes per event", (double)size / fed.n);
	printf("  %-28s %14.0f\n", "encode+compress events/s", fed.n / enc);
	printf("  %-28s %14.0f\n", "decode events/s", fed.n / dec);
	printf("  %-28s %14ld\n", "encode page faults", enc_faults);
	printf("  %-28s %14ld\n", "decode page faults", dec_faults);
	printf("  %-28s %14" PRIu64 "\n", "file bytes", size);
	printf("  %-28s %14" PRIu64 "\n\n", "blocks", st.blocks);
	printf("  %-8s %-12s %12s %12s %12s\n", "stream", "column", "raw B/ev", "zstd B/ev", "of all B/ev");
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		for (c = 0; c < stream_defs[s].ncols && fed.per[s]; c++)
			printf("  %-8s %-12s %12.3f %12.3f %12.3f\n", stream_names[s], stream_defs[s].cols[c].name,
			       (double)cb.raw[s][c] / fed.per[s], (double)cb.zst[s][c] / fed.per[s],
			       (double)cb.zst[s][c] / fed.n);
	printf("\n{\"bench\":\"format\",\"figure\":\"bytes_per_event\",\"value\":%.4f,\"events\":%" PRIu64 "}\n",
	       (double)size / fed.n, fed.n);
	printf("{\"bench\":\"format\",\"figure\":\"encode_events_per_s\",\"value\":%.0f}\n", fed.n / enc);
	printf("{\"bench\":\"format\",\"figure\":\"decode_events_per_s\",\"value\":%.0f}\n", fed.n / dec);
	printf("{\"bench\":\"format\",\"figure\":\"encode_page_faults\",\"value\":%ld}\n", enc_faults);
	printf("{\"bench\":\"format\",\"figure\":\"decode_page_faults\",\"value\":%ld}\n", dec_faults);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		for (c = 0; c < stream_defs[s].ncols && fed.per[s]; c++)
			printf("{\"bench\":\"format\",\"figure\":\"column_bytes_per_event\",\"stream\":\"%s\","
			       "\"column\":\"%s\",\"raw\":%.4f,\"zstd\":%.4f}\n", stream_names[s],
			       stream_defs[s].cols[c].name, (double)cb.raw[s][c] / fed.per[s],
			       (double)cb.zst[s][c] / fed.per[s]);
	return sum == 42;	/* keeps the read loop from being optimised away */
}
