/*
 * The benchmarks' floor: the kernel's own events into a private ring buffer
 * that this minimal reader drains and counts, page by page, and nothing else.
 * Also tells the file offset of a library's function, for uprobe_events.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs.h>

#define MAX_EVENTS 256

struct counted {
	char system[64];
	const char *name;	/* SYSTEM/EVENT */
	const char *event;	/* in name */
	int id;
	unsigned long long n;
};

struct reader {
	struct tracefs_instance *instance;
	struct tep_handle *tep;
	struct tracefs_cpu **cpus;
	struct kbuffer *kbuf;
	char *page;
	int ncpus;
	struct counted ev[MAX_EVENTS];
	int nev;
	unsigned short slot[65536];	/* event id -> 1 + its index in ev, 0: not ours */
	unsigned long long other, missed;
};

static void die(const char *msg, const char *subject)
{
	fprintf(stderr, "bench-bare: %s '%s'%s%s\n", msg, subject, errno ? ": " : "", errno ? strerror(errno) : "");
	exit(1);
}

/* The file offset of symbol sym in the ELF file at path: where a uprobe goes. */
static int print_offset(const char *path, const char *sym)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Addr addr = 0, off = 0;
	size_t i, nph;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)))
		die("cannot read", path);
	while (!addr && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (name && !strcmp(name, sym)) {
				addr = s.st_value;
				break;
			}
		}
	}
	errno = 0;
	if (!addr || elf_getphdrnum(elf, &nph))
		die("no function of that name in", path);
	for (i = 0; i < nph && !off; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && addr >= ph.p_vaddr &&
		    addr < ph.p_vaddr + ph.p_filesz)
			off = addr - ph.p_vaddr + ph.p_offset;
	}
	elf_end(elf);
	close(fd);
	if (!off)
		die("the function is in no loaded segment of", path);
	printf("0x%llx\n", (unsigned long long)off);
	return 0;
}

static void count_page(struct reader *r)
{
	unsigned long long ts;
	void *data;
	int missed;

	kbuffer_load_subbuffer(r->kbuf, r->page);
	missed = kbuffer_missed_events(r->kbuf);
	if (missed > 0)
		r->missed += missed;
	for (data = kbuffer_read_event(r->kbuf, &ts); data; data = kbuffer_next_event(r->kbuf, &ts)) {
		struct tep_record rec = { .data = data };
		int slot = r->slot[tep_data_type(r->tep, &rec) & 0xffff];

		if (slot)
			r->ev[slot - 1].n++;
		else
			r->other++;
	}
}

static void drain(struct reader *r, int final)
{
	int cpu;

	for (cpu = 0; cpu < r->ncpus; cpu++) {
		if (!r->cpus[cpu])
			continue;
		while ((final ? tracefs_cpu_flush(r->cpus[cpu], r->page)
			      : tracefs_cpu_read(r->cpus[cpu], r->page, true)) > 0)
			count_page(r);
	}
}

/* What the kernel had no room for, from the per-CPU stats. */
static unsigned long long dropped(struct reader *r)
{
	unsigned long long sum = 0;
	char file[64], *s, *p;
	int cpu;

	for (cpu = 0; cpu < r->ncpus; cpu++) {
		snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
		s = tracefs_instance_file_read(r->instance, file, NULL);
		p = s ? strstr(s, "dropped events:") : NULL;
		if (p)
			sum += strtoull(p + strlen("dropped events:"), NULL, 10);
		free(s);
	}
	return sum;
}

/* The format of one event, parsed into tep; NULL when the kernel has no such event. */
static struct tep_event *read_format(struct tep_handle *tep, const char *system, const char *event)
{
	struct tep_event *e = NULL;
	int len;
	char *text = tracefs_event_file_read(NULL, system, event, "format", &len);

	if (text && tep_parse_event(tep, text, len, system) == TEP_ERRNO__SUCCESS)
		e = tep_find_event_by_name(tep, system, event);
	free(text);
	return e;
}

