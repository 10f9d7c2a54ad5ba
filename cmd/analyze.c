/* ingero analyze: reads a trace through the engine and prints the report, as text or as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "builtin.h"
#include "parse-options.h"
#include "../lib/analysis.h"
#include "../lib/trace.h"
#include "../formats/text.h"

#define SCHEMA "ingero-analyze/1"
#define DEFAULT_TOP 10

static const char *const analyze_usage[] = {
	"ingero analyze [<options>] <trace>",
	NULL,
};

/* What the renderers need besides the report. */
struct out {
	FILE *f;
	const struct ingero_header *h;
	const struct ingero_analysis_result *r;
	int color, width, top;
};

/* How many of a list's n entries --top shows. */
static uint64_t shown(const struct out *o, uint64_t n)
{
	return n < (uint64_t)o->top ? n : (uint64_t)o->top;
}

static const char *api_name(const struct out *o, uint32_t api)
{
	return api < o->h->napis ? o->h->apis[api].name : "?";
}

static char *ns_str(char *buf, size_t len, uint64_t ns)
{
	return ingero_analysis_fmt_ns(buf, len, ns);
}

#define NS(v) ns_str((char[32]){ 0 }, 32, (v))

static char *bytes_str(char *buf, size_t len, uint64_t b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	size_t i = 0;

	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.*f %s", v >= 100 ? 0 : v >= 10 ? 1 : 2, v, units[i]);
	return buf;
}

#define BYTES(v) bytes_str((char[32]){ 0 }, 32, (v))

/* A time on the trace clock, as an offset from the start: "+1.234 s", or "-0.000001 s" before it. */
static char *at_str(char *buf, size_t len, const struct out *o, uint64_t ts)
{
	uint64_t start = o->r->start_ns;

	snprintf(buf, len, "%c%.6f s", ts >= start ? '+' : '-', (ts >= start ? ts - start : start - ts) / 1e9);
	return buf;
}

#define AT(o, v) at_str((char[32]){ 0 }, 32, (o), (v))

static char *cpus_str(char *buf, size_t len, uint64_t mask)
{
	size_t n = 0;
	int c;

	buf[0] = 0;
	for (c = 0; c < 64 && n + 8 < len; c++)
		if (mask & (1ULL << c))
			n += snprintf(buf + n, len - n, "%s%d%s", n ? "," : "", c, c == 63 ? "+" : "");
	if (!n)
		snprintf(buf, len, "-");
	return buf;
}

#define CPUS(v) cpus_str((char[96]){ 0 }, 96, (v))

static const char *paint(const struct out *o, const char *code)
{
	return o->color ? code : "";
}

#define BOLD(o) paint(o, "\033[1m")
#define RESET(o) paint(o, "\033[0m")

static const char *severity_color(const struct out *o, uint32_t sev)
{
	static const char *const codes[] = { "\033[2m", "\033[36m", "\033[33m", "\033[1;31m" };

	return paint(o, sev <= INGERO_SEVERITY_HIGH ? codes[sev] : "");
}

static void section(const struct out *o, const char *title)
{
	fprintf(o->f, "\n%s== %s%s\n", BOLD(o), title, RESET(o));
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0;
}

static uint64_t split_total(const uint64_t *split)
{
	uint64_t t = 0;
	int s;

	for (s = 0; s < INGERO_NR_SPLITS; s++)
		t += split[s];
	return t;
}

/* Room for a bar after the 40 columns of figures before it, and never less than 10. */
static int bar_width(const struct out *o)
{
	return o->width - 40 > 10 ? o->width - 40 : 10;
}

/* Ends a line with a bar of n '#', at most 160 of them. */
static void put_bar(const struct out *o, int n)
{
	fprintf(o->f, "|%.*s\n", n, "################################################################################"
		"################################################################################");
}

/*
 * A string of the trace, escaped so that none can drive the terminal or
 * break a line, and padded to w characters (0: none) counting what is printed.
 */
static void put_text(const struct out *o, const char *s, int w)
{
	ingero_text_fescape(o->f, s, (size_t)w);
}

/* Shown CPUs of the repaired switch-ins: enough to tell one CPU's quirk from many. */
#define REPAIRED_CPUS_SHOWN 8

static void text_repaired(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i;

	fprintf(o->f, "repaired   %" PRIu64 " switch-ins missing from the trace (", r->repaired);
	for (i = 0; i < r->nrepaired_cpus && i < REPAIRED_CPUS_SHOWN; i++)
		fprintf(o->f, "%sCPU %u: %" PRIu64, i ? ", " : "", r->repaired_cpus[i].cpu, r->repaired_cpus[i].count);
	fprintf(o->f, "%s): threads ran while their history had them off the CPU; "
		"their time until then is 'unknown'\n", i < r->nrepaired_cpus ? ", ..." : "");
}

