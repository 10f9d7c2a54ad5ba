/*
 * The recorder: the ring buffers' pages are read in bulk, walked with
 * kbuffer in place and merged across CPUs up to a watermark, so that each
 * thread's entry is handled before its return wherever the thread ran.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <tracefs.h>
#include <event-parse.h>
#include <kbuffer.h>
#include "error.h"
#include "libfind.h"
#include "record.h"
#include "session.h"
#include "trace.h"
#include "../probes/probes.h"

#define PAGES_PER_CPU 1024
/* Events younger than this may still be committing on another CPU: they wait a round. */
#define WATERMARK_SLACK_NS 2000000ULL
#define MAX_DEPTH 16
#define MAX_WINDOW_WORDS 256
#define MAX_HEAP_REGS 8
#define MAX_HEAP_WORDS 8
#define DROPPED_CHECK_NS 1000000000ULL
/* The thread table's first size, a power of two: most commands have a few threads, and it doubles as more appear. */
#define THREADS_FIRST 16

enum handler_kind {
	H_NONE,
	H_ENTRY,
	H_RETURN,
	H_SWITCH,
	H_WAKING,
	H_FORK,
	H_EXEC,
	H_EXIT,
	H_RENAME,
	H_NEWTASK,
	H_MARK,
	H_LOADER,
};

struct field {
	int offset, size;
	unsigned flags;		/* TEP_FIELD_IS_*: a dynamic string's text is elsewhere in the record */
};

/* What to do with the events of one id, with its fields' places found once. */
struct handler {
	enum handler_kind kind;
	uint32_t api;
	struct field f[INGERO_MAX_ARGS + 4];	/* F_API: absent (-1) where the event is the API's own */
	uint16_t window[MAX_WINDOW_WORDS];	/* offsets of the stack window's words */
	unsigned nwindow;
	struct field heap_reg[MAX_HEAP_REGS];	/* callee-saved registers at the return */
	uint16_t heap[MAX_HEAP_REGS][MAX_HEAP_WORDS];	/* offsets of the words they point to */
	unsigned nheap_regs, nheap_words;
};

/* Field slots of struct handler.f, by event kind. */
enum { F_ARG0 = 0, F_SP = INGERO_MAX_ARGS, F_RET, F_API };
enum { SW_PREV_COMM, SW_PREV_PID, SW_PREV_PRIO, SW_PREV_STATE, SW_NEXT_COMM, SW_NEXT_PID, SW_NEXT_PRIO };
enum { WK_COMM, WK_PID, WK_PRIO, WK_TARGET };
enum { FK_PARENT, FK_CHILD, FK_CHILD_COMM };
enum { EX_PID, EX_OLD_PID, EX_FILENAME };
enum { XT_COMM, XT_PID };
enum { RN_PID, RN_NEWCOMM };
enum { NT_PID, NT_CLONE_FLAGS };

struct frame {
	uint64_t id, ts;
	uint64_t args[INGERO_MAX_ARGS];
	uint32_t api, cpu;
};

struct thread {
	int32_t tid;		/* 0: a free slot */
	uint32_t pid;
	/* -a: in the scheduler's pid filter; seen calling CUDA while not, so to be added */
	uint8_t followed, to_follow;
	unsigned depth;
	struct frame stack[MAX_DEPTH];
};

struct cpu_reader {
	struct tracefs_cpu *tcpu;
	struct kbuffer *kbuf;
	int buf, cpu;		/* the session's set of buffers, and the CPU */
	char *pages;
	unsigned head, tail;	/* pages [tail, head) are unread, modulo PAGES_PER_CPU */
	void *rec;		/* the record under the cursor, in the page at tail */
	unsigned long long rec_ts;
	/* every event of the CPU up to this time is handled: where a stretch of lost ones can begin */
	uint64_t seen;
	int drained;		/* the last read found no more pages */
	uint64_t dropped;	/* the kernel's count at the last check */
};

/* What the per-event path needs of an API, worked out once. */
struct api_fetch {
	uint64_t arg_mask[INGERO_MAX_ARGS];	/* the bits of each argument that are its own */
	int out;			/* the out-pointer argument, -1 for none */
};

struct probed_file {
	dev_t dev;
	ino_t ino;
};

struct pid_list {
	pid_t *pids;
	size_t n, cap;
};

struct ingero_recorder {
	struct ingero_session *s;
	struct ingero_writer *w;
	const struct ingero_api *apis;
	size_t napis;
	const uint8_t *api_enabled;
	pthread_mutex_t lock;

	struct handler **handlers;	/* by event id */
	size_t nhandlers;
	unsigned state_map[32];		/* prev_state bit -> enum ingero_task_state */
	uint32_t preempt_bit;

	struct cpu_reader *readers;	/* each CPU's of each set of buffers */
	int nreaders;
	size_t page_size;
	uint64_t last_dropped_check;

	struct thread *threads;
	size_t threads_cap, nthreads;
	int follow;			/* -a: threads that call CUDA join the scheduler's pid filter */
	size_t to_follow;
	struct pid_list procs;		/* -a: the processes followed, in the order they joined */
	uint64_t next_call_id;
	uint64_t last_ts;

	/*
	 * Lost stretches wait here, by start, until no later one can begin
	 * before them: the trace's streams are each in order.
	 */
	struct ingero_lost_note {
		uint64_t from, to, count;
		int cpu;
	} *lost;
	size_t nlost, lost_cap;
	/* -a: when processes joined the filter, said in the task stream where their time comes */
	struct ingero_follow_note {
		uint64_t ts;
		pid_t pid;
	} *follows;
	size_t nfollows, follows_cap;

	struct probed_file *files;
	size_t nfiles;
	struct probed_file *loaders;	/* the dynamic loaders whose hook is probed */
	size_t nloaders;
	pid_t loads[INGERO_RECORD_LOADS];	/* seen in their loader's hook since the last look, each once */
	size_t nloads;
	int loads_missed;		/* more tasks loaded than loads holds */
	uint32_t next_lib_id;
	uint64_t *offsets;		/* scratch for ingero_lib_resolve() */
	struct api_fetch *fetch;	/* by API */
	struct ingero_record_stats st;
};

/* Setup: handlers and their fields. */

static struct handler *handler_for(struct ingero_recorder *r, int id, enum handler_kind kind)
{
	struct handler *h;

	if (id < 0 || id > 1 << 20)
		return NULL;
	if ((size_t)id >= r->nhandlers) {
		size_t n = id + 64;
		struct handler **p = realloc(r->handlers, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + r->nhandlers, 0, (n - r->nhandlers) * sizeof(*p));
		r->handlers = p;
		r->nhandlers = n;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->kind = kind;
	free(r->handlers[id]);
	r->handlers[id] = h;
	return h;
}

static int find_fields(struct tep_event *ev, struct field *f, const char *const *names)
{
	int i;

	for (i = 0; names[i]; i++) {
		struct tep_format_field *tf = tep_find_field(ev, names[i]);

		if (!tf)
			return -1;
		f[i].offset = tf->offset;
		f[i].size = tf->size;
		f[i].flags = tf->flags;
	}
	return 0;
}

static int optional_field(struct tep_event *ev, struct field *f, const char *name)
{
	struct tep_format_field *tf = tep_find_field(ev, name);

	f->offset = tf ? tf->offset : -1;
	f->size = tf ? tf->size : 0;
	f->flags = tf ? tf->flags : 0;
	return tf ? 0 : -1;
}

/* The state letters of the kernel's __print_flags table, to the normalised bits. */
static unsigned state_letter(const char *s)
{
	static const char letters[] = "SDTtXZPI";
	const char *p = s[0] && !s[1] ? strchr(letters, s[0]) : NULL;

	return p ? 1u << (p - letters) : 0;
}

static struct tep_print_arg *find_flags(struct tep_print_arg *a)
{
	struct tep_print_arg *found = NULL;

