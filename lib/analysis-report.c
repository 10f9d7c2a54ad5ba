/*
 * The end of the pass: turns the engine's state into the report, and ranks
 * the causal chains with their verdicts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis-internal.h"
#include "error.h"

/*
 * Severity thresholds: the share of the traced time that other programs'
 * tasks took; the traced program's own threads rate low at most.
 */
#define HIGH_SHARE 0.10
#define MEDIUM_SHARE 0.02
/*
 * A chain whose cause is not interference still names its top culprit when
 * its culprits took this share of its slow calls' time: not when the calls
 * were runnable as long on a CPU left idle, with a neighbour's moment in it.
 */
#define ALSO_TAKEN_PCT 10

static const char *const cause_names[INGERO_NR_CAUSES] = {
	[INGERO_CAUSE_PREEMPTED] = "preempted",
	[INGERO_CAUSE_DELAYED] = "delayed",
	[INGERO_CAUSE_GPU_WAIT] = "gpu-wait",
	[INGERO_CAUSE_BLOCKED] = "blocked",
	[INGERO_CAUSE_ONCPU] = "oncpu",
	[INGERO_CAUSE_UNKNOWN] = "unknown",
};

static const char *const remedies[INGERO_NR_CAUSES] = {
	[INGERO_CAUSE_PREEMPTED] = "keep the neighbour off the traced threads' CPUs: pin them apart "
		"(taskset, cpusets), isolate the cores (isolcpus, nohz_full), or renice the neighbour",
	[INGERO_CAUSE_DELAYED] = "the woken thread waited for a busy CPU: give the traced threads cores "
		"of their own or a higher priority (nice, SCHED_FIFO), or renice the neighbour",
	[INGERO_CAUSE_GPU_WAIT] = "nothing to fix on the CPU: the time is the GPU's; overlap work with it "
		"(streams, asynchronous copies) or make the kernels shorter",
	[INGERO_CAUSE_BLOCKED] = "find what the call sleeps on (a lock, the driver, page faults), the "
		"waker is the lead; move the call off the hot path",
	[INGERO_CAUSE_ONCPU] = "make fewer, larger calls or move them off the hot path "
		"(a caching allocator instead of an allocation per step)",
	[INGERO_CAUSE_UNKNOWN] = "record again with larger buffers so that no events are lost",
};

static const char own_threads_remedy[] = "the traced program's own threads share the CPU: let it use more "
	"CPUs (taskset, cpusets) or run fewer threads on these";
static const char recorder_remedy[] = "the recorder's own reading of the trace: give it a CPU the traced "
	"threads do not use (taskset -c N ingero record ...)";

const char *ingero_cause_name(enum ingero_cause c)
{
	return c < INGERO_NR_CAUSES ? cause_names[c] : "?";
}

const char *ingero_scope_name(enum ingero_scope s)
{
	static const char *const names[INGERO_NR_SCOPES] = { "slow", "all", "between" };

	return s < INGERO_NR_SCOPES ? names[s] : "?";
}

const char *ingero_severity_name(enum ingero_severity s)
{
	static const char *const names[] = { "info", "low", "medium", "high" };

	return s <= INGERO_SEVERITY_HIGH ? names[s] : "?";
}

char *ingero_analysis_fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const struct { double div; const char *unit; } units[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double v = (double)ns / units[i].div;

		if (v >= 1) {
			snprintf(buf, len, "%.*f %s", v >= 100 ? 0 : v >= 10 ? 1 : 2, v, units[i].unit);
			return buf;
		}
	}
	snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

void thread_task(const struct thread *t, struct ingero_analysis_task *out)
{
	out->tid = t->tid;
	out->pid = t->pid;
	out->comm = t->comm && *t->comm ? t->comm : "?";
	out->traced = t->traced;
	out->recorder = !t->traced && !strcmp(out->comm, RECORDER_NAME);
}

const char *ingero_analysis_task_role(const struct ingero_analysis_task *t)
{
	return t->traced ? "a traced thread" : t->recorder ? "the recorder itself" : NULL;
}

/* The task that holds tid last: the tid of a thread that exited may be another task's now. */
void task_of(struct ingero_analysis *a, int32_t tid, struct ingero_analysis_task *out)
{
	struct thread **t = amap_get(&a->threads, (uint32_t)tid);

	if (t) {
		thread_task(*t, out);
		return;
	}
	out->tid = tid;
	out->pid = (uint32_t)tid;
	out->comm = "?";
	out->traced = 0;
	out->recorder = 0;
}

static uint32_t log2_bucket(uint64_t v)
{
	uint32_t b = v > 1 ? 63 - (uint32_t)__builtin_clzll(v) : 0;

	return b < INGERO_ANALYSIS_HIST ? b : INGERO_ANALYSIS_HIST - 1;
}

