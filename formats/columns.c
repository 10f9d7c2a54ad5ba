/*
 * The column codecs of a block: predicted deltas, dictionaries and run
 * lengths, with the code width chosen per block. Both directions share the
 * predictor so that the writer and the reader cannot drift apart.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "format.h"
#include "../lib/error.h"

#define DICT_SLOTS(most) (2 * (most))
#define DICT_MIN_SLOTS 1024	/* the hash table starts small, so that a few values stay in L1 */
/*
 * An unkeyed dictionary looks the values under this up in a table indexed
 * by the value, not in its hash table: CPUs, API indexes and states are
 * that small, and thread ids while a host's pids are, and a plain index
 * costs less than a hash and a probe.
 */
#define DIRECT_VALUES (1u << 16)
/* A key of c entries takes runs of 1, 2, 4... entries, under 4c in all: the pool holds every key's. */
#define KEY_POOL(most) (4 * (most))
/* Codes are read out of planes this many at a time, a vector's bytes. */
#define PLANES_GROUP 16
/* Codes are tested for 0 this many at a time, two cache lines of them. */
#define SPARSE_GROUP 16
/* Varints are summed this many codes at a time, between tests whether they are too many. */
#define VARINT_GROUP 256
/* The loops whose values take a few instructions each, which a loop's own would add much to. */
#define UNROLL_SHORT _Pragma("GCC unroll 8")
/* The size of a transparent huge page on the targets that have them. */
#define HUGE_PAGE (2u << 20)
/* The scratch arrays start on lines of their own. */
#define CACHE_LINE 64u

int buf_grow(struct buf *b, size_t more)
{
	size_t want = b->len + more;
	uint8_t *p;

	if (want <= b->alloc)
		return 0;
	if (want < b->alloc * 2)
		want = b->alloc * 2;
	p = realloc(b->data, want);
	if (!p)
		return error_errno("cannot grow a buffer to %zu bytes", want);
	b->data = p;
	b->alloc = want;
	return 0;
}

void buf_release(struct buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int write_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0) {
			p = (const char *)p + n;
			len -= n;
		}
	}
	return 0;
}

/* n rounded up to a multiple of to, a power of 2. */
static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

void *block_alloc(size_t size)
{
	size_t len = round_up(size, HUGE_PAGE);
	void *p;

	/* a small block's arrays would not fill one */
	if (size < HUGE_PAGE)
		return malloc(size);
	/* where the kernel has no huge pages, the memory is as good */
	if ((p = aligned_alloc(HUGE_PAGE, len)))
		madvise(p, len, MADV_HUGEPAGE);
	return p;
}

/* The next size bytes from *at, which moves on to a line of its own. */
static void *carve(uintptr_t *at, size_t size)
{
	void *p = (void *)*at;

	*at += round_up(size, CACHE_LINE);
	return p;
}

/* Lays the arrays of s out from base on: the bytes they take. */
static size_t scratch_layout(struct column_scratch *s, uintptr_t base, int encode, size_t m)
{
	uintptr_t at = base;

	s->codes = carve(&at, m * sizeof(*s->codes));
	s->last = carve(&at, m * sizeof(*s->last));
	s->dict = carve(&at, m * sizeof(*s->dict));
	s->start = carve(&at, (m + 1) * sizeof(*s->start));
	s->perm = carve(&at, m * sizeof(*s->perm));
	s->grouped = carve(&at, m * sizeof(*s->grouped));
	if (encode) {
		s->dict_key = carve(&at, m * sizeof(*s->dict_key));
		s->dict_code = carve(&at, m * sizeof(*s->dict_code));
		s->slots = carve(&at, DICT_SLOTS(m) * sizeof(*s->slots));
		s->direct = carve(&at, DIRECT_VALUES * sizeof(*s->direct));
	} else {
		s->keys = carve(&at, m * sizeof(*s->keys));
		s->pool = carve(&at, KEY_POOL(m) * sizeof(*s->pool));
	}
	return at - base;
}

int column_scratch_init(struct column_scratch *s, int encode, uint32_t most)
{
	size_t m = most ? most : 1;
	void *base;

	memset(s, 0, sizeof(*s));
	if (!(base = block_alloc(scratch_layout(s, 0, encode, m))))
		return error_errno("cannot allocate column buffers");
	scratch_layout(s, (uintptr_t)base, encode, m);
	if (encode)
		memset(s->direct, 0, DIRECT_VALUES * sizeof(*s->direct));
	s->perm_col = COL_NONE;
	return 0;
}

void column_scratch_release(struct column_scratch *s)
{
	free(s->codes);	/* the first array, where the allocation starts */
	memset(s, 0, sizeof(*s));
}

/* 1 + (bits - 1) / 7 without a loop: (bits * 9 + 64) / 64 equals it for 1..64 bits. */
static inline unsigned varint_len(uint64_t v)
{
	unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);

	return (bits * 9 + 64) / 64;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)v | 0x80;
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/*
 * 1 byte per code when every code fits, else the fewest bytes that hold the
 * largest, as planes: all codes' low bytes, then all their second bytes...
 * A plane of a column that varies little is nearly constant, so zstd
 * squeezes it, and the low planes keep their bytes' skew. Varints only where
 * they are under half the planes. A column of few codes other than 0 (a
 * prediction that nearly always holds) lists just those, so that neither
 * this code nor zstd wades through its zeros.
 */
/* What the width is picked from, gathered as the codes are made. */
struct code_stats {
	uint64_t max;		/* all codes or-ed, or the greatest: its highest bit is what counts */
};

static inline void stats_add(struct code_stats *st, uint64_t code)
{
	st->max |= code;
}

/* Whether any of m codes is not 0: with m known, one unrolled chain of ors, two codes to each, and a test. */
static inline __attribute__((always_inline)) int any_nonzero(const uint64_t *codes, uint32_t m)
{
	uint64_t any = 0;
	uint32_t j = 0;

#if defined(__SSE2__)
	__m128i acc = _mm_setzero_si128();

#pragma GCC unroll 8
	for (; j + 2 <= m; j += 2)
		acc = _mm_or_si128(acc, _mm_loadu_si128((const __m128i *)(codes + j)));
	if (_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xffff)
		return 1;
#endif
#pragma GCC unroll 16
	for (; j < m; j++)
		any |= codes[j];
	return any != 0;
}

/* How many of m codes are not 0; inlined with m known, so that a group all 0 is passed over at once. */
static inline __attribute__((always_inline)) uint32_t count_nonzero(const uint64_t *codes, uint32_t m)
{
	uint32_t j, nonzero = 0;

	if (!any_nonzero(codes, m))
		return 0;
#pragma GCC unroll 16
	for (j = 0; j < m; j++)
		nonzero += codes[j] != 0;
	return nonzero;
}

/*
 * The size of the codes other than 0 listed, or, once they take as much as
 * planes bytes, where counting stopped: in most columns they soon do, so
 * the codes are counted a group at a time rather than as they are made.
 */
static uint64_t sparse_size(const uint64_t *codes, uint32_t n, uint64_t planes)
{
	uint64_t size = 4;
	uint32_t i;

	for (i = 0; i + SPARSE_GROUP <= n && size < planes; i += SPARSE_GROUP)
		size += (uint64_t)count_nonzero(codes + i, SPARSE_GROUP) * SPARSE_ENTRY_SIZE;
	if (size < planes)
		size += (uint64_t)count_nonzero(codes + i, n - i) * SPARSE_ENTRY_SIZE;
	return size;
}

/*
 * The size of the codes as varints, or, once it is half of planes bytes,
 * where summing stopped: varints are taken only under that, and in most
 * columns wide enough to ask they are not.
 */
static uint64_t varints_size(const uint64_t *codes, uint32_t n, uint64_t planes)
{
	uint64_t size = 0;
	uint32_t i = 0, end;

	while (i < n && size * 2 < planes) {
		end = n - i < VARINT_GROUP ? n : i + VARINT_GROUP;
#pragma GCC unroll 8
		for (; i < end; i++)
			size += varint_len(codes[i]);
	}
	return size;
}

