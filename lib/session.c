/* The session's kernel state: instance, uprobe events, tracepoints, and their removal. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tracefs.h>
#include <event-parse.h>
#include "error.h"
#include "mmapwatch.h"
#include "session.h"

#define GROUP_PREFIX "ingero_"
#define INSTANCE_PREFIX "ingero-"
/* What ends the name of the instance that holds the scheduler's events apart (see ingero_session.sched). */
#define SCHED_SUFFIX ".sched"

/*
 * The trace clock is not CLOCK_MONOTONIC, on which ingero reads the time
 * itself: a mark written to the instance's trace_marker, stamped by the
 * kernel, measures the difference once a second (the two drift apart by
 * parts per million).
 */
#define MARK_TEXT "ingero clock "
#define MARK_EVERY_NS 1000000000ULL

/* The kernel's first PID namespace (PROC_PID_INIT_INO): the one whose pids trace events and set_event_pid use. */
#define INIT_PID_NS 4026531836UL

/*
 * What ends the names of this PID namespace's sessions: nothing in the
 * first, else "_" and the namespace's inode. A session is told gone by its
 * keeper's pid, which only a process of the same namespace can look up.
 */
static char ns_suffix[24];

/* Sets the suffix of this namespace's session names on the way. */
int ingero_session_in_container(void)
{
	char link[64];
	unsigned long ino;
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n < 0)
		return 0;	/* no namespaces, or a /proc that does not show ours */
	link[n] = 0;
	if (sscanf(link, "pid:[%lu]", &ino) != 1 || ino == INIT_PID_NS)
		return 0;
	snprintf(ns_suffix, sizeof(ns_suffix), "_%lu", ino);
	return 1;
}

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
		return errno == ENOENT ?
			error("this kernel has no uprobe events ('%s' missing: CONFIG_UPROBE_EVENTS)", path) :
			error_errno("cannot write '%s'", path);
	return 0;
}

/* Whether pid is a process that has not ended: a zombie has, though kill() still finds it. */
static int pid_alive(pid_t pid)
{
	char path[64], line[512], *paren;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno != EPERM)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 1;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	line[n > 0 ? n : 0] = 0;
	/* "pid (comm) S ...": the state follows the comm's closing parenthesis */
	paren = strrchr(line, ')');
	return !paren || (paren[1] && paren[2] != 'Z' && paren[2] != 'X');
}

/* Whether a process still lives in the PID namespace of this inode; the last answer is kept. */
static int pid_ns_alive(unsigned long ino)
{
	static unsigned long last_ino;
	static int last_alive;
	char want[32], path[300], link[64];
	struct dirent *e;
	DIR *d;

	if (ino == last_ino)
		return last_alive;
	snprintf(want, sizeof(want), "pid:[%lu]", ino);
	last_ino = ino;
	last_alive = 0;
	if (!(d = opendir("/proc")))
		return last_alive = 1;
	while (!last_alive && (e = readdir(d))) {
		ssize_t n;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/pid", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			last_alive = !strcmp(link, want);
		}
	}
	closedir(d);
	return last_alive;
}

/*
 * The pid a group or instance name of ingero's carries, or 0 for another
 * name; *ns is 0 for a session of this PID namespace, else its namespace.
 */
static pid_t owner_pid(const char *name, const char *prefix, unsigned long *ns)
{
	size_t n = strlen(prefix), len;
	char *end, *tail, rest[32];
	long pid;

	if (strncmp(name, prefix, n) || !isdigit((unsigned char)name[n]))
		return 0;
	pid = strtol(name + n, &end, 10);
	len = strlen(end);
	if (pid <= 0 || len >= sizeof(rest))
		return 0;
	/* the scheduler's instance of a session is the session's */
	if (len >= strlen(SCHED_SUFFIX) && !strcmp(end + len - strlen(SCHED_SUFFIX), SCHED_SUFFIX))
		len -= strlen(SCHED_SUFFIX);
	memcpy(rest, end, len);
	rest[len] = 0;
	end = rest;
	if (!strcmp(end, ns_suffix))
		*ns = 0;
	else if (!*end)
		*ns = INIT_PID_NS;
	else if (*end != '_' || !(*ns = strtoul(end + 1, &tail, 10)) || *tail)
		return 0;
	return (pid_t)pid;
}