static void text_quality(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	const struct ingero_header *h = o->h;
	uint32_t i, s;

	fprintf(o->f, "%s== Run and data quality%s\n", BOLD(o), RESET(o));
	fprintf(o->f, "command    ");
	put_text(o, h->command && *h->command ? h->command : "?", 0);
	fprintf(o->f, "\nduration   %s\n", NS(r->duration_ns));
	fprintf(o->f, "host       ");
	put_text(o, h->host ? h->host : "?", 0);
	fprintf(o->f, ", kernel ");
	put_text(o, h->kernel ? h->kernel : "?", 0);
	fprintf(o->f, ", clock ");
	put_text(o, h->clock ? h->clock : "?", 0);
	fprintf(o->f, ", %u CPUs\n", h->ncpus);
	fprintf(o->f, "events     %" PRIu64 " (", r->total_events);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		fprintf(o->f, "%s%s %" PRIu64, s ? ", " : "", ingero_stream_name(s), r->events[s]);
	fprintf(o->f, ")\n");
	fprintf(o->f, "traced     %s inside CUDA calls (outermost calls)\n", NS(r->traced_ns));
	for (i = 0; i < r->nlibs; i++) {
		fprintf(o->f, "library    ");
		put_text(o, r->libs[i].path, 0);
		fprintf(o->f, " (build-id ");
		put_text(o, *r->libs[i].build_id ? r->libs[i].build_id : "none", 0);
		fprintf(o->f, ") %u probes%s%.0u%s", r->libs[i].probes, r->libs[i].missing ? ", missing " : "",
			r->libs[i].missing, r->libs[i].missing ? " symbols" : "");
		if (r->libs[i].late)
			fprintf(o->f, ", probed at %s for pid %u", AT(o, r->libs[i].probed_ns), r->libs[i].pid);
		fputc('\n', o->f);
	}
	if (!r->nlost)
		fprintf(o->f, "lost       none\n");
	for (i = 0; i < r->nlost; i++)
		fprintf(o->f, "lost       CPU %u: %" PRIu64 " events in %" PRIu64 " records, %s lossy, %s .. %s\n",
			r->lost[i].cpu, r->lost[i].count, r->lost[i].records, NS(r->lost[i].ns),
			AT(o, r->lost[i].first_ns), AT(o, r->lost[i].last_ns));
	if (r->nlost)
		fprintf(o->f, "           findings that overlap these stretches are marked lossy\n");
	fprintf(o->f, "open       %u call%s never returned (open at the end of the thread or of the recording)\n",
		r->nopen, r->nopen == 1 ? "" : "s");
	for (i = 0; i < shown(o, r->nopen); i++) {
		fprintf(o->f, "           ");
		put_text(o, api_name(o, r->open[i].api), 0);
		fprintf(o->f, " tid %d since %s, %s so far\n", r->open[i].tid, AT(o, r->open[i].ts),
			NS(r->open[i].end_ns - r->open[i].ts));
	}
	if (r->repaired)
		text_repaired(o);
	if (r->uncovered_calls)
		fprintf(o->f, "history    %" PRIu64 " calls began before their thread's kept history: "
			"part of their time is 'unknown'\n", r->uncovered_calls);
	if (r->unfollowed_calls)
		fprintf(o->f, "unfollowed %" PRIu64 " call%s began before their process's scheduling was recorded: "
			"that part of their time is 'unknown'\n", r->unfollowed_calls, r->unfollowed_calls == 1 ? "" : "s");
	if (r->unknown_api_calls)
		fprintf(o->f, "unknown    %" PRIu64 " call%s of an API beyond the trace's table, left out of the report\n",
			r->unknown_api_calls, r->unknown_api_calls == 1 ? "" : "s");
}

static void text_apis(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	int nested_seen = 0;
	uint32_t i;

	section(o, "CUDA API summary");
	if (!r->napis) {
		fprintf(o->f, "no CUDA calls\n");
		return;
	}
	fprintf(o->f, "%-28s %8s %5s %9s %6s %9s %9s %9s %9s %9s %7s %6s %6s %6s %6s\n", "API", "calls", "err",
		"total", "share", "avg", "p50", "p90", "p99", "max", "p99/p50", "oncpu", "preemp", "block", "wait");
	for (i = 0; i < r->napis; i++) {
		const struct ingero_analysis_api *a = &r->apis[i];
		const uint64_t *sp = a->split_ns;
		char share[16], ratio[16];

		if (a->nested && !nested_seen++)
			fprintf(o->f, "nested: made inside another traced call, whose time already holds theirs\n");
		put_text(o, api_name(o, a->api), 28);
		if (a->entry_only) {
			fprintf(o->f, " %8" PRIu64 " %5s %9s  entry only: calls counted, not timed (record --returns times them)\n",
				a->calls, "-", "-");
			continue;
		}
		/* a p50 of 0 has no ratio: p99 is not 0 times it */
		if (a->p50_ns)
			snprintf(ratio, sizeof(ratio), "%.1fx", (double)a->p99_ns / a->p50_ns);
		else
			snprintf(ratio, sizeof(ratio), "-");
		if (a->nested)
			snprintf(share, sizeof(share), "-");
		else
			snprintf(share, sizeof(share), "%.1f%%", pct(a->total_ns, r->traced_ns));
		fprintf(o->f, " %8" PRIu64 " %5" PRIu64 " %9s %6s %9s %9s %9s %9s %9s %7s %5.1f%% %5.1f%% %5.1f%% %5.1f%%\n",
			a->calls, a->errors, NS(a->total_ns), share, NS(a->total_ns / a->calls),
			NS(a->p50_ns), NS(a->p90_ns), NS(a->p99_ns), NS(a->max_ns), ratio,
			pct(sp[INGERO_SPLIT_ONCPU], a->total_ns), pct(sp[INGERO_SPLIT_PREEMPTED], a->total_ns),
			pct(sp[INGERO_SPLIT_BLOCKED], a->total_ns),
			pct(sp[INGERO_SPLIT_WAIT], a->total_ns));
	}
	for (i = 0; i < r->napis; i++) {
		const struct ingero_analysis_api *a = &r->apis[i];

		if (!a->waker.tid || a->split_ns[INGERO_SPLIT_BLOCKED] * 10 < a->total_ns)
			continue;
		put_text(o, api_name(o, a->api), 0);
		fprintf(o->f, " slept %.0f%% of its time, woken mostly by ",
			pct(a->split_ns[INGERO_SPLIT_BLOCKED], a->total_ns));
		put_text(o, a->waker.comm, 0);
		fprintf(o->f, " (pid %u, tid %d%s): %s of it\n", a->waker.pid, a->waker.tid,
			a->waker.traced ? ", traced" : "", NS(a->waker_ns));
	}
	fprintf(o->f, "preemp: runnable after a preemption; block: sleeping; wait: runnable after the wakeup. Percentiles are log-bucket "
		"estimates within %.1f%%.\n", 100 * INGERO_ANALYSIS_REL_ERROR);
}