static void setup(struct reader *r, int buffer_kb)
{
	char name[64];
	int i;

	snprintf(name, sizeof(name), "ingero_bench_bare_%d", (int)getpid());
	r->instance = tracefs_instance_create(name);
	if (!r->instance)
		die("cannot create the tracefs instance", name);
	tracefs_trace_off(r->instance);
	/* its clock is a new instance's, local, as ingero's: no write, which would wait for the CPUs */
	if (tracefs_instance_set_buffer_size(r->instance, buffer_kb, -1) < 0)
		die("cannot size the buffers of", name);
	tracefs_option_disable(r->instance, TRACEFS_OPTION_OVERWRITE);
	/* The formats of the events named only: reading every format on the machine takes a while. */
	r->tep = tep_alloc();
	if (!r->tep)
		die("out of memory", name);
	for (i = 0; i < r->nev; i++) {
		struct tep_event *e = read_format(r->tep, r->ev[i].system, r->ev[i].event);

		if (!e || tracefs_event_enable(r->instance, r->ev[i].system, r->ev[i].event))
			die("cannot enable the event", r->ev[i].name);
		r->ev[i].id = e->id;
		r->slot[e->id & 0xffff] = i + 1;
	}
	r->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	r->cpus = calloc(r->ncpus, sizeof(*r->cpus));
	for (i = 0; i < r->ncpus; i++)
		r->cpus[i] = tracefs_cpu_open(r->instance, i, true);
	r->page = malloc(getpagesize() * 4);
	r->kbuf = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4, KBUFFER_ENDIAN_LITTLE);
	if (!r->cpus || !r->page || !r->kbuf)
		die("out of memory", name);
}

static void teardown(struct reader *r)
{
	int i;

	/* the fewest steps: every event off in one write, then the instance's removal */
	tracefs_trace_off(r->instance);
	tracefs_instance_file_write(r->instance, "events/enable", "0");
	for (i = 0; i < r->ncpus; i++)
		if (r->cpus[i])
			tracefs_cpu_close(r->cpus[i]);
	tracefs_instance_destroy(r->instance);
	tracefs_instance_free(r->instance);
}

/* Forks the command held before its exec until the filter and the buffers are in place. */
static pid_t spawn(char **argv, int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		die("cannot make a pipe for", argv[0]);
	pid = fork();
	if (pid < 0)
		die("cannot fork for", argv[0]);
	if (!pid) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

/*
 * Records while the command runs: its own events (with -a every process's;
 * with -p those of process attach, while the command only sets how long).
 */
static int record(struct reader *r, int buffer_kb, int all, pid_t attach, char **argv)
{
	struct timespec tick = { 0, 10000000 };
	char pidbuf[32];
	int go, status, i;
	pid_t pid;

	setup(r, buffer_kb);
	pid = spawn(argv, &go);
	if (!all) {
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)(attach ? attach : pid));
		tracefs_option_enable(r->instance, TRACEFS_OPTION_EVENT_FORK);
		if (tracefs_instance_file_write(r->instance, "set_event_pid", pidbuf) < 0)
			die("cannot filter on the pid", pidbuf);
	}
	tracefs_trace_on(r->instance);
	if (write(go, "", 1) != 1)
		die("cannot start", argv[0]);
	close(go);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		drain(r, 0);
		nanosleep(&tick, NULL);
	}
	tracefs_trace_off(r->instance);
	drain(r, 1);
	fprintf(stderr, "bench-bare:");
	for (i = 0; i < r->nev; i++)
		fprintf(stderr, " %s=%llu", r->ev[i].name, r->ev[i].n);
	fprintf(stderr, " other=%llu lost=%llu\n", r->other, r->missed + dropped(r));
	teardown(r);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void add_event(struct counted *c, const char *name)
{
	const char *slash = strchr(name, '/');

	errno = 0;
	if (!slash || slash - name >= (int)sizeof(c->system))
		die("give events as SYSTEM/EVENT, not", name);
	memcpy(c->system, name, slash - name);
	c->name = name;
	c->event = slash + 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench-bare [-b KB] [-a | -p PID] -e SYSTEM/EVENT... -- COMMAND [ARGS...]\n"
		"       bench-bare offset LIBRARY FUNCTION\n");
	return 129;
}

int main(int argc, char **argv)
{
	static struct reader r;
	int buffer_kb = 8192, all = 0, i;
	pid_t attach = 0;

	if (argc == 4 && !strcmp(argv[1], "offset"))
		return print_offset(argv[2], argv[3]);
	signal(SIGINT, SIG_IGN);
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-a"))
			all = 1;
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			attach = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			buffer_kb = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-e") && i + 1 < argc && r.nev < MAX_EVENTS)
			add_event(&r.ev[r.nev++], argv[++i]);
		else
			return usage();
	}
	if (i + 1 >= argc || !r.nev || buffer_kb <= 0 || attach < 0 || (attach && all))
		return usage();
	return record(&r, buffer_kb, all, attach, argv + i + 1);
}