static void fill_api(struct ingero_analysis_api *o, const struct row *r, const struct ingero_api *apis,
		     uint32_t api, int nested)
{
	uint32_t b;

	memset(o, 0, sizeof(*o));
	o->api = api;
	o->nested = nested;
	o->calls = r->calls;
	o->entry_only = ingero_api_entry_only(&apis[api]);
	if (o->entry_only)
		return;
	o->errors = r->errors;
	o->lossy_calls = r->lossy;
	o->total_ns = r->total;
	o->min_ns = r->min;
	o->max_ns = r->max;
	memcpy(o->split_ns, r->split, sizeof(o->split_ns));
	o->p50_ns = sketch_quantile(r->sketch, r->calls, 0.50, r->min, r->max);
	o->p90_ns = sketch_quantile(r->sketch, r->calls, 0.90, r->min, r->max);
	o->p99_ns = sketch_quantile(r->sketch, r->calls, 0.99, r->min, r->max);
	for (b = 0; b < SKETCH_BUCKETS; b++) {
		uint64_t mid;

		if (!r->sketch[b].n)
			continue;
		mid = sketch_value(r->sketch, b);
		o->hist[log2_bucket(mid)] += r->sketch[b].n;
		if (mid > o->p50_ns)
			o->excess_ns += r->sketch[b].sum - r->sketch[b].n * o->p50_ns;
	}
}

static int by_total(const void *x, const void *y)
{
	const struct ingero_analysis_api *p = x, *q = y;

	if (p->nested != q->nested)
		return p->nested - q->nested;
	return p->total_ns > q->total_ns ? -1 : p->total_ns < q->total_ns ? 1 : (int)p->api - (int)q->api;
}

/* Which way the slow calls' extra time went, against what a typical call spends. */
static enum ingero_cause find_cause(const struct ingero_analysis *a, uint32_t api, const uint64_t *slow,
				    uint64_t nslow, const uint64_t *typical, uint64_t ntypical)
{
	uint32_t role = a->opts.apis[api].role;
	int waits_for_gpu = role == INGERO_ROLE_SYNC || role == INGERO_ROLE_COPY ||
		role == INGERO_ROLE_MEMSET || role == INGERO_ROLE_FREE;
	uint64_t extra[INGERO_NR_SPLITS], by_cause[INGERO_NR_CAUSES] = { 0 }, best = 0, any = 0;
	uint32_t i, c = INGERO_CAUSE_ONCPU;

	for (i = 0; i < INGERO_NR_SPLITS; i++) {
		uint64_t usual = ntypical ? (uint64_t)((double)typical[i] / ntypical * nslow) : 0;

		extra[i] = slow[i] > usual ? slow[i] - usual : 0;
		any |= extra[i];
	}
	/* No part grew more than the others: judge by where the slow calls' time went. */
	if (!any)
		memcpy(extra, slow, sizeof(extra));
	by_cause[INGERO_CAUSE_PREEMPTED] = extra[INGERO_SPLIT_PREEMPTED];
	by_cause[INGERO_CAUSE_DELAYED] = extra[INGERO_SPLIT_WAIT];
	by_cause[waits_for_gpu ? INGERO_CAUSE_GPU_WAIT : INGERO_CAUSE_BLOCKED] =
		extra[INGERO_SPLIT_BLOCKED];
	/* a synchronisation on the CPU spins until the GPU is done: its own work is that wait */
	by_cause[role == INGERO_ROLE_SYNC ? INGERO_CAUSE_GPU_WAIT : INGERO_CAUSE_ONCPU] +=
		extra[INGERO_SPLIT_ONCPU];
	by_cause[INGERO_CAUSE_UNKNOWN] = extra[INGERO_SPLIT_UNKNOWN];
	/* Preempted and delayed are one kind of interference: together they decide against the rest. */
	for (i = 0; i < INGERO_NR_CAUSES; i++) {
		uint64_t v = by_cause[i];

		if (i == INGERO_CAUSE_PREEMPTED || i == INGERO_CAUSE_DELAYED)
			v = by_cause[INGERO_CAUSE_PREEMPTED] + by_cause[INGERO_CAUSE_DELAYED];
		if (v > best) {
			best = v;
			c = i;
		}
	}
	if (c == INGERO_CAUSE_PREEMPTED || c == INGERO_CAUSE_DELAYED)
		c = by_cause[INGERO_CAUSE_PREEMPTED] >= by_cause[INGERO_CAUSE_DELAYED] ?
			INGERO_CAUSE_PREEMPTED : INGERO_CAUSE_DELAYED;
	return c;
}

/* Keeps c among the chain's culprits if it is one of the INGERO_ANALYSIS_CULPRITS that took most (ties: lower tid). */
static void culprit_keep(struct ingero_analysis_chain *ch, const struct ingero_analysis_culprit *c)
{
	uint32_t k = ch->nculprits < INGERO_ANALYSIS_CULPRITS ? ch->nculprits++ : INGERO_ANALYSIS_CULPRITS;

	for (; k > 0; k--) {
		const struct ingero_analysis_culprit *p = &ch->culprits[k - 1];

		if (p->ns > c->ns || (p->ns == c->ns && p->task.tid < c->task.tid))
			break;
		if (k < INGERO_ANALYSIS_CULPRITS)
			ch->culprits[k] = *p;
	}
	if (k < INGERO_ANALYSIS_CULPRITS)
		ch->culprits[k] = *c;
}

/* Sums what each task took from the chain's calls, and keeps those that took most. */
static void chain_culprits(struct ingero_analysis *a, struct ingero_analysis_chain *ch, uint32_t slow_cls,
			   struct amap *sums)
{
	struct blame *b;
	size_t pos = 0;
	uint32_t k;
	uint64_t key;
	uint64_t best_waker_ns = 0;
	int32_t best_waker = 0;
	struct amap wakers;

