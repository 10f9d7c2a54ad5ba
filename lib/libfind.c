/*
 * Where the CUDA libraries are: the folders the dynamic loader and Python's
 * NVIDIA wheels use, without running either, and what a process has mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "libfind.h"
#include "../probes/probes.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#endif

/* The library names looked for in each folder. */
#define CUDA_NAMES "/lib{cudart,cuda}.so*"

/* Folder patterns, in the loader's order after the cache; "$VAR" starts one that an environment variable roots. */
static const char *const folders[] = {
	"/usr/local/cuda*/lib64",
	"/usr/local/cuda*/targets/*/lib",
	("/usr/lib/" MULTIARCH),	/* one string, not two short of a comma */
	"/usr/lib64",
	"/usr/lib",
	"/usr/lib/wsl/lib",
	"/usr/lib/python3*/dist-packages/nvidia/*/lib",
	"/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
	"/usr/local/lib/python3*/site-packages/nvidia/*/lib",
	"$HOME/.local/lib/python3*/site-packages/nvidia/*/lib",
	"$VIRTUAL_ENV/lib/python3*/site-packages/nvidia/*/lib",
	"$CONDA_PREFIX/lib",
	"$CONDA_PREFIX/lib/python3*/site-packages/nvidia/*/lib",
};

void ingero_strlist_release(struct ingero_strlist *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

int ingero_strlist_add(struct ingero_strlist *l, const char *s)
{
	char *copy;

	if (l->nr == l->alloc) {
		size_t n = l->alloc ? 2 * l->alloc : 8;
		char **items = realloc(l->items, n * sizeof(*items));

		if (!items)
			return error_errno("cannot grow a list");
		l->items = items;
		l->alloc = n;
	}
	copy = strdup(s);
	if (!copy)
		return error_errno("cannot grow a list");
	l->items[l->nr++] = copy;
	return 0;
}

int ingero_lib_stat(const char *path, struct stat *st)
{
	if (stat(path, st))
		return error_errno("cannot open '%s'", path);
	if (!S_ISREG(st->st_mode))
		return error("'%s' is not a regular file", path);
	return 0;
}

/* The files already taken, by (device, inode): a library reached by several names counts once. */
int ingero_libfind_remember(struct ingero_libfind_seen *s, const struct stat *st)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->ids[i].dev == st->st_dev && s->ids[i].ino == st->st_ino)
			return 0;
	if (s->nr == s->alloc) {
		size_t n = s->alloc ? 2 * s->alloc : 16;
		void *ids = realloc(s->ids, n * sizeof(*s->ids));

		if (!ids)
			return -1;
		s->ids = ids;
		s->alloc = n;
	}
	s->ids[s->nr].dev = st->st_dev;
	s->ids[s->nr].ino = st->st_ino;
	s->nr++;
	return 1;
}

static int has_cuda(const char *path)
{
	size_t napis;
	const struct ingero_api *apis = ingero_probe_apis(&napis);

	return apis && ingero_lib_has_cuda(path, apis, napis);
}

/* Adds path's real path to out if it is a file not seen yet that defines CUDA APIs. */
static int consider(const char *path, struct ingero_libfind_seen *seen, struct ingero_strlist *out)
{
	char real[PATH_MAX];
	struct stat st;
	int r;

	if (!realpath(path, real) || stat(real, &st) || !S_ISREG(st.st_mode))
		return 0;
	r = ingero_libfind_remember(seen, &st);
	if (r < 0)
		return error_errno("cannot remember '%s'", real);
	if (!r || !has_cuda(real))
		return 0;
	return ingero_strlist_add(out, real);
}

