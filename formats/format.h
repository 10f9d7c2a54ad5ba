/*
 * The .ing.zst layout shared by the writer and the reader: section tags,
 * sizes, limits and the column tables. Documentation/ingero-format.5 is the spec.
 */
#ifndef INGERO_FORMAT_H
#define INGERO_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/event.h"

#define FORMAT_MAJOR 3
#define FORMAT_MINOR 1
#define FORMAT_MAGIC "INGERO\x1a\n"
#define FORMAT_MAGIC_LEN 8

/* Every frame decompresses to one section: tag, length, block number, CRC32C. */
#define SECTION_HEADER_SIZE 16
#define TAG_HEADER 0x48474e49u	/* "INGH" */
#define TAG_STRINGS 0x53474e49u	/* "INGS" */
#define TAG_BLOCK 0x42474e49u	/* "INGB" */
#define TAG_INDEX 0x58474e49u	/* "INGX" */

#define BLOCK_HEADER_SIZE 32
#define COLUMN_HEADER_SIZE 16
/* A column's entry in the header's schema, after its name and unit. */
#define COLUMN_DEF_SIZE 12
/* A group's record in a grouped column: u8 width, u32 length. */
#define GROUP_HEADER_SIZE 5
#define INDEX_ENTRY_SIZE 48
#define INDEX_HEAD_SIZE 8

/* The footer: a skippable zstd frame, found from the end by its trailer. */
#define SKIPPABLE_MAGIC 0x184d2a5au
#define SKIPPABLE_MASK 0xfffffff0u
#define SKIPPABLE_BASE 0x184d2a50u
#define TRAILER_MAGIC "INGIDX01"
#define TRAILER_SIZE 16

/* What a writer produces and a reader accepts: the bounds on hostile input. */
#define BLOCK_MAX_EVENTS 65536
#define SECTION_MAX (64u << 20)
#define HEADER_MAX (16u << 20)
#define STRING_MAX 65535u
#define STRINGS_MAX_BYTES (256u << 20)
#define STRINGS_MAX_COUNT (1u << 24)
#define MAX_COLUMNS 32
#define MAX_STREAMS 64
#define MAX_APIS 65536
#define INDEX_MAX_ENTRIES (1u << 22)
#define CHECKPOINT_NS 1000000000ull
/* How far ahead the per-event paths prefetch a column: four cache lines of values. */
#define PREFETCH_AHEAD 32
/*
 * A stream's columns lie in one allocation, each this many values after the
 * one before, for blocks of at most n events: an odd number of cache lines,
 * so that the columns' values of one event do not all fall in the same cache
 * set, with room for the prefetch past a column's end. The writer's are for
 * the largest blocks; a reader's for the largest its file holds.
 */
#define COLUMN_STRIDE_FOR(n) ((((n) + PREFETCH_AHEAD + 8 + 7) / 8 | 1) * 8)
#define COLUMN_STRIDE COLUMN_STRIDE_FOR(BLOCK_MAX_EVENTS)

enum index_kind { INDEX_STRINGS = 1, INDEX_BLOCK = 2 };

enum column_type { TYPE_U32 = 1, TYPE_I32 = 2, TYPE_U64 = 3, TYPE_STRING = 4 };

/*
 * delta: code = zigzag(value - prediction), the prediction being the src
 * column's value at the last event with the same key (or the previous
 * event, without a key; or this event, with PRED_SAME). dict: an index into
 * the block's table of values, with a key among the values of that key
 * only. rle: (value, run) pairs. A column with a group column (a dict
 * column before it) keeps its codes group by group, each with its own width.
 */
enum column_encoding { ENC_DELTA = 1, ENC_DICT = 2, ENC_RLE = 3 };
#define PRED_ZERO 0x1	/* 0 is coded as 0 and the other codes move up by one */
#define PRED_SAME 0x2	/* predict from src at the same event */
#define PRED_RISE 0x4	/* code = value - prediction, not zigzagged: the column seldom falls */
#define COL_NONE 0xffff
/*
 * A column record's width: 0 varints, WIDTH_NIBBLES two codes a byte, 1
 * one byte each, WIDTH_PLANES | 2..8 that many byte planes, WIDTH_SPARSE
 * the few codes that are not 0, WIDTH_GROUPS a record per group, each of
 * its own width.
 */