	for (; a && !found; a = a->next) {
		if (a->type == TEP_PRINT_FLAGS)
			return a;
		if (a->type == TEP_PRINT_OP)
			found = find_flags(a->op.left) ? find_flags(a->op.left) : find_flags(a->op.right);
	}
	return found;
}

/*
 * prev_state's bits differ between kernel versions: read them from the
 * format's __print_flags table. The preemption mark is the bit above the
 * table's highest (TASK_REPORT_MAX on current kernels, TASK_STATE_MAX on 4.x).
 */
static int read_state_bits(struct ingero_recorder *r, struct tep_event *ev)
{
	struct tep_print_arg *flags = find_flags(ev->print_fmt.args);
	struct tep_print_flag_sym *sym;
	unsigned long highest = 0;

	if (!flags)
		return error("sched_switch: no state table in its format");
	for (sym = flags->flags.flags; sym; sym = sym->next) {
		unsigned long v = strtoul(sym->value, NULL, 0);
		int bit = v ? __builtin_ctzl(v) : -1;

		if (bit >= 0 && bit < 32)
			r->state_map[bit] = state_letter(sym->str);
		if (v > highest)
			highest = v;
	}
	if (!highest || highest >= 1ul << 31)
		return error("sched_switch: unexpected state table");
	r->preempt_bit = highest << 1;
	return 0;
}

static int enable_sched(struct ingero_recorder *r)
{
	static const char *const sw[] = { "prev_comm", "prev_pid", "prev_prio", "prev_state",
					  "next_comm", "next_pid", "next_prio", NULL };
	static const char *const wk[] = { "comm", "pid", "prio", "target_cpu", NULL };
	static const char *const fk[] = { "parent_pid", "child_pid", "child_comm", NULL };
	static const char *const ex[] = { "pid", "old_pid", "filename", NULL };
	static const char *const xt[] = { "comm", "pid", NULL };
	static const char *const rn[] = { "pid", "newcomm", NULL };
	static const char *const nt[] = { "pid", "clone_flags", NULL };
	static const char *const mk[] = { "buf", NULL };
	static const struct {
		const char *system, *event;
		enum handler_kind kind;
		const char *const *fields;
		int required;
	} events[] = {
		{ "sched", "sched_switch", H_SWITCH, sw, 1 },
		{ "sched", "sched_waking", H_WAKING, wk, 1 },
		{ "sched", "sched_process_fork", H_FORK, fk, 1 },
		{ "sched", "sched_process_exec", H_EXEC, ex, 0 },
		{ "sched", "sched_process_exit", H_EXIT, xt, 1 },
		{ "task", "task_rename", H_RENAME, rn, 0 },
		/* whether a new task is a thread, and so whose process it is in, when it may be gone from /proc on reading */
		{ "task", "task_newtask", H_NEWTASK, nt, 0 },
		/* what is written to the instance's trace_marker, always there: ingero's marks measure the trace clock */
		{ "ftrace", "print", H_MARK, mk, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct tep_event *ev = ingero_session_event(r->s, events[i].system, events[i].event);
		struct handler *h;

		if (!ev && errno != ENOENT)
			return error_errno("cannot read the format of '%s:%s'", events[i].system, events[i].event);
		if (!ev) {
			if (events[i].required)
				return error("this kernel has no event '%s:%s'", events[i].system, events[i].event);
			warning("this kernel has no event '%s:%s'; recording without it",
				events[i].system, events[i].event);
			continue;
		}
		h = handler_for(r, ev->id, events[i].kind);
		if (!h || find_fields(ev, h->f, events[i].fields))
			return error("%s:%s: unexpected format", events[i].system, events[i].event);
		if (events[i].kind == H_SWITCH && read_state_bits(r, ev))
			return -1;
		if (events[i].kind != H_MARK && !ingero_session_enable(r->s, events[i].system, events[i].event))
			return -1;
	}
	return 0;
}

static int open_cpus(struct ingero_recorder *r)
{
	int i, ncpus = r->s->ncpus;

	r->nreaders = ingero_session_buffers(r->s) * ncpus;
	r->readers = calloc(r->nreaders, sizeof(*r->readers));
	if (!r->readers)
		return -1;
	for (i = 0; i < r->nreaders; i++) {
		struct cpu_reader *c = &r->readers[i];

		c->buf = i / ncpus;
		c->cpu = i % ncpus;
		c->tcpu = ingero_session_open_cpu(r->s, c->buf, c->cpu);
		if (!c->tcpu && errno == ENOENT)
			continue;	/* a CPU the kernel has no buffer for */
		if (!c->tcpu)
			return error_errno("cannot open the ring buffer of CPU %d", c->cpu);
		if (!r->page_size)
			r->page_size = tracefs_cpu_read_size(c->tcpu);
		c->kbuf = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
					KBUFFER_ENDIAN_LITTLE);
		c->pages = malloc((size_t)PAGES_PER_CPU * r->page_size);
		if (!c->kbuf || !c->pages)
			return error("out of memory for the ring-buffer pages of CPU %d", c->cpu);
	}
	if (!r->page_size)
		return error("cannot open the ring buffers of the instance");
	return 0;
}

static void fetch_init(struct api_fetch *f, const struct ingero_api *api)
{
	size_t j;

	for (j = 0; j < INGERO_MAX_ARGS; j++) {
		unsigned bits = j < api->nargs ? ingero_probe_arg_bits(&api->args[j]) : 64;

		f->arg_mask[j] = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	}
	f->out = ingero_api_arg(api, INGERO_ARG_OUT_DEVPTR);
}

struct ingero_recorder *ingero_recorder_new(struct ingero_session *s, struct ingero_writer *w,
					    const struct ingero_api *apis, size_t napis,
					    const uint8_t *api_enabled)
{
	struct ingero_recorder *r = calloc(1, sizeof(*r));
	size_t i;

	if (!r)
		return NULL;
	r->s = s;
	r->w = w;
	r->apis = apis;
	r->napis = napis;
	r->api_enabled = api_enabled;
	r->follow = s->sched != NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->threads_cap = THREADS_FIRST;
	r->threads = calloc(r->threads_cap, sizeof(*r->threads));
	r->offsets = calloc(napis, sizeof(*r->offsets));
	r->fetch = calloc(napis, sizeof(*r->fetch));
	if (!r->threads || !r->offsets || !r->fetch || enable_sched(r) || open_cpus(r)) {
		ingero_recorder_free(r);
		return NULL;
	}
	for (i = 0; i < napis; i++)
		fetch_init(&r->fetch[i], &apis[i]);
	return r;
}

/* Probing libraries. */

static int file_listed(const struct probed_file *files, size_t n, const struct stat *st)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (files[i].dev == st->st_dev && files[i].ino == st->st_ino)
			return 1;
	return 0;
}