static int consider_glob(const char *pattern, struct ingero_libfind_seen *seen, struct ingero_strlist *out)
{
	glob_t g;
	size_t i;
	int ret = 0;

	if (glob(pattern, GLOB_BRACE | GLOB_NOSORT, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc && !ret; i++)
		ret = consider(g.gl_pathv[i], seen, out);
	globfree(&g);
	return ret;
}

/* A folder pattern of the table with its variable expanded; 0 if the variable is unset. */
static int expand(const char *pattern, char *buf, size_t len)
{
	const char *slash, *value;
	char var[64];

	if (pattern[0] != '$')
		return snprintf(buf, len, "%s%s", pattern, CUDA_NAMES) < (int)len;
	slash = strchrnul(pattern, '/');
	if ((size_t)(slash - pattern) > sizeof(var))
		return 0;
	memcpy(var, pattern + 1, slash - pattern - 1);
	var[slash - pattern - 1] = '\0';
	value = getenv(var);
	if (!value || !*value)
		return 0;
	return snprintf(buf, len, "%s%s%s", value, slash, CUDA_NAMES) < (int)len;
}

/*
 * The ld.so cache, glibc's format since 2.32 ("glibc-ld.so.cache1.1", alone or
 * after the old format): a header, then entries whose key (the soname) and
 * value (the path) are offsets from the header's start.
 */
#define CACHE_MAGIC "glibc-ld.so.cache1.1"
#define CACHE_HEADER 48
#define CACHE_ENTRY 24

static int consider_ld_cache(const char *file, struct ingero_libfind_seen *seen, struct ingero_strlist *out)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC), ret = 0;
	const unsigned char *map, *hdr;
	struct stat st;
	uint32_t nlibs, i;
	size_t size;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || st.st_size < CACHE_HEADER) {
		close(fd);
		return 0;
	}
	size = st.st_size;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 0;
	hdr = memmem(map, size, CACHE_MAGIC, strlen(CACHE_MAGIC));
	if (!hdr || (size_t)(hdr - map) + CACHE_HEADER > size)
		goto out;
	memcpy(&nlibs, hdr + 20, sizeof(nlibs));
	for (i = 0; i < nlibs && !ret; i++) {
		const unsigned char *e = hdr + CACHE_HEADER + (size_t)i * CACHE_ENTRY;
		uint32_t key, value;
		size_t avail;
		const char *name, *path;

		if ((size_t)(e - map) + CACHE_ENTRY > size)
			break;
		memcpy(&key, e + 4, sizeof(key));
		memcpy(&value, e + 8, sizeof(value));
		avail = size - (hdr - map);
		if (key >= avail || value >= avail)
			continue;
		name = (const char *)hdr + key;
		path = (const char *)hdr + value;
		/* Every string must end inside the file. */
		if (!memchr(name, '\0', avail - key) || !memchr(path, '\0', avail - value))
			continue;
		if (!strncmp(name, "libcudart.so", 12) || !strncmp(name, "libcuda.so", 10))
			ret = consider(path, seen, out);
	}
out:
	munmap((void *)map, size);
	return ret;
}

static int consider_path_list(const char *list, struct ingero_libfind_seen *seen, struct ingero_strlist *out)
{
	char *copy, *dir, *save = NULL, pattern[PATH_MAX];
	int ret = 0;

	if (!list || !*list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return error_errno("cannot read LD_LIBRARY_PATH");
	for (dir = strtok_r(copy, ":", &save); dir && !ret; dir = strtok_r(NULL, ":", &save))
		if (snprintf(pattern, sizeof(pattern), "%s%s", dir, CUDA_NAMES) < (int)sizeof(pattern))
			ret = consider_glob(pattern, seen, out);
	free(copy);
	return ret;
}

static int seed_seen(struct ingero_libfind_seen *seen, const struct ingero_strlist *out)
{
	size_t i;
	struct stat st;

	for (i = 0; i < out->nr; i++)
		if (!stat(out->items[i], &st) && ingero_libfind_remember(seen, &st) < 0)
			return error_errno("cannot remember '%s'", out->items[i]);
	return 0;
}

int ingero_libfind_candidates(struct ingero_strlist *out)
{
	struct ingero_libfind_seen seen = { 0 };
	char pattern[PATH_MAX];
	size_t i;
	int ret = seed_seen(&seen, out);

	if (!ret)
		ret = consider_ld_cache("/etc/ld.so.cache", &seen, out);
	if (!ret)
		ret = consider_path_list(getenv("LD_LIBRARY_PATH"), &seen, out);
	for (i = 0; i < sizeof(folders) / sizeof(folders[0]) && !ret; i++)
		if (expand(folders[i], pattern, sizeof(pattern)))
			ret = consider_glob(pattern, &seen, out);
	free(seen.ids);
	return ret;
}

/*
 * A maps line: "start-end perms offset dev inode   path"; the path is what
 * follows the inode, spaces and all. NULL for anonymous and special mappings.
 */
static const char *maps_path(char *line, int *exec)
{
	char perms[8];
	int n = 0;
	char *path, *nl;

	if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &n) != 1 || !n)
		return NULL;
	*exec = strchr(perms, 'x') != NULL;
	path = line + n;
	nl = strchr(path, '\n');
	if (nl)
		*nl = '\0';
	if (path[0] != '/')
		return NULL;
	/* A file replaced since it was mapped has nothing left to probe at that name. */
	if (strlen(path) > 10 && !strcmp(path + strlen(path) - 10, " (deleted)"))
		return NULL;
	return path;
}