	if (amap_init(&wakers, sizeof(uint64_t), 16))
		return;
	sums->n = 0;
	memset(sums->keys, 0xff, sums->cap * sizeof(*sums->keys));
	while ((b = amap_next(&a->blames, &pos, &key))) {
		uint32_t api = (uint32_t)(key >> 40) & 0x3fffff, cls = (uint32_t)(key >> 28) & 0xfff;
		int32_t tid = (int32_t)(key & 0x0fffffff);
		struct ingero_analysis_culprit *c;

		if (api != ch->api)
			continue;
		if (key >> 62) {
			uint64_t *w = cls >= slow_cls ? amap_put(&wakers, (uint32_t)tid, NULL) : NULL;

			if (w && (*w += b->ns) > best_waker_ns) {
				best_waker_ns = *w;
				best_waker = tid;
			}
			continue;
		}
		c = amap_put(sums, (uint32_t)tid, NULL);
		if (!c)
			break;
		c->task.tid = tid;
		c->ns += b->ns;
		ch->taken_ns += b->ns;
		if (cls >= slow_cls) {
			c->slow_ns += b->ns;
			c->slow_calls += b->calls;
			c->cpus |= b->cpus;
		}
	}
	amap_release(&wakers);
	if (best_waker)
		task_of(a, best_waker, &ch->waker);
	for (pos = 0; (b = amap_next(sums, &pos, &key));) {
		struct ingero_analysis_task t;

		task_of(a, (int32_t)key, &t);
		if (!t.traced && !t.recorder)
			ch->neighbour_ns += ((struct ingero_analysis_culprit *)(void *)b)->ns;
	}
	for (pos = 0; (b = amap_next(sums, &pos, &key));)
		culprit_keep(ch, (struct ingero_analysis_culprit *)(void *)b);
	for (k = 0; k < ch->nculprits; k++)
		task_of(a, ch->culprits[k].task.tid, &ch->culprits[k].task);
	ch->cpu = ch->nculprits && ch->culprits[0].cpus ? __builtin_ctzll(ch->culprits[0].cpus) : -1;
}

/* The slow calls' time, over all its splits. */
static uint64_t slow_total(const struct ingero_analysis_chain *ch)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < INGERO_NR_SPLITS; i++)
		total += ch->slow_split_ns[i];
	return total;
}

static int is_runnable(uint32_t split)
{
	return split == INGERO_SPLIT_PREEMPTED || split == INGERO_SPLIT_WAIT;
}

static int is_interference(uint32_t cause)
{
	return cause == INGERO_CAUSE_PREEMPTED || cause == INGERO_CAUSE_DELAYED;
}

/* Which of the two kinds of interference took more of the slow calls' time. */
static enum ingero_cause runnable_cause(const struct ingero_analysis_chain *ch)
{
	return ch->slow_split_ns[INGERO_SPLIT_PREEMPTED] >= ch->slow_split_ns[INGERO_SPLIT_WAIT] ?
		INGERO_CAUSE_PREEMPTED : INGERO_CAUSE_DELAYED;
}

/* Whether a chain of another cause lost enough of its slow calls' time to its culprits to name the top one too. */
static int also_interfered(const struct ingero_analysis_chain *ch)
{
	uint64_t taken = 0;
	uint32_t k;

	for (k = 0; k < ch->nculprits; k++)
		taken += ch->culprits[k].slow_ns;
	return !is_interference(ch->cause) && ch->nculprits && ch->culprits[0].slow_calls &&
	       100 * taken >= ALSO_TAKEN_PCT * slow_total(ch);
}

/*
 * How calls waited for the GPU, in percent of their time: blocked, and for
 * a synchronisation on the CPU too, where it spins when it does not block.
 */
static void gpu_wait_how(char *how, size_t len, int blocked, int spinning)
{
	if (!spinning)
		snprintf(how, len, "blocked %d%%", blocked);
	else if (!blocked)
		snprintf(how, len, "spinning on the CPU %d%%", spinning);
	else
		snprintf(how, len, "blocked %d%% and on the CPU %d%%", blocked, spinning);
}

/* "[lead]5 of [whole] were preempted on CPU 0 by hog (pid 728), 3.42 ms each": what culprit c took. */
static int taken_clause(char *s, size_t len, const char *lead, const char *whole,
			const struct ingero_analysis_culprit *c, enum ingero_cause cause, int cpu)
{
	char each[32];
	int one = c->slow_calls == 1;
	const char *role = ingero_analysis_task_role(&c->task);

	ingero_analysis_fmt_ns(each, sizeof(each), c->slow_ns / c->slow_calls);
	return snprintf(s, len, "%s%llu of %s %s %s on CPU %d by %s (pid %u%s%s), %s each", lead,
			(unsigned long long)c->slow_calls, whole, one ? "was" : "were",
			cause == INGERO_CAUSE_PREEMPTED ? "preempted" : one ? "kept off the CPU after its wakeup" :
			"kept off the CPU after their wakeup", cpu, c->task.comm, c->task.pid,
			role ? ", " : "", role ? role : "", each);
}