/* 1 if the file at path was not listed yet (now it is), 0 if it was, -1 on failure (said). */
static int list_new_file(struct probed_file **files, size_t *n, const char *path)
{
	struct probed_file *p;
	struct stat st;

	if (stat(path, &st))
		return error_errno("cannot probe '%s'", path);
	if (file_listed(*files, *n, &st))
		return 0;
	if (!(p = realloc(*files, (*n + 1) * sizeof(*p))))
		return error_errno("cannot remember '%s'", path);
	*files = p;
	p[*n].dev = st.st_dev;
	p[*n].ino = st.st_ino;
	(*n)++;
	return 1;
}

static int setup_heap_window(struct handler *h, struct tep_event *ev, int use_arrays)
{
	unsigned regs, words, per, i, w;

	ingero_probe_heap_window(use_arrays, &regs, &words, &per);
	if (regs > MAX_HEAP_REGS || words > MAX_HEAP_WORDS)
		return error("heap window of %u registers and %u words is too large", regs, words);
	for (i = 0; i < regs; i++) {
		char name[24];

		snprintf(name, sizeof(name), "c%u", i);
		if (optional_field(ev, &h->heap_reg[i], name))
			return error("return probe '%s' lacks '%s'", ev->name, name);
		for (w = 0; w < words; w++) {
			struct tep_format_field *tf;

			if (per > 1)
				snprintf(name, sizeof(name), "h%u", i);
			else
				snprintf(name, sizeof(name), "h%u_%u", i, w);
			tf = tep_find_field(ev, name);
			if (!tf)
				return error("return probe '%s' lacks '%s'", ev->name, name);
			h->heap[i][w] = tf->offset + (per > 1 ? w * 8 : 0);
		}
	}
	h->nheap_regs = regs;
	h->nheap_words = words;
	return 0;
}

/* The handler of a call event: one API's own, or (grouped) many, naming theirs in the field "api". */
static int setup_call_handler(struct ingero_recorder *r, struct tep_event *ev, uint32_t api,
			      int is_return, int has_out)
{
	static const char *const arg_names[INGERO_MAX_ARGS] = { "a0", "a1", "a2", "a3", "a4", "a5" };
	struct handler *h = handler_for(r, ev->id, is_return ? H_RETURN : H_ENTRY);
	unsigned words, per, i;

	if (!h)
		return -1;
	h->api = api;
	for (i = 0; i < INGERO_MAX_ARGS; i++)
		optional_field(ev, &h->f[F_ARG0 + i], arg_names[i]);
	optional_field(ev, &h->f[F_SP], "sp");
	optional_field(ev, &h->f[F_RET], "ret");
	optional_field(ev, &h->f[F_API], "api");
	if (!is_return || !has_out)
		return 0;
	ingero_probe_window(r->s->use_arrays, &words, &per);
	if (words > MAX_WINDOW_WORDS || !per)
		return error("stack window of %u words is too large", words);
	for (i = 0; i < words; i++) {
		char name[16];
		struct tep_format_field *tf;

		snprintf(name, sizeof(name), "w%u", i / per);
		tf = tep_find_field(ev, name);
		if (!tf)
			return error("return probe '%s' lacks its stack window '%s'", ev->name, name);
		h->window[i] = tf->offset + (i % per) * 8;
	}
	h->nwindow = words;
	return setup_heap_window(h, ev, r->s->use_arrays);
}

static int has_out(const struct ingero_recorder *r, size_t api)
{
	return r->fetch[api].out >= 0;
}

/* One event per probe (kernels without grouped probes): slow to remove, but the 4.x way. */
static int add_own_probe(struct ingero_recorder *r, uint32_t api, uint32_t lib_id,
			 const char *path, uint64_t offset, int is_return)
{
	char name[80], fetch[4096];
	struct tep_event *ev;

	snprintf(name, sizeof(name), "%s_%u%s", r->apis[api].name, lib_id, is_return ? "_ret" : "");
	if (ingero_probe_fetchargs(&r->apis[api], is_return, r->s->use_arrays, fetch, sizeof(fetch)))
		return error("fetch arguments of '%s' do not fit", r->apis[api].name);
	if (ingero_session_add_uprobe(r->s, name, path, offset, fetch, is_return))
		return -1;
	ev = ingero_session_enable_uprobe(r->s, name);
	return ev ? setup_call_handler(r, ev, api, is_return, has_out(r, api)) : -1;
}

/*
 * The three events a library's probes share: entries, returns, and returns
 * of the APIs that hand out a pointer (with the stack window).
 */
enum lib_event { LIB_ENTRY, LIB_RETURN, LIB_RETURN_OUT };

static int wants(const struct ingero_recorder *r, size_t api, enum lib_event which)
{
	if (!r->api_enabled[api] || !r->offsets[api])
		return 0;
	if (which == LIB_ENTRY)
		return 1;
	return !ingero_api_entry_only(&r->apis[api]) && (which == LIB_RETURN_OUT) == has_out(r, api);
}

static int add_lib_event(struct ingero_recorder *r, uint32_t lib_id, const char *path,
			 enum lib_event which)
{
	static const char *const prefix[] = { "entry", "return", "return_out" };
	char name[64], fetch[4096];
	struct tep_event *ev;
	size_t i, n = 0;

	snprintf(name, sizeof(name), "%s_%u", prefix[which], lib_id);
	for (i = 0; i < r->napis; i++) {
		if (!wants(r, i, which))
			continue;
		if (ingero_probe_fetchargs_grouped(&r->apis[i], i, which != LIB_ENTRY, r->s->use_arrays,
						   fetch, sizeof(fetch)))
			return error("fetch arguments of '%s' do not fit", r->apis[i].name);
		if (ingero_session_add_uprobe(r->s, name, path, r->offsets[i], fetch, which != LIB_ENTRY))
			return -1;
		n++;
	}
	if (!n)
		return 0;
	ev = ingero_session_enable_uprobe(r->s, name);
	return ev ? setup_call_handler(r, ev, 0, which != LIB_ENTRY, which == LIB_RETURN_OUT) : -1;
}

static int add_probes(struct ingero_recorder *r, uint32_t lib_id, const char *path)
{
	size_t i;

	if (r->s->grouped)
		return add_lib_event(r, lib_id, path, LIB_ENTRY) ||
		       add_lib_event(r, lib_id, path, LIB_RETURN) ||
		       add_lib_event(r, lib_id, path, LIB_RETURN_OUT) ? -1 : 0;
	for (i = 0; i < r->napis; i++)
		if (wants(r, i, LIB_ENTRY) &&
		    (add_own_probe(r, i, lib_id, path, r->offsets[i], 0) ||
		     (!ingero_api_entry_only(&r->apis[i]) && add_own_probe(r, i, lib_id, path, r->offsets[i], 1))))
			return -1;
	return 0;
}

