/* The session's kernel state: instance, uprobe events, tracepoints, and their removal. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <tracefs.h>
#include <event-parse.h>
#include "error.h"
#include "session.h"

#define GROUP_PREFIX "ingero_"
#define INSTANCE_PREFIX "ingero-"

static int check_access(const char **dir)
{
	char path[4096];

	if (geteuid() != 0)
		return error("recording needs root (CAP_SYS_ADMIN and CAP_PERFMON for tracefs and uprobes); run it with sudo");
	*dir = tracefs_tracing_dir();
	if (!*dir)
		return error("tracefs is not mounted and could not be mounted (mount -t tracefs nodev /sys/kernel/tracing)");
	snprintf(path, sizeof(path), "%s/uprobe_events", *dir);
	if (access(path, W_OK))
		return error("this kernel has no uprobe events ('%s' missing: CONFIG_UPROBE_EVENTS)", path);
	return 0;
}

static int pid_alive(pid_t pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

/* The pid a group or instance name of ours carries, or 0 if the name is not ours. */
static pid_t owner_pid(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long pid;

	if (strncmp(name, prefix, n) || !isdigit((unsigned char)name[n]))
		return 0;
	pid = strtol(name + n, &end, 10);
	return *end || pid <= 0 ? 0 : (pid_t)pid;
}

static int remove_stale_instance(const char *name, void *data)
{
	pid_t pid = owner_pid(name, INSTANCE_PREFIX);
	struct tracefs_instance *inst;

	if (!pid || pid_alive(pid))
		return 0;
	inst = tracefs_instance_alloc(NULL, name);
	if (inst) {
		tracefs_instance_destroy(inst);
		tracefs_instance_free(inst);
		++*(int *)data;
	}
	return 0;
}

/* Removes the instances and uprobes of sessions whose process is gone (a SIGKILLed ingero). */
static void remove_stale(void)
{
	struct tracefs_dynevent **all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE |
								TRACEFS_DYNEVENT_URETPROBE, NULL);
	int instances = 0, probes = 0;
	size_t i;

	tracefs_instances_walk(remove_stale_instance, &instances);
	for (i = 0; all && all[i]; i++) {
		char *system = NULL, *event = NULL;
		pid_t pid;

		tracefs_dynevent_info(all[i], &system, &event, NULL, NULL, NULL);
		pid = system ? owner_pid(system, GROUP_PREFIX) : 0;
		if (pid && !pid_alive(pid) && !tracefs_dynevent_destroy(all[i], true))
			probes++;
		free(system);
		free(event);
	}
	tracefs_dynevent_list_free(all);
	if (instances || probes)
		warning("removed %d instance(s) and %d uprobe(s) left by ingero sessions whose process is gone",
			instances, probes);
}

static int readme_has(const char *dir, const char *needle)
{
	char path[4096], line[512];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "%s/README", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static int setup_instance(struct ingero_session *s, size_t buffer_kb)
{
	char name[64];

	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d", (int)getpid());
	s->instance = tracefs_instance_create(name);
	if (!s->instance)
		return error_errno("cannot create tracefs instance '%s'", name);
	tracefs_trace_off(s->instance);
	if (tracefs_instance_file_write(s->instance, "trace_clock", "mono") < 0)
		return error("tracefs instance '%s': the kernel has no 'mono' trace clock", name);
	if (tracefs_instance_set_buffer_size(s->instance, buffer_kb, -1) < 0)
		return error_errno("cannot set the ring buffer to %zu KiB per CPU", buffer_kb);
	/* When the buffer is full the kernel drops new events and counts them, keeping old ones. */
	tracefs_option_disable(s->instance, TRACEFS_OPTION_OVERWRITE);
	return 0;
}

struct ingero_session *ingero_session_new(size_t buffer_kb)
{
	struct ingero_session *s;
	const char *dir;

	if (check_access(&dir))
		return NULL;
	remove_stale();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->group, sizeof(s->group), GROUP_PREFIX "%d", (int)getpid());
	s->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	s->use_arrays = readme_has(dir, "[<array-size>]") || readme_has(dir, "\\[<array-size>\\]");
	s->grouped = readme_has(dir, "\\imm-value") && !getenv("INGERO_NO_GROUPED_PROBES");
	/* Formats are read one by one as events are used: the whole set, with kallsyms, takes long. */
	s->tep = tep_alloc();
	if (!s->tep)
		goto fail;
	if (setup_instance(s, buffer_kb))
		goto fail;
	return s;
fail:
	ingero_session_free(s);
	return NULL;
}

static int remember_probe(struct ingero_session *s, struct tracefs_dynevent *ev)
{
	if (s->nprobes == s->probes_alloc) {
		size_t n = s->probes_alloc ? 2 * s->probes_alloc : 64;
		struct tracefs_dynevent **p = realloc(s->probes, n * sizeof(*p));

		if (!p)
			return -1;
		s->probes = p;
		s->probes_alloc = n;
	}
	s->probes[s->nprobes++] = ev;
	return 0;
}

