/*
 * Sections, the unit every frame of a trace decompresses to, and the
 * CRC32C (Castagnoli) that guards each: the SSE4.2 instruction where the
 * CPU has it, a table elsewhere.
 */
#include <pthread.h>
#include "format.h"

_Static_assert(SECTION_HEADER_SIZE == 4 + 4 + 4 + 4, "section header: tag, length, block, crc");

/*
 * Each crc32 instruction waits on the one before: the bytes are taken in
 * three lanes of this many, each lane its own chain, and the lanes' CRCs
 * are joined by moving each past the bytes after it.
 */
#define CRC_LANE 4096

static uint32_t crc_table[256];
/* The CRC register moved past CRC_LANE zero bytes, a linear map: by each of its four bytes. */
static uint32_t crc_lane_shift[4][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* The image of v under the linear map whose images of v's bits are op[]. */
static uint32_t crc_op_apply(const uint32_t op[32], uint32_t v)
{
	uint32_t r = 0, i;

	for (i = 0; v; i++, v >>= 1)
		if (v & 1)
			r ^= op[i];
	return r;
}

static void crc_tables_init(void)
{
	uint32_t i, j, c, op[32], sq[32], n;

	for (i = 0; i < 256; i++) {
		for (c = i, j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
	/* past one zero byte, then, squared, past twice as many until CRC_LANE */
	for (i = 0; i < 32; i++)
		op[i] = crc_table[(1u << i) & 0xff] ^ (1u << i) >> 8;
	for (n = 1; n < CRC_LANE; n *= 2) {
		for (i = 0; i < 32; i++)
			sq[i] = crc_op_apply(op, op[i]);
		memcpy(op, sq, sizeof(op));
	}
	for (i = 0; i < 4; i++)
		for (j = 0; j < 256; j++)
			crc_lane_shift[i][j] = crc_op_apply(op, j << 8 * i);
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static inline uint64_t crc_word(uint64_t c, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return __builtin_ia32_crc32di(c, v);
}

/* The CRC register c moved past CRC_LANE zero bytes. */
static uint32_t crc_past_lane(uint32_t c)
{
	return crc_lane_shift[0][c & 0xff] ^ crc_lane_shift[1][c >> 8 & 0xff] ^
		crc_lane_shift[2][c >> 16 & 0xff] ^ crc_lane_shift[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	size_t i;

	for (; len >= 3 * CRC_LANE; len -= 3 * CRC_LANE, p += 3 * CRC_LANE) {
		uint64_t c1 = 0, c2 = 0;

		for (i = 0; i < CRC_LANE; i += 8) {
			c = crc_word(c, p + i);
			c1 = crc_word(c1, p + CRC_LANE + i);
			c2 = crc_word(c2, p + 2 * CRC_LANE + i);
		}
		c = crc_past_lane(crc_past_lane((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
	}
	/* four words a round, so that the loop's own instructions are not as many as the CRC's */
	for (; len >= 32; len -= 32, p += 32)
		c = crc_word(crc_word(crc_word(crc_word(c, p), p + 8), p + 16), p + 24);
	for (; len >= 8; len -= 8, p += 8)
		c = crc_word(c, p);
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
	pthread_once(&crc_once, crc_tables_init);
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_soft(crc, buf, len);
}

void section_seal(uint8_t *sec, uint32_t tag, uint32_t len, uint32_t blockno)
{
	put_u32(sec, tag);
	put_u32(sec + 4, len);
	put_u32(sec + 8, blockno);
	put_u32(sec + 12, crc32c(crc32c(0, sec, 12), sec + SECTION_HEADER_SIZE, len));
}

const char *section_check(const uint8_t *sec, size_t size, uint32_t tag)
{
	uint32_t len;

	if (size < SECTION_HEADER_SIZE)
		return "section too short";
	if (get_u32(sec) != tag)
		return "unexpected section tag";
	len = get_u32(sec + 4);
	if (len != size - SECTION_HEADER_SIZE)
		return "section length does not match its frame";
	if (get_u32(sec + 12) != crc32c(crc32c(0, sec, 12), sec + SECTION_HEADER_SIZE, len))
		return "checksum mismatch";
	return NULL;
}