/* The evidence of the chain between calls: what was taken from the threads that call CUDA, and by whom. */
static void text_between(const struct out *o, const struct ingero_analysis_chain *c)
{
	uint32_t k;

	fprintf(o->f, "   cost %s taken between calls from the %u thread%s that call%s CUDA, of the %s %s wanted the "
		"CPU since %s first call\n", NS(c->cost_ns), c->callers, c->callers == 1 ? "" : "s",
		c->callers == 1 ? "s" : "", NS(c->wanted_ns), c->callers == 1 ? "it" : "they",
		c->callers == 1 ? "its" : "their");
	for (k = 0; k < c->nculprits; k++) {
		fprintf(o->f, "   culprit ");
		put_text(o, c->culprits[k].task.comm, 0);
		fprintf(o->f, " (pid %u, tid %d): took %s between calls, CPUs %s\n", c->culprits[k].task.pid,
			c->culprits[k].task.tid, NS(c->culprits[k].ns), CPUS(c->culprits[k].cpus));
	}
	fprintf(o->f, "   remedy: %s\n", c->remedy);
}

static void text_chains(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i, k;

	section(o, "Causal chains, by time above the median");
	if (!r->nchains)
		fprintf(o->f, "none: no API has calls slower than its typical ones\n");
	for (i = 0; i < shown(o, r->nchains); i++) {
		const struct ingero_analysis_chain *c = &r->chains[i];
		const uint64_t *sp = c->slow_split_ns;
		uint64_t total = split_total(sp);

		/* the summary names tasks and APIs of the trace: escaped whole, its own words are plain */
		fprintf(o->f, "%u. %s[%s]%s ", i + 1, severity_color(o, c->severity),
			ingero_severity_name(c->severity), RESET(o));
		put_text(o, c->summary, 0);
		fputc('\n', o->f);
		if (c->scope == INGERO_SCOPE_BETWEEN) {
			text_between(o, c);
			continue;
		}
		fprintf(o->f, "   cost %s above the median over %" PRIu64 " calls; slow calls (>= %s): %" PRIu64
			", of their time on CPU %.0f%%, preempted %.0f%%, blocked %.0f%%, waiting after wakeup %.0f%%\n",
			NS(c->cost_ns), c->calls, NS(c->slow_from_ns), c->slow_calls,
			pct(sp[INGERO_SPLIT_ONCPU], total), pct(sp[INGERO_SPLIT_PREEMPTED], total),
			pct(sp[INGERO_SPLIT_BLOCKED], total), pct(sp[INGERO_SPLIT_WAIT], total));
		for (k = 0; k < c->nculprits; k++) {
			fprintf(o->f, "   culprit ");
			put_text(o, c->culprits[k].task.comm, 0);
			fprintf(o->f, " (pid %u, tid %d%s): took %s from these calls, %s in %" PRIu64 " slow ones, CPUs %s\n",
				c->culprits[k].task.pid, c->culprits[k].task.tid,
				c->culprits[k].task.traced ? ", traced" : "", NS(c->culprits[k].ns),
				NS(c->culprits[k].slow_ns), c->culprits[k].slow_calls, CPUS(c->culprits[k].cpus));
		}
		fprintf(o->f, "   remedy: %s\n", c->remedy);
	}
}