static void chain_summary(struct ingero_analysis *a, struct ingero_analysis_chain *ch)
{
	const char *name = a->opts.apis[ch->api].name;
	char p99[32], p50[32], from[32], slow[64], all[64], how[64], *s = ch->summary;
	size_t len = sizeof(ch->summary);
	const struct ingero_analysis_culprit *c = &ch->culprits[0];
	uint64_t total = slow_total(ch);
	int n, also = also_interfered(ch);
	const char *their = ch->slow_calls == 1 ? "its" : "their";

	ingero_analysis_fmt_ns(p99, sizeof(p99), ch->p99_ns);
	ingero_analysis_fmt_ns(p50, sizeof(p50), ch->p50_ns);
	ingero_analysis_fmt_ns(from, sizeof(from), ch->slow_from_ns);
	snprintf(slow, sizeof(slow), "the %llu call%s >= %s", (unsigned long long)ch->slow_calls,
		 ch->slow_calls == 1 ? "" : "s", from);
	/* a p50 of 0 has no ratio: p99 is not 0 times it */
	if (ch->p50_ns)
		n = snprintf(s, len, "%s p99 = %s (%.1fx p50 %s): ", name, p99, (double)ch->p99_ns / ch->p50_ns, p50);
	else
		n = snprintf(s, len, "%s p99 = %s (p50 %s): ", name, p99, p50);
	if (n < 0 || (size_t)n >= len)
		return;
	s += n;
	len -= n;
#define PCT(split) (total ? (int)(100 * ch->slow_split_ns[split] / total) : 0)
	switch (ch->cause) {
	case INGERO_CAUSE_PREEMPTED:
	case INGERO_CAUSE_DELAYED:
		if (!ch->nculprits || !c->slow_calls) {
			n = snprintf(s, len, "%s %s runnable %d%% of %s time, while no task was seen on %s CPU",
				     slow, ch->slow_calls == 1 ? "was" : "were",
				     PCT(INGERO_SPLIT_PREEMPTED) + PCT(INGERO_SPLIT_WAIT), their, their);
			break;
		}
		/* "5 of the 48 calls >= 1.6 ms were", or over all of them "100 of all 100 calls were". */
		snprintf(all, sizeof(all), "all %llu call%s", (unsigned long long)ch->slow_calls,
			 ch->slow_calls == 1 ? "" : "s");
		n = taken_clause(s, len, "", ch->scope == INGERO_SCOPE_ALL ? all : slow, c, ch->cause, ch->cpu);
		break;
	case INGERO_CAUSE_GPU_WAIT:
		gpu_wait_how(how, sizeof(how), PCT(INGERO_SPLIT_BLOCKED),
			     a->opts.apis[ch->api].role == INGERO_ROLE_SYNC ? PCT(INGERO_SPLIT_ONCPU) : 0);
		n = snprintf(s, len, "%s waited for the GPU, %s of %s time", slow, how, their);
		if (n > 0 && (size_t)n < len && ch->waker.tid)
			n += snprintf(s + n, len - n, ", woken by %s (pid %u)", ch->waker.comm, ch->waker.pid);
		if (n > 0 && (size_t)n < len && !also)
			n += snprintf(s + n, len - n, "; waiting, not interference");
		break;
	case INGERO_CAUSE_BLOCKED:
		n = snprintf(s, len, "%s slept %d%% of %s time", slow, PCT(INGERO_SPLIT_BLOCKED), their);
		if (n > 0 && (size_t)n < len && ch->waker.tid)
			n += snprintf(s + n, len - n, ", woken by %s (pid %u)", ch->waker.comm, ch->waker.pid);
		break;
	case INGERO_CAUSE_ONCPU:
		n = snprintf(s, len, "%s ran on CPU %d%% of %s time%s", slow, PCT(INGERO_SPLIT_ONCPU), their,
			     also ? "" : ": the call's own work, not interference");
		break;
	default:
		n = snprintf(s, len, "%d%% of the time of the %llu slow calls (>= %s) is not covered by the "
			     "scheduling history (lost events)", PCT(INGERO_SPLIT_UNKNOWN),
			     (unsigned long long)ch->slow_calls, from);
		break;
	}
	if (n > 0 && (size_t)n < len && also)
		n += taken_clause(s + n, len - n, "; and ", "them", c, runnable_cause(ch), ch->cpu);
#undef PCT
	if (n > 0 && (size_t)n < len && ch->slow_lossy)
		snprintf(s + n, len - n, " [%llu of them on lossy stretches]", (unsigned long long)ch->slow_lossy);
}

static uint32_t severity_of(const struct ingero_analysis *a, const struct ingero_analysis_chain *ch)
{
	uint64_t taken = ch->neighbour_ns;
	double share;

	if (ch->cause == INGERO_CAUSE_GPU_WAIT || ch->cause == INGERO_CAUSE_UNKNOWN)
		return INGERO_SEVERITY_INFO;
	if (ch->cause != INGERO_CAUSE_PREEMPTED && ch->cause != INGERO_CAUSE_DELAYED)
		return INGERO_SEVERITY_LOW;
	share = a->traced_ns ? (double)(taken < ch->cost_ns ? taken : ch->cost_ns) / a->traced_ns : 0;
	return share >= HIGH_SHARE ? INGERO_SEVERITY_HIGH :
		share >= MEDIUM_SHARE ? INGERO_SEVERITY_MEDIUM : INGERO_SEVERITY_LOW;
}

