/*
 * The trace writer: buffers each stream's events as columns, ends the
 * blocks when they fill and at every checkpoint, and appends each block as
 * one zstd frame, so the file is readable up to its last whole frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
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
 * section (some 700 KiB for 65536 events) fits zstd's input buffer whole:
 * zstd no longer wraps around it, nor takes its slower path for matches
 * across the wrap. zstd shrinks the window to the size of a smaller section.
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
 * and its NUL, so that the compare reads no string table.
 */
#define STRCACHE_BITS 10
#define STRCACHE_HEAD 16
_Static_assert(STRCACHE_HEAD == INGERO_COMM_LEN, "a slot's head holds a comm, as the idle tasks' names are kept");
struct strcache_slot {
	uint32_t tid, id;	/* id 0: empty */
	char head[STRCACHE_HEAD];	/* NUL-padded; the whole string when it ends within */
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
 * What a row keeps of an event: its first ROW_HEAD bytes, where the fields
 * of every stream but the calls end, and the rest only for a stream whose
 * fields reach past them, so that the others do not read the cache lines
 * of what they lack.
 */
#define ROW_HEAD 56
_Static_assert(ROW_HEAD <= sizeof(struct ingero_event), "a row's head is part of an event");

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
	struct wstring strings[MAX_COLUMNS];
	unsigned nfields, nstrings;
	int wide;	/* its rows keep whole events, not their heads */
	uint32_t n, room;	/* events in the block, and that its arrays hold */
	uint64_t first, last;
	/* EVENT_ROWS, after the columns: events n - n % EVENT_ROWS.. n, not yet in fields' columns */
	struct ingero_event *rows;
};

struct ingero_writer {
	int fd, failed, ended;
	uint64_t refused;	/* events out of order */
	ZSTD_CCtx *cctx;
	uint64_t offset;
	uint32_t blockno, checkpoint;
	uint64_t checkpoint_ns, total;
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
	struct ingero_trace_stats st;
	struct column_bytes *measure;
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

/* The cache slot of tid's comm, emptied if it held another's. */
static struct strcache_slot *strcache_slot(struct ingero_writer *w, uint32_t tid)
{
	struct strcache_slot *e = &w->strcache[(uint32_t)(tid * 0x9e3779b9u) >> (32 - STRCACHE_BITS)];

