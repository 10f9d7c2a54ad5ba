/* ingero info: what a trace holds: its header, libraries, counts per stream and API, losses, size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "builtin.h"
#include "parse-options.h"
#include "../lib/trace.h"
#include "../formats/text.h"

static const char *const info_usage[] = {
	"ingero info [--json] <file>",
	NULL,
};

struct lost_cpu {
	uint32_t cpu;
	uint64_t stretches, count, unknown, span_ns;
};

struct info {
	uint64_t events[INGERO_NR_STREAMS], total, first, last;
	uint64_t *calls, *open;		/* per API; the last slot counts ids beyond the table */
	struct ingero_lib *libs;
	size_t nlibs, libs_alloc;
	struct lost_cpu *lost;
	size_t nlost, lost_alloc;
};

static void *grow(void *p, size_t *alloc, size_t n, size_t size)
{
	if (n < *alloc)
		return p;
	*alloc = *alloc ? 2 * *alloc : 16;
	if (!(p = realloc(p, *alloc * size)))
		die_errno("out of memory");
	return p;
}

static void add_lost(struct info *in, const struct ingero_event *ev)
{
	struct lost_cpu *l;
	size_t i;

	for (i = 0; i < in->nlost && in->lost[i].cpu < ev->lost.cpu; i++)
		;
	if (i == in->nlost || in->lost[i].cpu != ev->lost.cpu) {
		in->lost = grow(in->lost, &in->lost_alloc, in->nlost, sizeof(*in->lost));
		memmove(&in->lost[i + 1], &in->lost[i], (in->nlost - i) * sizeof(*in->lost));
		memset(&in->lost[i], 0, sizeof(*in->lost));
		in->lost[i].cpu = ev->lost.cpu;
		in->nlost++;
	}
	l = &in->lost[i];
	l->stretches++;
	l->count += ev->lost.count;
	l->unknown += !ev->lost.count;
	l->span_ns += ev->lost.end_ns >= ev->ts ? ev->lost.end_ns - ev->ts : 0;
}

static void add_event(struct info *in, const struct ingero_event *ev, uint32_t napis)
{
	uint64_t key = ingero_event_key(ev);

	if (!in->total++)
		in->first = key;
	in->last = key;
	in->events[ev->stream]++;
	switch (ev->stream) {
	case INGERO_STREAM_CALL:
		in->calls[ev->call.api < napis ? ev->call.api : napis]++;
		break;
	case INGERO_STREAM_OPEN:
		in->open[ev->call.api < napis ? ev->call.api : napis]++;
		break;
	case INGERO_STREAM_LOST:
		add_lost(in, ev);
		break;
	case INGERO_STREAM_LIB:
		in->libs = grow(in->libs, &in->libs_alloc, in->nlibs, sizeof(*in->libs));
		in->libs[in->nlibs++] = ev->lib;
		break;
	}
}

/* APIs by calls, most first; ties by table order. */
static const uint64_t *sort_calls;
static int by_calls(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (sort_calls[x] != sort_calls[y])
		return sort_calls[x] > sort_calls[y] ? -1 : 1;
	return x < y ? -1 : 1;
}

static uint32_t *api_order(const struct info *in, uint32_t napis)
{
	uint32_t *order = malloc((napis + 1) * sizeof(*order)), i;

	if (!order)
		die_errno("out of memory");
	for (i = 0; i <= napis; i++)
		order[i] = i;
	sort_calls = in->calls;
	qsort(order, napis + 1, sizeof(*order), by_calls);
	return order;
}