/* Whether /proc/PID/NAME and /proc/self/NAME are the same file: a namespace or a root we share. */
static int shares(pid_t pid, const char *name)
{
	char theirs[64], ours[64];
	struct stat a, b;

	snprintf(theirs, sizeof(theirs), "/proc/%d/%s", (int)pid, name);
	snprintf(ours, sizeof(ours), "/proc/self/%s", name);
	return !stat(theirs, &a) && !stat(ours, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether pid sees the files we see: its root and its mounts are ours. */
static int same_files(pid_t pid)
{
	return shares(pid, "root") && shares(pid, "ns/mnt");
}

/* The address its dynamic loader was mapped at (AT_BASE), 0 for a program without one or unreadable auxv. */
static unsigned long loader_base(pid_t pid)
{
	unsigned long aux[2];
	char file[64];
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/auxv", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, aux, sizeof(aux)) == (ssize_t)sizeof(aux) && aux[0] != AT_NULL)
		if (aux[0] == AT_BASE) {
			close(fd);
			return aux[1];
		}
	close(fd);
	return 0;
}

int ingero_libfind_loader(pid_t pid, char *path, size_t size)
{
	unsigned long base = loader_base(pid), start, end;
	char file[64], *line = NULL;
	size_t len = 0;
	int found = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	if (!base || !(f = fopen(file, "re")))
		return 0;
	while (!found && getline(&line, &len, f) > 0) {
		int exec;
		const char *mapped;

		if (sscanf(line, "%lx-%lx", &start, &end) != 2 || base < start || base >= end ||
		    !(mapped = maps_path(line, &exec)))
			continue;
		found = (same_files(pid) ? snprintf(path, size, "%s", mapped) :
			 snprintf(path, size, "/proc/%d/root%s", (int)pid, mapped)) < (int)size;
	}
	free(line);
	fclose(f);
	return found;
}

int ingero_libfind_mapped(pid_t pid, struct ingero_libfind_seen *seen, struct ingero_strlist *out)
{
	struct ingero_libfind_seen once = { 0 };
	char file[64], *line = NULL, where[PATH_MAX];
	size_t len = 0;
	FILE *f;
	int ret, ours = same_files(pid);

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	f = fopen(file, "re");
	if (!f && errno == ENOENT && kill(pid, 0) && errno == ESRCH)
		return -1;
	if (!f)
		return error_errno("cannot read the mappings of process %d", (int)pid);
	if (!seen)
		seen = &once;
	ret = seed_seen(seen, out);
	while (!ret && getline(&line, &len, f) > 0) {
		int exec = 0;
		const char *path = maps_path(line, &exec);
		struct stat st;
		int r;

		if (!path || !exec)
			continue;
		if (ours)
			snprintf(where, sizeof(where), "%s", path);
		else if (snprintf(where, sizeof(where), "/proc/%d/root%s", (int)pid, path) >= (int)sizeof(where))
			continue;
		if (stat(where, &st))
			continue;
		r = ingero_libfind_remember(seen, &st);
		if (r < 0)
			ret = error_errno("cannot remember '%s'", where);
		else if (r && has_cuda(where))
			ret = ingero_strlist_add(out, where);
	}
	free(line);
	fclose(f);
	free(once.ids);
	return ret;
}
