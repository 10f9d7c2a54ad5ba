/*
 * The trace reader: finds the blocks through the footer's index (or by
 * scanning when the recorder died before writing it), decodes a block per
 * stream and merges the streams in time order. The file is hostile: every
 * length is checked before use and every allocation is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "format.h"
#include "../lib/error.h"
#include "../lib/trace.h"

/* What a read of the file in its order, frame after frame, takes at least: the window after is read with it. */
#define WINDOW_AHEAD (1u << 20)
#define FRAME_MAX (ZSTD_COMPRESSBOUND(SECTION_MAX) + 64)
#define NO_LIMIT UINT32_MAX
/* The streams next_batch() merges at a time: the call, switch and wakeup streams, in most traces. */
#define MERGED 3
/* The heads least() looks at, past any number of active streams. */
#define HEADS 8
/* The most events one merge ahead takes: what the merged streams' chunks hold. */
#define ORDER_MAX (MERGED * EVENT_CHUNK)
_Static_assert(INGERO_NR_STREAMS <= HEADS, "every stream has a head");
/* The loops that copy a chunk's fields: 16 stores and a compare at a time. */
#define UNROLL_FIELDS _Pragma("GCC unroll 16")
/* The checks of a block's values, a few instructions each, which a loop's own would add much to. */
#define UNROLL_SHORT _Pragma("GCC unroll 8")

struct fcol {
	struct column_def d;	/* as the file describes it */
	int ours;		/* our column of the same name and type, or -1 */
	int usable;		/* its encoding and what it depends on are known */
	/* a dict column's values are needed for each event (as a source, the time or strings), not just its entries */
	int values;
};

struct fstream {
	const char *name;
	int known;		/* enum ingero_stream, or -1 */
	uint16_t ncols, sortkey;
	struct fcol *cols;
	struct column_def *defs;	/* cols[].d as one array, for the codecs */
};

struct blockref {
	uint64_t offset, first, last;
	uint32_t size, blockno, kind, stream, count;
};

/* A field's values, or a dict column's table of values and each event's entry in it. */
struct field {
	const uint64_t *vals;
	const uint16_t *entries;
	uint16_t off;
};

/*
 * The fields an event is assembled from, one list per width and source so
 * that the loops do not branch. A dict column's table and entries take less
 * memory to stream through than its values would.
 */
enum { FIELD_32, FIELD_64, FIELD_STR, FIELD_DICT_32, FIELD_DICT_64, FIELD_KINDS };

/* A field decoded as the chunks reach it: a delta column that no other column needs whole. */
struct lazy_field {
	struct delta_lazy dl;
	const uint64_t *src;	/* the source column's values, when not its own */
	const uint16_t *key;	/* the key's entries, when keyed */
	uint16_t off;
	uint8_t wide;		/* a uint64_t field, else uint32_t */
};

/* Where one known stream stands: its blocks and the decoded one. */
struct cursor {
	uint32_t *blocks, nblocks, next;
	uint32_t most;		/* events in its largest block */
	uint32_t n, i;
	uint64_t *keys;
	uint64_t *vals[MAX_COLUMNS];	/* COLUMN_STRIDE_FOR(most) apart; vals[0] is the allocation */
	uint16_t *keyidx[MAX_COLUMNS];	/* a dict column's entry for each event */
	uint64_t *last[MAX_COLUMNS];	/* a lazy keyed column's state per key index */
	struct lazy_field lazy[MAX_COLUMNS];
	unsigned nlazy;
	struct buf sec;		/* the block's section, which the lazy fields read */
	struct field fields[FIELD_KINDS][MAX_COLUMNS];
	unsigned nfields[FIELD_KINDS];
	struct ingero_event *chunk;	/* EVENT_CHUNK events: chunk_at.. of the block, up to chunk_end */
	/* the last block's chunk, which holds the event returned last until the call after */
	struct ingero_event *chunk_prev;
	uint32_t chunk_at, chunk_end;
	/*
	 * Events i..fast_end - 1 are in the chunk and are not the block's last:
	 * next_one() hands them out without a call. ev is event i's place.
	 */
	uint32_t fast_end;
	const struct ingero_event *ev;
	uint64_t seek_ts;
	int seeking, done;
};

struct ingero_reader {
	/* first, where ingero_reader_next() finds it: within order, next..end are left to hand out */
	struct ingero_reader_ahead ahead;
	int fd, own_fd;
	char *name;
	uint64_t size;
	ZSTD_DCtx *dctx;
	struct buf win, sec;
	uint64_t win_off;

	struct ingero_header h;
	char *arena;
	size_t arena_len, arena_size;

	struct fstream streams[MAX_STREAMS];
	unsigned nstreams;
	int stream_of[INGERO_NR_STREAMS];

	struct blockref *blocks;
	uint32_t nblocks, blocks_alloc;
	uint64_t data_end;	/* where the footer starts, or the file's end */
	int indexed;

	const char **strs;
	uint32_t nstrs, strs_alloc;
	char (*idle)[INGERO_COMM_LEN];	/* idle_comms_new(), nidle of them */
	uint32_t nidle;
	uint64_t str_bytes;
	char **chunks;
	uint32_t nchunks;

	struct cursor cur[INGERO_NR_STREAMS];
	/*
	 * The streams being read that have events left, in the order of their
	 * numbers, and the key of each one's next event: the next event of all
	 * is the least key's, found without a branch that the mix of the
	 * streams would make mispredicted. Past the last active stream the
	 * heads are UINT64_MAX, so that a search of all the heads needs no count.
	 */
	struct cursor *active[INGERO_NR_STREAMS];
	uint64_t head[HEADS];
	unsigned nactive;
	/* the events merged ahead by next_batch() */
	const struct ingero_event *order[ORDER_MAX];
	int ordered;
	uint32_t mask, limit, scan_limit;
	struct column_scratch scratch;
	uint32_t keyn[MAX_COLUMNS];
	char err[256], scan_err[256];
};

static void set_error(struct ingero_reader *r, const struct blockref *b, const char *fmt, ...)
	PRINTF(3, 4);

/* Records the first damage: the message, and that no block from b on is used. */
static void set_error(struct ingero_reader *r, const struct blockref *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->limit != NO_LIMIT && r->limit <= b->blockno)
		return;
	n = snprintf(r->err, sizeof(r->err), "block %" PRIu32 " at offset %" PRIu64 ": ", b->blockno, b->offset);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
	va_end(ap);
	r->limit = b->blockno;
}

/*
 * The file's bytes [off, off + want), fewer at its end; *got says how many.
 * At least ahead bytes are read, for the reads after in the file's order.
 * NULL on a read error.
 */
static const uint8_t *window_get(struct ingero_reader *r, uint64_t off, size_t want, size_t ahead, size_t *got)
{
	size_t len, have = 0;

	if (off >= r->size) {
		*got = 0;
		return r->win.data ? r->win.data : (const uint8_t *)"";
	}
	if (want > r->size - off)
		want = r->size - off;
	if (off >= r->win_off && off + want <= r->win_off + r->win.len) {
		*got = want;
		return r->win.data + (off - r->win_off);
	}
	len = want < ahead ? ahead : want;
	if (len > r->size - off)
		len = r->size - off;
	r->win.len = 0;
	if (buf_grow(&r->win, len))
		return NULL;
	while (have < len) {
		ssize_t n = pread(r->fd, r->win.data + have, len - have, off + have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error_errno("cannot read '%s'", r->name);
			return NULL;
		}
		if (!n)
			break;
		have += n;
	}
	r->win_off = off;
	r->win.len = have;
	*got = want < have ? want : have;
	return r->win.data;
}

/*
 * Decompresses the frame of b (size 0: not yet known, found here) into
 * r->sec and checks its section (of any tag for 0). NULL, or what is wrong:
 * in why when it is a zstd frame cut short or that does not decompress.
 */