static void print_json(const char *path, const struct ingero_header *h, const struct info *in,
		       const struct ingero_trace_stats *st, int indexed)
{
	uint32_t *order = api_order(in, h->napis), i;
	size_t k;
	int first = 1;

	printf("{\"file\":");
	ingero_text_fquote(stdout, path);
	printf(",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"index\":\"%s\"", st->bytes, st->blocks,
	       indexed ? "footer" : "rebuilt");
	printf(",\"header\":{\"host\":");
	ingero_text_fquote(stdout, h->host);
	printf(",\"kernel\":");
	ingero_text_fquote(stdout, h->kernel);
	printf(",\"clock\":");
	ingero_text_fquote(stdout, h->clock);
	printf(",\"boot_id\":");
	ingero_text_fquote(stdout, h->boot_id);
	printf(",\"command\":");
	ingero_text_fquote(stdout, h->command);
	printf(",\"ncpus\":%u,\"start_ns\":%" PRIu64 ",\"realtime_ns\":%" PRIu64 ",\"napis\":%u",
	       h->ncpus, h->start_ns, h->realtime_ns, h->napis);
	/* The API table in its order: a call's api field and the probes' api=\N index it. */
	printf(",\"api_table\":[");
	for (i = 0; i < h->napis; i++) {
		printf("%s", i ? "," : "");
		ingero_text_fquote(stdout, h->apis[i].name);
	}
	printf("]}");
	printf(",\"events\":%" PRIu64 ",\"bytes_per_event\":%.3f", in->total,
	       in->total ? (double)st->bytes / in->total : 0.0);
	printf(",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"span_ns\":%" PRIu64, in->first, in->last,
	       in->last - in->first);
	printf(",\"streams\":{");
	for (k = 0; k < INGERO_NR_STREAMS; k++)
		printf("%s\"%s\":%" PRIu64, k ? "," : "", ingero_stream_name(k), in->events[k]);
	printf("},\"apis\":[");
	for (i = 0; i <= h->napis; i++) {
		uint32_t a = order[i];

		if (!in->calls[a] && !in->open[a])
			continue;
		printf("%s{\"name\":", first ? "" : ",");
		ingero_text_fquote(stdout, a < h->napis ? h->apis[a].name : "unknown");
		printf(",\"lib\":");
		ingero_text_fquote(stdout, a < h->napis ? h->apis[a].lib : "");
		printf(",\"calls\":%" PRIu64 ",\"open\":%" PRIu64 "}", in->calls[a], in->open[a]);
		first = 0;
	}
	printf("],\"libraries\":[");
	for (k = 0; k < in->nlibs; k++) {
		const struct ingero_lib *l = &in->libs[k];

		printf("%s{\"id\":%u,\"path\":", k ? "," : "", l->id);
		ingero_text_fquote(stdout, l->path);
		printf(",\"build_id\":");
		ingero_text_fquote(stdout, l->build_id);
		printf(",\"pid\":%u,\"probes\":%u,\"missing\":%u}", l->pid, l->probes, l->missing);
	}
	printf("],\"lost\":[");
	for (k = 0; k < in->nlost; k++) {
		const struct lost_cpu *l = &in->lost[k];

		printf("%s{\"cpu\":%u,\"stretches\":%" PRIu64 ",\"count\":%" PRIu64 ",\"unknown\":%" PRIu64
		       ",\"span_ns\":%" PRIu64 "}", k ? "," : "", l->cpu, l->stretches, l->count, l->unknown, l->span_ns);
	}
	printf("]}\n");
	free(order);
}

/* "host:      NAME": a header field, its string escaped. */
static void header_line(const char *name, const char *value)
{
	printf("%s:%*s", name, (int)(10 - strlen(name)), "");
	ingero_text_fescape(stdout, value, 0);
	putchar('\n');
}