#define WIDTH_NIBBLES 0x04
#define WIDTH_PLANES 0x10
#define WIDTH_SPARSE 0x20
#define WIDTH_GROUPS 0x40
#define SPARSE_ENTRY_SIZE 12

struct column_def {
	const char *name, *unit;
	uint8_t type, enc, flags;
	uint16_t key, src, group;	/* column indexes or COL_NONE */
	uint16_t off;		/* in struct ingero_event */
};

struct stream_def {
	const char *name;
	const struct column_def *cols;
	uint16_t ncols, sortkey;
};

extern const struct stream_def stream_defs[INGERO_NR_STREAMS];

/*
 * The name Linux gives each CPU's idle task (tid 0), "swapper/CPU": a
 * switch keeps it as the null string, for the CPUs below the header's
 * number and IDLE_CPUS_MAX. A table of that many names, NUL-padded, or
 * NULL with errno; the caller frees it.
 */
#define IDLE_CPUS_MAX 8192
char (*idle_comms_new(uint32_t ncpus))[INGERO_COMM_LEN];
static inline uint32_t idle_cpus(uint32_t ncpus) { return ncpus < IDLE_CPUS_MAX ? ncpus : IDLE_CPUS_MAX; }

static inline void put_u16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void put_u32(uint8_t *p, uint32_t v) { put_u16(p, v); put_u16(p + 2, v >> 16); }
static inline void put_u64(uint8_t *p, uint64_t v) { put_u32(p, v); put_u32(p + 4, v >> 32); }
static inline uint16_t get_u16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static inline uint32_t get_u32(const uint8_t *p) { return get_u16(p) | (uint32_t)get_u16(p + 2) << 16; }
static inline uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static inline uint64_t zigzag(uint64_t d) { return (d << 1) ^ (uint64_t)((int64_t)d >> 63); }
static inline uint64_t unzigzag(uint64_t c) { return (c >> 1) ^ -(c & 1); }

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* A growing byte buffer for building sections; the owner frees data. */
struct buf {
	uint8_t *data;
	size_t len, alloc;
};
int buf_grow(struct buf *b, size_t more);
void buf_release(struct buf *b);
/*
 * Memory for the arrays that each block fills whole, block after block, in
 * huge pages where the kernel gives them: each 4 KiB page would cost a
 * fault at its first touch (tens of microseconds in some VMs) and a TLB
 * entry. Released with free(); NULL with errno set on failure.
 */
void *block_alloc(size_t size);
/* Writes len bytes at p to fd, through short writes and EINTR: 0, or -1 with errno set. */
int write_all(int fd, const void *p, size_t len);

/* Fills the section header in front of len bytes of payload at b->data + 16. */
void section_seal(uint8_t *sec, uint32_t tag, uint32_t len, uint32_t blockno);
/* 0 when sec[0..size) is one whole section of that tag and its checksum holds, else a reason. */
const char *section_check(const uint8_t *sec, size_t size, uint32_t tag);

/* A dict column's entry for each event: a block's at most 65536 distinct values fit 16 bits. */
_Static_assert(BLOCK_MAX_EVENTS <= 1 << 16, "dictionary entries are 16 bits");

/*
 * Decoding a keyed dictionary: where a key's entries lie in the pool and
 * how many they are. Its run has room for 1, 2, 4... entries, so it is
 * full when the count is 0 or a power of 2; 8 bytes index cheaply.
 */
struct key_entries {
	uint32_t at, count;
};

/*
 * A dictionary entry in its hash table, with what a lookup wants of it, so
 * that a probe reads one place: value, key index, entry + 1 (0: the slot is
 * empty) and code.
 */
struct dict_slot {
	uint64_t v;
	uint32_t e;
	uint16_t key, code;
};