static const char *read_frame(struct ingero_reader *r, struct blockref *b, uint32_t tag, char *why, size_t whylen)
{
	size_t want = b->size ? b->size : 64 << 10, got, fsize, out;
	unsigned long long content;
	const uint8_t *p;
	const char *bad;

	for (;;) {
		/* a block whose size the index gives is read alone: the blocks come in the order of time, not of the file */
		if (!(p = window_get(r, b->offset, want, b->size ? 0 : WINDOW_AHEAD, &got)))
			return "read error";
		fsize = ZSTD_findFrameCompressedSize(p, got);
		if (!ZSTD_isError(fsize))
			break;
		if (ZSTD_getErrorCode(fsize) != ZSTD_error_srcSize_wrong || b->size)
			return "not a zstd frame";
		if (got < want) {
			snprintf(why, whylen, "truncated at offset %" PRIu64, r->size);
			return why;
		}
		if (want >= FRAME_MAX)
			return "frame too large";
		want *= 4;
	}
	if (b->size && fsize != b->size)
		return "frame size does not match the index";
	content = ZSTD_getFrameContentSize(p, fsize);
	if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR ||
	    content > SECTION_MAX + SECTION_HEADER_SIZE || content < SECTION_HEADER_SIZE)
		return "frame of a bad size";
	r->sec.len = 0;
	if (buf_grow(&r->sec, content))
		return "out of memory";
	out = ZSTD_decompressDCtx(r->dctx, r->sec.data, content, p, fsize);
	if (ZSTD_isError(out)) {
		if (ZSTD_getErrorCode(out) == ZSTD_error_checksum_wrong)
			return "checksum mismatch";
		snprintf(why, whylen, "cannot decompress: %s", ZSTD_getErrorName(out));
		return why;
	}
	if (out != content)
		return "frame shorter than it says";
	r->sec.len = out;
	b->size = (uint32_t)fsize;
	if ((bad = section_check(r->sec.data, out, tag ? tag : get_u32(r->sec.data))))
		return bad;
	if (get_u32(r->sec.data + 8) != b->blockno)
		return "block out of sequence";
	return NULL;
}

/* A bounds-checked cursor over a section's payload. */
struct in {
	const uint8_t *p, *end;
	int bad;
};

static const uint8_t *in_take(struct in *in, size_t n)
{
	const uint8_t *p = in->p;

	if (in->bad || (size_t)(in->end - in->p) < n) {
		in->bad = 1;
		return NULL;
	}
	in->p += n;
	return p;
}

static uint32_t in_u32(struct in *in)
{
	const uint8_t *p = in_take(in, 4);

	return p ? get_u32(p) : 0;
}

/* A header string, copied NUL-terminated into the arena (sized so that it cannot overflow). */
static const char *in_str(struct ingero_reader *r, struct in *in)
{
	uint32_t len = in_u32(in);
	const uint8_t *p = in_take(in, len);
	char *s;

	if (!p || r->arena_len + len + 1 > r->arena_size) {
		in->bad = 1;
		return "";
	}
	s = r->arena + r->arena_len;
	memcpy(s, p, len);
	s[len] = 0;
	r->arena_len += len + 1;
	return s;
}

static void parse_apis(struct ingero_reader *r, struct in *in)
{
	struct ingero_api *apis;
	uint32_t i, j;

	r->h.napis = in_u32(in);
	/* each API takes at least 24 bytes, which bounds the allocation */
	if (r->h.napis > MAX_APIS || r->h.napis > (size_t)(in->end - in->p) / 24) {
		in->bad = 1;
		r->h.napis = 0;
		return;
	}
	apis = calloc(r->h.napis ? r->h.napis : 1, sizeof(*apis));
	if (!apis) {
		in->bad = 1;
		r->h.napis = 0;
		return;
	}
	r->h.apis = apis;
	for (i = 0; i < r->h.napis && !in->bad; i++) {
		struct ingero_api *a = &apis[i];

		a->name = in_str(r, in);
		a->lib = in_str(r, in);
		a->set = in_str(r, in);
		a->ret_type = in_str(r, in);
		a->role = in_u32(in);
		a->nargs = in_u32(in);
		if (a->nargs > INGERO_MAX_ARGS) {
			in->bad = 1;
			a->nargs = 0;
		}
		for (j = 0; j < a->nargs; j++) {
			a->args[j].type = in_str(r, in);
			a->args[j].name = in_str(r, in);
			a->args[j].kind = in_u32(in);
		}
	}
}

/* A word of flags per API, after the schema. */
static void parse_api_flags(struct ingero_reader *r, struct in *in)
{
	struct ingero_api *apis = (struct ingero_api *)r->h.apis;
	uint32_t i;

	for (i = 0; i < r->h.napis; i++)
		apis[i].flags = in_u32(in);
}

/* Whether column k of fs, one that column c is keyed or grouped by, is a usable dict column before c. */
static int dict_before(const struct fstream *fs, unsigned k, unsigned c)
{
	return k < c && fs->cols[k].d.enc == ENC_DICT && fs->cols[k].usable;
}

static int column_usable(const struct fstream *fs, unsigned c)
{
	const struct column_def *d = &fs->cols[c].d;

	if (d->type < TYPE_U32 || d->type > TYPE_STRING || d->enc < ENC_DELTA || d->enc > ENC_RLE)
		return 0;
	if ((d->key != COL_NONE && !dict_before(fs, d->key, c)) ||
	    (d->group != COL_NONE && (d->enc == ENC_RLE || !dict_before(fs, d->group, c))))
		return 0;
	if (d->enc != ENC_DELTA)
		return 1;
	if (d->flags & PRED_SAME)
		return d->src < c && fs->cols[d->src].usable;
	return d->src == COL_NONE || (d->src < c && fs->cols[d->src].usable);
}

/* Matches the file's columns with ours by name and type. */
static void map_stream(struct fstream *fs)
{
	const struct stream_def *sd;
	unsigned c, o;
	int s = ingero_stream_by_name(fs->name);

	fs->known = -1;
	for (c = 0; c < fs->ncols; c++) {
		fs->cols[c].ours = -1;
		fs->cols[c].usable = column_usable(fs, c);
		fs->cols[c].values = c == fs->sortkey || fs->cols[c].d.type == TYPE_STRING;
	}
	for (c = 0; c < fs->ncols; c++)
		if (fs->cols[c].d.enc == ENC_DELTA && fs->cols[c].d.src < fs->ncols)
			fs->cols[fs->cols[c].d.src].values = 1;
	if (s < 0)
		return;
	sd = &stream_defs[s];
	for (c = 0; c < fs->ncols; c++)
		for (o = 0; o < sd->ncols; o++)
			if (!strcmp(sd->cols[o].name, fs->cols[c].d.name) && sd->cols[o].type == fs->cols[c].d.type)
				fs->cols[c].ours = (int)o;
	/* without a usable time column of its own a stream cannot be merged */
	if (fs->sortkey < fs->ncols && fs->cols[fs->sortkey].usable &&
	    fs->cols[fs->sortkey].d.type == TYPE_U64 && fs->cols[fs->sortkey].ours >= 0)
		fs->known = s;
}

