/* ingero record: run a command (or watch processes) and record its CUDA calls and scheduling. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "builtin.h"
#include "parse-options.h"
#include "../lib/libfind.h"
#include "../lib/mmapwatch.h"
#include "../lib/record.h"
#include "../lib/session.h"
#include "../lib/trace.h"
#include "../probes/probes.h"

#define POLL_INTERVAL_NS 20000000L
/* After a signal: how long the command has to end by itself, then to end after ingero passes it on. */
#define CHILD_OWN_NS 500000000ULL
#define CHILD_GRACE_NS 5000000000ULL

static const char *const record_usage[] = {
	"ingero record [-o FILE] [-e SET[,SET...]] [--lib PATH]... [-b KB] [--duration TIME] -- COMMAND [ARGS...]",
	"ingero record [options] -p PID[,PID...]",
	"ingero record [options] -a",
	NULL
};

struct record_opts {
	const char *output;
	const char *sets;
	const char *pids;
	int all;
	int buffer_kb;
	uint64_t duration_ns;	/* UINT64_MAX: no limit */
	int quiet;
	int with_returns;
	struct ingero_strlist libs;
};

static volatile sig_atomic_t stop_signal;

/*
 * Whatever path ingero leaves by, die() included, nothing stays in the
 * kernel: the recorder's readers of the ring buffers are closed first, as
 * the keeper cannot remove an instance whose buffers ingero holds open.
 */
static struct ingero_session *live_session;
static struct ingero_recorder *live_recorder;
static struct ingero_mmapwatch *live_watch;	/* which feeds the recorder */

static void free_live_session(void)
{
	if (live_watch)
		ingero_mmapwatch_stop(live_watch);
	live_watch = NULL;
	ingero_recorder_free(live_recorder);
	live_recorder = NULL;
	ingero_session_free(live_session);
	live_session = NULL;
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int add_lib(const struct option *opt, const char *arg)
{
	return ingero_strlist_add(opt->value, arg);
}

static void on_child(int sig)
{
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };
	int sigs[] = { SIGINT, SIGTERM, SIGHUP }, i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, NULL);
	/* The command's end cuts the poll's sleep short (no SA_RESTART). */
	sigemptyset(&child.sa_mask);
	sigaction(SIGCHLD, &child, NULL);
	/* A trace piped to a reader that went away fails its writes, and says so; the command runs on. */
	signal(SIGPIPE, SIG_IGN);
}

