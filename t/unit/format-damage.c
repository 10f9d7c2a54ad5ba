/*
 * A damaged trace: cut at every byte, a flipped byte, a section whose
 * checksum fails. The reader returns every event of the blocks before the
 * damage, then -1 with a message naming where.
 */
#include <inttypes.h>
#include <stdio.h>
#include <zstd.h>
#include "tap.h"
#include "format-gen.h"
#include "../../formats/format.h"
#include "../../lib/error.h"

struct frame {
	size_t off, end;
	uint32_t tag, stream, count;
};

static uint8_t *file;
static size_t size, nframes;
static struct frame frames[4096];

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The file's frames, and for each block its stream and count, read with libzstd alone. */
static void find_frames(void)
{
	size_t off = 0;

	nframes = 0;
	while (off < size && nframes < 4096) {
		struct frame *f = &frames[nframes++];
		size_t fs = ZSTD_findFrameCompressedSize(file + off, size - off);
		uint8_t sec[64];

		f->off = off;
		f->end = off + fs;
		f->tag = 0;
		if ((le32(file + off) & 0xfffffff0u) == 0x184d2a50u) {
			f->end = off + 8 + le32(file + off + 4);
		} else {
			ZSTD_DCtx *d = ZSTD_createDCtx();
			ZSTD_inBuffer in = { file + off, fs, 0 };
			ZSTD_outBuffer out = { sec, sizeof(sec), 0 };

			ZSTD_decompressStream(d, &out, &in);
			ZSTD_freeDCtx(d);
			f->tag = le32(sec);
			f->stream = le32(sec + 16);
			f->count = le32(sec + 20);
		}
		off = f->end;
	}
}

static int memfd_of(const uint8_t *p, size_t len)
{
	int fd = memfd_create("cut", 0);

	if (write(fd, p, len) != (ssize_t)len)
		return -1;
	return fd;
}

struct result {
	int ret;		/* of the last ingero_reader_next(); -2: the open failed */
	size_t n, per[INGERO_NR_STREAMS];
	int same;		/* the events were want[0..n) */
	int ordered;		/* each came at or after the one before, by time, then stream */
	char msg[256];
};

/* Reads the whole trace in fd and compares it with want while the reader's strings live. */
static void read_back(int fd, const struct ingero_event *want, size_t nw, struct result *res)
{
	struct ingero_reader *r;
	const struct ingero_event *ev;
	uint64_t key = 0;
	uint32_t stream = 0;

	memset(res, 0, sizeof(*res));
	res->same = res->ordered = 1;
	error_quiet = 1;
	r = ingero_reader_open_fd(fd, "cut");
	error_quiet = 0;
	if (!r) {
		res->ret = -2;
		return;
	}
	while ((res->ret = ingero_reader_next(r, &ev)) == 1) {
		res->same = res->same && res->n < nw && event_eq(ev, &want[res->n]);
		res->ordered = res->ordered && ingero_event_follows(ev, key, stream);
		key = ingero_event_key(ev);
		stream = ev->stream;
		res->per[ev->stream]++;
		res->n++;
	}
	snprintf(res->msg, sizeof(res->msg), "%s", ingero_reader_error(r));
	ingero_reader_close(r);
}

static void test_cuts(const struct gen *g)
{
	struct ingero_event *want;
	size_t cut, bad = 0, nw, f, clean = 0, checked = 0;
	struct result res;
	char expect[64];

	for (cut = 0; cut < size; cut += cut < 2048 ? 1 : 5) {
		size_t keep[INGERO_NR_STREAMS] = { 0 };
		int at_boundary, fd;

		for (f = 0; f < nframes && frames[f].end <= cut; f++)
			if (frames[f].tag == TAG_BLOCK)
				keep[frames[f].stream] += frames[f].count;
		/* a cut in the footer, a skippable frame without events, reads as no footer */
		at_boundary = (f > 0 && frames[f - 1].end == cut) || !frames[f].tag;
		want = gen_merged(g, keep, &nw);
		fd = memfd_of(file, cut);
		read_back(fd, want, nw, &res);
		close(fd);
		snprintf(expect, sizeof(expect), "truncated at offset %zu", cut);
		checked++;
		if (cut < frames[0].end ? res.ret != -2 :
		    res.n != nw || !res.same ||
		    (at_boundary ? res.ret != 0 : res.ret != -1 || !strstr(res.msg, expect))) {
			if (bad++ < 5)
				printf("# cut at %zu: status %d, %zu events of %zu, '%s'\n", cut, res.ret, res.n, nw,
				       res.msg);
		}
		clean += at_boundary;
		free(want);
	}
	ok(!bad, "a trace cut at %zu points returns the events of the whole blocks before the cut and names it "
	   "(%zu cuts at frame boundaries or in the footer end cleanly)", checked, clean);
}

