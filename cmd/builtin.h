/* The subcommands: each is one file in cmd/, entered with its own argv. */
#ifndef INGERO_BUILTIN_H
#define INGERO_BUILTIN_H

#include "../lib/error.h"

/* Prints "ingero: MSG" and exits with status 1. */
void die(const char *fmt, ...) NORETURN PRINTF(1, 2);
void die_errno(const char *fmt, ...) NORETURN PRINTF(1, 2);

int cmd_record(int argc, const char **argv);
int cmd_analyze(int argc, const char **argv);
int cmd_info(int argc, const char **argv);
int cmd_dump(int argc, const char **argv);
int cmd_probes(int argc, const char **argv);

#endif
