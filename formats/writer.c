/*
 * The trace writer: buffers each stream's events as columns, ends the
 * blocks when they fill and at every checkpoint, and appends each block as
 * one zstd frame, so the file is readable up to its last whole frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY	/* for ZSTD_c_stableInBuffer */
#include <zstd.h>
#include <zstd_errors.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "format.h"
#include "../lib/error.h"
#include "../lib/trace.h"

#define ZSTD_LEVEL 1
/*
 * Level 1's match table shrunk from 8192 entries to 512: a block's byte
 * planes hold few repeats worth a match, and with fewer candidates zstd
 * spends less time on them; what it no longer matches its Huffman tables
 * code as well or better.
 */
#define ZSTD_HASH_LOG 9
/*
 * A window of 2 MiB rather than level 1's 512 KiB, so that a block's
 * section (some 700 KiB for 65536 events) lies in it whole: a match may
 * reach back to its first column. zstd shrinks the window to the size of a
 * smaller section.
 */
#define ZSTD_WINDOW_LOG 21
/*
 * Matches of 7 bytes or more, not level 1's 6: in byte planes a 6-byte
 * match seldom pays for its sequence over Huffman-coded literals, and
 * fewer candidates are checked.
 */
#define ZSTD_MIN_MATCH 7
#define CUT_MIN 2048
#define MAX_CUTS (8 * MAX_COLUMNS)

struct index_entry {
	uint64_t offset, first, last;
	uint32_t size, blockno, kind, stream, count, checkpoint;
};

/* The interned strings: ids from 1 in order of first use, 0 being NULL. */
struct strtab {
	struct buf bytes;		/* each string and its NUL */
	uint32_t *off, *hash;		/* by id - 1 */
	uint32_t n, alloc;
	uint32_t *slots, mask;		/* ids; 0 is empty */
};

/*
 * The id of the comm a thread had last, in whatever stream and column: a
 * thread's comm seldom changes, so one compare usually stands in for hash
 * and probe. The slot keeps the string's first STRCACHE_HEAD bytes, a comm
 * and its NUL, so that the compare reads no string table. Its key is the
 * thread's id or, for a CPU's idle task, that CPU's (comm_key()).
 */
#define STRCACHE_BITS 10
#define STRCACHE_HEAD 16
_Static_assert(STRCACHE_HEAD == INGERO_COMM_LEN, "a slot's head holds a comm, as the idle tasks' names are kept");
/* The key of an empty slot, above those of threads and idle tasks. */
#define STRCACHE_NO_KEY UINT64_MAX
struct strcache_slot {
	uint64_t key;	/* STRCACHE_NO_KEY: empty */
	uint32_t id1;	/* the string's id + 1 */
	uint32_t within;	/* a bit for each byte of head up to its NUL, that NUL's included */
	char head[STRCACHE_HEAD];	/* the string, its NUL, and what followed */
};

#define EV(f) ((uint16_t)offsetof(struct ingero_event, f))
#define NO_FIELD 0xffff
/*
 * The string fields that are a thread's comm, the field of that thread's
 * id (a fork's comm is its child's, which is mostly its parent's, the tid)
 * and, where the thread may be a CPU's idle task, the field of that CPU.
 */
static const struct comm_field {
	uint16_t stream, comm, tid, cpu;
} comm_fields[] = {
	{ INGERO_STREAM_SWITCH, EV(sw.prev_comm), EV(sw.prev_tid), EV(sw.cpu) },
	{ INGERO_STREAM_SWITCH, EV(sw.next_comm), EV(sw.next_tid), EV(sw.cpu) },
	{ INGERO_STREAM_WAKEUP, EV(wakeup.wakee_comm), EV(wakeup.wakee_tid), NO_FIELD },
	{ INGERO_STREAM_TASK, EV(task.comm), EV(task.tid), NO_FIELD },
};
#undef EV

/*
 * A stream's events are kept as they come, this many, then moved into their
 * columns a column at a time: a load and a store per value rather than a
 * walk over the columns for each event. Few enough that the rows of the
 * streams that interleave stay in the L1 cache until they are moved.
 */
#define EVENT_ROWS 32
/*
 * The comms an event has at most (a switch's two). As an event comes, the
 * first STRCACHE_HEAD bytes of each are kept beside its row, and they get
 * their ids when the rows move into the columns, a column at a time: the
 * streams come mixed at random, and a branch on the comms each event has
 * would be mispredicted as often.
 */
#define COMM_SLOTS 2

/*
 * A stream's arrays first hold this many events: one that fills them within
 * a block moves to arrays for whole blocks, in huge pages (block_alloc()),
 * and so do the writer's scratch arrays, so that a small trace or a quiet
 * stream keeps to a small footprint. A power of 2, as the dictionaries'
 * hash tables are, and whole rows, so that none wait when the arrays move.
 */
#define FIRST_ROWS 4096
_Static_assert(!(FIRST_ROWS & (FIRST_ROWS - 1)) && FIRST_ROWS % EVENT_ROWS == 0 && FIRST_ROWS < BLOCK_MAX_EVENTS,
	       "the first arrays move whole");

/* A column that its events' rows fill: its values, and the field of struct ingero_event they come from. */
struct wfield {
	uint64_t *vals;
	uint16_t off;
	uint8_t type;
};

/*
 * A string column, filled as each event comes, so that its strings get
 * their ids in the order they are first used.
 */
struct wstring {
	uint64_t *vals;
	uint16_t off;
	uint16_t tid, cpu;	/* for a comm, its thread's field and its idle task's CPU's; else NO_FIELD */
};

