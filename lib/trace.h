/*
 * Writing and reading .ing.zst traces: the writer streams events into a file
 * that is complete at every checkpoint; the reader returns them in time order.
 */
#ifndef INGERO_TRACE_H
#define INGERO_TRACE_H

#include <stdint.h>
#include "event.h"
#include "api.h"

struct ingero_header {
	uint64_t start_ns;	/* the trace clock when recording began */
	uint64_t realtime_ns;	/* the wall clock at the same moment */
	uint32_t ncpus;
	const char *host, *kernel, *clock, *boot_id;
	const char *command;	/* the traced command line, arguments separated by spaces */
	uint32_t napis;
	const struct ingero_api *apis;
};

/* Per-stream counts, sizes and the time span, as the writer knows them or the reader read them. */
struct ingero_trace_stats {
	uint64_t events[INGERO_NR_STREAMS];
	uint64_t bytes;		/* the file's size */
	uint64_t first_ns, last_ns;
	uint64_t blocks;
	uint64_t written;	/* the writer's: events of the blocks it wrote whole */
};

/*
 * The time an event sorts by: a call (or open call) is placed at its
 * return, every other event at its ts. Without a branch, as the streams
 * come mixed at random.
 */
static inline uint64_t ingero_event_key(const struct ingero_event *ev)
{
	uint64_t call = -(uint64_t)(ev->stream == INGERO_STREAM_CALL || ev->stream == INGERO_STREAM_OPEN);

	return (ev->call.end_ns & call) | (ev->ts & ~call);
}

/* Whether ev may follow an event of key and stream from a reader: by key, a tie going to the lower stream. */
static inline int ingero_event_follows(const struct ingero_event *ev, uint64_t key, uint32_t stream)
{
	return ingero_event_key(ev) > key || (ingero_event_key(ev) == key && ev->stream >= stream);
}

struct ingero_writer;

/* Writes the header to fd; free with ingero_writer_close(). NULL and errno on failure. */
struct ingero_writer *ingero_writer_new(int fd, const struct ingero_header *h);
/*
 * Events must come in order of ingero_event_key() within each stream. A
 * switch's comm of the idle task (tid 0) that is NULL reads back as its
 * name, swapper/CPU, as a recorder always sees it.
 */
int ingero_writer_add(struct ingero_writer *w, const struct ingero_event *ev);
/* Ends the open blocks: the file then holds every event added so far. */
int ingero_writer_flush(struct ingero_writer *w);
void ingero_writer_stats(const struct ingero_writer *w, struct ingero_trace_stats *st);
/* Flushes and appends the index: the trace is whole, and takes no more events. */
int ingero_writer_end(struct ingero_writer *w);
/* Ends the trace if that is not done yet, and frees w; fd stays open. */
int ingero_writer_close(struct ingero_writer *w);

struct ingero_reader;

/*
 * Opens a trace, or standard input for "-"; free with ingero_reader_close().
 * NULL and errno on failure, with a message printed.
 */
struct ingero_reader *ingero_reader_open(const char *path);
/* The same on an open file descriptor, which stays the caller's; name is for messages. */
struct ingero_reader *ingero_reader_open_fd(int fd, const char *name);
/* 1 when the footer's index was read, 0 when it was missing and the blocks were found by scanning. */
int ingero_reader_indexed(const struct ingero_reader *r);
const struct ingero_header *ingero_reader_header(const struct ingero_reader *r);
/* Only the streams in mask (bit 1 << stream) are returned; the others are not decoded. */
void ingero_reader_streams(struct ingero_reader *r, uint32_t mask);

/*
 * The events a reader merged ahead, which ingero_reader_next() hands out
 * in line, with no call: the first member of struct ingero_reader, which
 * only the reader changes.
 */
struct ingero_reader_ahead {
	const struct ingero_event *const *next, *const *end;
};

/* What ingero_reader_next() calls once the events merged ahead are handed out: it merges the next ones. */
int ingero_reader_next_merged(struct ingero_reader *r, const struct ingero_event **ev);

/*
 * 1 and the next event in time order, 0 at the end, -1 on a damaged file
 * (see ingero_reader_error()). The event is r's, read in place: it stays
 * until the next call on r; its strings, until the reader is closed.
 */
static inline int ingero_reader_next(struct ingero_reader *r, const struct ingero_event **ev)
{
	struct ingero_reader_ahead *a = (struct ingero_reader_ahead *)r;

	if (__builtin_expect(a->next < a->end, 1)) {
		*ev = *a->next++;
		return 1;
	}
	return ingero_reader_next_merged(r, ev);
}

/* The next ingero_reader_next() returns the first event whose key is at least ts. */
int ingero_reader_seek(struct ingero_reader *r, uint64_t ts);
/* Where and what the damage is: "block 12 at offset 40960: checksum mismatch"; "" when none. */
const char *ingero_reader_error(const struct ingero_reader *r);
/* Counts from the index (or from a scan when the file has none). */
int ingero_reader_stats(struct ingero_reader *r, struct ingero_trace_stats *st);
void ingero_reader_close(struct ingero_reader *r);

const char *ingero_stream_name(enum ingero_stream s);
int ingero_stream_by_name(const char *name);

#endif