static void parse_schema(struct ingero_reader *r, struct in *in)
{
	unsigned s, c;

	r->nstreams = in_u32(in);
	if (r->nstreams > MAX_STREAMS) {
		in->bad = 1;
		r->nstreams = 0;
		return;
	}
	for (s = 0; s < r->nstreams && !in->bad; s++) {
		struct fstream *fs = &r->streams[s];
		const uint8_t *p;

		fs->name = in_str(r, in);
		if (!(p = in_take(in, 4)))
			break;
		fs->ncols = get_u16(p);
		fs->sortkey = get_u16(p + 2);
		if (fs->ncols > MAX_COLUMNS) {
			in->bad = 1;
			fs->ncols = 0;
			break;
		}
		fs->cols = calloc(fs->ncols + 1, sizeof(*fs->cols));
		fs->defs = calloc(fs->ncols + 1, sizeof(*fs->defs));
		if (!fs->cols || !fs->defs) {
			in->bad = 1;
			fs->ncols = 0;
			break;
		}
		for (c = 0; c < fs->ncols && !in->bad; c++) {
			struct column_def *d = &fs->cols[c].d;

			d->name = in_str(r, in);
			d->unit = in_str(r, in);
			if (!(p = in_take(in, COLUMN_DEF_SIZE)))
				break;
			d->type = p[0];
			d->enc = p[1];
			d->flags = p[2];
			d->key = get_u16(p + 4);
			d->src = get_u16(p + 6);
			d->group = get_u16(p + 8);
		}
		if (in->bad)
			break;
		map_stream(fs);
		for (c = 0; c < fs->ncols; c++)
			fs->defs[c] = fs->cols[c].d;
	}
}

static int parse_header(struct ingero_reader *r)
{
	const uint8_t *sec = r->sec.data;
	size_t len = r->sec.len - SECTION_HEADER_SIZE;
	struct in in = { sec + SECTION_HEADER_SIZE, sec + r->sec.len, 0 };
	const uint8_t *p = in_take(&in, 36);
	unsigned s;

	if (!p || memcmp(p, FORMAT_MAGIC, FORMAT_MAGIC_LEN))
		return error("'%s' is not an ingero trace", r->name);
	if (get_u16(p + 8) != FORMAT_MAJOR)
		return error("'%s' is a version %u trace; this ingero reads version %u only (read it with the ingero "
			     "that wrote it)", r->name, get_u16(p + 8), FORMAT_MAJOR);
	r->h.ncpus = get_u32(p + 16);
	r->h.start_ns = get_u64(p + 20);
	r->h.realtime_ns = get_u64(p + 28);
	/* each string costs at least its 4-byte length, so this bounds the copies */
	r->arena_size = len + len / 4 + 16;
	if (!(r->arena = malloc(r->arena_size)))
		return error_errno("cannot read the header of '%s'", r->name);
	r->h.host = in_str(r, &in);
	r->h.kernel = in_str(r, &in);
	r->h.clock = in_str(r, &in);
	r->h.boot_id = in_str(r, &in);
	r->h.command = in_str(r, &in);
	parse_apis(r, &in);
	parse_schema(r, &in);
	parse_api_flags(r, &in);
	if (in.bad)
		return error("'%s': block 0 at offset 0: malformed header", r->name);
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		r->stream_of[s] = -1;
	for (s = r->nstreams; s-- > 0;)
		if (r->streams[s].known >= 0)
			r->stream_of[r->streams[s].known] = (int)s;
	return 0;
}

/* Adds the strings of the section in r->sec; they must continue the ids. */
static const char *load_strings(struct ingero_reader *r)
{
	struct in in = { r->sec.data + SECTION_HEADER_SIZE, r->sec.data + r->sec.len, 0 };
	uint32_t first = in_u32(&in), count = in_u32(&in), i;
	size_t size = r->sec.len;
	char *chunk, **chunks, *q;

	if (in.bad || first != r->nstrs || count > (size_t)(in.end - in.p) / 4)
		return "strings out of sequence";
	if (r->nstrs + (uint64_t)count > STRINGS_MAX_COUNT || r->str_bytes + size > STRINGS_MAX_BYTES)
		return "too many strings";
	if (r->nstrs + count > r->strs_alloc) {
		uint32_t a = r->strs_alloc;
		const char **s;

		while (a < r->nstrs + count)
			a *= 2;
		if (!(s = realloc(r->strs, a * sizeof(*s))))
			return "out of memory";
		r->strs = s;
		r->strs_alloc = a;
	}
	if (!(chunks = realloc(r->chunks, (r->nchunks + 1) * sizeof(*chunks))))
		return "out of memory";
	r->chunks = chunks;
	if (!(chunk = malloc(size)))
		return "out of memory";
	for (q = chunk, i = 0; i < count; i++) {
		uint32_t len = in_u32(&in);
		const uint8_t *p = in_take(&in, len);

		if (!p || memchr(p, 0, len)) {
			free(chunk);
			return "bad string";
		}
		memcpy(q, p, len);
		q[len] = 0;
		r->strs[first + i] = q;
		q += len + 1;
	}
	if (in.p != in.end) {
		free(chunk);
		return "strings section has trailing bytes";
	}
	r->chunks[r->nchunks++] = chunk;
	r->nstrs += count;
	r->str_bytes += size;
	return NULL;
}

static int blocks_add(struct ingero_reader *r, const struct blockref *b)
{
	if (r->nblocks == r->blocks_alloc) {
		uint32_t a = r->blocks_alloc ? 2 * r->blocks_alloc : 64;
		struct blockref *p;

		if (a > INDEX_MAX_ENTRIES || !(p = realloc(r->blocks, a * sizeof(*p))))
			return -1;
		r->blocks = p;
		r->blocks_alloc = a;
	}
	r->blocks[r->nblocks++] = *b;
	return 0;
}

/* What the block section in r->sec says of itself, checked against the schema. */
static const char *block_summary(struct ingero_reader *r, struct blockref *b)
{
	const uint8_t *p = r->sec.data + SECTION_HEADER_SIZE;

	if (r->sec.len < SECTION_HEADER_SIZE + BLOCK_HEADER_SIZE)
		return "block too short";
	b->stream = get_u32(p);
	b->count = get_u32(p + 4);
	b->first = get_u64(p + 16);
	b->last = get_u64(p + 24);
	if (b->stream >= r->nstreams)
		return "block of a stream the header does not list";
	if (!b->count || b->count > BLOCK_MAX_EVENTS || b->first > b->last)
		return "bad block header";
	return NULL;
}

/* Adds the section in r->sec, read from b, to what the reader knows. */
static const char *take_section(struct ingero_reader *r, struct blockref *b)
{
	const char *bad = NULL;

	switch (get_u32(r->sec.data)) {
	case TAG_STRINGS:
		b->kind = INDEX_STRINGS;
		bad = load_strings(r);
		break;
	case TAG_BLOCK:
		b->kind = INDEX_BLOCK;
		bad = block_summary(r, b);
		break;
	case TAG_HEADER:
	case TAG_INDEX:
		return "unexpected section";
	default:	/* a section of a later version: skipped */
		return NULL;
	}
	if (!bad && blocks_add(r, b))
		bad = "too many blocks";
	return bad;
}

/* Whether the got bytes at p start a skippable frame: as much of its magic as they hold matches. */
static int skippable_start(const uint8_t *p, size_t got)
{
	uint8_t magic[4];

	put_u32(magic, SKIPPABLE_BASE);
	return got && (p[0] & 0xf0) == magic[0] && !memcmp(p + 1, magic + 1, (got < 4 ? got : 4) - 1);
}

/* Rebuilds the index by reading every frame: the footer is missing or damaged. */
static void scan(struct ingero_reader *r, uint64_t off)
{
	struct blockref b = { .offset = off, .blockno = 1 };
	char why[128];

	while (b.offset < r->size) {
		size_t got;
		const uint8_t *p = window_get(r, b.offset, 8, WINDOW_AHEAD, &got);
		const char *bad;

		if (!p) {
			set_error(r, &b, "read error");
			return;
		}
		if (skippable_start(p, got)) {
			/* cut short by the file's end: a footer the recorder did not finish, and no events */
			if (got < 8 || get_u32(p + 4) > r->size - b.offset - 8)
				return;
			b.offset += 8 + (uint64_t)get_u32(p + 4);
			continue;
		}
		b.size = 0;
		if (!(bad = read_frame(r, &b, 0, why, sizeof(why))))
			bad = take_section(r, &b);
		if (bad) {
			set_error(r, &b, "%s", bad);
			return;
		}
		b.offset += b.size;
		b.blockno++;
	}
}