struct stream_buf {
	uint64_t *vals[MAX_COLUMNS];	/* COLUMN_STRIDE_FOR(room) apart; vals[0] is the allocation */
	struct wfield fields[MAX_COLUMNS];
	struct wstring comms[COMM_SLOTS], plain[MAX_COLUMNS];	/* string columns: comms, and the others */
	unsigned nfields, ncomms, nplain;
	/*
	 * Where each comm slot's string pointer is: an event's address and-ed
	 * with ev_mask, plus at: for a slot the stream lacks, at no_comm_at.
	 */
	struct {
		uintptr_t ev_mask, at;
	} head_src[COMM_SLOTS];
	uint32_t n, room;	/* events in the block, and that its arrays hold */
	uint64_t first, last;
	/* EVENT_ROWS, after the columns: events n - n % EVENT_ROWS.. n, not yet in the columns */
	struct ingero_event *rows;
	/* the heads of the rows' comms, or where a comm's id is in its column already, bytes with no NUL */
	char heads[EVENT_ROWS][COMM_SLOTS][STRCACHE_HEAD] __attribute__((aligned(STRCACHE_HEAD)));
};

struct ingero_writer {
	int fd, failed, ended;
	uint64_t refused;	/* events out of order */
	ZSTD_CCtx *cctx;
	uint64_t offset;
	uint32_t blockno, checkpoint;
	uint64_t checkpoint_ns;	/* the key that began the checkpoint; before any event, -CHECKPOINT_NS */
	struct stream_buf s[INGERO_NR_STREAMS];
	struct strtab strings;
	struct strcache_slot strcache[1 << STRCACHE_BITS];
	char (*idle)[STRCACHE_HEAD];	/* idle_comms_new(), nidle of them */
	uint32_t nidle;
	uint32_t strings_written;
	struct buf sec, out;
	struct column_scratch scratch;
	uint32_t most;	/* the events of a block that scratch and keyidx have room for */
	uint16_t *keyidx[MAX_COLUMNS];	/* a dict column's entry for each event, for any stream's columns */
	uint32_t keyn[MAX_COLUMNS];
	struct index_entry *index;
	size_t nindex, index_alloc;
	struct ingero_trace_stats st;	/* events: those of the blocks ended; first_ns, last_ns: unset */
	struct column_bytes *measure;
	uint64_t since[INGERO_NR_STREAMS];	/* the key of each stream's first event */
};

/* Eight bytes at a time: comms and paths are short, and this runs for every string of every event. */
static uint32_t str_hash(const char *s, uint32_t *len)
{
	size_t n = strlen(s), i;
	uint64_t h = n * 0x9e3779b97f4a7c15ull, w;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	/* byte by byte: a short copy into w would stall the load that follows it */
	for (w = 0; i < n; i++)
		w = w << 8 | (uint8_t)s[i];
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	*len = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	return (uint32_t)(h ^ h >> 29);
}

static int strtab_rehash(struct strtab *t)
{
	uint32_t size = t->mask ? 2 * (t->mask + 1) : 1024, i;
	uint32_t *slots = calloc(size, sizeof(*slots));

	if (!slots)
		return error_errno("cannot grow the string table");
	for (i = 0; i < t->n; i++) {
		uint32_t h = t->hash[i] & (size - 1);

		while (slots[h])
			h = (h + 1) & (size - 1);
		slots[h] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = size - 1;
	return 0;
}

static uint32_t strtab_len(const struct strtab *t, uint32_t id)
{
	return (id < t->n ? t->off[id] : (uint32_t)t->bytes.len) - t->off[id - 1] - 1;
}

/* The id of s, added when new; 0 for NULL, -1 on failure. */
static int64_t strtab_intern(struct strtab *t, const char *s)
{
	uint32_t len, hash, h, id;

	if (!s)
		return 0;
	hash = str_hash(s, &len);
	if (t->mask) {
		for (h = hash & t->mask; (id = t->slots[h]); h = (h + 1) & t->mask)
			if (t->hash[id - 1] == hash && strtab_len(t, id) == len &&
			    !memcmp(t->bytes.data + t->off[id - 1], s, len))
				return id;
	}
	if (len > STRING_MAX)
		return error("string of %u bytes is too long for a trace", len);
	if (t->n >= STRINGS_MAX_COUNT || t->bytes.len + len + 1 > STRINGS_MAX_BYTES)
		return error("too many strings for one trace");
	if (t->n == t->alloc) {
		uint32_t a = t->alloc ? 2 * t->alloc : 256;
		uint32_t *off = realloc(t->off, a * sizeof(*off)), *hs;

		if (!off)
			return error_errno("cannot grow the string table");
		t->off = off;
		if (!(hs = realloc(t->hash, a * sizeof(*hs))))
			return error_errno("cannot grow the string table");
		t->hash = hs;
		t->alloc = a;
	}
	if ((t->n + 1) * 2 > t->mask && strtab_rehash(t))
		return -1;
	if (buf_grow(&t->bytes, len + 1))
		return -1;
	memcpy(t->bytes.data + t->bytes.len, s, len + 1);
	t->off[t->n] = (uint32_t)t->bytes.len;
	t->hash[t->n] = hash;
	t->bytes.len += len + 1;
	id = ++t->n;
	for (h = hash & t->mask; t->slots[h]; h = (h + 1) & t->mask)
		;
	t->slots[h] = id;
	return id;
}

/* Whether slot e holds the string that head, the first STRCACHE_HEAD bytes of a comm, begins. */
#if defined(__SSE2__)
static inline int strcache_holds(const struct strcache_slot *e, const char *head)
{
	__m128i a = _mm_loadu_si128((const __m128i *)e->head), b = _mm_loadu_si128((const __m128i *)head);
	unsigned same = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(a, b));

	return (same & e->within) == e->within;
}
#else
static int strcache_holds(const struct strcache_slot *e, const char *head)
{
	return !strncmp(e->head, head, STRCACHE_HEAD);
}
#endif