/* Names the wanted APIs of the library's kinds that it lacks, in one warning. */
static uint32_t warn_missing(struct ingero_recorder *r, const char *path)
{
	char list[512];
	size_t i, len = 0;
	uint32_t missing = 0;
	int has_rt = 0, has_drv = 0;

	for (i = 0; i < r->napis; i++)
		if (r->offsets[i]) {
			has_rt |= !strcmp(r->apis[i].lib, "cudart");
			has_drv |= !strcmp(r->apis[i].lib, "cuda");
		}
	list[0] = 0;
	for (i = 0; i < r->napis; i++) {
		int kind = !strcmp(r->apis[i].lib, "cudart") ? has_rt : has_drv;

		if (!r->api_enabled[i] || r->offsets[i] || !kind)
			continue;
		if (missing++ < 8 && len < sizeof(list) - 64)
			len += snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "", r->apis[i].name);
	}
	if (missing)
		warning("%s lacks %u wanted symbol(s): %s%s", path, missing, list, missing > 8 ? ", ..." : "");
	return missing;
}

/* Hands an event to the trace's writer, counting it. */
static int emit(struct ingero_recorder *r, struct ingero_event *ev)
{
	r->st.events++;
	return ingero_writer_add(r->w, ev);
}

static int write_lib(struct ingero_recorder *r, const char *path, const char *build_id,
		     pid_t pid, uint32_t id, uint32_t probes, uint32_t missing)
{
	struct ingero_event ev = { .stream = INGERO_STREAM_LIB, .ts = ingero_session_clock(r->s) };

	if (ev.ts < r->last_ts)
		ev.ts = r->last_ts;
	ev.lib.id = id;
	ev.lib.pid = pid;
	ev.lib.probes = probes;
	ev.lib.missing = missing;
	ev.lib.path = path;
	ev.lib.build_id = build_id;
	r->st.libs++;
	return emit(r, &ev);
}

static int probe_lib_locked(struct ingero_recorder *r, const char *path, pid_t pid)
{
	char build_id[128];
	uint32_t lib_id, probes = 0;
	int found;
	size_t i;

	if ((found = list_new_file(&r->files, &r->nfiles, path)) <= 0)
		return found;
	found = ingero_lib_resolve(path, r->apis, r->napis, r->offsets, build_id, sizeof(build_id));
	if (found <= 0)
		return found;
	lib_id = r->next_lib_id++;
	if (add_probes(r, lib_id, path))
		return -1;
	for (i = 0; i < r->napis; i++)
		probes += wants(r, i, LIB_ENTRY);
	if (write_lib(r, path, build_id, pid, lib_id, probes, warn_missing(r, path)))
		return -1;
	return probes;
}

int ingero_recorder_probe_lib(struct ingero_recorder *r, const char *path, pid_t pid)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = probe_lib_locked(r, path, pid);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* The hook the dynamic loader calls before and after each change to the objects it has loaded. */
static const struct ingero_api loader_hook = { "_dl_debug_state", "ld.so", "loader", "void", INGERO_ROLE_OTHER, 0, { { 0 } } };

static int watch_loader_locked(struct ingero_recorder *r, const char *path)
{
	char name[32], build_id[128];
	uint64_t offset;
	struct tep_event *ev;
	int fresh = list_new_file(&r->loaders, &r->nloaders, path);

	if (fresh <= 0)
		return fresh;
	if (ingero_lib_resolve(path, &loader_hook, 1, &offset, build_id, sizeof(build_id)) <= 0)
		return 0;
	snprintf(name, sizeof(name), "loader_%zu", r->nloaders);
	if (ingero_session_add_uprobe(r->s, name, path, offset, "", 0) ||
	    !(ev = ingero_session_enable_uprobe(r->s, name)) || !handler_for(r, ev->id, H_LOADER))
		return -1;
	return 1;
}

int ingero_recorder_watch_loader(struct ingero_recorder *r, const char *path)
{
	int ret;

	pthread_mutex_lock(&r->lock);
	ret = watch_loader_locked(r, path);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

size_t ingero_recorder_loads(struct ingero_recorder *r, pid_t *tids, size_t max, int *missed)
{
	size_t n = r->nloads < max ? r->nloads : max;

	memcpy(tids, r->loads, n * sizeof(*tids));
	*missed = r->loads_missed || n < r->nloads;
	r->nloads = 0;
	r->loads_missed = 0;
	return n;
}

/* Threads: an open-addressed table by tid; it grows only when a new thread appears. */

static size_t tid_slot(const struct ingero_recorder *r, int32_t tid)
{
	size_t mask = r->threads_cap - 1, i = ((uint32_t)tid * 2654435761u) & mask;

	while (r->threads[i].tid && r->threads[i].tid != tid)
		i = (i + 1) & mask;
	return i;
}

/* A task's process, for one that existed before its fork could be seen; in a container, /proc has other pids. */
pid_t ingero_process_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = tid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (!(f = fopen(path, "r")))
		return tid;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = (pid_t)strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid > 0 ? tgid : tid;
}

/* A task's process; in a PID namespace of ingero's own, /proc's pids are not the kernel's. */
static uint32_t read_tgid(const struct ingero_recorder *r, int32_t tid)
{
	return r->s->child_ns ? (uint32_t)tid : (uint32_t)ingero_process_of(tid);
}

static int grow_threads(struct ingero_recorder *r)
{
	struct thread *old = r->threads;
	size_t i, old_cap = r->threads_cap;

	r->threads = calloc(old_cap * 2, sizeof(*r->threads));
	if (!r->threads) {
		r->threads = old;
		return -1;
	}
	r->threads_cap = old_cap * 2;
	for (i = 0; i < old_cap; i++)
		if (old[i].tid)
			r->threads[tid_slot(r, old[i].tid)] = old[i];
	free(old);
	return 0;
}

static struct thread *thread_get(struct ingero_recorder *r, int32_t tid, uint32_t pid)
{
	size_t i = tid_slot(r, tid);
	struct thread *t;

	if (r->threads[i].tid)
		return &r->threads[i];
	if (2 * (r->nthreads + 1) > r->threads_cap) {
		if (grow_threads(r))
			return NULL;
		i = tid_slot(r, tid);
	}
	t = &r->threads[i];
	t->tid = tid;
	t->pid = pid ? pid : read_tgid(r, tid);
	t->followed = t->to_follow = 0;
	t->depth = 0;
	r->nthreads++;
	return t;
}

/*
 * The array of n items of size bytes at items, with room for one more: as
 * it is, or doubled from 64 when full (*cap then grows). NULL when out of
 * memory, the caller's array kept.
 */
static void *room_for_one(void *items, size_t n, size_t *cap, size_t size)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *p;

	if (n < *cap)
		return items;
	if ((p = realloc(items, c * size)))
		*cap = c;
	return p;
}

/* Drops the first k of the n items at items; returns how many are left. */
static size_t drop_first(void *items, size_t n, size_t k, size_t size)
{
	if (k)
		memmove(items, (char *)items + k * size, (n - k) * size);
	return n - k;
}