static unsigned pick_width(const uint64_t *codes, uint32_t n, const struct code_stats *st, size_t *size)
{
	uint64_t vsize, sparse;
	unsigned w = st->max < 0x100 ? 1 : (71 - (unsigned)__builtin_clzll(st->max)) / 8;

	if ((sparse = sparse_size(codes, n, (uint64_t)n * w / 8)) < (uint64_t)n * w / 8) {
		*size = (size_t)sparse;
		return WIDTH_SPARSE;
	}
	/* half a byte each: fewer bytes for zstd to go through, and fewer repeats of a few codes to match */
	if (st->max < 0x10) {
		*size = ((size_t)n + 1) / 2;
		return WIDTH_NIBBLES;
	}
	/* varints take a byte or more each, so they can be under half of two planes only in theory */
	if (w <= 2) {
		*size = (size_t)n * w;
		return w == 1 ? 1 : WIDTH_PLANES | w;
	}
	if ((vsize = varints_size(codes, n, (uint64_t)n * w)) * 2 < (uint64_t)n * w) {
		*size = vsize;
		return 0;
	}
	*size = (size_t)n * w;
	return WIDTH_PLANES | w;
}

/*
 * The planes in one pass over the codes, each code's bytes to their
 * planes; inlined with the number of planes known, so that the loop is
 * unrolled over them.
 */
static inline __attribute__((always_inline)) void
planes_put(uint8_t *restrict p, const uint64_t *restrict codes, uint32_t n, unsigned planes)
{
	uint32_t i;
	unsigned b;

	/* unrolled, as the few instructions a code takes are no more than the loop's own */
#pragma GCC unroll 8
	for (i = 0; i < n; i++)
		for (b = 0; b < planes; b++)
			p[(size_t)b * n + i] = (uint8_t)(codes[i] >> 8 * b);
}

/*
 * Code j of planes stride bytes apart. Up to 4 planes the bytes are put
 * together in 32 bits, so that vector code does so for twice as many
 * codes at once, and widens only the whole codes.
 */
static inline __attribute__((always_inline)) uint64_t
plane_code(const uint8_t *p, size_t stride, uint32_t j, unsigned planes)
{
	uint64_t code = p[j];
	uint32_t narrow = p[j];
	unsigned b;

	if (planes <= 4) {
		for (b = 1; b < planes; b++)
			narrow |= (uint32_t)p[b * stride + j] << 8 * b;
		return narrow;
	}
	for (b = 1; b < planes; b++)
		code |= (uint64_t)p[b * stride + j] << 8 * b;
	return code;
}

#if defined(__SSE2__)
_Static_assert(PLANES_GROUP == 16, "a group of codes is a vector's bytes");

/*
 * PLANES_GROUP codes of up to 4 planes, 1 when it took them: the bytes of
 * two planes interleaved are the codes' 16-bit halves, two of those the
 * 32-bit codes, each interleaved with zeros the 64-bit ones. What the
 * compiler makes of plane_code() shifts each byte into place instead.
 */
static inline __attribute__((always_inline)) int
planes_group(uint64_t *codes, const uint8_t *p, size_t stride, unsigned planes)
{
	__m128i zero = _mm_setzero_si128(), low, high, half[4];
	unsigned k;

	if (planes > 4)
		return 0;
	low = _mm_loadu_si128((const __m128i *)p);
	high = planes > 1 ? _mm_loadu_si128((const __m128i *)(p + stride)) : zero;
	half[0] = _mm_unpacklo_epi8(low, high);
	half[1] = _mm_unpackhi_epi8(low, high);
	low = planes > 2 ? _mm_loadu_si128((const __m128i *)(p + 2 * stride)) : zero;
	high = planes > 3 ? _mm_loadu_si128((const __m128i *)(p + 3 * stride)) : zero;
	half[2] = _mm_unpacklo_epi8(low, high);
	half[3] = _mm_unpackhi_epi8(low, high);
	for (k = 0; k < 2; k++) {
		__m128i lo = _mm_unpacklo_epi16(half[k], half[k + 2]), hi = _mm_unpackhi_epi16(half[k], half[k + 2]);

		_mm_storeu_si128((__m128i *)(codes + 8 * k), _mm_unpacklo_epi32(lo, zero));
		_mm_storeu_si128((__m128i *)(codes + 8 * k + 2), _mm_unpackhi_epi32(lo, zero));
		_mm_storeu_si128((__m128i *)(codes + 8 * k + 4), _mm_unpacklo_epi32(hi, zero));
		_mm_storeu_si128((__m128i *)(codes + 8 * k + 6), _mm_unpackhi_epi32(hi, zero));
	}
	return 1;
}
#else
static inline int planes_group(uint64_t *codes, const uint8_t *p, size_t stride, unsigned planes)
{
	return 0;
}
#endif

/*
 * n codes from planes stride bytes apart (a lazy column's events pos..:
 * p + pos, its n events apart): groups of a fixed count, in vector code
 * of planes_group() or the compiler's, then the rest one by one.
 */
static inline __attribute__((always_inline)) void
planes_get(uint64_t *restrict codes, const uint8_t *restrict p, size_t stride, uint32_t n, unsigned planes)
{
	uint32_t i, j;

	for (i = 0; i + PLANES_GROUP <= n; i += PLANES_GROUP) {
		if (planes_group(codes + i, p + i, stride, planes))
			continue;
		for (j = i; j < i + PLANES_GROUP; j++)
			codes[j] = plane_code(p, stride, j, planes);
	}
	for (; i < n; i++)
		codes[i] = plane_code(p, stride, i, planes);
}

/* The counts of planes that blocks mostly have get loops of their own, unrolled over the planes. */
static void planes_encode(uint8_t *p, const uint64_t *codes, uint32_t n, unsigned planes)
{
	if (planes == 1)
		planes_put(p, codes, n, 1);
	else if (planes == 2)
		planes_put(p, codes, n, 2);
	else if (planes == 3)
		planes_put(p, codes, n, 3);
	else
		planes_put(p, codes, n, planes);
}

static void planes_decode(uint64_t *codes, const uint8_t *p, size_t stride, uint32_t n, unsigned planes)
{
	if (planes == 1)
		planes_get(codes, p, stride, n, 1);
	else if (planes == 2)
		planes_get(codes, p, stride, n, 2);
	else if (planes == 3)
		planes_get(codes, p, stride, n, 3);
	else
		planes_get(codes, p, stride, n, planes);
}

/* The sparse entries of codes i..i + m; inlined with m known, so that a group all 0 is passed over at once. */
static inline __attribute__((always_inline)) uint8_t *
put_nonzero(uint8_t *p, const uint64_t *codes, uint32_t i, uint32_t m)
{
	uint32_t j;

	if (!any_nonzero(codes + i, m))
		return p;
	for (j = i; j < i + m; j++)
		if (codes[j]) {
			put_u32(p, j);
			put_u64(p + 4, codes[j]);
			p += SPARSE_ENTRY_SIZE;
		}
	return p;
}

static uint8_t *put_sparse(uint8_t *p, const uint64_t *codes, uint32_t n)
{
	uint8_t *count = p;
	uint32_t i;

	for (i = 0, p += 4; i + SPARSE_GROUP <= n; i += SPARSE_GROUP)
		p = put_nonzero(p, codes, i, SPARSE_GROUP);
	p = put_nonzero(p, codes, i, n - i);
	put_u32(count, (uint32_t)((p - count - 4) / SPARSE_ENTRY_SIZE));
	return p;
}

static uint8_t *put_codes(uint8_t *p, const uint64_t *codes, uint32_t n, unsigned w)
{
	unsigned planes;
	uint32_t i;

	if (w == WIDTH_SPARSE)
		return put_sparse(p, codes, n);
	if (w == WIDTH_NIBBLES) {
		UNROLL_SHORT for (i = 0; i + 1 < n; i += 2)
			*p++ = (uint8_t)(codes[i] | codes[i + 1] << 4);
		if (i < n)
			*p++ = (uint8_t)codes[i];
		return p;
	}
	if (!w) {
		for (i = 0; i < n; i++)
			p = put_varint(p, codes[i]);
		return p;
	}
	planes = w == 1 ? 1 : w & ~WIDTH_PLANES;
	planes_encode(p, codes, n, planes);
	return p + (size_t)n * planes;
}

/* NULL when p[0..len) is a sound list of sparse codes for n events, else what is wrong. */
static const char *sparse_check(const uint8_t *p, size_t len, uint32_t n)
{
	uint32_t m, j, i, next = 0;

	if (len < 4 || (m = get_u32(p)) > n || len != 4 + (size_t)m * SPARSE_ENTRY_SIZE)
		return "column length does not match its width";
	for (j = 0, p += 4; j < m; j++, p += SPARSE_ENTRY_SIZE) {
		if ((i = get_u32(p)) < next || i >= n)
			return "sparse codes out of order";
		next = i + 1;
	}
	return NULL;
}

