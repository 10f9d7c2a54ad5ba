/* TAP output for the C unit tests: ok(), is_u64(), done_testing(). */
#ifndef INGERO_TAP_H
#define INGERO_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_u64(got, want, ...) \
	tap_is_u64((uint64_t)(got), (uint64_t)(want), __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 4, 5)))
static int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", pass ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	return pass;
}

__attribute__((format(printf, 5, 6)))
__attribute__((unused))
static int tap_is_u64(uint64_t got, uint64_t want, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!tap_ok(got == want, file, line, "%s", msg))
		printf("#   got %" PRIu64 ", want %" PRIu64 "\n", got, want);
	return got == want;
}

static int done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