/*
 * -a: the scheduler's pid filter follows the processes that call CUDA.
 * Each joins it whole, with the tasks /proc lists; what those start later,
 * the filter's fork-following adds.
 */

static int pid_list_add(struct pid_list *l, pid_t pid)
{
	pid_t *p = room_for_one(l->pids, l->n, &l->cap, sizeof(*p));

	if (!p)
		return -1;
	l->pids = p;
	l->pids[l->n++] = pid;
	return 0;
}

/* Adds to l the tasks of process pid that are not followed yet; 0 when the process has ended. */
static int list_new_tasks(struct ingero_recorder *r, pid_t pid, struct pid_list *l)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
		struct thread *t = tid > 0 ? thread_get(r, tid, pid) : NULL;

		if (t && !t->followed && !pid_list_add(l, tid))
			t->followed = 1;
	}
	closedir(d);
	return 1;
}

/* Adds process pid's tasks to l, unless its main thread is followed already. */
static void list_process(struct ingero_recorder *r, pid_t pid, struct pid_list *l)
{
	struct thread *main_thread = thread_get(r, pid, pid);

	if ((!main_thread || !main_thread->followed) && list_new_tasks(r, pid, l))
		pid_list_add(&r->procs, pid);
}

/* Notes that process pid's scheduling is recorded from now on (pid 0: that only those so noted are). */
static void note_follow(struct ingero_recorder *r, pid_t pid)
{
	struct ingero_follow_note *p = room_for_one(r->follows, r->nfollows, &r->follows_cap, sizeof(*p));

	if (!p) {
		error("out of memory for the start of process %d's scheduling", (int)pid);
		return;
	}
	r->follows = p;
	r->follows[r->nfollows++] = (struct ingero_follow_note){ ingero_session_clock(r->s), pid };
}

/* Writes the follow notes up to ts, in the order they were made. */
static void emit_follows(struct ingero_recorder *r, uint64_t ts)
{
	size_t i;

	for (i = 0; i < r->nfollows && r->follows[i].ts <= ts; i++) {
		struct ingero_event ev = { .stream = INGERO_STREAM_TASK, .ts = r->follows[i].ts };

		ev.task.kind = INGERO_TASK_FOLLOW;
		ev.task.pid = ev.task.tid = (uint32_t)r->follows[i].pid;
		emit(r, &ev);
	}
	r->nfollows = drop_first(r->follows, r->nfollows, i, sizeof(*r->follows));
}

/*
 * Adds the tids in all to the filter, then the tasks that the processes from
 * procs.pids[first] on started meanwhile, until none is missing (the kernel
 * follows into its children only a task that is in the filter already), and
 * notes that those processes joined it.
 */
static int follow_tasks(struct ingero_recorder *r, struct pid_list *all, size_t first)
{
	size_t i, round;

	for (round = 0; all->n && round < 1000; round++) {
		if (ingero_session_follow(r->s, all->pids, all->n))
			return -1;
		all->n = 0;
		for (i = first; i < r->procs.n; i++)
			list_new_tasks(r, r->procs.pids[i], all);
	}
	for (; first < r->procs.n; first++)
		note_follow(r, r->procs.pids[first]);
	return 0;
}

/* Adds the threads seen calling CUDA outside the filter, with their processes, in one write. */
static void follow_callers(struct ingero_recorder *r)
{
	struct pid_list callers = { 0 }, all = { 0 };
	struct thread *t;
	size_t i, first = r->procs.n;

	for (i = 0; i < r->threads_cap; i++)
		if (r->threads[i].tid && r->threads[i].to_follow) {
			r->threads[i].to_follow = 0;
			pid_list_add(&callers, r->threads[i].tid);
		}
	r->to_follow = 0;
	/* found by tid each time: the table may grow as the processes' tasks join it */
	for (i = 0; i < callers.n; i++) {
		if ((t = thread_get(r, callers.pids[i], 0)) && !t->followed)
			list_process(r, t->pid, &all);
		if ((t = thread_get(r, callers.pids[i], 0)) && !t->followed && !pid_list_add(&all, t->tid))
			t->followed = 1;
	}
	if (follow_tasks(r, &all, first))
		warning("the scheduler's events of %zu task(s) that call CUDA are not recorded", all.n);
	free(callers.pids);
	free(all.pids);
}

void ingero_recorder_know_process(struct ingero_recorder *r, pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return;
	pthread_mutex_lock(&r->lock);
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
		struct thread *t = tid > 0 ? thread_get(r, tid, pid) : NULL;

		if (t)
			t->pid = pid;
	}
	pthread_mutex_unlock(&r->lock);
	closedir(d);
}

/* Whether a line of /proc/PID/maps maps a file that ingero probes. */
static int maps_probed(const struct ingero_recorder *r, const char *line)
{
	unsigned major, minor;
	unsigned long ino;
	size_t i;

	if (sscanf(line, "%*s %*s %*s %x:%x %lu", &major, &minor, &ino) != 3 || !ino)
		return 0;
	for (i = 0; i < r->nfiles; i++)
		if (r->files[i].ino == ino && r->files[i].dev == makedev(major, minor))
			return 1;
	return 0;
}

size_t ingero_recorder_processes(struct ingero_recorder *r, pid_t *pids, size_t from, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&r->lock);
	for (; from + n < r->procs.n && n < max; n++)
		pids[n] = r->procs.pids[from + n];
	pthread_mutex_unlock(&r->lock);
	return n;
}

int ingero_recorder_follow_mapped(struct ingero_recorder *r)
{
	struct pid_list all = { 0 };
	struct dirent *e;
	char path[300], line[4096];
	DIR *d = opendir("/proc");
	int ret;

	if (!d)
		return error_errno("cannot read /proc");
	pthread_mutex_lock(&r->lock);
	note_follow(r, 0);
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (maps_probed(r, line)) {
				list_process(r, pid, &all);
				break;
			}
		fclose(f);
	}
	closedir(d);
	ret = follow_tasks(r, &all, 0);
	pthread_mutex_unlock(&r->lock);
	free(all.pids);
	return ret;
}

/* Per-event path. */

static uint64_t read_field(const void *data, const struct field *f)
{
	const unsigned char *p = (const unsigned char *)data + f->offset;

	switch (f->size) {
	case 1: return *(const uint8_t *)p;
	case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
	default: return 0;
	}
}

static int64_t read_signed(const void *data, const struct field *f)
{
	uint64_t v = read_field(data, f);

	return f->size == 4 ? (int32_t)v : (int64_t)v;
}

static int common_pid(const void *data)
{
	int32_t pid;

	memcpy(&pid, (const char *)data + 4, 4);
	return pid;
}

/*
 * A string field's text: in its place (char[16]), or for a dynamic one
 * (__data_loc, and __rel_loc since 5.18), where its descriptor points.
 * Kernels differ: sched_process_fork's comms became dynamic in 6.x.
 */
static const char *field_str(const void *data, const struct field *f)
{
	uint32_t loc;

	if (!(f->flags & TEP_FIELD_IS_DYNAMIC))
		return (const char *)data + f->offset;
	loc = read_field(data, f);
	return (const char *)data + (loc & 0xffff) + (f->flags & TEP_FIELD_IS_RELATIVE ? f->offset + f->size : 0);
}

