/*
 * ingero probes: the probe sets and their APIs; for a library or a process,
 * which of the sets' symbols it has (and at which file offset) and which it lacks.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtin.h"
#include "parse-options.h"
#include "../lib/libfind.h"
#include "../probes/probes.h"

static const char *const probes_usage[] = {
	"ingero probes [-e SET[,SET...]] [--prototypes]",
	"ingero probes [-e SET[,SET...]] (--lib PATH | -p PID)... [--uprobe-events GROUP [--no-arrays]]",
	NULL,
};

struct probes_opts {
	const char *sets;
	struct ingero_strlist libs;
	struct ingero_strlist pids;
	int prototypes;
	const char *group;
	int no_arrays;
};

static int add_item(const struct option *opt, const char *arg)
{
	return ingero_strlist_add(opt->value, arg);
}

static int in_mask(uint64_t mask, const struct ingero_api *api)
{
	return (mask >> ingero_probe_api_set(api)) & 1;
}

static void list_sets(uint64_t mask, const struct ingero_api *apis, size_t napis, int prototypes)
{
	static const char *const libs[] = { "cudart", "cuda" };
	size_t nsets, s, l, i;
	const struct ingero_probe_set *sets = ingero_probe_sets(&nsets);

	for (s = 0; s < nsets; s++) {
		if (!((mask >> s) & 1))
			continue;
		printf("%s (%s): %s\n", sets[s].name, sets[s].by_default ? "default" : "opt-in", sets[s].help);
		for (l = 0; l < 2; l++) {
			int any = 0;

			for (i = 0; i < napis; i++) {
				if (ingero_probe_api_set(&apis[i]) != (int)s || strcmp(apis[i].lib, libs[l]))
					continue;
				if (prototypes)
					printf("    %-6s %-6s %s\n", libs[l], ingero_role_name(apis[i].role),
					       ingero_probe_prototype(&apis[i]));
				else
					printf("%s%s", any ? " " : l ? "    cuda:   " : "    cudart: ", apis[i].name);
				any = 1;
			}
			if (any && !prototypes)
				putchar('\n');
		}
	}
}

/* The uprobe_events lines that probe the found APIs of one library: entry and return. */
static void print_events(const char *group, const char *path, const struct ingero_api *apis, size_t napis,
			 const uint64_t *offsets, uint64_t mask, int arrays)
{
	char args[4096];
	size_t i;
	int ret;

	for (i = 0; i < napis; i++) {
		if (!offsets[i] || !in_mask(mask, &apis[i]))
			continue;
		for (ret = 0; ret < 2; ret++) {
			if (ingero_probe_fetchargs(&apis[i], ret, arrays, args, sizeof(args)))
				die("the fetch arguments of '%s' do not fit in %zu bytes", apis[i].name, sizeof(args));
			printf("%c:%s/%s%s %s:0x%" PRIx64 "%s%s\n", ret ? 'r' : 'p', group, apis[i].name,
			       ret ? "_ret" : "", path, offsets[i], *args ? " " : "", args);
		}
	}
}

/*
 * One library: its path and build-id, then "have SET API 0xOFFSET" and
 * "lacks SET API" for the APIs of the sets of each library kind it defines
 * any API of (a driver is not said to lack the runtime's calls).
 */
static int show_lib(const char *path, const struct probes_opts *o, const struct ingero_api *apis, size_t napis,
		    uint64_t mask)
{
	uint64_t *offsets = calloc(napis, sizeof(*offsets));
	char build_id[128];
	int found, kinds[2] = { 0, 0 }, have = 0, lack = 0;
	size_t i;

	if (!offsets)
		die_errno("cannot allocate the offsets of %zu APIs", napis);
	found = ingero_lib_resolve(path, apis, napis, offsets, build_id, sizeof(build_id));
	if (found < 0) {
		free(offsets);
		return -1;
	}
	for (i = 0; i < napis; i++)
		if (offsets[i])
			kinds[!strcmp(apis[i].lib, "cuda")] = 1;
	if (o->group) {
		print_events(o->group, path, apis, napis, offsets, mask, !o->no_arrays);
		free(offsets);
		return 0;
	}
	printf("%s build-id %s\n", path, *build_id ? build_id : "none");
	for (i = 0; i < napis; i++) {
		if (!in_mask(mask, &apis[i]) || !kinds[!strcmp(apis[i].lib, "cuda")])
			continue;
		if (offsets[i]) {
			printf("  have  %-9s %-28s 0x%" PRIx64 "\n", apis[i].set, apis[i].name, offsets[i]);
			have++;
		} else {
			printf("  lacks %-9s %s\n", apis[i].set, apis[i].name);
			lack++;
		}
	}
	printf("  %d symbols of the sets found, %d lacking%s\n", have, lack,
	       found ? "" : " (no CUDA API at all)");
	free(offsets);
	return 0;
}