/* Whether the read stopped on an error that names block frame f, after every event of the blocks before it. */
static int stopped_at_block(const struct result *res, size_t f)
{
	size_t keep[INGERO_NR_STREAMS] = { 0 }, i;
	char expect[64];

	for (i = 0; i < f; i++)
		if (frames[i].tag == TAG_BLOCK)
			keep[frames[i].stream] += frames[i].count;
	for (i = 0; i < INGERO_NR_STREAMS; i++)
		if (res->per[i] < keep[i])
			return 0;
	snprintf(expect, sizeof(expect), "block %zu at offset %zu: ", f, frames[f].off);
	return res->ret == -1 && strstr(res->msg, expect);
}

static void test_flips(const struct gen *g)
{
	size_t i, bad = 0, caught = 0, harmless = 0, all;
	uint8_t *copy = malloc(size);
	struct ingero_event *full = gen_merged(g, NULL, &all);
	struct result res;

	for (i = 0; i < 400; i++) {
		size_t f, pos;
		int fd;

		/* a byte of a frame after the header and before the footer */
		pos = frames[0].end + rnd_below(frames[nframes - 1].off - frames[0].end);
		for (f = 0; frames[f].end <= pos; f++)
			;
		memcpy(copy, file, size);
		copy[pos] ^= 1u << rnd_below(8);
		fd = memfd_of(copy, size);
		read_back(fd, full, all, &res);
		close(fd);
		if (res.ret == 0 && res.n == all && res.same) {
			harmless++;	/* a bit zstd does not depend on */
			continue;
		}
		/* every event of the blocks before; events of later blocks may come too */
		if (stopped_at_block(&res, f))
			caught++;
		else if (bad++ < 5)
			printf("# flip at %zu in block %zu: status %d, '%s'\n", pos, f, res.ret, res.msg);
	}
	ok(!bad, "a flipped bit is caught in its block, after the events before it (%zu caught, %zu harmless)",
	   caught, harmless);
	free(copy);
	free(full);
}

/* Frame f's section, decompressed; free it. *len is its size. */
static uint8_t *section_of(size_t f, size_t *len)
{
	size_t cap = ZSTD_getFrameContentSize(file + frames[f].off, frames[f].end - frames[f].off);
	uint8_t *plain = malloc(cap);

	*len = ZSTD_decompress(plain, cap, file + frames[f].off, frames[f].end - frames[f].off);
	return plain;
}

/* A frame's new section. */
struct patch {
	size_t f, len;
	const uint8_t *plain;
};

/*
 * A memfd of the file with the np patched frames' sections replaced,
 * compressed again, and without its footer, so that the blocks are found
 * by scanning.
 */
static int spliced(const struct patch *pt, size_t np)
{
	size_t k, f, i = 0, more = 0;
	uint8_t *out;
	int fd;

	for (k = 0; k < np; k++)
		more += ZSTD_compressBound(pt[k].len);
	out = malloc(size + more);
	for (f = 0; f < nframes - 1; f++) {
		for (k = 0; k < np && pt[k].f != f; k++)
			;
		if (k < np) {
			i += ZSTD_compress(out + i, ZSTD_compressBound(pt[k].len), pt[k].plain, pt[k].len, 1);
		} else {
			memcpy(out + i, file + frames[f].off, frames[f].end - frames[f].off);
			i += frames[f].end - frames[f].off;
		}
	}
	fd = memfd_of(out, i);
	free(out);
	return fd;
}

static int spliced_with(size_t f, const uint8_t *plain, size_t len)
{
	return spliced(&(struct patch){ f, len, plain }, 1);
}

/* A section changed before compression is caught by its CRC32C alone. */
static void test_checksum(void)
{
	size_t f, len;
	uint8_t *plain;
	struct result res;
	char expect[64];
	int fd;

	for (f = 1; f < nframes && frames[f].tag != TAG_BLOCK; f++)
		;
	plain = section_of(f, &len);
	plain[len / 2] ^= 0x10;
	fd = spliced_with(f, plain, len);
	read_back(fd, NULL, 0, &res);
	close(fd);
	snprintf(expect, sizeof(expect), "block %zu at offset %zu: checksum mismatch", f, frames[f].off);
	ok(res.ret == -1 && !strcmp(res.msg, expect), "a changed section fails its checksum: '%s'", res.msg);
	free(plain);
}

/*
 * A byte of a block's columns changed and the section sealed again, so
 * that its checksum holds: what the change breaks, the columns' own checks
 * catch in that block, after the events of the blocks before; what it does
 * not break reads on with other values. Either way the reader stays in
 * its bounds, which the sanitizers' builds (SAN=address,undefined) check.
 */