/* The comm an exec gives: the file name's last part, as the kernel sets it, cut to 15 bytes. */
static const char *exec_name(const void *data, const struct field *f, char *comm)
{
	const char *name = field_str(data, f);
	unsigned len = read_field(data, f) >> 16, i, start = 0, n = 0;

	for (i = 0; i < len && name[i]; i++)
		if (name[i] == '/')
			start = i + 1;
	for (i = start; i < len && name[i] && n < INGERO_COMM_LEN - 1; i++)
		comm[n++] = name[i];
	comm[n] = 0;
	return comm;
}

static uint32_t call_api(const struct ingero_recorder *r, const struct handler *h, const void *data)
{
	return h->f[F_API].offset >= 0 ? (uint32_t)read_field(data, &h->f[F_API]) : h->api;
}

/*
 * What the call stored through its out-pointer: from the stack window read
 * at return when the pointer is a stack slot of the caller's, or from the
 * words a callee-saved register points to when it is in the caller's heap
 * memory; else read from the process now (correct unless it changed the
 * slot meanwhile, and impossible once the process is gone). out: the
 * out-pointer's argument, -1 for an API without one.
 */
static uint64_t out_value(const struct handler *h, const void *data, const struct frame *fr,
			  int out, uint32_t pid)
{
	uint64_t addr, sp, off, v = 0;
	struct iovec local, remote;
	unsigned i;

	if (out < 0)
		return 0;
	addr = fr->args[out];
	sp = h->f[F_SP].offset >= 0 ? read_field(data, &h->f[F_SP]) : 0;
	off = addr - sp;
	if (sp && off < (uint64_t)h->nwindow * 8 && !(off & 7)) {
		memcpy(&v, (const char *)data + h->window[off / 8], 8);
		return v;
	}
	for (i = 0; i < h->nheap_regs; i++) {
		off = addr - read_field(data, &h->heap_reg[i]);
		if (off < (uint64_t)h->nheap_words * 8 && !(off & 7)) {
			memcpy(&v, (const char *)data + h->heap[i][off / 8], 8);
			return v;
		}
	}
	if (!pid)
		return 0;	/* a process ingero cannot name in its PID namespace */
	local.iov_base = &v;
	local.iov_len = sizeof(v);
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = sizeof(v);
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(v) ? v : 0;
}

/* The row of the call in frame d of thread t, ending at end_ns. */
static void frame_call(struct ingero_event *ev, uint32_t stream, const struct thread *t,
		       unsigned d, uint64_t end_ns)
{
	const struct frame *fr = &t->stack[d];

	ev->stream = stream;
	ev->ts = fr->ts;
	ev->call.end_ns = end_ns;
	ev->call.id = fr->id;
	ev->call.parent = d ? t->stack[d - 1].id : 0;
	ev->call.pid = t->pid;
	ev->call.tid = t->tid;
	ev->call.cpu = fr->cpu;
	ev->call.api = fr->api;
	memcpy(ev->call.args, fr->args, sizeof(ev->call.args));
}

/* Writes the call of frame d, which returned at end_ns, and pops it with the frames above it. */
static void end_call(struct ingero_recorder *r, struct thread *t, unsigned d, uint64_t end_ns,
		     uint64_t ret, uint64_t out)
{
	struct ingero_event ev = { 0 };

	frame_call(&ev, INGERO_STREAM_CALL, t, d, end_ns);
	ev.call.ret = ret;
	ev.call.out = out;
	t->depth = d;
	r->st.calls++;
	emit(r, &ev);
}

/* The calls thread t is inside, written as open ones that end at end_ns: the thread ended, or the recording did. */
static void close_calls(struct ingero_recorder *r, struct thread *t, uint64_t end_ns)
{
	unsigned d;

	for (d = 0; d < t->depth; d++) {
		struct ingero_event ev = { 0 };

		frame_call(&ev, INGERO_STREAM_OPEN, t, d, end_ns);
		r->st.open_calls++;
		emit(r, &ev);
	}
	t->depth = 0;
}

static void on_entry(struct ingero_recorder *r, const struct handler *h, const void *data,
		     uint64_t ts, int cpu)
{
	struct thread *t = thread_get(r, common_pid(data), 0);
	struct frame *fr;
	uint32_t api;
	unsigned i;

	if (!t)
		return;
	if (r->follow && !t->followed && !t->to_follow) {
		t->to_follow = 1;
		r->to_follow++;
	}
	if (t->depth == MAX_DEPTH) {
		r->st.unpaired++;
		return;
	}
	api = call_api(r, h, data);
	if (api >= r->napis)
		return;
	fr = &t->stack[t->depth++];
	fr->id = ++r->next_call_id;
	fr->ts = ts;
	fr->api = api;
	fr->cpu = cpu;
	for (i = 0; i < INGERO_MAX_ARGS; i++)
		fr->args[i] = h->f[F_ARG0 + i].offset >= 0 ?
			read_field(data, &h->f[F_ARG0 + i]) & r->fetch[api].arg_mask[i] : 0;
	if (ingero_api_entry_only(&r->apis[api]))
		end_call(r, t, t->depth - 1, ts, 0, 0);
}

static void on_return(struct ingero_recorder *r, const struct handler *h, const void *data,
		      uint64_t ts, int cpu)
{
	struct thread *t = thread_get(r, common_pid(data), 0);
	uint32_t api = call_api(r, h, data);
	int j;

	if (!t)
		return;
	for (j = (int)t->depth - 1; j >= 0 && t->stack[j].api != api; j--)
		;
	if (j < 0) {
		r->st.unpaired++;
		return;
	}
	/* Frames above it lost their returns. */
	r->st.unpaired += t->depth - 1 - j;
	end_call(r, t, j, ts, h->f[F_RET].offset >= 0 ? read_field(data, &h->f[F_RET]) : 0,
		 out_value(h, data, &t->stack[j], r->fetch[api].out, ingero_session_local_pid(r->s, t->pid)));
}

static uint32_t normalise_state(const struct ingero_recorder *r, uint64_t state)
{
	uint32_t out = state & r->preempt_bit ? INGERO_STATE_PREEMPTED : 0;
	int bit;

	for (bit = 0; bit < 32; bit++)
		if (state & (1ull << bit))
			out |= r->state_map[bit];
	return out;
}

static void on_switch(struct ingero_recorder *r, const struct handler *h, const void *data,
		      uint64_t ts, int cpu)
{
	struct ingero_event ev = { .stream = INGERO_STREAM_SWITCH, .ts = ts };

	ev.sw.cpu = cpu;
	ev.sw.prev_tid = read_signed(data, &h->f[SW_PREV_PID]);
	ev.sw.next_tid = read_signed(data, &h->f[SW_NEXT_PID]);
	ev.sw.prev_prio = read_signed(data, &h->f[SW_PREV_PRIO]);
	ev.sw.next_prio = read_signed(data, &h->f[SW_NEXT_PRIO]);
	ev.sw.prev_state = normalise_state(r, read_field(data, &h->f[SW_PREV_STATE]));
	ev.sw.prev_comm = field_str(data, &h->f[SW_PREV_COMM]);
	ev.sw.next_comm = field_str(data, &h->f[SW_NEXT_COMM]);
	if ((unsigned)cpu < INGERO_STATS_CPUS) {
		r->st.to_idle[cpu] += !ev.sw.next_tid;
		r->st.from_idle[cpu] += !ev.sw.prev_tid;
	}
	emit(r, &ev);
}