/* head_take() near the end of a page, or without SSE2: whether str ends within STRCACHE_HEAD bytes. */
static int head_copy(char *head, const char *str)
{
	size_t n = strnlen(str, STRCACHE_HEAD);

	memcpy(head, str, n < STRCACHE_HEAD ? n + 1 : n);
	return n < STRCACHE_HEAD;
}

/*
 * Copies the first STRCACHE_HEAD bytes of str to head: whether str ends
 * within them. They are read at once, past str's end but not past its page,
 * as strlen reads it: no address check for that.
 */
#if defined(__SSE2__)
static inline __attribute__((no_sanitize_address)) int head_take(char *head, const char *str)
{
	__m128i h;

	if (((uintptr_t)str & 4095) > 4096 - STRCACHE_HEAD)
		return head_copy(head, str);
	h = _mm_loadu_si128((const __m128i *)str);
	_mm_store_si128((__m128i *)head, h);
	return _mm_movemask_epi8(_mm_cmpeq_epi8(h, _mm_setzero_si128())) != 0;
}
#else
static int head_take(char *head, const char *str)
{
	return head_copy(head, str);
}
#endif

/*
 * The cache key of the comm of thread tid on cpu: the thread's id, or for
 * thread 0 on a CPU with an idle task (cpu under nidle), above every
 * thread's id, the CPU's, as each CPU's idle task has a name of its own.
 * Without a branch, as switches to and from the idle tasks come at random.
 */
static inline uint64_t comm_key(uint32_t tid, uint32_t cpu, uint32_t nidle)
{
	uint64_t idle = -(uint64_t)(!tid & (cpu < nidle));

	return tid | (idle & (1ull << 32 | cpu));
}

/* Keeps string id, which head holds with its NUL, in slot e for key. */
static void strcache_keep(struct strcache_slot *e, uint64_t key, uint32_t id, const char *head)
{
	e->key = key;
	e->id1 = id + 1;
	e->within = (2u << strnlen(head, STRCACHE_HEAD - 1)) - 1;
	memcpy(e->head, head, sizeof(e->head));
}

/*
 * comm_id() when slot e does not hold head for key: 0 for the name of the
 * idle task that key stands for, else the id of the string that head
 * holds, interned; kept in e. A head with no NUL is that of a comm whose id
 * is in its column already: put.
 */
static __attribute__((noinline)) int64_t strcache_miss(struct ingero_writer *w, struct strcache_slot *e, uint64_t key,
						       const char *head, uint64_t put)
{
	const char *idle = key >> 32 ? w->idle[(uint32_t)key] : NULL;
	int64_t id;

	if (!memchr(head, 0, STRCACHE_HEAD))
		return (int64_t)put;
	if (idle && !strcmp(idle, head)) {
		strcache_keep(e, key, 0, idle);
		return 0;
	}
	if ((id = strtab_intern(&w->strings, head)) > 0)
		strcache_keep(e, key, (uint32_t)id, head);
	return id;
}

/*
 * The id of the comm whose first STRCACHE_HEAD bytes are head, of cache key
 * key (comm_key()): 0 for an idle task's name; -1 on failure. put is what
 * its column holds.
 */
static inline int64_t comm_id(struct ingero_writer *w, uint64_t key, const char *head, uint64_t put)
{
	struct strcache_slot *e = &w->strcache[key * 0x9e3779b97f4a7c15ull >> (64 - STRCACHE_BITS)];

	if (__builtin_expect(e->key == key && strcache_holds(e, head), 1))
		return e->id1 - 1;
	return strcache_miss(w, e, key, head, put);
}

static void strtab_release(struct strtab *t)
{
	buf_release(&t->bytes);
	free(t->off);
	free(t->hash);
	free(t->slots);
}

static int index_add(struct ingero_writer *w, const struct index_entry *e)
{
	if (w->nindex == w->index_alloc) {
		size_t a = w->index_alloc ? 2 * w->index_alloc : 256;
		struct index_entry *p = realloc(w->index, a * sizeof(*p));

		if (!p)
			return error_errno("cannot grow the trace index");
		w->index = p;
		w->index_alloc = a;
	}
	w->index[w->nindex++] = *e;
	return 0;
}

/*
 * Compresses w->sec into one frame, ending a zstd block at each of the
 * ncuts offsets: each column then gets entropy tables of its own, and the
 * frame still decompresses to the one section. The input only grows to
 * each cut in turn, as zstd's stable input buffer asks.
 */
static size_t compress_cut(struct ingero_writer *w, const uint32_t *cuts, unsigned ncuts, size_t bound)
{
	ZSTD_outBuffer out = { w->out.data, bound, 0 };
	ZSTD_inBuffer in = { w->sec.data, 0, 0 };
	size_t ret;
	unsigned k;

	ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
	ZSTD_CCtx_setPledgedSrcSize(w->cctx, w->sec.len);
	for (k = 0; k <= ncuts; k++) {
		ZSTD_EndDirective end = k == ncuts ? ZSTD_e_end : ZSTD_e_flush;

		in.size = k == ncuts ? w->sec.len : cuts[k];
		do
			ret = ZSTD_compressStream2(w->cctx, &out, &in, end);
		while (!ZSTD_isError(ret) && ret && out.pos < out.size);
		if (ZSTD_isError(ret))
			return ret;
		if (ret)
			return (size_t)-ZSTD_error_dstSize_tooSmall;
	}
	return out.pos;
}

