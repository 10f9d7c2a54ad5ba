/* Command-line options as one table per command, so that -h cannot drift from the code. */
#ifndef INGERO_PARSE_OPTIONS_H
#define INGERO_PARSE_OPTIONS_H

#include <stdint.h>

enum option_type {
	OPTION_END,
	OPTION_BOOL,		/* int *: set to 1 */
	OPTION_STRING,		/* const char **: the argument */
	OPTION_INT,		/* int *: a decimal number */
	OPTION_TID,		/* int *: a thread id, decimal, not 0 (the idle task) */
	OPTION_U64,		/* uint64_t *: a decimal number */
	OPTION_TIME,		/* uint64_t *: ns after the trace's start, UINT64_MAX past 64 bits of ns */
	OPTION_CALLBACK,	/* callback(opt, arg): 0 or -1 after printing an error */
};

struct option {
	enum option_type type;
	int short_name;
	const char *long_name;
	void *value;
	const char *argh;	/* the argument's name in the help text; NULL: takes none */
	const char *help;
	int (*callback)(const struct option *opt, const char *arg);
};

#define OPT_BOOL(s, l, v, h)		{ OPTION_BOOL, (s), (l), (v), NULL, (h), NULL }
#define OPT_STRING(s, l, v, a, h)	{ OPTION_STRING, (s), (l), (v), (a), (h), NULL }
#define OPT_INT(s, l, v, a, h)		{ OPTION_INT, (s), (l), (v), (a), (h), NULL }
#define OPT_TID(s, l, v, h)		{ OPTION_TID, (s), (l), (v), "tid", (h), NULL }
#define OPT_U64(s, l, v, a, h)		{ OPTION_U64, (s), (l), (v), (a), (h), NULL }
#define OPT_TIME(s, l, v, h)		{ OPTION_TIME, (s), (l), (v), "time", (h), NULL }
#define OPT_CALLBACK(s, l, v, a, h, f)	{ OPTION_CALLBACK, (s), (l), (v), (a), (h), (f) }
#define OPT_END()			{ OPTION_END, 0, NULL, NULL, NULL, NULL, NULL }

/* start + an OPT_TIME value; UINT64_MAX, a time after every event, where that overflows. */
static inline uint64_t time_after(uint64_t start, uint64_t rel)
{
	return rel > UINT64_MAX - start ? UINT64_MAX : start + rel;
}

/* 0 when the OPT_TIME values of --from and --to make a window, else -1 after saying why. */
int check_window(uint64_t from, uint64_t to);

/* Stop at the first argument that is not an option (the command to run). */
#define PARSE_OPT_STOP_AT_NON_OPTION 1

/*
 * Parses argv[1..] (argv[0] is the command's name), leaves what is not an
 * option in argv[0..return value) and exits: 0 after printing the usage to
 * stdout for -h/--help, 129 after an error (git's convention).
 */
int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const *usage, unsigned flags);
/* Prints the usage lines and the option table; to stderr with status 129 when err. */
void usage_with_options(const char *const *usage, const struct option *opts, int err) __attribute__((noreturn));

#endif