/*
 * Which sessions a removal is for: the keeper's own, or those that are gone.
 * One of this namespace is gone with its keeper; from the host, one of a
 * container is gone with the container's namespace. A container cannot tell.
 */
static int session_gone(pid_t pid, unsigned long ns)
{
	return !ns ? !pid_alive(pid) : !*ns_suffix && !pid_ns_alive(ns);
}

static int session_ours(pid_t pid, unsigned long ns)
{
	return !ns && pid == getpid();
}

struct removal {
	int (*wanted)(pid_t pid, unsigned long ns);
	int instances;
};

/* Removes an instance; a SIGKILLed ingero's readers of its buffers may take a moment to be closed (EBUSY). */
static int destroy_instance(struct tracefs_instance *inst)
{
	int tries;

	for (tries = 0; tracefs_instance_destroy(inst); tries++) {
		if (errno != EBUSY || tries == 200)
			return -1;
		usleep(10000);
	}
	return 0;
}

/*
 * Disables the uprobe events of the session that the instance named name
 * is of (group ingero_PID for instance ingero-PID): they leave faster
 * disabled first, while the scheduler's events leave faster with the
 * instance, which disables them in an order of its own.
 */
static void disable_uprobes(struct tracefs_instance *inst, const char *name)
{
	const char *owner = name + strlen(INSTANCE_PREFIX);
	char file[128];

	snprintf(file, sizeof(file), "events/" GROUP_PREFIX "%.*s/enable", (int)strcspn(owner, "."), owner);
	tracefs_instance_file_write(inst, file, "0");
}

static int remove_instance_named(const char *name, void *data)
{
	struct removal *rm = data;
	unsigned long ns;
	pid_t pid = owner_pid(name, INSTANCE_PREFIX, &ns);
	struct tracefs_instance *inst;

	if (!pid || !rm->wanted(pid, ns))
		return 0;
	inst = tracefs_instance_alloc(NULL, name);
	if (inst) {
		tracefs_trace_off(inst);
		disable_uprobes(inst, name);
		if (!destroy_instance(inst))
			rm->instances++;
		tracefs_instance_free(inst);
	}
	return 0;
}

/* Whether two uprobes belong to the same event. */
static int same_event(struct tracefs_dynevent *a, struct tracefs_dynevent *b)
{
	char *sa = NULL, *ea = NULL, *sb = NULL, *eb = NULL;
	int same;

	if (!b)
		return 0;
	tracefs_dynevent_info(a, &sa, &ea, NULL, NULL, NULL);
	tracefs_dynevent_info(b, &sb, &eb, NULL, NULL, NULL);
	same = sa && sb && ea && eb && !strcmp(sa, sb) && !strcmp(ea, eb);
	free(sa);
	free(ea);
	free(sb);
	free(eb);
	return same;
}

/*
 * One pass over the uprobe events: removes those of the sessions whose
 * owner pid is wanted, and returns how many went; found tells whether it
 * met any.
 */
static int remove_uprobes_once(int (*wanted)(pid_t pid, unsigned long ns), int *found)
{
	struct tracefs_dynevent **all;
	int removed = 0;
	size_t i;

	all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE, NULL);
	for (i = 0; all && all[i]; i++) {
		char *system = NULL, *event = NULL;
		unsigned long ns;
		pid_t pid;
		int ours;

		tracefs_dynevent_info(all[i], &system, &event, NULL, NULL, NULL);
		pid = system ? owner_pid(system, GROUP_PREFIX, &ns) : 0;
		ours = pid && wanted(pid, ns);
		*found |= ours;
		/*
		 * Removing an event removes all its probes, listed one by one
		 * after it. Its instance is gone, so it is enabled nowhere: only
		 * where it is, the slow force (a walk of every event) is needed.
		 */
		if (ours && !same_event(all[i], i ? all[i - 1] : NULL) &&
		    (!tracefs_dynevent_destroy(all[i], false) || !tracefs_dynevent_destroy(all[i], true)))
			removed++;
		free(system);
		free(event);
	}
	tracefs_dynevent_list_free(all);
	return removed;
}