/* Compresses the section in w->sec (payload filled after the header) into one frame and appends it. */
static int write_section(struct ingero_writer *w, uint32_t tag, struct index_entry *e,
			 const uint32_t *cuts, unsigned ncuts)
{
	size_t len = w->sec.len - SECTION_HEADER_SIZE, bound = ZSTD_compressBound(w->sec.len) + 64 * (ncuts + 1), size;

	section_seal(w->sec.data, tag, (uint32_t)len, w->blockno);
	w->out.len = 0;
	if (buf_grow(&w->out, bound))
		return -1;
	size = compress_cut(w, cuts, ncuts, bound);
	if (ZSTD_isError(size))
		return error("cannot compress block %u: %s", w->blockno, ZSTD_getErrorName(size));
	if (write_all(w->fd, w->out.data, size))
		return error_errno("cannot write the trace");
	if (e) {
		e->offset = w->offset;
		e->size = (uint32_t)size;
		e->blockno = w->blockno;
		e->checkpoint = w->checkpoint;
		if (index_add(w, e))
			return -1;
	}
	w->offset += size;
	w->blockno++;
	return 0;
}

static int sec_start(struct ingero_writer *w, size_t payload)
{
	w->sec.len = 0;
	if (buf_grow(&w->sec, SECTION_HEADER_SIZE + payload))
		return -1;
	w->sec.len = SECTION_HEADER_SIZE;
	return 0;
}

/* Room for len bytes at the end of the section; NULL on failure. */
static uint8_t *sec_put(struct ingero_writer *w, size_t len)
{
	uint8_t *p;

	if (buf_grow(&w->sec, len))
		return NULL;
	p = w->sec.data + w->sec.len;
	w->sec.len += len;
	return p;
}

static int put_str(struct ingero_writer *w, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	uint8_t *p;

	if (len > HEADER_MAX)
		return error("header string of %zu bytes is too long", len);
	if (!(p = sec_put(w, 4 + len)))
		return -1;
	put_u32(p, (uint32_t)len);
	memcpy(p + 4, s ? s : "", len);
	return 0;
}

static int put_u32s(struct ingero_writer *w, uint32_t v)
{
	uint8_t *p = sec_put(w, 4);

	if (!p)
		return -1;
	put_u32(p, v);
	return 0;
}

static int put_api(struct ingero_writer *w, const struct ingero_api *a)
{
	uint32_t i;

	if (a->nargs > INGERO_MAX_ARGS)
		return error("API '%s' has %u arguments, more than %d", a->name, a->nargs, INGERO_MAX_ARGS);
	if (put_str(w, a->name) || put_str(w, a->lib) || put_str(w, a->set) || put_str(w, a->ret_type) ||
	    put_u32s(w, a->role) || put_u32s(w, a->nargs))
		return -1;
	for (i = 0; i < a->nargs; i++)
		if (put_str(w, a->args[i].type) || put_str(w, a->args[i].name) || put_u32s(w, a->args[i].kind))
			return -1;
	return 0;
}

static int put_schema(struct ingero_writer *w)
{
	unsigned s, c;

	if (put_u32s(w, INGERO_NR_STREAMS))
		return -1;
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		const struct stream_def *sd = &stream_defs[s];
		uint8_t *p;

		if (put_str(w, sd->name) || !(p = sec_put(w, 4)))
			return -1;
		put_u16(p, sd->ncols);
		put_u16(p + 2, sd->sortkey);
		for (c = 0; c < sd->ncols; c++) {
			const struct column_def *d = &sd->cols[c];

			if (put_str(w, d->name) || put_str(w, d->unit) || !(p = sec_put(w, COLUMN_DEF_SIZE)))
				return -1;
			p[0] = d->type;
			p[1] = d->enc;
			p[2] = d->flags;
			p[3] = 0;
			put_u16(p + 4, d->key);
			put_u16(p + 6, d->src);
			put_u16(p + 8, d->group);
			put_u16(p + 10, 0);
		}
	}
	return 0;
}

static int write_header(struct ingero_writer *w, const struct ingero_header *h)
{
	uint8_t *p;
	uint32_t i;

	if (h->napis > MAX_APIS)
		return error("%u APIs are more than a trace holds", h->napis);
	if (sec_start(w, 4096) || !(p = sec_put(w, 36)))
		return -1;
	memcpy(p, FORMAT_MAGIC, FORMAT_MAGIC_LEN);
	put_u16(p + 8, FORMAT_MAJOR);
	put_u16(p + 10, FORMAT_MINOR);
	put_u32(p + 12, 0);
	put_u32(p + 16, h->ncpus);
	put_u64(p + 20, h->start_ns);
	put_u64(p + 28, h->realtime_ns);
	if (put_str(w, h->host) || put_str(w, h->kernel) || put_str(w, h->clock) ||
	    put_str(w, h->boot_id) || put_str(w, h->command) || put_u32s(w, h->napis))
		return -1;
	for (i = 0; i < h->napis; i++)
		if (put_api(w, &h->apis[i]))
			return -1;
	if (put_schema(w))
		return -1;
	for (i = 0; i < h->napis; i++)
		if (put_u32s(w, h->apis[i].flags))
			return -1;
	if (w->sec.len - SECTION_HEADER_SIZE > HEADER_MAX)
		return error("the trace header is larger than %u bytes", HEADER_MAX);
	return write_section(w, TAG_HEADER, NULL, NULL, 0);
}

/* The strings interned since the last strings section, which must precede the block that uses them. */
static int write_strings(struct ingero_writer *w)
{
	struct strtab *t = &w->strings;
	struct index_entry e = { .kind = INDEX_STRINGS };
	uint32_t id;
	uint8_t *p;

	if (w->strings_written == t->n)
		return 0;
	if (sec_start(w, 8 + t->bytes.len - t->off[w->strings_written]) || !(p = sec_put(w, 8)))
		return -1;
	put_u32(p, w->strings_written + 1);
	put_u32(p + 4, t->n - w->strings_written);
	for (id = w->strings_written; id < t->n; id++) {
		const char *s = (char *)t->bytes.data + t->off[id];
		size_t len = strlen(s);

		if (!(p = sec_put(w, 4 + len)))
			return -1;
		put_u32(p, (uint32_t)len);
		memcpy(p + 4, s, len);
	}
	e.stream = w->strings_written + 1;
	e.count = t->n - w->strings_written;
	if (write_section(w, TAG_STRINGS, &e, NULL, 0))
		return -1;
	w->strings_written = t->n;
	return 0;
}

