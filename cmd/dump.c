/* ingero dump: every event of a trace on one line, in time order, plain or as JSON lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtin.h"
#include "parse-options.h"
#include "../lib/trace.h"
#include "../formats/text.h"

static const char *const dump_usage[] = {
	"ingero dump [--json] [--stream <name>[,<name>...]] [--tid <tid>] [--from <time>] [--to <time>] <file>",
	NULL,
};

struct dump_opts {
	const char *streams;
	uint64_t from, to;
	int tid, json;
};

static int stream_mask(const char *list, uint32_t *mask)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		die_errno("out of memory");
	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int s = ingero_stream_by_name(tok);

		if (s < 0) {
			ret = error("'%s' is not a stream (call, open, switch, wakeup, task, lost, lib)", tok);
			break;
		}
		*mask |= 1u << s;
	}
	if (!ret && !*mask)
		ret = error("option '--stream' wants at least one stream (call, open, switch, wakeup, task, lost, lib)");
	free(copy);
	return ret;
}

int cmd_dump(int argc, const char **argv)
{
	struct dump_opts o = { .to = UINT64_MAX };
	struct option opts[] = {
		OPT_BOOL(0, "json", &o.json, "one JSON object per line"),
		OPT_STRING(0, "stream", &o.streams, "name[,name]", "only these streams: call, open, switch, wakeup, task, lost, lib"),
		OPT_TID(0, "tid", &o.tid, "only the events of this thread (as caller, prev, next, waker, wakee or child)"),
		OPT_TIME(0, "from", &o.from, "start at this time after the trace's start: seconds, or with s, ms, us, ns"),
		OPT_TIME(0, "to", &o.to, "stop before this time after the trace's start"),
		OPT_END(),
	};
	struct ingero_reader *r;
	const struct ingero_header *h;
	const struct ingero_event *ev;
	uint32_t mask = UINT32_MAX;
	char line[4096];
	int ret;

	argc = parse_options(argc, argv, opts, dump_usage, 0);
	if (argc != 1)
		usage_with_options(dump_usage, opts, 1);
	if ((o.streams && stream_mask(o.streams, &mask)) || check_window(o.from, o.to))
		usage_with_options(dump_usage, opts, 1);
	r = ingero_reader_open(argv[0]);
	if (!r)
		return 1;
	h = ingero_reader_header(r);
	ingero_reader_streams(r, mask);
	if (o.from)
		ingero_reader_seek(r, time_after(h->start_ns, o.from));
	o.to = time_after(h->start_ns, o.to);
	while ((ret = ingero_reader_next(r, &ev)) == 1) {
		if (ingero_event_key(ev) >= o.to)
			break;
		if (o.tid && !ingero_text_has_tid(ev, (uint32_t)o.tid))
			continue;
		ingero_text_event(line, sizeof(line), ev, h, o.json);
		fputs(line, stdout);
		putchar('\n');
	}
	if (ret < 0) {
		fflush(stdout);
		error("'%s' is damaged: %s", argv[0], ingero_reader_error(r));
	}
	ingero_reader_close(r);
	if (fflush(stdout) || ferror(stdout))
		die_errno("cannot write the events");
	return ret < 0 ? 1 : 0;
}