static void text_interference(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i, k;

	section(o, "Interference: tasks that took CPU from the traced threads");
	if (!r->ninterferers) {
		fprintf(o->f, "none\n");
		return;
	}
	fprintf(o->f, "%-16s %8s %8s %-10s %9s %9s %7s %6s %9s  %s\n", "comm", "pid", "tid", "CPUs", "taken",
		"in calls", "preempt", "delays", "longest", "APIs hit");
	for (i = 0; i < shown(o, r->ninterferers); i++) {
		const struct ingero_analysis_interferer *f = &r->interferers[i];
		const char *role;

		put_text(o, f->task.comm, 16);
		fprintf(o->f, " %8u %8d %-10s %9s %9s %7" PRIu64 " %6" PRIu64 " %9s  ", f->task.pid, f->task.tid,
			CPUS(f->cpus), NS(f->ns), NS(f->in_calls_ns), f->preemptions, f->delays, NS(f->longest_ns));
		for (k = 0; k < f->napis; k++) {
			fprintf(o->f, "%s", k ? ", " : "");
			put_text(o, api_name(o, f->apis[k].api), 0);
			fprintf(o->f, " %s", NS(f->apis[k].ns));
		}
		fprintf(o->f, "%s", f->napis ? "" : "-");
		if ((role = ingero_analysis_task_role(&f->task)))
			fprintf(o->f, " (%s)", role);
		fputc('\n', o->f);
	}
	if (r->ninterferers > (uint32_t)o->top)
		fprintf(o->f, "... and %u more (--top)\n", r->ninterferers - o->top);
}

static void text_threads(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i;

	section(o, "Threads");
	fprintf(o->f, "%8s %-16s %9s %7s %7s %9s %9s %-16s %6s %8s %9s\n", "tid", "comm", "run", "vol", "invol",
		"avg delay", "max delay", "at", "migr", "calls", "in calls");
	for (i = 0; i < r->nthreads; i++) {
		const struct ingero_analysis_thread *t = &r->threads[i];

		fprintf(o->f, "%8d ", t->task.tid);
		put_text(o, t->task.comm, 16);
		fprintf(o->f, " %9s %7" PRIu64 " %7" PRIu64 " %9s %9s %-16s %6" PRIu64 " %8" PRIu64 " %9s\n",
			NS(t->run_ns), t->voluntary, t->involuntary, NS(t->delays ? t->delay_ns / t->delays : 0),
			NS(t->max_delay_ns),
			t->max_delay_ns ? AT(o, t->max_delay_at) : "-", t->migrations, t->calls, NS(t->call_ns));
	}
}

static void text_memory(const struct out *o)
{
	const struct ingero_analysis_memory *m = &o->r->memory;
	uint64_t i, most = 0;

	section(o, "Memory");
	if (!m->alloc_calls && !m->free_calls) {
		fprintf(o->f, "no allocations or frees\n");
		return;
	}
	fprintf(o->f, "%-28s %8s %8s %11s %11s\n", "API", "allocs", "frees", "allocated", "freed");
	for (i = 0; i < m->napis; i++) {
		put_text(o, api_name(o, m->apis[i].api), 28);
		fprintf(o->f, " %8" PRIu64 " %8" PRIu64 " %11s %11s\n", m->apis[i].allocs, m->apis[i].frees,
			BYTES(m->apis[i].alloc_bytes), BYTES(m->apis[i].free_bytes));
	}
	/* no block was ever live: a peak of nothing has no time */
	if (m->peak_bytes)
		fprintf(o->f, "peak %s live at %s; %s live at the end\n", BYTES(m->peak_bytes), AT(o, m->peak_at),
			BYTES(m->live_bytes_end));
	else
		fprintf(o->f, "peak 0 B; %s live at the end\n", BYTES(m->live_bytes_end));
	if (m->unknown_ptr_allocs || m->untracked_frees || m->null_frees)
		fprintf(o->f, "not tracked: %" PRIu64 " allocations with no pointer read, %" PRIu64
			" frees of pointers not allocated in the trace, %" PRIu64 " frees of NULL\n",
			m->unknown_ptr_allocs, m->untracked_frees, m->null_frees);
	for (i = 0; i < m->ntimeline; i++)
		if (m->timeline[i].bytes > most)
			most = m->timeline[i].bytes;
	if (most && m->ntimeline > 1) {
		uint64_t step = (m->ntimeline + 15) / 16, j;
		int bar = bar_width(o);

		fprintf(o->f, "live bytes over time (most in each stretch):\n");
		for (i = 0; i < m->ntimeline; i += step) {
			uint64_t b = 0;

			for (j = i; j < i + step && j < m->ntimeline; j++)
				if (m->timeline[j].bytes > b)
					b = m->timeline[j].bytes;
			fprintf(o->f, "  %-16s %10s ", AT(o, m->timeline[i].ts), BYTES(b));
			put_bar(o, (int)(b * bar / most));
		}
	}
	fprintf(o->f, "never freed: %" PRIu64 " allocation%s\n", m->nunfreed, m->nunfreed == 1 ? "" : "s");
	for (i = 0; i < shown(o, m->nunfreed); i++) {
		fprintf(o->f, "  0x%-14" PRIx64 " %11s ", m->unfreed[i].ptr, BYTES(m->unfreed[i].size));
		put_text(o, api_name(o, m->unfreed[i].api), 24);
		fprintf(o->f, " tid %-8d at %s\n", m->unfreed[i].tid, AT(o, m->unfreed[i].ts));
	}
	if (m->nunfreed > (uint64_t)o->top)
		fprintf(o->f, "  ... and %" PRIu64 " more (--top)\n", m->nunfreed - o->top);
}