static int measure_column(struct ingero_writer *w, unsigned s, unsigned c, size_t at)
{
	size_t len = w->sec.len - at, bound = ZSTD_compressBound(len), size;

	w->out.len = 0;
	if (buf_grow(&w->out, bound))
		return -1;
	size = ZSTD_compress2(w->cctx, w->out.data, bound, w->sec.data + at, len);
	if (ZSTD_isError(size))
		return error("cannot compress a column: %s", ZSTD_getErrorName(size));
	w->measure->raw[s][c] += len;
	w->measure->zst[s][c] += size;
	return 0;
}

void writer_measure_columns(struct ingero_writer *w, struct column_bytes *cb)
{
	w->measure = cb;
}

/* The value of a field of type type at off in ev, as its column holds it; inlined with the type known. */
static inline __attribute__((always_inline)) uint64_t
field_value(const struct ingero_event *ev, uint16_t off, unsigned type)
{
	const char *p = (const char *)ev + off;

	if (type == TYPE_U64)
		return *(const uint64_t *)p;
	if (type == TYPE_U32)
		return *(const uint32_t *)p;
	return (uint64_t)(int64_t)*(const int32_t *)p;
}

/* The values of m rows' field into vals; inlined with the type known, so that each is a load and a store. */
static inline __attribute__((always_inline)) void
rows_to_column(uint64_t *restrict vals, const struct ingero_event *restrict rows, uint32_t m, uint16_t off,
	       unsigned type)
{
	uint32_t j;

#pragma GCC unroll 8
	for (j = 0; j < m; j++)
		vals[j] = field_value(&rows[j], off, type);
}

/*
 * A stream's columns outnumber the streams of writes that the hardware
 * prefetcher follows: as rows are moved, each column's cache lines
 * PREFETCH_AHEAD values past those the next rows fill are asked for. They
 * lie within the allocation even past a block's end, in the next column or
 * the rows.
 */
static void prefetch_rows_ahead(uint64_t *vals)
{
	unsigned line;

	for (line = 0; line < EVENT_ROWS * sizeof(*vals) / 64; line++)
		__builtin_prefetch(vals + line * 64 / sizeof(*vals), 1);
}

/* Moves the m rows kept into the columns, as their events at..at + m. */
static void rows_to_columns(struct stream_buf *sb, uint32_t at, uint32_t m)
{
	const struct wfield *f;

	for (f = sb->fields; f < sb->fields + sb->nfields; f++) {
		prefetch_rows_ahead(f->vals + at + EVENT_ROWS + PREFETCH_AHEAD);
		if (f->type == TYPE_U64)
			rows_to_column(f->vals + at, sb->rows, m, f->off, TYPE_U64);
		else if (f->type == TYPE_U32)
			rows_to_column(f->vals + at, sb->rows, m, f->off, TYPE_U32);
		else
			rows_to_column(f->vals + at, sb->rows, m, f->off, TYPE_I32);
	}
}

/*
 * The ids of comm column f's comms of the m rows kept, whose heads are in
 * slot c, into the column as events at..at + m; inlined with whether a row
 * has the CPU whose idle task the comm may be.
 */
static inline __attribute__((always_inline)) int
comm_ids(struct ingero_writer *w, struct stream_buf *sb, const struct wstring *f, unsigned c, uint32_t at, uint32_t m,
	 int idle)
{
	const struct ingero_event *rows = sb->rows;
	uint64_t *vals = f->vals + at;
	uint16_t tid_at = f->tid, cpu_at = f->cpu;
	uint32_t j, nidle = w->nidle;

	for (j = 0; j < m; j++) {
		uint32_t tid = (uint32_t)field_value(&rows[j], tid_at, TYPE_U32);
		uint64_t key = idle ? comm_key(tid, (uint32_t)field_value(&rows[j], cpu_at, TYPE_U32), nidle) : tid;
		int64_t id = comm_id(w, key, sb->heads[j][c], vals[j]);

		if (id < 0)
			return -1;
		vals[j] = (uint64_t)id;
	}
	return 0;
}

/* The ids of the comms of the m rows kept into their columns, as events at..at + m; -1 on failure. */
static int comms_put(struct ingero_writer *w, struct stream_buf *sb, uint32_t at, uint32_t m)
{
	unsigned c;

	for (c = 0; c < sb->ncomms; c++) {
		const struct wstring *f = &sb->comms[c];

		if (f->cpu == NO_FIELD ? comm_ids(w, sb, f, c, at, m, 0) : comm_ids(w, sb, f, c, at, m, 1))
			return -1;
	}
	return 0;
}

/*
 * Moves the m rows kept into the columns, as events at..at + m; -1 on
 * failure. Not inlined, as none of the writer's rarer steps are, so that
 * ingero_writer_add() keeps to what each event needs.
 */
static __attribute__((noinline)) int rows_put(struct ingero_writer *w, struct stream_buf *sb, uint32_t at, uint32_t m)
{
	if (comms_put(w, sb, at, m))
		return -1;
	rows_to_columns(sb, at, m);
	return 0;
}

/* The rows kept of a block that ends before they fill. */
static int rows_flush(struct ingero_writer *w, struct stream_buf *sb)
{
	uint32_t m = sb->n % EVENT_ROWS;

	return m ? rows_put(w, sb, sb->n - m, m) : 0;
}