/* Column codecs (formats/columns.c): vals[n] <-> the column record at out. */
struct column_scratch {
	uint64_t *codes;	/* a block's events each, at most (column_scratch_init()) */
	/* per key index: the source column's last value, or (encode) a keyed dictionary's count of values */
	uint64_t *last;
	uint64_t *dict;		/* the dictionary's values */
	/* encode: the key index and the code of each entry */
	uint32_t *dict_key, *dict_code;
	struct dict_slot *slots;	/* encode: the dictionary's hash table */
	uint32_t mask;
	uint32_t nd;	/* encode: the entries of the dictionary being built */
	/* encode, by small value: the stamp of the build that set it (high 16 bits) and the entry */
	uint32_t *direct, stamp;
	/* decode: per key index, its entries in the pool */
	struct key_entries *keys;
	uint32_t *pool;
	/*
	 * The order of the groups of column perm_col (or COL_NONE): the codes
	 * of entry e lie from start[e] to start[e + 1], those of event i at
	 * perm[i]; grouped, the codes of a grouped column in that order.
	 */
	uint32_t *start, *perm, perm_col;
	uint64_t *grouped;
};
/* What encoding or decoding needs, for blocks of up to most events. */
int column_scratch_init(struct column_scratch *s, int encode, uint32_t most);
void column_scratch_release(struct column_scratch *s);

/*
 * Encodes column c of a block (vals[c] is the column's n values; keyidx[k]
 * the dictionary indexes of dict column k and keyn[k] their range, filled
 * here for dict columns).
 */
int column_encode(struct buf *out, const struct column_def *cols, unsigned c,
		  uint64_t *const *vals, uint16_t **keyidx, uint32_t *keyn, uint32_t n,
		  struct column_scratch *s);
/*
 * Decodes a column record's payload into vals[c] (a dict column: and its
 * entries into keyidx[c]; with dict_table, vals[c] gets the dictionary's
 * values rather than the events'). NULL on success, else what is wrong.
 */
const char *column_decode(const uint8_t *p, size_t len, const struct column_def *cols, unsigned c,
			  uint64_t **vals, uint16_t **keyidx, uint32_t *keyn, uint32_t n,
			  struct column_scratch *s, int dict_table);

/*
 * Where the codes to decode come from: an array of them; the record's bytes
 * when each is one byte, or its planes, or its bytes two codes each; or the
 * record's sparse entries, taken as the events reach them; or an array in
 * the order of groups, event i's at perm[i].
 */
enum codes_from { CODES_ARRAY, CODES_BYTES, CODES_PLANES, CODES_SPARSE, CODES_GATHER, CODES_NIBBLES };

struct codes_in {
	const uint64_t *codes;
	const uint8_t *p, *end;	/* the record's bytes; sparse: the next entry and the end */
	uint32_t next;		/* sparse: the event of the next entry */
	uint32_t planes, n;	/* planes: how many, and the events in each */
	const uint32_t *perm;	/* gather: each event's place in codes */
};

/* A delta column decoded as the events reach it, from its record in the block's section. */
struct delta_lazy {
	const struct column_def *def;
	struct codes_in in;
	int from;		/* CODES_PLANES (one plane: bytes), CODES_NIBBLES or CODES_SPARSE */
	uint64_t pred;		/* without a key: the prediction for event pos */
	uint64_t *last;		/* with a key: per key index, the source's value at its last event */
	uint32_t pos;		/* the next event to decode */
};
int delta_lazy_init(struct delta_lazy *dl, const uint8_t *rec, size_t len, const struct column_def *cols,
		    unsigned c, uint32_t keyn, uint32_t n, uint64_t *last, const char **err);
/*
 * The events of a block are decoded this many at a time: a lazy column's
 * (below), and the reader's assembly of events, a column at a time, into
 * an array that stays in the L1 cache. 64 events (under 8 KiB) leave most
 * of the cache to the caller's work on them.
 */
#define EVENT_CHUNK 64
/* The loops over a chunk's events, a load and a store each, unrolled: their counting would cost as much. */
#define UNROLL _Pragma("GCC unroll 4")
/*
 * Decodes events pos..to, at most EVENT_CHUNK, into the field at out of
 * consecutive struct ingero_event, as uint64_t when wide, else uint32_t;
 * src is the source column's values and k the key's entries, as
 * column_decode() would have used them.
 */
void delta_lazy_run(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, uint32_t to,
		    void *out, int wide);

/* For the benchmark: per stream and column, the encoded bytes and what each compresses to alone. */
struct column_bytes {
	uint64_t raw[INGERO_NR_STREAMS][MAX_COLUMNS], zst[INGERO_NR_STREAMS][MAX_COLUMNS];
};
struct ingero_writer;
/* From now on w adds up its columns' sizes in cb, which must outlive w. */
void writer_measure_columns(struct ingero_writer *w, struct column_bytes *cb);

#endif
