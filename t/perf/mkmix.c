/*
 * Writes a synthetic trace of the mix in t/perf/mix.h, N events long, for
 * the analyzer's benchmark: its memory does not grow with N.
 *
 *   mkmix EVENTS FILE     (prints how many it wrote: a few more than EVENTS)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "mix.h"

int main(int argc, char **argv)
{
	static struct mix m;
	struct ingero_writer *w;
	struct ingero_event ev;
	uint64_t n = 0;
	int fd;

	if (argc != 3 || !strtoull(argv[1], NULL, 0)) {
		fprintf(stderr, "usage: mkmix EVENTS FILE\n");
		return 129;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !(w = ingero_writer_new(fd, &mix_header))) {
		perror(argv[2]);
		return 1;
	}
	mix_init(&m, strtoull(argv[1], NULL, 0), 0x1234567);
	while (mix_next(&m, &ev)) {
		if (ingero_writer_add(w, &ev)) {
			perror(argv[2]);
			return 1;
		}
		n++;
	}
	if (ingero_writer_close(w) || close(fd)) {
		perror(argv[2]);
		return 1;
	}
	printf("%" PRIu64 "\n", n);
	return 0;
}