/* Ends a zstd block at offset at, unless what lies since the last end is too small to pay for tables of its own. */
static unsigned cut_add(uint32_t *cuts, unsigned ncuts, uint32_t at)
{
	if (ncuts < MAX_CUTS && at - (ncuts ? cuts[ncuts - 1] : 0) >= CUT_MIN)
		cuts[ncuts++] = at;
	return ncuts;
}

/* The zstd block ends after each of the byte planes of the codes of width w at data, len bytes of them. */
static unsigned cut_planes(uint32_t *cuts, unsigned ncuts, uint32_t data, unsigned w, uint32_t len)
{
	unsigned planes = w & WIDTH_PLANES ? w & ~WIDTH_PLANES : 1, b;

	for (b = 1; b < planes; b++)
		ncuts = cut_add(cuts, ncuts, data + b * (len / planes));
	return ncuts;
}

/*
 * Adds the zstd block ends for the column record at rec, which ends at end:
 * one after each byte plane, each group's, and at the end of the column
 * (but not of the section).
 */
static unsigned cut_column(const uint8_t *rec, uint32_t *cuts, unsigned ncuts, uint32_t end, int last)
{
	uint32_t len = get_u32(rec + 4), at = end - COLUMN_HEADER_SIZE - len, data = at + COLUMN_HEADER_SIZE;

	if (rec[2] == ENC_DICT)
		data += 4 + 8 * get_u32(rec + COLUMN_HEADER_SIZE);
	if (rec[3] & WIDTH_PLANES)
		ncuts = cut_planes(cuts, ncuts, data, rec[3], end - data);
	/* a group's record: width, length, its codes */
	while (rec[3] == WIDTH_GROUPS && data < end) {
		const uint8_t *g = rec + (data - at);
		uint32_t glen = get_u32(g + 1);

		data += GROUP_HEADER_SIZE;
		if (g[0] & WIDTH_PLANES)
			ncuts = cut_planes(cuts, ncuts, data, g[0], glen);
		data += glen;
		if (data < end)
			ncuts = cut_add(cuts, ncuts, data);
	}
	return last ? ncuts : cut_add(cuts, ncuts, end);
}

static int end_block(struct ingero_writer *w, unsigned s)
{
	const struct stream_def *sd = &stream_defs[s];
	struct stream_buf *sb = &w->s[s];
	struct index_entry e = { .kind = INDEX_BLOCK, .stream = s, .count = sb->n,
				 .first = sb->first, .last = sb->last };
	uint32_t cuts[MAX_CUTS];
	unsigned c, ncuts = 0;
	uint8_t *p;

	if (!sb->n)
		return 0;
	if (rows_flush(w, sb) || write_strings(w) || sec_start(w, (size_t)sb->n * sd->ncols * 2) ||
	    !(p = sec_put(w, BLOCK_HEADER_SIZE)))
		return -1;
	put_u32(p, s);
	put_u32(p + 4, sb->n);
	put_u32(p + 8, w->checkpoint);
	put_u32(p + 12, sd->ncols);
	put_u64(p + 16, sb->first);
	put_u64(p + 24, sb->last);
	for (c = 0; c < sd->ncols; c++) {
		size_t at = w->sec.len;

		if (column_encode(&w->sec, sd->cols, c, sb->vals, w->keyidx, w->keyn, sb->n, &w->scratch))
			return -1;
		if (w->measure && measure_column(w, s, c, at))
			return -1;
		ncuts = cut_column(w->sec.data + at, cuts, ncuts, (uint32_t)w->sec.len, c + 1 == sd->ncols);
	}
	if (write_section(w, TAG_BLOCK, &e, cuts, ncuts))
		return -1;
	w->st.written += sb->n;
	w->st.events[s] += sb->n;
	sb->n = 0;
	w->st.blocks++;
	return 0;
}

static __attribute__((noinline)) int checkpoint(struct ingero_writer *w)
{
	unsigned s;

	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (end_block(w, s))
			return -1;
	w->checkpoint++;
	return 0;
}

/* What stream s's string field at off is, as a thread's comm; NULL when it is none. */
static const struct comm_field *comm_field_of(unsigned s, uint16_t off)
{
	size_t i;

	for (i = 0; i < sizeof(comm_fields) / sizeof(comm_fields[0]); i++)
		if (comm_fields[i].stream == s && comm_fields[i].comm == off)
			return &comm_fields[i];
	return NULL;
}

/*
 * The heads of a comm slot that a stream lacks, read through no_comm_at,
 * and of a NULL comm, which has no NUL so that its id is put at once.
 */
static const char no_comm[STRCACHE_HEAD] __attribute__((aligned(STRCACHE_HEAD)));
static const char *const no_comm_at = no_comm;
static const char null_comm[STRCACHE_HEAD] __attribute__((aligned(STRCACHE_HEAD))) = {
	[0 ... STRCACHE_HEAD - 1] = 1
};

