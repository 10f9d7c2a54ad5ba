/*
 * Sections, the unit every frame of a trace decompresses to, and the
 * CRC32C (Castagnoli) that guards each: the SSE4.2 instruction where the
 * CPU has it, a table elsewhere.
 */
#include "format.h"

_Static_assert(SECTION_HEADER_SIZE == 4 + 4 + 4 + 4, "section header: tag, length, block, crc");

static uint32_t crc_table[256];

static void crc_table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		for (c = i, j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
	if (!crc_table[1])
		crc_table_init();
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

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

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