#if defined(__SSE2__)
/*
 * The 2 * PLANES_GROUP codes of the PLANES_GROUP bytes at p, two to a
 * byte: the bytes' low and high halves interleaved are the codes as bytes,
 * widened as planes_group() does.
 */
static inline __attribute__((always_inline)) void nibbles_group(uint64_t *codes, const uint8_t *p)
{
	__m128i zero = _mm_setzero_si128(), mask = _mm_set1_epi8(0x0f), b = _mm_loadu_si128((const __m128i *)p);
	__m128i half[2] = { _mm_and_si128(b, mask), _mm_and_si128(_mm_srli_epi16(b, 4), mask) };
	__m128i bytes[2] = { _mm_unpacklo_epi8(half[0], half[1]), _mm_unpackhi_epi8(half[0], half[1]) };
	unsigned k, h;

	for (k = 0; k < 2; k++)
		for (h = 0; h < 2; h++) {
			__m128i w16 = h ? _mm_unpackhi_epi8(bytes[k], zero) : _mm_unpacklo_epi8(bytes[k], zero);
			__m128i lo = _mm_unpacklo_epi16(w16, zero), hi = _mm_unpackhi_epi16(w16, zero);
			uint64_t *out = codes + 16 * k + 8 * h;

			_mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi32(lo, zero));
			_mm_storeu_si128((__m128i *)(out + 2), _mm_unpackhi_epi32(lo, zero));
			_mm_storeu_si128((__m128i *)(out + 4), _mm_unpacklo_epi32(hi, zero));
			_mm_storeu_si128((__m128i *)(out + 6), _mm_unpackhi_epi32(hi, zero));
		}
}
#endif

/* The m codes of events pos.. of nibbles at p: groups of a vector's bytes from an even event, then one by one. */
static void nibbles_get(uint64_t *restrict codes, const uint8_t *restrict p, uint32_t pos, uint32_t m)
{
	uint32_t j = 0;

#if defined(__SSE2__)
	if (!(pos & 1))
		for (; j + 2 * PLANES_GROUP <= m; j += 2 * PLANES_GROUP)
			nibbles_group(codes + j, p + (pos + j) / 2);
#endif
	for (; j < m; j++)
		codes[j] = p[(pos + j) / 2] >> 4 * ((pos + j) & 1) & 0x0f;
}

/* How many planes codes of width w take (1: a byte each), or 0 when w is not one of planes. */
static unsigned planes_of(unsigned w)
{
	unsigned planes = w & ~WIDTH_PLANES;

	if (w == 1)
		return 1;
	return (w & WIDTH_PLANES) && planes >= 2 && planes <= 8 ? planes : 0;
}

/*
 * Reads n codes of width w from p[0..len); NULL or what is wrong. Sparse
 * codes are not among them: they are taken as the events reach them.
 */
static const char *get_codes(const uint8_t *p, size_t len, uint64_t *codes, uint32_t n, unsigned w)
{
	const uint8_t *end = p + len;
	unsigned planes = planes_of(w);
	uint32_t i;

	if (w == WIDTH_NIBBLES) {
		if (len != ((size_t)n + 1) / 2)
			return "column length does not match its width";
		nibbles_get(codes, p, 0, n);
		return NULL;
	}
	if (w == 0) {
		for (i = 0; i < n; i++) {
			uint64_t v = 0;
			unsigned shift = 0;

			for (;;) {
				if (p == end || shift > 63)
					return "bad varint";
				v |= (uint64_t)(*p & 0x7f) << shift;
				if (!(*p++ & 0x80))
					break;
				shift += 7;
			}
			codes[i] = v;
		}
		return p == end ? NULL : "column has trailing bytes";
	}
	if (!planes)
		return "bad column width";
	if (len != (size_t)n * planes)
		return "column length does not match its width";
	planes_decode(codes, p, n, n, planes);
	return NULL;
}

/* Sparse codes of n events, sound by sparse_check(), into codes. */
static void sparse_get(uint64_t *codes, const uint8_t *p, size_t len, uint32_t n)
{
	const uint8_t *end = p + len;

	memset(codes, 0, n * sizeof(*codes));
	for (p += 4; p < end; p += SPARSE_ENTRY_SIZE)
		codes[get_u32(p)] = get_u64(p + 4);
}

/*
 * The order of the groups of dict column g, whose entries for the n events
 * are k[], nk of them: group after group in the order of the entries, each
 * group's events in their order. It stands until column g is made or read
 * again (groups_forget()).
 */
static void group_order(struct column_scratch *s, unsigned g, const uint16_t *k, uint32_t nk, uint32_t n)
{
	uint32_t *start = s->start, e, i;

	if (s->perm_col == g)
		return;
	memset(start, 0, (nk + 1) * sizeof(*start));
	for (i = 0; i < n; i++)
		start[k[i] + 1]++;
	for (e = 0; e < nk; e++)
		start[e + 1] += start[e];
	/* each event takes its group's next place: start[e] moves on to where group e + 1 starts */
	for (i = 0; i < n; i++)
		s->perm[i] = start[k[i]]++;
	memmove(start + 1, start, nk * sizeof(*start));
	start[0] = 0;
	s->perm_col = g;
}

/* Column c's entries are made anew: the order of its groups is no longer known. */
static void groups_forget(struct column_scratch *s, unsigned c)
{
	if (s->perm_col == c)
		s->perm_col = COL_NONE;
}

/* The width of m codes, picked from the greatest, and their size in *size. */
static unsigned group_width(const uint64_t *codes, uint32_t m, size_t *size)
{
	struct code_stats st = { 0 };
	uint64_t or4[4] = { 0 };
	uint32_t i;

	/* four chains of ors, not one that waits on each */
	for (i = 0; i + 4 <= m; i += 4) {
		or4[0] |= codes[i];
		or4[1] |= codes[i + 1];
		or4[2] |= codes[i + 2];
		or4[3] |= codes[i + 3];
	}
	for (; i < m; i++)
		or4[0] |= codes[i];
	stats_add(&st, or4[0] | or4[1] | or4[2] | or4[3]);
	return pick_width(codes, m, &st, size);
}

/*
 * The codes of a column grouped as group_order() last ordered them, nk
 * groups of n events: moved to their groups' order, then put at p a
 * group's record after another, each its width, length and codes.
 */
static uint8_t *put_groups(uint8_t *p, struct column_scratch *s, uint32_t nk, uint32_t n)
{
	uint32_t i, e;

	UNROLL_SHORT for (i = 0; i < n; i++)
		s->grouped[s->perm[i]] = s->codes[i];
	for (e = 0; e < nk; e++) {
		const uint64_t *codes = s->grouped + s->start[e];
		uint32_t m = s->start[e + 1] - s->start[e];
		size_t size;
		unsigned w = group_width(codes, m, &size);

		p[0] = (uint8_t)w;
		put_u32(p + 1, (uint32_t)size);
		p = put_codes(p + GROUP_HEADER_SIZE, codes, m, w);
	}
	return p;
}

/* The groups' records of a grouped column, from p[0..len), their codes put in the groups' order into s->grouped. */
static const char *get_groups(const uint8_t *p, size_t len, struct column_scratch *s, uint32_t nk)
{
	const uint8_t *end = p + len;
	const char *err;
	uint32_t e;

	for (e = 0; e < nk; e++) {
		uint64_t *group = s->grouped + s->start[e];
		uint32_t m = s->start[e + 1] - s->start[e], glen;
		unsigned w;

		if ((size_t)(end - p) < GROUP_HEADER_SIZE ||
		    (glen = get_u32(p + 1)) > (size_t)(end - p) - GROUP_HEADER_SIZE)
			return "column group cut short";
		w = p[0];
		p += GROUP_HEADER_SIZE;
		if ((err = w == WIDTH_SPARSE ? sparse_check(p, glen, m) : get_codes(p, glen, group, m, w)))
			return err;
		if (w == WIDTH_SPARSE)
			sparse_get(group, p, glen, m);
		p += glen;
	}
	return p == end ? NULL : "column has trailing bytes";
}

/*
 * The n codes of column d's record p[0..len) of width w: an array of them
 * in event order, or of a grouped column's in the groups' order, which in
 * gathers. Returns where in takes them from, or -1 and *err.
 */
