/* Messages to stderr: lib/ reports and returns, cmd/ decides what is fatal. */
#ifndef INGERO_ERROR_H
#define INGERO_ERROR_H

#define NORETURN __attribute__((noreturn))
#define PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Print "ingero: MSG" and return -1. */
int error(const char *fmt, ...) PRINTF(1, 2);
/* The same with ": strerror(errno)" appended; errno is kept. */
int error_errno(const char *fmt, ...) PRINTF(1, 2);
void warning(const char *fmt, ...) PRINTF(1, 2);
/* A broken invariant: print and abort. */
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)
NORETURN void bug_at(const char *file, int line, const char *fmt, ...) PRINTF(3, 4);

/* Messages are dropped while quiet is set (the fuzzer, the library's own probing). */
extern int error_quiet;

#endif
