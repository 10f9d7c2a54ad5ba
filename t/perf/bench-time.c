/*
 * Runs a command and appends its wall time, peak memory and CPU time to a
 * file, finer than /usr/bin/time's 10 ms: the benchmarks' stopwatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

static unsigned long long ns(struct timespec t)
{
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static unsigned long long tv_ns(struct timeval t)
{
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_usec * 1000ULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	FILE *out;
	int status;
	pid_t pid;

	if (argc < 5 || strcmp(argv[1], "-o") || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: bench-time -o FILE -- COMMAND [ARGS...]\n");
		return 129;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		perror("bench-time: fork");
		return 1;
	}
	if (!pid) {
		execvp(argv[4], argv + 4);
		perror(argv[4]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid) {
		perror("bench-time: wait4");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out = fopen(argv[2], "a");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "wall_ns=%llu maxrss_kb=%ld user_ns=%llu sys_ns=%llu\n", ns(t1) - ns(t0), ru.ru_maxrss,
		tv_ns(ru.ru_utime), tv_ns(ru.ru_stime));
	fclose(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