static int codes_of(const uint8_t *p, size_t len, const struct column_def *d, unsigned w,
		    uint16_t *const *keyidx, const uint32_t *keyn, uint32_t n, struct column_scratch *s,
		    struct codes_in *in, const char **err)
{
	if (d->group == COL_NONE) {
		in->codes = s->codes;
		*err = get_codes(p, len, s->codes, n, w);
		return *err ? -1 : CODES_ARRAY;
	}
	*err = "bad column width";
	if (w != WIDTH_GROUPS)
		return -1;
	group_order(s, d->group, keyidx[d->group], keyn[d->group], n);
	in->codes = s->grouped;
	in->perm = s->perm;
	*err = get_groups(p, len, s, keyn[d->group]);
	return *err ? -1 : CODES_GATHER;
}

/*
 * With PRED_RISE the difference is taken as it is, for a column that does
 * not fall, rather than zigzagged. With PRED_ZERO, 0 is coded 0; a non-zero
 * value's difference z skips the one difference that would mean 0 (z0), so
 * the codes stay a bijection on 64 bits.
 */
static inline uint64_t diff_code(uint64_t d, unsigned flags)
{
	return flags & PRED_RISE ? d : zigzag(d);
}

static inline uint64_t diff_of(uint64_t c, unsigned flags)
{
	return flags & PRED_RISE ? c : unzigzag(c);
}

static inline uint64_t code_of(uint64_t v, uint64_t pred, unsigned flags)
{
	uint64_t z = diff_code(v - pred, flags), z0;

	if (!(flags & PRED_ZERO))
		return z;
	if (!v)
		return 0;
	z0 = diff_code(-pred, flags);
	return z < z0 ? z + 1 : z;
}

static inline uint64_t value_of(uint64_t c, uint64_t pred, unsigned flags)
{
	uint64_t z0;

	if (!(flags & PRED_ZERO))
		return pred + diff_of(c, flags);
	if (!c)
		return 0;
	z0 = diff_code(-pred, flags);
	return pred + diff_of(c <= z0 ? c - 1 : c, flags);
}

/* Sparse entries checked by sparse_check(), to be read from the first. */
static struct codes_in sparse_in(const uint8_t *p, size_t len)
{
	struct codes_in in = { NULL, p + 4, p + len, len > 4 ? get_u32(p + 4) : UINT32_MAX, 0, 0 };

	return in;
}

/* The code of event i, the events coming in order. */
static inline __attribute__((always_inline)) uint64_t code_in(struct codes_in *in, uint32_t i, int from)
{
	uint64_t code;

	if (from == CODES_ARRAY)
		return in->codes[i];
	if (from == CODES_GATHER)
		return in->codes[in->perm[i]];
	if (from == CODES_BYTES)
		return in->p[i];
	if (i != in->next)
		return 0;
	code = get_u64(in->p + 4);
	in->p += SPARSE_ENTRY_SIZE;
	in->next = in->p < in->end ? get_u32(in->p) : UINT32_MAX;
	return code;
}

/*
 * The delta codec in one loop for both directions: encode turns vals[c]
 * into codes, decode the reverse, with the same predictions. Inlined with
 * decode, flags and where the codes come from known, so that the loops
 * test none of them.
 */

static inline __attribute__((always_inline)) void
delta_loop(uint64_t *v, const uint64_t *src, const uint16_t *k, uint32_t keyn, uint32_t n, uint64_t base,
	   uint64_t *codes, struct codes_in *in, int from, uint64_t *last, struct code_stats *st, int decode,
	   unsigned flags)
{
	struct code_stats acc = { 0 };
	uint32_t i;

	if (flags & PRED_SAME) {
		UNROLL for (i = 0; i < n; i++) {
			if (decode)
				v[i] = value_of(code_in(in, i, from), src[i], flags);
			else
				stats_add(&acc, codes[i] = code_of(v[i], src[i], flags));
		}
	} else if (k) {
		/* the source's value at the key's last event, the base before its first */
		for (i = 0; i < keyn; i++)
			last[i] = base;
		UNROLL for (i = 0; i < n; i++) {
			if (decode)
				v[i] = value_of(code_in(in, i, from), last[k[i]], flags);
			else
				stats_add(&acc, codes[i] = code_of(v[i], last[k[i]], flags));
			last[k[i]] = src[i];
		}
	} else {
		uint64_t pred = base;

		UNROLL for (i = 0; i < n; i++) {
			if (decode)
				v[i] = value_of(code_in(in, i, from), pred, flags);
			else
				stats_add(&acc, codes[i] = code_of(v[i], pred, flags));
			pred = src[i];
		}
	}
	if (!decode)
		*st = acc;
}

/* Encoding, st gets what the width is picked from; decoding, it is NULL, and the codes come from in. */
static inline __attribute__((always_inline)) void
delta_run(const struct column_def *cols, unsigned c, uint64_t *const *vals, uint16_t *const *keyidx,
	  uint32_t keyn, uint32_t n, uint64_t base, uint64_t *codes, struct codes_in *in, int from,
	  uint64_t *last, struct code_stats *st, int decode)
{
	const struct column_def *d = &cols[c];
	uint64_t *v = vals[c];
	const uint64_t *src = vals[d->src == COL_NONE ? c : d->src];
	const uint16_t *k = d->key == COL_NONE ? NULL : keyidx[d->key];

	/* the predictors of the schemas, each its own loop; any other mix in a loop that tests */
	switch (d->flags) {
	case 0:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, 0);
		break;
	case PRED_ZERO:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, PRED_ZERO);
		break;
	case PRED_RISE:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, PRED_RISE);
		break;
	case PRED_SAME:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, PRED_SAME);
		break;
	case PRED_SAME | PRED_ZERO:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, PRED_SAME | PRED_ZERO);
		break;
	case PRED_SAME | PRED_RISE:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, PRED_SAME | PRED_RISE);
		break;
	default:
		delta_loop(v, src, k, keyn, n, base, codes, in, from, last, st, decode, d->flags);
		break;
	}
}

static inline uint32_t hash64(uint64_t v)
{
	v *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(v >> 40);
}

/* Where (v, key) is looked for first in a hash table of mask + 1 slots. */
static inline uint32_t dict_home(uint64_t v, uint32_t key, uint32_t mask)
{
	return hash64(v ^ (uint64_t)key * 0xff51afd7ed558ccdull) & mask;
}

/*
 * The slot of (v, key) in the dictionary's hash table, from slot h on:
 * where it is, or the empty one where it goes. Without keyed, every key is 0.
 */
static inline __attribute__((always_inline)) uint32_t
dict_probe(const struct column_scratch *s, uint32_t h, uint64_t v, uint32_t key, int keyed)
{
	while (s->slots[h].e && (s->slots[h].v != v || (keyed && s->slots[h].key != key)))
		h = (h + 1) & s->mask;
	return h;
}

/* The slot of (v, key), looked for from its home slot on. */
static inline __attribute__((always_inline)) uint32_t
dict_slot(const struct column_scratch *s, uint64_t v, uint32_t key, int keyed)
{
	return dict_probe(s, dict_home(v, key, s->mask), v, key, keyed);
}

/* Puts entry e (from 0) in slot h. */
static inline void dict_put(struct column_scratch *s, uint32_t h, uint32_t e)
{
	s->slots[h] = (struct dict_slot){ s->dict[e], e + 1, (uint16_t)s->dict_key[e], (uint16_t)s->dict_code[e] };
}

/* Doubles the hash table of the dictionary's nd entries. */
static void dict_grow(struct column_scratch *s, uint32_t nd, int keyed)
{
	uint32_t e;

	s->mask = 2 * s->mask + 1;
	memset(s->slots, 0, (s->mask + 1) * sizeof(*s->slots));
	for (e = 0; e < nd; e++)
		dict_put(s, dict_slot(s, s->dict[e], s->dict_key[e], keyed), e);
}

/* Adds (v, key) as entry nd of the dictionary. */
static inline __attribute__((always_inline)) void
dict_add(struct column_scratch *s, uint64_t v, uint32_t key, uint32_t nd, int keyed)
{
	s->dict[nd] = v;
	s->dict_key[nd] = key;
	s->dict_code[nd] = keyed ? (uint32_t)s->last[key]++ : nd;
}

