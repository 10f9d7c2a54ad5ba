/* The option parser: long and short options from a table, usage printed from the same table. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parse-options.h"
#include "../lib/error.h"

/* Every number option is decimal: --top 010 is ten, --tid 0x64 a usage error. */
static int set_number(const struct option *o, const char *arg, const char *name)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!isdigit((unsigned char)*arg) || *end)
		return error("option '%s' wants a decimal number, not '%s'", name, arg);
	if (errno || (o->type != OPTION_U64 && v > INT_MAX))
		return error("option '%s': %s is too large", name, arg);
	if (o->type == OPTION_TID && !v)
		return error("option '%s': 0 is the idle task, not a thread", name);
	if (o->type == OPTION_U64)
		*(uint64_t *)o->value = v;
	else
		*(int *)o->value = (int)v;
	return 0;
}

/*
 * A time after the trace's start: seconds ("1.5"), or a number with a unit:
 * s, ms, us, ns ("250ms", "1500000000ns"). One too large for 64 bits of ns
 * is UINT64_MAX, after the end of any trace; inf, nan and negative times are
 * refused.
 */
static int parse_time(const char *arg, uint64_t *ns)
{
	static const struct { const char *unit; double scale; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 },
	};
	size_t len = strspn(arg, "0123456789.eE+-");
	char *end;
	double v;
	size_t i;

	if (!isdigit((unsigned char)*arg) && *arg != '.')
		return -1;
	v = strtod(arg, &end);
	if (end != arg + len)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		/* an integer count of ns is kept exact, beyond a double's 53 bits */
		if (units[i].scale == 1 && strcspn(arg, ".eE") >= len)
			*ns = strtoull(arg, NULL, 10);
		else if (v * units[i].scale + 0.5 >= 18446744073709551616.0)
			*ns = UINT64_MAX;
		else
			*ns = (uint64_t)(v * units[i].scale + 0.5);
		return 0;
	}
	return -1;
}

int check_window(uint64_t from, uint64_t to)
{
	/* a --to past 64 bits of ns is as open as none, whatever --from is */
	if (to != UINT64_MAX && to <= from)
		return error("--to must come after --from (0 when not given)");
	return 0;
}

static int apply(const struct option *o, const char *arg, const char *name)
{
	switch (o->type) {
	case OPTION_BOOL:
		*(int *)o->value = 1;
		return 0;
	case OPTION_STRING:
		*(const char **)o->value = arg;
		return 0;
	case OPTION_INT:
	case OPTION_TID:
	case OPTION_U64:
		return set_number(o, arg, name);
	case OPTION_TIME:
		if (parse_time(arg, o->value))
			return error("option '%s' wants a time: seconds, or with s, ms, us, ns (1.5, 250ms), not '%s'",
				     name, arg);
		return 0;
	case OPTION_CALLBACK:
		return o->callback(o, arg);
	default:
		BUG("option type %d", o->type);
	}
}

static const struct option *find_long(const struct option *opts, const char *name, size_t len)
{
	for (; opts->type != OPTION_END; opts++)
		if (opts->long_name && strlen(opts->long_name) == len &&
		    !strncmp(opts->long_name, name, len))
			return opts;
	return NULL;
}

static const struct option *find_short(const struct option *opts, int c)
{
	for (; opts->type != OPTION_END; opts++)
		if (opts->short_name == c)
			return opts;
	return NULL;
}

/* Handles argv[*i], a long option; may consume the next argument. */
static int parse_long(const struct option *opts, int argc, const char **argv, int *i)
{
	const char *name = argv[*i] + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct option *o = find_long(opts, name, len);
	char dashed[64];

	if (!o)
		return error("unknown option '--%.*s'", (int)len, name);
	/* errors name the option, without the =value of --top=abc */
	snprintf(dashed, sizeof(dashed), "--%s", o->long_name);
	if (!o->argh) {
		if (eq)
			return error("option '%s' takes no value", dashed);
		return apply(o, NULL, dashed);
	}
	if (eq)
		return apply(o, eq + 1, dashed);
	if (*i + 1 >= argc)
		return error("option '%s' requires a value", dashed);
	++*i;
	return apply(o, argv[*i], dashed);
}

/* Handles argv[*i], one or more short options bundled: -av, -ofile, -o file. */
static int parse_short(const struct option *opts, int argc, const char **argv, int *i)
{
	const char *p;

	for (p = argv[*i] + 1; *p; p++) {
		const struct option *o = find_short(opts, *p);
		char name[3] = { '-', *p, 0 };

		if (!o)
			return error("unknown switch '%c'", *p);
		if (!o->argh) {
			if (apply(o, NULL, name))
				return -1;
			continue;
		}
		if (p[1])
			return apply(o, p + 1, name);
		if (*i + 1 >= argc)
			return error("switch '%c' requires a value", *p);
		++*i;
		return apply(o, argv[*i], name);
	}
	return 0;
}

static int is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const *usage, unsigned flags)
{
	int i, out = 0;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		int ret;

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (arg[0] != '-' || !arg[1]) {
			if (flags & PARSE_OPT_STOP_AT_NON_OPTION)
				break;
			argv[out++] = arg;
			continue;
		}
		if (is_help(arg))
			usage_with_options(usage, opts, 0);
		ret = arg[1] == '-' ? parse_long(opts, argc, argv, &i) : parse_short(opts, argc, argv, &i);
		if (ret)
			usage_with_options(usage, opts, 1);
	}
	while (i < argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	return out;
}

void usage_with_options(const char *const *usage, const struct option *opts, int err)
{
	FILE *f = err ? stderr : stdout;
	int first = 1;

	for (; *usage; usage++, first = 0)
		fprintf(f, "%s%s\n", first ? "usage: " : "   or: ", *usage);
	fputc('\n', f);
	for (; opts->type != OPTION_END; opts++) {
		char left[64];
		int n = 0;

		if (opts->short_name)
			n += snprintf(left + n, sizeof(left) - n, "-%c%s", opts->short_name,
				      opts->long_name ? ", " : "");
		if (opts->long_name)
			n += snprintf(left + n, sizeof(left) - n, "--%s", opts->long_name);
		if (opts->argh)
			snprintf(left + n, sizeof(left) - n, " <%s>", opts->argh);
		fprintf(f, "    %-26s %s\n", left, opts->help);
	}
	exit(err ? 129 : 0);
}