/*
 * The kernel lists uprobe_events a page at a time, each read resuming at a
 * line number: lines that other sessions remove meanwhile shift the rest,
 * and some of the wanted ones may pass unseen. So a pass that removed some
 * is followed by another, until one finds none (or removes none it found).
 */
#define REMOVAL_PASSES 8

/*
 * Removes the instances and uprobe events of the sessions whose owner pid
 * is wanted; returns how many instances and events went.
 */
static int remove_sessions(int (*wanted)(pid_t pid, unsigned long ns), int *probes)
{
	struct removal rm = { wanted, 0 };
	int pass, found = 1, removed = 1;

	tracefs_instances_walk(remove_instance_named, &rm);
	*probes = 0;
	for (pass = 0; pass < REMOVAL_PASSES && found && removed; pass++) {
		found = 0;
		removed = remove_uprobes_once(wanted, &found);
		*probes += removed;
	}
	return rm.instances;
}

/* Removes the instances and uprobes of sessions whose keeper is gone (both ingero and it SIGKILLed). */
static void remove_stale(void)
{
	int probes, instances = remove_sessions(session_gone, &probes);

	if (instances || probes)
		warning("removed %d instance(s) and %d uprobe(s) left by ingero sessions whose process is gone",
			instances, probes);
}

/* Closes every file descriptor from fd on. */
static void close_from(int fd)
{
	long max;

	if (!close_range(fd, ~0u, 0))
		return;
	/* kernels before 5.9 */
	for (max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536; fd++)
		close(fd);
}

/*
 * The keeper: a process of its own that owns the session's names and
 * removes what they name once ingero closes its end of the socket, however
 * ingero ends: SIGKILL included, it leaves nothing behind. The kernel takes
 * its grace periods to remove an instance and each uprobe event (tens of
 * ms each); ingero waits for them on a normal end, so that the kernel is as
 * it was when ingero exits and a tool started next does not see the events
 * vanish under it. Given the command's library watch, it leaves a process
 * that lets the loads of what is left of the command through, if anything is.
 */
static void keep(int fd)
{
	int null, probes, got, listener = -1;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_NAME, KEEPER_NAME);
	/* the socket on 3, /dev/null on 0-2 and nothing else: no terminal, pipe or file of ingero's stays open */
	if (fd != 3)
		dup2(fd, 3);
	null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	close_from(4);
	while ((got = ingero_mmapwatch_receive(3)) != -2)
		if (got >= 0)
			listener = got;
	remove_sessions(session_ours, &probes);
	if (listener >= 0 && ingero_mmapwatch_watching(listener) && fork() == 0) {
		prctl(PR_SET_NAME, PASSER_NAME);
		close(3);
		ingero_mmapwatch_pass(listener);
	}
	_exit(0);
}

/* Starts the keeper; its pid names the session. */
static pid_t start_keeper(struct ingero_session *s)
{
	int fds[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds))
		return error_errno("cannot make a socket for the keeper");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return error_errno("cannot fork");
	}
	if (pid == 0) {
		close(fds[1]);
		keep(fds[0]);
	}
	close(fds[0]);
	s->keeper = fds[1];
	s->keeper_pid = pid;
	return pid;
}

int ingero_session_buffers(const struct ingero_session *s)
{
	return s->sched ? 2 : 1;
}

static struct tracefs_instance *buffer_instance(const struct ingero_session *s, int buf)
{
	return buf ? s->sched : s->instance;
}

struct tracefs_cpu *ingero_session_open_cpu(struct ingero_session *s, int buf, int cpu)
{
	struct tracefs_cpu *tcpu;
	char name[64], *path;
	int fd, err;

	snprintf(name, sizeof(name), "per_cpu/cpu%d/trace_pipe_raw", cpu);
	path = tracefs_instance_get_file(buffer_instance(s, buf), name);
	if (!path)
		return NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	err = errno;
	tracefs_put_tracing_file(path);
	errno = err;
	if (fd < 0)
		return NULL;
	/* ingero leaves the sub-buffers at their size, the page's */
	tcpu = tracefs_cpu_alloc_fd(fd, getpagesize(), true);
	err = errno;
	if (!tcpu)
		close(fd);
	errno = err;
	return tcpu;
}