/* Reads the footer's index; 0 when the file has a sound one. */
static int read_index(struct ingero_reader *r, uint64_t data_start)
{
	size_t got;
	const uint8_t *p = r->size >= data_start + TRAILER_SIZE ?
		window_get(r, r->size - TRAILER_SIZE, TRAILER_SIZE, 0, &got) : NULL;
	uint64_t fsize, start, prev_end = data_start;
	uint32_t n, esize, i, blockno = 0;
	const uint8_t *sec, *e;

	if (!p || got != TRAILER_SIZE || memcmp(p + 8, TRAILER_MAGIC, 8))
		return -1;
	fsize = get_u64(p);
	if (fsize < 8 + SECTION_HEADER_SIZE + INDEX_HEAD_SIZE + TRAILER_SIZE || fsize > r->size - data_start ||
	    fsize > (uint64_t)INDEX_MAX_ENTRIES * INDEX_ENTRY_SIZE)
		return -1;
	start = r->size - fsize;
	if (!(p = window_get(r, start, fsize, 0, &got)) || got != fsize ||
	    get_u32(p) != SKIPPABLE_MAGIC || get_u32(p + 4) != fsize - 8)
		return -1;
	sec = p + 8;
	if (section_check(sec, fsize - 8 - TRAILER_SIZE, TAG_INDEX))
		return -1;
	n = get_u32(sec + SECTION_HEADER_SIZE);
	esize = get_u32(sec + SECTION_HEADER_SIZE + 4);
	if (esize < INDEX_ENTRY_SIZE || (uint64_t)n * esize != fsize - 8 - TRAILER_SIZE - SECTION_HEADER_SIZE - INDEX_HEAD_SIZE)
		return -1;
	for (i = 0, e = sec + SECTION_HEADER_SIZE + INDEX_HEAD_SIZE; i < n; i++, e += esize) {
		struct blockref b = {
			.offset = get_u64(e), .size = get_u32(e + 8), .blockno = get_u32(e + 12),
			.kind = get_u32(e + 16), .stream = get_u32(e + 20), .count = get_u32(e + 24),
			.first = get_u64(e + 32), .last = get_u64(e + 40),
		};

		if (b.offset < prev_end || b.size > FRAME_MAX || b.size > start - b.offset || b.blockno <= blockno ||
		    (b.kind != INDEX_STRINGS && b.kind != INDEX_BLOCK) ||
		    (b.kind == INDEX_BLOCK && (b.stream >= r->nstreams || !b.count ||
					       b.count > BLOCK_MAX_EVENTS || b.first > b.last))) {
			r->nblocks = 0;
			return -1;
		}
		prev_end = b.offset + b.size;
		blockno = b.blockno;
		if (blocks_add(r, &b)) {
			r->nblocks = 0;
			return -1;
		}
	}
	r->data_end = start;
	return 0;
}

/* With an index, the strings are read up front: the blocks of any time may use them. */
static void read_strings(struct ingero_reader *r)
{
	char why[128];
	uint32_t i;

	for (i = 0; i < r->nblocks; i++) {
		struct blockref *b = &r->blocks[i];
		const char *bad;

		if (b->kind != INDEX_STRINGS)
			continue;
		if (!(bad = read_frame(r, b, TAG_STRINGS, why, sizeof(why))))
			bad = load_strings(r);
		if (bad) {
			set_error(r, b, "%s", bad);
			return;
		}
	}
}

/*
 * Lists each stream's blocks up to the first damage. A stream's blocks
 * follow one another in time: one that begins before the one before it
 * ends is damage, which the time order of the events read stops at.
 */
static int setup_cursors(struct ingero_reader *r)
{
	uint32_t i;
	unsigned s;

	for (i = 0; i < r->nblocks; i++) {
		const struct blockref *b = &r->blocks[i];
		int known = b->kind == INDEX_BLOCK ? r->streams[b->stream].known : -1;
		struct cursor *c;

		if (known < 0 || r->stream_of[known] != (int)b->stream)
			continue;
		c = &r->cur[known];
		if (c->nblocks && b->first < r->blocks[c->blocks[c->nblocks - 1]].last)
			set_error(r, b, "begins before its stream's previous block ends");
		if (b->blockno >= r->limit)
			continue;
		if (!c->blocks && !(c->blocks = malloc(r->nblocks * sizeof(*c->blocks))))
			return error_errno("cannot read '%s'", r->name);
		c->blocks[c->nblocks++] = i;
		if (b->count > c->most)
			c->most = b->count;
	}
	for (s = 0; s < INGERO_NR_STREAMS; s++)
		r->cur[s].done = !r->cur[s].nblocks;
	return 0;
}

/* Events in the largest block of the streams read. */
static uint32_t largest_block(const struct ingero_reader *r)
{
	uint32_t most = 0;
	unsigned s;

	for (s = 0; s < INGERO_NR_STREAMS; s++)
		if (r->cur[s].most > most)
			most = r->cur[s].most;
	return most;
}

/* Forgets the events merged ahead: the next ingero_reader_next() merges anew. */
static void ahead_drop(struct ingero_reader *r)
{
	r->ahead.next = r->ahead.end = r->order;
}

struct ingero_reader *ingero_reader_open_fd(int fd, const char *name)
{
	struct ingero_reader *r = calloc(1, sizeof(*r));
	struct blockref head = { 0 };
	struct stat st;
	char why[128];
	const char *bad;

	if (!r) {
		error_errno("cannot read '%s'", name);
		return NULL;
	}
	ahead_drop(r);
	r->fd = fd;
	r->limit = NO_LIMIT;
	r->mask = (1u << INGERO_NR_STREAMS) - 1;
	if (!(r->name = strdup(name)) || !(r->dctx = ZSTD_createDCtx()) ||
	    !(r->strs = malloc(256 * sizeof(*r->strs)))) {
		error_errno("cannot read '%s'", name);
		goto fail;
	}
	r->strs[0] = NULL;
	r->nstrs = 1;
	r->strs_alloc = 256;
	if (fstat(fd, &st)) {
		error_errno("cannot stat '%s'", name);
		goto fail;
	}
	r->size = r->data_end = (uint64_t)st.st_size;
	if (S_ISDIR(st.st_mode)) {
		error("'%s' is a directory", name);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		error("'%s' is not a file: a trace is read out of order; save it to a file, or pipe it in as -", name);
		goto fail;
	}
	if (!r->size) {
		error("'%s' is empty", name);
		goto fail;
	}
	if ((bad = read_frame(r, &head, TAG_HEADER, why, sizeof(why)))) {
		set_error(r, &head, "%s", bad);
		/* a zstd frame that cannot be read whole hides the magic: a trace's header is taken to be damaged */
		if (bad == why)
			error("'%s' is damaged: %s", name, r->err);
		else
			error("'%s' is not an ingero trace (%s)", name, r->err);
		goto fail;
	}
	if (head.size > r->size || r->sec.len - SECTION_HEADER_SIZE > HEADER_MAX || parse_header(r))
		goto fail;
	r->nidle = idle_cpus(r->h.ncpus);
	if (!(r->idle = idle_comms_new(r->h.ncpus))) {
		error_errno("cannot read '%s'", name);
		goto fail;
	}
	r->indexed = !read_index(r, head.size);
	if (r->indexed)
		read_strings(r);
	else
		scan(r, head.size);
	if (setup_cursors(r) || column_scratch_init(&r->scratch, 0, largest_block(r)))
		goto fail;
	r->scan_limit = r->limit;
	memcpy(r->scan_err, r->err, sizeof(r->err));
	return r;
fail:
	r->own_fd = 0;
	ingero_reader_close(r);
	return NULL;
}