static char *read_line_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (f) {
		if (fgets(buf, len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	return buf;
}

/* Whether arg reads back as one word in a shell as it is. */
static int shell_plain(const char *arg)
{
	static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";

	return *arg && !arg[strspn(arg, plain)];
}

/* The command line as a shell takes it back: an argument that needs it in single quotes. */
static char *join_args(const char **argv)
{
	size_t len = 1, i;
	char *s, *p;

	for (i = 0; argv[i]; i++)
		len += 4 * strlen(argv[i]) + 3;
	p = s = malloc(len);
	if (!s)
		die("out of memory");
	for (i = 0; argv[i]; i++) {
		const char *a = argv[i];

		if (i)
			*p++ = ' ';
		if (shell_plain(a)) {
			p = stpcpy(p, a);
			continue;
		}
		*p++ = '\'';
		for (; *a; a++) {
			if (*a == '\'')
				p = stpcpy(p, "'\\''");
			else
				*p++ = *a;
		}
		*p++ = '\'';
	}
	*p = 0;
	return s;
}

/* Whether another recording writes the trace at path: each holds a lock on its file until it is done. */
static int being_written(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), busy;

	if (fd < 0)
		return 0;
	busy = flock(fd, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return busy;
}

/* The trace file ingero made, until recording starts; and the file it moved to .old for it. */
static struct {
	const char *path;
	char old[PATH_MAX];
	int moved;
} made_output;

/* Whatever path a failed start leaves by, die() included: its file goes, and the one it moved comes back. */
static void unmake_output(void)
{
	if (!made_output.path)
		return;
	unlink(made_output.path);
	if (made_output.moved)
		rename(made_output.old, made_output.path);
	made_output.path = NULL;
}

/*
 * The folder of path, locked (-1 if it cannot be opened): two recordings
 * naming the same file claim it one after the other, each seeing the other's
 * file already locked.
 */
static int lock_folder(const char *path)
{
	const char *slash = strrchr(path, '/');
	char folder[PATH_MAX];
	int fd;

	snprintf(folder, sizeof(folder), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		flock(fd, LOCK_EX);
	return fd;
}

/*
 * A new file for the trace, 0600 as it holds command lines and pointers; an
 * existing one is kept as FILE.old, unless another recording is writing it:
 * moved away, its trace would not be where that one says.
 */
static int create_output(const char *path)
{
	int folder = lock_folder(path), fd;

	if (!access(path, F_OK)) {
		if (being_written(path))
			die("'%s' is being written by another recording: give another -o", path);
		snprintf(made_output.old, sizeof(made_output.old), "%s.old", path);
		if (rename(path, made_output.old))
			die_errno("cannot keep the existing '%s' as '%s'", path, made_output.old);
		made_output.moved = 1;
	}
	made_output.path = path;
	atexit(unmake_output);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		flock(fd, LOCK_EX | LOCK_NB);
	if (folder >= 0)
		close(folder);
	return fd;
}

/*
 * The trace's file: "-" is the standard output; a device, pipe or link
 * (/dev/stdout) is written through, unless it leads to a file with data,
 * which would be lost. A file of ingero's own goes again if recording
 * cannot start.
 */
static int open_output(const char *path)
{
	struct stat lst, st;
	int fd;

	if (!strcmp(path, "-"))
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	else if (lstat(path, &lst) || S_ISREG(lst.st_mode))
		fd = create_output(path);
	else if (S_ISDIR(lst.st_mode))
		die("cannot write the trace to '%s': it is a directory", path);
	else if (!stat(path, &st) && S_ISREG(st.st_mode) && st.st_size)
		die("'%s' links to a file that holds data: name that file, to have it kept as .old", path);
	else
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		die_errno("cannot create '%s'", path);
	return fd;
}

/*
 * The child's side: wait for the go, then exec; report an exec failure's
 * errno on err_fd. Where the trace takes the standard output, the command
 * writes its own to the standard error, as under perf record -o -.
 */
static NORETURN void run_child(const char **argv, int sock, int go_fd, int err_fd, int trace_on_stdout)
{
	int listener = ingero_mmapwatch_install();
	char byte;
	int err;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (ingero_mmapwatch_send(sock, listener))
		_exit(127);
	if (listener >= 0)
		close(listener);
	close(sock);
	if (read(go_fd, &byte, 1) != 1)
		_exit(127);	/* ingero gave up before the start */
	close(go_fd);
	if (!trace_on_stdout || dup2(STDERR_FILENO, STDOUT_FILENO) >= 0)
		execvp(argv[0], (char *const *)argv);
	err = errno;
	if (write(err_fd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

struct child {
	pid_t pid;
	int go_fd, err_fd;
	int sock;		/* what the listener comes through, until it has */
	int listener;
	uint64_t stop_at;	/* when a stop signal came; 0: none yet */
};

/*
 * Starts the command stopped before its exec, so nothing of it runs before
 * the probes are in place; it sends its library watch meanwhile.
 */
static void spawn(struct child *ch, const char **argv, int trace_on_stdout)
{
	int sv[2], go[2], err[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(go, O_CLOEXEC) ||
	    pipe2(err, O_CLOEXEC))
		die_errno("cannot set up the command");
	ch->pid = fork();
	if (ch->pid < 0)
		die_errno("cannot fork");
	if (!ch->pid) {
		close(sv[0]);
		close(go[1]);
		close(err[0]);
		run_child(argv, sv[1], go[0], err[1], trace_on_stdout);
	}
	close(sv[1]);
	close(go[0]);
	close(err[1]);
	ch->sock = sv[0];
	ch->go_fd = go[1];
	ch->err_fd = err[0];
}

/* The library watch the command sends once it has installed it; -1 or -2 where none came. */
static void take_listener(struct child *ch)
{
	ch->listener = ingero_mmapwatch_receive(ch->sock);
	close(ch->sock);
	/* the command's library loads would wait for a listener that nobody holds */
	if (ch->listener == -3)
		die("cannot take the command's library watch: too many open files (ulimit -n)");
}

/* Lets the command exec; 0, or its errno if the exec failed. */
static int release(struct child *ch)
{
	int err = 0;

	if (write(ch->go_fd, "", 1) != 1)
		return errno;
	close(ch->go_fd);
	if (read(ch->err_fd, &err, sizeof(err)) != sizeof(err))
		err = 0;
	close(ch->err_fd);
	return err;
}

/* 0 if execve could run path, else the errno it would fail with. */
static int runnable(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	return access(path, X_OK) ? errno : 0;
}

/*
 * The command's path as execvp finds it, to look for a runtime linked into
 * it: a name with a slash as it is, else the first runnable file of that
 * name in PATH (execvp's default one if unset). 0, or the errno of the exec.
 */
static int find_command(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	int denied = 0;

	if (!*cmd)
		return ENOENT;
	if (strchr(cmd, '/'))
		return snprintf(out, len, "%s", cmd) < (int)len ? runnable(out) : ENAMETOOLONG;
	for (path = path ? path : "/bin:/usr/bin";; path++) {
		size_t n = strcspn(path, ":");
		int err = ENAMETOOLONG;

		/* An empty entry is the current folder. */
		if (snprintf(out, len, "%.*s%s%s", (int)n, path, n ? "/" : "", cmd) < (int)len)
			err = runnable(out);
		if (!err)
			return 0;
		if (err == EACCES)
			denied = 1;
		else if (err != ENOENT && err != ENOTDIR && err != ENAMETOOLONG && err != ESTALE &&
			 err != ENODEV && err != ETIMEDOUT)
			return err;
		path += n;
		if (!*path)
			return denied ? EACCES : ENOENT;
	}
}

static void on_mapped(const char *path, pid_t pid, void *ctx)
{
	ingero_recorder_probe_lib(ctx, path, pid);
}

/*
 * Every library named with --lib must be a regular ELF file with a symbol
 * of the sets asked for: the first that is not is said, before anything is
 * set up, and -1 returned.
 */
static int check_libs(const struct ingero_strlist *libs, const struct ingero_api *apis, size_t napis,
		      const uint8_t *enabled)
{
	uint64_t *offsets = calloc(napis, sizeof(*offsets));
	size_t i, k;
	int ret = 0;

	if (!offsets)
		die("out of memory");
	for (i = 0; i < libs->nr; i++) {
		struct stat st;

		if (ingero_lib_stat(libs->items[i], &st) ||
		    ingero_lib_resolve(libs->items[i], apis, napis, offsets, NULL, 0) < 0) {
			ret = -1;
			break;
		}
		for (k = 0; k < napis && !(enabled[k] && offsets[k]); k++)
			;
		if (k == napis) {
			ret = error("--lib '%s' has none of the symbols of the probe sets asked for (see 'ingero probes --lib %s')",
				    libs->items[i], libs->items[i]);
			break;
		}
	}
	free(offsets);
	return ret;
}

static void probe_list(struct ingero_recorder *r, const struct ingero_strlist *l, pid_t pid)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		ingero_recorder_probe_lib(r, l->items[i], pid);
}

/* The processes recorded: the command, or those of -p. */
struct pid_list {
	pid_t *pids;
	uint8_t *unreadable;	/* whose mappings could not be read: said once, then passed over */
	uint8_t *watched;	/* whose dynamic loader was looked for */
	size_t n;
};

static void pid_list_add(struct pid_list *l, pid_t pid)
{
	l->pids = realloc(l->pids, (l->n + 1) * sizeof(*l->pids));
	l->unreadable = realloc(l->unreadable, l->n + 1);
	l->watched = realloc(l->watched, l->n + 1);
	if (!l->pids || !l->unreadable || !l->watched)
		die("out of memory");
	l->pids[l->n] = pid;
	l->watched[l->n] = 0;
	l->unreadable[l->n++] = 0;
}

/* The mapped files looked at for CUDA libraries, in every process: each file once. */
static struct ingero_libfind_seen seen_mapped;

/* Probes the CUDA libraries that pid has mapped since the last look; 0, or -1 if its mappings cannot be read. */
static int probe_process(struct ingero_recorder *r, pid_t pid)
{
	struct ingero_strlist l = { 0 };
	int ret = ingero_libfind_mapped(pid, &seen_mapped, &l);

	if (!ret)
		probe_list(r, &l, pid);
	ingero_strlist_release(&l);
	return ret;
}

/* Probes the hook of pid's dynamic loader, so that its library loads are seen as they come. */
static void watch_loader(struct ingero_recorder *r, pid_t pid)
{
	char path[PATH_MAX];

	if (ingero_libfind_loader(pid, path, sizeof(path)))
		ingero_recorder_watch_loader(r, path);
}

static int has_ended(pid_t pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

/*
 * Probes the CUDA libraries the processes have mapped, looking only at files
 * not looked at before; a process that has ended meanwhile is no error.
 */
static void probe_mapped(struct ingero_recorder *r, struct pid_list *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		if (p->unreadable[i] || has_ended(p->pids[i]))
			continue;
		if (!p->watched[i])
			watch_loader(r, p->pids[i]);
		p->watched[i] = 1;
		if (probe_process(r, p->pids[i]) && errno != ESRCH)
			p->unreadable[i] = 1;
	}
}

/*
 * Looks at once at the processes seen loading a library (a task stands for
 * its process), rather than at the next look at all of them.
 */
static void probe_loads(struct ingero_recorder *r, struct pid_list *p)
{
	pid_t tids[INGERO_RECORD_LOADS];
	int missed;
	size_t n = ingero_recorder_loads(r, tids, INGERO_RECORD_LOADS, &missed), i;

	for (i = 0; i < n; i++)
		probe_process(r, tids[i]);
	if (missed)
		probe_mapped(r, p);
}

/* -a: the processes followed since the last look join the list; 1 when some did. */
static int take_followed(struct ingero_recorder *r, struct pid_list *scan)
{
	size_t had = scan->n, n, i;
	pid_t pids[256];

	while ((n = ingero_recorder_processes(r, pids, scan->n, sizeof(pids) / sizeof(pids[0]))))
		for (i = 0; i < n; i++)
			pid_list_add(scan, pids[i]);
	return scan->n > had;
}

/* Whether pid has ended but is still there for its parent to reap. */
static int is_zombie(pid_t pid)
{
	char path[64], line[256], *state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	/* "pid (comm) S ...": the command may hold spaces and parentheses */
	state = strrchr(read_line_file(path, line, sizeof(line)), ')');
	return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}

static void parse_pids(const char *arg, struct pid_list *out)
{
	const char *list = arg;

	while (*list) {
		char *end;
		long v = strtol(list, &end, 10);
		pid_t pid;
		size_t i;

		if (end == list || v <= 0 || v > INT_MAX || (*end && *end != ',')) {
			error("-p wants pids separated by commas, not '%s'", arg);
			exit(129);
		}
		if (kill(v, 0) && errno == ESRCH)
			die("no process %ld", v);
		if (is_zombie(v))
			die("process %ld has ended (its parent has not reaped it yet)", v);
		/* a thread's id stands for its whole process */
		pid = ingero_process_of(v);
		for (i = 0; i < out->n && out->pids[i] != pid; i++)
			;
		if (i == out->n)
			pid_list_add(out, pid);
		list = *end ? end + 1 : end;
	}
}

static void sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

static void status_line(struct ingero_recorder *r, struct ingero_writer *w, uint64_t start, int done)
{
	struct ingero_record_stats st;
	struct ingero_trace_stats ts;
	double secs = (ingero_now_ns() - start) / 1e9;

	ingero_recorder_stats(r, &st);
	ingero_writer_stats(w, &ts);
	fprintf(stderr, "\r\033[Kingero: %.0f s, %.0f events/s, %.1f MB written, %llu lost%s",
		secs, secs > 0 ? st.events / secs : 0.0, ts.bytes / 1e6,
		(unsigned long long)st.lost, done ? "\n" : "");
}

static void summary(struct ingero_recorder *r, uint64_t bytes, const char *output, int ncpus)
{
	struct ingero_record_stats st;
	const char *sep;
	int cpu;

	ingero_recorder_stats(r, &st);
	fprintf(stderr, "ingero: %llu events (%llu calls, %llu still open) in '%s': %llu bytes, %.2f bytes/event, %llu lost",
		(unsigned long long)st.events, (unsigned long long)st.calls,
		(unsigned long long)st.open_calls, output, (unsigned long long)bytes,
		st.events ? (double)bytes / st.events : 0.0, (unsigned long long)st.lost);
	for (cpu = 0, sep = " ("; st.lost && cpu < ncpus && cpu < INGERO_STATS_CPUS; cpu++)
		if (st.lost_per_cpu[cpu]) {
			fprintf(stderr, "%scpu%d %llu", sep, cpu, (unsigned long long)st.lost_per_cpu[cpu]);
			sep = ", ";
		}
	fprintf(stderr, "%s\n", st.lost ? ")" : "");
}

/* Switches into the idle task on a CPU before one out of it is missed: few enough for a short run. */
#define IDLE_SWITCHES_SEEN 16

/*
 * The CPUs, as "1-3, 5", that went idle often but were never seen leaving
 * it: some kernels do not report those switches (on virtual machines, on
 * every CPU but the first). Empty when there are none.
 */
static void silent_idle_cpus(const struct ingero_record_stats *st, int ncpus, char *buf, size_t size)
{
	size_t len = 0;
	int cpu, first = -1;

	buf[0] = 0;
	for (cpu = 0; cpu <= ncpus && cpu <= INGERO_STATS_CPUS; cpu++) {
		int silent = cpu < ncpus && cpu < INGERO_STATS_CPUS && st->to_idle[cpu] >= IDLE_SWITCHES_SEEN &&
			     !st->from_idle[cpu];

		if (silent && first < 0)
			first = cpu;
		if (silent || first < 0 || len >= size)
			continue;
		len += snprintf(buf + len, size - len, first == cpu - 1 ? "%s%d" : "%s%d-%d", len ? ", " : "",
				first, cpu - 1);
		first = -1;
	}
}

/* Said even with -q: what makes the trace less than the user asked for. */
static void warn_incomplete(struct ingero_recorder *r, int ncpus)
{
	struct ingero_record_stats st;
	char cpus[256];

	ingero_recorder_stats(r, &st);
	silent_idle_cpus(&st, ncpus, cpus, sizeof(cpus));
	if (*cpus)
		warning("the kernel reported no switch out of the idle task on CPU %s: the switch-ins of the threads "
			"woken there are missing from the trace, and 'ingero analyze' repairs them", cpus);
	if (st.lost)
		warning("%llu events were lost: the kernel's buffers were full (a larger -b keeps them; the trace marks where)",
			(unsigned long long)st.lost);
	if (st.unpaired)
		warning("%llu call entries or returns could not be paired (lost events, or calls that never returned)",
			(unsigned long long)st.unpaired);
	if (!st.libs)
		warning("no CUDA library was found: recorded scheduling only (see 'ingero probes', or use --lib PATH)");
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static void build_header(struct ingero_header *h, const struct ingero_session *s, const char *command,
			 const struct ingero_api *apis, size_t napis, struct utsname *u, char *boot_id, size_t len)
{
	memset(h, 0, sizeof(*h));
	uname(u);
	h->start_ns = ingero_session_clock(s);
	h->realtime_ns = (uint64_t)time(NULL) * 1000000000ULL;
	h->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	h->host = u->nodename;
	h->kernel = u->release;
	h->clock = INGERO_TRACE_CLOCK;
	h->boot_id = read_line_file("/proc/sys/kernel/random/boot_id", boot_id, len);
	h->command = command;
	h->napis = napis;
	h->apis = apis;
}

static uint8_t *enabled_apis(const char *sets, const struct ingero_api *apis, size_t napis)
{
	uint64_t mask;
	uint8_t *on = calloc(napis, 1);
	size_t i;

	if (!on)
		die("out of memory");
	if (ingero_probe_sets_parse(sets ? sets : "default", &mask))
		exit(129);
	for (i = 0; i < napis; i++) {
		int set = ingero_probe_set_index(apis[i].set);

		on[i] = set >= 0 && (mask >> set & 1);
	}
	return on;
}

/* The trace's API table: the built-in one, each API flagged with how this recording probes it. */
static const struct ingero_api *recorded_apis(int with_returns, size_t *napis)
{
	const struct ingero_api *builtin = ingero_probe_apis(napis);
	struct ingero_api *apis;
	size_t i;

	if (!builtin)
		die("the built-in probe table is broken");
	apis = malloc(*napis * sizeof(*apis));
	if (!apis)
		die("out of memory");
	for (i = 0; i < *napis; i++) {
		apis[i] = builtin[i];
		apis[i].flags = ingero_probe_api_flags(&builtin[i], with_returns);
	}
	return apis;
}

/* Sends sig to the command, and SIGCONT after it: a command that stopped itself acts on sig only once continued. */
static void signal_command(const struct child *ch, int sig)
{
	kill(ch->pid, sig);
	kill(ch->pid, SIGCONT);
}

/*
 * Passes a stop signal on to the command: SIGINT once it has had a while to
 * end by itself (a terminal's Ctrl-C reached it already), any other at once;
 * SIGKILL after the grace. Returns 1 once the command has been killed.
 */
static int pass_signal(struct child *ch, uint64_t now)
{
	if (!stop_signal)
		return 0;
	if (!ch->stop_at) {
		if (stop_signal != SIGINT)
			signal_command(ch, stop_signal);
		ch->stop_at = now;
	}
	if (stop_signal == SIGINT && now - ch->stop_at > CHILD_OWN_NS) {
		signal_command(ch, SIGINT);
		stop_signal = -1;
	}
	if (now - ch->stop_at > CHILD_GRACE_NS) {
		kill(ch->pid, SIGKILL);
		return 1;
	}
	return 0;
}

/* The command's wait status once it has ended, passing a stop signal on meanwhile. */
static int wait_child(struct child *ch)
{
	int status;
	pid_t got;

	while ((got = waitpid(ch->pid, &status, WNOHANG)) != ch->pid) {
		if (got < 0 && errno != EINTR)
			return -1;
		sleep_ns(POLL_INTERVAL_NS);
		pass_signal(ch, ingero_now_ns());
	}
	return status;
}

/*
 * Waits for the command (ch), or with scan for every task of its pids to end
 * (with all, -a, until stopped: scan gets the processes followed),
 * draining the buffers; returns the command's wait status (-1: still running).
 */
static int record_loop(struct ingero_session *s, struct ingero_recorder *r, struct ingero_writer *w,
		       struct child *ch, uint64_t duration_ns, struct pid_list *scan, int all, int show_status)
{
	uint64_t start = ingero_now_ns(), last_status = start, last_scan = start;
	int status = -1;

	for (;;) {
		uint64_t now;

		sleep_ns(POLL_INTERVAL_NS);
		/* the command's end is seen before a read: the last read, the final one, reads everything */
		if (ch && waitpid(ch->pid, &status, WNOHANG) == ch->pid)
			break;
		ingero_recorder_poll(r, 0);
		if (scan)
			probe_loads(r, scan);
		now = ingero_now_ns();
		if (now - start >= duration_ns)
			break;
		if (ch ? pass_signal(ch, now) : stop_signal != 0)
			break;
		/* -a: a process that joins is looked at once */
		if (all && take_followed(r, scan))
			probe_mapped(r, scan);
		if (scan && now - last_scan >= 1000000000ULL) {
			if (!all && !ingero_session_pids_left(s))
				break;
			probe_mapped(r, scan);
			last_scan = now;
		}
		if (show_status && now - last_status >= 1000000000ULL) {
			status_line(r, w, start, 0);
			last_status = now;
		}
	}
	if (show_status)
		status_line(r, w, start, 1);
	return status;
}

int cmd_record(int argc, const char **argv)
{
	struct record_opts o = { .output = "ingero.ing.zst", .buffer_kb = 8192, .duration_ns = UINT64_MAX };
	const struct option options[] = {
		OPT_STRING('o', "output", &o.output, "file", "write the trace to <file>, - for standard output (default ingero.ing.zst)"),
		OPT_STRING('e', "event", &o.sets, "sets", "probe sets, comma-separated (see 'ingero probes'; default: default)"),
		OPT_CALLBACK(0, "lib", &o.libs, "path", "probe this library too (repeatable)", add_lib),
		OPT_STRING('p', "pid", &o.pids, "pids", "record these running processes and what they start"),
		OPT_BOOL('a', "all", &o.all, "record every process that uses a CUDA library"),
		OPT_BOOL(0, "returns", &o.with_returns, "probe the returns of launches too: their durations, at twice the probes' cost"),
		OPT_TIME(0, "duration", &o.duration_ns, "stop recording after this long: seconds, or with s, ms, us, ns"),
		OPT_INT('b', "buffer-size", &o.buffer_kb, "kb", "ring buffer per CPU in KiB (default 8192)"),
		OPT_BOOL('q', "quiet", &o.quiet, "no status line and no summary"),
		OPT_END(),
	};
	struct ingero_header hdr;
	struct utsname uts;
	char boot_id[64], exe[PATH_MAX];
	struct child ch = { .pid = -1, .listener = -1 };
	struct ingero_mmapwatch watch = { .fd = -1 };
	struct ingero_strlist found = { 0 };
	struct pid_list pids = { 0 };
	size_t napis, i;
	const struct ingero_api *apis;
	struct ingero_session *s;
	struct ingero_writer *w = NULL;
	struct ingero_recorder *r;
	uint8_t *enabled;
	char *command = NULL;
	struct ingero_trace_stats written;
	struct ingero_record_stats recorded;
	int fd = -1, status, err, in_container, left = 0, code = 1, trace_on_stdout;

	argc = parse_options(argc, argv, options, record_usage, PARSE_OPT_STOP_AT_NON_OPTION);
	if (!!argc + !!o.pids + !!o.all != 1) {
		error("give a command, -p PID or -a (one of them)");
		usage_with_options(record_usage, options, 1);
	}
	trace_on_stdout = !strcmp(o.output, "-");
	if (trace_on_stdout && isatty(STDOUT_FILENO))
		die("the trace is binary: not writing it to a terminal (redirect the standard output, or give -o FILE)");
	if (o.buffer_kb <= 0) {
		error("the buffer size must be a positive number of KiB");
		usage_with_options(record_usage, options, 1);
	}
	if (!o.duration_ns) {
		error("the duration must be longer than 0");
		usage_with_options(record_usage, options, 1);
	}
	apis = recorded_apis(o.with_returns, &napis);
	enabled = enabled_apis(o.sets, apis, napis);
	if (check_libs(&o.libs, apis, napis, enabled))
		goto out;
	if (argc && (err = find_command(argv[0], exe, sizeof(exe)))) {
		error("cannot run '%s': %s", argv[0], strerror(err));
		exit(127);
	}

	prctl(PR_SET_NAME, RECORDER_NAME);
	/* From here a stop signal ends the set-up as interrupted, with nothing left behind. */
	catch_signals();
	in_container = ingero_session_in_container();
	if (!argc && in_container)
		die("in a PID namespace of its own (a container's), ingero records a command it starts; -p and -a need the host's");
	if (o.pids)
		parse_pids(o.pids, &pids);
	/* Forked first, the command makes its start while the session is set up; in a container, see below. */
	if (argc && !in_container)
		spawn(&ch, argv, trace_on_stdout);
	s = ingero_session_new(o.buffer_kb, o.all);
	if (!s)
		goto fail;
	live_session = s;
	live_watch = &watch;
	atexit(free_live_session);
	command = argc ? join_args(argv) : strdup(o.pids ? o.pids : "-a");
	build_header(&hdr, s, command, apis, napis, &uts, boot_id, sizeof(boot_id));
	fd = open_output(o.output);
	w = ingero_writer_new(fd, &hdr);
	r = w ? ingero_recorder_new(s, w, apis, napis, enabled) : NULL;
	live_recorder = r;
	if (!r)
		goto fail;

	/* In a container, ingero's own pid goes into the filter first: the fork adds the command's host pid to it. */
	if (argc && ch.pid < 0) {
		if (ingero_session_follow_children(s))
			goto fail;
		spawn(&ch, argv, trace_on_stdout);
	}
	if (argc) {
		take_listener(&ch);
		/* the same Ctrl-C may have ended the waiting command, and with it its watch */
		if (stop_signal)
			goto interrupted;
		pid_list_add(&pids, ch.pid);
		/* A script, or any file not ELF, has no runtime linked in. */
		if (ingero_lib_has_cuda(exe, apis, napis))
			ingero_recorder_probe_lib(r, exe, 0);
	}
	if (!o.all && ingero_session_filter_pids(s, pids.pids, pids.n))
		goto fail;
	/* The watch probes each library as it is mapped; without it, probe where it will come from. */
	if ((ch.listener < 0 || !argc) && !ingero_libfind_candidates(&found))
		probe_list(r, &found, 0);
	probe_list(r, &o.libs, 0);
	if (o.pids || o.all)
		probe_mapped(r, &pids);
	if (o.all && ingero_recorder_follow_mapped(r))
		goto fail;
	if (o.all && take_followed(r, &pids))
		probe_mapped(r, &pids);
	if (ch.listener >= 0 && (ingero_session_hand_over(s, ch.listener) ||
				 ingero_mmapwatch_start(&watch, ch.listener, on_mapped, r)))
		goto fail;
	if (ch.listener < 0 && argc)
		warning("this kernel cannot stop library loads for ingero (seccomp user notification): calls into libraries loaded late from unusual places may be missed");
	if (ingero_session_start(s))
		goto fail;
	for (i = 0; o.pids && i < pids.n; i++)
		ingero_recorder_know_process(r, pids.pids[i]);
	/* A signal before the command could start (Ctrl-C reaches the waiting child too) ends the run. */
	err = argc ? (stop_signal ? EINTR : release(&ch)) : 0;
	if (err && stop_signal)
		goto interrupted;
	if (err) {
		error("cannot run '%s': %s", argv[0], strerror(err));
		waitpid(ch.pid, NULL, 0);
		status = 127 << 8;
	} else {
		/* recording runs: whatever happens now, the trace is kept */
		made_output.path = NULL;
		status = record_loop(s, r, w, argc ? &ch : NULL, o.duration_ns, o.pids || o.all ? &pids : NULL,
				     o.all, !o.quiet && isatty(2));
		/* the command ended by itself: what it started and left running is recorded no further */
		if (argc && status >= 0)
			left = ingero_session_processes_left(s);
	}
	/* the library loads of what the command left running wait for the keeper now, not for a recorder that ends */
	ingero_mmapwatch_stop(&watch);
	ingero_session_stop(s);
	ingero_recorder_poll(r, 1);
	/* the last events are read: the kernel's removal of the session overlaps the writing of the trace */
	ingero_session_remove(s);
	ingero_recorder_finish(r);
	ingero_writer_end(w);
	ingero_writer_stats(w, &written);
	ingero_recorder_stats(r, &recorded);
	if (written.written < recorded.events)
		error("the trace '%s' holds %llu of the %llu events recorded: the rest could not be written",
		      o.output, (unsigned long long)written.written, (unsigned long long)recorded.events);
	ingero_writer_close(w);
	if (!o.quiet)
		summary(r, written.bytes, o.output, s->ncpus);
	warn_incomplete(r, s->ncpus);
	if (left > 0)
		warning("%d process(es) that '%s' started still run: what they do after its end is not recorded (record them with -p)",
			left, argv[0]);
	free_live_session();
	close(fd);
	if (argc && status < 0)
		status = wait_child(&ch);
	code = argc ? exit_code(status) : 0;
	goto out;
interrupted:
	if (!o.quiet)
		error("interrupted before '%s' started: nothing recorded", argv[0]);
	code = 128 + stop_signal;
fail:
	if (ch.pid > 0)
		kill(ch.pid, SIGKILL);
	/* the session goes first: its readers hold the kernel's buffers; the unfinished trace is removed at exit */
	free_live_session();
	if (w)
		ingero_writer_close(w);
	if (fd >= 0)
		close(fd);
out:
	ingero_strlist_release(&found);
	ingero_strlist_release(&o.libs);
	free(pids.pids);
	free(pids.unreadable);
	free(pids.watched);
	free(seen_mapped.ids);
	free(command);
	free(enabled);
	free((void *)apis);
	return code;
}
