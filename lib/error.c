/* Messages to stderr, in one form: "ingero: what failed: why". */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"

int error_quiet;

static void report(const char *prefix, const char *fmt, va_list ap, int err)
{
	char msg[1024];

	if (error_quiet)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (err)
		fprintf(stderr, "ingero: %s%s: %s\n", prefix, msg, strerror(err));
	else
		fprintf(stderr, "ingero: %s%s\n", prefix, msg);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("", fmt, ap, 0);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	report("", fmt, ap, err);
	va_end(ap);
	errno = err;
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("warning: ", fmt, ap, 0);
	va_end(ap);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ingero: BUG at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