/*
 * A chain for an outermost row. Over its slow calls (all_calls 0): none when
 * they are no slower than its typical ones. Over all of them (all_calls 1):
 * the time other tasks took from every call, which a median cannot show when
 * the neighbour slows every call alike.
 */
static int chain_of(struct ingero_analysis *a, const struct ingero_analysis_api *row, int all_calls,
		    struct ingero_analysis_chain *ch, struct amap *sums)
{
	const struct row *r = a->rows[2 * row->api];
	uint32_t c50 = sketch_bucket(row->p50_ns) >> CLASS_SHIFT, c90 = sketch_bucket(row->p90_ns) >> CLASS_SHIFT;
	uint32_t slow_cls = all_calls ? 0 : c90 > c50 ? c90 : c50 + 1, k, i;
	uint64_t typical[INGERO_NR_SPLITS] = { 0 }, slow[INGERO_NR_SPLITS] = { 0 }, ntypical = 0, taken;
	const struct ingero_analysis_task *led;	/* the culprit that took most, where interference led */

	memset(ch, 0, sizeof(*ch));
	for (k = 0; k < CLASSES; k++) {
		const struct cls *cl = &r->cls[k];

		for (i = 0; i < INGERO_NR_SPLITS; i++) {
			/* for the cause, runnable time is what other tasks ran in: on an idle CPU it is nobody's */
			uint64_t v = is_runnable(i) ? cl->taken[taken_slot(i)] : cl->split[i];

			if (k >= slow_cls) {
				ch->slow_split_ns[i] += cl->split[i];
				slow[i] += v;
			} else if (k <= c50) {
				typical[i] += v;
			}
		}
		if (k >= slow_cls) {
			ch->slow_calls += cl->calls;
			ch->slow_lossy += cl->lossy;
		} else if (k <= c50) {
			ntypical += cl->calls;
		}
	}
	taken = row->split_ns[INGERO_SPLIT_PREEMPTED] + row->split_ns[INGERO_SPLIT_WAIT];
	if (!ch->slow_calls || (all_calls ? !taken : !row->excess_ns))
		return 0;
	ch->api = row->api;
	ch->scope = all_calls ? INGERO_SCOPE_ALL : INGERO_SCOPE_SLOW;
	ch->p50_ns = row->p50_ns;
	ch->p90_ns = row->p90_ns;
	ch->p99_ns = row->p99_ns;
	ch->max_ns = row->max_ns;
	ch->calls = row->calls;
	ch->slow_from_ns = all_calls ? row->min_ns : sketch_low(slow_cls << CLASS_SHIFT);
	if (ch->slow_from_ns < row->min_ns)
		ch->slow_from_ns = row->min_ns;
	if (all_calls)
		ch->cause = row->split_ns[INGERO_SPLIT_PREEMPTED] >= row->split_ns[INGERO_SPLIT_WAIT] ?
			INGERO_CAUSE_PREEMPTED : INGERO_CAUSE_DELAYED;
	else
		ch->cause = find_cause(a, row->api, slow, ch->slow_calls, typical, ntypical);
	chain_culprits(a, ch, slow_cls, sums);
	/* Runnable while the CPU idled (waking from a deep C-state) is nobody's interference. */
	if (all_calls && ch->taken_ns < MEDIUM_SHARE * a->traced_ns)
		return 0;
	/* Where a neighbour took much of the slow calls' time, moving it is the remedy on the CPU's side. */
	led = (is_interference(ch->cause) || also_interfered(ch)) && ch->nculprits ? &ch->culprits[0].task : NULL;
	if (led && led->traced)
		ch->remedy = own_threads_remedy;
	else if (led && led->recorder)
		ch->remedy = recorder_remedy;
	else
		ch->remedy = remedies[also_interfered(ch) ? runnable_cause(ch) : ch->cause];
	/* Interference costs what the culprits took, even where they slowed every call alike. */
	ch->cost_ns = all_calls ? ch->taken_ns : row->excess_ns;
	if (is_interference(ch->cause) && ch->taken_ns > ch->cost_ns)
		ch->cost_ns = ch->taken_ns;
	ch->severity = severity_of(a, ch);
	chain_summary(a, ch);
	return 1;
}

/* The outermost row that best stands for the callers' work: the most calls, entry-only ones first. */
static const struct ingero_analysis_api *callers_row(const struct ingero_analysis_result *res)
{
	const struct ingero_analysis_api *best = NULL;
	uint32_t i;

	for (i = 0; i < res->napis; i++) {
		const struct ingero_analysis_api *r = &res->apis[i];

		if (!r->nested && (!best || r->entry_only > best->entry_only ||
				   (r->entry_only == best->entry_only && r->calls > best->calls)))
			best = r;
	}
	return best;
}

/* The threads that call CUDA: how many, the CPU time they wanted since their first call, and the one that called most. */
static uint64_t callers_wanted(struct ingero_analysis *a, uint32_t *n, int32_t *most)
{
	uint64_t wanted = 0, best = 0;
	struct thread **tp;
	size_t pos = 0;
	uint64_t key;

	*n = 0;
	while ((tp = amap_next(&a->threads, &pos, &key))) {
		const struct thread *t = *tp;
		if (!t->traced || !(t->calls || t->entry_calls) || (a->opts.tid && t->tid != a->opts.tid))
			continue;
		++*n;
		wanted += t->run_ns + t->delay_ns - t->wanted_before;
		if (t->calls > best || (t->calls == best && t->tid < *most)) {
			best = t->calls;
			*most = t->tid;
		}
	}
	return wanted;
}