static void print_text(const char *path, const struct ingero_header *h, const struct info *in,
		       const struct ingero_trace_stats *st, int indexed)
{
	uint32_t *order = api_order(in, h->napis), i;
	time_t secs = (time_t)(h->realtime_ns / 1000000000);
	char when[64] = "";
	struct tm tm;
	size_t k;

	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	/* every string of the trace escaped, so that none can drive the terminal or break a line */
	printf("file:      ");
	ingero_text_fescape(stdout, path, 0);
	printf(" (%" PRIu64 " bytes, %" PRIu64 " blocks, index %s)\n", st->bytes, st->blocks,
	       indexed ? "from the footer" : "rebuilt by scanning: the footer is missing or damaged");
	header_line("host", h->host);
	header_line("kernel", h->kernel);
	printf("cpus:      %u\n", h->ncpus);
	header_line("clock", h->clock);
	header_line("boot id", h->boot_id);
	header_line("command", h->command);
	printf("started:   %s (trace clock %" PRIu64 " ns)\n", when, h->start_ns);
	printf("span:      %.6f s (%" PRIu64 " .. %" PRIu64 " ns)\n", (in->last - in->first) / 1e9, in->first, in->last);
	printf("events:    %" PRIu64 " (%.2f bytes per event)\n", in->total,
	       in->total ? (double)st->bytes / in->total : 0.0);
	printf("\nstreams:\n");
	for (k = 0; k < INGERO_NR_STREAMS; k++)
		printf("  %-8s %12" PRIu64 "\n", ingero_stream_name(k), in->events[k]);
	printf("\ncalls by API (%u in the table):\n", h->napis);
	for (i = 0; i <= h->napis; i++) {
		uint32_t a = order[i];

		if (!in->calls[a] && !in->open[a])
			continue;
		printf("  ");
		ingero_text_fescape(stdout, a < h->napis ? h->apis[a].name : "(unknown)", 32);
		printf(" ");
		ingero_text_fescape(stdout, a < h->napis ? h->apis[a].lib : "", 7);
		printf(" %12" PRIu64 "%s\n", in->calls[a], in->open[a] ? " (and open at the end)" : "");
	}
	printf("\nlibraries:%s\n", in->nlibs ? "" : " none");
	for (k = 0; k < in->nlibs; k++) {
		const struct ingero_lib *l = &in->libs[k];

		printf("  %u ", l->id);
		ingero_text_fescape(stdout, l->path, 0);
		printf(" pid %u, %u probes, %u missing, build-id ", l->pid, l->probes, l->missing);
		ingero_text_fescape(stdout, l->build_id && *l->build_id ? l->build_id : "none", 0);
		printf("\n");
	}
	printf("\nlost events:%s\n", in->nlost ? "" : " none");
	for (k = 0; k < in->nlost; k++) {
		const struct lost_cpu *l = &in->lost[k];

		printf("  cpu %-4u %12" PRIu64 " events in %" PRIu64 " stretches over %.6f s", l->cpu, l->count,
		       l->stretches, l->span_ns / 1e9);
		printf(l->unknown ? " (%" PRIu64 " of unknown size)\n" : "\n", l->unknown);
	}
	free(order);
}

int cmd_info(int argc, const char **argv)
{
	int json = 0, ret;
	struct option opts[] = {
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_END(),
	};
	struct info in = { 0 };
	struct ingero_trace_stats st;
	const struct ingero_header *h;
	struct ingero_reader *r;
	const struct ingero_event *ev;

	argc = parse_options(argc, argv, opts, info_usage, 0);
	if (argc != 1)
		usage_with_options(info_usage, opts, 1);
	if (!(r = ingero_reader_open(argv[0])))
		return 1;
	h = ingero_reader_header(r);
	in.calls = calloc(h->napis + 1, sizeof(*in.calls));
	in.open = calloc(h->napis + 1, sizeof(*in.open));
	if (!in.calls || !in.open)
		die_errno("out of memory");
	/* every block is read, so that damage anywhere is found */
	while ((ret = ingero_reader_next(r, &ev)) == 1)
		add_event(&in, ev, h->napis);
	if (ret < 0) {
		error("'%s' is damaged: %s", argv[0], ingero_reader_error(r));
		ingero_reader_close(r);
		return 1;
	}
	ingero_reader_stats(r, &st);
	if (json)
		print_json(argv[0], h, &in, &st, ingero_reader_indexed(r));
	else
		print_text(argv[0], h, &in, &st, ingero_reader_indexed(r));
	ingero_reader_close(r);
	free(in.calls);
	free(in.open);
	free(in.libs);
	free(in.lost);
	if (fflush(stdout) || ferror(stdout))
		die_errno("cannot write");
	return 0;
}
