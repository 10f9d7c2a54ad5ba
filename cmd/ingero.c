/* main: finds the subcommand in the command table and runs it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builtin.h"

struct command {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "record",  cmd_record,  "run a command and record its CUDA calls and scheduling" },
	{ "analyze", cmd_analyze, "turn a trace into a causal-chain report" },
	{ "info",    cmd_info,    "show what a trace holds: header, libraries, counts, losses" },
	{ "dump",    cmd_dump,    "print the events of a trace, one per line" },
	{ "probes",  cmd_probes,  "list the probe sets and which of their symbols a library has" },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static NORETURN void vdie(const char *fmt, va_list ap, int err)
{
	fputs("ingero: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdie(fmt, ap, 0);
}

void die_errno(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vdie(fmt, ap, err);
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ingero [--version] [--help] <command> [<args>]\n\nCommands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "    %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'ingero help <command>' shows the options of a command.\n");
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	fprintf(stderr, "ingero: '%s' is not a command; see 'ingero --help'\n", name);
	return NULL;
}

/* ingero help [<command>]: the general usage, or the command's own, as <command> --help prints it. */
static int help(int argc, const char **argv)
{
	const struct command *c;

	if (argc == 1) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		usage(stderr);
		return 129;
	}
	c = find_command(argv[1]);
	if (!c)
		return 129;
	return c->fn(2, (const char *[]){ c->name, "--help", NULL });
}

/*
 * A standard stream its caller closed gets /dev/null: otherwise the first
 * file ingero opens (the trace) would take its number, and its messages.
 */
static void fill_std_fds(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO)
		;
	if (fd > STDERR_FILENO)
		close(fd);
}

int main(int argc, const char **argv)
{
	const struct command *c;

	fill_std_fds();
	if (argc < 2) {
		usage(stderr);
		return 129;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("ingero %s\n", INGERO_VERSION);
		return 0;
	}
	c = find_command(argv[1]);
	return c ? c->fn(argc - 1, argv + 1) : 129;
}