static void between_summary(struct ingero_analysis *a, struct ingero_analysis_chain *ch,
			    const struct ingero_analysis_api *row, int32_t most)
{
	const struct ingero_analysis_culprit *c = &ch->culprits[0];
	char taken[32], wanted[32], who[64];
	struct ingero_analysis_task t;
	size_t len = sizeof(ch->summary);
	int n;

	task_of(a, most, &t);
	if (ch->callers == 1)
		snprintf(who, sizeof(who), "%s (tid %d) lost", t.comm, t.tid);
	else
		snprintf(who, sizeof(who), "the %u threads that call CUDA lost", ch->callers);
	ingero_analysis_fmt_ns(taken, sizeof(taken), ch->taken_ns);
	ingero_analysis_fmt_ns(wanted, sizeof(wanted), ch->wanted_ns);
	n = snprintf(ch->summary, len, "between CUDA calls, %s %s of the %s %s wanted the CPU (%.0f%%), "
		     "%s on CPU %d by %s (pid %u)", who, taken, wanted, ch->callers == 1 ? "it" : "they",
		     100.0 * ch->taken_ns / ch->wanted_ns, ch->cause == INGERO_CAUSE_PREEMPTED ? "preempted" :
		     "after wakeups", ch->cpu, c->task.comm, c->task.pid);
	if (n > 0 && (size_t)n < len && row->entry_only)
		snprintf(ch->summary + n, len - n, "; its %llu %s calls (timed at no end) waited with it",
			 (unsigned long long)row->calls, a->opts.apis[ch->api].name);
}

/*
 * The chain of the time between calls: what other programs' tasks took
 * from the threads that call CUDA outside their timed calls. Launches probed
 * at their entries alone have no interval to show that in, yet they wait
 * whenever their thread does. None under MEDIUM_SHARE of the time wanted.
 */
static int between_chain(struct ingero_analysis *a, struct ingero_analysis_chain *ch)
{
	const struct ingero_analysis_api *row = callers_row(&a->result);
	const struct interferer *f;
	int32_t most = 0;
	size_t pos = 0;
	uint64_t key;

	memset(ch, 0, sizeof(*ch));
	ch->wanted_ns = callers_wanted(a, &ch->callers, &most);
	while ((f = amap_next(&a->interferers, &pos, &key))) {
		struct ingero_analysis_culprit c = { .ns = f->callers_ns - f->in_calls_ns, .cpus = f->cpus };

		task_of(a, (int32_t)key, &c.task);
		if (c.task.traced || c.task.recorder || f->callers_ns <= f->in_calls_ns)
			continue;
		ch->taken_ns += c.ns;
		culprit_keep(ch, &c);
	}
	if (!row || !ch->nculprits || !ch->wanted_ns || ch->taken_ns < MEDIUM_SHARE * ch->wanted_ns)
		return 0;
	f = amap_get(&a->interferers, (uint32_t)ch->culprits[0].task.tid);
	ch->scope = INGERO_SCOPE_BETWEEN;
	ch->api = row->api;
	ch->cause = f->preemptions >= f->delays ? INGERO_CAUSE_PREEMPTED : INGERO_CAUSE_DELAYED;
	ch->severity = ch->taken_ns >= HIGH_SHARE * ch->wanted_ns ? INGERO_SEVERITY_HIGH : INGERO_SEVERITY_MEDIUM;
	ch->cost_ns = ch->neighbour_ns = ch->taken_ns;
	ch->cpu = ch->culprits[0].cpus ? __builtin_ctzll(ch->culprits[0].cpus) : -1;
	ch->remedy = remedies[ch->cause];
	between_summary(a, ch, row, most);
	return 1;
}

static int by_cost(const void *x, const void *y)
{
	const struct ingero_analysis_chain *p = x, *q = y;

	return p->cost_ns > q->cost_ns ? -1 : p->cost_ns < q->cost_ns ? 1 : (int)p->api - (int)q->api;
}

int build_chains(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	struct amap sums;
	uint32_t i;

	/* At most two chains per row (its slow calls, and interference that slowed all of them), and one between calls. */
	res->chains = calloc(2 * res->napis + 1, sizeof(*res->chains));
	if (!res->chains || amap_init(&sums, sizeof(struct ingero_analysis_culprit), 256))
		return -1;
	for (i = 0; i < res->napis; i++) {
		const struct ingero_analysis_api *row = &res->apis[i];
		struct ingero_analysis_chain *ch = &res->chains[res->nchains];
		uint64_t taken = row->split_ns[INGERO_SPLIT_PREEMPTED] + row->split_ns[INGERO_SPLIT_WAIT];
		int slow;

		if (row->nested)
			continue;
		slow = chain_of(a, row, 0, ch, &sums);
		res->nchains += slow;
		if ((!slow || !is_interference(ch->cause)) && taken >= MEDIUM_SHARE * a->traced_ns &&
		    chain_of(a, row, 1, &res->chains[res->nchains], &sums))
			res->nchains++;
	}
	amap_release(&sums);
	res->nchains += between_chain(a, &res->chains[res->nchains]);
	qsort(res->chains, res->nchains, sizeof(*res->chains), by_cost);
	return 0;
}

