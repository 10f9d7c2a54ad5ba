/* Finding the CUDA libraries a program uses, wherever they are, and their symbols. */
#ifndef INGERO_LIBFIND_H
#define INGERO_LIBFIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "api.h"

struct ingero_strlist {
	char **items;
	size_t nr, alloc;
};

void ingero_strlist_release(struct ingero_strlist *l);
int ingero_strlist_add(struct ingero_strlist *l, const char *s);

/*
 * The CUDA libraries found where a command will load them from: the ld.so
 * cache, LD_LIBRARY_PATH, CUDA's install folders, Python wheels'
 * nvidia/<x>/lib. Appended to out as real paths, each file once.
 */
int ingero_libfind_candidates(struct ingero_strlist *out);
/* The files a search has looked at, by device and inode; the owner frees ids. */
struct ingero_libfind_seen {
	struct { dev_t dev; ino_t ino; } *ids;
	size_t nr, alloc;
};
/* 1 if st's file is new to s (and now remembered), 0 if seen before, -1 without memory. */
int ingero_libfind_remember(struct ingero_libfind_seen *s, const struct stat *st);

/*
 * The files mapped executable in pid that define CUDA symbols (maps paths,
 * also under /proc/pid/root). With seen, files it holds are skipped and the
 * ones looked at are added, so that looking again costs a stat per mapping.
 * -1 with the error said, or with errno ESRCH alone for a process that has ended.
 */
int ingero_libfind_mapped(pid_t pid, struct ingero_libfind_seen *seen, struct ingero_strlist *out);
/*
 * The dynamic loader process pid runs with, as a path to put in path: 1 if
 * found, 0 for a program without one (static) or one that has ended.
 */
int ingero_libfind_loader(pid_t pid, char *path, size_t size);
/*
 * Stats a library named by the user into st: 0 if it is a regular file, else
 * -1 and the error said. A FIFO or a device is refused unopened, as its open could block.
 */
int ingero_lib_stat(const char *path, struct stat *st);
/* Whether path is an ELF file that defines any API of the table (in .dynsym or .symtab). */
int ingero_lib_has_cuda(const char *path, const struct ingero_api *apis, size_t napis);

/*
 * The file offsets (what uprobe_events wants after PATH:) of the APIs of the
 * table that path defines, in .dynsym or .symtab; offsets[i] is 0 where
 * apis[i] is missing. build_id gets the hex build-id ("" if none). Returns
 * how many were found, -1 on a file that is not ELF or cannot be read.
 */
int ingero_lib_resolve(const char *path, const struct ingero_api *apis, size_t napis,
		       uint64_t *offsets, char *build_id, size_t build_id_len);

#endif