static void text_histograms(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	int bar = bar_width(o);
	uint32_t i, b;

	section(o, "Latency distributions (log2 buckets)");
	for (i = 0; i < r->napis; i++) {
		const struct ingero_analysis_api *a = &r->apis[i];
		uint64_t most = 0;
		int lo = -1, hi = 0;

		for (b = 0; b < INGERO_ANALYSIS_HIST; b++)
			if (a->hist[b]) {
				if (lo < 0)
					lo = (int)b;
				hi = (int)b;
				most = a->hist[b] > most ? a->hist[b] : most;
			}
		fprintf(o->f, "%s", BOLD(o));
		put_text(o, api_name(o, a->api), 0);
		fprintf(o->f, "%s%s%s\n", a->nested ? " (nested)" : "", RESET(o),
			a->entry_only ? ": entry only, no durations" : "");
		for (b = (uint32_t)(lo < 0 ? 0 : lo); lo >= 0 && b <= (uint32_t)hi; b++) {
			fprintf(o->f, "  %9s .. %-9s %8" PRIu64 " ", NS(b ? 1ULL << b : 0), NS(2ULL << b), a->hist[b]);
			put_bar(o, (int)((a->hist[b] * bar + most - 1) / most));
		}
	}
}

static void text_errors(const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i;

	section(o, "Errors");
	if (!r->nerrors) {
		fprintf(o->f, "none\n");
		return;
	}
	fprintf(o->f, "%-28s %8s %8s\n", "API", "code", "calls");
	for (i = 0; i < r->nerrors; i++) {
		put_text(o, api_name(o, r->errors[i].api), 28);
		fprintf(o->f, " %8" PRId64 " %8" PRIu64 "%s\n", r->errors[i].code, r->errors[i].count,
			r->errors[i].nested ? " (nested)" : "");
	}
}

static void render_text(const struct out *o)
{
	text_quality(o);
	text_apis(o);
	text_chains(o);
	text_interference(o);
	text_threads(o);
	text_memory(o);
	text_histograms(o);
	text_errors(o);
}

/* JSON: a writer that keeps track of commas. */
struct json {
	FILE *f;
	int first;
};

static void jkey(struct json *j, const char *key)
{
	if (!j->first)
		fputc(',', j->f);
	j->first = 0;
	if (key) {
		ingero_text_fquote(j->f, key);
		fputc(':', j->f);
	}
}

static void jopen(struct json *j, const char *key, char c)
{
	jkey(j, key);
	fputc(c, j->f);
	j->first = 1;
}

static void jclose(struct json *j, char c)
{
	fputc(c, j->f);
	j->first = 0;
}