	if (e->tid != tid)
		e->tid = tid, e->id = 0;
	return e;
}

/* Keeps string id of t in slot e: the id, and the head that a compare reads. */
static void strcache_keep(struct strcache_slot *e, const struct strtab *t, uint32_t id)
{
	uint32_t len = strtab_len(t, id);

	memset(e->head, 0, sizeof(e->head));
	memcpy(e->head, t->bytes.data + t->off[id - 1], len < sizeof(e->head) ? len : sizeof(e->head));
	e->id = id;
}

/*
 * Whether str is the string whose first STRCACHE_HEAD bytes, NUL-padded,
 * are head: 1 or 0, or -1 where head does not end within them. str is read
 * 16 bytes at once, past its end but not past its page, as strlen reads
 * it: no address check for that.
 */
#if defined(__SSE2__)
static inline __attribute__((no_sanitize_address)) int head_match(const char *head, const char *str)
{
	__m128i h = _mm_loadu_si128((const __m128i *)head);
	unsigned differ, end = _mm_movemask_epi8(_mm_cmpeq_epi8(h, _mm_setzero_si128()));

	if (!end)
		return -1;
	if (((uintptr_t)str & 4095) > 4096 - STRCACHE_HEAD)
		return !strcmp(head, str);
	differ = ~_mm_movemask_epi8(_mm_cmpeq_epi8(h, _mm_loadu_si128((const __m128i *)str)));
	/* equal up to and including head's NUL */
	return !(differ & (end ^ (end - 1)));
}
#else
static int head_match(const char *head, const char *str)
{
	return memchr(head, 0, STRCACHE_HEAD) ? !strcmp(head, str) : -1;
}
#endif

/* Whether str is the string slot e keeps. */
static int strcache_holds(const struct strcache_slot *e, const struct strtab *t, const char *str)
{
	int match = head_match(e->head, str);

	return match >= 0 ? match : !strcmp((const char *)t->bytes.data + t->off[e->id - 1], str);
}

/* The id of str, the comm of thread tid; -1 on failure. */
static int64_t strcache_intern(struct ingero_writer *w, uint32_t tid, const char *str)
{
	struct strcache_slot *e;
	int64_t id;

	if (!str)
		return 0;
	e = strcache_slot(w, tid);
	if (e->id && strcache_holds(e, &w->strings, str))
		return e->id;
	if ((id = strtab_intern(&w->strings, str)) > 0)
		strcache_keep(e, &w->strings, (uint32_t)id);
	return id;
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
 * frame still decompresses to the one section.
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

/* Keeps ev as a row: whole for a wide stream, else its head. */
static void row_put(struct ingero_event *row, const struct ingero_event *ev, int wide)
{
	if (wide)
		*row = *ev;
	else
		memcpy(row, ev, ROW_HEAD);
}

/* The rows kept of a block that ends before they fill. */
static void rows_flush(struct stream_buf *sb)
{
	uint32_t m = sb->n % EVENT_ROWS;

	if (m)
		rows_to_columns(sb, sb->n - m, m);
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
	rows_flush(sb);
	if (write_strings(w) || sec_start(w, (size_t)sb->n * sd->ncols * 2) ||
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
	sb->n = 0;
	w->st.blocks++;
	return 0;
}

static int checkpoint(struct ingero_writer *w)
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
	sb->nfields = sb->nstrings = 0;
	for (c = 0; c < sd->ncols; c++) {
		const struct column_def *d = &sd->cols[c];

		if (d->off + (d->type == TYPE_U32 || d->type == TYPE_I32 ? 4 : 8) > ROW_HEAD)
			sb->wide = 1;
		if (d->type != TYPE_STRING)
			sb->fields[sb->nfields++] = (struct wfield){ sb->vals[c], d->off, d->type };
		else {
			const struct comm_field *cf = comm_field_of(s, d->off);

			sb->strings[sb->nstrings++] = (struct wstring){ sb->vals[c], d->off,
				cf ? cf->tid : NO_FIELD, cf ? cf->cpu : NO_FIELD };
		}
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
static int stream_full(struct ingero_writer *w, unsigned s)
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

	if (!w) {
		error_errno("cannot allocate a trace writer");
		return NULL;
	}
	w->fd = fd;
	w->failed = 1;
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
	if (write_header(w, h))
		goto fail;
	w->failed = 0;
	return w;
fail:
	ingero_writer_close(w);
	return NULL;
}

/*
 * Whether str is the name Linux gives the idle task of cpu, which the
 * trace keeps as the null string and the reader restores.
 */
static int idle_comm(const struct ingero_writer *w, uint32_t cpu, const char *str)
{
	return cpu < w->nidle && str && head_match(w->idle[cpu], str) > 0;
}

/* The string id of ev's string field f: 0 for NULL and for an idle task's name; -1 on failure. */
static int64_t string_id(struct ingero_writer *w, const struct ingero_event *ev, const struct wstring *f)
{
	const char *str = *(const char *const *)((const char *)ev + f->off);
	uint32_t tid;

	if (f->tid == NO_FIELD)
		return strtab_intern(&w->strings, str);
	tid = (uint32_t)field_value(ev, f->tid, TYPE_U32);
	if (!tid && f->cpu != NO_FIELD && idle_comm(w, (uint32_t)field_value(ev, f->cpu, TYPE_U32), str))
		return 0;
	return strcache_intern(w, tid, str);
}

int ingero_writer_add(struct ingero_writer *w, const struct ingero_event *ev)
{
	const struct stream_def *sd;
	struct stream_buf *sb;
	const struct wstring *f;
	uint64_t key = ingero_event_key(ev);
	uint32_t i;

	if (w->failed || w->ended)
		return -1;
	if (ev->stream >= INGERO_NR_STREAMS)
		return error("event of unknown stream %u", ev->stream);
	sd = &stream_defs[ev->stream];
	sb = &w->s[ev->stream];
	if (w->st.events[ev->stream] && key < sb->last) {
		/* said for the first only: a caller that counts what it added knows how many more */
		if (!w->refused++)
			error("'%s' event at %llu ns comes after one at %llu ns", sd->name,
			      (unsigned long long)key, (unsigned long long)sb->last);
		return -1;
	}
	if (!w->total)
		w->checkpoint_ns = w->st.first_ns = key;
	if (key >= w->checkpoint_ns + CHECKPOINT_NS) {
		if (checkpoint(w))
			goto fail;
		w->checkpoint_ns = key;
	}
	if (!sb->vals[0] && stream_alloc(sb, ev->stream, FIRST_ROWS))
		goto fail;
	i = sb->n;
	row_put(&sb->rows[i % EVENT_ROWS], ev, sb->wide);
	for (f = sb->strings; f < sb->strings + sb->nstrings; f++) {
		int64_t id = string_id(w, ev, f);

		if (id < 0)
			goto fail;
		f->vals[i] = (uint64_t)id;
	}
	if (!i)
		sb->first = key;
	sb->last = key;
	sb->n = i + 1;
	if (key < w->st.first_ns)
		w->st.first_ns = key;
	if (key > w->st.last_ns)
		w->st.last_ns = key;
	w->st.events[ev->stream]++;
	w->total++;
	if (!(sb->n % EVENT_ROWS))
		rows_to_columns(sb, i + 1 - EVENT_ROWS, EVENT_ROWS);
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

void ingero_writer_stats(const struct ingero_writer *w, struct ingero_trace_stats *st)
{
	*st = w->st;
	st->bytes = w->offset;
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