/* Copies what is left of standard input to fd: 0, or -1 with the error said. */
static int copy_stdin(int fd)
{
	char buf[1 << 16];
	ssize_t n;

	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
		if (write_all(fd, buf, n))
			return error_errno("cannot keep standard input in a temporary file");
	return n < 0 ? error_errno("cannot read standard input") : 0;
}

/*
 * Standard input as a file to read out of order: itself where it is one,
 * else (a pipe from 'record -o -', say) copied whole into an unnamed
 * temporary file. -1 with the error said.
 */
static int stdin_as_file(void)
{
	const char *dir = getenv("TMPDIR");
	struct stat st;
	int fd;

	if (fstat(STDIN_FILENO, &st))
		return error_errno("cannot read standard input");
	if (S_ISREG(st.st_mode))
		fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	else if (isatty(STDIN_FILENO))
		return error("standard input is a terminal: name a trace file, or pipe one in");
	else
		fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_errno("cannot keep standard input in a temporary file");
	if (!S_ISREG(st.st_mode) && copy_stdin(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct ingero_reader *ingero_reader_open(const char *path)
{
	struct ingero_reader *r;
	int fd;

	if (!strcmp(path, "-"))
		fd = stdin_as_file();
	/* not to wait for a writer on a FIFO, which is refused as not a file; a file's reads never block */
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		error_errno("cannot open '%s'", path);
	if (fd < 0)
		return NULL;
	if (!(r = ingero_reader_open_fd(fd, path))) {
		close(fd);
		return NULL;
	}
	r->own_fd = 1;
	return r;
}

const struct ingero_header *ingero_reader_header(const struct ingero_reader *r)
{
	return &r->h;
}

void ingero_reader_streams(struct ingero_reader *r, uint32_t mask)
{
	r->mask = mask;
	r->ordered = 0;
	r->nactive = 0;
	ahead_drop(r);
}

int ingero_reader_indexed(const struct ingero_reader *r)
{
	return r->indexed;
}

/* The arrays of a stream's ncols columns, in one allocation, and its chunk of assembled events. */
static int cursor_alloc(struct cursor *c, unsigned ncols)
{
	size_t stride = COLUMN_STRIDE_FOR(c->most);
	unsigned col;

	c->vals[0] = block_alloc(ncols * stride * sizeof(uint64_t));
	c->chunk = malloc(EVENT_CHUNK * sizeof(*c->chunk));
	c->chunk_prev = malloc(EVENT_CHUNK * sizeof(*c->chunk));
	if (!c->vals[0] || !c->chunk || !c->chunk_prev) {
		free(c->vals[0]);
		free(c->chunk);
		free(c->chunk_prev);
		c->vals[0] = NULL;
		c->chunk = c->chunk_prev = NULL;
		return -1;
	}
	for (col = 1; col < ncols; col++)
		c->vals[col] = c->vals[0] + col * stride;
	return 0;
}

/*
 * Sets up column col, whose record is at p, as a lazy field of c when it is
 * one: 1 when it is, 0 when it must be decoded whole, -1 and *bad on damage.
 */
static int lazy_add(struct ingero_reader *r, struct cursor *c, const struct fstream *fs, unsigned col,
		    const uint8_t *p, uint32_t n, const char **bad)
{
	const struct fcol *fc = &fs->cols[col];
	const struct column_def *o = &stream_defs[fs->known].cols[fc->ours >= 0 ? fc->ours : 0];
	struct lazy_field *lf = &c->lazy[c->nlazy];
	uint16_t key = fc->d.key;
	int got;

	if (fc->d.enc != ENC_DELTA || fc->values || fc->ours < 0)
		return 0;
	if (key != COL_NONE && !c->last[col] && !(c->last[col] = malloc(c->most * sizeof(uint64_t)))) {
		*bad = "out of memory";
		return -1;
	}
	got = delta_lazy_init(&lf->dl, p, COLUMN_HEADER_SIZE + get_u32(p + 4), fs->defs, col,
			      key == COL_NONE ? 0 : r->keyn[key], n, c->last[col], bad);
	if (got <= 0)
		return got;
	lf->src = fc->d.src == COL_NONE ? NULL : c->vals[fc->d.src];
	lf->key = key == COL_NONE ? NULL : c->keyidx[key];
	lf->off = o->off;
	lf->wide = o->type == TYPE_U64;
	c->nlazy++;
	return 1;
}

/*
 * The checks of a block's values: a branch per value would cost more than
 * folding them all into one answer, as the values nearly always pass.
 */
static uint64_t greatest(const uint64_t *v, uint32_t n)
{
	uint64_t most = 0;
	uint32_t i;

	UNROLL_SHORT for (i = 0; i < n; i++)
		most = v[i] > most ? v[i] : most;
	return most;
}

/* counted rather than or-ed: a compare and an add with carry each */
static int ascending(const uint64_t *v, uint32_t n)
{
	uint32_t falls = 0, i;

	UNROLL_SHORT for (i = 1; i < n; i++)
		falls += v[i] < v[i - 1];
	return !falls;
}

/*
 * The greatest string id of decoded column col: a dictionary's values are
 * all in its table (column_decode() checked every entry), which is shorter.
 */
static uint64_t string_greatest(const struct ingero_reader *r, const struct fcol *fc, const struct cursor *c,
			       unsigned col, uint32_t n)
{
	if (fc->d.enc == ENC_DICT)
		return greatest(r->scratch.dict, r->keyn[col]);
	return greatest(c->vals[col], n);
}

/* Decodes the columns of the block section in r->sec into c's arrays and lazy fields. */
static const char *decode_block(struct ingero_reader *r, struct cursor *c, const struct blockref *b)
{
	const struct fstream *fs = &r->streams[b->stream];
	const struct stream_def *sd = &stream_defs[fs->known];
	const uint8_t *p = r->sec.data + SECTION_HEADER_SIZE + BLOCK_HEADER_SIZE, *end = r->sec.data + r->sec.len;
	uint64_t present = 0;
	uint32_t n = b->count;
	int prev = -1;
	const char *bad;

	memset(c->nfields, 0, sizeof(c->nfields));
	c->nlazy = 0;
	while (p != end) {
		unsigned col;
		uint32_t len;
		const struct fcol *fc;
		int table_only, lazy;

		if ((size_t)(end - p) < COLUMN_HEADER_SIZE)
			return "column header cut short";
		col = get_u16(p);
		len = get_u32(p + 4);
		if ((size_t)(end - p) - COLUMN_HEADER_SIZE < len)
			return "column longer than its block";
		if ((int)col <= prev || col >= fs->ncols)
			return "columns out of order";
		prev = (int)col;
		fc = &fs->cols[col];
		table_only = fc->d.enc == ENC_DICT && !fc->values;
		if (p[2] != fc->d.enc)
			return "column encoding differs from the header";
		if (fc->usable && (fc->d.key == COL_NONE || (present >> fc->d.key & 1)) &&
		    (fc->d.src == COL_NONE || (present >> fc->d.src & 1)) &&
		    (fc->d.group == COL_NONE || (present >> fc->d.group & 1))) {
			if (!c->vals[0] && cursor_alloc(c, fs->ncols))
				return "out of memory";
			if (fc->d.enc == ENC_DICT && !c->keyidx[col] &&
			    !(c->keyidx[col] = malloc(c->most * sizeof(*c->keyidx[col]))))
				return "out of memory";
			if ((lazy = lazy_add(r, c, fs, col, p, n, &bad)) < 0)
				return bad;
			if (lazy) {
				present |= 1ull << col;
				p += COLUMN_HEADER_SIZE + len;
				continue;
			}
			if ((bad = column_decode(p, COLUMN_HEADER_SIZE + len, fs->defs, col, c->vals,
						 c->keyidx, r->keyn, n, &r->scratch, table_only)))
				return bad;
			if (fc->d.type == TYPE_STRING && string_greatest(r, fc, c, col, n) >= r->nstrs)
				return "string used before it is defined";
			present |= 1ull << col;
			if (fc->ours >= 0) {
				const struct column_def *o = &sd->cols[fc->ours];
				int k = o->type == TYPE_STRING ? FIELD_STR : o->type == TYPE_U64 ? FIELD_64 : FIELD_32;

				if (table_only)
					k = k == FIELD_64 ? FIELD_DICT_64 : FIELD_DICT_32;
				c->fields[k][c->nfields[k]++] = (struct field){ c->vals[col], c->keyidx[col], o->off };
			}
		}
		p += COLUMN_HEADER_SIZE + len;
	}
	if (!(present >> fs->sortkey & 1))
		return "block without its time column";
	c->keys = c->vals[fs->sortkey];
	if (c->keys[0] != b->first || c->keys[n - 1] != b->last)
		return "block times differ from its header";
	if (!ascending(c->keys, n))
		return "block times out of order";
	return NULL;
}

static const struct ingero_event blank_event;

/*
 * Blanks a chunk for a block of stream s: the fields that the block's
 * columns fill are overwritten chunk after chunk, and the rest stay 0. The
 * last block's chunk is kept, for the event returned last.
 */
static void chunk_reset(struct cursor *c, uint32_t s)
{
	struct ingero_event *t = c->chunk;
	uint32_t k;

	c->chunk = c->chunk_prev;
	c->chunk_prev = t;
	for (k = 0; k < EVENT_CHUNK; k++) {
		c->chunk[k] = blank_event;
		c->chunk[k].stream = s;
	}
	c->chunk_at = c->chunk_end = c->fast_end = 0;
	c->ev = c->chunk;
}

/*
 * Decodes a lazy field's events at..to into the chunk's, first running
 * through those a seek skipped, a chunk at a time, for its state.
 */
static void lazy_fill(struct cursor *c, struct lazy_field *lf, uint32_t at, uint32_t to)
{
	char *out = (char *)c->chunk + lf->off;

	while (lf->dl.pos < at) {
		uint32_t skip = at - lf->dl.pos < EVENT_CHUNK ? at : lf->dl.pos + EVENT_CHUNK;

		delta_lazy_run(&lf->dl, lf->src, lf->key, skip, out, lf->wide);
	}
	delta_lazy_run(&lf->dl, lf->src, lf->key, to, out, lf->wide);
}

/*
 * Copies the fields of the block's events at..at + m into the m events
 * from ev on, a column at a time.
 */
static inline __attribute__((always_inline)) void
fields_fill(const struct ingero_reader *r, const struct cursor *c, struct ingero_event *ev, uint32_t at, uint32_t m)
{
	const struct field *fd, *end;
	uint32_t k;

	for (fd = c->fields[FIELD_64], end = fd + c->nfields[FIELD_64]; fd < end; fd++) {
		const uint64_t *v = fd->vals + at;
		char *o = (char *)ev + fd->off;

		UNROLL_FIELDS for (k = 0; k < m; k++)
			*(uint64_t *)(o + k * sizeof(*ev)) = v[k];
	}
	for (fd = c->fields[FIELD_32], end = fd + c->nfields[FIELD_32]; fd < end; fd++) {
		const uint64_t *v = fd->vals + at;
		char *o = (char *)ev + fd->off;

		UNROLL_FIELDS for (k = 0; k < m; k++)
			*(uint32_t *)(o + k * sizeof(*ev)) = (uint32_t)v[k];
	}
	for (fd = c->fields[FIELD_STR], end = fd + c->nfields[FIELD_STR]; fd < end; fd++) {
		const uint64_t *v = fd->vals + at;
		char *o = (char *)ev + fd->off;

		UNROLL_FIELDS for (k = 0; k < m; k++)
			*(const char **)(o + k * sizeof(*ev)) = r->strs[v[k]];
	}
	for (fd = c->fields[FIELD_DICT_64], end = fd + c->nfields[FIELD_DICT_64]; fd < end; fd++) {
		const uint16_t *e = fd->entries + at;
		char *o = (char *)ev + fd->off;

		UNROLL_FIELDS for (k = 0; k < m; k++)
			*(uint64_t *)(o + k * sizeof(*ev)) = fd->vals[e[k]];
	}
	for (fd = c->fields[FIELD_DICT_32], end = fd + c->nfields[FIELD_DICT_32]; fd < end; fd++) {
		const uint16_t *e = fd->entries + at;
		char *o = (char *)ev + fd->off;

		UNROLL_FIELDS for (k = 0; k < m; k++)
			*(uint32_t *)(o + k * sizeof(*ev)) = (uint32_t)fd->vals[e[k]];
	}
}

/* comm, or idle where the task is 0 and unnamed: or-ed in, as comm is then NULL. */
static inline const char *comm_or_idle(const char *comm, uint32_t tid, uintptr_t idle)
{
	return (const char *)((uintptr_t)comm | (idle & -(uintptr_t)(!tid & !comm)));
}

/*
 * The switches' idle tasks that the writer left unnamed (see idle_comm()
 * in the writer) get their names back, without a branch: which switches
 * are to or from idle follows no pattern a branch would learn.
 */
static void idle_comms_restore(const struct ingero_reader *r, struct ingero_event *ev, uint32_t m)
{
	for (; m--; ev++) {
		uint32_t cpu = ev->sw.cpu, known = cpu < r->nidle;
		uintptr_t idle = (uintptr_t)r->idle[known ? cpu : 0] & -(uintptr_t)known;

		ev->sw.next_comm = comm_or_idle(ev->sw.next_comm, ev->sw.next_tid, idle);
		ev->sw.prev_comm = comm_or_idle(ev->sw.prev_comm, ev->sw.prev_tid, idle);
	}
}

/* Assembles the block's events from c->i on into the chunk. */
static __attribute__((noinline)) void chunk_fill(const struct ingero_reader *r, struct cursor *c)
{
	uint32_t at = c->i, m = c->n - at < EVENT_CHUNK ? c->n - at : EVENT_CHUNK, k;
	unsigned l;

	for (l = 0; l < c->nlazy; l++)
		lazy_fill(c, &c->lazy[l], at, at + m);
	/*
	 * Loops of a known count, without the tails of unrolled loops: a whole
	 * chunk, nearly every one, or else an event at a time.
	 */
	if (m == EVENT_CHUNK)
		fields_fill(r, c, c->chunk, at, EVENT_CHUNK);
	else
		for (k = 0; k < m; k++)
			fields_fill(r, c, c->chunk + k, at + k, 1);
	if (c == &r->cur[INGERO_STREAM_SWITCH])
		idle_comms_restore(r, c->chunk, m);
	c->chunk_at = at;
	c->chunk_end = at + m;
	c->fast_end = c->chunk_end < c->n ? c->chunk_end : c->n - 1;
	c->ev = c->chunk;
}

/* The section just read becomes c's, for its lazy fields; c's last one is reused for the next. */
static void section_keep(struct ingero_reader *r, struct cursor *c)
{
	struct buf t = c->sec;

	c->sec = r->sec;
	r->sec = t;
}

/* Makes c's next block current; 0 when the stream has no more (or damage stopped it). */
static int load_next(struct ingero_reader *r, struct cursor *c)
{
	char why[128];

	while (c->next < c->nblocks) {
		struct blockref *b = &r->blocks[c->blocks[c->next++]];
		const char *bad;

		if (b->blockno >= r->limit)
			break;
		if (c->seeking && b->last < c->seek_ts)
			continue;
		if (!(bad = read_frame(r, b, TAG_BLOCK, why, sizeof(why)))) {
			struct blockref said = *b;

			if (!(bad = block_summary(r, &said)) &&
			    (said.stream != b->stream || said.count != b->count ||
			     said.first != b->first || said.last != b->last))
				bad = "block header differs from the index";
			if (!bad)
				bad = decode_block(r, c, b);
		}
		if (!bad)
			section_keep(r, c);
		if (bad) {
			set_error(r, b, "%s", bad);
			break;
		}
		c->n = b->count;
		c->i = 0;
		chunk_reset(c, (uint32_t)(c - r->cur));
		if (c->seeking) {
			uint32_t lo = 0, hi = c->n;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (c->keys[mid] < c->seek_ts)
					lo = mid + 1;
				else
					hi = mid;
			}
			c->i = lo;
			c->seeking = 0;
			if (c->i == c->n)
				continue;
		}
		return 1;
	}
	c->done = 1;
	c->n = c->i = 0;
	return 0;
}

/* Takes active stream j out: it has no events left. */
static void active_drop(struct ingero_reader *r, unsigned j)
{
	r->nactive--;
	memmove(r->active + j, r->active + j + 1, (r->nactive - j) * sizeof(*r->active));
	memmove(r->head + j, r->head + j + 1, (r->nactive - j) * sizeof(*r->head));
	r->head[r->nactive] = UINT64_MAX;
}

/*
 * Lists the streams asked for that have events left, loading their first
 * blocks, unless that is done; how many they are.
 */
static __attribute__((noinline)) unsigned active_build(struct ingero_reader *r)
{
	unsigned s;

	if (r->ordered)
		return r->nactive;
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		struct cursor *c = &r->cur[s];

		if (c->done || !(r->mask >> s & 1) || (c->i == c->n && !load_next(r, c)))
			continue;
		r->active[r->nactive] = c;
		r->head[r->nactive++] = c->keys[c->i];
	}
	for (s = r->nactive; s < HEADS; s++)
		r->head[s] = UINT64_MAX;
	r->ordered = 1;
	return r->nactive;
}

/* Active stream j's block is used up: its next one, or it is done. */
static __attribute__((noinline)) void active_next_block(struct ingero_reader *r, unsigned j)
{
	struct cursor *c = r->active[j];

	if (load_next(r, c))
		r->head[j] = c->keys[c->i];
	else
		active_drop(r, j);
}

/*
 * Active stream j's next chunk, where its events taken used up the last:
 * the event returned last may be overwritten, as the caller is done with it.
 */
static inline __attribute__((always_inline)) void chunk_ready(const struct ingero_reader *r, unsigned j)
{
	if (j < r->nactive && r->active[j]->i >= r->active[j]->chunk_end)
		chunk_fill(r, r->active[j]);
}

/*
 * The next event of stream best, when it needs a new chunk or is its
 * block's last; what ingero_reader_next() returns.
 */
static __attribute__((noinline)) int next_slow(struct ingero_reader *r, unsigned best,
					       const struct ingero_event **ev)
{
	struct cursor *c = r->active[best];

	chunk_ready(r, best);
	*ev = c->ev++;
	if (++c->i < c->n)
		r->head[best] = c->keys[c->i];
	else
		active_next_block(r, best);
	return 1;
}

/* The first event after the streams were chosen or sought, or that none is left. */
static __attribute__((noinline)) int next_first(struct ingero_reader *r, const struct ingero_event **ev)
{
	if (!active_build(r))
		return r->err[0] ? -1 : 0;
	return ingero_reader_next(r, ev);
}

/* Of heads i and j (i < j), the one with the lesser key, a tie going to i, without a branch. */
static inline __attribute__((always_inline)) size_t lesser(const uint64_t *head, size_t i, size_t j)
{
	return i ^ ((i ^ j) & -(size_t)(head[j] < head[i]));
}

/*
 * Which of the four heads from i has the least key, ties going to the lower
 * stream, as the writer's order does: a tournament of pairs, whose every
 * round keeps the lower of two equal keys.
 */
static inline __attribute__((always_inline)) size_t least4(const uint64_t *head, size_t i)
{
	return lesser(head, lesser(head, i, i + 1), lesser(head, i + 2, i + 3));
}

/* The same of all HEADS heads: those past the active streams are UINT64_MAX, and lose. */
static inline __attribute__((always_inline)) size_t least(const uint64_t *head)
{
	return lesser(head, least4(head, 0), least4(head, 4));
}

/*
 * The next event of all, one at a time: what next_batch() leaves to it,
 * when a chunk ends or the merge reached another stream's head.
 */
static __attribute__((noinline)) int next_one(struct ingero_reader *r, const struct ingero_event **ev)
{
	size_t best = least(r->head);
	struct cursor *c = r->active[best];

	if (c->i >= c->fast_end)
		return next_slow(r, best, ev);
	*ev = c->ev++;
	r->head[best] = c->keys[++c->i];
	return 1;
}

static inline void pick_swap(unsigned *pick, unsigned k)
{
	unsigned u = pick[k];

	pick[k] = pick[k - 1];
	pick[k - 1] = u;
}

/*
 * The active streams that next_batch() merges, in the order of their
 * numbers, so that a tie goes to the lower one: the MERGED ones with the
 * least heads. What it returns is the least head of the others, where the
 * merge stops; with MERGED or fewer active streams, none.
 */
static inline __attribute__((always_inline)) uint64_t merge_choose(const struct ingero_reader *r,
								   unsigned pick[MERGED])
{
	const uint64_t *head = r->head;
	uint64_t stop = UINT64_MAX;
	unsigned j, k, t;

	for (j = 0; j < MERGED; j++)
		pick[j] = j;
	if (r->nactive <= MERGED)
		return stop;
	/* pick: by head, then number; each later stream comes in by its head alone */
	for (j = 1; j < MERGED; j++)
		for (k = j; k > 0 && head[pick[k]] < head[pick[k - 1]]; k--)
			pick_swap(pick, k);
	for (j = MERGED; j < r->nactive; j++) {
		t = j;
		if (head[j] < head[pick[MERGED - 1]]) {
			t = pick[MERGED - 1];
			pick[MERGED - 1] = j;
			for (k = MERGED - 1; k > 0 && head[pick[k]] < head[pick[k - 1]]; k--)
				pick_swap(pick, k);
		}
		stop = head[t] < stop ? head[t] : stop;
	}
	for (j = 1; j < MERGED; j++)
		for (k = j; k > 0 && pick[k] < pick[k - 1]; k--)
			pick_swap(pick, k);
	return stop;
}

/*
 * A place past the active streams, or with nothing to merge: its keys never
 * win, so its event is never taken.
 */
static const uint64_t no_keys[2] = { UINT64_MAX, UINT64_MAX };
static const struct ingero_event no_event;

/* One of the merged streams, as next_batch() holds it. */
struct place {
	uint64_t *fence;	/* where its merge ends, or NULL */
	uint64_t fenced;	/* the key the fence replaced */
};

/*
 * Where active stream j stands, for next_batch(): its merge ends at its
 * chunk's end, or at its first key at or past stop; there a key of 0, which
 * wins over every other, stops the merge (the key after it, which the merge
 * loads ahead, lies within the column's room past its block). A place with
 * nothing to merge, or past the active streams, has the keys of no_keys.
 */
static inline __attribute__((always_inline)) void
place_get(const struct ingero_reader *r, unsigned j, uint64_t stop, const uint64_t **keys,
	  const struct ingero_event **at, struct place *pl)
{
	const struct cursor *c = j < r->nactive ? r->active[j] : NULL;
	uint32_t lo = c ? c->i : 0, hi = c ? c->fast_end : 0;

	while (hi > lo && c->keys[hi - 1] >= stop)
		hi--;
	pl->fence = NULL;
	*keys = no_keys;
	*at = &no_event;
	if (hi > lo) {
		pl->fence = &c->keys[hi];
		pl->fenced = *pl->fence;
		*pl->fence = 0;
		*keys = &c->keys[lo];
		*at = c->ev;
	}
}

/* Takes down place j's fence and moves its stream on past the events taken, up to at. */
static inline __attribute__((always_inline)) void
place_put(struct ingero_reader *r, unsigned j, const struct ingero_event *at, const struct place *pl)
{
	struct cursor *c;

	if (!pl->fence)
		return;
	*pl->fence = pl->fenced;
	c = r->active[j];
	c->i += (uint32_t)(at - c->ev);
	c->ev = at;
	r->head[j] = c->keys[c->i];
}

/*
 * The least head of the merged streams that have nothing to merge (at
 * their block's last event, which next_one() takes), and of stop: the
 * others merge only what comes before it.
 */
static inline __attribute__((always_inline)) uint64_t
stuck_least(const struct ingero_reader *r, const unsigned *p, uint64_t stop)
{
	unsigned j;

	for (j = 0; j < MERGED; j++)
		if (p[j] < r->nactive && r->active[p[j]]->i >= r->active[p[j]]->fast_end && r->head[p[j]] < stop)
			stop = r->head[p[j]];
	return stop;
}

/*
 * Which stream the merge takes from next follows no pattern that a branch
 * would learn, and the compiler makes some of its choices branches all the
 * same: on x86-64 these two are conditional moves, written out.
 */

/* b where cond is not 0, else a. */
static inline __attribute__((always_inline)) uint64_t pick_if(uint64_t cond, uint64_t b, uint64_t a)
{
#if defined(__x86_64__)
	__asm__("test %1, %1\n\tcmovnz %2, %0" : "+r"(a) : "r"(cond), "r"(b) : "cc");
	return a;
#else
	return cond ? b : a;
#endif
}

/* Where key is less than *least, it becomes *least and its stream j *best: a tie keeps the stream before. */
static inline __attribute__((always_inline)) void
take_lesser(uint64_t *least, uint64_t *best, uint64_t key, uint64_t j)
{
#if defined(__x86_64__)
	__asm__("cmp %0, %2\n\tcmovb %2, %0\n\tcmovb %3, %1" : "+r"(*least), "+r"(*best) : "r"(key), "r"(j) : "cc");
#else
	if (key < *least)
		*least = key, *best = j;
#endif
}

/*
 * The next events of the MERGED active streams with the least heads,
 * merged ahead as far as their chunks go and while they come before every
 * other stream's head. Each stream's next key and the key after it stay
 * in registers, so that the next least key waits for no load, and the
 * choice is made with no branch; the next events wait in an array that the
 * choice indexes, so that the registers suffice. A fence, a key of 0 put
 * after the last event each stream may take and taken down after, ends the
 * merge with no count to keep; a place with nothing to merge has the keys
 * UINT64_MAX, which never win. A stream at its block's last event, at its
 * chunk's end, or at the head of a stream left out stops the merge; the
 * chunks used up are filled on at the next. The first event is returned,
 * the rest wait in r->order for ingero_reader_next(). With nothing merged,
 * next_one() goes on, as it does at a key of 0 or UINT64_MAX.
 */
static __attribute__((noinline)) int next_batch(struct ingero_reader *r, const struct ingero_event **ev)
{
	const uint64_t *k0, *k1, *k2;
	const struct ingero_event *at[MERGED], **out = r->order;
	struct place pl[MERGED];
	unsigned p[MERGED];
	uint64_t stop = merge_choose(r, p), h0, h1, h2, n0, n1, n2;
	uint32_t o;

	chunk_ready(r, p[0]);
	chunk_ready(r, p[1]);
	chunk_ready(r, p[2]);
	stop = stuck_least(r, p, stop);
	place_get(r, p[0], stop, &k0, &at[0], &pl[0]);
	place_get(r, p[1], stop, &k1, &at[1], &pl[1]);
	place_get(r, p[2], stop, &k2, &at[2], &pl[2]);
	h0 = k0[0], h1 = k1[0], h2 = k2[0];
	n0 = k0[1], n1 = k1[1], n2 = k2[1];
	for (;;) {
		uint64_t least = h0, best = 0, s0, s1, s2;

		take_lesser(&least, &best, h1, 1);
		take_lesser(&least, &best, h2, 2);
		/* a fence, or no place with anything to merge */
		if (least - 1 >= UINT64_MAX - 1)
			break;
		*out++ = at[best]++;
		s0 = best == 0, s1 = best == 1, s2 = best == 2;
		k0 += s0, k1 += s1, k2 += s2;
		h0 = pick_if(s0, n0, h0), h1 = pick_if(s1, n1, h1), h2 = pick_if(s2, n2, h2);
		n0 = k0[1], n1 = k1[1], n2 = k2[1];
	}
	place_put(r, p[0], at[0], &pl[0]);
	place_put(r, p[1], at[1], &pl[1]);
	place_put(r, p[2], at[2], &pl[2]);
	o = (uint32_t)(out - r->order);
	if (!o)
		return next_one(r, ev);
	*ev = r->order[0];
	r->ahead.next = r->order + 1;
	r->ahead.end = r->order + o;
	return 1;
}

/* The events merged ahead are handed out by ingero_reader_next(); the next ones are merged here. */
int ingero_reader_next_merged(struct ingero_reader *r, const struct ingero_event **ev)
{
	if (__builtin_expect(!r->nactive, 0))
		return next_first(r, ev);
	return next_batch(r, ev);
}

int ingero_reader_seek(struct ingero_reader *r, uint64_t ts)
{
	unsigned s;

	r->limit = r->scan_limit;
	memcpy(r->err, r->scan_err, sizeof(r->err));
	r->ordered = 0;
	r->nactive = 0;
	ahead_drop(r);
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		struct cursor *c = &r->cur[s];
		uint32_t lo = 0, hi = c->nblocks;

		/* the first block that ends at or after ts */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (r->blocks[c->blocks[mid]].last < ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		c->next = lo;
		c->n = c->i = 0;
		c->done = lo == c->nblocks;
		c->seeking = 1;
		c->seek_ts = ts;
	}
	return 0;
}

const char *ingero_reader_error(const struct ingero_reader *r)
{
	return r->err;
}

int ingero_reader_stats(struct ingero_reader *r, struct ingero_trace_stats *st)
{
	uint32_t i;
	int any = 0;

	memset(st, 0, sizeof(*st));
	st->bytes = r->size;
	for (i = 0; i < r->nblocks; i++) {
		const struct blockref *b = &r->blocks[i];
		int known;

		if (b->kind != INDEX_BLOCK || (known = r->streams[b->stream].known) < 0 ||
		    r->stream_of[known] != (int)b->stream)
			continue;
		st->events[known] += b->count;
		st->blocks++;
		if (!any || b->first < st->first_ns)
			st->first_ns = b->first;
		if (!any || b->last > st->last_ns)
			st->last_ns = b->last;
		any = 1;
	}
	return 0;
}

void ingero_reader_close(struct ingero_reader *r)
{
	unsigned s, c;

	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	for (s = 0; s < INGERO_NR_STREAMS; s++) {
		free(r->cur[s].blocks);
		free(r->cur[s].vals[0]);
		free(r->cur[s].chunk);
		free(r->cur[s].chunk_prev);
		for (c = 0; c < MAX_COLUMNS; c++) {
			free(r->cur[s].keyidx[c]);
			free(r->cur[s].last[c]);
		}
		buf_release(&r->cur[s].sec);
	}
	for (s = 0; s < MAX_STREAMS; s++) {
		free(r->streams[s].cols);
		free(r->streams[s].defs);
	}
	for (c = 0; c < r->nchunks; c++)
		free(r->chunks[c]);
	free(r->chunks);
	free(r->strs);
	free(r->idle);
	free(r->blocks);
	free((void *)r->h.apis);
	free(r->arena);
	buf_release(&r->win);
	buf_release(&r->sec);
	column_scratch_release(&r->scratch);
	ZSTD_freeDCtx(r->dctx);
	free(r->name);
	free(r);
}