int ingero_session_add_uprobe(struct ingero_session *s, const char *name, const char *path,
			      unsigned long long offset, const char *fetchargs, int is_return)
{
	struct tracefs_dynevent *ev = is_return ?
		tracefs_uretprobe_alloc(s->group, name, path, offset, fetchargs) :
		tracefs_uprobe_alloc(s->group, name, path, offset, fetchargs);
	int joins;

	if (!ev)
		return error_errno("cannot describe uprobe '%s' at %s:%#llx", name, path, offset);
	joins = s->nprobes && !strcmp(s->last_probe, name);
	if (tracefs_dynevent_create(ev)) {
		tracefs_dynevent_free(ev);
		return error("the kernel refused uprobe '%s/%s' at %s:%#llx (%s): see %s/error_log",
			     s->group, name, path, offset, fetchargs, tracefs_tracing_dir());
	}
	/* Removing an event removes every probe that joined it: one handle is enough. */
	if (joins) {
		tracefs_dynevent_free(ev);
		return 0;
	}
	if (remember_probe(s, ev)) {
		tracefs_dynevent_destroy(ev, true);
		tracefs_dynevent_free(ev);
		return -1;
	}
	snprintf(s->last_probe, sizeof(s->last_probe), "%s", name);
	return 0;
}

/* One event's own enable file: tracefs_event_enable() would walk every event of the kernel to match it. */
static int enable_event(struct ingero_session *s, const char *system, const char *event)
{
	return tracefs_event_file_write(s->instance, system, event, "enable", "1") < 0 ? -1 : 0;
}

struct tep_event *ingero_session_enable_uprobe(struct ingero_session *s, const char *name)
{
	struct tracefs_dynevent *ev = s->nprobes && !strcmp(s->last_probe, name) ?
		s->probes[s->nprobes - 1] : NULL;
	struct tep_event *fmt = ev ? tracefs_dynevent_get_event(s->tep, ev) : NULL;

	if (!fmt) {
		error("cannot read the format of '%s/%s'", s->group, name);
		return NULL;
	}
	if (enable_event(s, s->group, name)) {
		error_errno("cannot enable '%s/%s'", s->group, name);
		return NULL;
	}
	return fmt;
}

struct tep_event *ingero_session_event(struct ingero_session *s, const char *system, const char *event)
{
	struct tep_event *fmt = tep_find_event_by_name(s->tep, system, event);
	char *text;
	int len;

	if (fmt)
		return fmt;
	text = tracefs_event_file_read(NULL, system, event, "format", &len);
	if (!text)
		return NULL;
	if (tep_parse_event(s->tep, text, len, system) == TEP_ERRNO__SUCCESS)
		fmt = tep_find_event_by_name(s->tep, system, event);
	free(text);
	return fmt;
}

struct tep_event *ingero_session_enable(struct ingero_session *s, const char *system, const char *event)
{
	struct tep_event *fmt = ingero_session_event(s, system, event);

	if (!fmt) {
		error("this kernel has no event '%s:%s'", system, event);
		return NULL;
	}
	if (enable_event(s, system, event)) {
		error_errno("cannot enable '%s:%s'", system, event);
		return NULL;
	}
	return fmt;
}

int ingero_session_filter_pids(struct ingero_session *s, const pid_t *pids, size_t n)
{
	char buf[16 * 64];
	size_t i, len = 0;

	for (i = 0; i < n && len < sizeof(buf) - 16; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%d ", (int)pids[i]);
	if (tracefs_option_enable(s->instance, TRACEFS_OPTION_EVENT_FORK))
		return error("this kernel cannot follow forks in its pid filter (option event-fork)");
	if (tracefs_instance_file_write(s->instance, "set_event_pid", buf) < 0)
		return error_errno("cannot set the pid filter to '%s'", buf);
	return 0;
}

int ingero_session_pids_left(struct ingero_session *s)
{
	int fd = tracefs_instance_file_open(s->instance, "set_event_pid", O_RDONLY);
	char buf[64];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n < 0 ? -1 : n > 0;
}

int ingero_session_start(struct ingero_session *s)
{
	return tracefs_trace_on(s->instance) ? error_errno("cannot turn tracing on") : 0;
}

int ingero_session_stop(struct ingero_session *s)
{
	return tracefs_trace_off(s->instance) ? error_errno("cannot turn tracing off") : 0;
}

long long ingero_session_dropped(struct ingero_session *s, int cpu)
{
	char file[64], *text, *p;
	long long n = -1;

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	text = tracefs_instance_file_read(s->instance, file, NULL);
	if (!text)
		return -1;
	p = strstr(text, "dropped events:");
	if (p)
		n = strtoll(p + strlen("dropped events:"), NULL, 10);
	free(text);
	return n;
}

void ingero_session_free(struct ingero_session *s)
{
	size_t i;

	if (!s)
		return;
	if (s->instance) {
		tracefs_trace_off(s->instance);
		tracefs_instance_file_write(s->instance, "events/enable", "0");
		tracefs_instance_destroy(s->instance);
		tracefs_instance_free(s->instance);
	}
	for (i = s->nprobes; i-- > 0;) {
		if (tracefs_dynevent_destroy(s->probes[i], true))
			warning("could not remove uprobe %zu of group '%s'", i, s->group);
		tracefs_dynevent_free(s->probes[i]);
	}
	free(s->probes);
	tep_free(s->tep);
	free(s);
}
