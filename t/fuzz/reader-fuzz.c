/*
 * libFuzzer target: the trace reader on arbitrary bytes must neither crash,
 * hang nor grow without bound, and what it returns comes in time order.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../../lib/error.h"
#include "../../lib/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct ingero_reader *r;
	struct ingero_trace_stats st;
	const struct ingero_event *ev;
	unsigned long n = 0;
	int pass;

	error_quiet = 1;
	if (fd < 0 && (fd = memfd_create("fuzz", 0)) < 0)
		return 0;
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (!(r = ingero_reader_open_fd(fd, "fuzz")))
		return 0;
	ingero_reader_stats(r, &st);
	/* everything, then a seek to the middle with a few streams: both paths of the merge */
	for (pass = 0; pass < 2; pass++) {
		uint64_t key = 0;
		uint32_t stream = 0;

		while (ingero_reader_next(r, &ev) == 1 && ++n < 4000000) {
			const char *s = ev->stream == INGERO_STREAM_SWITCH ? ev->sw.next_comm :
				ev->stream == INGERO_STREAM_LIB ? ev->lib.path : NULL;

			/* the strings must be readable */
			while (s && *s)
				s++;
			/* by time, then stream */
			if (!ingero_event_follows(ev, key, stream))
				__builtin_trap();
			key = ingero_event_key(ev);
			stream = ev->stream;
		}
		ingero_reader_streams(r, 0x2d);
		ingero_reader_seek(r, st.first_ns / 2 + st.last_ns / 2);
	}
	(void)ingero_reader_error(r);
	ingero_reader_close(r);
	return 0;
}