/* Adds v, under DIRECT_VALUES, to an unkeyed dictionary: out of the loop, as few values are new. */
static __attribute__((noinline)) uint32_t dict_direct_add(struct column_scratch *s, uint64_t v)
{
	dict_add(s, v, 0, s->nd, 0);
	s->direct[v] = s->stamp << 16 | s->nd;
	return s->nd++;
}

/*
 * The entry of v in an unkeyed dictionary, for v under DIRECT_VALUES:
 * from the table indexed by v, whose slots the build's stamp marks as its
 * own. The table and the stamp, shifted to where a slot holds it, are the
 * loop's copies, which stay in registers: s's might change with each entry
 * stored, as far as the compiler knows. A slot of this build's, with the
 * stamp taken out, is its entry.
 */
static inline __attribute__((always_inline)) uint32_t
dict_direct(struct column_scratch *s, const uint32_t *direct, uint32_t stamp_bits, uint64_t v)
{
	uint32_t entry = direct[v] ^ stamp_bits;

	if (entry > 0xffff)
		return dict_direct_add(s, v);
	return entry;
}

/*
 * The slot of (v, key), not in its home slot h: found further on, or
 * added to the dictionary as its next entry, s->nd. Out of the loop, as
 * few values are either.
 */
static __attribute__((noinline)) struct dict_slot dict_hashed_away(struct column_scratch *s, uint32_t h, uint64_t v,
								   uint32_t key, int keyed)
{
	h = dict_probe(s, h, v, key, keyed);
	if (s->slots[h].e)
		return s->slots[h];
	dict_add(s, v, key, s->nd, keyed);
	dict_put(s, h, s->nd++);
	if (2 * s->nd > s->mask + 1) {
		dict_grow(s, s->nd, keyed);
		h = dict_slot(s, v, key, keyed);
	}
	return s->slots[h];
}

/* The slot of (v, key) in the dictionary's hash table, where it is added if new. */
static inline __attribute__((always_inline)) struct dict_slot
dict_hashed(struct column_scratch *s, uint64_t v, uint32_t key, int keyed)
{
	uint32_t h = dict_home(v, key, s->mask);
	struct dict_slot e = s->slots[h];

	if (__builtin_expect(e.v != v || (keyed && e.key != key) || !e.e, 0))
		return dict_hashed_away(s, h, v, key, keyed);
	return e;
}

/*
 * dict_build's loop, inlined with keyed known so that an unkeyed column
 * neither compares nor counts keys. The entries so far are counted in s,
 * by the steps out of the loop that add them: the loop keeps none of its
 * own in memory, and so is unrolled.
 */
static inline __attribute__((always_inline)) uint32_t
dict_loop(const uint64_t *restrict v, const uint16_t *restrict k, uint32_t n, struct column_scratch *s,
	  uint16_t *restrict idx, int keyed)
{
	uint64_t *restrict codes = s->codes;
	const uint32_t *direct = s->direct;
	uint32_t i, stamp_bits = s->stamp << 16;

	s->nd = 0;
	UNROLL for (i = 0; i < n; i++) {
		if (keyed) {
			struct dict_slot e = dict_hashed(s, v[i], k[i], 1);

			codes[i] = e.code;
			idx[i] = e.e - 1;
		} else {
			uint32_t entry = v[i] < DIRECT_VALUES ? dict_direct(s, direct, stamp_bits, v[i]) :
				dict_hashed(s, v[i], 0, 0).e - 1;

			codes[i] = idx[i] = entry;
		}
	}
	return s->nd;
}

/*
 * The greatest code of a dictionary of nd entries: an unkeyed one's codes
 * are its entries, all of them, and a keyed one's count each key's values.
 */
static uint64_t dict_max_code(const struct column_scratch *s, uint32_t keyn, uint32_t nd, int keyed)
{
	uint64_t most = 0;
	uint32_t key;

	if (!keyed)
		return nd ? nd - 1 : 0;
	for (key = 0; key < keyn; key++)
		if (s->last[key] > most)
			most = s->last[key];
	return most ? most - 1 : 0;
}

/*
 * Fills s->dict with the distinct values (with a key k: the distinct pairs
 * of key and value) in order of appearance, idx with their entries, and
 * s->codes with the entries or, with a key, each value's number among its key's.
 */
static uint32_t dict_build(const uint64_t *v, const uint16_t *k, uint32_t keyn, uint32_t n,
			   struct column_scratch *s, uint16_t *idx, struct code_stats *st)
{
	uint32_t nd;

	s->mask = DICT_MIN_SLOTS - 1;
	memset(s->slots, 0, DICT_MIN_SLOTS * sizeof(*s->slots));
	if (!k) {
		if (++s->stamp > 0xffff) {
			memset(s->direct, 0, DIRECT_VALUES * sizeof(*s->direct));
			s->stamp = 1;
		}
		nd = dict_loop(v, NULL, n, s, idx, 0);
		st->max = dict_max_code(s, keyn, nd, 0);
		return nd;
	}
	memset(s->last, 0, keyn * sizeof(*s->last));
	nd = dict_loop(v, k, n, s, idx, 1);
	st->max = dict_max_code(s, keyn, nd, 1);
	return nd;
}

/* Entry j from its byte code; the greater of that code and most. */
static inline __attribute__((always_inline)) uint8_t
byte_entry(uint16_t *idx, const uint8_t *p, uint32_t j, uint8_t most)
{
	idx[j] = p[j];
	return p[j] > most ? p[j] : most;
}

/*
 * Byte codes widened to entries, in groups of a fixed count that the
 * compiler turns into vector code, as planes_get() does; the greatest code.
 * Each place in a group keeps its own greatest, a vector of them, so that
 * only the last group's are compared with each other.
 */
static uint8_t bytes_to_entries(uint16_t *restrict idx, const uint8_t *restrict p, uint32_t n)
{
	uint8_t lanes[PLANES_GROUP] = { 0 }, most = 0;
	uint32_t i, j;

	for (i = 0; i + PLANES_GROUP <= n; i += PLANES_GROUP)
		for (j = 0; j < PLANES_GROUP; j++)
			lanes[j] = byte_entry(idx + i, p + i, j, lanes[j]);
	for (j = 0; j < PLANES_GROUP; j++)
		most = lanes[j] > most ? lanes[j] : most;
	for (; i < n; i++)
		most = byte_entry(idx, p, i, most);
	return most;
}

#if defined(__SSE2__)
/*
 * The entries of the 2 * PLANES_GROUP nibbles at p into idx, as
 * nibbles_group() takes them apart, widened to 16 bits; the greatest
 * so far kept in most, a vector of them.
 */
static inline __attribute__((always_inline)) void nibbles_entries(uint16_t *idx, const uint8_t *p, __m128i *most)
{
	__m128i zero = _mm_setzero_si128(), mask = _mm_set1_epi8(0x0f), b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
	__m128i bytes[2] = { _mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi) };
	unsigned k;

	*most = _mm_max_epu8(*most, _mm_max_epu8(lo, hi));
	for (k = 0; k < 2; k++) {
		_mm_storeu_si128((__m128i *)(idx + 16 * k), _mm_unpacklo_epi8(bytes[k], zero));
		_mm_storeu_si128((__m128i *)(idx + 16 * k + 8), _mm_unpackhi_epi8(bytes[k], zero));
	}
}
#endif

/* Nibble codes widened to entries, as bytes_to_entries() does bytes; the greatest code. */
static uint8_t nibbles_to_entries(uint16_t *restrict idx, const uint8_t *restrict p, uint32_t n)
{
	uint8_t most = 0;
	uint32_t i = 0;

#if defined(__SSE2__)
	uint8_t lanes[PLANES_GROUP];
	__m128i acc = _mm_setzero_si128();
	unsigned j;

	for (; i + 2 * PLANES_GROUP <= n; i += 2 * PLANES_GROUP)
		nibbles_entries(idx + i, p + i / 2, &acc);
	_mm_storeu_si128((__m128i *)lanes, acc);
	for (j = 0; j < PLANES_GROUP; j++)
		most = lanes[j] > most ? lanes[j] : most;
#endif
	for (; i < n; i++) {
		idx[i] = p[i / 2] >> 4 * (i & 1) & 0x0f;
		most = idx[i] > most ? (uint8_t)idx[i] : most;
	}
	return most;
}