static void test_columns(const struct gen *g)
{
	size_t i, bad = 0, caught = 0, read = 0, all;
	struct ingero_event *full = gen_merged(g, NULL, &all);
	struct result res;

	for (i = 0; i < 400; i++) {
		size_t f, len;
		uint8_t *plain;
		int fd;

		do
			f = 1 + rnd_below(nframes - 2);
		while (frames[f].tag != TAG_BLOCK);
		plain = section_of(f, &len);
		plain[SECTION_HEADER_SIZE + BLOCK_HEADER_SIZE +
		      rnd_below(len - SECTION_HEADER_SIZE - BLOCK_HEADER_SIZE)] ^= 1 + rnd_below(255);
		section_seal(plain, TAG_BLOCK, (uint32_t)(len - SECTION_HEADER_SIZE), get_u32(plain + 8));
		fd = spliced_with(f, plain, len);
		read_back(fd, full, all, &res);
		close(fd);
		free(plain);
		if (res.ret == 0 && res.n == all) {
			read++;
			continue;
		}
		if (stopped_at_block(&res, f))
			caught++;
		else if (bad++ < 5)
			printf("# change in block %zu: status %d, '%s'\n", f, res.ret, res.msg);
	}
	ok(!bad, "a changed column under a good checksum is caught in its block or reads on (%zu caught, %zu read)",
	   caught, read);
	free(full);
}

/*
 * Two blocks of the calls swap their contents, each sealed under its own
 * number: each reads well alone, but the stream's times fall back at the
 * second, where the reader stops, the events before it in time order.
 */
static void test_swapped(void)
{
	size_t f, f1, f2, len1, len2, before = 0;
	uint8_t *plain1, *plain2;
	struct result res;
	char expect[128];
	int fd;

	for (f1 = 1; frames[f1].tag != TAG_BLOCK || frames[f1].stream != INGERO_STREAM_CALL; f1++)
		;
	for (f2 = f1 + 1; frames[f2].tag != TAG_BLOCK || frames[f2].stream != INGERO_STREAM_CALL; f2++)
		;
	for (f = 0; f < f2; f++)
		before += frames[f].tag == TAG_BLOCK ? frames[f].count : 0;
	plain1 = section_of(f1, &len1);
	plain2 = section_of(f2, &len2);
	section_seal(plain1, TAG_BLOCK, (uint32_t)(len1 - SECTION_HEADER_SIZE), (uint32_t)f2);
	section_seal(plain2, TAG_BLOCK, (uint32_t)(len2 - SECTION_HEADER_SIZE), (uint32_t)f1);
	fd = spliced((struct patch[]){ { f1, len2, plain2 }, { f2, len1, plain1 } }, 2);
	read_back(fd, NULL, 0, &res);
	close(fd);
	snprintf(expect, sizeof(expect), "block %zu at offset ", f2);
	ok(res.ret == -1 && res.ordered && res.n == before - frames[f1].count + frames[f2].count &&
	   !strncmp(res.msg, expect, strlen(expect)) &&
	   strstr(res.msg, ": begins before its stream's previous block ends"),
	   "a stream's blocks out of time order: the %zu events before the second read in order, then '%s'",
	   res.n, res.msg);
	free(plain1);
	free(plain2);
}

/* A trace of another major version (the header's u16 at 8) is refused at open, in one line that names both. */
static void test_version(void)
{
	size_t len, got;
	uint8_t *plain = section_of(0, &len);
	char msg[256] = "", expect[256];
	int fd, out = memfd_create("stderr", 0), saved = dup(2);
	struct ingero_reader *r;

	put_u16(plain + SECTION_HEADER_SIZE + 8, FORMAT_MAJOR - 1);
	section_seal(plain, TAG_HEADER, (uint32_t)(len - SECTION_HEADER_SIZE), 0);
	fd = spliced_with(0, plain, len);
	dup2(out, 2);
	r = ingero_reader_open_fd(fd, "old.ing.zst");
	dup2(saved, 2);
	got = pread(out, msg, sizeof(msg) - 1, 0);
	msg[got > 0 ? got : 0] = 0;
	snprintf(expect, sizeof(expect), "ingero: 'old.ing.zst' is a version %d trace; this ingero reads version %d "
		 "only (read it with the ingero that wrote it)\n", FORMAT_MAJOR - 1, FORMAT_MAJOR);
	ok(!r && !strcmp(msg, expect), "a trace of version %d is refused in one line: %.*s", FORMAT_MAJOR - 1,
	   (int)strcspn(msg, "\n"), msg);
	ingero_reader_close(r);
	close(fd);
	close(out);
	close(saved);
	free(plain);
}

int main(void)
{
	/* about 40 blocks over 12 s of trace: checkpoints every second */
	static const size_t counts[INGERO_NR_STREAMS] = { 300, 10, 300, 200, 20, 5, 3 };
	struct gen g;
	int fd;

	gen_trace(&g, 1234, counts, 1000000000ull, 12000000000ull);
	fd = gen_write(&g, &gen_header, 1);
	size = lseek(fd, 0, SEEK_END);
	file = malloc(size);
	pread(fd, file, size, 0);
	close(fd);
	find_frames();
	ok(nframes > 30 && frames[nframes - 1].end == size, "the trace has %zu frames in %zu bytes", nframes, size);
	test_cuts(&g);
	test_flips(&g);
	test_checksum();
	test_swapped();
	test_columns(&g);
	test_version();
	free(file);
	free(g.ev);
	return done_testing();
}