static void ju64(struct json *j, const char *key, uint64_t v)
{
	jkey(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

static void jint(struct json *j, const char *key, int64_t v)
{
	jkey(j, key);
	fprintf(j->f, "%" PRId64, v);
}

static void jdouble(struct json *j, const char *key, double v)
{
	jkey(j, key);
	fprintf(j->f, "%.6g", v);
}

static void jtext(struct json *j, const char *key, const char *s)
{
	jkey(j, key);
	ingero_text_fquote(j->f, s);
}

static void jbool(struct json *j, const char *key, int v)
{
	jkey(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void jcpus(struct json *j, const char *key, uint64_t mask)
{
	int c;

	jopen(j, key, '[');
	for (c = 0; c < 64; c++)
		if (mask & (1ULL << c))
			jint(j, NULL, c);
	jclose(j, ']');
}

static void jtask(struct json *j, const struct ingero_analysis_task *t)
{
	jtext(j, "comm", t->comm);
	ju64(j, "pid", t->pid);
	jint(j, "tid", t->tid);
	jbool(j, "traced", t->traced);
	jbool(j, "recorder", t->recorder);
}

/* The main waker, with the time it woke the calls from when ns is given; null when nobody woke them. */
static void jwaker(struct json *j, const struct ingero_analysis_task *w, const uint64_t *ns)
{
	if (!w->tid) {
		jkey(j, "waker");
		fputs("null", j->f);
		return;
	}
	jopen(j, "waker", '{');
	jtask(j, w);
	if (ns)
		ju64(j, "ns", *ns);
	jclose(j, '}');
}

static void json_splits(struct json *j, const uint64_t *split)
{
	uint32_t s;

	for (s = 0; s < INGERO_NR_SPLITS; s++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_ns", ingero_split_name(s));
		ju64(j, key, split[s]);
	}
}

static void json_split_object(struct json *j, const char *key, const uint64_t *split)
{
	jopen(j, key, '{');
	json_splits(j, split);
	jclose(j, '}');
}

static void json_session(struct json *j, const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i;

	jopen(j, "session", '{');
	jtext(j, "command", o->h->command);
	jtext(j, "host", o->h->host);
	jtext(j, "kernel", o->h->kernel);
	jtext(j, "clock", o->h->clock);
	ju64(j, "ncpus", o->h->ncpus);
	ju64(j, "start_ns", r->start_ns);
	ju64(j, "duration_ns", r->duration_ns);
	ju64(j, "events", r->total_events);
	jopen(j, "events_by_stream", '{');
	for (i = 0; i < INGERO_NR_STREAMS; i++)
		ju64(j, ingero_stream_name(i), r->events[i]);
	jclose(j, '}');
	ju64(j, "traced_ns", r->traced_ns);
	ju64(j, "uncovered_calls", r->uncovered_calls);
	ju64(j, "unfollowed_calls", r->unfollowed_calls);
	ju64(j, "repaired_switch_ins", r->repaired);
	jopen(j, "repaired_per_cpu", '[');
	for (i = 0; i < r->nrepaired_cpus; i++) {
		jopen(j, NULL, '{');
		ju64(j, "cpu", r->repaired_cpus[i].cpu);
		ju64(j, "count", r->repaired_cpus[i].count);
		jclose(j, '}');
	}
	jclose(j, ']');
	ju64(j, "unknown_api_calls", r->unknown_api_calls);
	jopen(j, "libraries", '[');
	for (i = 0; i < r->nlibs; i++) {
		jopen(j, NULL, '{');
		jtext(j, "path", r->libs[i].path);
		jtext(j, "build_id", r->libs[i].build_id);
		ju64(j, "pid", r->libs[i].pid);
		ju64(j, "probes", r->libs[i].probes);
		ju64(j, "missing", r->libs[i].missing);
		ju64(j, "probed_ns", r->libs[i].probed_ns);
		jbool(j, "late", r->libs[i].late);
		jclose(j, '}');
	}
	jclose(j, ']');
	jclose(j, '}');
	jopen(j, "lost_events", '{');
	ju64(j, "total", r->lost_total);
	jopen(j, "per_cpu", '[');
	for (i = 0; i < r->nlost; i++) {
		jopen(j, NULL, '{');
		ju64(j, "cpu", r->lost[i].cpu);
		ju64(j, "count", r->lost[i].count);
		ju64(j, "records", r->lost[i].records);
		ju64(j, "lossy_ns", r->lost[i].ns);
		ju64(j, "first_ns", r->lost[i].first_ns);
		ju64(j, "last_ns", r->lost[i].last_ns);
		jclose(j, '}');
	}
	jclose(j, ']');
	jclose(j, '}');
	ju64(j, "open_calls_total", r->nopen);
	jopen(j, "open_calls", '[');
	for (i = 0; i < shown(o, r->nopen); i++) {
		jopen(j, NULL, '{');
		jtext(j, "api", api_name(o, r->open[i].api));
		jint(j, "tid", r->open[i].tid);
		ju64(j, "ts_ns", r->open[i].ts);
		ju64(j, "end_ns", r->open[i].end_ns);
		jclose(j, '}');
	}
	jclose(j, ']');
}

static void json_apis(struct json *j, const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i, b;

	jdouble(j, "percentile_relative_error", INGERO_ANALYSIS_REL_ERROR);
	jopen(j, "apis", '[');
	for (i = 0; i < r->napis; i++) {
		const struct ingero_analysis_api *a = &r->apis[i];

		jopen(j, NULL, '{');
		jtext(j, "name", api_name(o, a->api));
		jtext(j, "lib", a->api < o->h->napis ? o->h->apis[a->api].lib : "?");
		jbool(j, "nested", a->nested);
		jbool(j, "entry_only", a->entry_only);
		ju64(j, "calls", a->calls);
		ju64(j, "errors", a->errors);
		ju64(j, "lossy_calls", a->lossy_calls);
		ju64(j, "total_ns", a->total_ns);
		jdouble(j, "share", a->nested ? 0 : (r->traced_ns ? (double)a->total_ns / r->traced_ns : 0));
		ju64(j, "avg_ns", a->total_ns / a->calls);
		ju64(j, "min_ns", a->min_ns);
		ju64(j, "p50_ns", a->p50_ns);
		ju64(j, "p90_ns", a->p90_ns);
		ju64(j, "p99_ns", a->p99_ns);
		ju64(j, "max_ns", a->max_ns);
		ju64(j, "excess_ns", a->excess_ns);
		json_splits(j, a->split_ns);
		jwaker(j, &a->waker, &a->waker_ns);
		jopen(j, "histogram", '[');
		for (b = 0; b < INGERO_ANALYSIS_HIST; b++)
			if (a->hist[b]) {
				jopen(j, NULL, '{');
				ju64(j, "from_ns", b ? 1ULL << b : 0);
				ju64(j, "to_ns", 2ULL << b);
				ju64(j, "calls", a->hist[b]);
				jclose(j, '}');
			}
		jclose(j, ']');
		jclose(j, '}');
	}
	jclose(j, ']');
}

static void json_chains(struct json *j, const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i, k;

	ju64(j, "chains_total", r->nchains);
	jopen(j, "chains", '[');
	for (i = 0; i < shown(o, r->nchains); i++) {
		const struct ingero_analysis_chain *c = &r->chains[i];

		jopen(j, NULL, '{');
		ju64(j, "rank", i + 1);
		jtext(j, "severity", ingero_severity_name(c->severity));
		jtext(j, "cause", ingero_cause_name(c->cause));
		jtext(j, "api", api_name(o, c->api));
		jtext(j, "summary", c->summary);
		jtext(j, "remedy", c->remedy);
		jtext(j, "scope", ingero_scope_name(c->scope));
		ju64(j, "cost_ns", c->cost_ns);
		ju64(j, "taken_ns", c->taken_ns);
		ju64(j, "neighbour_ns", c->neighbour_ns);
		ju64(j, "p50_ns", c->p50_ns);
		ju64(j, "p90_ns", c->p90_ns);
		ju64(j, "p99_ns", c->p99_ns);
		ju64(j, "max_ns", c->max_ns);
		ju64(j, "calls", c->calls);
		ju64(j, "slow_calls", c->slow_calls);
		ju64(j, "slow_from_ns", c->slow_from_ns);
		ju64(j, "slow_lossy_calls", c->slow_lossy);
		ju64(j, "callers", c->callers);
		ju64(j, "wanted_ns", c->wanted_ns);
		json_split_object(j, "slow_split", c->slow_split_ns);
		jint(j, "cpu", c->cpu);
		jwaker(j, &c->waker, NULL);
		jopen(j, "culprits", '[');
		for (k = 0; k < c->nculprits; k++) {
			jopen(j, NULL, '{');
			jtask(j, &c->culprits[k].task);
			ju64(j, "ns", c->culprits[k].ns);
			ju64(j, "slow_ns", c->culprits[k].slow_ns);
			ju64(j, "slow_calls", c->culprits[k].slow_calls);
			jcpus(j, "cpus", c->culprits[k].cpus);
			jclose(j, '}');
		}
		jclose(j, ']');
		jclose(j, '}');
	}
	jclose(j, ']');
}

static void json_interference(struct json *j, const struct out *o)
{
	const struct ingero_analysis_result *r = o->r;
	uint32_t i, k;

	ju64(j, "interference_total", r->ninterferers);
	jopen(j, "interference", '[');
	for (i = 0; i < shown(o, r->ninterferers); i++) {
		const struct ingero_analysis_interferer *f = &r->interferers[i];

		jopen(j, NULL, '{');
		jtask(j, &f->task);
		ju64(j, "ns", f->ns);
		ju64(j, "in_calls_ns", f->in_calls_ns);
		ju64(j, "preemptions", f->preemptions);
		ju64(j, "delays", f->delays);
		ju64(j, "longest_ns", f->longest_ns);
		jcpus(j, "cpus", f->cpus);
		jopen(j, "apis", '[');
		for (k = 0; k < f->napis; k++) {
			jopen(j, NULL, '{');
			jtext(j, "name", api_name(o, f->apis[k].api));
			ju64(j, "ns", f->apis[k].ns);
			jclose(j, '}');
		}
		jclose(j, ']');
		jclose(j, '}');
	}
	jclose(j, ']');
	jopen(j, "threads", '[');
	for (i = 0; i < r->nthreads; i++) {
		const struct ingero_analysis_thread *t = &r->threads[i];

		jopen(j, NULL, '{');
		jint(j, "tid", t->task.tid);
		ju64(j, "pid", t->task.pid);
		jtext(j, "comm", t->task.comm);
		ju64(j, "run_ns", t->run_ns);
		ju64(j, "voluntary", t->voluntary);
		ju64(j, "involuntary", t->involuntary);
		ju64(j, "migrations", t->migrations);
		ju64(j, "delays", t->delays);
		ju64(j, "avg_delay_ns", t->delays ? t->delay_ns / t->delays : 0);
		ju64(j, "max_delay_ns", t->max_delay_ns);
		ju64(j, "max_delay_at_ns", t->max_delay_at);
		ju64(j, "calls", t->calls);
		ju64(j, "call_ns", t->call_ns);
		json_split_object(j, "call_split", t->call_split_ns);
		jclose(j, '}');
	}
	jclose(j, ']');
}

static void json_memory(struct json *j, const struct out *o)
{
	const struct ingero_analysis_memory *m = &o->r->memory;
	char ptr[24];
	uint64_t i;

	jopen(j, "memory", '{');
	ju64(j, "alloc_calls", m->alloc_calls);
	ju64(j, "free_calls", m->free_calls);
	ju64(j, "alloc_bytes", m->alloc_bytes);
	ju64(j, "free_bytes", m->free_bytes);
	ju64(j, "peak_bytes", m->peak_bytes);
	ju64(j, "peak_at_ns", m->peak_at);
	ju64(j, "live_bytes_end", m->live_bytes_end);
	ju64(j, "unknown_ptr_allocs", m->unknown_ptr_allocs);
	ju64(j, "untracked_frees", m->untracked_frees);
	ju64(j, "null_frees", m->null_frees);
	jopen(j, "apis", '[');
	for (i = 0; i < m->napis; i++) {
		jopen(j, NULL, '{');
		jtext(j, "name", api_name(o, m->apis[i].api));
		ju64(j, "allocs", m->apis[i].allocs);
		ju64(j, "frees", m->apis[i].frees);
		ju64(j, "alloc_bytes", m->apis[i].alloc_bytes);
		ju64(j, "free_bytes", m->apis[i].free_bytes);
		jclose(j, '}');
	}
	jclose(j, ']');
	ju64(j, "unfreed_total", m->nunfreed);
	jopen(j, "unfreed", '[');
	for (i = 0; i < shown(o, m->nunfreed); i++) {
		jopen(j, NULL, '{');
		snprintf(ptr, sizeof(ptr), "0x%" PRIx64, m->unfreed[i].ptr);
		jtext(j, "ptr", ptr);
		ju64(j, "size", m->unfreed[i].size);
		jtext(j, "api", api_name(o, m->unfreed[i].api));
		jint(j, "tid", m->unfreed[i].tid);
		ju64(j, "ts_ns", m->unfreed[i].ts);
		jclose(j, '}');
	}
	jclose(j, ']');
	jopen(j, "timeline", '[');
	for (i = 0; i < m->ntimeline; i++) {
		jopen(j, NULL, '{');
		ju64(j, "ts_ns", m->timeline[i].ts);
		ju64(j, "bytes", m->timeline[i].bytes);
		jclose(j, '}');
	}
	jclose(j, ']');
	jclose(j, '}');
}

static void render_json(const struct out *o)
{
	struct json j = { o->f, 1 };
	uint32_t i;

	jopen(&j, NULL, '{');
	jtext(&j, "schema", SCHEMA);
	json_session(&j, o);
	json_apis(&j, o);
	json_chains(&j, o);
	json_interference(&j, o);
	json_memory(&j, o);
	jopen(&j, "errors", '[');
	for (i = 0; i < o->r->nerrors; i++) {
		jopen(&j, NULL, '{');
		jtext(&j, "api", api_name(o, o->r->errors[i].api));
		jbool(&j, "nested", o->r->errors[i].nested);
		jint(&j, "code", o->r->errors[i].code);
		ju64(&j, "count", o->r->errors[i].count);
		jclose(&j, '}');
	}
	jclose(&j, ']');
	jclose(&j, '}');
	fputc('\n', o->f);
}

static int find_api(const struct ingero_header *h, const char *name)
{
	uint32_t i;

	for (i = 0; i < h->napis; i++)
		if (!strcmp(h->apis[i].name, name))
			return (int)i;
	return -1;
}

static int terminal_width(void)
{
	struct winsize ws;

	return !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40 ? ws.ws_col : 100;
}

int cmd_analyze(int argc, const char **argv)
{
	int json = 0, top = -1, tid = 0, no_color = 0, ret;
	uint64_t from = 0, to = UINT64_MAX;
	const char *api = NULL, *term = getenv("TERM"), *no_color_env = getenv("NO_COLOR");
	struct option options[] = {
		OPT_BOOL(0, "json", &json, "print the report as one JSON object (ingero-analyze-json(5))"),
		OPT_INT(0, "top", &top, "n", "show the first n chains, interferers and allocations (default 10)"),
		OPT_STRING(0, "api", &api, "name", "only the calls of this API"),
		OPT_TID(0, "tid", &tid, "only the calls and statistics of this thread"),
		OPT_TIME(0, "from", &from, "only calls entered at or after this time from the start (1.5s, 200ms)"),
		OPT_TIME(0, "to", &to, "only calls entered before this time from the start"),
		OPT_BOOL(0, "no-color", &no_color, "no colours, even on a terminal"),
		OPT_END(),
	};
	struct ingero_analysis_opts opts = { .api = -1 };
	const struct ingero_analysis_result *res;
	struct ingero_analysis *a;
	struct ingero_reader *r;
	const struct ingero_event *ev;
	struct out o;

	argc = parse_options(argc, argv, options, analyze_usage, 0);
	if (argc != 1) {
		error(argc ? "analyze takes one trace, not %d" : "analyze needs a trace: ingero analyze FILE", argc);
		usage_with_options(analyze_usage, options, 1);
	}
	if (check_window(from, to))
		usage_with_options(analyze_usage, options, 1);
	r = ingero_reader_open(argv[0]);
	if (!r)
		return 1;
	o.h = ingero_reader_header(r);
	opts.apis = o.h->apis;
	opts.napis = o.h->napis;
	opts.tid = tid;
	if (api && (opts.api = find_api(o.h, api)) < 0) {
		error("'%s' is not an API of this trace (ingero probes lists them)", api);
		ingero_reader_close(r);
		return 129;
	}
	/* The window and every time of the report are relative to the start of recording, as dump's are. */
	opts.start_ns = o.h->start_ns;
	if (from)
		opts.from_ns = time_after(opts.start_ns, from);
	if (to != UINT64_MAX)
		opts.to_ns = time_after(opts.start_ns, to);
	a = ingero_analysis_new(&opts);
	if (!a) {
		ingero_reader_close(r);
		return 1;
	}
	while ((ret = ingero_reader_next(r, &ev)) > 0)
		if (ingero_analysis_add(a, ev))
			die_errno("out of memory analysing '%s'", argv[0]);
	if (ret < 0)
		die("'%s' is damaged: %s (ingero dump prints the events before the damage)", argv[0], ingero_reader_error(r));
	res = ingero_analysis_finish(a);
	if (!res)
		die("cannot build the report of '%s'", argv[0]);
	o.f = stdout;
	o.r = res;
	o.top = top >= 0 ? top : json ? INT32_MAX : DEFAULT_TOP;
	/* no-color.org: NO_COLOR set to a value, not merely set */
	o.color = !no_color && !json && isatty(STDOUT_FILENO) && term && strcmp(term, "dumb") &&
		  !(no_color_env && *no_color_env);
	o.width = isatty(STDOUT_FILENO) ? terminal_width() : 100;
	if (json)
		render_json(&o);
	else
		render_text(&o);
	ret = fflush(stdout) || ferror(stdout) ? error_errno("cannot write the report") : 0;
	ingero_analysis_free(a);
	ingero_reader_close(r);
	return ret ? 1 : 0;
}