/* An unkeyed dictionary's codes, from in, to entries and, unless v is NULL, values. */
static inline __attribute__((always_inline)) const char *
dict_values(const uint64_t *dict, struct codes_in *in, int from, uint32_t nd, uint32_t n,
	    uint16_t *idx, uint64_t *v)
{
	uint32_t i;

	/* a byte or half each, the codes are checked all at once and the values looked up after */
	if (from == CODES_BYTES || from == CODES_NIBBLES) {
		if (n && (from == CODES_BYTES ? bytes_to_entries(idx, in->p, n) : nibbles_to_entries(idx, in->p, n)) >= nd)
			return "dictionary index out of range";
		UNROLL for (i = 0; v && i < n; i++)
			v[i] = dict[idx[i]];
		return NULL;
	}
	for (i = 0; i < n; i++) {
		uint64_t code = code_in(in, i, from);

		if (code >= nd)
			return "dictionary index out of range";
		idx[i] = (uint32_t)code;
		if (v)
			v[i] = dict[code];
	}
	return NULL;
}

/* Whether key l's run is full: see struct key_entries. */
static inline int key_full(const struct key_entries *l)
{
	return !(l->count & (l->count - 1));
}

/* Makes room for one more of key l's entries, its run full: the run moves to the pool's end, twice as long. */
static void key_grow(struct key_entries *l, uint32_t *pool, uint32_t *used)
{
	memcpy(pool + *used, pool + l->at, l->count * sizeof(*pool));
	l->at = *used;
	*used += l->count ? 2 * l->count : 1;
}

/* Where a keyed dictionary's decoding stands: its pool, how much of it is taken, the next entry and the count. */
struct key_pool {
	uint32_t *pool;
	uint32_t used, next, nd;
};

/*
 * A code of key l at or past its count: one equal to it takes the next
 * entry of the dictionary, which joins the key's run in the pool. NULL, or
 * what is wrong. Out of line, as it is seldom taken, and with what it
 * needs in one place: inlined, or with more arguments, its registers would
 * crowd the loop of dict_keyed().
 */
static __attribute__((noinline, cold)) const char *
key_add(struct key_entries *l, uint64_t code, struct key_pool *kp)
{
	if (code > l->count)
		return "dictionary index out of range";
	if (kp->next == kp->nd)
		return "dictionary does not match its indexes";
	if (key_full(l))
		key_grow(l, kp->pool, &kp->used);
	kp->pool[l->at + l->count++] = kp->next++;
	return NULL;
}

/*
 * A keyed dictionary's codes, from in, back to entries (and, unless v is
 * NULL, values from dict), in one pass: a code equal to the number of
 * values its key has had so far takes the next entry of the dictionary.
 */
static inline __attribute__((always_inline)) const char *
dict_keyed(struct column_scratch *s, const uint64_t *dict, const uint16_t *k, uint32_t keyn, struct codes_in *in,
	   int from, uint32_t nd, uint32_t n, uint16_t *idx, uint64_t *v)
{
	struct key_entries *keys = s->keys;
	struct key_pool kp = { s->pool, 0, 0, nd };
	const uint32_t *pool = s->pool;
	uint32_t i;
	const char *err;

	memset(keys, 0, keyn * sizeof(*keys));
	UNROLL_SHORT for (i = 0; i < n; i++) {
		uint32_t key = k[i], entry;
		uint64_t code = code_in(in, i, from);

		/* one test for the common case, a value its key has had before */
		if (code >= keys[key].count && (err = key_add(&keys[key], code, &kp)))
			return err;
		entry = pool[keys[key].at + code];
		idx[i] = entry;
		if (v)
			v[i] = dict[entry];
	}
	return kp.next == nd ? NULL : "dictionary does not match its indexes";
}

/* A dictionary's codes, from in, to entries and, unless v is NULL, values: its loops with all that known. */
static inline __attribute__((always_inline)) const char *
dict_from(struct column_scratch *s, const uint64_t *dict, const uint16_t *k, uint32_t keyn, struct codes_in *in,
	  int from, uint32_t nd, uint32_t n, uint16_t *idx, uint64_t *v)
{
	if (k && v)
		return dict_keyed(s, dict, k, keyn, in, from, nd, n, idx, v);
	if (k)
		return dict_keyed(s, dict, k, keyn, in, from, nd, n, idx, NULL);
	if (v)
		return dict_values(dict, in, from, nd, n, idx, v);
	return dict_values(dict, in, from, nd, n, idx, NULL);
}

/*
 * dict_from() in a function of its own, where the rest of column_decode()
 * does not take the registers of its loops; in is its own copy, whose
 * fields can stay in registers.
 */
static __attribute__((noinline)) const char *
dict_codes(struct column_scratch *s, const uint64_t *dict, const uint16_t *k, uint32_t keyn, struct codes_in in,
	   int from, uint32_t nd, uint32_t n, uint16_t *idx, uint64_t *v)
{
	if (from == CODES_BYTES)
		return dict_from(s, dict, k, keyn, &in, CODES_BYTES, nd, n, idx, v);
	/* unkeyed: a keyed dictionary's loop takes its codes from an array */
	if (from == CODES_NIBBLES)
		return dict_values(dict, &in, CODES_NIBBLES, nd, n, idx, v);
	if (from == CODES_SPARSE)
		return dict_from(s, dict, k, keyn, &in, CODES_SPARSE, nd, n, idx, v);
	if (from == CODES_GATHER)
		return dict_from(s, dict, k, keyn, &in, CODES_GATHER, nd, n, idx, v);
	return dict_from(s, dict, k, keyn, &in, CODES_ARRAY, nd, n, idx, v);
}

static uint32_t rle_build(const uint64_t *v, uint32_t n, uint8_t *p)
{
	uint32_t i = 0, runs = 0;

	while (i < n) {
		uint32_t j = i + 1;

		while (j < n && v[j] == v[i])
			j++;
		if (p) {
			put_u64(p, v[i]);
			put_u32(p + 8, j - i);
			p += 12;
		}
		runs++;
		i = j;
	}
	return runs;
}

/*
 * The width of column d's codes, and their size: a grouped column's
 * groups pick their own, and it takes at most 8 bytes an event and a
 * group's record header for each group.
 */
static unsigned column_width(const struct column_def *d, uint16_t **keyidx, const uint32_t *keyn, uint32_t n,
			     struct column_scratch *s, const struct code_stats *st, size_t *size)
{
	if (d->group == COL_NONE)
		return pick_width(s->codes, n, st, size);
	group_order(s, d->group, keyidx[d->group], keyn[d->group], n);
	*size = 8 * (size_t)n + GROUP_HEADER_SIZE * (size_t)keyn[d->group];
	return WIDTH_GROUPS;
}

int column_encode(struct buf *out, const struct column_def *cols, unsigned c,
		  uint64_t *const *vals, uint16_t **keyidx, uint32_t *keyn, uint32_t n,
		  struct column_scratch *s)
{
	const struct column_def *d = &cols[c];
	struct code_stats st;
	uint64_t base = 0;
	uint32_t nd = 0;
	unsigned w = 0;
	size_t size = 0, head = COLUMN_HEADER_SIZE;
	uint8_t *rec, *p;

	switch (d->enc) {
	case ENC_DELTA:
		if (!(d->flags & PRED_SAME))
			base = n ? vals[d->src == COL_NONE ? c : d->src][0] : 0;
		delta_run(cols, c, vals, keyidx, d->key == COL_NONE ? 0 : keyn[d->key], n, base,
			  s->codes, NULL, CODES_ARRAY, s->last, &st, 0);
		w = column_width(d, keyidx, keyn, n, s, &st, &size);
		break;
	case ENC_DICT:
		groups_forget(s, c);
		nd = keyn[c] = dict_build(vals[c], d->key == COL_NONE ? NULL : keyidx[d->key],
					  d->key == COL_NONE ? 0 : keyn[d->key], n, s, keyidx[c], &st);
		w = column_width(d, keyidx, keyn, n, s, &st, &size);
		head += 4 + 8 * (size_t)nd;
		break;
	case ENC_RLE:
		size = 12 * (size_t)rle_build(vals[c], n, NULL);
		head += 4;
		break;
	default:
		BUG("column '%s' has encoding %d", d->name, d->enc);
	}
	if (buf_grow(out, head + size))
		return -1;
	rec = p = out->data + out->len;
	put_u16(p, (uint16_t)c);
	p[2] = d->enc;
	p[3] = (uint8_t)w;
	put_u64(p + 8, base);
	p += COLUMN_HEADER_SIZE;
	if (d->enc == ENC_RLE) {
		put_u32(p, rle_build(vals[c], n, p + 4));
		p += size + 4;
	} else {
		if (d->enc == ENC_DICT) {
			uint32_t i;

			put_u32(p, nd);
			for (i = 0; i < nd; i++)
				put_u64(p + 4 + 8 * i, s->dict[i]);
			p += 4 + 8 * (size_t)nd;
		}
		p = w == WIDTH_GROUPS ? put_groups(p, s, keyn[d->group], n) : put_codes(p, s->codes, n, w);
	}
	put_u32(rec + 4, (uint32_t)(p - rec - COLUMN_HEADER_SIZE));
	out->len += p - rec;
	return 0;
}