/* The kernel's rule for an event group's name: a letter or '_', then letters, digits and '_'. */
static int good_group(const char *name)
{
	size_t len = strlen(name);

	return len && len < 64 && (isalpha((unsigned char)*name) || *name == '_') &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len;
}

/* The options that do not go together, or a group the kernel would refuse: said, -1. */
static int check_options(const struct probes_opts *o)
{
	if ((o->group || o->no_arrays) && !o->libs.nr && !o->pids.nr)
		return error("--uprobe-events and --no-arrays need --lib or -p");
	if (o->no_arrays && !o->group)
		return error("--no-arrays goes with --uprobe-events");
	if (o->prototypes && (o->libs.nr || o->pids.nr))
		return error("--prototypes lists the sets' APIs: not with --lib or -p");
	if (o->group && !good_group(o->group))
		return error("'%s' is not an event group the kernel takes "
			     "(a letter or '_', then letters, digits and '_', 63 at most)", o->group);
	return 0;
}

/* Shows each file of the list once, however many names it is given by. */
static int show_libs(const struct probes_opts *o, const struct ingero_api *apis, size_t napis, uint64_t mask)
{
	struct ingero_libfind_seen seen = { 0 };
	int failed = 0, r;
	size_t i;

	for (i = 0; i < o->libs.nr; i++) {
		const char *path = o->libs.items[i];
		struct stat st;

		if (ingero_lib_stat(path, &st)) {
			failed = 1;
			continue;
		}
		r = ingero_libfind_remember(&seen, &st);
		if (r < 0)
			die_errno("cannot remember '%s'", path);
		if (r && show_lib(path, o, apis, napis, mask))
			failed = 1;
	}
	free(seen.ids);
	return failed;
}

int cmd_probes(int argc, const char **argv)
{
	struct probes_opts o = { .sets = NULL };
	const struct option options[] = {
		OPT_STRING('e', "sets", &o.sets, "SET,...", "only these probe sets (default: every set; 'default', 'all')"),
		OPT_CALLBACK(0, "lib", &o.libs, "PATH", "which symbols of the sets this library has (repeatable)", add_item),
		OPT_CALLBACK('p', "pid", &o.pids, "PID", "the same for the CUDA libraries process PID has mapped", add_item),
		OPT_BOOL(0, "prototypes", &o.prototypes, "list the sets' APIs with their prototypes"),
		OPT_STRING(0, "uprobe-events", &o.group, "GROUP",
			   "with --lib/-p: print the uprobe_events lines for the found APIs, in event group GROUP"),
		OPT_BOOL(0, "no-arrays", &o.no_arrays, "with --uprobe-events: the stack window without array fetch args"),
		OPT_END(),
	};
	const struct ingero_api *apis;
	size_t napis, i, before;
	uint64_t mask;
	int ret = 0;

	argc = parse_options(argc, argv, options, probes_usage, 0);
	if (argc) {
		error("unexpected argument '%s'", argv[0]);
		usage_with_options(probes_usage, options, 1);
	}
	if (check_options(&o))
		usage_with_options(probes_usage, options, 1);
	apis = ingero_probe_apis(&napis);
	if (!apis)
		die("the built-in probe table is broken");
	if (ingero_probe_sets_parse(o.sets ? o.sets : "all", &mask)) {
		ret = 129;
		goto out;
	}
	if (!o.libs.nr && !o.pids.nr) {
		list_sets(mask, apis, napis, o.prototypes);
		goto out;
	}
	for (i = 0; i < o.pids.nr; i++) {
		char *end;
		long pid = strtol(o.pids.items[i], &end, 10);

		if (pid <= 0 || *end) {
			error("-p wants a process id, not '%s'", o.pids.items[i]);
			ret = 129;
			goto out;
		}
		before = o.libs.nr;
		if (ingero_libfind_mapped((pid_t)pid, NULL, &o.libs)) {
			if (errno == ESRCH)
				error("no process %ld", pid);
			ret = 1;
		} else if (o.libs.nr == before && !o.group)
			printf("process %ld has no CUDA library mapped\n", pid);
	}
	if (show_libs(&o, apis, napis, mask))
		ret = 1;
out:
	ingero_strlist_release(&o.libs);
	ingero_strlist_release(&o.pids);
	return ret;
}
