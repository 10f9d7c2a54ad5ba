/*
 * Without arguments, the strlist's unit tests; "candidates" or "mapped PID"
 * prints what libfind finds, one path a line, for t1020 to compare.
 */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "../../lib/error.h"
#include "../../lib/libfind.h"

static int print(struct ingero_strlist *l, int ret)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		printf("%s\n", l->items[i]);
	ingero_strlist_release(l);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct ingero_strlist l = { 0 };
	size_t i;
	int bad = 0;

	if (argc > 1 && !strcmp(argv[1], "candidates"))
		return print(&l, ingero_libfind_candidates(&l));
	if (argc > 2 && !strcmp(argv[1], "mapped"))
		return print(&l, ingero_libfind_mapped(atoi(argv[2]), NULL, &l));

	for (i = 0; i < 100; i++) {
		char s[16];

		snprintf(s, sizeof(s), "item %zu", i);
		bad |= ingero_strlist_add(&l, s);
	}
	is_u64(l.nr, 100, "a hundred items added");
	ok(!bad && !strcmp(l.items[0], "item 0") && !strcmp(l.items[99], "item 99"), "in order, copied");
	ingero_strlist_release(&l);
	ok(l.nr == 0 && l.items == NULL, "released: empty again");
	error_quiet = 1;
	ok(ingero_libfind_mapped(0x7ffffff0, NULL, &l) == -1 && l.nr == 0, "a process that does not exist is -1");
	return done_testing();
}