static int by_taken(const void *x, const void *y)
{
	const struct ingero_analysis_interferer *p = x, *q = y;

	return p->ns > q->ns ? -1 : p->ns < q->ns ? 1 : p->task.tid - q->task.tid;
}

static int by_tid(const void *x, const void *y)
{
	const struct ingero_analysis_thread *p = x, *q = y;

	/* one tid, two tasks (the second took it after the first exited): a fixed order all the same */
	if (p->task.tid != q->task.tid)
		return p->task.tid - q->task.tid;
	if (p->task.pid != q->task.pid)
		return p->task.pid < q->task.pid ? -1 : 1;
	return p->run_ns < q->run_ns ? -1 : p->run_ns > q->run_ns;
}

static int by_code(const void *x, const void *y)
{
	const struct ingero_analysis_error *p = x, *q = y;

	if (p->nested != q->nested)
		return p->nested - q->nested;
	if (p->api != q->api)
		return (int)p->api - (int)q->api;
	return p->code < q->code ? -1 : p->code > q->code;
}

static int by_cpu(const void *x, const void *y)
{
	const struct ingero_analysis_lost *p = x, *q = y;

	return (int)p->cpu - (int)q->cpu;
}

/* Each outer row's main waker: the blame map's waker entries, summed over the classes. */
static int api_wakers(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	struct amap sums;
	struct blame *b;
	uint64_t key, *n;
	size_t pos = 0;
	uint32_t i;

	if (amap_init(&sums, sizeof(uint64_t), 64))
		return -1;
	while ((b = amap_next(&a->blames, &pos, &key)))
		if (key >> 62) {
			n = amap_put(&sums, (key >> 40 & 0x3fffff) << 32 | (key & 0x0fffffff), NULL);
			if (!n)
				break;
			*n += b->ns;
		}
	for (pos = 0; (n = amap_next(&sums, &pos, &key));)
		for (i = 0; i < res->napis; i++) {
			struct ingero_analysis_api *o = &res->apis[i];

			if (o->nested || o->api != key >> 32 || *n < o->waker_ns ||
			    (*n == o->waker_ns && (int32_t)(uint32_t)key > o->waker.tid))
				continue;
			o->waker_ns = *n;
			task_of(a, (int32_t)(uint32_t)key, &o->waker);
		}
	amap_release(&sums);
	return 0;
}

static int build_apis(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	uint32_t i;

	res->apis = calloc(2 * a->opts.napis + 1, sizeof(*res->apis));
	if (!res->apis)
		return -1;
	for (i = 0; i < 2 * a->opts.napis; i++)
		if (a->rows[i])
			fill_api(&res->apis[res->napis++], a->rows[i], a->opts.apis, i / 2, i % 2);
	qsort(res->apis, res->napis, sizeof(*res->apis), by_total);
	return api_wakers(a);
}

/* Adds what an interferer took from the calls of an API to the APIs it hit most. */
static void interferer_api_add(struct ingero_analysis_interferer *f, uint32_t api, uint64_t ns)
{
	uint32_t k, i;

	for (k = 0; k < f->napis && f->apis[k].api != api; k++)
		;
	if (k == f->napis) {
		if (k == 3) {
			/* Full: the new API replaces the least hit if it already beats it. */
			for (k = 0, i = 1; i < 3; i++)
				if (f->apis[i].ns < f->apis[k].ns)
					k = i;
			if (f->apis[k].ns >= ns)
				return;
			f->apis[k].ns = 0;
		} else {
			f->napis++;
		}
		f->apis[k].api = api;
	}
	f->apis[k].ns += ns;
}

/* An interferer's APIs, the most hit first. */
static void interferer_api_rank(struct ingero_analysis_interferer *f)
{
	uint32_t i, j;

	for (i = 0; i + 1 < f->napis; i++) {
		uint32_t best = i;

		for (j = i + 1; j < f->napis; j++)
			if (f->apis[j].ns > f->apis[best].ns)
				best = j;
		if (best != i) {
			typeof(f->apis[0]) tmp = f->apis[i];

			f->apis[i] = f->apis[best];
			f->apis[best] = tmp;
		}
	}
}

/*
 * The APIs each interferer hit most, from the per-class blame of the
 * outermost calls: one pass over the blame, each entry to its task's
 * interferer, rather than a pass for each interferer. -1 on ENOMEM.
 */
static int interferers_apis(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	struct amap place;	/* tid -> uint32_t: the interferer's index in res->interferers */
	struct blame *b;
	size_t pos = 0;
	uint64_t key;
	uint32_t i, *at;

	if (amap_init(&place, sizeof(uint32_t), 64))
		return -1;
	for (i = 0; i < res->ninterferers; i++) {
		if (!(at = amap_put(&place, (uint32_t)res->interferers[i].task.tid, NULL))) {
			amap_release(&place);
			return -1;
		}
		*at = i;
	}
	while ((b = amap_next(&a->blames, &pos, &key)))
		if (!(key >> 62) && b->win_ns && (at = amap_get(&place, key & 0x0fffffff)))
			interferer_api_add(&res->interferers[*at], (uint32_t)(key >> 40) & 0x3fffff, b->win_ns);
	for (i = 0; i < res->ninterferers; i++)
		interferer_api_rank(&res->interferers[i]);
	amap_release(&place);
	return 0;
}