int ingero_session_hand_over(struct ingero_session *s, int listener)
{
	return ingero_mmapwatch_send(s->keeper, listener) ?
		error_errno("cannot hand the library watch to the keeper") : 0;
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

/*
 * Gives the instance ingero's trace clock, unless it has it already (a new
 * instance does): a change of clock empties the buffers and waits for every
 * CPU to leave them.
 */
static int use_trace_clock(struct tracefs_instance *inst)
{
	char *clock = tracefs_get_clock(inst);
	int has = clock && !strcmp(clock, INGERO_TRACE_CLOCK);

	free(clock);
	return has ? 0 : tracefs_instance_file_write(inst, "trace_clock", INGERO_TRACE_CLOCK);
}

/* The instance of the session named owner and role, with buffer_kb per CPU; NULL with the error said. */
static struct tracefs_instance *make_instance(pid_t owner, const char *role, size_t buffer_kb)
{
	struct tracefs_instance *inst;
	char name[64];

	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d%s%s", (int)owner, ns_suffix, role);
	inst = tracefs_instance_create(name);
	if (!inst) {
		error_errno("cannot create tracefs instance '%s'", name);
		return NULL;
	}
	tracefs_trace_off(inst);
	if (use_trace_clock(inst) < 0) {
		error("tracefs instance '%s': the kernel has no '" INGERO_TRACE_CLOCK "' trace clock", name);
	} else if (tracefs_instance_set_buffer_size(inst, buffer_kb, -1) < 0) {
		error_errno("cannot set the ring buffer to %zu KiB per CPU", buffer_kb);
	} else {
		/* When the buffer is full the kernel drops new events and counts them, keeping old ones. */
		tracefs_option_disable(inst, TRACEFS_OPTION_OVERWRITE);
		return inst;
	}
	tracefs_instance_free(inst);
	return NULL;
}

uint64_t ingero_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t ingero_session_clock(const struct ingero_session *s)
{
	return ingero_now_ns() + (uint64_t)s->clock_offset;
}

/* Writes the next mark, noting CLOCK_MONOTONIC halfway through the write, where the kernel stamps it. */
static int write_mark(struct ingero_session *s)
{
	char text[32];
	int len = snprintf(text, sizeof(text), MARK_TEXT "%u", ++s->mark_seq);
	uint64_t before = ingero_now_ns(), after;
	ssize_t n = write(s->marker_fd, text, len);

	after = ingero_now_ns();
	s->mark_written = before + (after - before) / 2;
	return n == len ? 0 : error_errno("cannot write to the instance's trace_marker");
}

int ingero_session_clock_mark(struct ingero_session *s)
{
	if (ingero_now_ns() - s->mark_written < MARK_EVERY_NS)
		return 0;
	return write_mark(s);
}

int ingero_session_clock_seen(struct ingero_session *s, const char *text, uint64_t ts)
{
	char *end;
	unsigned long seq;

	if (strncmp(text, MARK_TEXT, strlen(MARK_TEXT)))
		return 0;
	seq = strtoul(text + strlen(MARK_TEXT), &end, 10);
	/* a mark the kernel dropped for want of room leaves the last difference in place */
	if (seq != s->mark_seq || (*end != '\n' && *end))
		return 0;
	s->clock_offset = (int64_t)(ts - s->mark_written);
	return 1;
}

/* ingero's first mark, as the kernel stamped it: who wrote it (0 until it is seen). */
struct first_mark {
	int id;
	struct ingero_session *s;
	pid_t pid;
};

static int first_mark_seen(struct tep_event *ev, struct tep_record *rec, int cpu, void *data)
{
	struct first_mark *m = data;
	struct tep_format_field *buf = tep_find_field(ev, "buf");

	(void)cpu;
	if (ev->id == m->id && buf && ingero_session_clock_seen(m->s, (const char *)rec->data + buf->offset, rec->ts))
		m->pid = tep_data_pid(ev->tep, rec);
	return 0;
}

/*
 * The trace clock against CLOCK_MONOTONIC, and ingero's own pid as the
 * kernel knows it (the host's, from a PID namespace of its own), from the
 * first mark. Done before any event is enabled, the buffers then hold that
 * alone.
 */
static int first_mark(struct ingero_session *s)
{
	struct tep_event *print = ingero_session_event(s, "ftrace", "print");
	struct first_mark m = { print ? print->id : -1, s, 0 };

	s->marker_fd = tracefs_instance_file_open(s->instance, "trace_marker", O_WRONLY | O_CLOEXEC);
	if (!print || s->marker_fd < 0 || tracefs_trace_on(s->instance) || write_mark(s) ||
	    tracefs_trace_off(s->instance) ||
	    tracefs_iterate_raw_events(s->tep, s->instance, NULL, 0, first_mark_seen, &m) || m.pid <= 0)
		return error("cannot read the trace clock through the instance's trace_marker");
	s->host_self = m.pid;
	return 0;
}

/* The kernel's pid filter of inst: these pids, and every task they start from now on. */
static int set_pid_filter(struct tracefs_instance *inst, const char *pids)
{
	if (tracefs_option_enable(inst, TRACEFS_OPTION_EVENT_FORK))
		return error("this kernel cannot follow forks in its pid filter (option event-fork)");
	if (tracefs_instance_file_write(inst, "set_event_pid", pids) < 0)
		return error_errno("cannot set the pid filter to '%s'", pids);
	return 0;
}

/*
 * The scheduler's instance of -a: its filter cannot be empty, which would
 * let every task through, so it starts with the keeper, which sleeps until
 * the end; the processes seen calling CUDA join it.
 */
static int split_sched(struct ingero_session *s, pid_t owner, size_t buffer_kb)
{
	char keeper[16];

	snprintf(keeper, sizeof(keeper), "%d", (int)owner);
	s->sched = make_instance(owner, SCHED_SUFFIX, buffer_kb);
	return s->sched ? set_pid_filter(s->sched, keeper) : -1;
}

struct ingero_session *ingero_session_new(size_t buffer_kb, int sched_apart)
{
	struct ingero_session *s;
	const char *dir;
	pid_t owner;
	int child_ns;

	if (check_access(&dir))
		return NULL;
	child_ns = ingero_session_in_container();
	remove_stale();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->child_ns = child_ns;
	s->keeper = -1;
	s->marker_fd = -1;
	owner = start_keeper(s);
	if (owner < 0)
		goto fail;
	snprintf(s->group, sizeof(s->group), GROUP_PREFIX "%d%s", (int)owner, ns_suffix);
	s->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	s->use_arrays = readme_has(dir, "[<array-size>]") || readme_has(dir, "\\[<array-size>\\]");
	s->grouped = readme_has(dir, "\\imm-value") && !getenv("INGERO_NO_GROUPED_PROBES");
	/* Formats are read one by one as events are used: the whole set, with kallsyms, takes long. */
	s->tep = tep_alloc();
	if (!s->tep)
		goto fail;
	s->instance = make_instance(owner, "", buffer_kb);
	if (!s->instance || first_mark(s) || (sched_apart && split_sched(s, owner, buffer_kb)))
		goto fail;
	return s;
fail:
	ingero_session_free(s);
	return NULL;
}

/*
 * The kernel splits a probe line at white space: a file whose path has some
 * is named through a descriptor of ingero's (*fd), which the kernel resolves
 * when the line is written. NULL with an error said.
 */
static const char *probe_file(const char *path, char *alias, size_t size, int *fd)
{
	*fd = -1;
	if (!strpbrk(path, " \t\n"))
		return path;
	*fd = open(path, O_PATH | O_CLOEXEC);
	if (*fd < 0) {
		error_errno("cannot open '%s'", path);
		return NULL;
	}
	snprintf(alias, size, "/proc/self/fd/%d", *fd);
	return alias;
}

int ingero_session_add_uprobe(struct ingero_session *s, const char *name, const char *path,
			      unsigned long long offset, const char *fetchargs, int is_return)
{
	struct tracefs_dynevent *ev;
	char alias[32];
	const char *file;
	int joins, fd, err;

	if (!(file = probe_file(path, alias, sizeof(alias), &fd)))
		return -1;
	ev = is_return ? tracefs_uretprobe_alloc(s->group, name, file, offset, fetchargs) :
			 tracefs_uprobe_alloc(s->group, name, file, offset, fetchargs);
	joins = s->last && !strcmp(s->last_probe, name);
	err = !ev ? error_errno("cannot describe uprobe '%s' at %s:%#llx", name, path, offset) :
	      tracefs_dynevent_create(ev) ?
	      error("the kernel refused uprobe '%s/%s' at %s:%#llx (%s): see %s/error_log",
		    s->group, name, path, offset, fetchargs, tracefs_tracing_dir()) : 0;
	if (fd >= 0)
		close(fd);
	if (err) {
		tracefs_dynevent_free(ev);
		return -1;
	}
	/* A probe that joined the last event needs no handle of its own. */
	if (joins) {
		tracefs_dynevent_free(ev);
		return 0;
	}
	tracefs_dynevent_free(s->last);
	s->last = ev;
	snprintf(s->last_probe, sizeof(s->last_probe), "%s", name);
	return 0;
}

/* One event's own enable file: tracefs_event_enable() would walk every event of the kernel to match it. */
static int enable_event(struct tracefs_instance *inst, const char *system, const char *event)
{
	return tracefs_event_file_write(inst, system, event, "enable", "1") < 0 ? -1 : 0;
}

struct tep_event *ingero_session_enable_uprobe(struct ingero_session *s, const char *name)
{
	struct tracefs_dynevent *ev = s->last && !strcmp(s->last_probe, name) ? s->last : NULL;
	struct tep_event *fmt = ev ? tracefs_dynevent_get_event(s->tep, ev) : NULL;

	if (!fmt) {
		error("cannot read the format of '%s/%s'", s->group, name);
		return NULL;
	}
	if (enable_event(s->instance, s->group, name)) {
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
	errno = 0;
	text = tracefs_event_file_read(NULL, system, event, "format", &len);
	if (!text) {
		/* an event the kernel has not: its format is missing, not unreadable */
		if (!errno)
			errno = ENOENT;
		return NULL;
	}
	if (tep_parse_event(s->tep, text, len, system) == TEP_ERRNO__SUCCESS)
		fmt = tep_find_event_by_name(s->tep, system, event);
	free(text);
	if (!fmt)
		errno = EINVAL;
	return fmt;
}

struct tep_event *ingero_session_enable(struct ingero_session *s, const char *system, const char *event)
{
	struct tep_event *fmt = ingero_session_event(s, system, event);

	if (!fmt) {
		if (errno == ENOENT)
			error("this kernel has no event '%s:%s'", system, event);
		else
			error_errno("cannot read the format of '%s:%s'", system, event);
		return NULL;
	}
	if (enable_event(s->sched ? s->sched : s->instance, system, event)) {
		error_errno("cannot enable '%s:%s'", system, event);
		return NULL;
	}
	return fmt;
}

int ingero_session_follow_children(struct ingero_session *s)
{
	char self[16];

	snprintf(self, sizeof(self), "%d", (int)s->host_self);
	return s->child_ns ? set_pid_filter(s->instance, self) : 0;
}

pid_t ingero_session_local_pid(const struct ingero_session *s, pid_t host)
{
	return !s->child_ns ? host : host == s->child_host ? s->child_local : 0;
}

/* A set of tids, kept sorted. */
struct tid_set {
	pid_t *tids;
	size_t n, cap;
};

/* 1 when tid joins the set, 0 when it was in it, -1 out of memory. */
static int tid_set_add(struct tid_set *set, pid_t tid)
{
	size_t lo = 0, hi = set->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (set->tids[mid] == tid)
			return 0;
		if (set->tids[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 64;
		pid_t *p = realloc(set->tids, cap * sizeof(*p));

		if (!p)
			return -1;
		set->tids = p;
		set->cap = cap;
	}
	memmove(set->tids + lo + 1, set->tids + lo, (set->n - lo) * sizeof(*set->tids));
	set->tids[lo] = tid;
	set->n++;
	return 1;
}

/* Writes tids into a pid filter, in writes of whole numbers; the first one truncates unless append. */
static int write_pids(struct tracefs_instance *inst, const pid_t *tids, size_t n, int append)
{
	char buf[4096];
	size_t i = 0, len;

	while (i < n) {
		for (len = 0; i < n && len < sizeof(buf) - 16; i++)
			len += snprintf(buf + len, sizeof(buf) - len, "%d ", (int)tids[i]);
		/* written without truncating, the pids join those the filter has */
		if ((append ? tracefs_instance_file_append(inst, "set_event_pid", buf) :
			      tracefs_instance_file_write(inst, "set_event_pid", buf)) < 0)
			return -1;
		append = 1;
	}
	return 0;
}

/* Adds to set the pids that the instance's filter holds (none when it is empty). */
static int read_filter(struct tracefs_instance *inst, struct tid_set *set)
{
	int fd = tracefs_instance_file_open(inst, "set_event_pid", O_RDONLY);
	char buf[4096];
	size_t have = 0;
	ssize_t got;

	if (fd < 0)
		return error_errno("cannot read the pid filter");
	/* one pid a line: a line cut by the end of the buffer waits for the next read */
	while ((got = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		char *p = buf, *nl;

		have += got;
		buf[have] = 0;
		while ((nl = strchr(p, '\n'))) {
			long pid = strtol(p, NULL, 10);

			if (pid > 0 && tid_set_add(set, (pid_t)pid) < 0) {
				close(fd);
				return error("out of memory for the pid filter");
			}
			p = nl + 1;
		}
		have -= p - buf;
		memmove(buf, p, have);
	}
	close(fd);
	return got < 0 ? error_errno("cannot read the pid filter") : 0;
}

/* Adds to fresh the tasks of process pid that neither known nor the filter holds, and to known. */
static int list_tasks(pid_t pid, struct tid_set *known, struct tid_set *fresh)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;	/* ended meanwhile */
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
		int added = tid > 0 ? tid_set_add(known, tid) : 0;

		if (added < 0 || (added && tid_set_add(fresh, tid) < 0)) {
			closedir(d);
			return error("out of memory for the tasks of process %d", (int)pid);
		}
	}
	closedir(d);
	return 0;
}

/* Adds to children the pids the filter holds but ingero's own: in a PID namespace of its own, its child's on the host. */
static int host_children(struct ingero_session *s, struct tid_set *children)
{
	struct tid_set all = { 0 };
	size_t i;
	int ret = read_filter(s->instance, &all);

	for (i = 0; !ret && i < all.n; i++)
		if (all.tids[i] != s->host_self && tid_set_add(children, all.tids[i]) < 0)
			ret = error("out of memory for the pid filter");
	free(all.tids);
	if (!ret && !children->n)
		ret = error("the pid filter caught no child of ingero's");
	return ret;
}

/*
 * The kernel filters by task: a process's threads are in it one by one.
 * The processes' tasks are listed again after each write, until none is
 * missing: one that a task not yet in the filter started meanwhile was not
 * followed by the kernel, while what a task of the filter starts is.
 */
static int filter_processes(struct ingero_session *s, const pid_t *pids, size_t n)
{
	struct tid_set known = { 0 }, fresh = { 0 };
	size_t i, round;
	int ret = -1;

	if (tracefs_option_enable(s->instance, TRACEFS_OPTION_EVENT_FORK))
		return error("this kernel cannot follow forks in its pid filter (option event-fork)");
	/* the pids themselves first: the filter is never written empty, which would let every task through */
	for (i = 0; i < n; i++)
		if (tid_set_add(&known, pids[i]) > 0 && tid_set_add(&fresh, pids[i]) < 0)
			goto out;
	for (round = 0; round < 1000; round++) {
		for (i = 0; i < n; i++)
			if (list_tasks(pids[i], &known, &fresh))
				goto out;
		if (!fresh.n)
			break;
		if (write_pids(s->instance, fresh.tids, fresh.n, round > 0)) {
			error_errno("cannot set the pid filter");
			goto out;
		}
		fresh.n = 0;
		/* what the kernel added by itself is no task to add again */
		if (read_filter(s->instance, &known))
			goto out;
	}
	ret = 0;
out:
	free(known.tids);
	free(fresh.tids);
	return ret;
}

int ingero_session_filter_pids(struct ingero_session *s, const pid_t *pids, size_t n)
{
	struct tid_set children = { 0 };
	int ret;

	if (!s->child_ns)
		return filter_processes(s, pids, n);
	/* in a PID namespace of its own, the command's pid is the one its fork added to ingero's */
	if (n != 1)
		return error("in a PID namespace of its own, ingero follows the one command it starts");
	ret = host_children(s, &children);
	if (!ret) {
		s->child_host = children.tids[0];
		s->child_local = pids[0];
		if (write_pids(s->instance, children.tids, children.n, 0))
			ret = error_errno("cannot set the pid filter");
	}
	free(children.tids);
	return ret;
}

int ingero_session_follow(struct ingero_session *s, const pid_t *tids, size_t n)
{
	return write_pids(s->sched, tids, n, 1) ?
		error_errno("cannot add to the pid filter of the scheduler's events") : 0;
}

/*
 * The kernel drops a task from the filter once its parent has reaped it: an
 * ended one (a zombie) is not left, nor one that ended before it was written.
 */
int ingero_session_pids_left(struct ingero_session *s)
{
	struct tid_set set = { 0 };
	size_t i;
	int left = 0;

	if (read_filter(s->instance, &set))
		return -1;
	for (i = 0; i < set.n && !left; i++)
		left = s->child_ns || pid_alive(set.tids[i]);
	free(set.tids);
	return left;
}

/* The process of a task that has not ended, from /proc; 0 when it has ended meanwhile. */
static pid_t process_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = (pid_t)strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid;
}

int ingero_session_processes_left(struct ingero_session *s)
{
	struct tid_set tasks = { 0 }, procs = { 0 };
	size_t i;
	int n;

	if (s->child_ns)
		return 0;	/* the filter's pids are the host's */
	if (read_filter(s->instance, &tasks))
		return -1;
	for (i = 0; i < tasks.n; i++) {
		pid_t pid = pid_alive(tasks.tids[i]) ? process_of(tasks.tids[i]) : 0;

		if (pid > 0 && tid_set_add(&procs, pid) < 0)
			break;
	}
	n = (int)procs.n;
	free(tasks.tids);
	free(procs.tids);
	return n;
}

int ingero_session_start(struct ingero_session *s)
{
	return (s->sched && tracefs_trace_on(s->sched)) || tracefs_trace_on(s->instance) ?
		error_errno("cannot turn tracing on") : 0;
}

int ingero_session_stop(struct ingero_session *s)
{
	int failed = tracefs_trace_off(s->instance);

	if (s->sched)
		failed |= tracefs_trace_off(s->sched);
	return failed ? error_errno("cannot turn tracing off") : 0;
}

long long ingero_session_dropped(struct ingero_session *s, int buf, int cpu)
{
	char file[64], *text, *p;
	long long n = -1;

	snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
	text = tracefs_instance_file_read(buffer_instance(s, buf), file, NULL);
	if (!text)
		return -1;
	p = strstr(text, "dropped events:");
	if (p)
		n = strtoll(p + strlen("dropped events:"), NULL, 10);
	free(text);
	return n;
}

void ingero_session_remove(struct ingero_session *s)
{
	if (s->keeper < 0)
		return;
	if (s->instance)
		tracefs_trace_off(s->instance);
	if (s->sched)
		tracefs_trace_off(s->sched);
	/* the kernel removes no instance with a file open */
	if (s->marker_fd >= 0)
		close(s->marker_fd);
	s->marker_fd = -1;
	/* the keeper removes the instance and the events once it sees the end of the socket */
	close(s->keeper);
	s->keeper = -1;
}

void ingero_session_free(struct ingero_session *s)
{
	if (!s)
		return;
	ingero_session_remove(s);
	if (s->keeper_pid > 0)
		while (waitpid(s->keeper_pid, NULL, 0) < 0 && errno == EINTR)
			;
	tracefs_instance_free(s->instance);
	tracefs_instance_free(s->sched);
	tracefs_dynevent_free(s->last);
	tep_free(s->tep);
	free(s);
}