static int delta_chunked(const uint8_t *rec, size_t len, const struct column_def *cols, unsigned c,
			 uint64_t *const *vals, uint16_t *const *keyidx, uint32_t keyn, uint32_t n,
			 uint64_t *last, const char **err);

/* A run of value val, n long: runs are mostly long ones, of a value that seldom changes. */
static void run_fill(uint64_t *v, uint64_t val, uint32_t n)
{
	uint32_t i;

	UNROLL_SHORT for (i = 0; i < n; i++)
		v[i] = val;
}

const char *column_decode(const uint8_t *rec, size_t len, const struct column_def *cols, unsigned c,
			  uint64_t **vals, uint16_t **keyidx, uint32_t *keyn, uint32_t n,
			  struct column_scratch *s, int dict_table)
{
	const struct column_def *d = &cols[c];
	unsigned w = rec[3];
	uint64_t base = get_u64(rec + 8), *v = vals[c], *dict = dict_table ? v : s->dict;
	const uint8_t *p = rec + COLUMN_HEADER_SIZE;
	struct codes_in in = { NULL, NULL, NULL, 0, 0, 0 };
	const uint16_t *k;
	const char *err;
	uint32_t i, nd, runs, keyn_of = d->key == COL_NONE ? 0 : keyn[d->key];
	int got, from;

	len -= COLUMN_HEADER_SIZE;
	switch (d->enc) {
	case ENC_DELTA:
		if ((got = delta_chunked(rec, COLUMN_HEADER_SIZE + len, cols, c, vals, keyidx, keyn_of, n, s->last,
					 &err)))
			return got < 0 ? err : NULL;
		if ((from = codes_of(p, len, d, w, keyidx, keyn, n, s, &in, &err)) < 0)
			return err;
		if (from == CODES_GATHER)
			delta_run(cols, c, vals, keyidx, keyn_of, n, base, NULL, &in, CODES_GATHER, s->last, NULL, 1);
		else
			delta_run(cols, c, vals, keyidx, keyn_of, n, base, NULL, &in, CODES_ARRAY, s->last, NULL, 1);
		return NULL;
	case ENC_DICT:
		groups_forget(s, c);
		if (len < 4 || (nd = get_u32(p)) > n || len - 4 < 8 * (size_t)nd)
			return "bad dictionary";
		for (i = 0; i < nd; i++)
			dict[i] = get_u64(p + 4 + 8 * i);
		keyn[c] = nd;
		p += 4 + 8 * (size_t)nd;
		len -= 4 + 8 * (size_t)nd;
		if (dict_table)
			v = NULL;
		k = d->key == COL_NONE ? NULL : keyidx[d->key];
		if (d->group == COL_NONE && w == 1 && len == n) {
			in.p = p;
			return dict_codes(s, dict, k, keyn_of, in, CODES_BYTES, nd, n, keyidx[c], v);
		}
		if (d->group == COL_NONE && !k && w == WIDTH_NIBBLES && len == ((size_t)n + 1) / 2) {
			in.p = p;
			return dict_codes(s, dict, k, keyn_of, in, CODES_NIBBLES, nd, n, keyidx[c], v);
		}
		/* taken as the events reach them, not spread out over an array of the block's size first */
		if (d->group == COL_NONE && w == WIDTH_SPARSE) {
			if ((err = sparse_check(p, len, n)))
				return err;
			in = sparse_in(p, len);
			return dict_codes(s, dict, k, keyn_of, in, CODES_SPARSE, nd, n, keyidx[c], v);
		}
		if ((from = codes_of(p, len, d, w, keyidx, keyn, n, s, &in, &err)) < 0)
			return err;
		return dict_codes(s, dict, k, keyn_of, in, from, nd, n, keyidx[c], v);
	case ENC_RLE:
		if (len < 4 || (runs = get_u32(p)) > n || len != 4 + 12 * (size_t)runs)
			return "bad run lengths";
		for (p += 4, i = 0; runs--; p += 12) {
			uint64_t val = get_u64(p);
			uint32_t run = get_u32(p + 8);

			if (!run || run > n - i)
				return "run lengths do not add up";
			run_fill(v + i, val, run);
			i += run;
		}
		return i == n ? NULL : "run lengths do not add up";
	default:
		return "unknown encoding";
	}
}

int delta_lazy_init(struct delta_lazy *dl, const uint8_t *rec, size_t len, const struct column_def *cols,
		    unsigned c, uint32_t keyn, uint32_t n, uint64_t *last, const char **err)
{
	const struct column_def *d = &cols[c];
	const uint8_t *p = rec + COLUMN_HEADER_SIZE;
	unsigned w = rec[3], planes = planes_of(w);
	uint32_t i;

	len -= COLUMN_HEADER_SIZE;
	*err = NULL;
	/* a grouped column's codes are not in event order */
	if (d->group != COL_NONE)
		return 0;
	if (w == WIDTH_SPARSE) {
		if ((*err = sparse_check(p, len, n)))
			return -1;
		dl->in = sparse_in(p, len);
		dl->from = CODES_SPARSE;
	} else if (w == WIDTH_NIBBLES) {
		if (len != ((size_t)n + 1) / 2) {
			*err = "column length does not match its width";
			return -1;
		}
		dl->in = (struct codes_in){ NULL, p, p + len, 0, 0, n };
		dl->from = CODES_NIBBLES;
	} else if (planes) {
		if (len != (size_t)n * planes) {
			*err = "column length does not match its width";
			return -1;
		}
		dl->in = (struct codes_in){ NULL, p, p + len, 0, planes, n };
		dl->from = CODES_PLANES;
	} else {
		return 0;
	}
	dl->def = d;
	dl->pred = get_u64(rec + 8);
	dl->last = d->key == COL_NONE ? NULL : last;
	for (i = 0; dl->last && i < keyn; i++)
		last[i] = dl->pred;
	dl->pos = 0;
	return 1;
}

/* The codes of dl's next m events, m at most EVENT_CHUNK. */
static void lazy_codes(struct delta_lazy *dl, uint64_t *codes, uint32_t m)
{
	struct codes_in *in = &dl->in;
	uint32_t pos = dl->pos;

	if (dl->from == CODES_PLANES) {
		planes_decode(codes, in->p + pos, in->n, m, in->planes);
		return;
	}
	if (dl->from == CODES_NIBBLES) {
		nibbles_get(codes, in->p, pos, m);
		return;
	}
	memset(codes, 0, m * sizeof(*codes));
	while (in->next < pos + m) {
		/* read before code_in() moves it on: which side of an assignment goes first is the compiler's choice */
		uint32_t at = in->next;

		codes[at - pos] = code_in(in, at, CODES_SPARSE);
	}
}

/*
 * Where a lazy column's values go: the column's own array, or a field of
 * consecutive events, 64 or 32 bits wide. Inlined with the sink known, the
 * events' stride is a constant that the unrolled loops fold into their
 * addresses.
 */
enum sink { SINK_COLUMN, SINK_EVENTS_64, SINK_EVENTS_32 };

static inline __attribute__((always_inline)) void sink_put(void *out, size_t j, uint64_t v, int sink)
{
	char *field = (char *)out + j * sizeof(struct ingero_event);

	if (sink == SINK_COLUMN)
		((uint64_t *)out)[j] = v;
	else if (sink == SINK_EVENTS_64)
		*(uint64_t *)field = v;
	else
		*(uint32_t *)field = (uint32_t)v;
}

/*
 * The delta loop of column_decode() over dl's next m events, their codes
 * turned into values put to out, its state kept in dl between calls.
 * Inlined with flags, a key, the source and the sink known, so that the
 * loop tests none.
 */
