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

/*
 * A time relative to the trace's start: seconds ("1.5"), or a number with
 * a unit suffix: s, ms, us, ns ("250ms", "1500000000ns").
 */
static int parse_time(const char *arg, uint64_t *ns)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	if (*arg == '-' || !*arg)
		return -1;
	v = strtod(arg, &end);
	if (errno || end == arg)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix)) {
			/* an integer count of ns is kept exact, beyond a double's 53 bits */
			if (units[i].scale == 1 && !strchr(arg, '.'))
				*ns = strtoull(arg, NULL, 10);
			else
				*ns = (uint64_t)(v * units[i].scale + 0.5);
			return 0;
		}
	return -1;
}

struct dump_opts {
	const char *streams, *from, *to, *tid_arg;
	uint64_t tid;
	int json;
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
	free(copy);
	return ret;
}

int cmd_dump(int argc, const char **argv)
{
	struct dump_opts o = { 0 };
	struct option opts[] = {
		OPT_BOOL(0, "json", &o.json, "one JSON object per line"),
		OPT_STRING(0, "stream", &o.streams, "name[,name]", "only these streams: call, open, switch, wakeup, task, lost, lib"),
		OPT_STRING(0, "tid", &o.tid_arg, "tid", "only the events of this thread (as caller, prev, next, waker, wakee or child)"),
		OPT_STRING(0, "from", &o.from, "time", "start at this time after the trace's start: seconds, or with s, ms, us, ns"),
		OPT_STRING(0, "to", &o.to, "time", "stop before this time after the trace's start"),
		OPT_END(),
	};
	uint64_t from = 0, to = UINT64_MAX;
	struct ingero_reader *r;
	const struct ingero_header *h;
	struct ingero_event ev;
	uint32_t mask = UINT32_MAX;
	char line[4096];
	int ret;

	argc = parse_options(argc, argv, opts, dump_usage, 0);
	if (argc != 1)
		usage_with_options(dump_usage, opts, 1);
	if ((o.from && parse_time(o.from, &from)) || (o.to && parse_time(o.to, &to))) {
		error("--from and --to take seconds after the trace's start, or a number with s, ms, us or ns");
		usage_with_options(dump_usage, opts, 1);
	}
	if (o.streams && stream_mask(o.streams, &mask))
		usage_with_options(dump_usage, opts, 1);
	if (o.tid_arg) {
		char *end;

		errno = 0;
		o.tid = strtoull(o.tid_arg, &end, 10);
		if (errno || end == o.tid_arg || *end || o.tid > UINT32_MAX) {
			error("--tid wants a thread id, not '%s'", o.tid_arg);
			usage_with_options(dump_usage, opts, 1);
		}
	}
	r = ingero_reader_open(argv[0]);
	if (!r)
		return 1;
	h = ingero_reader_header(r);
	ingero_reader_streams(r, mask);
	if (o.from)
		ingero_reader_seek(r, h->start_ns + from);
	if (o.to && to <= UINT64_MAX - h->start_ns)
		to += h->start_ns;
	while ((ret = ingero_reader_next(r, &ev)) == 1) {
		if (ingero_event_key(&ev) >= to)
			break;
		if (o.tid_arg && !ingero_text_has_tid(&ev, (uint32_t)o.tid))
			continue;
		ingero_text_event(line, sizeof(line), &ev, h, o.json);
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