/* Gives stream s arrays for room events, which keep the values of its events so far. */
static int stream_alloc(struct stream_buf *sb, unsigned s, uint32_t room)
{
	const struct stream_def *sd = &stream_defs[s];
	size_t stride = COLUMN_STRIDE_FOR(room);
	uint64_t *vals = block_alloc(sd->ncols * stride * sizeof(*vals) + EVENT_ROWS * sizeof(*sb->rows)), *old;
	unsigned c;

	if (!vals)
		return error_errno("cannot allocate the '%s' stream's columns", sd->name);
	old = sb->vals[0];
	for (c = 0; c < sd->ncols; c++) {
		if (sb->n)
			memcpy(vals + c * stride, sb->vals[c], sb->n * sizeof(*vals));
		sb->vals[c] = vals + c * stride;
	}
	free(old);
	sb->rows = (struct ingero_event *)(vals + sd->ncols * stride);
	sb->room = room;
	sb->nfields = sb->ncomms = sb->nplain = 0;
	for (c = 0; c < sd->ncols; c++) {
		const struct column_def *d = &sd->cols[c];
		const struct comm_field *cf = d->type == TYPE_STRING ? comm_field_of(s, d->off) : NULL;

		if (d->type != TYPE_STRING)
			sb->fields[sb->nfields++] = (struct wfield){ sb->vals[c], d->off, d->type };
		else if (!cf)
			sb->plain[sb->nplain++] = (struct wstring){ sb->vals[c], d->off, NO_FIELD, NO_FIELD };
		else if (sb->ncomms < COMM_SLOTS)
			sb->comms[sb->ncomms++] = (struct wstring){ sb->vals[c], d->off, cf->tid, cf->cpu };
		else
			BUG("stream '%s' has more than %d comms", sd->name, COMM_SLOTS);
	}
	for (c = 0; c < COMM_SLOTS; c++) {
		sb->head_src[c].ev_mask = c < sb->ncomms ? UINTPTR_MAX : 0;
		sb->head_src[c].at = c < sb->ncomms ? sb->comms[c].off : (uintptr_t)&no_comm_at;
	}
	return 0;
}

/* Gives the writer scratch arrays for blocks of most events, in place of those it had. */
static int scratch_alloc(struct ingero_writer *w, uint32_t most)
{
	unsigned s, c, ncols = 0;

	column_scratch_release(&w->scratch);
	free(w->keyidx[0]);
	w->keyidx[0] = NULL;
	if (column_scratch_init(&w->scratch, 1, most))
		return -1;
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (stream_defs[s].ncols > ncols)
			ncols = stream_defs[s].ncols;
	if (!(w->keyidx[0] = block_alloc(ncols * most * sizeof(*w->keyidx[0]))))
		return error_errno("cannot allocate a trace writer");
	for (c = 1; c < ncols; c++)
		w->keyidx[c] = w->keyidx[0] + c * most;
	w->most = most;
	return 0;
}

/* Stream s has filled its arrays: ends its block, or gives it arrays for whole blocks. */
static __attribute__((noinline)) int stream_full(struct ingero_writer *w, unsigned s)
{
	if (w->s[s].room == BLOCK_MAX_EVENTS)
		return end_block(w, s);
	if (w->most < BLOCK_MAX_EVENTS && scratch_alloc(w, BLOCK_MAX_EVENTS))
		return -1;
	return stream_alloc(&w->s[s], s, BLOCK_MAX_EVENTS);
}

struct ingero_writer *ingero_writer_new(int fd, const struct ingero_header *h)
{
	struct ingero_writer *w = calloc(1, sizeof(*w));
	size_t i;

	if (!w) {
		error_errno("cannot allocate a trace writer");
		return NULL;
	}
	w->fd = fd;
	w->failed = 1;
	w->checkpoint_ns = -CHECKPOINT_NS;
	for (i = 0; i < sizeof(w->strcache) / sizeof(w->strcache[0]); i++)
		w->strcache[i].key = STRCACHE_NO_KEY;
	if (scratch_alloc(w, FIRST_ROWS))
		goto fail;
	w->nidle = idle_cpus(h->ncpus);
	if (!(w->idle = idle_comms_new(h->ncpus))) {
		error_errno("cannot allocate a trace writer");
		goto fail;
	}
	if (!(w->cctx = ZSTD_createCCtx())) {
		error("cannot create a zstd context");
		goto fail;
	}
	/* no zstd content checksum: each section's CRC32C guards the same bytes */
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_hashLog, ZSTD_HASH_LOG);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_windowLog, ZSTD_WINDOW_LOG);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_minMatch, ZSTD_MIN_MATCH);
#ifdef ZSTD_c_stableInBuffer
	/* zstd reads the section where it lies, not from a copy in a buffer of its own */
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_stableInBuffer, 1);
#endif
	if (write_header(w, h))
		goto fail;
	w->failed = 0;
	return w;
fail:
	ingero_writer_close(w);
	return NULL;
}

/* The id of event i's comm in slot c, ev's, which does not end within its head: put in its column now. */
static __attribute__((noinline, cold)) int comm_now(struct ingero_writer *w, struct stream_buf *sb, unsigned c,
						   uint32_t i, const struct ingero_event *ev)
{
	const struct wstring *f = &sb->comms[c];
	int64_t id = strtab_intern(&w->strings, *(const char *const *)((const char *)ev + f->off));

	if (id < 0)
		return -1;
	f->vals[i] = (uint64_t)id;
	return 0;
}

/* Keeps the heads of the comms of event i, ev, without a branch on which comms it has; -1 on failure. */
static int heads_put(struct ingero_writer *w, struct stream_buf *sb, uint32_t i, const struct ingero_event *ev)
{
	unsigned c;

#pragma GCC unroll 2
	for (c = 0; c < COMM_SLOTS; c++) {
		uintptr_t p;

		memcpy(&p, (const char *)(((uintptr_t)ev & sb->head_src[c].ev_mask) + sb->head_src[c].at), sizeof(p));
		p = p ? p : (uintptr_t)null_comm;
		if (!head_take(sb->heads[i % EVENT_ROWS][c], (const char *)p) && comm_now(w, sb, c, i, ev))
			return -1;
	}
	return 0;
}

/* The ids of event i's strings other than comms, ev's, put in their columns; -1 on failure. */
static __attribute__((noinline)) int plain_put(struct ingero_writer *w, struct stream_buf *sb, uint32_t i, const struct ingero_event *ev)
{
	const struct wstring *f;

	for (f = sb->plain; f < sb->plain + sb->nplain; f++) {
		int64_t id = strtab_intern(&w->strings, *(const char *const *)((const char *)ev + f->off));

		if (id < 0)
			return -1;
		f->vals[i] = (uint64_t)id;
	}
	return 0;
}