static void on_waking(struct ingero_recorder *r, const struct handler *h, const void *data,
		      uint64_t ts, int cpu)
{
	struct ingero_event ev = { .stream = INGERO_STREAM_WAKEUP, .ts = ts };

	ev.wakeup.cpu = cpu;
	ev.wakeup.target_cpu = read_field(data, &h->f[WK_TARGET]);
	ev.wakeup.waker_tid = common_pid(data);
	ev.wakeup.wakee_tid = read_signed(data, &h->f[WK_PID]);
	ev.wakeup.wakee_prio = read_signed(data, &h->f[WK_PRIO]);
	ev.wakeup.wakee_comm = field_str(data, &h->f[WK_COMM]);
	emit(r, &ev);
}

static void on_task(struct ingero_recorder *r, const struct handler *h, const void *data, uint64_t ts)
{
	struct ingero_event ev = { .stream = INGERO_STREAM_TASK, .ts = ts };
	struct ingero_task *t = &ev.task;
	int32_t tid = common_pid(data);
	char comm[INGERO_COMM_LEN];
	struct thread *th;

	switch (h->kind) {
	case H_FORK:
		t->kind = INGERO_TASK_FORK;
		t->tid = read_signed(data, &h->f[FK_PARENT]);
		t->child_tid = read_signed(data, &h->f[FK_CHILD]);
		th = thread_get(r, t->child_tid, 0);
		t->child_pid = th ? th->pid : (uint32_t)t->child_tid;
		if (th && r->follow)
			th->followed = 1;	/* as on_newtask(), for kernels without task_newtask */
		t->comm = field_str(data, &h->f[FK_CHILD_COMM]);
		break;
	case H_EXEC:
		t->kind = INGERO_TASK_EXEC;
		t->tid = read_signed(data, &h->f[EX_PID]);
		t->comm = exec_name(data, &h->f[EX_FILENAME], comm);
		break;
	case H_EXIT:
		t->kind = INGERO_TASK_EXIT;
		t->tid = read_signed(data, &h->f[XT_PID]);
		t->comm = field_str(data, &h->f[XT_COMM]);
		break;
	default:
		t->kind = INGERO_TASK_COMM;
		t->tid = read_signed(data, &h->f[RN_PID]);
		t->comm = field_str(data, &h->f[RN_NEWCOMM]);
		break;
	}
	if (!t->tid)
		t->tid = tid;
	th = thread_get(r, t->tid, 0);
	t->pid = th ? th->pid : (uint32_t)t->tid;
	if (th && h->kind == H_EXIT) {
		close_calls(r, th, ts);
		/* the kernel drops an ended task from its filter; a task given its tid later is another */
		th->followed = 0;
	}
	if (r->nfollows && r->follows[0].ts <= ts)
		emit_follows(r, ts);
	emit(r, &ev);
}

/* A task being made, by its parent: a thread joins the parent's process, else it is a process of its own. */
static void on_newtask(struct ingero_recorder *r, const struct handler *h, const void *data)
{
	int32_t child = read_signed(data, &h->f[NT_PID]);
	int is_thread = (read_field(data, &h->f[NT_CLONE_FLAGS]) & CLONE_THREAD) != 0;
	struct thread *parent = thread_get(r, common_pid(data), 0), *t;
	uint32_t pid = is_thread && parent ? parent->pid : (uint32_t)child;

	/* the tid may be one a task that ended had: the new task is another */
	if ((t = thread_get(r, child, pid))) {
		t->pid = pid;
		/* -a: only a task of the filter's is seen starting one, which the filter then holds too */
		t->followed = r->follow;
	}
}

/* A trace_marker line: ingero's own measure the trace clock. */
static void on_mark(struct ingero_recorder *r, const struct handler *h, const void *data, uint64_t ts)
{
	if (common_pid(data) == r->s->host_self)
		ingero_session_clock_seen(r->s, (const char *)data + h->f[0].offset, ts);
}

static int process_followed(const struct ingero_recorder *r, uint32_t pid)
{
	size_t i;

	for (i = 0; i < r->procs.n; i++)
		if ((uint32_t)r->procs.pids[i] == pid)
			return 1;
	return 0;
}

/*
 * A task of a recorded process in its loader's hook: the process is loading
 * or unloading a library, to be looked at. With -a, the loader's other
 * users pass there too, and are left to join at their first call.
 */
static void on_loader(struct ingero_recorder *r, const void *data)
{
	pid_t tid = common_pid(data);
	size_t i;

	if (r->follow && !process_followed(r, read_tgid(r, tid)))
		return;
	for (i = 0; i < r->nloads; i++)
		if (r->loads[i] == tid)
			return;
	if (r->nloads < INGERO_RECORD_LOADS)
		r->loads[r->nloads++] = tid;
	else
		r->loads_missed = 1;
}

static void handle(struct ingero_recorder *r, void *data, uint64_t ts, int cpu)
{
	uint16_t id;
	const struct handler *h;

	memcpy(&id, data, 2);
	h = id < r->nhandlers ? r->handlers[id] : NULL;
	if (!h)
		return;
	if (ts > r->last_ts)
		r->last_ts = ts;
	switch (h->kind) {
	case H_ENTRY: on_entry(r, h, data, ts, cpu); break;
	case H_RETURN: on_return(r, h, data, ts, cpu); break;
	case H_SWITCH: on_switch(r, h, data, ts, cpu); break;
	case H_WAKING: on_waking(r, h, data, ts, cpu); break;
	case H_NONE: break;
	case H_NEWTASK: on_newtask(r, h, data); break;
	case H_MARK: on_mark(r, h, data, ts); break;
	case H_LOADER: on_loader(r, data); break;
	default: on_task(r, h, data, ts); break;
	}
}

/* Reading and merging the per-CPU buffers. */

static void note_lost(struct ingero_recorder *r, int cpu, uint64_t from, uint64_t to, uint64_t count)
{
	struct ingero_lost_note *p;
	size_t i;

	r->st.lost += count;
	if (cpu < INGERO_STATS_CPUS)
		r->st.lost_per_cpu[cpu] += count;
	if (!(p = room_for_one(r->lost, r->nlost, &r->lost_cap, sizeof(*p)))) {
		error("out of memory for a stretch of %llu lost events", (unsigned long long)count);
		return;
	}
	r->lost = p;
	for (i = r->nlost; i > 0 && r->lost[i - 1].from > from; i--)
		r->lost[i] = r->lost[i - 1];
	r->lost[i] = (struct ingero_lost_note){ from, to, count, cpu };
	r->nlost++;
}