static int build_interferers(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	struct interferer *f;
	size_t pos = 0;
	uint64_t key;

	res->interferers = calloc(a->interferers.n + 1, sizeof(*res->interferers));
	if (!res->interferers)
		return -1;
	while ((f = amap_next(&a->interferers, &pos, &key))) {
		struct ingero_analysis_interferer *o = &res->interferers[res->ninterferers];

		if (!f->ns && !f->in_calls_ns)
			continue;
		task_of(a, (int32_t)key, &o->task);
		o->ns = f->ns;
		o->in_calls_ns = f->in_calls_ns;
		o->preemptions = f->preemptions;
		o->delays = f->delays;
		o->longest_ns = f->longest_ns;
		o->cpus = f->cpus;
		res->ninterferers++;
	}
	if (interferers_apis(a))
		return -1;
	qsort(res->interferers, res->ninterferers, sizeof(*res->interferers), by_taken);
	return 0;
}

static int build_repaired_cpus(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	uint32_t i;

	if (!a->repaired)
		return 0;
	if (!(res->repaired_cpus = calloc(a->ncpus, sizeof(*res->repaired_cpus))))
		return -1;
	for (i = 0; i < a->ncpus; i++)
		if (a->cpus[i] && a->cpus[i]->missed)
			res->repaired_cpus[res->nrepaired_cpus++] = (struct ingero_analysis_cpu_count){ i, a->cpus[i]->missed };
	return 0;
}

static int build_threads(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	struct thread **tp;
	size_t pos = 0;
	uint64_t key;

	res->threads = calloc(a->threads.n + 1, sizeof(*res->threads));
	if (!res->threads)
		return -1;
	while ((tp = amap_next(&a->threads, &pos, &key))) {
		const struct thread *t = *tp;
		struct ingero_analysis_thread *o = &res->threads[res->nthreads];

		if (!t->traced || (a->opts.tid && t->tid != a->opts.tid))
			continue;
		thread_task(t, &o->task);
		o->run_ns = t->run_ns;
		o->voluntary = t->voluntary;
		o->involuntary = t->involuntary;
		o->migrations = t->migrations;
		o->delays = t->delays;
		o->delay_ns = t->delay_ns;
		o->max_delay_ns = t->max_delay_ns;
		o->max_delay_at = t->max_delay_at;
		o->calls = t->calls;
		o->call_ns = t->call_ns;
		memcpy(o->call_split_ns, t->call_split, sizeof(o->call_split_ns));
		res->nthreads++;
	}
	qsort(res->threads, res->nthreads, sizeof(*res->threads), by_tid);
	return 0;
}

static int build_errors(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	uint64_t *n, key;
	size_t pos = 0;

	res->errors = calloc(a->errors.n + 1, sizeof(*res->errors));
	if (!res->errors)
		return -1;
	while ((n = amap_next(&a->errors, &pos, &key)))
		res->errors[res->nerrors++] = (struct ingero_analysis_error){
			.api = (uint32_t)(key >> (CODE_BITS + 1)), .nested = (int)(key >> CODE_BITS) & 1,
			.code = error_code(key), .count = *n,
		};
	qsort(res->errors, res->nerrors, sizeof(*res->errors), by_code);
	return 0;
}

const struct ingero_analysis_result *ingero_analysis_finish(struct ingero_analysis *a)
{
	struct ingero_analysis_result *res = &a->result;
	uint32_t i;

	if (a->finished)
		return res;
	a->finished = 1;
	if (held_flush(a)) {
		error_errno("cannot build the report");
		return NULL;
	}
	threads_close(a);
	mem_finish(a);
	memcpy(res->events, a->events, sizeof(res->events));
	for (i = 0; i < INGERO_NR_STREAMS; i++)
		res->total_events += a->events[i];
	res->start_ns = a->origin;
	res->last_ns = a->last_key;
	res->duration_ns = a->last_key > a->origin ? a->last_key - a->origin : 0;
	res->traced_ns = a->traced_ns;
	res->uncovered_calls = a->uncovered_calls;
	res->unfollowed_calls = a->unfollowed_calls;
	res->repaired = a->repaired;
	res->unknown_api_calls = a->unknown_api_calls;
	if (a->nlost)
		qsort(a->lost, a->nlost, sizeof(*a->lost), by_cpu);
	res->lost = a->lost;
	res->nlost = a->nlost;
	for (i = 0; i < a->nlost; i++)
		res->lost_total += a->lost[i].count;
	res->open = a->open;
	res->nopen = a->nopen;
	res->libs = a->libs;
	res->nlibs = a->nlibs;
	res->memory = a->mem;
	if (build_apis(a) || build_chains(a) || build_interferers(a) || build_threads(a) || build_errors(a) ||
	    build_repaired_cpus(a) ||
	    !a->mem.unfreed || !a->mem.apis || !a->mem.timeline) {
		error_errno("cannot build the report");
		return NULL;
	}
	return res;
}
