#!/usr/bin/env bash
test_description='after the whole suite, nothing of ingero is left in the kernel'
. ./test-lib.sh

test_expect_success TRACEFS 'no uprobe event and no instance of ingero remain' '
	ingero_kernel_leftovers >left &&
	test_line_count = 0 left
'

test_done