/* Writes the lost stretches that begin at or before floor, in order. */
static void emit_lost(struct ingero_recorder *r, uint64_t floor)
{
	size_t i;

	for (i = 0; i < r->nlost && r->lost[i].from <= floor; i++) {
		struct ingero_event ev = { .stream = INGERO_STREAM_LOST, .ts = r->lost[i].from };

		ev.lost.cpu = r->lost[i].cpu;
		ev.lost.end_ns = r->lost[i].to;
		ev.lost.count = r->lost[i].count;
		emit(r, &ev);
	}
	r->nlost = drop_first(r->lost, r->nlost, i, sizeof(*r->lost));
}

/* Where the next lost stretch can begin at the earliest: no CPU's before what it has handled, nor a count's check. */
static uint64_t lost_floor(const struct ingero_recorder *r)
{
	uint64_t floor = r->last_dropped_check ? r->last_dropped_check : UINT64_MAX;
	int i;

	for (i = 0; i < r->nreaders; i++)
		if (r->readers[i].tcpu && r->readers[i].seen < floor)
			floor = r->readers[i].seen;
	return floor;
}

static char *page_at(struct ingero_recorder *r, struct cpu_reader *c, unsigned i)
{
	return c->pages + (size_t)(i % PAGES_PER_CPU) * r->page_size;
}

/* Reads the pages the kernel has; returns the start time of the last page if the pool filled up. */
static uint64_t read_cpu(struct ingero_recorder *r, struct cpu_reader *c)
{
	while (c->head - c->tail < PAGES_PER_CPU) {
		char *page = page_at(r, c, c->head);
		int n = tracefs_cpu_read(c->tcpu, page, true);

		if (n <= 0)
			return UINT64_MAX;
		c->head++;
	}
	return kbuffer_subbuf_timestamp(c->kbuf, page_at(r, c, c->head - 1));
}

/* Puts the cursor on the next record of the CPU, loading pages as needed. */
static void advance(struct ingero_recorder *r, struct cpu_reader *c, int load)
{
	for (;;) {
		if (!load) {
			c->rec = kbuffer_next_event(c->kbuf, &c->rec_ts);
			if (c->rec)
				return;
			c->tail++;
		}
		load = 0;
		if (c->tail == c->head) {
			c->rec = NULL;
			return;
		}
		kbuffer_load_subbuffer(c->kbuf, page_at(r, c, c->tail));
		c->rec = kbuffer_read_event(c->kbuf, &c->rec_ts);
		if (kbuffer_missed_events(c->kbuf) && c->rec) {
			int missed = kbuffer_missed_events(c->kbuf);

			note_lost(r, c->cpu, c->seen, c->rec_ts, missed > 0 ? missed : 0);
		}
		if (c->rec)
			return;
		c->tail++;
		load = 1;
	}
}

static struct cpu_reader *oldest(struct ingero_recorder *r)
{
	struct cpu_reader *best = NULL;
	int i;

	for (i = 0; i < r->nreaders; i++) {
		struct cpu_reader *c = &r->readers[i];

		if (c->rec && (!best || c->rec_ts < best->rec_ts))
			best = c;
	}
	return best;
}

/* The kernel counts the events it had no room for; each increase is a lost stretch. */
static void check_dropped(struct ingero_recorder *r, uint64_t now)
{
	int i;

	for (i = 0; i < r->nreaders; i++) {
		struct cpu_reader *c = &r->readers[i];
		long long n;

		if (!c->tcpu)
			continue;
		n = ingero_session_dropped(r->s, c->buf, c->cpu);
		if (n > (long long)c->dropped) {
			note_lost(r, c->cpu, r->last_dropped_check ? r->last_dropped_check : c->seen,
				  now, n - c->dropped);
			c->dropped = n;
		}
	}
	r->last_dropped_check = now;
}

/*
 * Reads the pages the CPUs have and handles their events up to watermark
 * (less where a CPU's pool filled up); 1 when a pool filled up and events
 * were handled, so that a further round reads on.
 */
static int read_and_merge(struct ingero_recorder *r, uint64_t watermark)
{
	struct cpu_reader *c;
	int i, full = 0, handled = 0;

	for (i = 0; i < r->nreaders; i++) {
		uint64_t cap;

		c = &r->readers[i];
		if (!c->tcpu)
			continue;
		cap = read_cpu(r, c);
		c->drained = cap == UINT64_MAX;
		if (!c->drained)
			full = 1;
		if (cap < watermark)
			watermark = cap;
		if (!c->rec)
			advance(r, c, 1);
	}
	while ((c = oldest(r)) && c->rec_ts <= watermark) {
		handle(r, c->rec, c->rec_ts, c->cpu);
		c->seen = c->rec_ts;
		advance(r, c, 0);
		handled = 1;
	}
	/* a CPU whose buffer was empty has nothing before the watermark left: its losses can only come later */
	for (i = 0; i < r->nreaders; i++) {
		c = &r->readers[i];
		if (c->tcpu && c->drained && !c->rec && watermark != UINT64_MAX && watermark > c->seen)
			c->seen = watermark;
	}
	return full && handled;
}

/* Closes the readers of the buffers, and frees their pages: the kernel removes no instance whose buffers are open. */
static void close_readers(struct ingero_recorder *r)
{
	int i;

	for (i = 0; r->readers && i < r->nreaders; i++) {
		struct cpu_reader *c = &r->readers[i];

		if (c->tcpu)
			tracefs_cpu_close(c->tcpu);
		c->tcpu = NULL;
		kbuffer_free(c->kbuf);
		c->kbuf = NULL;
		free(c->pages);
		c->pages = NULL;
		c->rec = NULL;
	}
}

int ingero_recorder_poll(struct ingero_recorder *r, int final)
{
	uint64_t now = ingero_session_clock(r->s);
	uint64_t watermark = final ? UINT64_MAX : now - WATERMARK_SLACK_NS, floor;

	pthread_mutex_lock(&r->lock);
	if (!final)
		ingero_session_clock_mark(r->s);
	/* round after round while the pools fill up: behind after a stall, the reading catches up at once */
	while (read_and_merge(r, watermark))
		;
	if (r->to_follow)
		follow_callers(r);
	if (final || now - r->last_dropped_check >= DROPPED_CHECK_NS)
		check_dropped(r, final ? r->last_ts : now);
	floor = final ? UINT64_MAX : lost_floor(r);
	emit_lost(r, floor);
	/* no task event can come before the floor any more either */
	emit_follows(r, floor);
	if (final)
		close_readers(r);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int ingero_recorder_finish(struct ingero_recorder *r)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->threads_cap; i++)
		if (r->threads[i].tid)
			close_calls(r, &r->threads[i], r->last_ts);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

void ingero_recorder_stats(struct ingero_recorder *r, struct ingero_record_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	pthread_mutex_unlock(&r->lock);
}

void ingero_recorder_free(struct ingero_recorder *r)
{
	size_t i;

	if (!r)
		return;
	close_readers(r);
	for (i = 0; i < r->nhandlers; i++)
		free(r->handlers[i]);
	free(r->handlers);
	free(r->readers);
	free(r->procs.pids);
	free(r->lost);
	free(r->follows);
	free(r->threads);
	free(r->files);
	free(r->loaders);
	free(r->offsets);
	free(r->fetch);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