int ingero_writer_add(struct ingero_writer *w, const struct ingero_event *ev)
{
	const struct stream_def *sd;
	struct stream_buf *sb;
	uint64_t key = ingero_event_key(ev);
	uint32_t i;

	if (w->failed | w->ended)	/* | rather than ||: one branch, for a test that never holds as events come */
		return -1;
	if (ev->stream >= INGERO_NR_STREAMS)
		return error("event of unknown stream %u", ev->stream);
	sd = &stream_defs[ev->stream];
	sb = &w->s[ev->stream];
	/* a stream's last key is 0 before its first event */
	if (key < sb->last) {
		/* said for the first only: a caller that counts what it added knows how many more */
		if (!w->refused++)
			error("'%s' event at %llu ns comes after one at %llu ns", sd->name,
			      (unsigned long long)key, (unsigned long long)sb->last);
		return -1;
	}
	/* the first event begins the first checkpoint */
	if (key >= w->checkpoint_ns + CHECKPOINT_NS) {
		if (w->checkpoint_ns != -CHECKPOINT_NS && checkpoint(w))
			goto fail;
		w->checkpoint_ns = key;
	}
	if (!sb->vals[0] && stream_alloc(sb, ev->stream, FIRST_ROWS))
		goto fail;
	i = sb->n;
	sb->rows[i % EVENT_ROWS] = *ev;
	if (heads_put(w, sb, i, ev) || (sb->nplain && plain_put(w, sb, i, ev)))
		goto fail;
	if (!i) {
		sb->first = key;
		if (!w->st.events[ev->stream])
			w->since[ev->stream] = key;
	}
	sb->last = key;
	sb->n = i + 1;
	if (!(sb->n % EVENT_ROWS) && rows_put(w, sb, i + 1 - EVENT_ROWS, EVENT_ROWS))
		goto fail;
	if (sb->n == sb->room && stream_full(w, ev->stream))
		goto fail;
	return 0;
fail:
	w->failed = 1;
	return -1;
}

int ingero_writer_flush(struct ingero_writer *w)
{
	if (w->failed)
		return -1;
	if (checkpoint(w)) {
		w->failed = 1;
		return -1;
	}
	return 0;
}

/* The counts and time span, summed over the streams here rather than as each event comes. */
void ingero_writer_stats(const struct ingero_writer *w, struct ingero_trace_stats *st)
{
	unsigned s, any = 0;

	*st = w->st;
	st->bytes = w->offset;
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		const struct stream_buf *sb = &w->s[s];

		st->events[s] += sb->n;
		if (!st->events[s])
			continue;
		if (!any++ || w->since[s] < st->first_ns)
			st->first_ns = w->since[s];
		if (sb->last > st->last_ns)
			st->last_ns = sb->last;
	}
}

/* The footer: a skippable frame holding the index section and a trailer that locates it from the end. */
static int write_index(struct ingero_writer *w)
{
	size_t i, len = INDEX_HEAD_SIZE + w->nindex * INDEX_ENTRY_SIZE;
	uint8_t *p;

	w->sec.len = 0;
	if (buf_grow(&w->sec, 8 + SECTION_HEADER_SIZE + len + TRAILER_SIZE))
		return -1;
	p = w->sec.data + 8 + SECTION_HEADER_SIZE;
	put_u32(p, (uint32_t)w->nindex);
	put_u32(p + 4, INDEX_ENTRY_SIZE);
	for (i = 0, p += INDEX_HEAD_SIZE; i < w->nindex; i++, p += INDEX_ENTRY_SIZE) {
		const struct index_entry *e = &w->index[i];

		put_u64(p, e->offset);
		put_u32(p + 8, e->size);
		put_u32(p + 12, e->blockno);
		put_u32(p + 16, e->kind);
		put_u32(p + 20, e->stream);
		put_u32(p + 24, e->count);
		put_u32(p + 28, e->checkpoint);
		put_u64(p + 32, e->first);
		put_u64(p + 40, e->last);
	}
	section_seal(w->sec.data + 8, TAG_INDEX, (uint32_t)len, w->blockno);
	put_u32(w->sec.data, SKIPPABLE_MAGIC);
	put_u32(w->sec.data + 4, (uint32_t)(SECTION_HEADER_SIZE + len + TRAILER_SIZE));
	put_u64(p, 8 + SECTION_HEADER_SIZE + len + TRAILER_SIZE);
	memcpy(p + 8, TRAILER_MAGIC, 8);
	if (write_all(w->fd, w->sec.data, 8 + SECTION_HEADER_SIZE + len + TRAILER_SIZE))
		return error_errno("cannot write the trace");
	w->offset += 8 + SECTION_HEADER_SIZE + len + TRAILER_SIZE;
	return 0;
}

int ingero_writer_end(struct ingero_writer *w)
{
	if (!w->ended) {
		w->ended = 1;
		if (ingero_writer_flush(w) || write_index(w))
			w->failed = 1;
	}
	return w->failed ? -1 : 0;
}

int ingero_writer_close(struct ingero_writer *w)
{
	int ret = ingero_writer_end(w);
	unsigned s;

	for (s = 0; s < INGERO_NR_STREAMS; s++)
		free(w->s[s].vals[0]);
	free(w->keyidx[0]);
	strtab_release(&w->strings);
	free(w->idle);
	buf_release(&w->sec);
	buf_release(&w->out);
	column_scratch_release(&w->scratch);
	ZSTD_freeCCtx(w->cctx);
	free(w->index);
	free(w);
	return ret;
}