static inline __attribute__((always_inline)) void
lazy_loop(struct delta_lazy *dl, const uint64_t *restrict codes, const uint64_t *src, const uint16_t *k,
	  size_t m, void *out, int sink, int keyed, int self, unsigned flags)
{
	uint64_t *last = dl->last, pred = dl->pred;
	size_t pos = dl->pos, j;

	UNROLL for (j = 0; j < m; j++) {
		uint64_t v;

		if (flags & PRED_SAME)
			pred = src[pos + j];
		else if (keyed)
			pred = last[k[pos + j]];
		v = value_of(codes[j], pred, flags);
		sink_put(out, j, v, sink);
		if (flags & PRED_SAME)
			continue;
		if (keyed)
			last[k[pos + j]] = self ? v : src[pos + j];
		else
			pred = self ? v : src[pos + j];
	}
	dl->pred = pred;
}

/* lazy_loop with the key and the source known. */
static inline __attribute__((always_inline)) void
lazy_mode(struct delta_lazy *dl, const uint64_t *codes, const uint64_t *src, const uint16_t *k, size_t m,
	  void *out, int sink, unsigned flags)
{
	int self = dl->def->src == COL_NONE;

	if (flags & PRED_SAME)
		lazy_loop(dl, codes, src, k, m, out, sink, 0, 0, flags);
	else if (dl->last && self)
		lazy_loop(dl, codes, src, k, m, out, sink, 1, 1, flags);
	else if (dl->last)
		lazy_loop(dl, codes, src, k, m, out, sink, 1, 0, flags);
	else if (self)
		lazy_loop(dl, codes, src, k, m, out, sink, 0, 1, flags);
	else
		lazy_loop(dl, codes, src, k, m, out, sink, 0, 0, flags);
}

/*
 * The loop of a sparse column's chunk that has no entries: each code is 0,
 * so each value is its prediction, or 0 with PRED_ZERO (zero), written
 * straight to out. A column predicted under a key from its own values
 * leaves its keys' last values as they are, unless they become 0. Inlined
 * with what lazy_loop() is, and the sink, known.
 */
static inline __attribute__((always_inline)) void
zeros_loop(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, size_t m, void *out, int sink,
	   int same, int keyed, int self, int zero)
{
	uint64_t *last = dl->last, pred = dl->pred;
	size_t pos = dl->pos, j;

	UNROLL_SHORT for (j = 0; j < m; j++) {
		uint64_t v = zero ? 0 : same ? src[pos + j] : keyed ? last[k[pos + j]] : pred;

		sink_put(out, j, v, sink);
		if (keyed && (zero || !self))
			last[k[pos + j]] = self ? v : src[pos + j];
		else if (!keyed && !same)
			pred = self ? v : src[pos + j];
	}
	dl->pred = pred;
}

/* zeros_loop with the key and the source known. */
static inline __attribute__((always_inline)) void
zeros_mode(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, size_t m, void *out, int sink,
	   int zero)
{
	int self = dl->def->src == COL_NONE;

	if (dl->def->flags & PRED_SAME)
		zeros_loop(dl, src, k, m, out, sink, 1, 0, 0, zero);
	else if (dl->last && self)
		zeros_loop(dl, src, k, m, out, sink, 0, 1, 1, zero);
	else if (dl->last)
		zeros_loop(dl, src, k, m, out, sink, 0, 1, 0, zero);
	else if (self)
		zeros_loop(dl, src, k, m, out, sink, 0, 0, 1, zero);
	else
		zeros_loop(dl, src, k, m, out, sink, 0, 0, 0, zero);
}

/* zeros_mode with PRED_ZERO known. */
static inline __attribute__((always_inline)) void
zeros_sink(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, size_t m, void *out, int sink)
{
	if (dl->def->flags & PRED_ZERO)
		zeros_mode(dl, src, k, m, out, sink, 1);
	else
		zeros_mode(dl, src, k, m, out, sink, 0);
}

/*
 * A sparse column's chunk without entries, most of a sparse column's: no
 * codes to gather and none to turn into differences.
 */
static void lazy_zeros(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, uint32_t to, void *out,
		       int sink)
{
	size_t m = to - dl->pos;

	if (sink == SINK_COLUMN)
		zeros_sink(dl, src, k, m, out, SINK_COLUMN);
	else if (sink == SINK_EVENTS_64)
		zeros_sink(dl, src, k, m, out, SINK_EVENTS_64);
	else
		zeros_sink(dl, src, k, m, out, SINK_EVENTS_32);
	dl->pos = to;
}

/* Whether dl's events pos..to are all coded 0: a sparse column's without an entry among them. */
static inline int lazy_all_zero(const struct delta_lazy *dl, uint32_t to)
{
	return dl->from == CODES_SPARSE && dl->in.next >= to;
}

/* lazy_mode with the predictors of the schemas known, each its own loop; any other mix in a loop that tests. */
static inline __attribute__((always_inline)) void
lazy_flags(struct delta_lazy *dl, const uint64_t *codes, const uint64_t *src, const uint16_t *k, size_t m,
	   void *out, int sink)
{
	switch (dl->def->flags) {
	case 0:
		lazy_mode(dl, codes, src, k, m, out, sink, 0);
		break;
	case PRED_ZERO:
		lazy_mode(dl, codes, src, k, m, out, sink, PRED_ZERO);
		break;
	case PRED_RISE:
		lazy_mode(dl, codes, src, k, m, out, sink, PRED_RISE);
		break;
	case PRED_SAME:
		lazy_mode(dl, codes, src, k, m, out, sink, PRED_SAME);
		break;
	case PRED_SAME | PRED_ZERO:
		lazy_mode(dl, codes, src, k, m, out, sink, PRED_SAME | PRED_ZERO);
		break;
	case PRED_SAME | PRED_RISE:
		lazy_mode(dl, codes, src, k, m, out, sink, PRED_SAME | PRED_RISE);
		break;
	default:
		lazy_mode(dl, codes, src, k, m, out, sink, dl->def->flags);
		break;
	}
}

/*
 * Decodes dl's events pos..to, at most EVENT_CHUNK, into out: their codes
 * gathered in an array in the L1 cache, then turned into values straight
 * into the sink.
 */
static void lazy_values(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, uint32_t to, void *out,
			int sink)
{
	uint64_t codes[EVENT_CHUNK];
	size_t m = to - dl->pos;

	lazy_codes(dl, codes, m);
	if (sink == SINK_COLUMN)
		lazy_flags(dl, codes, src, k, m, out, SINK_COLUMN);
	else if (sink == SINK_EVENTS_64)
		lazy_flags(dl, codes, src, k, m, out, SINK_EVENTS_64);
	else
		lazy_flags(dl, codes, src, k, m, out, SINK_EVENTS_32);
	dl->pos = to;
}

/* Decodes dl's events pos..to, at most EVENT_CHUNK, into out, the column's own array or the events' field. */
static inline __attribute__((always_inline)) void
lazy_chunk(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, uint32_t to, void *out, int sink)
{
	if (lazy_all_zero(dl, to))
		lazy_zeros(dl, src, k, to, out, sink);
	else
		lazy_values(dl, src, k, to, out, sink);
}

void delta_lazy_run(struct delta_lazy *dl, const uint64_t *src, const uint16_t *k, uint32_t to, void *out,
		    int wide)
{
	if (wide)
		lazy_chunk(dl, src, k, to, out, SINK_EVENTS_64);
	else
		lazy_chunk(dl, src, k, to, out, SINK_EVENTS_32);
}

/*
 * A delta column decoded whole as a lazy one is, a chunk at a time, into
 * the column: its codes take no array of a block's size, which
 * would be written and read back out of the cache. 0 when its width is not
 * one a lazy column takes (varints), -1 and *err on damage.
 */
static int delta_chunked(const uint8_t *rec, size_t len, const struct column_def *cols, unsigned c,
			 uint64_t *const *vals, uint16_t *const *keyidx, uint32_t keyn, uint32_t n,
			 uint64_t *last, const char **err)
{
	const struct column_def *d = &cols[c];
	const uint64_t *src = d->src == COL_NONE ? NULL : vals[d->src];
	const uint16_t *k = d->key == COL_NONE ? NULL : keyidx[d->key];
	struct delta_lazy dl;
	uint32_t at, to;
	int got = delta_lazy_init(&dl, rec, len, cols, c, keyn, n, last, err);

	for (at = 0; got > 0 && at < n; at = to) {
		to = n - at < EVENT_CHUNK ? n : at + EVENT_CHUNK;
		lazy_chunk(&dl, src, k, to, vals[c] + at, SINK_COLUMN);
	}
	return got;
}
